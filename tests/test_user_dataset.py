"""Datasets added in one user module (``tests/user_heat_dataset.py``: PDE, generator, registry entry; one periodic,
one between walls with a constant to fit) go generate -> validate -> residual-floor -> train (UPAO with ``auto``
discretisation, and with fitted constants) -> evaluate (with its floor) -> resume, like built-in datasets."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import harness_command as harness
import pytest

from well_upao.data.datasets import get_dataset
from well_upao.data.generate import GenerationRequest, generate_dataset
from well_upao.data.validate import validate_dataset
from well_upao.models.checkpoint import read_checkpoint
from well_upao.physics import pde_for_dataset

TESTS = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def user_data(tmp_path_factory) -> Path:
    module = importlib.import_module("user_heat_dataset")
    base = tmp_path_factory.mktemp("user_base")
    generate_dataset(GenerationRequest(pde="user_heat", out=base, n_traj=4, n_steps=12), progress=False)
    generate_dataset(GenerationRequest(pde="user_heat_walls", out=base, n_traj=4, n_steps=12), progress=False)
    assert pde_for_dataset("user_heat") is module.HEAT and get_dataset("user_heat").family.name == "user_heat"
    assert pde_for_dataset("user_heat_walls") is module.HEAT_WALLS
    return base


@pytest.fixture(scope="module")
def spec_walls(user_data, tmp_path_factory) -> Path:
    """The walls dataset as the Well's specification stores it (``well_synthetic.store_as_specified``): float32 time
    every 0.05 from t = 100, float32 coordinates, OPEN boundaries. Its float32 steps differ from frame to frame."""
    import shutil

    import h5py
    import numpy as np
    from well_synthetic import store_as_specified

    base = tmp_path_factory.mktemp("spec_base")
    shutil.copytree(user_data / "user_heat_walls", base / "user_heat_walls")
    store_as_specified(base / "user_heat_walls")
    with h5py.File(next((base / "user_heat_walls" / "data" / "train").glob("*.hdf5"))) as f:
        time = f["dimensions"]["time"]
        steps = np.diff(np.asarray(time, dtype=np.float64))
        assert time.dtype == np.float32 and not np.allclose(steps, steps[0])  # numpy's default tolerance refuses it
    return base


@pytest.mark.parametrize("name", ["user_heat", "user_heat_walls"])
def test_the_users_dataset_is_generated_and_matches_its_closed_form(user_data, name):
    assert validate_dataset(user_data / name, check_exact=True) == []


def run_cli(*arguments: str) -> subprocess.CompletedProcess:
    """``well-upao <arguments>`` with the user's module importable."""
    cli = Path(sys.executable).with_name("well-upao")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([str(cli), *arguments], capture_output=True, text=True, env=env)


def test_the_residual_floor_of_the_users_datasets_uses_their_pde(user_data, spec_walls, tmp_path):
    """The user's PDE is found from its dataset (not from the PDE registry). On the walls dataset (stored as the
    Well's specification stores it: float32 time from t = 100, OPEN boundaries) the documented diffusivity is
    wrong: the floor there is far above the periodic set's, and fitting the constant finds the one the data was
    made with and lowers the floor to the periodic set's level."""
    from user_heat_dataset import DOCUMENTED_KAPPA, WALLS_KAPPA

    common = ["--imports", "user_heat_dataset", "--base-path", str(user_data), "--max-trajectories", "2"]
    periodic = run_cli("residual-floor", "--data", "user_heat", *common, "--json", str(tmp_path / "p.json"))
    assert periodic.returncode == 0, periodic.stderr
    assert "| 1 | spectral |" in periodic.stdout  # periodic: fd4 and spectral offered
    common[3] = str(spec_walls)
    walls = run_cli("residual-floor", "--data", "user_heat_walls", *common, "--fit", "kappa", "--json",
                    str(tmp_path / "w.json"))  # fmt: skip
    assert walls.returncode == 0, walls.stderr
    walls_json = json.loads((tmp_path / "w.json").read_text())
    assert {row["derivative"] for row in walls_json["rows"]} == {"fd"}  # walls: second-order stencils only
    fit = walls_json["fits"][0]
    assert fit["initial"]["kappa"] == DOCUMENTED_KAPPA
    assert abs(fit["values"]["kappa"] / WALLS_KAPPA - 1) < 0.01, fit
    periodic_best = min(row["mean"] for row in json.loads((tmp_path / "p.json").read_text())["rows"])
    assert fit["floor_initial"]["heat"] > 10 * fit["floor_fitted"]["heat"] > 0
    assert fit["floor_initial"]["heat"] > 10 * periodic_best


