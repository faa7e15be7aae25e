"""``benchmarks/studies/horizon_study.py`` (issue 53's evidence, a section of reports/trust.md) reads an evaluation's
``trust`` and counts the goal from it: a pick within 1.2x of the true best counts, one above does not, a window the
trajectories do not hold is named, not counted; the section replaces an earlier one and keeps the rest."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest
from studies import horizon_study


def evaluation(one_step_ratio: float, window_ratio: float | None) -> dict:
    trust = {
        "one_step": {"pick": "extrap2", "reach": "backtest at step 1", "best": "extrap1", "best_value": 1.0,
                     "pick_value": one_step_ratio, "ratio": one_step_ratio},
        "6:12": {"pick": "persistence", "reach": "backtest to step 5 of 12"},
        "13:30": {"pick": "persistence", "reach": "backtest to step 5 of 30"},
    }  # fmt: skip
    if window_ratio is not None:
        trust["6:12"] |= {"best": "persistence", "best_value": 2.0, "pick_value": 2 * window_ratio}
        trust["6:12"]["ratio"] = window_ratio
    solver = {"name": "solver", "mean_vrmse_well": 1e-6, "rollout_windows": {"6:12": 1e-5, "13:30": None}}
    return {"trust": trust, "scores": [solver]}


def test_the_goal_counts_picks_within_the_cost_and_names_the_rest():
    rows = []
    for name, one_step, window in (("a", 1.0, 1.0), ("b", 1.19, 1.5), ("c", 3.0, None)):
        rows += [horizon_study.window_record(name, 8, w, evaluation(one_step, window)) for w in horizon_study.WINDOWS]
    assert rows[0]["solver"] == 1e-6 and rows[1]["solver"] == 1e-5 and rows[2]["cost"] is None
    lines = horizon_study.goal_lines(rows, ["a", "b", "c"], [8])
    assert lines[0] == (
        "- history 8, one_step: the pick within 1.2x of the true best on 2 of 3 datasets holding the window (of 3), "
        "the same row on 0; above 1.2x: c (3)."
    )
    assert lines[1] == (
        "- history 8, 6:12: the pick within 1.2x of the true best on 1 of 2 datasets holding the window (of 3), the "
        "same row on 2; above 1.2x: b (1.5); window not held: c."
    )


def test_the_section_replaces_an_earlier_one_and_keeps_the_rest(tmp_path):
    report = tmp_path / "trust.md"
    report.write_text("# Trust\n\nintro\n\n## Reading\n\nthe reading\n")
    for text in ("first", "second"):
        horizon_study.write_section(report, [horizon_study.BEGIN, text, horizon_study.END], *horizon_study.MARKERS)
    written = report.read_text()
    assert written.count(horizon_study.BEGIN) == 1 and "second" in written and "first" not in written
    assert written.startswith("# Trust\n\nintro") and written.endswith("## Reading\n\nthe reading\n")


def test_the_training_table_reads_the_window_the_run_trusted_and_its_labelled_record(tmp_path):
    """A run's validation lines: the 6:12 run's table shows its picked prior, the evidence, what best.pt keeps and
    the labelled 6:12 record of the model and the prior (not the one-step one); lines without evidence are left
    out."""
    lines = [
        {"epoch": 0, "valid": 1.0, "valid_trust_window": "6:12", "valid_trust_prior": "extrap1",
         "valid_trust_reach": "backtest to step 5 of 12", "valid_score_window_persistence": 5.07,
         "valid_score_window_extrap1": 5.06, "valid_score_window_extrap2": 8.0, "valid_score_window_model": 23.4,
         "kept_prior": True, "kept_prior_name": "extrap1", "best_epoch": 0, "valid_paper_VRMSE": 9.0,
         "valid_rollout_VRMSE_6:12": 1.87, "valid_prior_rollout_VRMSE_6:12": 1.66},
        {"epoch": 1, "train": 0.5},
        {"epoch": 1, "valid": 0.9, "valid_trust_window": "6:12", "valid_trust_prior": "extrap1",
         "valid_trust_reach": "backtest to step 5 of 12", "valid_score_window_model": 4.0, "kept_prior": False,
         "best_epoch": 1, "valid_rollout_VRMSE_6:12": 1.1, "valid_prior_rollout_VRMSE_6:12": 1.66},
    ]  # fmt: skip
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    table = horizon_study.run_table([("gs", metrics)])
    assert table[2] == (
        "| gs | 0 | 6:12 | extrap1 (backtest to step 5 of 12) | 5.07 | 5.06 | 8 | 23.4 | extrap1 | 1.87 / 1.66 |"
    )
    assert table[3] == (
        "| gs | 1 | 6:12 | extrap1 (backtest to step 5 of 12) | — | — | — | 4 | the model (epoch 1) | 1.1 / 1.66 |"
    )
    assert len(table) == 5 and table[4] == ""


def test_the_goal_says_per_history_whether_it_holds():
    """History 8 needs 5 of 7 datasets within 1.2x at one step and at 6:12: two within is short of it."""
    rows = []
    for name, one_step, window in (("a", 1.0, 1.0), ("b", 1.19, 1.5), ("c", 3.0, None)):
        rows += [horizon_study.window_record(name, 8, w, evaluation(one_step, window)) for w in horizon_study.WINDOWS]
    lines = horizon_study.goal_lines(rows, ["a", "b", "c"], [8])
    assert lines[2] == "- history 8: the goal (5 of 7 at one step and at 6:12) does not hold (2 and 1)."


def write_run(out: Path, dataset: str, seed: int, kept: str | None, windows: dict[str, float]) -> None:
    """A ``--train`` run as horizon_study finds it: the harness's run folder with its metrics.jsonl, and the
    evaluation of its best.pt (the run's row ``upao`` and the classical rows' 6:12 VRMSE)."""
    folder = out / "training" / f"{dataset}-seed{seed}"
    artifacts = folder / "experiment" / f"{dataset}-na_nslora-upao" / "0" / "artifacts"
    artifacts.mkdir(parents=True)
    line = {"epoch": 2, "valid": 1.0, "valid_trust_prior": kept or "extrap2", "best_epoch": 2,
            "valid_trust_reach": "backtest to step 5 of 12", "kept_prior": kept is not None,
            "kept_prior_name": kept}  # fmt: skip
    (artifacts / "metrics.jsonl").write_text(json.dumps({"epoch": 0}) + "\n" + json.dumps(line) + "\n")
    (folder / "evaluation").mkdir()
    scores = [{"name": name, "rollout_windows": {"6:12": value}} for name, value in windows.items()]
    (folder / "evaluation" / "evaluation_x.json").write_text(json.dumps({"scores": scores}))


def test_the_training_runs_are_scored_against_the_best_extrapolation_row(tmp_path):
    """Each run's best.pt at 6:12 over the lowest classical row of the same evaluation (persistence 1.0 here, so a
    run at 1.5 costs 1.5 and misses the 1.2 goal; one keeping extrap1 at 1.1 costs 1.1)."""
    write_run(tmp_path, "gs", 0, "extrap1", {"persistence": 1.0, "extrap1": 1.1, "extrap2": 3.0, "upao": 1.1})
    write_run(tmp_path, "rb", 0, None, {"persistence": 2.0, "extrap1": 1.2, "extrap2": 1.0, "upao": 1.5})
    args = argparse.Namespace(out=tmp_path, train_datasets=["gs", "rb"], train_seeds=[0])
    rows = horizon_study.training_records(args)
    assert [(r["keeps"], r["best"], r["cost"]) for r in rows] == [
        ("extrap1", "persistence", pytest.approx(1.1)),
        ("the model", "extrap2", pytest.approx(1.5)),
    ]
    table = horizon_study.training_table(rows)
    assert table[2] == "| gs | 0 | extrap1 (backtest to step 5 of 12) | extrap1 | 1.1 | persistence (1) | 1.1 |"
    assert table[-2].endswith("within on 1 of 2 runs; above: rb seed 0 (1.5).")


def test_seeds_that_ended_alike_are_counted_as_one_outcome(tmp_path):
    """Two seeds of a dataset whose best.pt kept the same prior at the same VRMSE are one outcome, said so; a third
    run elsewhere is another (3 runs, 2 outcomes); runs that differ are not merged (no sentence)."""
    alike = {"persistence": 1.0, "extrap1": 1.1, "extrap2": 3.0, "upao": 1.1}
    for seed in (0, 1):
        write_run(tmp_path, "gs", seed, "extrap1", alike)
    write_run(tmp_path, "rb", 0, None, {"persistence": 2.0, "extrap1": 1.2, "extrap2": 1.0, "upao": 1.5})
    args = argparse.Namespace(out=tmp_path, train_datasets=["gs", "rb"], train_seeds=[0, 1])
    goal = horizon_study.training_table(horizon_study.training_records(args))[-2]
    assert goal.endswith("Those 3 runs are 2 outcomes: runs of a dataset whose best.pt predicts with the same row at "
                         "the same VRMSE count once.")  # fmt: skip
    shutil.rmtree(tmp_path / "training" / "gs-seed1")
    write_run(tmp_path, "gs", 1, "extrap1", alike | {"upao": 1.15})
    goal = horizon_study.training_table(horizon_study.training_records(args))[-2]
    assert "outcomes" not in goal


ROOT = Path(__file__).resolve().parents[1]


def committed_table_rows() -> list[tuple[int, list[str]]]:
    """The label-free pick tables of reports/trust.md's horizon section: ``(history, cells)`` per row."""
    text = (ROOT / "reports" / "trust.md").read_text()
    section = text[text.index("<!-- horizon study:") : text.index("<!-- end of the horizon study -->")]
    rows, history = [], None
    for line in section.splitlines():
        if line.startswith("History "):
            history = int(line.split()[1])
        elif history and line.startswith("| ") and not line.startswith(("| dataset", "|---")):
            rows.append((history, [cell.strip() for cell in line.strip("|").split("|")]))
        elif line.startswith("Goal"):
            history = None
    return rows


