"""Runs survive a kill: a harness run SIGKILLed inside an epoch resumes from its mid-epoch checkpoint and finishes
with exactly the optimizer steps of an uninterrupted run, logging every epoch once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import harness_command as harness
import pytest
import torch

from well_upao.trainers.loop import skip_batches

EPOCHS = 3
COMMAND = [
    "model=na",
    "model.layers=1",
    "trainer=shifted",
    "data=tg2d",
    "data.batch_size=1",
    f"trainer.epochs={EPOCHS}",
    "trainer.checkpoint_steps=1",
    "trainer.max_rollout_steps=2",
    "data.max_rollout_steps=3",
    "trainer.short_validation_length=1",
    "trainer.rollout_val_frequency=1000",
    "trainer.progress=false",
]


def epoch_lines(run) -> list[dict]:
    lines = [json.loads(line) for line in (run / "artifacts" / "metrics.jsonl").read_text().splitlines()]
    return [line for line in lines if "train_loss" in line]


def mid_epoch_point(recent) -> dict | None:
    try:
        return torch.load(recent, map_location="cpu", weights_only=False)["train"].get("resume")
    except Exception:  # not written yet
        return None


@pytest.mark.slow  # tens of seconds on two cores (the default suite had passed 10 minutes)
def test_a_killed_run_resumes_mid_epoch_with_the_same_steps(small_datasets, tmp_path):
    uninterrupted = tmp_path / "whole"
    uninterrupted.mkdir()
    result = harness.run_harness(uninterrupted, small_datasets, *COMMAND)
    assert result.returncode == 0, result.stderr[-3000:]
    expected = epoch_lines(harness.run_folders(uninterrupted)[0])

    killed = tmp_path / "killed"
    killed.mkdir()
    env = dict(os.environ, WELL_BASE_PATH=str(small_datasets))
    process = subprocess.Popen(
        [sys.executable, "-m", "the_well.benchmark.train", *COMMAND],
        cwd=killed,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    point = None
    deadline = time.time() + 300
    while point is None and process.poll() is None and time.time() < deadline:
        recent = next(iter(killed.glob("experiments/*/*/checkpoints/recent.pt")), None)
        point = mid_epoch_point(recent) if recent else None
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert point is not None, "the run finished (or never checkpointed) before it could be killed mid-epoch"

    resumed = harness.run_harness(killed, small_datasets, *COMMAND)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "continuing epoch" in resumed.stderr + resumed.stdout
    lines = epoch_lines(harness.run_folders(killed)[0])
    assert [line["epoch"] for line in lines] == list(range(1, EPOCHS + 1))  # each epoch once
    assert lines[-1]["step"] == expected[-1]["step"] == EPOCHS * (expected[0]["step"])  # the same optimizer steps


@pytest.mark.parametrize("count", [0, 3])
def test_skipping_leaves_out_exactly_the_consumed_batches(small_datasets, count):
    from well_upao.harness.datamodule import WellUpaoDataModule

    module = WellUpaoDataModule(str(small_datasets), "adv1d", batch_size=2, n_steps_input=4, data_workers=0)
    loader = module.train_dataloader()
    loader.sampler.set_epoch(2)
    whole = [batch["sample_index"].tolist() for batch in loader]
    loader.sampler.set_epoch(2)
    skip_batches(loader, count)
    assert [batch["sample_index"].tolist() for batch in loader] == whole[count:]
    assert [batch["sample_index"].tolist() for batch in loader] == whole  # the skip applies to one pass only
    loader.sampler.set_epoch(3)
    assert [batch["sample_index"].tolist() for batch in loader] != whole  # another epoch, another order


def test_mid_epoch_checkpoints_are_due_by_steps_or_by_time():
    from well_upao.trainers.schedule import CheckpointCadence

    def due(steps=None, seconds=None, step=0, since=0.0):
        return CheckpointCadence(steps, seconds, last=time.time() - since).due(step)

    assert not due() and not due(steps=3, step=4) and due(steps=3, step=6)
    assert not due(seconds=60.0, since=10.0) and due(seconds=60.0, since=61.0)
