"""Prediction without labels: what both ``well-upao evaluate`` and ``well-upao forecast`` stand on.

* [`classical`][well_upao.predict.classical]: the one table of classical predictors (persistence, polynomial
  extrapolation of the history); a new prior is one entry;
* [`predictors`][well_upao.predict.predictors]: every row behind one interface, ``predict(window, context) -> next
  frame`` (the classical rows, the solver step, model rows loaded from a run or a backbone);
* [`rollout`][well_upao.predict.rollout]: the one autoregressive loop (validation, training's rollout objective,
  evaluate and the forecast all roll out through it) and the one-step protocol;
* [`evidence`][well_upao.predict.evidence]: backtests on the observed history and the label-free pick per window;
* [`expected`][well_upao.predict.expected]: the expected VRMSE with its interval, from the same backtests;
* [`windows`][well_upao.predict.windows]: the horizons a user trusts a prediction for and the Well's rollout windows.

Nothing in this layer reads a frame after the history it is given.
"""
