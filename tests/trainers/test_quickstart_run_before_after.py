"""The quickstart's UPAO run (``model=na_nslora trainer=upao`` with the quickstart's own overrides, its seed and
stride) gives the numbers it gave before issue 63 moved the run's physics, the UPAO setup and the trainer's settings
around: every number of every ``metrics.jsonl`` line to 1e-6 relative (the timings aside) and the same bytes of
every tensor of ``best.pt``'s state dict.

The run, at a toy size: the quickstart's wave2d data (its seed 42, stride 5, a quarter of the trajectories for
validation) with 4 trajectories of 32^2 and 51 frames, two epochs of two batches each, in this process on one
thread. Marked slow: the bytes are one x86 CPU's arithmetic.

How the stored values were made: ``tests/fixtures/quickstart_run_before.json`` was written by this test with
``UPDATE_QUICKSTART_RUN_FIXTURE=1`` on the package before issue 63's changes (commit 5a93e0b with issue 64's
interval rules, e157130 and cc9b9ba, applied: they changed ``valid_expected_vrmse``), from a checkout of it with its
own install, by ``UPDATE_QUICKSTART_RUN_FIXTURE=1 OMP_NUM_THREADS=1 .venv/bin/pytest -m slow
tests/trainers/test_quickstart_run_before_after.py``. Regenerate it only on purpose (a change of the training or of
a metric), never to make a refactoring pass."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import harness_command as harness  # tests/ is on sys.path (conftest)
import pytest
import torch
from evaluate.test_evaluation_before_after import differences  # numbers to 1e-6 relative, NaN equals NaN

from well_upao.harness.metrics_file import read_metrics
from well_upao.models.checkpoint import read_checkpoint
from well_upao.quickstart import QuickstartConfig, generate_data, harness_command

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "quickstart_run_before.json"
#: measured, not computed
TIMING = {"seconds", "time_per_train_iter"}


@pytest.fixture()
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def numbers(value):
    """Every number and string of a ``metrics.jsonl`` line (timings aside): what a report could read."""
    if isinstance(value, dict):
        return {k: numbers(v) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list):
        return [numbers(v) for v in value]
    return value


def state_digests(path: Path) -> dict[str, str]:
    """sha256 of every tensor of a checkpoint's state dict (its bytes, shape and dtype)."""
    state = read_checkpoint(path)["state_dict"]
    out = {}
    for name, tensor in sorted(state.items()):
        tensor = tensor.detach().cpu().contiguous()
        digest = hashlib.sha256(f"{tuple(tensor.shape)}{tensor.dtype}".encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
        out[name] = digest.hexdigest()
    return out


def quickstart_upao_run(tmp_path: Path, monkeypatch) -> dict:
    config = QuickstartConfig(out=tmp_path, n_traj=4, resolution=32, n_steps=51, epochs=2)
    base, experiments = tmp_path / "datasets", tmp_path / "experiments"
    generate_data(config, base)
    command = harness_command(config, "na_nslora", "upao", base, experiments)
    given = command[command.index("the_well.benchmark.train") + 1 :]
    overrides = [*given, "trainer.epoch_steps=2", "name=na_nslora-upao"]
    run = harness.run_harness_in_process(base, experiments, monkeypatch, *overrides, seed=config.seed)
    lines = [numbers(line) for line in read_metrics(run)]
    return {"metrics": lines, "best_state": state_digests(run / "checkpoints" / "best.pt")}


@pytest.mark.slow  # stored bytes of one CPU's arithmetic (about 16 s on two cores)
def test_the_quickstarts_upao_run_gives_the_stored_numbers(tmp_path, monkeypatch, one_thread):
    result = json.loads(json.dumps(quickstart_upao_run(tmp_path, monkeypatch)))  # as the fixture stores it
    assert len(result["metrics"]) >= 3 and result["best_state"]
    if os.environ.get("UPDATE_QUICKSTART_RUN_FIXTURE"):
        FIXTURE.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
        pytest.skip(f"wrote {FIXTURE}")
    before = json.loads(FIXTURE.read_text())
    assert differences(before["metrics"], result["metrics"]) == []
    assert before["best_state"] == result["best_state"]
