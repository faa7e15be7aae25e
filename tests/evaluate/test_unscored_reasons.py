"""No silent holes in evaluate's label-free columns: where the scorecard or one of its scores cannot be computed,
every row's cell says ``n/a (reason)`` and the JSON keeps the reason (``label_free_reasons``); the residual floor's
note says why under the table. Negative controls: the same fixture with an even time axis and history 4 is scored
with numbers and no reason."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest
import spec_conformance_dataset  # noqa: F401  (registers the fixtures' datasets)
from well_synthetic import write_spec_dataset

from well_upao.evaluate.pipeline import EvaluationRequest, run_evaluation
from well_upao.evaluate.plan import UNSCORED_NO_FLOOR
from well_upao.evaluate.results import LABEL_FREE, NO_EXTRAP2, NO_WINDOW


def request(base, history: int, out) -> EvaluationRequest:
    return EvaluationRequest(
        base, "spec2d_open", history=history, rollout_steps=1, max_trajectories=1, solver=False, out=out,
        progress=False, device="cpu",
    )  # fmt: skip


@pytest.fixture()
def open2d(tmp_path):
    write_spec_dataset(tmp_path / "base", 2, "OPEN")
    return tmp_path / "base"


def rows_of(report) -> dict:
    """The rows as the JSON holds them (as ``Evaluation.to_json`` writes them when no file was asked for)."""
    text = report.json_path.read_text() if report.json_path else report.evaluation.to_json()
    return {row["name"]: row for row in json.loads(text)["scores"]}


def test_scored_rows_carry_no_reason(open2d):
    report = run_evaluation(request(open2d, 4, None))
    for row in rows_of(report).values():
        assert set(LABEL_FREE) <= set(row["label_free"]) and row["label_free_reasons"] == {}, row
    assert "n/a" not in report.table.split("Residual floor")[0]


def test_a_short_history_gives_each_missing_score_its_reason(open2d):
    """History 2: no extrap2 of the window (three frames needed); history 1: no scorecard at all (no observed pair
    for its floor), which once stopped evaluate with a ValueError."""
    report = run_evaluation(request(open2d, 2, None))
    for row in rows_of(report).values():
        assert row["label_free_reasons"] == {"departure_extrap2": NO_EXTRAP2}, row
        assert "residual_ratio" in row["label_free"] and "backtest" in row["label_free"]
    assert f"| n/a ({NO_EXTRAP2}) |" in report.table
    report = run_evaluation(request(open2d, 1, None))
    for row in rows_of(report).values():
        assert row["label_free"] == {} and row["label_free_reasons"] == dict.fromkeys(LABEL_FREE, NO_WINDOW), row
    assert report.table.count(f"| n/a ({NO_WINDOW}) ") == 3 * len(rows_of(report))


def test_frames_without_a_residual_floor_say_why_in_every_cell(open2d):
    """An uneven time axis: the floor is not computed; its note names the frames, and each label-free cell of each
    row is ``n/a`` with the reason instead of a dropped column."""
    for path in sorted((open2d / "spec2d_open" / "data").glob("*/*.hdf5")):
        with h5py.File(path, "r+") as f:
            time = np.asarray(f["dimensions"]["time"])
            time[6:] += np.float32(0.05)
            f["dimensions"]["time"][...] = time
    report = run_evaluation(request(open2d, 4, None))
    for row in rows_of(report).values():
        assert row["label_free"] == {}
        assert row["label_free_reasons"] == dict.fromkeys(LABEL_FREE, UNSCORED_NO_FLOOR)
    assert report.table.count(f"n/a ({UNSCORED_NO_FLOOR})") == 3 * len(rows_of(report))
    assert "Residual floor of these frames: not computed" in report.table and "points 5-6" in report.table
