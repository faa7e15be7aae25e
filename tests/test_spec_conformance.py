"""Conformance against the Well's file specification, not our writer: datasets written as its documentation
describes (``tests/well_synthetic.py`` ``write_spec_dataset``: float32 time from t = 100 every 0.1, float32
coordinates and fields, t0/t1/t2 groups with their attributes, a constant field, time-varying scalars, one boundary
type per fixture with masks; 1D 32 cells, 2D 16 x 16, 3D 8 x 8 x 8; 12 frames) go through every reader in this
process: the dataset source (layout, frames), the Well's own ``WellDataset``, our harness data module, the residual
floor and evaluate's per-sample context and scorecard. Expected values come from the fixture's construction (its
step, its grid, the Well's boundary codes), not from the readers."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import harness_command as harness
import numpy as np
import pytest
import spec_conformance_dataset
import torch
from the_well.data import WellDataset
from well_synthetic import (
    SPEC_BOUNDARIES,
    SPEC_DT,
    SPEC_FRAMES,
    SPEC_KAPPA,
    SPEC_SHAPES,
    SPEC_T0,
    spec_dataset_name,
    write_spec_dataset,
)

from well_upao.data.source import WellSource
from well_upao.evaluate.plan import EvaluationRequest, open_split, plan_evaluation
from well_upao.evaluate.results import LABEL_FREE
from well_upao.evaluate.scores import score
from well_upao.harness.datamodule import WellUpaoDataModule
from well_upao.harness.names import register_dataset_names
from well_upao.harness.samples import batch_dt, batch_grid, file_time_axis, sample_context
from well_upao.models.checkpoint import read_checkpoint
from well_upao.physics import pde_for_dataset
from well_upao.physics.discretisation import Physics
from well_upao.physics.floor import floor_rows
from well_upao.predict.predictors import classical_row

CASES = [(dims, boundary) for dims in SPEC_SHAPES for boundary in SPEC_BOUNDARIES]
#: the Well's boundary codes (``the_well.data.datasets.BoundaryCondition``, its documentation's values)
WELL_CODES = {"WALL": 0, "OPEN": 1, "PERIODIC": 2}
HISTORY = 4


def case_id(case) -> str:
    return f"{case[0]}d-{case[1].lower()}"


@pytest.fixture(scope="module")
def spec_base(tmp_path_factory):
    base = tmp_path_factory.mktemp("spec_base")
    for dims, boundary in CASES:
        write_spec_dataset(base, dims, boundary)
    register_dataset_names([spec_dataset_name(dims, boundary) for dims, boundary in CASES])
    return base


def expected_spacing(dims: int, boundary: str) -> tuple[float, ...]:
    """The fixture's grid: ``[0, 2 pi)`` without its end on periodic axes, ``[0, pi]`` with both ends otherwise."""
    return tuple(2 * math.pi / n if boundary == "PERIODIC" else math.pi / (n - 1) for n in SPEC_SHAPES[dims])


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_every_reader_reads_a_file_written_to_the_specification(spec_base, case):
    dims, boundary = case
    name, shape = spec_dataset_name(dims, boundary), SPEC_SHAPES[dims]
    channels = ["temperature", *[f"velocity_{a}" for a in "xyz"[:dims]]]
    periodic = (boundary == "PERIODIC",) * dims
    source = WellSource(spec_base, name)

    # the dataset source: channels without the constant field, 12 frames, float64 steps of the float32 axes
    layout = source.layout
    assert source.channels == channels and layout.constant_field_names == (("obstacle",), (), ())
    assert layout.n_steps == SPEC_FRAMES and layout.periodic == periodic
    assert layout.edges == ((boundary, boundary),) * dims
    axis = layout.time_axis
    assert abs(axis.step - SPEC_DT) < 1e-6 and abs(axis.start - SPEC_T0) < 1e-4
    np.testing.assert_allclose(layout.require_spacing(), expected_spacing(dims, boundary), rtol=1e-6)

    # the Well's own reader agrees on what is a channel, a constant field and a time-varying scalar
    well = WellDataset(
        well_base_path=str(spec_base), well_dataset_name=name, well_split_name="train", n_steps_input=HISTORY,
        n_steps_output=1, return_grid=True,
    )  # fmt: skip
    meta = well.metadata
    assert [n for names in meta.field_names.values() for n in names] == channels
    assert meta.constant_field_names[0] == ["obstacle"] and meta.n_constant_fields == 1
    assert meta.scalar_names == ["forcing", "clock"] and meta.constant_scalar_names == ["kappa"]
    sample = well[0]
    assert sample["input_fields"].shape == (HISTORY, *shape, len(channels))
    assert sample["constant_fields"].shape == (*shape, 1) and sample["input_scalars"].shape == (HISTORY, 2)
    assert sample["boundary_conditions"].tolist() == [[WELL_CODES[boundary]] * 2] * dims

    # our harness data module: the same channel count, each batch's dt and grid as the file's
    module = WellUpaoDataModule(
        well_base_path=str(spec_base), well_dataset_name=name, batch_size=2, n_steps_input=HISTORY,
        max_rollout_steps=3, data_workers=0,
    )  # fmt: skip
    assert module.train_dataset.metadata.n_fields == len(channels)
    batch = next(iter(module.train_dataloader()))
    torch.testing.assert_close(batch_dt(batch, axis), torch.full((2,), axis.step, dtype=torch.float64))
    grid = batch_grid(batch)
    np.testing.assert_allclose(grid.spacing, expected_spacing(dims, boundary), rtol=1e-6)
    assert grid.periodic == periodic

    # the residual floor: the temperature is an exact solution of the fixture's PDE, so its floor is the
    # discretisation's error (a few per cent at most); read with a wrong step it is not (negative control)
    observed = source.observed(max_trajectories=2)
    assert observed.scalars.keys() == {"kappa"} and observed.fields["temperature"].shape[2:] == shape
    best = min(row.mean for row in floor_rows(observed, 1, pde_for_dataset(name)))
    assert best < 0.03, best
    wrong = dataclasses.replace(observed, step=2 * observed.step)
    assert min(row.mean for row in floor_rows(wrong, 1, pde_for_dataset(name))) > 10 * best

    # evaluate's per-sample context and its scorecard columns
    valid = source.with_split("valid")
    opened = open_split(valid, HISTORY, 1)
    context = sample_context(opened[0], list(opened.metadata.constant_scalar_names), source.channel_slots,
                             file_time_axis(valid))  # fmt: skip
    assert abs(float(context.dt) - SPEC_DT) < 1e-6 and context.grid.periodic == periodic
    torch.testing.assert_close(context.scalars["kappa"].double(), torch.tensor([SPEC_KAPPA], dtype=torch.float64))
    request = EvaluationRequest(spec_base, name, history=HISTORY, rollout_steps=2, max_trajectories=1)
    physics = Physics(spec_conformance_dataset.SPEC_HEAT, "fd", "crank_nicolson")
    plan = dataclasses.replace(plan_evaluation(request, valid, []), physics=physics, unscored=None)
    evaluation, _ = score(plan, [classical_row("persistence"), classical_row("extrap2")], progress=False)
    assert evaluation.channels == channels and abs(evaluation.dt - SPEC_DT) < 1e-6
    for row in evaluation.scores:
        assert set(LABEL_FREE) <= set(row.label_free) and all(math.isfinite(v) for v in row.label_free.values())


