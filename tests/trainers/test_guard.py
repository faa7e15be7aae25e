"""The guard's rules (``well_upao.trainers.guard``), against hand computations on scorecards (the scorecard's
closed forms and the guard's first rule checks are in tests/physics/test_scores.py)."""

from __future__ import annotations

from well_upao.physics.scores import Scorecard
from well_upao.trainers.guard import GuardSettings, guard_decision


def test_the_floor_rule_bounds_the_departure_by_the_starts_backtest_not_the_candidates():
    """The start's residual is at the floor (ratio 1) and its backtest estimates its error: ``e = 0.1`` of a step. A
    candidate that moved ``m = 0.205`` has an error of at least ``m - e = 0.105 > e`` (triangle inequality), so
    with ``departure_limit = 2`` it is refused (``0.205 > 2 x 0.1``), although its own backtest, ``0.105``, is
    within the backtest rule's 10% (``0.105 <= 1.1 x 0.1``) and would allow ``2 x 0.105 = 0.21``. A candidate whose
    backtest fell to ``0.001`` and that moved ``0.15 <= 0.2`` is not refused, although ``0.15 > 2 x 0.001``. Checked
    failing with the rule reading ``candidate.backtest`` in place of ``start.backtest``."""
    settings = GuardSettings()
    start = Scorecard(floor=1e-2, residual_ratio=1.0, departure=0.0, backtest=0.1)
    far = Scorecard(floor=1e-2, residual_ratio=1.0, departure=0.205, backtest=0.105)
    reason = guard_decision(start, far, settings)
    assert reason is not None and reason.startswith("floor:") and "backtest:" not in reason
    assert "backtest error 0.1" in reason  # the bound read is the start's
    sharper = Scorecard(floor=1e-2, residual_ratio=1.0, departure=0.15, backtest=0.001)
    assert guard_decision(start, sharper, settings) is None
