"""Rule 3 of the expected VRMSE (``predict.expected_starts``) against closed forms, with negative controls.

* The effective count: a moving average of ``S`` independent normals has the correlation ``max(0, 1 - d / S)`` at lag
  ``d`` exactly, so the variance of the mean of ``m`` consecutive values is ``1 / n_eff`` (unit variance): checked by
  simulation, and the interval it makes covers the true level about 80% of the time, where the raw count (the
  negative control) or no spread at all cover far less.
* A field linear in time, ``u = sin(x) + c t cos(x)`` on ``N`` periodic points: persistence misses by exactly ``K``
  steps from every start, so ``x_{a,K} = K rho`` with ``rho = c sqrt(N / 2) / (sqrt(N) sqrt(var u_last + 1e-7))``,
  ``var u_last = (N / 2) (1 + (c t_last)^2) / (N - 1)``: the fit recovers the power law (``beta = 1``), the window's
  value is ``rho`` times the mean of its horizons, and the interval is the slope spread's and the transfer's alone.
* A field quadratic in time, ``u = sin(x) + c t^2 cos(x)``: persistence from a start whose last frame is ``t0`` misses
  by ``c ((t0 + K)^2 - t0^2)``, its samples differ by start, and the whole rule (levels, effective counts, weighted
  fit, interval) is recomputed here from that closed form with numpy's least squares; the raw count and an interval
  that ignores the spread (the negative controls) give other intervals.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from well_upao.predict.classical import CLASSICAL_PRIORS
from well_upao.predict.evidence import START, backtest_curve
from well_upao.predict.expected import Z_80, step_over_spread
from well_upao.predict.expected_starts import (
    RULE_3,
    Levels,
    StartsRule,
    classical_start_matrices,
    effective_count,
    expected_from_starts,
    growth_fit,
    horizon_levels,
    horizon_values,
    own_start_matrix,
)

N = 64
RULE = StartsRule(3, {"one_step": 0.1, "6:12": 0.3, "13:30": 0.3}, slope=0.5)


def test_effective_count_closed_forms():
    assert effective_count(1, 7) == 1
    assert effective_count(5, 1) == 5  # no overlap: every start counts
    assert effective_count(2, 4) == pytest.approx(4 / (2 + 2 * 0.75))
    # many starts: about m / S (the sum of the triangular correlation over all lags is S)
    assert effective_count(4000, 4) == pytest.approx(4000 / 4, rel=2e-3)


def moving_average(reps: int, samples: int, span: int, generator: torch.Generator) -> torch.Tensor:
    """``(reps, samples)`` of unit variance, each the mean of ``span`` consecutive independent normals (times
    ``sqrt(span)``): lag correlation ``max(0, 1 - d / span)`` exactly."""
    noise = torch.randn(reps, samples + span - 1, generator=generator, dtype=torch.float64)
    return noise.unfold(1, span, 1).sum(-1) / math.sqrt(span)


def test_the_effective_count_gives_the_variance_of_the_mean_of_overlapping_samples():
    generator = torch.Generator().manual_seed(0)
    samples, span = 40, 5
    means = moving_average(20000, samples, span, generator).mean(1)
    assert float(means.var()) == pytest.approx(1 / effective_count(samples, span), rel=0.05)
    assert float(means.var()) > 3 * (1 / samples)  # the raw count is far off


def level_coverage(rule: StartsRule, ignore_spread: bool = False) -> float:
    """How often ``l_K +- z sqrt(v_K)`` (`horizon_levels`) covers the true level of log errors that overlap as
    starts ``K + START`` frames long do: three history windows, one horizon, 500 replications."""
    generator = torch.Generator().manual_seed(1)
    horizon, truth, inside, reps = 2, -1.7, 0, 500
    for _ in range(reps):
        windows = [(truth + 0.6 * moving_average(1, 30, horizon + START, generator)[0]).exp() for _ in range(3)]
        matrices = [
            torch.cat([torch.full((30, horizon - 1), 1.0, dtype=torch.float64), w[:, None]], 1) for w in windows
        ]
        levels = horizon_levels(matrices, rule)
        half = 0.0 if ignore_spread else Z_80 * math.sqrt(levels.variance[horizon - 1])
        inside += abs(levels.level[horizon - 1] - truth) <= half
    return inside / reps


def test_the_level_interval_covers_at_its_nominal_rate_and_the_controls_do_not():
    assert 0.72 <= level_coverage(RULE_3) <= 0.88
    # negative controls: the raw count of overlapping starts, and an interval that ignores the spread
    assert level_coverage(dataclasses.replace(RULE_3, effective=False)) < 0.6
    assert level_coverage(RULE_3, ignore_spread=True) < 0.1


def field(frames: int, power: int, first: int, c: float = 0.05) -> torch.Tensor:
    """``(frames, N, 1)``: ``sin(x) + c t^power cos(x)`` at ``t = first, first + 1, ..``."""
    x = torch.arange(N, dtype=torch.float64) * 2 * math.pi / N
    t = torch.arange(first, first + frames, dtype=torch.float64)
    return (torch.sin(x)[None] + c * t[:, None] ** power * torch.cos(x)[None])[..., None]


def rho_of(t_last: float, c: float, power: int) -> float:
    """The window's step over spread from its last two frames (module docstring), closed form."""
    step = c * (t_last**power - (t_last - 1) ** power) * math.sqrt(N / 2)
    variance = (N / 2) * (1 + (c * t_last**power) ** 2) / (N - 1)
    return step / (math.sqrt(N) * math.sqrt(variance + 1e-7))


