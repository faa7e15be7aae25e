"""``benchmarks/performance/validation_cost.py`` reads an epoch's training and validation seconds from the lines the
loop writes: training is ``time_per_train_iter`` times the epoch's steps, the rest of the epoch's wall time is
validation and checkpoints; lines without training (the start's epoch 0, the test line) are skipped."""

from __future__ import annotations

import itertools
import json
import re
import statistics
from pathlib import Path

import pytest
from performance import validation_cost


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
    assert row == "| wave2d | after | 1 | 1 (stopped) | 8.0 | 2.0 | 0.250 | — |"
    with pytest.raises(AssertionError, match="ran the harness"):
        validation_cost.run_setting("wave2d", "after", None, tmp_path, epochs=2)


def write_study(out: Path, ratios: dict[str, float]) -> None:
    """An invocation's ``validation_cost.json`` whose runs (one per code) spent 10 s training per epoch and
    ``10 x ratio`` s on the rest, over 3 epochs; each run's metrics.jsonl beside it."""
    results = []
    for code, value in ratios.items():
        run = out / "runs" / code / "0"
        (run / "artifacts").mkdir(parents=True)
        lines = [{"epoch": e, "step": 10 * e, "seconds": (10 + 10 * value) * e, "time_per_train_iter": 1.0}
                 for e in (1, 2, 3)]  # fmt: skip
        (run / "artifacts" / "metrics.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
        costs = validation_cost.epoch_costs(lines)
        results.append({"setting": "quickstart", "code": code, "run": str(run), **validation_cost.summary(costs)})
    (out / "validation_cost.json").write_text(json.dumps(results))


def test_combined_repeats_are_numbered_kept_and_summarised_by_their_median_and_range(tmp_path):
    """Three invocations joined: rows numbered 1-3 per code, each run's metrics.jsonl copied (the copy is what the
    report names), and per code the median and range of the later epochs' ratio (0.2, 0.3, 0.25 -> 0.25, 0.2, 0.3)."""
    outs = [tmp_path / f"out{k}" for k in (1, 2, 3)]
    for out, value in zip(outs, (0.2, 0.3, 0.25), strict=True):
        write_study(out, {"after": value, "before": 2 * value})
    keep = tmp_path / "kept"
    results = validation_cost.combine(outs, keep)
    assert [(r["code"], r["repeat"]) for r in results][:3] == [("after", 1), ("before", 1), ("after", 2)]
    assert sorted(p.name for p in keep.iterdir())[:2] == ["quickstart-after-1.metrics.jsonl",
                                                         "quickstart-after-2.metrics.jsonl"]  # fmt: skip
    assert results[0]["run"] == str(keep / "quickstart-after-1.metrics.jsonl")
    spread = validation_cost.spread_table(results).splitlines()
    assert spread[2] == "| quickstart | after | 3 | 0.250 | 0.200 | 0.300 |"
    assert spread[3] == "| quickstart | before | 3 | 0.500 | 0.400 | 0.600 |"
    with pytest.raises(SystemExit, match="does not exist"):
        validation_cost.combine([tmp_path / "missing"], keep)


def test_the_committed_table_is_what_its_kept_metrics_files_give():
    """Every run row of reports/validation_cost.md recomputed from the metrics.jsonl the report names (committed
    under reports/): a table edited by hand, or evidence replaced, fails."""
    root = Path(__file__).resolve().parents[1]
    text = (root / "reports" / "validation_cost.md").read_text()
    named = dict(re.findall(r"^- (\w+ / \w+ / \d+): `([^`]+)`", text, flags=re.M))
    assert named, "the report names no kept runs"
    rows = [line for line in text.splitlines() if re.match(r"^\| \w+ \| \w+ \| \d+ \| \d", line)]
    rows = [line for line in rows if line.count("|") == 9]  # the runs' table (8 columns), not the repeats' spread
    assert len(rows) == len(named)
    medians: dict[tuple[str, str], list[float]] = {}
    for line in rows:
        setting, code, repeat = (cell.strip() for cell in line.strip("|").split("|")[:3])
        path = root / named[f"{setting} / {code} / {repeat}"]
        lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
        result = {"setting": setting, "code": code, "repeat": int(repeat)}
        result |= validation_cost.summary(validation_cost.epoch_costs(lines))
        assert validation_cost.table([result]).splitlines()[2] == line
        # the last column recomputed here from its definition: per epoch after the first, the wall seconds less
        # time_per_train_iter x the steps, over the latter; the median of those
        epochs = [x for x in lines if "time_per_train_iter" in x and "seconds" in x and int(x.get("epoch", 0)) >= 1]
        ratios = []
        for before, after in itertools.pairwise(epochs):
            train = after["time_per_train_iter"] * (after["step"] - before["step"])
            ratios.append((after["seconds"] - before["seconds"] - train) / train)
        assert line.split("|")[-2].strip() == f"{statistics.median(ratios):.3f}"
        medians.setdefault((setting, code), []).append(statistics.median(ratios))
    spread = [line for line in text.splitlines() if line.count("|") == 7 and line.startswith("| quickstart")]
    assert len(spread) == len(medians)
    for line in spread:
        setting, code, count, middle, low, high = (cell.strip() for cell in line.strip("|").split("|"))
        values = medians[(setting, code)]
        assert [int(count), middle, low, high] == [
            len(values), f"{statistics.median(values):.3f}", f"{min(values):.3f}", f"{max(values):.3f}"
        ]  # fmt: skip
