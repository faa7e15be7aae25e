"""What ``well-upao evaluate`` would trust per window (issue 53), decided inside the scoring pass from backtests on
each trajectory's history: on an oscillatory exact set at a coarse stride, where quadratic extrapolation blows up
within the history's backtest, the 6:12 pick is not extrap2; the table and the JSON say so."""

from __future__ import annotations

import json
import math

import pytest
import torch

from well_upao.data.generate import GenerationRequest, generate_dataset
from well_upao.evaluate.pipeline import EvaluationRequest, run_evaluation
from well_upao.predict.evidence import START, classical_curves, window_evidence


@pytest.fixture(scope="module")
def wave(tmp_path_factory):
    base = tmp_path_factory.mktemp("wave")
    generate_dataset(GenerationRequest(pde="wave2d", out=base, n_traj=4, resolution=16, n_steps=101), progress=False)
    return base


def test_the_6_12_pick_on_a_coarse_wave_is_not_extrap2(wave, tmp_path):
    request = EvaluationRequest(wave, "wave2d", history=8, stride=10, rollout_steps=0, max_trajectories=2,
                                solver=False, out=tmp_path / "out", progress=False)  # fmt: skip
    report = run_evaluation(request)
    trust = report.evaluation.trust
    assert set(trust) == {"one_step", "6:12", "13:30"}
    window = trust["6:12"]
    assert window["pick"] in ("persistence", "extrap1") and window["pick"] != "extrap2"
    assert window["evidence"]["extrap2"] > 1.3 * window["evidence"][window["pick"]]  # extrap2 is well behind
    assert window["reach"] == f"backtest to step {8 - START} of 12"  # a history of 8 reaches 5 steps
    assert "best" not in window  # no rollout ran: no labels for the window
    assert "best" in trust["one_step"] and math.isfinite(trust["one_step"]["best_value"])
    assert "What the evidence would trust per window" in report.table and "- 6:12: " in report.table
    assert json.loads(report.json_path.read_text())["trust"]["6:12"]["pick"] == window["pick"]


def test_window_evidence_covers_the_window_or_says_how_far_it_reaches():
    """Within its reach the evidence is the curve's mean over the window; short of it, the curve continued as the
    quadratic through its last three values: exact for a line and for a parabola (a curve ``k^2`` from its first 5
    values gives the mean of ``k^2`` over 7..12); where the curve bends down, the line through its last two values;
    where it falls, flat."""
    curve = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0]
    assert window_evidence(curve, "6:12").value == pytest.approx(sum(range(7, 13)) / 6)  # steps 7..12
    partial = window_evidence(curve[:9], "6:12")  # steps 7..9 of 7..12, continued to 12
    assert partial.value == pytest.approx(9.5) and partial.short and partial.describe() == "backtest to step 9 of 12"
    capped = window_evidence(curve, "6:12", cap=4)  # a common reach of 4: continued from step 4, not the curve's end
    assert capped.value == pytest.approx(9.5) and capped.describe() == "backtest to step 4 of 12"
    squares = [float(k * k) for k in range(1, 6)]
    short = window_evidence(squares, "6:12")
    assert short.value == pytest.approx(sum(k * k for k in range(7, 13)) / 6) and short.short
    assert short.describe() == "backtest to step 5 of 12"
    levelling = window_evidence([1.0, 2.0, 2.5, 2.75, 2.8], "6:12")  # increments 0.25, 0.05: on at 0.05 a step
    assert levelling.value == pytest.approx(2.8 + 0.05 * sum(range(2, 8)) / 6)
    assert window_evidence([3.0, 4.0, 2.0], "6:12").value == 2.0  # a falling curve is continued flat
    assert window_evidence([3.0], "6:12").value == 3.0 and window_evidence([1.0, 2.0], "6:12").value == 9.5
    assert window_evidence(curve, "one_step").value == 1.0 and window_evidence([], "6:12").describe() == "no backtest"