def test_a_field_linear_in_time_continues_exactly_as_a_power_law_and_widens_by_the_slope_spread_alone():
    history, first = 8, 3
    windows = [field(history, 1, first + shift) for shift in (0, 20)]
    mask = torch.ones(1)
    matrices = [classical_start_matrices(w, mask)["persistence"] for w in windows]
    reach = history - START
    for m, shift in zip(matrices, (0, 20), strict=True):
        rho = rho_of(first + shift + history - 1, 0.05, 1)
        closed = torch.tensor([[k * rho if a + k <= reach else math.nan for k in range(1, reach + 1)]
                               for a in range(reach)], dtype=torch.float64)  # fmt: skip
        assert torch.allclose(m, closed, rtol=1e-9, equal_nan=True)
    # one window only, so the level is its own and the continuation is exact
    rho = rho_of(first + history - 1, 0.05, 1)
    for window, (a, b) in {"6:12": (7, 12), "13:30": (14, 30)}.items():
        estimate = expected_from_starts(matrices[:1], window, RULE)
        horizons = range(a, b + 1)
        assert estimate.value == pytest.approx(rho * sum(horizons) / len(horizons), rel=1e-9)
        assert estimate.continued_share == 1 and estimate.reach == reach
        weights = [k / sum(horizons) for k in horizons]
        level = sum(w * RULE.slope * math.log(k / reach) for w, k in zip(weights, horizons, strict=True))
        sigma = math.hypot(level, RULE.transfer[window])
        assert estimate.high / estimate.value == pytest.approx(math.exp(Z_80 * sigma), rel=1e-6)
        assert estimate.value / estimate.low == pytest.approx(math.exp(Z_80 * sigma), rel=1e-6)
    one = expected_from_starts(matrices[:1], "one_step", RULE)
    assert one.value == pytest.approx(rho, rel=1e-9)
    assert one.high / one.low == pytest.approx(math.exp(2 * Z_80 * RULE.transfer["one_step"]), rel=1e-6)
    # linear extrapolation is exact on this field: no error expected
    assert expected_from_starts([classical_start_matrices(windows[0], mask)["extrap1"]], "6:12", RULE).value < 1e-9