def test_one_upao_step_on_the_users_dataset_through_the_harness(user_data, tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    result = harness.run_harness(
        tmp_path,
        user_data,
        "model=na",
        "model.layers=1",
        "trainer=upao",
        "data.imports=[user_heat_dataset]",
        "data.well_dataset_name=user_heat",
        *harness.FAST,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "PDE user_heat (1 sub-equations)" in result.stderr + result.stdout
    folder = harness.run_folders(tmp_path)[0]
    lines = [json.loads(line) for line in (folder / "artifacts" / "metrics.jsonl").read_text().splitlines()]
    first = next(line for line in lines if "train_loss" in line)
    assert first["train_L_PDE"] > 0 and first["valid_upao_loss"] > 0


@pytest.mark.slow  # tens of seconds on two cores (the default suite had passed 10 minutes)
def test_train_evaluate_report_and_resume_name_the_users_module_once(user_data, tmp_path, monkeypatch):
    """data.imports at training is all: the run's checkpoint remembers it, so evaluate (with no --data), the
    adapters report and a resumed run find the user's dataset without being told again."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    command = [
        "model=na_nslora",
        "trainer=upao",
        "data.imports=[user_heat_dataset]",
        "data.well_dataset_name=user_heat",
        "data.n_steps_input=4",
        "trainer.derivative=auto",
        "trainer.time_scheme=auto",
        *harness.FAST,
    ]
    result = harness.run_harness(tmp_path, user_data, *command)
    assert result.returncode == 0, result.stderr[-3000:]
    run = harness.run_folders(tmp_path)[0]
    train = read_checkpoint(run / "checkpoints" / "best.pt")["train"]
    chosen = f"{train['upao']['derivative']}/{train['upao']['time_scheme']}"
    assert chosen == min(train["floors"], key=train["floors"].get) and len(train["floors"]) == 3 * 4
    assert train["upao"]["derivative"] in ("fd4", "spectral")  # smooth periodic data: not second order

    cli = Path(sys.executable).with_name("well-upao")
    evaluate = subprocess.run(
        [
            str(cli),
            "evaluate",
            "--no-figures",
            str(run),
            "--out",
            str(tmp_path / "eval"),
            "--quiet",
            "--max-trajectories",
            "1",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert evaluate.returncode == 0, evaluate.stderr
    assert "user_heat / valid" in evaluate.stdout and "history 4" in evaluate.stdout
    # the floor of the evaluated frames, from the user's PDE
    assert "- lowest spectral/" in evaluate.stdout or "- lowest fd4/" in evaluate.stdout, evaluate.stdout
    report = subprocess.run(
        [str(cli), "adapters-report", str(run / "checkpoints" / "best.pt")], capture_output=True, text=True
    )
    assert report.returncode == 0, report.stderr
    assert "stable rank" in report.stdout.lower()

    resumed = harness.run_harness(tmp_path, user_data, *command, "trainer.epochs=2")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    lines = [json.loads(line) for line in (run / "artifacts" / "metrics.jsonl").read_text().splitlines()]
    assert [line["epoch"] for line in lines if "train_loss" in line] == [1, 2]  # each epoch once


def test_fitted_constants_of_a_users_pde_between_walls(spec_walls, tmp_path, monkeypatch):
    """``trainer.pde_constants=fitted`` on the walls dataset as the Well's specification stores it (float32 time
    from t = 100, OPEN boundaries) trains with the diffusivity of the data (recorded in the checkpoint), its
    ``auto`` time scheme chosen from the floor table it records, and the run evaluates with its floor and every
    row's label-free scorecard."""
    from user_heat_dataset import WALLS_KAPPA

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    result = harness.run_harness(
        tmp_path,
        spec_walls,
        "model=na",
        "model.layers=1",
        "trainer=upao",
        "trainer.pde_constants=fitted",
        "trainer.time_scheme=auto",
        "data.imports=[user_heat_dataset]",
        "data.well_dataset_name=user_heat_walls",
        "data.n_steps_input=4",
        *harness.FAST,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    run = harness.run_folders(tmp_path)[0]
    constants = read_checkpoint(run / "checkpoints" / "best.pt")["train"]["pde_constants"]
    assert abs(constants["kappa"] / WALLS_KAPPA - 1) < 0.01, constants
    evaluate = run_cli(
        "evaluate", "--no-figures", str(run), "--out", str(tmp_path / "eval"), "--quiet", "--max-trajectories", "1"
    )
    assert evaluate.returncode == 0, evaluate.stderr
    assert "- UPAO default fd/" in evaluate.stdout and "- lowest fd/" in evaluate.stdout
    (report,) = (tmp_path / "eval").glob("*.json")
    scores = json.loads(report.read_text())["scores"]
    assert all(row["label_free"] for row in scores), [row["name"] for row in scores if not row["label_free"]]
    lines = [json.loads(line) for line in (run / "artifacts" / "metrics.jsonl").read_text().splitlines()]
    assert lines[0].get("upao_floors"), "the floor table auto chose from is recorded"
