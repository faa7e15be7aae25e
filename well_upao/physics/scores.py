"""The label-free scorecard: how good a prediction looks from what UPAO may see (the observed history, the boundary
band and the equation), and the guard built on it.

Notation: a window of observed frames ``u_0 .. u_{T-1}`` (``T >= 2``), a predicted next frame ``p`` (``u^_T``),
``R_k(a, b)`` the residual of sub-equation ``k`` between frames ``a`` and ``b`` (the run's derivative and time
scheme, ``well_upao.physics.residual``; the central scheme also reads the frame before ``a``), ``scale_k`` the
pointwise size of its terms (``|d_t Q_k| + sum_i |N_k,i|``), ``||.||`` the l2 norm over the interior ``S_p`` of
every frame concerned, and ``rho(a -> b) = mean_k ||R_k(a, b)|| / ||scale_k(a, b)||`` (the relative residual of
``well_upao.physics.floor``). Every score is per sample; callers average over samples.

* **floor** ``rho_obs = mean_k ||R_k(u_0..u_{T-2}, u_1..u_{T-1})|| / ||scale_k||``: the relative residual of the
  observed pairs (triples for ``central``) of the window: what the true frames themselves leave.
* **residual ratio** ``residual_ratio = rho(u_{T-1} -> p) / rho_obs``: the prediction's relative residual in
  units of the floor. About 1: the prediction satisfies the discrete equation as well as true frames do; much
  above 1: it is further from the equation than data; below 1: it satisfies the discrete equation *better* than
  the true frames do, i.e. it has been pulled towards the discretisation's own solution (the discrete residual
  cannot tell it from the truth any more: its error is below what the residual resolves).
* **departure** ``departure = mean_v ||p_v - r_v|| / ||r_v - u_{T-1,v}||`` for the PDE's variables ``v`` and a
  reference prediction ``r``: how far the prediction moved from the reference, as a fraction of the reference's own
  step (the same unit as the floor and the backtest). In training ``r`` is the starting model's prediction (for
  ``model.base=extrap2`` with its correction at zero, the extrapolation itself); in ``well-upao evaluate`` it is
  ``extrap2`` of the same window (``departure_extrap2``), the one reference every row shares.
* **backtest** ``backtest = mean_v ||q_v - u_{T-1,v}|| / ||u_{T-1,v} - u_{T-2,v}||`` with ``q`` the prediction of
  the *observed* last frame ``u_{T-1}`` from ``u_0 .. u_{T-2}`` (the backbone's causal shifted prediction at
  position ``T-2``, or the predictor run on the shortened window): the error on a frame the user has observed, as a
  fraction of that frame's step. This is a held-out check inside the history: the UPAO loss never reads the
  interior of that frame against that prediction (its band term only reads the band).

:func:`scorecard` computes all of them; :func:`guard_decision` compares a candidate's card with the start's. Why the
guard's ``floor`` rule compares the departure with the start's backtest: when the start's residual is at the floor,
the residual cannot tell predictions apart within about ``rho_obs`` of a step, so it gives no reason for any move;
and if the start's error on the target is about its backtest ``e`` (both in step units), a candidate that moved by
``m`` has an error of at least ``m - e`` (triangle inequality), worse than the start's once ``m > 2 e``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass

import torch

from well_upao.physics.pdes import PDE
from well_upao.physics.residual import residuals_and_scales, slot_fields
from well_upao.physics.stencils import Stencils, interior_mean_square

#: the names under which the scores are logged (``valid_score_<name>`` in ``metrics.jsonl``)
SCORE_NAMES = ("floor", "residual_ratio", "departure", "backtest")


@dataclass
class Scorecard:
    """Mean scores over samples (``nan`` where a score is not available, e.g. no reference)."""

    floor: float = math.nan
    residual_ratio: float = math.nan
    departure: float = math.nan
    backtest: float = math.nan

    def logs(self, prefix: str = "valid_score_") -> dict[str, float]:
        return {f"{prefix}{k}": v for k, v in asdict(self).items()}

    @classmethod
    def from_logs(cls, logs: Mapping[str, float], prefix: str = "valid_score_") -> Scorecard:
        return cls(**{k: float(logs.get(f"{prefix}{k}", math.nan)) for k in SCORE_NAMES})


def _frames(fields: Mapping[str, torch.Tensor], start: int, stop: int | None) -> dict[str, torch.Tensor]:
    return {k: v[:, start:stop] for k, v in fields.items()}


def relative_residual(
    pde: PDE,
    old: Mapping[str, torch.Tensor],
    new: Mapping[str, torch.Tensor],
    dt: torch.Tensor,
    params: Mapping,
    ops: Stencils,
    scheme: str,
    dims: int,
    older: Mapping[str, torch.Tensor] | None = None,
    band_width: int = 1,
) -> torch.Tensor:
    """``rho`` per sample: ``mean_k ||R_k|| / ||scale_k||`` over the interior of all the frame pairs given
    (fields ``(B, T, *space)``); ``(B,)``."""
    residuals, scales = residuals_and_scales(pde, old, new, dt, params, ops, scheme, older=older)
    ratios = []
    for k in residuals:
        top = interior_mean_square(residuals[k].double(), dims, band_width).sum(1)
        bottom = interior_mean_square(scales[k].double(), dims, band_width).sum(1)
        ratios.append(torch.sqrt(top / bottom.clamp_min(1e-300)))
    return torch.stack(ratios).mean(0)


def observed_floor(pde: PDE, window: Mapping[str, torch.Tensor], dt, params, ops, scheme: str, dims: int):
    """``rho_obs`` per sample from the observed window (pairs; triples for ``central``, which needs 3 frames and
    otherwise falls back to Crank-Nicolson); ``(B,)``."""
    steps = next(iter(window.values())).shape[1]
    if steps < 2:
        raise ValueError("the residual floor of a window needs at least 2 observed frames")
    if scheme == "central" and steps >= 3:
        return relative_residual(
            pde, _frames(window, 1, -1), _frames(window, 2, None), dt, params, ops, scheme, dims,
            older=_frames(window, 0, -2),
        )  # fmt: skip
    scheme = "crank_nicolson" if scheme == "central" else scheme
    return relative_residual(pde, _frames(window, 0, -1), _frames(window, 1, None), dt, params, ops, scheme, dims)


def prediction_residual(pde: PDE, window, prediction, dt, params, ops, scheme: str, dims: int) -> torch.Tensor:
    """``rho(u_{T-1} -> p)`` per sample (``prediction``: fields ``(B, *space)``); ``(B,)``."""
    new = {k: v[:, None] for k, v in prediction.items()}
    if scheme == "central" and next(iter(window.values())).shape[1] >= 2:
        return relative_residual(
            pde, _frames(window, -1, None), new, dt, params, ops, scheme, dims, older=_frames(window, -2, -1)
        )
    scheme = "crank_nicolson" if scheme == "central" else scheme
    return relative_residual(pde, _frames(window, -1, None), new, dt, params, ops, scheme, dims)


def relative_change(a: Mapping[str, torch.Tensor], b: Mapping[str, torch.Tensor], base: Mapping[str, torch.Tensor]):
    """``mean_v ||a_v - b_v|| / ||b_v - base_v||`` per sample over the whole field (fields ``(B, *space)``)."""
    ratios = []
    for v in a:
        top = (a[v] - b[v]).double().flatten(1).norm(dim=1)
        bottom = (b[v] - base[v]).double().flatten(1).norm(dim=1)
        ratios.append(top / bottom.clamp_min(1e-300))
    return torch.stack(ratios).mean(0)


def scorecard(
    pde: PDE,
    window: torch.Tensor,
    prediction: torch.Tensor,
    dt: torch.Tensor,
    params: Mapping,
    ops: Stencils,
    scheme: str,
    dims: int,
    reference: torch.Tensor | None = None,
    backtest: torch.Tensor | None = None,
) -> dict[str, torch.Tensor]:
    """Per-sample scores (see the module docstring) from 18-slot tensors in physical units: ``window``
    ``(B, T, *space, 18)`` the observed history, ``prediction`` ``(B, *space, 18)`` the predicted next frame,
    ``reference`` the reference prediction of the same frame (departure), ``backtest`` the prediction of the last
    observed frame from the frames before it. ``params``: the PDE's resolved parameters. Returns ``{name: (B,)}``
    for the scores that could be computed: the one-step rollout's card (:func:`rollout_scorecard`, ``K = 1``)."""
    reference = None if reference is None else reference[:, None]
    out = rollout_scorecard(pde, window, prediction[:, None], dt, params, ops, scheme, dims, reference, backtest)
    del out["residual_ratio_step1"]  # the one step's ratio is residual_ratio itself
    return out


