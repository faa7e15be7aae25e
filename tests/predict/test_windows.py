"""The Well's rollout windows in ``evaluate`` (issue 41 part 4): rollouts feed back their own predictions, and the
windows 6:12 and 13:30 are the Well's slicing ``loss[a:b].mean()`` over 0-based predicted steps. Expected values
are written out by hand (the slicing, persistence's rollout, a bias that accumulates step by step) or computed here
from the stored frames, read with h5py, not through our readers."""

from __future__ import annotations

import glob
from types import SimpleNamespace

import h5py
import pytest
import torch

from well_upao.evaluate.metrics import vrmse_well
from well_upao.harness.samples import Context
from well_upao.predict.predictors import Predictor, classical_row
from well_upao.predict.rollout import one_step_all, rollout
from well_upao.predict.windows import rollout_starts, window_means


def test_windows_slice_the_per_step_curve_as_the_wells_trainer_does():
    curve = [float(step) for step in range(1, 31)]  # the value of 0-based step k is k + 1
    means = window_means(curve)
    assert means["6:12"] == pytest.approx((7 + 8 + 9 + 10 + 11 + 12) / 6)  # steps 6..11
    assert means["13:30"] == pytest.approx(sum(range(14, 31)) / 17)  # steps 13..29
    short = window_means(curve[:20])
    assert short["6:12"] == pytest.approx(9.5) and short["13:30"] is None  # 20 steps do not reach step 29
    assert window_means(curve[:11])["6:12"] is None


def test_rollout_starts_spread_over_the_trajectory():
    assert rollout_starts(n_frames=44, history=8, steps=30, count=3) == [0, 3, 6]
    assert rollout_starts(n_frames=38, history=8, steps=30, count=3) == [0]  # one window holds the rollout
    assert rollout_starts(n_frames=40, history=8, steps=30, count=5) == [0, 1, 2]  # at most every window
    assert rollout_starts(n_frames=30, history=8, steps=30, count=3) == []


def frames_2d(steps: int = 9) -> torch.Tensor:
    generator = torch.Generator().manual_seed(0)
    return torch.randn(steps, 8, 8, 2, generator=generator)


def test_persistence_rolls_out_its_last_history_frame_from_each_start():
    frames = frames_2d()
    rolled = rollout(classical_row("persistence"), frames, history=3, steps=4, context=None, starts=[0, 2])
    assert rolled.shape == (2, 4, 8, 8, 2)
    for index, start in enumerate([0, 2]):
        for step in range(4):
            assert torch.equal(rolled[index, step], frames[start + 2])


class Biased(Predictor):
    """Predicts its window's last frame plus a constant: fed its own predictions, the bias adds up."""

    def __init__(self, bias: float):
        super().__init__("biased", "classical")
        self.bias = bias

    def _predict(self, window, context):
        return window[:, -1] + self.bias


def test_a_rollout_feeds_back_its_own_predictions():
    static = frames_2d(1).expand(12, -1, -1, -1).clone()  # a trajectory that does not change
    predictor = Biased(0.1)
    rolled = rollout(predictor, static, history=4, steps=6, context=None, starts=[0, 2])
    errors = vrmse_well(rolled[0], static[4:10], 2).mean(-1).tolist()
    # step k (1-based) is k biases away from the truth: the error grows linearly (fed the true frames it would not)
    for step in range(6):
        assert errors[step] == pytest.approx((step + 1) * errors[0], rel=1e-4)
    # step 1 of a rollout is the one-step prediction of the same window
    one_step = one_step_all(predictor, static, history=4, context=None)
    assert torch.allclose(rolled[1, 0], one_step[2])


