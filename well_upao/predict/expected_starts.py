"""Rule 3 of the expected VRMSE (issue 75): every start a history allows, counted by what it is worth, and each
predictor's error growth fitted with its uncertainty.

Rules 1 and 2 (``predict.expected``) read one backtest per history window (its first ``START`` frames rolled out) and
continue the curve past its reach by a fixed rule. A history of ``T`` frames allows ``A = T - START`` starts: the
rollout from frames ``a .. a + START - 1`` predicts frames ``a + START ..`` and gives an error at horizons
``K = 1 .. A - a``. In the units of ``predict.expected`` (the step-unit error of ``predict.evidence`` times the
window's ``rho``) this is a *start matrix* ``X[a, K - 1] = x_{a,K}`` ``(A, A)``, ``nan`` where not reached
(`start_matrix`, `classical_start_matrices`); its first row is the curve rules 1 and 2 read (one step ahead they
already average every frame's one-step error: the matrix's first column). A model's or the solver's matrix holds the
two backtests the pick already runs (`own_start_matrix`: its rollout from the first start as the first row, its
one-step errors of every frame as the first column; no rollout added). Per row and window (`expected_from_starts`):

* **level per horizon**: ``l_K = mean log x_{a,K}`` over every start of every history window that reaches ``K``
  (positive errors only; where half or more of the samples are zero the row expects no error at ``K``). The mean of
  the logs (a geometric mean) rather than the median: its standard error has a closed form under overlap (next
  point), and on the log scale a window holding a transient weighs as one sample, not as orders of magnitude.
* **effective count**: two starts ``d`` apart share ``max(0, S - d)`` of the ``S = K + START`` frames each reads, so
  their errors are correlated; under the model that each sample is a mean over the frames it reads (a moving
  average), the correlation is ``rho_d = max(0, 1 - d / S)`` and the ``m`` consecutive starts of one window count as
  ``n_eff = m^2 / sum_{i,j} rho_{|i-j|}`` independent samples (`effective_count`: ``1`` for ``m = 1``, about
  ``m / S`` for ``m >> S``), not ``m``; history windows count as independent, so ``N_K = sum_w n_eff,w`` (windows of
  one trajectory that overlap, as evaluate's rollout windows of a short trajectory can, are then counted high). The
  level's variance is ``v_K = s_K^2 / N_K``, ``s_K`` the standard deviation of the log samples (``SINGLE_WINDOW_SPREAD``
  and ``N_K = 1`` where fewer than two). Counting the raw ``m`` would shrink the interval by adding overlapping
  windows that carry no new evidence.
* **growth fitted**: ``l_K = alpha + beta log K`` (a power law: a polynomial extrapolation of degree ``p`` on a smooth
  field misses by ``~K^{p+1}``, persistence by ``~K``) by weighted least squares over the reached horizons
  ``K = 1 .. R`` with weights ``1 / v_K`` (`growth_fit`); the covariance of ``(alpha, beta)`` is
  ``(X^T W X)^{-1}``, scaled by the reduced chi-square where it exceeds 1 (a curve that is no power law widens its
  continuation instead of pretending). Past the reach ``R`` the level is the fit's, with variance
  ``x_k^T Cov x_k``, ``x_k = (1, log k)``: the further past the reach, the wider, by the fit's own uncertainty rather
  than by a fixed rule. One reached horizon (``R = 1``) fits no slope: ``beta = 1 +- 1`` (persistence's growth) is
  assumed.
* **value**: ``mean_k exp(l_k)`` over the window's horizons (the observed level within the reach, the fit's past it);
  ``continued_share`` the part of it past the reach.
* **interval** (nominal 80%): ``value * exp(+- z sigma)``, ``sigma^2 = sigma_level^2 + sigma_transfer^2`` with
  ``sigma_level = sum_k w_k sqrt(v_k + (c log(k / R))^2)`` over the window's horizons, ``w_k = exp(l_k) / sum exp(l)``
  (the delta method for the log of the mean, the horizons' errors taken as fully correlated: an upper bound) and
  ``log(k / R) = 0`` within the reach. Three constants, fitted on the tuned sets only, each the smallest that covers
  80% of the cells it governs, as split-conformal calibration takes a score's quantile on a calibration split (the
  tune phase of ``benchmarks/studies/expected_rule3_study.py``, which records them, a hash of them and the time before
  a held-out cell may be read): ``sigma_transfer`` one step ahead, on the one-step cells; one ``sigma_transfer`` of
  the rollout windows, on their cells read within the reach (the history standing in for the future: a field that
  slows down or speeds up); then ``c``, the spread of the growth's exponent per e-fold of horizon past the reach (no
  power law is exact: the further past the evidence, the wider), on the continued cells.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

from well_upao.predict.classical import CLASSICAL_PRIORS, ClassicalPrior
from well_upao.predict.evidence import START, backtest_curve
from well_upao.predict.expected import SINGLE_WINDOW_SPREAD, Z_80, Expected, step_over_spread
from well_upao.predict.windows import WINDOWS

#: the slope assumed, with its standard error, where the history reaches one horizon only (persistence's growth)
SINGLE_HORIZON_SLOPE = (1.0, 1.0)


@dataclass(frozen=True)
class StartsRule:
    """Rule 3 (module docstring): ``transfer`` is ``sigma_transfer`` per window, ``slope`` the spread ``c`` per
    e-fold of horizon past the reach; ``effective`` whether overlapping
    starts are counted by their effective count (``False`` only for the negative control: the raw count)."""

    version: int
    transfer: Mapping[str, float]
    slope: float = 0.0
    effective: bool = True

    def digest(self) -> str:
        """A hash of the rule's parameters (the study records it before a held-out cell is read)."""
        text = json.dumps({"version": self.version, "transfer": dict(self.transfer), "slope": self.slope,
                           "effective": self.effective}, sort_keys=True)  # fmt: skip
        return hashlib.sha256(text.encode()).hexdigest()[:16]