def rollout_scorecard(
    pde: PDE,
    window: torch.Tensor,
    rollout: torch.Tensor,
    dt: torch.Tensor,
    params: Mapping,
    ops: Stencils,
    scheme: str,
    dims: int,
    reference: torch.Tensor | None = None,
    backtest: torch.Tensor | None = None,
) -> dict[str, torch.Tensor]:
    """The scorecard of a ``K``-step rollout ``p_1 .. p_K`` (``rollout`` ``(B, K, *space, 18)``) from the observed
    ``window`` ``u_0 .. u_{T-1}``, in the units of :func:`scorecard` (which it equals for ``K = 1``):

    * ``residual_ratio = mean_k rho(p_{k-1} -> p_k) / rho_obs`` with ``p_0 = u_{T-1}`` (the central scheme reads
      the frame before each pair from the rollout too); ``residual_ratio_step<k>``: each step's ratio;
    * ``departure = mean_v ||p_K - r_K|| / ||r_K - r_{K-1}||`` with ``reference`` ``r_1 .. r_K`` the reference's
      rollout of the same window and ``r_0 = u_{T-1}``: how far the last frame moved from the reference's, in units
      of the reference's last step;
    * ``backtest = mean_v ||q - u_{T-1}|| / ||u_{T-1} - u_{T-2}||`` with ``backtest`` ``q`` the last frame of a
      ``K``-step rollout that ends on the observed ``u_{T-1}`` (started from ``u_0 .. u_{T-1-K}``)."""
    fields = slot_fields(window.double(), pde.variables)
    frames = slot_fields(torch.cat([window, rollout], 1).double(), pde.variables)
    steps, observed = rollout.shape[1], window.shape[1]
    floor = observed_floor(pde, fields, dt, params, ops, scheme, dims)
    out: dict[str, torch.Tensor] = {"floor": floor}
    ratios = []
    for k in range(steps):
        before = _frames(frames, 0, observed + k)
        new = {name: v[:, observed + k] for name, v in frames.items()}
        ratios.append(prediction_residual(pde, before, new, dt, params, ops, scheme, dims) / floor.clamp_min(1e-300))
        out[f"residual_ratio_step{k + 1}"] = ratios[-1]
    out["residual_ratio"] = torch.stack(ratios).mean(0)
    last = {k: v[:, -1] for k, v in fields.items()}
    final = {k: v[:, -1] for k, v in frames.items()}
    if reference is not None:
        ref = slot_fields(reference.double(), pde.variables)
        ref_last = {k: v[:, -1] for k, v in ref.items()}
        ref_before = last if steps == 1 else {k: v[:, -2] for k, v in ref.items()}
        out["departure"] = relative_change(final, ref_last, ref_before)
    if backtest is not None and observed >= 2:
        guess = slot_fields(backtest.double(), pde.variables)
        out["backtest"] = relative_change(guess, last, {k: v[:, -2] for k, v in fields.items()})
    return out