def test_an_uneven_time_axis_is_refused_with_its_numbers(tmp_path):
    """The 2D OPEN fixture with frame 6 onwards 0.05 late: the step is refused, naming the frames, by the layout and
    the residual floor's frames; the fixture as written is read (negative control)."""
    import h5py

    from well_upao.axes import UnevenAxisError

    dataset = write_spec_dataset(tmp_path, 2, "OPEN")
    assert abs(WellSource(tmp_path, dataset.name).layout.time_axis.step - SPEC_DT) < 1e-6
    for path in sorted((dataset / "data").glob("*/*.hdf5")):
        with h5py.File(path, "r+") as f:
            time = np.asarray(f["dimensions"]["time"])
            time[6:] += np.float32(0.05)
            f["dimensions"]["time"][...] = time
    source = WellSource(tmp_path, dataset.name)
    with pytest.raises(UnevenAxisError, match="points 5-6"):
        _ = source.layout.time_axis
    with pytest.raises(UnevenAxisError):
        source.observed(max_trajectories=1)


# ---------------------------------------------------------------------------- the commands
TESTS = Path(__file__).resolve().parent
IMPORTS = "data.imports=[spec_conformance_dataset]"


def with_tests_on_path(monkeypatch) -> dict:
    """The environment of a command that imports the fixtures' registry module (``data.imports`` / ``--imports``)."""
    path = os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])
    monkeypatch.setenv("PYTHONPATH", path)
    return dict(os.environ, PYTHONPATH=path)


def well_upao(*arguments: str, env: dict, cwd: Path) -> subprocess.CompletedProcess:
    cli = Path(sys.executable).with_name("well-upao")
    return subprocess.run([str(cli), *arguments], capture_output=True, text=True, env=env, cwd=cwd)


@pytest.fixture()
def open2d(tmp_path) -> Path:
    """The 2D OPEN fixture (float32 time from t = 100), alone under its base path."""
    base = tmp_path / "base"
    write_spec_dataset(base, 2, "OPEN")
    return base