#: fixed on the tuned sets before a held-out cell was read: the tune phase of
#: ``benchmarks/studies/expected_rule3_study.py`` (its record names the command) at 36180aa on 2026-11-28 (135
#: cells of six tuned sets at histories 8, 16 and 32; the record, with its hash and time:
#: ``reports/expected_rule3_fixed.json``)
RULE_3 = StartsRule(3, {"one_step": 0.132, "6:12": 0.401, "13:30": 0.401}, slope=0.604)


def effective_count(samples: int, span: int) -> float:
    """``n_eff = m^2 / sum_{i,j} max(0, 1 - |i - j| / S)`` of ``m = samples`` consecutive starts whose samples each
    read ``S = span`` frames (module docstring)."""
    if samples <= 0:
        return 0.0
    total = samples + 2 * sum((samples - d) * (1 - d / span) for d in range(1, min(samples, span)))
    return samples**2 / total


def start_matrix(per_channel: torch.Tensor, rho: torch.Tensor) -> torch.Tensor:
    """``X[a, K - 1]`` (module docstring) from the step-unit errors per channel ``(A, K, C_active)`` (``nan`` where
    not reached) and the window's ``rho`` ``(C_active,)``: ``(A, K)``; a channel whose last step is zero expects no
    error."""
    scaled = per_channel * rho
    return torch.where(rho == 0, torch.zeros_like(scaled), scaled).mean(-1)


def prior_start_matrix(prior: ClassicalPrior, window: torch.Tensor, mask: torch.Tensor, rho: torch.Tensor):
    """A classical ``prior``'s start matrix ``(A, A)`` on one history window ``(T, *space, C)`` (``T > START``), its
    ``rho`` ``(C_active,)`` given: the rollout from every start (module docstring)."""
    starts = window.shape[0] - START
    errors = torch.full((starts, starts, int(mask.bool().sum())), math.nan, dtype=torch.float64)
    for a in range(starts):
        part = window[None, a:]
        errors[a, : starts - a] = backtest_curve(prior.rolled_out(part, START), part, START, mask, True)[0]
    return start_matrix(errors, rho)


def classical_start_matrices(window: torch.Tensor, mask: torch.Tensor) -> dict[str, torch.Tensor]:
    """Every classical predictor's start matrix on one history window ``(T, *space, C)`` (active channels of
    ``mask``): ``{name: (A, A)}``, ``A = T - START``; empty for a window of ``START`` frames or fewer."""
    if window.shape[0] <= START:
        return {}
    rho = step_over_spread(window[None], mask)[0]
    return {name: prior_start_matrix(prior, window, mask, rho) for name, prior in CLASSICAL_PRIORS.items()}


def own_start_matrix(rolled: torch.Tensor, one_step: torch.Tensor, rho: torch.Tensor) -> torch.Tensor:
    """The start matrix ``(A, A)`` of a row with one rollout only (a model's, the solver's): its rollout from the
    first ``START`` frames, step-unit errors per channel ``(K, C_active)``, as the first row, and its one-step
    predictions of every later frame ``(A, C_active)`` as the first column; the rest unreached (``nan``)."""
    starts = one_step.shape[0]
    errors = torch.full((starts, starts, one_step.shape[-1]), math.nan, dtype=torch.float64)
    errors[0, : rolled.shape[0]] = rolled.double()
    errors[:, 0] = one_step.double()
    return start_matrix(errors, rho)


