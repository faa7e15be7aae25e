"""The expected VRMSE without labels (``predict.expected``) against closed forms.

A field ``u(x, t) = a(t) sin(x)`` with ``a = exp(lambda t)``, frames ``h`` apart on a periodic grid of ``N`` points:
a frame's norm is ``|a| ||sin||`` and its spatial standard deviation (unbiased, the Well's) ``|a| ||sin|| /
sqrt(N - 1)``, so every ratio the estimate uses has a closed form in ``q = exp(-lambda h)``:

* persistence ``K`` steps ahead misses by ``|a_{t+K} - a_t| ||sin||``: its Well VRMSE is
  ``sqrt((N - 1) / N) (1 - q^K)`` from every start;
* linear extrapolation one step ahead misses by ``a_{t-2} (1/q - 1)^2 ||sin||``: its VRMSE is
  ``sqrt((N - 1) / N) (1 - q)^2``.

The history's backtests see the same ratios, so the expected value equals the truth here (to the Well's ``1e-7``
under the root of the variance); the negative controls
take the step and spread from the window's first frames instead of its last, and average the channels apart.
"""

from __future__ import annotations

import json
import math

import pytest
import torch

from well_upao.data.generate import GenerationRequest, generate_dataset
from well_upao.evaluate.pipeline import EvaluationRequest, run_evaluation
from well_upao.predict.classical import CLASSICAL_PRIORS
from well_upao.predict.evidence import (
    START,
    backtest_curve,
    with_one_step,
)
from well_upao.predict.expected import (
    RULE_1,
    RULE_2,
    SINGLE_WINDOW_SPREAD,
    Z_80,
    expected_curve,
    expected_vrmse,
    interval,
    step_over_spread,
)

N, H = 64, 0.1


def growing(rates, frames: int, start: int = 0) -> torch.Tensor:
    """``(1, T, N, C)``: channel ``c`` is ``exp(rates[c] t) sin(x)`` at ``t = (start + i) h``."""
    x = torch.arange(N, dtype=torch.float64) * 2 * math.pi / N
    t = (start + torch.arange(frames, dtype=torch.float64)) * H
    return torch.stack([torch.exp(rate * t)[:, None] * torch.sin(x)[None] for rate in rates], -1)[None]


def prior_of(order: int):
    return next(prior for prior in CLASSICAL_PRIORS.values() if prior.order == order)


def curves_of(window: torch.Tensor, order: int) -> torch.Tensor:
    """The expected-VRMSE curve ``x_K`` of polynomial extrapolation of ``order`` on one window, as evaluate makes it."""
    mask = torch.ones(window.shape[-1])
    rollout = backtest_curve(prior_of(order).rolled_out(window, START), window, START, mask, per_channel=True)
    one_step = backtest_curve(prior_of(order).one_step(window, START), window, START, mask, per_channel=True)
    return expected_curve(with_one_step(rollout, one_step), step_over_spread(window, mask))


def factor(rate: float) -> float:
    return 1 - math.exp(-rate * H)


SPREAD = math.sqrt((N - 1) / N)  # the unbiased spatial variance of the Well's VRMSE


def test_persistence_and_extrap1_one_step_match_their_closed_forms():
    windows = torch.cat([curves_of(growing([0.7], 8, start=s), 0) for s in (0, 5, 11)])
    estimate = expected_vrmse(windows, "one_step")
    assert estimate.value == pytest.approx(SPREAD * factor(0.7), rel=1e-6)
    assert estimate.continued_share == 0 and estimate.windows == 3
    linear = expected_vrmse(torch.cat([curves_of(growing([0.7], 8, start=s), 1) for s in (0, 5)]), "one_step")
    assert linear.value == pytest.approx(SPREAD * factor(0.7) ** 2, rel=1e-6)


