"""A dataset added in one user module (``tests/user_heat_dataset.py``: PDE, generator, registry entry) is
generated, validated against its closed form, and adapted with UPAO through The Well's harness."""

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
from well_upao.physics import pde_for_dataset

TESTS = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def user_data(tmp_path_factory) -> Path:
    module = importlib.import_module("user_heat_dataset")
    base = tmp_path_factory.mktemp("user_base")
    generate_dataset(GenerationRequest(pde="user_heat", out=base, n_traj=4, n_steps=12), progress=False)
    assert pde_for_dataset("user_heat") is module.HEAT and get_dataset("user_heat").family.name == "user_heat"
    return base


def test_the_users_dataset_is_generated_and_matches_its_closed_form(user_data):
    assert validate_dataset(user_data / "user_heat", check_exact=True) == []


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
    first = json.loads((folder / "artifacts" / "metrics.jsonl").read_text().splitlines()[0])
    assert first["train_L_PDE"] > 0 and first["valid_upao_loss"] > 0


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
        *harness.FAST,
    ]
    result = harness.run_harness(tmp_path, user_data, *command)
    assert result.returncode == 0, result.stderr[-3000:]
    run = harness.run_folders(tmp_path)[0]

    cli = Path(sys.executable).with_name("well-upao")
    evaluate = subprocess.run(
        [str(cli), "evaluate", str(run), "--out", str(tmp_path / "eval"), "--quiet", "--max-trajectories", "1"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert evaluate.returncode == 0, evaluate.stderr
    assert "user_heat / valid" in evaluate.stdout and "history 4" in evaluate.stdout
    report = subprocess.run(
        [str(cli), "adapters-report", str(run / "checkpoints" / "best.pt")], capture_output=True, text=True
    )
    assert report.returncode == 0, report.stderr
    assert "stable rank" in report.stdout.lower()

    resumed = harness.run_harness(tmp_path, user_data, *command, "trainer.epochs=2")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    lines = [json.loads(line) for line in (run / "artifacts" / "metrics.jsonl").read_text().splitlines()]
    assert [line["epoch"] for line in lines if "train_loss" in line] == [1, 2]  # each epoch once
