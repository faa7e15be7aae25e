"""Which prediction to trust at each horizon, from the evidence the history holds, without labels.

A user has an observed history ``u_0 .. u_{T-1}`` and cares about a window of horizons ahead: one step, or the
Well's rollout windows 6:12 (predicted steps 7..12, counted from 1) and 13:30 (steps 14..30) (``WINDOWS``). The
history itself is evidence: a predictor started from its first ``m`` frames and rolled out (each prediction fed
back) predicts the observed frames ``u_m .. u_{T-1}``, i.e. horizons ``K = 1 .. T - m``. Its *backtest curve* is the
error at each horizon in units of the target frame's step,

    e_K = mean_c ||p_{m+K-1,c} - u_{m+K-1,c}|| / ||u_{m+K-1,c} - u_{m+K-2,c}||      (K = 1 .. T - m)

over the active channels ``c`` ([`backtest_curve`][well_upao.predict.evidence.backtest_curve]). Every predictor starts
from the same ``m = 3`` frames (``START``, what quadratic extrapolation needs), so each horizon is measured on the same
observed frame for all: with the default history of 8 frames the curves reach 5 steps (a history of 15 frames reaches
step 12, the end of the Well's 6:12 window). One step ahead the history holds more evidence than the rollout's first
frame: ``e_1`` is the mean of the one-step errors over every frame ``u_m .. u_{T-1}``, each predicted from the ``m``
true frames before it ([`with_one_step`][well_upao.predict.evidence.with_one_step]), as the one-step protocol predicts
every frame from its true history.

The curves of the windows a history offers (several per trajectory, or the samples of a batch) are combined by their
median per horizon ([`median_curves`][well_upao.predict.evidence.median_curves]). A window's evidence
([`window_evidence`][well_upao.predict.evidence.window_evidence]) is the curve's mean over the window's horizons; where
the history stops short of the window's end ("backtest to step 5 of 12"), the curve is continued past its reach as the
quadratic through its last three values, or the line through its last two where it bends down
([`continued`][well_upao.predict.evidence.continued]): the predictors' errors grow at different orders (persistence's
about linearly, an extrapolation's faster), so a ranking at the reach can turn by the window, and the continuation
carries each curve's own growth there. The pick ([`pick`][well_upao.predict.evidence.pick]) is the predictor with the
lowest evidence, every curve read to the same horizons; only label-free numbers enter it.

The classical predictors' curves are closed forms of the window (their entries of ``predict.classical``); a model's
comes from its own rollout (``predict.backtests.history_curves``, on the windows
``predict.backtests.add_history_curves`` chooses; a UPAO run's validation computes its
model's on its batches, ``trainers/upao_validation.py``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

from well_upao.predict.classical import CLASSICAL_PRIORS
from well_upao.predict.windows import WINDOWS

#: the frames every predictor's backtest starts from (quadratic extrapolation needs 3)
START = 3


def with_one_step(curve: torch.Tensor, one_step: torch.Tensor) -> torch.Tensor:
    """``curve`` ``(B, K)`` or ``(B, K, C)`` (a rollout's
    [`backtest_curve`][well_upao.predict.evidence.backtest_curve]) with ``e_1`` replaced by the mean of ``one_step``
    ``(B, T - START)`` or ``(B, T - START, C)``, the
    [`backtest_curve`][well_upao.predict.evidence.backtest_curve] of one-step predictions of every frame after the
    first ``START`` (see the module docstring)."""
    return torch.cat([one_step.mean(1, keepdim=True), curve[:, 1:]], 1)


def backtest_curve(
    predicted: torch.Tensor, window: torch.Tensor, start: int, mask: torch.Tensor, per_channel: bool = False
) -> torch.Tensor:
    """``e_K`` per sample (see the module docstring): ``predicted`` ``(B, K, *space, C)`` the predictions of frames
    ``start .. start + K - 1`` of ``window`` ``(B, T, *space, C)``; ``mask`` ``(C,)`` the active channels;
    returns ``(B, K)``, or ``(B, K, C_active)`` before the mean over channels with ``per_channel``."""
    steps = predicted.shape[1]
    target = window[:, start : start + steps].double()
    before = window[:, start - 1 : start - 1 + steps].double()
    active = mask.bool()
    error = (predicted.double() - target)[..., active].flatten(2, -2).norm(dim=2)  # (B, K, C_active)
    step = (target - before)[..., active].flatten(2, -2).norm(dim=2)
    ratio = error / step.clamp_min(1e-300)
    return ratio if per_channel else ratio.mean(-1)


def median_curves(curves: Mapping[str, Sequence[torch.Tensor]]) -> dict[str, list[float]]:
    """Each predictor's backtest curve, per horizon the median over the samples or windows it was computed on
    (``(n, K)`` parts; the mean of the two middle values for an even ``n``). The median, not the mean: one window
    holding a trajectory's start (a field at rest, a transient) has steps near zero, and its ratios, orders of
    magnitude above the others', would decide a mean alone."""
    return {
        name: torch.cat(list(parts)).double().quantile(0.5, dim=0).tolist()
        for name, parts in curves.items()
        if len(parts)
    }