def test_a_rollout_window_within_reach_is_the_mean_of_the_closed_form_over_its_steps():
    """History 16 reaches 13 steps: the 6:12 window (steps 7..12) is read, not continued."""
    estimate = expected_vrmse(curves_of(growing([0.7], 16), 0), "6:12")
    truth = sum(SPREAD * (1 - math.exp(-0.7 * H * k)) for k in range(7, 13)) / 6
    assert estimate.value == pytest.approx(truth, rel=1e-6) and estimate.continued_share == 0
    # one window: the spread is the fixed log 2; rule 1 (one more window): sigma^2 = log(2)^2 (1 + 1) + log(1.25)^2;
    # rule 2 (the mean over the windows): log(2)^2 / 1 + its 6:12 transfer spread squared
    first = expected_vrmse(curves_of(growing([0.7], 16), 0), "6:12", RULE_1)
    sigma = math.sqrt(math.log(2.0) ** 2 * 2 + math.log(1.25) ** 2)
    assert first.high / first.value == pytest.approx(math.exp(Z_80 * sigma), rel=1e-12) and first.rule == 1
    assert first.low * first.high == pytest.approx(first.value**2, rel=1e-12)
    second = expected_vrmse(curves_of(growing([0.7], 16), 0), "6:12", RULE_2)
    sigma = math.sqrt(math.log(2.0) ** 2 + RULE_2.transfer["6:12"] ** 2)
    assert second.high / second.value == pytest.approx(math.exp(Z_80 * sigma), rel=1e-12) and second.rule == 2
    assert second.value == first.value and second.spread == first.spread == math.log(2.0)


def test_short_of_the_window_the_curve_is_continued_and_the_interval_widens():
    """History 8 reaches 5 steps: 6:12 is wholly continued (the line through steps 4 and 5, this curve bending down),
    and its interval is wider by ``log(1 + (12 - 5) / 5)``."""
    windows = torch.cat([curves_of(growing([0.7], 8, start=s), 0) for s in (0, 3)])
    estimate = expected_vrmse(windows, "6:12")
    x4, x5 = (SPREAD * (1 - math.exp(-0.7 * H * k)) for k in (4, 5))
    continued = [x5 + (x5 - x4) * (k - 5) for k in range(7, 13)]
    assert estimate.value == pytest.approx(sum(continued) / 6, rel=1e-6)
    assert estimate.continued_share == 1 and estimate.reach == 5
    assert estimate.spread < 1e-7  # both windows see the same curve (to the Well's 1e-7 under the spread)
    sigma = math.sqrt(estimate.spread**2 / 2 + RULE_2.transfer["6:12"] ** 2 + math.log(1 + 7 / 5) ** 2)
    assert estimate.high == pytest.approx(estimate.value * math.exp(Z_80 * sigma), rel=1e-12)


def test_the_windows_part_is_one_more_window_under_rule_1_and_their_mean_under_rule_2():
    """``s = 0.6`` over 9 windows, one step: rule 1 adds ``0.36 (1 + 1/9)``, rule 2 ``0.36 / 9``, to the transfer
    spread; the interval is symmetric in log around the value."""
    for rule, part in ((RULE_1, 0.36 * (1 + 1 / 9)), (RULE_2, 0.36 / 9)):
        low, high = interval(0.5, 0.6, 9, 0.0, 1, "one_step", rule)
        sigma = math.sqrt(part + rule.transfer["one_step"] ** 2)
        assert high == pytest.approx(0.5 * math.exp(Z_80 * sigma), rel=1e-12)
        assert low * high == pytest.approx(0.25, rel=1e-12)
    assert interval(0.5, 0.6, 9, 0.0, 1, "one_step", RULE_1)[1] > interval(0.5, 0.6, 9, 0.0, 1, "one_step", RULE_2)[1]


