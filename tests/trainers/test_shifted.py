"""``trainer=shifted`` through the real harness command, and the shifted loss itself."""

from __future__ import annotations

import harness_command as harness
import pytest
import torch

from well_upao.models.assembly import load_model
from well_upao.models.checkpoint import read_checkpoint
from well_upao.models.kinds import ModelKind
from well_upao.trainers.shifted import masked_mse


def test_masked_mse_counts_only_active_slots():
    prediction = torch.zeros(2, 3, 4, 18)
    target = torch.zeros(2, 3, 4, 18)
    target[..., 0] = 2.0  # active: error 4 everywhere
    target[..., 5] = 100.0  # inactive: ignored
    mask = torch.zeros(18)
    mask[[0, 1]] = 1
    assert masked_mse(prediction, target, mask).item() == 2.0  # mean over the 2 active channels


def test_bare_harness_command_trains_and_resumes(small_datasets, tmp_path):
    """`python -m the_well.benchmark.train` with no experiment=/server=, wandb off, our defaults."""
    result = harness.run_harness(tmp_path, small_datasets, "model=na", "data=burgers2d", *harness.FAST)
    assert result.returncode == 0, result.stderr[-3000:]
    folders = harness.run_folders(tmp_path)
    assert [f.parent.name for f in folders] == ["burgers2d-na-shifted-NATransformer-0.0001"]
    best = folders[0] / "checkpoints" / "best.pt"
    payload = read_checkpoint(best)
    assert payload["model"]["config"]["dataset_name"] == "burgers2d"
    assert payload["model"]["config"]["channel_slots"] == [0, 1]  # read from the files, not by hand
    assert payload["train"]["global_step"] > 0
    model = load_model(best)  # rebuilt from the file alone
    assert model.config["preset"] == "tiny"
    # the same command again resumes the finished run instead of crashing
    again = harness.run_harness(tmp_path, small_datasets, "model=na", "data=burgers2d", *harness.FAST)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "already finished" in again.stderr + again.stdout
    assert len(harness.run_folders(tmp_path)) == 1


def test_harness_reports_a_missing_dataset(tmp_path):
    result = harness.run_harness(tmp_path, tmp_path / "nowhere", "data=tg2d", *harness.FAST)
    assert result.returncode != 0
    assert "well-upao generate-exact --pde tg2d" in result.stderr