@pytest.mark.slow  # measured: see the CHANGELOG entry of issue 37
def test_upao_auto_then_evaluate_on_a_file_written_to_the_specification(open2d, tmp_path, monkeypatch):
    """UPAO with ``trainer.derivative=auto`` through the Well's training command on the 2D OPEN fixture records the
    floor table it chose from; ``well-upao evaluate`` of the run prints every row's label-free scorecard columns
    with numbers."""
    env = with_tests_on_path(monkeypatch)
    result = harness.run_harness(
        tmp_path, open2d, "model=na_nslora", "trainer=upao", "trainer.derivative=auto",
        "trainer.time_scheme=auto", IMPORTS, "data.well_dataset_name=spec2d_open", "data.n_steps_input=4",
        *harness.FAST,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    run = harness.run_folders(tmp_path)[0]
    lines = [json.loads(line) for line in (run / "artifacts" / "metrics.jsonl").read_text().splitlines()]
    floors = lines[0].get("upao_floors")
    assert floors and all(key.startswith("fd/") for key in floors)  # OPEN: second-order stencils only
    train = read_checkpoint(run / "checkpoints" / "best.pt")["train"]
    assert f"{train['upao']['derivative']}/{train['upao']['time_scheme']}" == min(floors, key=floors.get)

    evaluation = well_upao("evaluate", str(run), "--out", str(tmp_path / "eval"), "--quiet", "--max-trajectories",
                           "1", env=env, cwd=tmp_path)  # fmt: skip
    assert evaluation.returncode == 0, evaluation.stderr
    assert "spec2d_open / valid" in evaluation.stdout and "(dt = 0.1)" in evaluation.stdout
    assert "| residual / floor | departure from extrap2 | backtest |" in evaluation.stdout
    (report,) = (tmp_path / "eval").glob("*.json")
    for row in json.loads(report.read_text())["scores"]:
        assert set(LABEL_FREE) <= set(row["label_free"]), row["name"]
        assert all(math.isfinite(row["label_free"][k]) for k in ("residual_ratio", "departure_extrap2")), row


@pytest.mark.slow  # two runs of the Well's training command
@pytest.mark.parametrize(
    "selection",
    [("model=na_lora", "trainer=supervised"), ("experiment=fno_well",)],
    ids=["na_lora-supervised", "fno_well"],
)
def test_the_other_trainings_run_on_a_file_written_to_the_specification(open2d, tmp_path, monkeypatch, selection):
    """Supervised LoRA and the Well's FNO protocol (z-score normalised, so ``stats.yaml`` covers the constant field
    it also reads) train one epoch on the 2D OPEN fixture and log a finite training loss."""
    with_tests_on_path(monkeypatch)
    result = harness.run_harness(
        tmp_path, open2d, *selection, IMPORTS, "data.well_dataset_name=spec2d_open", "data.n_steps_input=4",
        *harness.FAST,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    run = harness.run_folders(tmp_path)[0]
    lines = [json.loads(line) for line in (run / "artifacts" / "metrics.jsonl").read_text().splitlines()]
    losses = [line["train_loss"] for line in lines if "train_loss" in line]
    assert losses and all(math.isfinite(loss) for loss in losses)


@pytest.mark.slow  # three commands in subprocesses
def test_validate_and_residual_floor_fit_on_a_file_written_to_the_specification(open2d, tmp_path, monkeypatch):
    """``validate`` accepts the fixture and refuses it, naming the attribute, once its grid is spherical;
    ``residual-floor --fit kappa`` on files whose stored kappa is wrong (0.1) finds the one the fields were made with
    (0.05: the fixture's construction) within the second-order stencils' error."""
    import h5py

    env = with_tests_on_path(monkeypatch)
    dataset = open2d / "spec2d_open"
    result = well_upao("validate", str(dataset), "--imports", "spec_conformance_dataset", env=env, cwd=tmp_path)
    assert result.returncode == 0 and "OK" in result.stdout, result.stdout + result.stderr
    for path in sorted((dataset / "data").glob("*/*.hdf5")):
        with h5py.File(path, "r+") as f:
            f["scalars"]["kappa"][...] = 0.1
            f.attrs["kappa"] = 0.1
    fit = well_upao("residual-floor", "--data", "spec2d_open", "--imports", "spec_conformance_dataset",
                    "--base-path", str(open2d), "--fit", "kappa", "--json", str(tmp_path / "fit.json"), env=env,
                    cwd=tmp_path)  # fmt: skip
    assert fit.returncode == 0, fit.stderr
    (found,) = json.loads((tmp_path / "fit.json").read_text())["fits"]
    assert found["initial"]["kappa"] == pytest.approx(0.1, rel=1e-6)
    assert abs(found["values"]["kappa"] / SPEC_KAPPA - 1) < 0.02, found
    for path in sorted((dataset / "data").glob("*/*.hdf5")):
        with h5py.File(path, "r+") as f:
            f.attrs["grid_type"] = "spherical"
    refused = well_upao("validate", str(dataset), "--imports", "spec_conformance_dataset", env=env, cwd=tmp_path)
    assert refused.returncode != 0 and "grid_type = 'spherical'" in refused.stdout, refused.stdout
    floor = well_upao("residual-floor", "--data", "spec2d_open", "--imports", "spec_conformance_dataset",
                      "--base-path", str(open2d), env=env, cwd=tmp_path)  # fmt: skip
    assert floor.returncode != 0 and "grid_type = 'spherical'" in floor.stderr, floor.stderr
