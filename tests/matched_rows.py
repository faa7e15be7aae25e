"""The cost- and accuracy-matched solver rows an evaluation JSON should hold, by the rule of
``well_upao.evaluate.matched_solver`` (its docstring) applied to the JSON's own measured ladder and reference row:
tests that read an evaluation pin the branch the measured numbers select instead of accepting either."""

from __future__ import annotations

import math


def mean_paper(row: dict) -> float:
    """A JSON row's mean paper VRMSE over channels with a temporal variance (``Scores.mean_paper``)."""
    values = [v for v in row["one_step_vrmse_paper"].values() if v == v]
    return sum(values) / len(values) if values else float("nan")


def settings(row: dict) -> str:
    grid = f", grid/{row['notes']['coarsen']}" if row["notes"]["coarsen"] > 1 else ""
    return f"({row['notes']['substeps']} RK4 steps{grid})"


def expected_matched_rows(result: dict, reference_name: str) -> list[str]:
    """Names of the matched rows for the row ``reference_name``: the most accurate ladder entry no slower than it
    (else the cheapest, "slower than"), then the cheapest entry at least as accurate (if any)."""
    reference = next(s for s in result["scores"] if s["name"] == reference_name)
    finite = [row for row in result["solver_ladder"] if math.isfinite(mean_paper(row))]
    affordable = [row for row in finite if row["seconds_per_prediction"] <= reference["seconds_per_prediction"]]
    if affordable:
        cost, label = min(affordable, key=mean_paper), "cost-matched to"
    else:
        cost, label = min(finite, key=lambda row: row["seconds_per_prediction"]), "slower than"
    expected = [f"solver, {label} {reference_name} {settings(cost)}"]
    accurate = [row for row in finite if mean_paper(row) <= reference["mean_vrmse_paper"]]
    if accurate:
        cheapest = min(accurate, key=lambda row: row["seconds_per_prediction"])
        expected.append(f"solver, accuracy-matched to {reference_name} {settings(cheapest)}")
    return expected