def test_the_per_horizon_values_are_the_closed_form_and_average_to_each_windows_value():
    """On the field linear in time persistence errs by exactly ``K rho`` at horizon ``K`` (within the reach, read from
    the starts; past it, the fitted power law continues it exactly); a window's value is their mean over its horizons
    (the forecast's per-step values and its window values agree)."""
    history, first = 8, 3
    matrices = [classical_start_matrices(field(history, 1, first), torch.ones(1))["persistence"]]
    rho = rho_of(first + history - 1, 0.05, 1)
    values = horizon_values(matrices, 30, RULE)
    assert values == pytest.approx([k * rho for k in range(1, 31)], rel=1e-9)
    for window, (a, b) in {"one_step": (1, 1), "6:12": (7, 12), "13:30": (14, 30)}.items():
        mean = sum(values[a - 1 : b]) / (b - a + 1)
        assert expected_from_starts(matrices, window, RULE).value == pytest.approx(mean, rel=1e-12)
    # negative control: on a field quadratic in time the values are not linear in K
    quadratic = [classical_start_matrices(field(history, 2, first), torch.ones(1))["persistence"]]
    grown = horizon_values(quadratic, 30, RULE)
    assert grown != pytest.approx([k * grown[0] for k in range(1, 31)], rel=1e-3)


def reference_interval(history: int, firsts: list[int], window: str, rule: StartsRule, raw: bool = False):
    """Rule 3 recomputed from the quadratic field's closed form (module docstring) with numpy: ``value, low, high``."""
    reach = history - START
    samples: dict[int, list[float]] = {k: [] for k in range(1, reach + 1)}
    counts = dict.fromkeys(samples, 0.0)
    for first in firsts:
        rho = rho_of(first + history - 1, 0.05, 2)
        for k in samples:
            starts = reach - k + 1
            for a in range(starts):
                t0 = first + a + START - 1  # the start's last observed frame
                target = t0 + k
                step_units = (target**2 - t0**2) / (target**2 - (target - 1) ** 2)
                samples[k].append(math.log(step_units * rho))
            # the effective count, a double sum over the starts' lags
            weight = sum(max(0.0, 1 - abs(i - j) / (k + START)) for i in range(starts) for j in range(starts))
            counts[k] += starts if raw else starts**2 / weight
    level = {k: float(np.mean(v)) for k, v in samples.items()}
    var = {k: float(np.var(v, ddof=1)) / counts[k] for k, v in samples.items()}
    design = np.array([[1.0, math.log(k)] for k in samples])
    weights = np.array([1 / var[k] for k in samples])
    root = np.sqrt(weights)
    coefficients, *_ = np.linalg.lstsq(design * root[:, None], np.array(list(level.values())) * root, rcond=None)
    cov = np.linalg.inv(design.T @ (weights[:, None] * design))
    residual = np.array(list(level.values())) - design @ coefficients
    cov *= max(1.0, float((weights * residual**2).sum()) / (len(samples) - 2))
    a, b = {"one_step": (1, 1), "6:12": (7, 12), "13:30": (14, 30)}[window]
    logs, errors = [], []
    for k in range(a, b + 1):
        if k <= reach:
            logs.append(level[k])
            errors.append(math.sqrt(var[k]))
        else:
            x = np.array([1.0, math.log(k)])
            logs.append(float(x @ coefficients))
            errors.append(math.hypot(math.sqrt(float(x @ cov @ x)), rule.slope * math.log(k / reach)))
    values = np.exp(logs)
    sigma = math.hypot(float((values / values.sum()) @ np.array(errors)), rule.transfer[window])
    value = float(values.mean())
    return value, value * math.exp(-Z_80 * sigma), value * math.exp(Z_80 * sigma)