@pytest.mark.slow  # ~18 s; tests/trainers/test_well_parity.py trains FNO through the harness in the default suite
def test_neural_operator_baseline_trains_through_the_harness_and_is_evaluated(small_datasets, tmp_path):
    """experiment=fno: the Well's FNO with the paper's hyper-parameters and our supervised protocol."""
    result = harness.run_harness(
        tmp_path,
        small_datasets,
        "experiment=fno",
        "data=burgers2d",
        "model.modes1=4",
        "model.modes2=4",
        "model.hidden_channels=8",
        *harness.FAST,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    folder = harness.run_folders(tmp_path)[0]
    assert folder.parent.name == "burgers2d-fno-supervised-FNO-0.001"
    payload = read_checkpoint(folder / "checkpoints" / "best.pt")
    assert payload["model"]["hydra"]["_target_"] == "the_well.benchmark.models.FNO"
    model = load_model(folder / "checkpoints" / "best.pt")  # rebuilt from its Hydra node and the harness args
    assert sum(p.numel() for p in model.parameters()) > 0
    from well_upao.cli import main

    assert (
        main(
            [
                "evaluate",
                "--no-figures",
                str(folder),
                "--data",
                "burgers2d",
                "--base-path",
                str(small_datasets),
                "--quiet",
                "--no-solver",
                "--rollout-steps",
                "2",
                "--out",
                str(tmp_path / "eval"),
            ]
        )
        == 0
    )


@pytest.mark.slow  # ~16 s (the default suite measured 10m20s on 2026-11-26)
def test_one_frame_models_of_the_well_train_under_the_default_trainer(small_datasets, tmp_path):
    """`python -m the_well.benchmark.train model=fno data=...`, as The Well's users type it: our default trainer
    trains it with the supervised loss and channels-first inputs, and says so."""
    small_fno = ["model.hidden_channels=8", "model.modes1=4", "model.modes2=4"]
    result = harness.run_harness(tmp_path, small_datasets, "model=fno", "data=burgers2d", *small_fno, *harness.FAST)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "a one-frame model: training it with the supervised one-step loss" in result.stderr + result.stdout
    payload = read_checkpoint(harness.run_folders(tmp_path)[0] / "checkpoints" / "best.pt")
    assert payload["model"]["formatter"] == "channels_first_default"


class _NextFrameOracle(torch.nn.Module):
    """A one-frame slot model that knows the trajectory: u(t) = t * a, so it predicts frame T+1 exactly."""

    model_kind = ModelKind.SLOT_FRAME

    def __init__(self, pattern: torch.Tensor, persistence: bool = False):
        super().__init__()
        self.pattern, self.persistence = pattern, persistence
        self.step = torch.nn.Parameter(torch.ones(()))  # something to differentiate

    def forward(self, history: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        last = history[:, -1]
        return (last if self.persistence else last + self.step * self.pattern) * mask


def test_next_frame_loss_and_slot_predictor_read_frame_t_plus_1_of_the_active_slots():
    """NextFrameSlotLoss compares the prediction with frame T+1 (zero for an oracle of the linear trajectory; the
    squared increment, over active slots only, for persistence), and SlotModel feeds one-frame models the window."""
    from types import SimpleNamespace

    from well_upao.predict.predictors import SlotModel
    from well_upao.trainers.shifted import NextFrameSlotLoss

    pattern = torch.randn(8, 8, 18)
    frames = torch.arange(5.0).view(1, 5, 1, 1, 1) * pattern  # (B=1, T=5, H, W, 18), u(t) = t * pattern
    frames[..., 7] = 1e3 * torch.randn(1, 5, 8, 8)  # an inactive slot with wild values
    mask = torch.zeros(18)
    mask[[0, 4]] = 1
    batch = {"input_fields": frames[:, :4], "output_fields": frames[:, 4:], "slot_mask": mask}
    for persistence, expected in ((False, 0.0), (True, float((pattern[..., [0, 4]] ** 2).mean()))):
        model = _NextFrameOracle(pattern, persistence)
        loss = NextFrameSlotLoss()
        loss.attach(SimpleNamespace(batch_frames=lambda b: torch.cat([b["input_fields"], b["output_fields"]], 1),
                                    device=torch.device("cpu"), model=model))  # fmt: skip
        value, logs = loss(batch)
        torch.testing.assert_close(value.item(), expected, rtol=1e-5, atol=1e-6)
        assert logs["mse_next"] == value.item()
    prediction = SlotModel("oracle", _NextFrameOracle(pattern), mask).predict(frames[:, :4], None)
    torch.testing.assert_close(prediction, frames[:, 4] * mask)


def test_epoch_steps_ends_each_epoch_after_that_many_batches(small_datasets, tmp_path):
    """`trainer.epoch_steps=2` over 3 epochs: exactly 6 optimizer steps and 3 validations, where the whole training
    set is more batches than that (5 trajectories x 4 windows = 10 batches of 2; a short run gets more selection and
    switch points)."""
    fno = ["experiment=fno", "data=burgers2d", "model.modes1=4", "model.modes2=4", "model.hidden_channels=8"]
    fast = [o for o in harness.FAST if not o.startswith("trainer.epochs=")]
    result = harness.run_harness(
        tmp_path, small_datasets, *fno, *fast, "trainer.epochs=3", "trainer.epoch_steps=2", "trainer.patience=0"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    run = harness.run_folders(tmp_path)[0]
    payload = read_checkpoint(run / "checkpoints" / "recent.pt")
    assert payload["train"]["global_step"] == 6
    epochs = [line for line in (run / "artifacts" / "metrics.jsonl").read_text().splitlines() if "train_loss" in line]
    assert len(epochs) == 3
    assert "epoch 1: train loss" in result.stderr + result.stdout
