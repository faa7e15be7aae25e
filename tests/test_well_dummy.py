"""Files written by The Well's own code through every command (``tests/well_dummy.py``): its dummy writer
(``the_well.utils.dummy_data.write_dummy_data``, seeded) and a ``stats.yaml`` made as its statistics script makes it;
the user module ``tests/well_dummy_dataset.py`` registers slots and a PDE for it (``dummy_dataset``) and the same
files without a PDE (``dummy_nopde``).

The default suite reads, validates, computes the residual floor and evaluates the classical rows; the harness runs
(UPAO + NSLoRA and the Well's one-frame models through ``python -m the_well.benchmark.train``, then ``evaluate`` of
each run) are slow. Expected values come from the dummy's construction (its 10 frames on ``linspace(0, 1, 10)``, its
masks that mark nothing, its constant field) and from the Well's documentation, not from the readers."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import h5py
import harness_command as harness
import numpy as np
import pytest
import well_dummy_dataset  # noqa: F401  (registers dummy_dataset and dummy_nopde)
import yaml
from well_dummy import DUMMY_FRAMES, DUMMY_NAME, DUMMY_SHAPE, write_dummy_dataset

from well_upao.cli import main
from well_upao.data.source import WellSource
from well_upao.data.specification import SpecificationError
from well_upao.data.validate import validate_dataset

TESTS = Path(__file__).resolve().parent
HISTORY = 4  # the dummy has 10 frames: a history of 4 leaves 6 targets


@pytest.fixture(scope="module")
def dummy_base(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("dummy_base")
    write_dummy_dataset(base)
    write_dummy_dataset(base, "dummy_nopde")
    return base


def test_the_dummy_is_read_as_the_well_reads_it(dummy_base):
    source = WellSource(dummy_base, DUMMY_NAME, "valid")
    layout = source.layout
    assert layout.resolution == DUMMY_SHAPE and layout.n_steps == DUMMY_FRAMES
    assert layout.periodic == (False, False) and layout.edges == (("OPEN", "OPEN"),) * 2  # its masks mark nothing
    assert layout.channels == ("field_x", "field_y") and layout.constant_field_names == (("constant_field",), (), ())
    assert layout.scalar_names == ("a", "b") and layout.varying_scalar_names == ("time_varying_scalar",)
    assert layout.time_axis.step == pytest.approx(1 / 9, rel=1e-6)  # float32 linspace(0, 1, 10)
    assert layout.spacing == pytest.approx((1 / 31, 1 / 31), rel=1e-6)


def test_validate_accepts_the_dummy_and_the_wells_statistics(dummy_base, capsys, caplog):
    """The Well's statistics script writes no ``*_delta`` for constant fields (they were refused), and masks that
    mark nothing are read as OPEN, as the Well reads them: a warning, not a problem (they were problems)."""
    stats = (dummy_base / DUMMY_NAME / "stats.yaml").read_text()
    written = yaml.safe_load(stats)
    assert "constant_field" in written["mean"] and set(written["mean_delta"]) == {"field"}
    with caplog.at_level("WARNING"):
        assert main(["validate", str(dummy_base / DUMMY_NAME), "--imports", "well_dummy_dataset"]) == 0
    assert f"{DUMMY_NAME}: OK" in capsys.readouterr().out
    assert "x_periodic: 'mask' marks no edge of the domain" in caplog.text
    # negative control: a constant field's statistics are still required where the Well writes them
    path = dummy_base / DUMMY_NAME / "stats.yaml"
    try:
        path.write_text(stats.replace("  constant_field:", "  constant_fieldX:"))
        assert any("mean has no entry for field 'constant_field'" in p for p in validate_dataset(path.parent))
    finally:
        path.write_text(stats)


def test_validate_names_imports_for_a_dataset_without_a_slot_row(tmp_path):
    dataset = write_dummy_dataset(tmp_path, "unregistered")
    for file in (dataset / "data").glob("*/*.hdf5"):
        with h5py.File(file, "r+") as f:
            f.attrs["dataset_name"] = "unregistered"
    problems = validate_dataset(dataset, check_values=False)
    assert any("has no row in the slot table" in p and "--imports MODULE" in p for p in problems), problems


def test_the_residual_floor_of_the_dummy_with_the_users_pde(dummy_base, tmp_path):
    out = tmp_path / "floor.json"
    arguments = ["residual-floor", "--data", DUMMY_NAME, "--base-path", str(dummy_base), "--imports"]
    assert main([*arguments, "well_dummy_dataset", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert {row["derivative"] for row in rows} == {"fd"}  # OPEN axes: second-order stencils only
    assert all(math.isfinite(row["mean"]) and row["mean"] > 0 for row in rows)


def test_evaluate_a_dataset_without_a_pde_gives_the_classical_rows_and_says_why_physics_is_na(dummy_base, tmp_path):
    """The plan looked the dataset's own name up as a PDE and stopped ("no PDE registered as ..."), even with
    --no-solver. Now: persistence and the extrapolations scored, no solver row, the physics cells say why."""
    out = tmp_path / "evaluation"
    arguments = [
        "evaluate",
        "--no-figures",
        "--data",
        "dummy_nopde",
        "--base-path",
        str(dummy_base),
        "--history",
        str(HISTORY),
    ]
    assert main([*arguments, "--imports", "well_dummy_dataset", "--out", str(out), "--quiet"]) == 0
    (report,) = out.glob("evaluation_dummy_nopde_*.json")
    scores = {s["name"]: s for s in json.loads(report.read_text())["scores"]}
    assert set(scores) == {"persistence", "extrap1", "extrap2"}
    for score in scores.values():
        assert math.isfinite(score["mean_vrmse_paper"]) and math.isfinite(score["mean_vrmse_well"])
        assert set(score["label_free_reasons"].values()) == {
            "no PDE registered: pass --imports MODULE that registers one"
        }


def write_smooth_periodic(base: Path, name: str, endpoint: bool) -> Path:
    """The dummy's structure with a smooth 1-periodic field on periodic masks marking both ends (as the dummy intends:
    its ``mask[0] = mask[-1]``), on the dummy's ``linspace(0, 1, 32)`` (``endpoint``: the first and last point are
    one period apart) or on 32 distinct points of the period."""
    dataset = write_dummy_dataset(base, name)
    x = np.linspace(0, 1, DUMMY_SHAPE[0], endpoint=endpoint)
    xx, yy = np.meshgrid(x, x, indexing="ij")
    times = np.linspace(0, 1, DUMMY_FRAMES)[:, None, None]
    smooth = np.stack([np.sin(2 * np.pi * (xx - 0.3 * times)), np.cos(2 * np.pi * (yy - 0.2 * times))], -1)
    for file in (dataset / "data").glob("*/*.hdf5"):
        with h5py.File(file, "r+") as f:
            f["t1_fields/field"][...] = np.broadcast_to(smooth, f["t1_fields/field"].shape).astype(np.float32)
            for axis in ("x", "y"):
                f[f"dimensions/{axis}"][...] = x.astype(np.float32)
                mask = np.zeros(DUMMY_SHAPE[0], dtype=bool)
                mask[[0, -1]] = True
                f[f"boundary_conditions/{axis}_periodic/mask"][...] = mask
    return dataset


def test_an_endpoint_inclusive_periodic_axis_is_refused_by_name(tmp_path):
    """linspace(0, 1, 32) on a periodic axis stores x = 0 and x = 1, the same point: read as 32 distinct periodic
    points it would be another grid (it raised the lowest residual floor 3x with no word). Refused by name, with
    the fix; the negative control, the same field on 32 distinct points, reads as periodic."""
    inclusive = write_smooth_periodic(tmp_path, "dummy_dataset", endpoint=True)
    with pytest.raises(SpecificationError, match=r"/dimensions/x: the periodic axis 'x' stores its endpoint twice"):
        _ = WellSource(tmp_path, inclusive.name).layout
    problems = validate_dataset(inclusive, check_values=False)
    assert problems and all("stores its endpoint twice" in p for p in problems), problems
    distinct = write_smooth_periodic(tmp_path / "control", "dummy_dataset", endpoint=False)
    assert WellSource(distinct.parent, distinct.name).layout.periodic == (True, True)
    assert validate_dataset(distinct, check_values=False) == []


# ---------------------------------------------------------------------------- through the Well's harness
def harness_run(dummy_base: Path, cwd: Path, monkeypatch, *selection: str) -> Path:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    result = harness.run_harness(
        cwd, dummy_base, *selection, "data.imports=[well_dummy_dataset]", f"data.well_dataset_name={DUMMY_NAME}",
        f"data.n_steps_input={HISTORY}", *harness.FAST,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    (run,) = harness.run_folders(cwd)
    metrics = (run / "artifacts" / "metrics.jsonl").read_text()
    assert "T=1:1" not in metrics  # the Well's empty rollout window (logged as nan) is not logged
    return run


def evaluate_run(run: Path, out: Path) -> dict:
    """``well-upao evaluate <run>``: the run knows its dataset, base path, history and data.imports."""
    assert main(["evaluate", "--no-figures", str(run), "--out", str(out), "--quiet"]) == 0
    (report,) = out.glob("evaluation_*.json")
    return {s["name"]: s for s in json.loads(report.read_text())["scores"]}


@pytest.mark.slow  # two harness runs and their evaluations
@pytest.mark.parametrize("selection", [("model=na_nslora", "trainer=upao"), ("experiment=fno",)], ids=["upao", "fno"])
def test_a_harness_run_on_the_dummy_trains_and_evaluates(dummy_base, tmp_path, monkeypatch, selection):
    """One epoch through ``python -m the_well.benchmark.train``, then evaluate: the FNO run crashed there ("expected
    input to have 17 channels, but got 16"): the evaluation dropped the constant field training appends."""
    run = harness_run(dummy_base, tmp_path, monkeypatch, *selection)
    scores = evaluate_run(run, tmp_path / "evaluation")
    model = scores[next(name for name in scores if name not in ("persistence", "extrap1", "extrap2", "solver"))]
    assert math.isfinite(model["mean_vrmse_paper"]) and math.isfinite(model["mean_vrmse_well"])


@pytest.mark.slow  # three more harness runs
@pytest.mark.parametrize("experiment", ["tfno", "unet_classic", "unet_convnext"])
def test_the_wells_other_models_train_and_evaluate_on_the_dummy(dummy_base, tmp_path, monkeypatch, experiment):
    run = harness_run(dummy_base, tmp_path, monkeypatch, f"experiment={experiment}")
    scores = evaluate_run(run, tmp_path / "evaluation")
    assert all(math.isfinite(s["mean_vrmse_well"]) for s in scores.values())