def batch_start_matrices(history: torch.Tensor, mask: torch.Tensor) -> dict[str, torch.Tensor]:
    """Every classical predictor's start matrix on each window of ``history`` ``(B, T, *space, C)``
    (`classical_start_matrices`, float64): ``{name: (B, A, A)}``, ``A = T - START``; empty for
    windows of ``START`` frames or fewer."""
    per_sample = [classical_start_matrices(window.double(), mask) for window in history.unbind(0)]
    if not per_sample or not per_sample[0]:
        return {}
    return {name: torch.stack([matrices[name] for matrices in per_sample]) for name in per_sample[0]}


def own_start_matrices(rolled: torch.Tensor, one_step: torch.Tensor, rho: torch.Tensor) -> torch.Tensor:
    """`own_start_matrix` of each sample: ``rolled`` ``(B, K, C_active)`` (``K = 0``: no rollout
    run), ``one_step`` ``(B, A, C_active)``, ``rho`` ``(B, C_active)``; returns ``(B, A, A)``."""
    return torch.stack([own_start_matrix(r, o, h) for r, o, h in zip(rolled, one_step, rho, strict=True)])


@dataclass(frozen=True)
class Levels:
    """Per reached horizon ``K = 1 .. R``: the level ``l_K`` (``-inf``: no error expected), its variance ``v_K``,
    the log spread ``s_K`` and the effective count ``N_K`` (module docstring)."""

    level: list[float]
    variance: list[float]
    spread: list[float]
    count: list[float]


def finite_reach(matrix: torch.Tensor) -> int:
    """How many leading horizons of ``matrix``'s first row (the first start's rollout) are finite."""
    finite = torch.isfinite(matrix[0]).tolist()
    return finite.index(False) if False in finite else len(finite)


def horizon_levels(matrices: Sequence[torch.Tensor], rule: StartsRule = RULE_3) -> Levels:
    """``l_K``, ``v_K``, ``s_K`` and ``N_K`` from the history windows' start matrices ``(A_w, K_w)`` (module
    docstring), to the shortest reach ``R``: the horizons every window's first start reaches with a finite error (a
    rollout that diverged ends the evidence where it did; the first row reaches every horizon by construction)."""
    reach = min(finite_reach(m) for m in matrices)
    out = Levels([], [], [], [])
    for k in range(1, reach + 1):
        logs, count, samples = [], 0.0, 0
        for m in matrices:
            column = m[:, k - 1].double()
            column = column[torch.isfinite(column)]
            samples += len(column)
            positive = column[column > 0]
            if len(positive):
                logs.append(positive.log())
                count += effective_count(len(positive), k + START) if rule.effective else len(positive)
        if not logs or 2 * sum(len(part) for part in logs) <= samples:
            out.level.append(-math.inf), out.variance.append(0.0), out.spread.append(0.0), out.count.append(count)
            continue
        values = torch.cat(logs)
        if len(values) > 1:
            spread = float(values.std(unbiased=True))
        else:
            spread, count = SINGLE_WINDOW_SPREAD, 1.0
        out.level.append(float(values.mean()))
        out.variance.append(spread**2 / count)
        out.spread.append(spread)
        out.count.append(count)
    return out


def growth_fit(levels: Levels) -> tuple[tuple[float, float], list[list[float]]] | None:
    """``((alpha, beta), Cov)`` of the weighted least-squares power law ``l_K = alpha + beta log K`` over the reached
    horizons with a finite level (module docstring); ``None`` without one."""
    pairs = zip(levels.level, levels.variance, strict=True)
    points = [(math.log(k), level, var) for k, (level, var) in enumerate(pairs, 1) if math.isfinite(level)]
    if not points:
        return None
    floor = 1e-12 + 1e-12 * max(var for _, _, var in points)  # an exact curve (zero spread) still weighs
    if len(points) == 1:
        x, level, var = points[0]
        slope, slope_se = SINGLE_HORIZON_SLOPE
        alpha = level - slope * x
        cov = [[var + (x * slope_se) ** 2, -x * slope_se**2], [-x * slope_se**2, slope_se**2]]
        return (alpha, slope), cov
    design = torch.tensor([[1.0, x] for x, _, _ in points], dtype=torch.float64)
    target = torch.tensor([level for _, level, _ in points], dtype=torch.float64)
    weight = torch.tensor([1 / max(var, floor) for _, _, var in points], dtype=torch.float64)
    normal = design.T @ (weight[:, None] * design)
    cov = torch.linalg.inv(normal)
    coefficients = cov @ (design.T @ (weight * target))
    if len(points) > 2:
        residual = target - design @ coefficients
        chi2 = float((weight * residual**2).sum()) / (len(points) - 2)
        cov = cov * max(1.0, chi2)
    return (float(coefficients[0]), float(coefficients[1])), cov.tolist()


