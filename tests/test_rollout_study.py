"""``benchmarks/studies/rollout_study.py`` (issue 41's study, reports/rollout.md): its rule for a resolved difference,
the guard's record against a label oracle on the 6:12 window, and the tables from evaluate's JSON, on hand-written
inputs whose expected values are worked out by hand."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from studies import rollout_study

ROOT = Path(__file__).resolve().parent.parent


def test_a_difference_is_resolved_only_when_every_seed_agrees_and_the_gap_exceeds_the_ranges():
    assert rollout_study.resolved([1.0, 1.1], [2.0, 2.2]) == "a"  # gap 1.05 > ranges 0.1 + 0.2
    assert rollout_study.resolved([2.0, 2.2], [1.0, 1.1]) == "b"
    assert rollout_study.resolved([1.0, 1.9], [2.0, 2.2]) == "not resolved"  # gap 0.65 < ranges 0.9 + 0.2
    assert rollout_study.resolved([1.0, 2.5], [2.0, 2.2]) == "not resolved"  # the seeds disagree
    assert rollout_study.resolved([1.0], [2.0]) == "not resolved"  # one seed: no range to judge a gap by
    assert rollout_study.resolved([1.0, 1.0], [1.005, 1.005]) == "not resolved"  # within 1%: rounding
    assert rollout_study.resolved([1.0, 1.0], [1.02, 1.02]) == "a"


def lines(truths: list[float], best_epoch: int, kept_prior: bool = False, prior: float | None = None) -> list[dict]:
    out = [{"epoch": e, "valid": 1.0, "valid_rollout_VRMSE_6:12": t} for e, t in enumerate(truths)]
    out[-1] |= {"best_epoch": best_epoch, "kept_prior": kept_prior}
    if prior is not None:
        out[-1]["valid_prior_rollout_VRMSE_6:12"] = prior
    return out


def test_the_guard_record_compares_what_best_holds_with_the_lowest_window_vrmse():
    record = rollout_study.guard_record(lines([0.5, 0.2, 0.4], best_epoch=1))
    assert record == {"kept": 1, "oracle": 1, "matched": True, "cost": 1.0}
    record = rollout_study.guard_record(lines([0.5, 0.2, 0.4], best_epoch=0, prior=0.3))
    assert record["oracle"] == 1 and not record["matched"] and record["cost"] == pytest.approx(2.5)
    record = rollout_study.guard_record(lines([0.5, 0.2, 0.4], best_epoch=1, kept_prior=True, prior=0.1))
    assert record["kept"] == "prior" and record["matched"]
    assert rollout_study.guard_record([{"epoch": 0, "valid": 1.0}]) is None  # the window was never logged


def evaluation(upao: tuple[float, float | None], extrap: float) -> dict:
    def row(name, one, window):
        return {"name": name, "mean_vrmse_well": one, "rollout_windows": {"6:12": window, "13:30": None},
                "rollout_counts": [3] * 12, "rollout_vrmse_well": [one] * 12}  # fmt: skip

    return {"scores": [row("UPAO 4-step", *upao), row("extrap2", extrap, extrap * 10)]}


def test_the_dataset_table_averages_seeds_and_says_what_is_not_held():
    table = rollout_study.dataset_table("wave2d", {0: evaluation((0.1, 0.5), 0.2), 1: evaluation((0.3, 0.7), 0.2)})
    upao = next(line for line in table if line.startswith("| UPAO 4-step |"))
    assert upao == "| UPAO 4-step | 0.2 ± 0.1 | 0.6 ± 0.1 | not held | 2 | 3 |"
    assert "| extrap2 | 0.2 ± 0 | 2 ± 0 | not held | 2 | 3 |" in table  # equal seeds: no spread
    rows = rollout_study.comparisons("wave2d", {0: evaluation((0.1, 0.5), 0.2), 1: evaluation((0.3, 0.7), 0.2)})
    assert rows == ["| wave2d | UPAO 4-step vs extrap2 | UPAO 4-step better (resolved) |"]


def test_the_training_record_reads_the_start_the_last_validation_and_the_prior():
    history = lines([0.5, 0.2, 0.4], best_epoch=0, kept_prior=True, prior=0.3)
    history[-1]["step"] = 50
    record = rollout_study.training_record(history)
    assert record == {"start": 0.5, "last": 0.4, "prior": 0.3, "steps": 50}
    rows = rollout_study.training_table(
        [{"dataset": "wave2d", "row": "UPAO 4-step", "seed": s} | record for s in (1, 0)]
    )
    assert rows[-1] == "| wave2d | UPAO 4-step | 50 / 50 | 0.5 / 0.5 | 0.4 / 0.4 | 0.3 / 0.3 | 1.33 / 1.33 |"
    assert rollout_study.training_record([{"epoch": 0, "valid": 1.0}]) is None


def test_a_window_whose_rollouts_diverged_says_so_rather_than_not_held():
    nan = float("nan")
    assert rollout_study.cell_text([nan, nan]) == "diverged"
    assert rollout_study.cell_text([0.5, float("inf")]) == "diverged (1 of 2 seeds)"
    assert rollout_study.cell_text([None, None]) == "not held"
    assert rollout_study.cell_text([0.5]) == "0.5"
    table = rollout_study.dataset_table("shear_flow", {0: evaluation((0.1, nan), 0.2), 1: evaluation((0.3, nan), 0.2)})
    assert "| UPAO 4-step | 0.2 ± 0.1 | diverged | not held | 2 | 3 |" in table


def test_a_step_budget_replaces_the_time_budget_in_every_run_command(tmp_path):
    from argparse import Namespace

    args = Namespace(minutes=2.0, max_steps=None, steps=25, validation_batches=2)
    timed = rollout_study.command(args, "wave2d", "UPAO 4-step", 0, tmp_path)
    assert "trainer.max_minutes=2.0" in timed and "trainer.budget_clock=training" in timed
    assert not any("max_steps" in part for part in timed)
    stepped = rollout_study.command(Namespace(**{**vars(args), "max_steps": 75}), "wave2d", "UPAO 4-step", 0, tmp_path)
    assert "+trainer.max_steps=75" in stepped
    assert not any(part.startswith(("trainer.max_minutes", "trainer.budget_clock")) for part in stepped)
    assert "trainer.rollout_steps=4" in stepped and f"experiment_dir={tmp_path}" in stepped


def test_the_header_names_where_the_runs_trained_from_their_metrics(tmp_path):
    import json
    from argparse import Namespace

    args = Namespace(out=tmp_path, seeds=[0], datasets=["wave2d"], rows=["UPAO one-step", "UPAO 4-step"])
    for row, first in (("UPAO one-step", {"device": "cuda", "device_name": "NVIDIA H200"}), ("UPAO 4-step", {})):
        folder = tmp_path / "runs" / rollout_study.run_name("wave2d", row, 0) / "experiment" / "run" / "0" / "artifacts"
        folder.mkdir(parents=True)
        (folder / "metrics.jsonl").write_text(json.dumps({"epoch": 0, **first}) + "\n")
    assert rollout_study.run_devices(args) == ["cuda (NVIDIA H200)"]  # a run that says nothing adds nothing


def test_the_header_names_only_the_exact_sets_that_ran():
    assert rollout_study.exact_sets_note(["gray_scott_reaction_diffusion"]) == "none"
    note = rollout_study.exact_sets_note(["shear_flow", "advdiff2d"])
    assert note.startswith("advdiff2d at 64^2") and "wave2d" not in note


def test_no_solver_reaches_the_evaluate_command(tmp_path, monkeypatch):
    from argparse import Namespace

    ran = []
    monkeypatch.setattr(rollout_study, "latest_run", lambda folder: folder)
    monkeypatch.setattr(rollout_study.subprocess, "run", lambda cmd, **kw: ran.append(cmd) or Namespace(returncode=0))
    for no_solver in (True, False):
        args = Namespace(out=tmp_path / str(no_solver), rows=["UPAO one-step"], rollout_starts=3, threads=1,
                         no_solver=no_solver)  # fmt: skip
        rollout_study.evaluate(args, "wave2d", 0)
    assert "--no-solver" in ran[0] and "--no-solver" not in ran[1]
    assert ran[0][3:7] == [sys.executable, "-m", "well_upao.cli", "evaluate"]  # after `nice -n 10`
