"""Solver rows matched to a model in runtime and in accuracy (``--match-solver``)."""

from __future__ import annotations

import json

import pytest
from matched_rows import expected_matched_rows

from well_upao.cli import main
from well_upao.evaluate.matched_solver import match_solvers
from well_upao.evaluate.results import Scores


def scores(name: str, vrmse: float, ms: float, substeps: int = 1, coarsen: int = 1) -> Scores:
    notes = {"substeps": substeps, "coarsen": coarsen}
    return Scores(name, "solver", {"u": vrmse}, {"u": vrmse}, [], ms / 1e3, notes)


LADDER = [
    scores("a", 1e-1, 1.0, 1),
    scores("b", float("inf"), 1.5, 1, 2),  # unstable: never picked
    scores("c", 1e-3, 2.0, 2),
    scores("d", 1e-5, 4.0, 4),
    scores("e", 1e-6, 8.0, 8, 2),
]


def test_cost_matched_is_the_most_accurate_affordable_and_accuracy_matched_the_cheapest_as_good():
    model = Scores("upao", "model", {"u": 5e-3}, {"u": 5e-3}, [], 4.5e-3)
    matched = match_solvers(LADDER, model)
    assert matched.cost_matched.name == "d" and not matched.cheapest_is_slower
    assert matched.accuracy_matched.name == "c"
    names = [row.name for row in matched.rows()]
    assert names == [
        "solver, cost-matched to upao (4 RK4 steps)",
        "solver, accuracy-matched to upao (2 RK4 steps)",
    ]


def test_a_model_faster_than_every_solver_and_more_accurate_than_all_is_said_so():
    model = Scores("fast", "model", {"u": 1e-7}, {"u": 1e-7}, [], 0.1e-3)
    matched = match_solvers(LADDER, model)
    assert matched.cheapest_is_slower and matched.cost_matched.name == "a"
    assert matched.accuracy_matched is None
    assert [row.name for row in matched.rows()] == ["solver, slower than fast (1 RK4 steps)"]


@pytest.mark.slow  # keeps the default suite under 10 minutes
def test_evaluate_adds_matched_rows_and_the_ladder(small_datasets, tmp_path, capsys):
    out = tmp_path / "out"
    args = ["evaluate", "--data", "tg2d", "--base-path", str(small_datasets), "--rollout-steps", "1", "--quiet"]
    assert main([*args, "--out", str(out), "--match-solver", "extrap1"]) == 0
    table = capsys.readouterr().out
    result = json.loads((out / "evaluation_tg2d_valid_stride1.json").read_text())
    ladder = result["solver_ladder"]
    expected = expected_matched_rows(result, "extrap1")  # the branch this run's measured ladder selects
    assert [s["name"] for s in result["scores"] if s["name"].startswith("solver, ")] == expected
    assert all(f"| {name} |" in table for name in expected), table
    assert {row["notes"]["coarsen"] for row in ladder} == {1, 2}  # 16^2 periodic: grid/4 would be under 8 points
    assert len(ladder) == 2 * 9
    assert (out / "cost_accuracy_tg2d_valid_stride1.png").is_file()
    assert main([*args, "--out", str(out), "--match-solver", "nosuchrow"]) == 2
    err = capsys.readouterr().err
    assert "names no row" in err and "extrap2" in err and err.count("\n") == 1
