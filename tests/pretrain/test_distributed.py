"""Multi-dataset pretraining: the mixture's batches, and 2-process DDP (gloo, CPU) equal to one process."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from well_upao.data.generate import GenerationRequest, generate_dataset
from well_upao.harness.mixture import MixtureDataModule
from well_upao.models.checkpoint import read_checkpoint

FAMILIES = ["shallow_water_2d", "compressible_ns_1d"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    base = tmp_path_factory.mktemp("corpus")
    for name in FAMILIES:
        resolution = 32 if name.endswith("1d") else 16
        generate_dataset(GenerationRequest(pde=name, out=base, n_traj=3, resolution=resolution, n_steps=8), False)
    return base


def test_equal_clips_per_dataset_and_identical_global_batches(corpus):
    single = MixtureDataModule(str(corpus), FAMILIES, batch_size=4, n_steps_input=4, clips_per_dataset=8)
    batches = single.global_batches(epoch=1)
    assert sorted(name for name, _ in batches) == ["compressible_ns_1d"] * 2 + ["shallow_water_2d"] * 2

    def same(a, b):
        return len(a) == len(b) and all(x[0] == y[0] and (x[1] == y[1]).all() for x, y in zip(a, b, strict=True))

    assert same(batches, single.global_batches(epoch=1)) and not same(batches, single.global_batches(epoch=2))
    ranks = [
        MixtureDataModule(
            str(corpus), FAMILIES, batch_size=2, n_steps_input=4, clips_per_dataset=8, world_size=2, rank=r
        )
        for r in (0, 1)
    ]
    first_single = next(single.train_batches(1))
    first_split = [next(r.train_batches(1)) for r in ranks]
    assert first_single.dataset == first_split[0].dataset == first_split[1].dataset
    torch.testing.assert_close(torch.cat([b.frames for b in first_split]), first_single.frames)
    active = {"shallow_water_2d": 3, "compressible_ns_1d": 3}[first_single.dataset]  # h, Vx, Vy / rho, p, Vx
    assert first_single.frames.shape[-1] == 18 and first_single.mask.sum() == active


def run(corpus, out, processes, batch_size):
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
        "trainer.epochs=1",
        "trainer.max_steps=2",
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


def test_two_ddp_processes_match_one_process_with_the_same_global_batch(corpus, tmp_path):
    one_metrics, one_state = run(corpus, tmp_path / "one", processes=1, batch_size=4)
    two_metrics, two_state = run(corpus, tmp_path / "two", processes=2, batch_size=2)
    assert one_metrics["step"] == two_metrics["step"] == 2
    assert two_metrics["train_loss"] == pytest.approx(one_metrics["train_loss"], rel=1e-5)
    assert set(one_state) == set(two_state)  # no "module." prefixes reach the file
    for key, value in one_state.items():
        torch.testing.assert_close(two_state[key], value, rtol=1e-4, atol=1e-6)
