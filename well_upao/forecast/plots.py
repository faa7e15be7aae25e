"""Figures of a forecast: the first trajectory's fields at a few horizons, and the expected error against horizon.

Drawing only: every field is read back from ``forecast.hdf5`` and every number comes from the forecast's result.

* ``forecast_fields.png``: per channel, the last history frame and the forecast at steps 1, about a third, two
  thirds and the last, each titled with its step and the predictor it came from;
* ``forecast_expected.png``: per window, each candidate's expected VRMSE with its nominal 80% interval (the picked
  one marked), over the steps the window covers, and the expected VRMSE per step of the forecast as stitched (a point
  value: the intervals are calibrated per window, not per step).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import h5py
import matplotlib.pyplot as plt
import numpy as np

from well_upao.forecast.inputs import ForecastInput
from well_upao.forecast.results import Forecast


def view(field: np.ndarray) -> np.ndarray:
    """A 2-D (or 1-D) view of a spatial field: the middle slice of 3-D data."""
    while field.ndim > 2:
        field = field[field.shape[0] // 2]
    return field


def draw(axis, field: np.ndarray, title: str, limits: tuple[float, float]) -> None:
    field = view(field)
    axis.set_title(title, fontsize=8)
    if field.ndim == 1:
        axis.plot(field)
        axis.set_ylim(*limits)
        return
    image = axis.imshow(field.T, origin="lower", cmap="RdBu_r", vmin=limits[0], vmax=limits[1])
    axis.set_xticks([])
    axis.set_yticks([])
    plt.colorbar(image, ax=axis, fraction=0.046, pad=0.04)


def horizons(steps: int) -> list[int]:
    """The forecast steps drawn: 1, about a third, two thirds and the last (distinct)."""
    return sorted({1, max(1, round(steps / 3)), max(1, round(2 * steps / 3)), steps})


def plot_fields(result: Forecast, hdf5: Path, out: Path, given: ForecastInput) -> Path:
    """``forecast_fields.png`` of the first trajectory (see the module docstring)."""
    history = next(iter(given.histories())).frames.numpy()
    shown = horizons(result.steps)
    offset = result.history if _with_history(hdf5, result) else 0
    entries = given.files[0].varying_entries
    with h5py.File(hdf5, "r") as f:
        groups = {e.name: f[["t0_fields", "t1_fields", "t2_fields"][e.order]][e.name] for e in entries}
        frames = [
            np.concatenate([channels_of(groups[e.name][0, offset + step - 1], e.order) for e in entries], -1)
            for step in shown
        ]
    channels = result.channels
    figure, axes = plt.subplots(
        len(channels), len(shown) + 1, figsize=(2.9 * (len(shown) + 1), 2.4 * len(channels)), squeeze=False
    )
    for row, channel in enumerate(channels):
        values = [history[-1][..., row], *(frame[..., row] for frame in frames)]
        limit = max(float(np.abs(v).max()) for v in values) or 1.0
        draw(axes[row, 0], values[0], f"{channel}: last history frame", (-limit, limit))
        for column, (step, frame) in enumerate(zip(shown, frames, strict=True), 1):
            draw(axes[row, column], frame[..., row], f"step {step} ({result.predictor_at(step)})", (-limit, limit))
    figure.suptitle(f"forecast of {result.dataset}, trajectory 0 (stride {result.stride})", fontsize=10)
    figure.tight_layout()
    path = out / "forecast_fields.png"
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def channels_of(field, order: int) -> np.ndarray:
    """A stored frame of one field ``(*space)`` or ``(*space, D**order)`` as channels ``(*space, C)``."""
    field = np.asarray(field)
    return field[..., None] if order == 0 else field


def _with_history(hdf5: Path, result: Forecast) -> bool:
    with h5py.File(hdf5, "r") as f:
        return int(np.asarray(f["dimensions"]["time"]).shape[-1]) == result.history + result.steps


def plot_expected(result: Forecast, out: Path) -> Path:
    """``forecast_expected.png`` (see the module docstring)."""
    figure, axis = plt.subplots(figsize=(7.5, 4.2))
    names = list(dict.fromkeys(name for p in result.picks for name in p.expected))
    colours = {name: plt.cm.tab10(i % 10) for i, name in enumerate(names)}
    for p in result.picks:
        for name, estimate in p.expected.items():
            picked = name == p.predictor
            middle = (p.first + p.last) / 2
            axis.errorbar(
                middle + 0.15 * (names.index(name) - len(names) / 2),
                estimate.value,
                yerr=[[estimate.value - estimate.low], [estimate.high - estimate.value]],
                fmt="o" if picked else ".",
                color=colours[name],
                markersize=8 if picked else 4,
                capsize=3,
                label=name if p is result.picks[0] or name not in result.picks[0].expected else None,
            )
        axis.axvspan(p.first - 0.5, p.last + 0.5, color="0.95" if result.picks.index(p) % 2 else "1.0", zorder=0)
    steps = [entry["step"] for entry in result.per_step]
    values = [entry["expected_vrmse"] for entry in result.per_step]
    axis.plot(steps, values, color="k", lw=1, label="forecast, per step (no interval)")
    axis.set_yscale("log")
    axis.set_xlabel("forecast step")
    axis.set_ylabel("expected VRMSE (nominal 80% interval per window)")
    axis.set_title("expected error without labels; the large marker is each window's pick", fontsize=9)
    axis.legend(fontsize=7)
    figure.tight_layout()
    path = out / "forecast_expected.png"
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def plot_forecast(result: Forecast, hdf5: Path, out: Path, given: ForecastInput) -> list[Path]:
    """Both figures (see the module docstring)."""
    return [plot_fields(result, hdf5, out, given), plot_expected(result, out)]