def test_a_ranking_at_the_reach_can_turn_by_the_window():
    """The shear-flow replica's validation curves to step 5 (a UPAO run at history 8, its metrics.jsonl): extrap1 is
    below persistence at step 5 (4.451 against 4.572), but its error grows faster, and over 6:12, where
    persistence's true VRMSE was 0.953 and extrap1's 2.37 (the horizon study's evaluation of shear flow at history 8,
    `benchmarks/studies/horizon_study.py`), the continued curves rank persistence
    first. The expected values are numpy's quadratic through each curve's last three values (extrap1's, bending up),
    or its line through the last two (persistence's, bending down)."""
    import numpy as np

    from well_upao.predict.evidence import pick

    curves = {
        "persistence": [1.0, 1.964, 2.883, 3.752, 4.572],
        "extrap1": [0.328, 0.959, 1.876, 3.048, 4.451],
    }
    chosen, evidence = pick(curves, "6:12")
    assert chosen == "persistence"
    for name, curve in curves.items():
        bends_up = curve[4] - 2 * curve[3] + curve[2] > 0
        fit = np.polyfit([3, 4, 5], curve[2:], 2) if bends_up else np.polyfit([4, 5], curve[3:], 1)
        expected = np.polyval(fit, np.arange(7, 13)).mean()
        assert evidence[name].value == pytest.approx(expected, rel=1e-9)
    assert curves["persistence"][4] - 2 * curves["persistence"][3] + curves["persistence"][2] < 0  # both cases
    assert min(curves, key=lambda n: curves[n][-1]) == "extrap1"  # the value at the reach alone ranks extrap1 first


def test_the_one_step_evidence_is_the_mean_over_every_later_history_frame():
    """On ``u_k = k^2`` (8 frames): linear extrapolation misses every frame by 2, whose step is ``2k - 1``, so ``e_1``
    is the mean of ``2 / (2k - 1)`` over ``k = 3..7`` (not its first value, ``2/5``); persistence misses by exactly
    one step; quadratic extrapolation is exact. Beyond one step the curve is the rollout's from the first 3 frames:
    linear extrapolation fed back from ``0, 1, 4`` predicts ``7, 10`` where ``9, 16`` are observed."""
    t = torch.arange(8, dtype=torch.float64)
    window = (t**2).view(1, 8, 1, 1)
    curves = classical_curves(window, torch.ones(1))
    expected = sum(2 / (2 * k - 1) for k in range(3, 8)) / 5
    assert curves["extrap1"][0, 0].item() == pytest.approx(expected)
    assert curves["persistence"][0, 0].item() == pytest.approx(1.0) and curves["extrap2"].abs().max() < 1e-12
    assert curves["extrap1"][0, 1].item() == pytest.approx(abs(10 - 16) / (16 - 9))  # step 2: frame 4


def test_the_one_step_evidence_comes_from_windows_spread_over_the_targets():
    """A trajectory that grows linearly for its first 10 frames (both extrapolations exact, persistence one step off)
    and then alternates in sign (persistence one step off, extrap1 two, extrap2 four: 4c, 8c against a step of 2c):
    the first history window alone ranks the extrapolations first; the one-step evidence, from windows before the
    first, a middle and the last target, is persistence's (median 1 against 2 and 4), as on most targets."""
    from well_upao.predict.backtests import add_history_curves, history_curves
    from well_upao.predict.evidence import median_curves, pick
    from well_upao.predict.predictors import classical_predictors

    n_frames, history, c = 40, 8, 0.5
    t = torch.arange(n_frames, dtype=torch.float64)
    amplitude = torch.where(t < 10, 1.0 + 0.3 * t, c * (-1.0) ** t)
    field = torch.linspace(0.5, 1.5, 16, dtype=torch.float64)
    frames = (amplitude[:, None] * field[None, :])[..., None].float()  # (T, x, one channel)
    rows = classical_predictors(None, None, solver=False)
    curves = {"one_step": {}, "rollout": {}}
    add_history_curves(curves, rows, frames, history, None, starts=[0], count=3)
    one_step = median_curves(curves["one_step"])
    chosen, evidence = pick(one_step, "one_step")
    assert chosen == "persistence"
    assert evidence["persistence"].value == pytest.approx(1.0, rel=1e-4)
    assert evidence["extrap1"].value == pytest.approx(2.0, rel=1e-4)
    assert evidence["extrap2"].value == pytest.approx(4.0, rel=1e-4)
    first = {
        name: [float(v) for v in curve.mean(0)] for name, curve in history_curves(rows, frames[:history], None).items()
    }
    assert pick(first, "one_step")[0] in {"extrap1", "extrap2"}  # the first window alone: the transient's ranking
    assert len(curves["rollout"]["persistence"]) == 1  # the rollout windows: the rollouts' own starts only


