"""Pretraining in the one loop: 2-process DDP (gloo, CPU) equal to one process, and resuming a run."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from well_upao.data.generate import GenerationRequest, generate_dataset
from well_upao.models.checkpoint import read_checkpoint

FAMILIES = ["shallow_water_2d", "compressible_ns_1d"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    base = tmp_path_factory.mktemp("corpus")
    for name in FAMILIES:
        resolution = 32 if name.endswith("1d") else 16
        generate_dataset(GenerationRequest(pde=name, out=base, n_traj=3, resolution=resolution, n_steps=8), False)
    return base


def run(corpus, out, processes, batch_size, epochs=1, max_steps=2):
    launcher = (
        ["-m", "torch.distributed.run", f"--nproc_per_node={processes}", "--master_port=29531"] if processes > 1 else []
    )
    command = [
        sys.executable,
        *launcher,
        "-m",
        "well_upao.train",
        "--config-name",
        "pretrain",
        f"data.datasets=[{','.join(FAMILIES)}]",
        f"data.batch_size={batch_size}",
        "data.n_steps_input=4",
        "data.clips_per_dataset=8",
        "data.validation_trajectories=1",
        f"trainer.epochs={epochs}",
        f"trainer.max_steps={max_steps}",
        f"trainer.output_dir={out}",
        "trainer.progress=false",
        "model.layers=1",
        "model.preset=tiny",
    ]
    env = dict(os.environ, WELL_BASE_PATH=str(corpus), OMP_NUM_THREADS="1")
    result = subprocess.run(command, cwd=out.parent, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return metrics[-1], read_checkpoint(out / "recent.pt")["state_dict"]


@pytest.mark.slow  # ~20 s on two cores; FSDP's multi-process test stays in the default suite
def test_two_ddp_processes_match_one_process_with_the_same_global_batch(corpus, tmp_path):
    one_metrics, one_state = run(corpus, tmp_path / "one", processes=1, batch_size=4)
    two_metrics, two_state = run(corpus, tmp_path / "two", processes=2, batch_size=2)
    assert one_metrics["step"] == two_metrics["step"] == 2
    assert two_metrics["train_loss"] == pytest.approx(one_metrics["train_loss"], rel=1e-5)
    assert set(one_state) == set(two_state)  # no "module." prefixes reach the file
    for key, value in one_state.items():
        torch.testing.assert_close(two_state[key], value, rtol=1e-4, atol=1e-6)


@pytest.mark.slow  # tens of seconds on two cores (the default suite had passed 10 minutes)
def test_a_rerun_resumes_the_pretraining_run(corpus, tmp_path):
    """Pretraining is the one loop: rerunning the command with more epochs continues from recent.pt (steps,
    optimizer, schedule), and every epoch is logged once."""
    out = tmp_path / "run"
    first, _ = run(corpus, out, processes=1, batch_size=4, epochs=1, max_steps=100)
    last, _ = run(corpus, out, processes=1, batch_size=4, epochs=2, max_steps=100)
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [m["epoch"] for m in metrics] == [1, 2]
    assert last["step"] == 2 * first["step"] > 0  # the second epoch continued the first one's steps
    payload = read_checkpoint(out / "recent.pt")
    assert payload["epoch"] == 2 and payload["train"]["datasets"] == FAMILIES
    assert payload["train"]["scheduler"]["last_epoch"] == last["step"]
    assert (out / "best.pt").is_file()


@pytest.mark.slow  # keeps the default suite under 10 minutes
def test_a_killed_pretraining_run_resumes_mid_epoch_with_the_same_steps(corpus, tmp_path):
    import signal
    import time

    whole, whole_state = run(corpus, tmp_path / "whole", processes=1, batch_size=1, epochs=2, max_steps=1000)
    out = tmp_path / "killed"
    out.mkdir()
    command = [
        sys.executable,
        "-m",
        "well_upao.train",
        "--config-name",
        "pretrain",
        f"data.datasets=[{','.join(FAMILIES)}]",
        "data.batch_size=1",
        "data.n_steps_input=4",
        "data.clips_per_dataset=8",
        "data.validation_trajectories=1",
        "trainer.epochs=2",
        "trainer.max_steps=1000",
        "trainer.checkpoint_steps=1",
        f"trainer.output_dir={out}",
        "trainer.progress=false",
        "model.layers=1",
        "model.preset=tiny",
    ]
    env = dict(os.environ, WELL_BASE_PATH=str(corpus), OMP_NUM_THREADS="1")
    process = subprocess.Popen(command, cwd=out, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    point, deadline = None, time.time() + 300
    while point is None and process.poll() is None and time.time() < deadline:
        try:
            point = read_checkpoint(out / "recent.pt")["train"].get("resume")
        except Exception:  # not written yet
            pass
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert point is not None, "the run finished (or never checkpointed) before it could be killed mid-epoch"
    result = subprocess.run(command, cwd=out, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [m["epoch"] for m in metrics] == [1, 2] and metrics[-1]["step"] == whole["step"]
    # and the same weights: the resumed steps continue the learning-rate schedule where it stopped
    final = read_checkpoint(out / "recent.pt")["state_dict"]
    for key, value in whole_state.items():
        torch.testing.assert_close(final[key], value, rtol=1e-5, atol=1e-7)