def test_evaluate_windows_equal_the_wells_slicing_of_persistence_by_hand(tmp_path):
    from well_upao.data.generate import GenerationRequest, generate_dataset
    from well_upao.evaluate.pipeline import EvaluationRequest, run_evaluation

    generate_dataset(
        GenerationRequest(pde="adv1d", out=tmp_path, n_traj=4, resolution=32, n_steps=40, valid_fraction=0.5),
        progress=False,
    )
    request = EvaluationRequest(tmp_path, "adv1d", history=4, out=None, progress=False, solver=False)
    report = run_evaluation(request, [])
    persistence = next(s for s in report.evaluation.scores if s.name == "persistence")
    # by hand: every validation trajectory, starts 0, 3, 6 (40 frames, history 4, 30 steps), persistence predicts
    # frame s + 3 at every step; the Well's VRMSE per step, averaged over the rollouts, then sliced
    per_step, rollouts = torch.zeros(30), 0
    for path in sorted(glob.glob(str(tmp_path / "adv1d" / "data" / "valid" / "*.hdf5"))):
        with h5py.File(path, "r") as file:
            for trajectory in torch.from_numpy(file["t0_fields"]["u"][:]).float()[..., None]:
                for start in (0, 3, 6):
                    predicted = trajectory[start + 3].expand(30, -1, -1)
                    per_step += vrmse_well(predicted, trajectory[start + 4 : start + 34], 1).mean(-1)
                    rollouts += 1
    per_step /= rollouts
    assert persistence.rollout_counts == [rollouts] * 30
    assert persistence.rollout_windows["6:12"] == pytest.approx(per_step[6:12].mean().item(), rel=1e-5)
    assert persistence.rollout_windows["13:30"] == pytest.approx(per_step[13:30].mean().item(), rel=1e-5)
    assert persistence.rollout_windows["6:12"] != pytest.approx(per_step[5:11].mean().item(), rel=1e-3)
    assert "| rollout 6:12 (the Well) | rollout 13:30 (the Well) | rollout step 30 (the Well) |" in report.table


def test_a_window_the_split_cannot_hold_says_how_many_frames_it_needs(small_datasets):
    from well_upao.evaluate.pipeline import EvaluationRequest, run_evaluation

    request = EvaluationRequest(small_datasets, "burgers2d", history=4, out=None, progress=False, solver=False)
    table = run_evaluation(request, []).table  # 12 frames: 8 steps after a history of 4
    assert "rollout step 8 (the Well)" in table
    assert "not held (needs 34 frames)" in table and "| 6:12" not in table
    row = next(line for line in table.splitlines() if line.startswith("| persistence |"))
    assert "not held (needs 16 frames)" in row and "not held (needs 34 frames)" in row


def test_context_is_expanded_for_every_start():
    class Dt(Predictor):
        def __init__(self):
            super().__init__("dt", "classical")

        def _predict(self, window, context):
            assert context.dt.shape == (window.shape[0],)
            return window[:, -1]

    context = Context(torch.tensor(0.1), None, {}, [0])
    assert rollout(Dt(), frames_2d(), 3, 2, context, starts=[0, 1, 2]).shape[0] == 3


def test_a_window_of_a_diverged_rollout_says_where_it_diverged_not_that_it_is_not_held():
    from well_upao.evaluate.report import window_cell
    from well_upao.predict.windows import first_non_finite_step, window_means

    curve = [0.1 * step for step in range(1, 28)] + [float("nan")] * 3  # a solver that blew up at step 28
    assert first_non_finite_step(curve) == 28 and first_non_finite_step(curve[:27]) is None
    means = window_means(curve)
    evaluation = SimpleNamespace(rollout_steps=30, history=4)
    score = SimpleNamespace(rollout_windows=means, rollout_vrmse_well=curve)
    assert window_cell(evaluation, score, (6, 12)) == f"{sum(curve[6:12]) / 6:.4g}"
    assert window_cell(evaluation, score, (13, 30)) == "diverged (non-finite from step 28)"
    short = SimpleNamespace(rollout_windows=window_means(curve[:20]), rollout_vrmse_well=curve[:20])
    assert window_cell(SimpleNamespace(rollout_steps=20, history=4), short, (13, 30)).startswith("not run")


def test_a_forecast_step_is_read_with_its_window():
    """Step 1 with the one-step pick, 2 to 12 with 6:12's (the Well's window is steps 7-12; the steps before it are
    read with its pick), 13 on with 13:30's, past 30 too."""
    from well_upao.predict.windows import window_of_step

    expected = {1: "one_step", 2: "6:12", 7: "6:12", 12: "6:12", 13: "13:30", 30: "13:30", 31: "13:30"}
    assert {step: window_of_step(step) for step in expected} == expected
    with pytest.raises(ValueError, match="counts from 1"):
        window_of_step(0)
