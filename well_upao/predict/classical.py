"""The classical predictors: one table, name -> how it predicts the next frame from a history window.

Every entry is a polynomial extrapolation of the window's last frames: the polynomial of degree ``order`` through
``u_t, .., u_{t-order}`` evaluated one step ahead (``well_upao.models.na_transformer.extrapolation_weights``):

* ``persistence`` (degree 0): ``u_{t+1} = u_t``
* ``extrap1`` (degree 1): ``u_{t+1} = 2 u_t - u_{t-1}``
* ``extrap2`` (degree 2): ``u_{t+1} = 3 u_t - 3 u_{t-1} + u_{t-2}``

A window shorter than ``order + 1`` frames is extrapolated with the highest degree it allows. Everything that names a
classical predictor reads this table: evaluate's rows (``predict.predictors``), the backtest evidence and the pick
(``predict.evidence``), the expected error (``predict.expected``), a UPAO run's prior candidate and its judge
(``trainers/guard.py``), and the model predicting with a kept prior (``NATransformer.set_prior`` takes the entry's
``order``). A new prior is one entry of ``CLASSICAL_PRIORS``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from well_upao.models.na_transformer import extrapolate_history, extrapolation_weights
from well_upao.predict.rollout import autoregress


@dataclass(frozen=True)
class ClassicalPrior:
    """One classical predictor: ``name`` (its row in every table), ``order`` (the polynomial degree of its
    extrapolation), ``describe`` (one line for tables and the docs)."""

    name: str
    order: int
    describe: str

    @property
    def weights(self) -> tuple[float, ...]:
        """The weights of ``u_t, u_{t-1}, ..`` (``extrapolation_weights``)."""
        return extrapolation_weights(self.order)

    def next_frame(self, window: torch.Tensor) -> torch.Tensor:
        """The next frame ``(B, ...)`` from ``window`` ``(B, T, ...)`` (its last ``order + 1`` frames)."""
        return extrapolate_history(window[:, -(self.order + 1) :], self.order)[:, -1]

    def one_step(self, window: torch.Tensor, start: int) -> torch.Tensor:
        """Each frame ``start .. T-1`` of ``window`` ``(B, T, ...)`` from the true frames before it:
        ``(B, T - start, ...)``."""
        return extrapolate_history(window, self.order)[:, start - 1 : window.shape[1] - 1]

    def rolled_out(self, window: torch.Tensor, start: int) -> torch.Tensor:
        """Started from ``window[:, :start]`` and fed back (``predict.rollout.autoregress``): its predictions of
        frames ``start .. T-1``, ``(B, T - start, ...)``."""
        return autoregress(self.next_frame, window[:, :start], window.shape[1] - start, slide=False)


#: every classical predictor, in the order tables show them
CLASSICAL_PRIORS: dict[str, ClassicalPrior] = {
    prior.name: prior
    for prior in (
        ClassicalPrior("persistence", 0, "the last frame again"),
        ClassicalPrior("extrap1", 1, "linear extrapolation of the last two frames"),
        ClassicalPrior("extrap2", 2, "quadratic extrapolation of the last three frames"),
    )
}


def classical_prior(name: str) -> ClassicalPrior:
    """The table's entry ``name``, refused with the names it has."""
    try:
        return CLASSICAL_PRIORS[name]
    except KeyError:
        raise KeyError(f"unknown classical predictor {name!r}; known: {', '.join(CLASSICAL_PRIORS)}") from None


def is_classical(name: str | None) -> bool:
    return name in CLASSICAL_PRIORS