def test_the_committed_compact_evaluations_give_every_row_of_the_horizon_tables():
    """Each row of the horizon tables (pick, true best, their VRMSE, cost; not the solver's reported error, which the
    expected-error study does not compute) is read back from its evaluation, committed compact in
    reports/evaluations/expected_error/ (the same ``evaluate`` of the same data, re-made by the expected-error study;
    no seed enters it): a table that drifted from its evidence fails."""
    rows = committed_table_rows()
    assert len(rows) == 42  # 7 datasets x 2 histories x 3 windows
    for history, (dataset, window, pick, best, pick_value, cost, _solver) in rows:
        record = json.loads((ROOT / f"reports/evaluations/expected_error/{dataset}-h{history}.json").read_text())
        assert record["history"] == history
        trust = record["trust"][window]
        fmt = horizon_study.fmt
        held = f"{trust['best']} ({fmt(trust['best_value'])})" if trust.get("best") else "not held"
        expected = [f"{trust['pick']} ({trust['reach']})", held, fmt(trust.get("pick_value")), fmt(trust.get("ratio"))]
        assert [pick, best, pick_value, cost] == expected, (dataset, history, window)


def test_trained_networks_are_one_outcome_only_when_they_score_exactly_alike(tmp_path):
    """Two runs that kept the network at VRMSE 1.50001 and 1.50002 (equal at the table's 4 digits) are two
    outcomes; the sentence appears only when some runs are exactly alike."""
    for seed, value in ((0, 1.50001), (1, 1.50002)):
        write_run(tmp_path, "rb", seed, None, {"persistence": 2.0, "extrap1": 1.2, "extrap2": 1.0, "upao": value})
    args = argparse.Namespace(out=tmp_path, train_datasets=["rb"], train_seeds=[0, 1])
    assert "outcomes" not in horizon_study.training_table(horizon_study.training_records(args))[-2]
