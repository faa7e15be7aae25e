"""Shared fixtures. Tests run against the *installed* package (as CI does after the README's install)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

# Under pytest-xdist (two workers on two cores, pyproject's addopts) each worker and every process a test starts
# uses one thread: two workers of two threads each would wait on each other's cores. Set before torch is imported.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["MKL_NUM_THREADS"] = "1"

import pytest
import torch

import well_upao

if os.environ.get("PYTEST_XDIST_WORKER"):
    torch.set_num_threads(1)

REPO_ROOT = Path(__file__).resolve().parents[1]
# the test helpers (harness_command, well_synthetic, user_heat_dataset) import by name
sys.path.insert(0, str(Path(__file__).resolve().parent))
# benchmarks/ as its scripts see it (their first line puts it on the path): its groups import as packages, e.g.
# ``from studies import horizon_study``, ``from harness.jobs import run_all``
sys.path.insert(0, str(REPO_ROOT / "benchmarks"))


def pytest_configure(config: pytest.Config) -> None:
    installed_at = Path(well_upao.__file__).resolve()
    if installed_at.parent == REPO_ROOT / "well_upao":
        raise pytest.UsageError(
            f"well_upao was imported from the source tree ({installed_at}); run the tests with the installed "
            "package as the README says (`.venv/bin/pytest`, not `python -m pytest` from the repo root)."
        )


@pytest.fixture(scope="session")
def small_datasets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Well base path holding every exact dataset at a small size (shared by the whole session)."""
    from well_upao.data.generate import GenerationRequest, generate_dataset
    from well_upao.datasets_exact import EXACT_PDES

    base = tmp_path_factory.mktemp("well_base")
    for name, pde in EXACT_PDES.items():
        resolution = {1: 64, 2: 16, 3: 8}[pde.n_spatial_dims]
        generate_dataset(
            GenerationRequest(pde=name, out=base, n_traj=6, resolution=resolution, n_steps=12, traj_per_file=2),
            progress=False,
        )
    return base


@pytest.fixture
def committed_folder(tmp_path: Path):
    """``commit(files)``: write ``files`` (``{relative path: text}``) under ``tmp_path``, make it a git repository and
    commit them; returns ``tmp_path`` (the scripts' ``made_at`` then reads a clean checkout)."""
    import subprocess

    def commit(files: dict[str, str]) -> Path:
        for name, text in files.items():
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_text(text)
        for arguments in (("init", "-q"), ("add", "."), ("commit", "-qm", "start")):
            command = ["git", "-c", "user.email=t@t", "-c", "user.name=t", *arguments]
            subprocess.run(command, cwd=tmp_path, check=True, capture_output=True)
        return tmp_path

    return commit