@pytest.mark.parametrize(("history", "window"), [(8, "one_step"), (8, "6:12"), (16, "6:12"), (16, "13:30")])
def test_a_field_quadratic_in_time_matches_the_rule_recomputed_from_its_closed_form(history, window):
    firsts = [4, 19, 37]
    mask = torch.ones(1)
    matrices = [classical_start_matrices(field(history, 2, first), mask)["persistence"] for first in firsts]
    estimate = expected_from_starts(matrices, window, RULE)
    value, low, high = reference_interval(history, firsts, window, RULE)
    assert (estimate.value, estimate.low, estimate.high) == pytest.approx((value, low, high), rel=1e-6)
    # negative controls, on the level's part alone (no transfer, no slope spread): the raw count of overlapping
    # starts gives a narrower interval, and the spread is what makes it
    bare = StartsRule(3, dict.fromkeys(RULE.transfer, 0.0))
    level = expected_from_starts(matrices, window, bare)
    assert level.high == pytest.approx(reference_interval(history, firsts, window, bare)[2], rel=1e-6)
    raw = expected_from_starts(matrices, window, dataclasses.replace(bare, effective=False))
    assert raw.high == pytest.approx(reference_interval(history, firsts, window, bare, raw=True)[2], rel=1e-6)
    assert math.log(raw.high / raw.low) < 0.75 * math.log(level.high / level.low)
    assert level.high / level.low > 1.05


def test_a_curve_that_is_no_power_law_widens_its_fit_by_the_reduced_chi_square():
    """Levels growing exponentially (``l_K = 0.3 K``, each of variance 0.01): the weighted fit's covariance is
    ``(X^T W X)^-1`` times the reduced chi-square of its residuals (here above 1), recomputed with numpy."""
    horizons = np.arange(1, 6)
    levels = Levels(list(0.3 * horizons), [0.01] * 5, [0.1] * 5, [1.0] * 5)
    (alpha, beta), cov = growth_fit(levels)
    design = np.stack([np.ones(5), np.log(horizons)], 1)
    coefficients, *_ = np.linalg.lstsq(design, 0.3 * horizons, rcond=None)
    chi2 = float(((0.3 * horizons - design @ coefficients) ** 2).sum() / 0.01) / 3
    assert chi2 > 1
    assert (alpha, beta) == pytest.approx(tuple(coefficients), rel=1e-9)
    assert np.allclose(cov, chi2 * 0.01 * np.linalg.inv(design.T @ design), rtol=1e-9)


def test_a_model_rows_matrix_is_its_rollout_and_its_one_step_errors_of_the_classical_matrix():
    """``own_start_matrix`` (a model's or the solver's evidence) from persistence's own rollout and one-step
    backtests, as ``predict.backtests`` hands them: the first row and first column of persistence's every-start
    matrix, nothing else reached."""
    window = field(10, 2, 4)
    mask = torch.ones(1)
    full = classical_start_matrices(window, mask)["persistence"]
    prior = CLASSICAL_PRIORS["persistence"]
    rolled = backtest_curve(prior.rolled_out(window[None], START), window[None], START, mask, True)[0]
    one_step = backtest_curve(prior.one_step(window[None], START), window[None], START, mask, True)[0]
    own = own_start_matrix(rolled, one_step, step_over_spread(window[None], mask)[0])
    assert torch.allclose(own[0], full[0], rtol=1e-12, equal_nan=True)
    assert torch.allclose(own[:, 0], full[:, 0], rtol=1e-12)
    assert torch.isnan(own[1:, 1:]).all()


def test_a_rollout_that_diverges_ends_the_evidence_where_it_did():
    """A first start whose rollout turns infinite at horizon 4 (a model that diverged): the reach is 3 and the window
    is continued from there, not read as expecting no error; infinite one step ahead: no estimate."""
    rho = rho_of(4 + 8 - 1, 0.05, 1)
    matrix = torch.tensor([[k * rho for k in range(1, 6)]], dtype=torch.float64)
    matrix[0, 3:] = math.inf
    estimate = expected_from_starts([matrix], "6:12", RULE)
    assert estimate.reach == 3 and estimate.continued_share == 1
    assert estimate.value == pytest.approx(rho * sum(range(7, 13)) / 6, rel=1e-6)  # the power law K rho continued
    matrix[0, 0] = math.inf
    assert expected_from_starts([matrix], "6:12", RULE) is None
