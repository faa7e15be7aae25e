"""``benchmarks/validation_cost.py`` reads an epoch's training and validation seconds from the lines the loop writes:
training is ``time_per_train_iter`` times the epoch's steps, the rest of the epoch's wall time is validation and
checkpoints; lines without training (the start's epoch 0, the test line) are skipped."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import validation_cost  # benchmarks/ is a folder of scripts, not a package


def test_epoch_costs_split_each_epochs_wall_time_into_training_and_the_rest():
    lines = [
        {"epoch": 0, "step": 0, "seconds": 0.0, "valid": 1.0},  # the start's validation: no training
        {"epoch": 1, "step": 10, "seconds": 14.0, "time_per_train_iter": 1.0},  # 10 s training, 4 s the rest
        {"epoch": 2, "step": 20, "seconds": 26.0, "time_per_train_iter": 1.0},  # 10 s training, 2 s the rest
        {"epoch": 3, "step": 25, "seconds": 33.0, "time_per_train_iter": 1.2},  # 6 s training, 1 s the rest
        {"epoch": 3, "test": 0.5},
    ]
    costs = validation_cost.epoch_costs(lines)
    assert [c["epoch"] for c in costs] == [1, 2, 3]
    assert [c["train_s"] for c in costs] == pytest.approx([10.0, 10.0, 6.0])
    assert [c["other_s"] for c in costs] == pytest.approx([4.0, 2.0, 1.0])
    result = validation_cost.summary(costs)
    assert result["first_ratio"] == pytest.approx(0.4)
    assert result["median_later_ratio"] == pytest.approx((0.2 + 1 / 6) / 2)
    assert result["train_s"] == pytest.approx(26.0) and result["other_s"] == pytest.approx(7.0)


def test_a_source_without_a_folder_is_refused():
    with pytest.raises(Exception, match="LABEL=DIR"):
        validation_cost.parse_source("before")
    assert validation_cost.parse_source("after=installed") == ("after", None)


def test_a_run_stopped_after_its_first_epoch_is_tabulated_as_it_stands_with_partial(tmp_path, monkeypatch):
    """``--partial``: a run whose metrics.jsonl holds a trained epoch but no test line is tabulated (marked
    ``stopped``, no later epochs: "—"), not run again; without it, it would be run again (here: refused)."""
    run = tmp_path / "runs" / "wave2d-after" / "wave2d-na_nslora-upao" / "0"
    (run / "artifacts").mkdir(parents=True)
    lines = [
        {"epoch": 0, "step": 0, "seconds": 0.0},
        {"epoch": 1, "step": 4, "seconds": 10.0, "time_per_train_iter": 2.0},  # 8 s training, 2 s the rest
    ]
    (run / "artifacts" / "metrics.jsonl").write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    monkeypatch.setattr(validation_cost, "ensure_data", lambda setting, out: tmp_path / "data")

    def refuse(*args, **kwargs):
        raise AssertionError("ran the harness")

    monkeypatch.setattr(validation_cost.subprocess, "run", refuse)
    result = validation_cost.run_setting("wave2d", "after", None, tmp_path, epochs=2, partial=True)
    assert result["stopped"] and result["epochs"] == 1
    assert result["first_ratio"] == pytest.approx(2.0 / 8.0)
    row = validation_cost.table([result]).splitlines()[-1]
    assert row == "| wave2d | after | 1 (stopped) | 8.0 | 2.0 | 0.250 | — |"
    with pytest.raises(AssertionError, match="ran the harness"):
        validation_cost.run_setting("wave2d", "after", None, tmp_path, epochs=2)
