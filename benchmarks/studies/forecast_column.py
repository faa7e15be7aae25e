"""The "forecast (no labels)" column of What you get: what ``well-upao forecast`` returns for a study case's UPAO run,
scored against the stored frames the forecast never reads.

For one case (a trained run on a dataset's validation split at its stride and history): the forecast is made, as a
user types it, from each of the rollout starts ``well-upao evaluate`` uses (``predict.windows.rollout_starts``: up to
3 per trajectory, spread over it), every validation trajectory at once (``--start``: the history is the frames before
it), ``steps`` = evaluate's rollout length. Its frames are then compared with the stored ones: per trajectory and step
the Well's VRMSE (mean over the channels), per window (one step; the Well's 6:12 and 13:30) the mean over the
window's steps, then over the trajectories and the starts, as evaluate averages a row's rollouts. Each start's
forecast also states, per window, which candidate it used and its expected VRMSE with a nominal 80% interval (for the
set of trajectories at that start): a *cell* (start x window) whose true VRMSE the interval holds or not.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from pathlib import Path

import torch

from well_upao.data.source import WellSource
from well_upao.data.trajectories import TrajectoryFile
from well_upao.evaluate.metrics import vrmse_well
from well_upao.predict.windows import LONGEST_WINDOW_END, WELL_WINDOWS, rollout_starts, window_label

#: the windows a record keeps, by the forecast's names (one step, then the Well's windows)
WINDOW_SLICES = {"one_step": (0, 1), **{window_label(w): w for w in WELL_WINDOWS}}
WELL_UPAO = [sys.executable, "-m", "well_upao.cli"]


def true_windows(predicted: torch.Tensor, stored: torch.Tensor, dims: int) -> dict[str, float]:
    """Per window the mean over its steps of the Well's VRMSE (mean over channels) of ``predicted`` ``(K, *space,
    C)`` against ``stored`` (the same frames); ``None``-free: only the windows the ``K`` steps hold."""
    per_step = vrmse_well(predicted, stored, dims).mean(-1).tolist()
    return {name: sum(per_step[a:b]) / (b - a) for name, (a, b) in WINDOW_SLICES.items() if len(per_step) >= b}


def forecast_case(
    run: Path,
    base: Path,
    dataset: str,
    stride: int,
    history: int,
    folder: Path,
    logged: Callable[[list[str], Path], object],
    starts: int = 3,
) -> dict:
    """The column's record of one case (see the module docstring): per window the forecast's true VRMSE (mean over
    starts and trajectories), per start and window its pick, expected VRMSE and interval and true VRMSE, and the
    forecast's cost. ``logged(command, log)`` runs a command as the study does (timed, logged)."""
    source = WellSource(base, dataset, "valid")
    stored = [f[i].frames for f in (TrajectoryFile(p, source.kept_fields) for p in source.files) for i in range(len(f))]
    held = (min(s.shape[0] for s in stored) - 1) // stride + 1  # frames at the stride from frame 0
    steps = min(LONGEST_WINDOW_END, held - history)
    cells, cost, candidates = [], {"wall_seconds": 0.0, "cpu_seconds": 0.0}, []
    for start in rollout_starts(held, history, steps, starts):
        first = (start + history) * stride  # the stored frame of forecast step 1
        out = folder / "forecast" / f"start{start}"
        command = [*WELL_UPAO, "forecast", str(run), "--input", str(base / dataset), "--split", "valid",
                   "--history", str(history), "--stride", str(stride), "--start", str(first),
                   "--steps", str(steps), "--out", str(out), "--quiet"]  # fmt: skip
        finished = logged(command, folder / f"forecast-start{start}.log")
        cost["wall_seconds"] += finished.wall_seconds
        cost["cpu_seconds"] += finished.cpu_seconds
        cells += start_cells(out, stored, start, first, steps, stride)
        candidates = json.loads((out / "forecast.json").read_text())["candidates"]
    totals: dict[str, list[float]] = {}
    for cell in cells:
        totals.setdefault(cell["window"], []).append(cell["true"])
    return {
        "windows": {name: sum(values) / len(values) for name, values in totals.items()},
        "cells": cells,
        "candidates": candidates,
        "steps": steps,
        "trajectories": len(stored),
        "cost": {key: round(value, 1) for key, value in cost.items()},
    }


def start_cells(out: Path, stored: list[torch.Tensor], start: int, first: int, steps: int, stride: int) -> list[dict]:
    """One start's cells: per window the forecast's pick, expected VRMSE and interval (``out/forecast.json``) and its
    true VRMSE (``out/forecast.hdf5`` against the stored frames from ``first``), the mean over the trajectories."""
    document = json.loads((out / "forecast.json").read_text())
    predicted = TrajectoryFile(out / "forecast.hdf5")
    per_trajectory = []
    for index, truth in enumerate(stored):
        target = truth[first : first + steps * stride : stride]
        per_trajectory.append(true_windows(predicted[index].frames[: len(target)], target, target.dim() - 2))
    cells = []
    for window in document["windows"]:
        values = [t[window["window"]] for t in per_trajectory if window["window"] in t]
        if not values:
            continue
        true = sum(values) / len(values)
        expected = window["expected_vrmse"] or {}
        low, high = expected.get("low"), expected.get("high")
        cells.append({
            "start": start,
            "window": window["window"],
            "predictor": window["predictor"],
            "expected": expected.get("value"),
            "low": low,
            "high": high,
            "true": true,
            "covered": None if low is None else bool(low <= true <= high),
        })  # fmt: skip
    return cells


def coverage(cells: list[dict]) -> float:
    """The share of cells whose interval holds the true VRMSE (cells without an interval left out)."""
    judged = [cell["covered"] for cell in cells if cell.get("covered") is not None]
    return sum(judged) / len(judged) if judged else math.nan
