"""``benchmarks/studies/forecast_check.py``: each held window's ratio is the forecast's true VRMSE over the lowest of
the rows the forecast chose from (the solver only where it kept it), and the report counts the goals from them."""

from __future__ import annotations

import pytest
from studies import forecast_check as check


def record(candidates: list[str]) -> dict:
    cells = [
        {"start": 0, "window": "one_step", "predictor": "extrap2", "low": 0.01, "high": 0.04, "true": 0.02,
         "covered": True},
        {"start": 0, "window": "6:12", "predictor": "persistence", "low": 0.1, "high": 0.2, "true": 0.28,
         "covered": False},
    ]  # fmt: skip
    return {
        "dataset": "heldout_allen_cahn", "stride": 1, "history": 8,
        "forecast": {
            "windows": {"one_step": 0.02, "6:12": 0.28}, "cells": cells, "candidates": candidates, "steps": 12
        },
        "rows": {  # one_step: the mean over every target frame; one_step_at_starts: the forecast's frames
            "persistence": {"one_step": 0.05, "one_step_at_starts": 0.06, "6:12": 0.25},
            "extrap2": {"one_step": 0.005, "one_step_at_starts": 0.02, "6:12": 0.6},
            "extrap1": {"one_step": 0.03, "one_step_at_starts": 0.03, "6:12": 0.5},
            "backbone": {"one_step": 0.04, "one_step_at_starts": 0.04, "6:12": 0.4},
            "solver": {"one_step": 1e-6, "one_step_at_starts": 1e-5, "6:12": 2e-5},
        },
    }  # fmt: skip


def test_the_ratio_is_over_the_best_candidate_the_forecast_chose_from():
    """One step ahead on the forecast's own frames (the rows' rollouts' first step from its starts): extrap2's mean
    over every target frame (0.005) would make its own pick look 4x off."""
    without = {e["window"]: e for e in check.held_windows(record(["persistence", "extrap1", "extrap2", "ac"]))}
    assert without["one_step"]["best"] == "extrap2" and without["one_step"]["ratio"] == pytest.approx(1.0)
    assert without["6:12"]["best"] == "persistence" and without["6:12"]["ratio"] == pytest.approx(0.28 / 0.25)
    kept = {e["window"]: e for e in check.held_windows(record(["persistence", "extrap1", "extrap2", "solver"]))}
    assert kept["one_step"]["best"] == "solver" and kept["one_step"]["ratio"] == pytest.approx(0.02 / 1e-5)


def test_the_report_counts_the_held_windows_and_the_cells():
    text = check.report([record(["persistence", "extrap1", "extrap2"])], "python benchmarks/studies/forecast_check.py")
    assert "within 1.2x of the best single candidate: 2 of 2 held windows" in text  # 1.0 and 1.12
    assert "one_step: the nominal 80% intervals held the true VRMSE in 100% of 1 cells" in text
    assert "6:12: the nominal 80% intervals held the true VRMSE in 0% of 1 cells" in text