def test_channels_are_weighted_each_by_its_own_spread():
    """Two channels growing at different rates: extrap1's value is the mean of the two closed forms. Negative
    control: the channels' mean error times their mean step-to-spread factor is off by more than 10%."""
    window = growing([0.2, 3.0], 8)
    estimate = expected_vrmse(curves_of(window, 1), "one_step")
    assert estimate.value == pytest.approx(SPREAD * (factor(0.2) ** 2 + factor(3.0) ** 2) / 2, rel=1e-6)
    mask = torch.ones(2)
    one_step = backtest_curve(
        CLASSICAL_PRIORS["extrap1"].one_step(window, START), window, START, mask, per_channel=True
    )
    apart = one_step.mean(1).mean() * step_over_spread(window, mask).mean()
    assert abs(float(apart) / estimate.value - 1) > 0.1


def test_the_spread_is_the_last_frames_not_the_first():
    """A mode growing as ``t^2`` (``t = h .. 16 h``): persistence's step over spread falls from ``0.75`` to ``0.12``
    over the window and to ``0.11`` one frame later. Its expected VRMSE one step past the window is within 10% of the
    truth there; negative control: the step and spread of the window's first two frames are off by more than 3x."""
    x = torch.arange(N, dtype=torch.float64) * 2 * math.pi / N
    t = torch.arange(1, 18, dtype=torch.float64)[:, None] * H
    trajectory = (t**2 * torch.sin(x))[None, ..., None]
    window, following = trajectory[:, :16], trajectory[0, 16, :, 0]
    true = (window[0, -1, :, 0] - following).norm() / (math.sqrt(N) * following.std())
    estimate = expected_vrmse(curves_of(window, 0), "one_step").value
    assert estimate == pytest.approx(float(true), rel=0.1)
    mask = torch.ones(1)
    persistence = backtest_curve(CLASSICAL_PRIORS["persistence"].one_step(window, START), window, START, mask).mean()
    assert float(persistence) == pytest.approx(1.0)  # persistence misses one step ahead by exactly one step
    wrong = float(persistence * step_over_spread(window[:, :2], mask))
    assert wrong / float(true) > 3


def test_evaluate_prints_and_writes_the_expected_error_beside_the_true_one(tmp_path):
    base = tmp_path / "data"
    generate_dataset(GenerationRequest(pde="advdiff2d", out=base, n_traj=4, resolution=16, n_steps=41), progress=False)
    request = EvaluationRequest(base, "advdiff2d", history=8, stride=1, rollout_steps=12, max_trajectories=2,
                                solver=False, out=tmp_path / "out", progress=False)  # fmt: skip
    report = run_evaluation(request)
    expected = json.loads(report.json_path.read_text())["expected"]
    assert set(expected) == {"one_step", "6:12", "13:30"}
    persistence = expected["one_step"]["persistence"]
    assert persistence["low"] < persistence["value"] < persistence["high"]
    assert persistence["windows"] == 3 * report.evaluation.n_trajectories  # 3 history windows per trajectory
    assert persistence["rule"] == 3  # every start, fitted growth (predict.expected_starts), the default
    assert expected["6:12"]["extrap2"]["continued_share"] == 1  # history 8 reaches step 5
    assert "How far off, without labels" in report.table
    assert "- one_step, persistence: expected " in report.table and ", true " in report.table
    assert any(p.name.startswith("expected_advdiff2d") for p in report.figures)