def mean_card(per_sample: Mapping[str, list[torch.Tensor]]) -> Scorecard:
    """The card of per-sample scores collected over batches (mean over all samples; absent scores ``nan``)."""
    values = {k: float(torch.cat(v).mean()) for k, v in per_sample.items() if v}
    return Scorecard(**{k: values.get(k, math.nan) for k in SCORE_NAMES})


@dataclass
class GuardSettings:
    """``trainer.guard_*``: ``floor_tolerance``: the start's residual ratio at or below which its residual counts as
    *at the floor*; ``departure_limit``: the departure from the start, in multiples of the start's backtest error,
    beyond which a candidate moved further than anything the floor can justify (2: provably worse than the start
    when the backtest estimates the start's error); ``backtest_tolerance``: the relative increase of the backtest
    error over the start's that makes a candidate worse on the observed history."""

    floor_tolerance: float = 2.0
    departure_limit: float = 2.0
    backtest_tolerance: float = 0.1


def guard_decision(start: Scorecard, candidate: Scorecard, settings: GuardSettings | None = None) -> str | None:
    """Why the candidate is worse than the start by the scorecard, or ``None`` when nothing says so. Two rules,
    each on label-free scores only:

    * ``floor``: the start's residual is already at the floor (``start.residual_ratio <= floor_tolerance``), so
      the residual cannot resolve any move, and the candidate moved further from the start than the start's own
      estimated error allows (``candidate.departure > departure_limit * start.backtest``; see the module
      docstring);
    * ``backtest``: the candidate predicts the observed last frame of the history worse than the start did
      (``candidate.backtest > (1 + backtest_tolerance) * start.backtest``).

    A ``nan`` score never triggers its rule."""
    s = settings or GuardSettings()
    reasons = []
    if start.residual_ratio <= s.floor_tolerance and candidate.departure > s.departure_limit * start.backtest:
        reasons.append(
            f"floor: the start's residual is at the floor ({start.residual_ratio:.3g}x it, <= {s.floor_tolerance:g}) "
            f"and the candidate moved {candidate.departure:.3g} of a step from the start, more than "
            f"{s.departure_limit:g}x the start's backtest error {start.backtest:.3g}"
        )
    if candidate.backtest > (1 + s.backtest_tolerance) * start.backtest:
        reasons.append(
            f"backtest: the candidate predicts the observed last history frame worse than the start "
            f"({candidate.backtest:.3g} vs {start.backtest:.3g} of its step)"
        )
    return "; ".join(reasons) or None


def guard_unchecked(start: Scorecard | None, candidate: Scorecard) -> list[str]:
    """What :func:`guard_decision` could not check, one line per rule with the scores it lacked (an empty list when
    both rules were checked): a rule whose scores are ``nan`` never triggers, so a guard that found nothing wrong
    says here what it did not look at."""
    if start is None:
        return ["floor and backtest rules: no scorecard of the start (the start was not validated)"]
    needs = {
        "floor": (("start", "residual_ratio"), ("candidate", "departure"), ("start", "backtest")),
        "backtest": (("candidate", "backtest"), ("start", "backtest")),
    }
    cards = {"start": start, "candidate": candidate}
    out = []
    for rule, scores in needs.items():
        lacking = [f"{who}'s {name}" for who, name in scores if not math.isfinite(getattr(cards[who], name))]
        if lacking:
            out.append(f"{rule} rule not checked: {', '.join(lacking)} n/a")
    return out