@dataclass(frozen=True)
class WindowParts:
    """What rule 3's interval is made of for one row and window (module docstring): ``value``, per horizon of the
    window its weight ``w_k``, the standard error ``sqrt(v_k)`` of its level (sampling within the reach, the fit's
    past it) and ``log(k / R)`` past the reach (0 within); ``share`` the value's part past the reach ``reach``."""

    value: float
    weights: list[float]
    errors: list[float]
    beyond: list[float]
    share: float
    reach: int
    spread: float


def window_parts(matrices: Sequence[torch.Tensor], window: str, rule: StartsRule = RULE_3) -> WindowParts | None:
    """`WindowParts` of ``window`` from the history windows' start matrices ``(A_w, K_w)``; ``None`` without a
    finite error one step ahead in every window's first start."""
    matrices = [m.double() for m in matrices if m.numel()]
    if not matrices:
        return None
    levels = horizon_levels(matrices, rule)
    reach = len(levels.level)
    if reach == 0:  # no window's first start has a finite error one step ahead
        return None
    fit = growth_fit(levels)
    first, last = WINDOWS[window]
    anchor = levels.spread[min(first, reach) - 1]
    if fit is None:  # no error expected at any reached horizon
        return WindowParts(0.0, [], [], [], 0.0, reach, anchor)
    (alpha, beta), cov = fit
    logs, errors, beyond = [], [], []
    for k in range(first, last + 1):
        if k <= reach:
            logs.append(levels.level[k - 1])
            errors.append(math.sqrt(levels.variance[k - 1]))
            beyond.append(0.0)
        else:
            x = math.log(k)
            logs.append(alpha + beta * x)
            errors.append(math.sqrt(max(0.0, cov[0][0] + 2 * x * cov[0][1] + x * x * cov[1][1])))
            beyond.append(math.log(k / reach))
    values = [math.exp(level) for level in logs]
    total = sum(values)
    if total == 0:
        return WindowParts(0.0, [], [], [], 0.0, reach, anchor)
    share = sum(v for v, b in zip(values, beyond, strict=True) if b > 0) / total
    weights = [v / total for v in values]
    return WindowParts(total / len(values), weights, errors, beyond, share, reach, anchor)


def horizon_values(matrices: Sequence[torch.Tensor], steps: int, rule: StartsRule = RULE_3) -> list[float] | None:
    """Rule 3's expected VRMSE at each horizon ``K = 1 .. steps`` (a point value, no interval): ``exp(l_K)`` within
    the reach, ``exp(alpha + beta log K)`` past it, the values whose mean over a window's horizons is the window's
    value (`window_parts`); ``None`` where `window_parts` has no estimate."""
    matrices = [m.double() for m in matrices if m.numel()]
    if not matrices:
        return None
    levels = horizon_levels(matrices, rule)
    reach = len(levels.level)
    if reach == 0:
        return None
    fit = growth_fit(levels)
    if fit is None:  # no error expected at any reached horizon
        return [0.0] * steps
    (alpha, beta), _ = fit
    return [
        math.exp(levels.level[k - 1]) if k <= reach else math.exp(alpha + beta * math.log(k))
        for k in range(1, steps + 1)
    ]


def log_sigma(parts: WindowParts, window: str, rule: StartsRule = RULE_3) -> float:
    """``sigma`` of rule 3's interval (module docstring): the level's part, each continued horizon's error widened by
    the rule's ``slope`` spread per e-fold past the reach, and the transfer spread."""
    level = sum(w * math.hypot(e, rule.slope * b) for w, e, b in zip(parts.weights, parts.errors, parts.beyond,
                                                                     strict=True))  # fmt: skip
    return math.hypot(level, rule.transfer[window])


def expected_from_starts(
    matrices: Sequence[torch.Tensor], window: str, rule: StartsRule = RULE_3, windows: int | None = None
) -> Expected | None:
    """The expected VRMSE for ``window`` under rule 3 (module docstring) from the history windows' start matrices
    ``(A_w, K_w)`` (``windows``: how many history windows they are, default their count); ``None`` without a finite
    sample."""
    parts = window_parts(matrices, window, rule)
    if parts is None:
        return None
    factor = math.exp(Z_80 * log_sigma(parts, window, rule))
    count = windows or sum(1 for m in matrices if m.numel())
    return Expected(parts.value, parts.value / factor, parts.value * factor, parts.share, parts.reach, count,
                    parts.spread, rule.version)  # fmt: skip


def expected_starts_per_window(matrices: Mapping[str, Sequence[torch.Tensor]], window: str) -> dict[str, Expected]:
    """Every row's `expected_from_starts` for ``window`` from its history windows' start matrices."""
    out = {}
    for name, parts in matrices.items():
        estimate = expected_from_starts(list(parts), window)
        if estimate is not None:
            out[name] = estimate
    return out