def classical_curves(window: torch.Tensor, mask: torch.Tensor) -> dict[str, torch.Tensor]:
    """Every classical predictor's backtest curve on ``window``, ``{name: (B, K_name)}``."""
    if window.shape[1] <= START:
        return {}
    return {
        name: with_one_step(
            backtest_curve(prior.rolled_out(window, START), window, START, mask),
            backtest_curve(prior.one_step(window, START), window, START, mask),
        )
        for name, prior in CLASSICAL_PRIORS.items()
    }


@dataclass(frozen=True)
class Evidence:
    """A window's evidence for one predictor: ``value`` (``nan`` without a curve), the horizons it covers
    (``first``..``last``) and the window's last horizon ``wanted``."""

    value: float
    first: int
    last: int
    wanted: int

    @property
    def short(self) -> bool:
        """Whether the history stops short of the window (the evidence is the curve's last horizon)."""
        return self.last < self.wanted

    def describe(self) -> str:
        if math.isnan(self.value):
            return "no backtest"
        if self.short:
            return f"backtest to step {self.last} of {self.wanted}"
        return (
            f"backtest over steps {self.first}-{self.last}"
            if self.first < self.last
            else f"backtest at step {self.last}"
        )


def continued(curve: Sequence[float], horizons: int) -> list[float]:
    """``curve`` (``e_1 .. e_K``) continued to ``horizons`` values: each next increment is the last one plus the last
    second difference where that is positive, ``d_{k+1} = d_k + max(0, d_k - d_{k-1})`` (the quadratic through the
    last three values, or the line through the last two where the curve bends down: an error is not assumed to level
    off beyond what the history shows), never negative (nor is it assumed to fall); from two values their increment,
    from one that value."""
    values = [float(v) for v in curve]
    if not values:
        return values
    increment = max(0.0, values[-1] - values[-2]) if len(values) >= 2 else 0.0
    change = max(0.0, increment - (values[-2] - values[-3])) if len(values) >= 3 else 0.0
    while len(values) < horizons:
        increment += change
        values.append(values[-1] + increment)
    return values


def window_evidence(curve: Sequence[float], window: str, cap: int | None = None) -> Evidence:
    """The evidence of a backtest ``curve`` (``e_1 .. e_K``) for ``window`` (see the module docstring), its horizons
    capped at ``cap`` (a comparison's common reach): the curve's mean over the window's horizons, the curve
    [`continued`][well_upao.predict.evidence.continued] past its reach where the history stops short of the window's
    end."""
    first, last = WINDOWS[window]
    reach = len(curve) if cap is None else min(len(curve), cap)
    if reach == 0:
        return Evidence(math.nan, first, 0, last)
    values = continued(curve[:reach], last)[first - 1 : last]
    return Evidence(sum(values) / len(values), first, min(last, reach), last)


def pick(curves: Mapping[str, Sequence[float]], window: str) -> tuple[str | None, dict[str, Evidence]]:
    """The predictor whose evidence for ``window`` is lowest (``None`` when none has any) and every predictor's, all
    on the horizons every curve reaches (the shortest curve's, where a model's rollout stops early)."""
    cap = min((len(c) for c in curves.values() if len(c)), default=0)
    evidence = {name: window_evidence(curve, window, cap) for name, curve in curves.items()}
    finite = {name: e for name, e in evidence.items() if math.isfinite(e.value)}
    return (min(finite, key=lambda name: finite[name].value) if finite else None), evidence
