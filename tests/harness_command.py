"""Helper to run The Well's real training command in a subprocess (shared by the trainer tests)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

FAST = [
    "trainer.epochs=1",
    "data.batch_size=2",
    "trainer.max_rollout_steps=2",
    "data.max_rollout_steps=3",
    "trainer.short_validation_length=2",
    "trainer.progress=false",
]


def run_harness(cwd: Path, base: Path, *overrides: str, timeout: int = 600) -> subprocess.CompletedProcess:
    """``python -m the_well.benchmark.train <overrides>`` with WELL_BASE_PATH=base, in ``cwd``."""
    env = dict(os.environ, WELL_BASE_PATH=str(base), HYDRA_FULL_ERROR="1")
    env.pop("WANDB_MODE", None)
    command = [sys.executable, "-m", "the_well.benchmark.train", *overrides]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def run_folders(cwd: Path) -> list[Path]:
    return sorted((cwd / "experiments").glob("*/*"))


def run_harness_in_process(base: Path, experiment_dir: Path, monkeypatch, *overrides: str, seed: int = 0) -> Path:
    """``python -m well_upao.train <overrides>`` in this process (the same ``run_harness`` function on the configs
    composed by Hydra's compose API; faster than a subprocess), with wandb disabled; returns the run folder."""
    from hydra import compose, initialize_config_module

    from well_upao.train import Distributed, run_harness

    monkeypatch.setenv("WANDB_MODE", "disabled")
    before = set(experiment_dir.glob("*/*"))
    with initialize_config_module(config_module="well_upao.configs", version_base=None):
        cfg = compose(
            config_name="config",
            overrides=[
                f"+seed={seed}",
                f"experiment_dir={experiment_dir}",
                "trainer.progress=false",
                *overrides,
            ],
        )
        with monkeypatch.context() as patched:
            patched.setenv("WELL_BASE_PATH", str(base))
            run_harness(cfg, Distributed(0, 1, 0))
    (run,) = set(experiment_dir.glob("*/*")) - before
    return run