def test_one_window_holding_the_start_does_not_decide_the_evidence():
    """A field at zero in its first frame, then a quadratic ``1 + t/100 + t^2/200`` (the shape of a run started from
    rest, as Rayleigh-Benard's pressure): extrap2 is exact on every target after frame 3, extrap1 off by the second
    difference (1/100, about a tenth of a step), persistence by a step. Only the first history window sees frame 0,
    where extrap2's prediction of frame 3 is off by about 1 against a step of 0.035 (a ratio near 29, about 6 on the
    window's mean over its 5 targets). The median over the three windows picks extrap2, the truth on every target; a
    mean would pick extrap1 (about 2 against 0.1)."""
    from well_upao.predict.backtests import add_history_curves
    from well_upao.predict.evidence import median_curves, pick
    from well_upao.predict.predictors import classical_predictors

    n_frames, history = 40, 8
    t = torch.arange(n_frames, dtype=torch.float64)
    amplitude = torch.where(t < 1, 0.0, 1.0 + t / 100 + t**2 / 200)
    frames = (amplitude[:, None] * torch.linspace(0.5, 1.5, 16, dtype=torch.float64)[None, :])[..., None].float()
    curves = {"one_step": {}, "rollout": {}}
    add_history_curves(curves, classical_predictors(None, None, solver=False), frames, history, None, [0], 3)
    one_step = median_curves(curves["one_step"])
    assert pick(one_step, "one_step")[0] == "extrap2"
    first_window = torch.cat(curves["one_step"]["extrap2"])[:, 0]
    assert first_window.max() > 3 and first_window.median() < 1e-3  # the start's window alone is far off
    means = {name: torch.cat(parts).mean(0).tolist() for name, parts in curves["one_step"].items()}
    assert pick(means, "one_step")[0] == "extrap1"  # the mean over windows: the start decides


def test_a_one_frame_row_that_reads_more_frames_than_the_backtest_starts_from_has_no_curve_and_errors_surface():
    """A one-frame model of the Well reads exactly its history: with 4 frames it cannot start from the backtest's 3
    and has no curve; with 3 it has one. A model row whose network fails is an error, not a missing curve."""
    from well_upao.predict.backtests import history_curves
    from well_upao.predict.evidence import START
    from well_upao.predict.predictors import HarnessModel

    channels, frames = 2, torch.randn(8, 8, 8, 2)

    def row(history: int) -> HarnessModel:
        torch.manual_seed(0)
        return HarnessModel(f"conv{history}", torch.nn.Conv2d(history * channels, channels, 3, padding=1),
                            "channels_first_default", history)  # fmt: skip

    curves = history_curves([row(START), row(START + 1)], frames, None)
    assert list(curves) == [f"conv{START}"] and curves[f"conv{START}"].shape == (1, 8 - START)
    broken = row(START)
    broken.model = torch.nn.Conv2d(5, channels, 3)  # the wrong number of input channels: a bug, not a short window
    with pytest.raises(RuntimeError):
        history_curves([broken], frames, None)
