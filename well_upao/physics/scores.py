"""The label-free scorecard: how good a prediction looks from what UPAO may see (the observed history, the boundary
band and the equation). Computed by a bound residual (``well_upao.physics.bound.BoundResidual.scorecard``); the guard
that judges candidates by it lives with the training loop (``well_upao.trainers.guard``).

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

``BoundResidual.scorecard`` computes all of them; ``well_upao.trainers.guard`` judges candidates by them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass

import torch

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


def relative_change(a: Mapping[str, torch.Tensor], b: Mapping[str, torch.Tensor], base: Mapping[str, torch.Tensor]):
    """``mean_v ||a_v - b_v|| / ||b_v - base_v||`` per sample over the whole field (fields ``(B, *space)``)."""
    ratios = []
    for v in a:
        top = (a[v] - b[v]).double().flatten(1).norm(dim=1)
        bottom = (b[v] - base[v]).double().flatten(1).norm(dim=1)
        ratios.append(top / bottom.clamp_min(1e-300))
    return torch.stack(ratios).mean(0)


def mean_card(per_sample: Mapping[str, list[torch.Tensor]]) -> Scorecard:
    """The card of per-sample scores collected over batches (mean over all samples; absent scores ``nan``)."""
    values = {k: float(torch.cat(v).mean()) for k, v in per_sample.items() if v}
    return Scorecard(**{k: values.get(k, math.nan) for k in SCORE_NAMES})