def test_a_window_that_expects_no_error_leaves_the_spread_alone():
    """A window whose field did not move (every channel's last step zero: it expects no error) is left out of the
    windows' spread: the interval is the other windows' (here 0.1 and 0.2, a log spread of log 2 / sqrt 2), not one
    stretched towards zero by ``log 0``; and a channel at rest contributes zero, not a NaN."""
    curves = torch.tensor([[0.0], [0.1], [0.2]], dtype=torch.float64)
    estimate = expected_vrmse(curves, "one_step", RULE_2)
    spread = math.log(2.0) / math.sqrt(2.0)
    assert estimate.spread == pytest.approx(spread, rel=1e-12)
    assert estimate.value == pytest.approx(0.1) and estimate.windows == 2
    # the interval of a mean over the 2 windows with a scale: s^2 / 2 beside RULE_2's one-step transfer, 0.160
    factor = math.exp(1.2816 * math.sqrt(spread**2 / 2 + 0.160**2))
    assert (estimate.low, estimate.high) == pytest.approx((0.1 / factor, 0.1 * factor), rel=1e-4)
    # fewer than two windows with a scale: the assumed single window's spread, not divided by the 3 windows
    lone = expected_vrmse(torch.tensor([[0.0], [0.0], [0.1]], dtype=torch.float64), "one_step", RULE_2)
    assert lone.windows == 1 and lone.spread == SINGLE_WINDOW_SPREAD
    at_rest = expected_curve(torch.tensor([[[float("inf"), 2.0]]]), torch.tensor([[0.0, 0.5]]))
    assert at_rest.tolist() == [[0.5]]  # (0 + 2 x 0.5) / 2


def test_the_continued_share_counts_only_the_horizons_past_the_reach():
    """Three windows whose curve is ``x_K = K`` for ``K = 1 .. 20`` (reach 20): at 13:30 (``K = 14 .. 30``) the curve
    is continued as the line it is, so the value is ``(14 + 30) / 2 = 22`` and the continued share is the horizons
    ``21 .. 30`` over all: ``(21 + ... + 30) / (14 + ... + 30) = 255 / 374 = 15 / 22`` (horizon 20, the reach's own,
    was observed: counting it would give ``275 / 374``). The windows agree (spread 0) and RULE_2's 13:30 transfer is
    0, so the interval is the continuation's alone: ``high = 22 exp(z (15 / 22) log(1 + 10 / 20))``. Checked failing
    with the share counting ``k >= reach``."""
    curves = torch.arange(1, 21, dtype=torch.float64).repeat(3, 1)
    estimate = expected_vrmse(curves, "13:30", RULE_2)
    assert estimate.value == pytest.approx(22.0, rel=1e-12) and estimate.reach == 20
    assert estimate.continued_share == pytest.approx(15 / 22, rel=1e-12)
    assert RULE_2.transfer["13:30"] == 0.0 and estimate.spread == 0.0
    assert estimate.high == pytest.approx(22 * math.exp(Z_80 * 15 / 22 * math.log(1.5)), rel=1e-12)
    assert "68% continued past step 20" in estimate.describe()


def test_the_windows_spread_is_read_over_the_horizons_the_window_and_the_evidence_share():
    """Three windows reaching 20 horizons, ``x_{w,K} = a_w`` with ``a = (1, 2, 4)`` for ``K <= 12`` and all equal to
    1 past it. For 6:12 (last horizon ``L = 12``) the spread is read over ``K <= min(20, 12)``: the windows' means are
    ``a``, the median curve's mean 2, so ``s`` is the sample standard deviation of ``(-log 2, 0, log 2)``: exactly
    ``log 2`` (over all 20 horizons the means would be ``(12 a + 8) / 20`` and ``s`` about ``0.52``). The value is
    the median, 2, read not continued; RULE_2's interval: ``sigma^2 = (log 2)^2 / 3 + sigma_transfer^2``. Checked
    failing with the spread read over every backtest horizon."""
    a = torch.tensor([1.0, 2.0, 4.0], dtype=torch.float64)
    curves = torch.cat([a[:, None].expand(3, 12), torch.ones(3, 8, dtype=torch.float64)], dim=1)
    estimate = expected_vrmse(curves, "6:12", RULE_2)
    assert estimate.value == pytest.approx(2.0, rel=1e-12) and estimate.continued_share == 0
    assert estimate.spread == pytest.approx(math.log(2.0), rel=1e-12) and estimate.windows == 3
    sigma = math.sqrt(math.log(2.0) ** 2 / 3 + RULE_2.transfer["6:12"] ** 2)
    assert estimate.high == pytest.approx(2.0 * math.exp(Z_80 * sigma), rel=1e-12)
