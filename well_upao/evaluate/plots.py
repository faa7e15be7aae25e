"""Figures of ``well-upao evaluate``: truth / prediction / error / PDE residual, error vs rollout step, and
error vs cost beside the solver ladder. Drawing only: every field and number shown comes from the scoring pass."""

from __future__ import annotations

import math
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import torch

from well_upao.evaluate.results import Evaluation, FigureFrames
from well_upao.predict.windows import WELL_WINDOWS, window_label


def _view(field: torch.Tensor) -> torch.Tensor:
    """A 2-D (or 1-D) view of a spatial field: the middle slice of 3-D data."""
    while field.ndim > 2:
        field = field[field.shape[0] // 2]
    return field


def _show(axis, field: torch.Tensor, title: str, cmap: str = "RdBu_r", symmetric: bool = True):
    field = _view(field).cpu()
    axis.set_title(title, fontsize=8)
    if field.ndim == 1:
        axis.plot(field.numpy())
        return
    limit = float(field.abs().max()) or 1.0
    kwargs = {"vmin": -limit, "vmax": limit} if symmetric else {}
    image = axis.imshow(field.T.numpy(), origin="lower", cmap=cmap, **kwargs)
    axis.set_xticks([])
    axis.set_yticks([])
    plt.colorbar(image, ax=axis, fraction=0.046, pad=0.04)


def plot_fields(evaluation: Evaluation, figures: FigureFrames, out: Path) -> list[Path]:
    """One PNG per row for the first trajectory at one predicted frame: truth, prediction, error and ``|R_k|``
    as the scoring pass computed it (the table's discretisation, ``well_upao.evaluate.scores.FigureFrames``)."""
    truth, paths = figures.truth, []
    for name, prediction in figures.predictions.items():
        residuals = figures.residuals.get(name) or {}
        columns = 4 if residuals else 3
        rows = len(evaluation.channels)
        figure, axes = plt.subplots(rows, columns, figsize=(3.2 * columns, 2.6 * rows), squeeze=False)
        residual_items = list(residuals.items())
        for row, channel in enumerate(evaluation.channels):
            _show(axes[row, 0], truth[..., row], f"truth {channel}")
            _show(axes[row, 1], prediction[..., row], f"prediction {channel}")
            _show(axes[row, 2], (prediction - truth)[..., row], "error")
            if residuals:
                if row < len(residual_items):
                    label, value = residual_items[row]
                    _show(axes[row, 3], value, f"|PDE residual| {label}", cmap="magma", symmetric=False)
                else:
                    axes[row, 3].axis("off")
        figure.suptitle(
            f"{name} on {evaluation.dataset}/{evaluation.split}, trajectory 0, predicted frame {figures.frame} "
            f"(stride {evaluation.stride})",
            fontsize=9,
        )
        figure.tight_layout()
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_")  # labels may hold spaces, `,` or `/`
        path = out / f"fields_{evaluation.dataset}_{safe}.png"
        figure.savefig(path, dpi=110)
        plt.close(figure)
        paths.append(path)
    return paths


def plot_rollout(evaluation: Evaluation, out: Path) -> Path:
    """VRMSE against rollout step (1-based), one line per row, with the Well's windows 6:12 and 13:30 shaded where
    the rollout reached them (0-based steps a .. b - 1 are the 1-based steps a + 1 .. b)."""
    figure, axis = plt.subplots(figsize=(6, 4))
    for (start, end), shade in zip(WELL_WINDOWS, ("0.9", "0.8"), strict=True):
        if evaluation.rollout_steps_run > start:
            axis.axvspan(
                start + 0.5,
                min(end, evaluation.rollout_steps_run) + 0.5,
                color=shade,
                zorder=0,
                label=f"the Well's window {window_label((start, end))}",
            )
    for score in evaluation.scores:
        if score.rollout_vrmse_well:
            steps = range(1, len(score.rollout_vrmse_well) + 1)
            style = "--" if score.kind != "model" else "-"
            axis.semilogy(steps, score.rollout_vrmse_well, style, marker="o", markersize=3, label=score.name)
    axis.set_xlabel("autoregressive step")
    axis.set_ylabel("VRMSE (the Well's definition)")
    axis.set_title(f"{evaluation.dataset}/{evaluation.split}: rollout error (stride {evaluation.stride})")
    axis.grid(True, which="both", alpha=0.3)
    if axis.get_legend_handles_labels()[0]:
        axis.legend(fontsize=8)
    figure.tight_layout()
    path = out / f"rollout_{evaluation.dataset}_{evaluation.split}_stride{evaluation.stride}.png"
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def plot_cost_accuracy(evaluation: Evaluation, out: Path) -> Path | None:
    """One-step VRMSE against ms / prediction: the fixed-step solver ladder (one line per grid) and every other
    row as a point, so equal-cost and equal-accuracy comparisons can be read off (None without a ladder)."""
    if not evaluation.solver_ladder:
        return None
    figure, axis = plt.subplots(figsize=(6, 4))
    grids: dict[int, list] = {}
    for score in evaluation.solver_ladder:
        grids.setdefault(score.notes.get("coarsen", 1), []).append(score)
    for factor, scores in sorted(grids.items()):
        finite = [s for s in scores if math.isfinite(s.mean_paper)]
        label = "solver ladder (full grid)" if factor == 1 else f"solver ladder (grid/{factor})"
        milliseconds = [s.seconds_per_prediction * 1e3 for s in finite]
        axis.loglog(milliseconds, [s.mean_paper for s in finite], ":", marker=".", label=label)
    for score in evaluation.scores:
        if score.notes.get("substeps") and score.name != "solver":
            continue  # the matched rows are points of the ladder
        axis.loglog(score.seconds_per_prediction * 1e3, score.mean_paper, "o", label=score.name)
    axis.set_xlabel("ms / prediction (this machine)")
    axis.set_ylabel("one-step VRMSE (paper's definition)")
    axis.set_title(f"{evaluation.dataset}/{evaluation.split}: cost and accuracy (stride {evaluation.stride})")
    axis.grid(True, which="both", alpha=0.3)
    axis.legend(fontsize=7)
    figure.tight_layout()
    path = out / f"cost_accuracy_{evaluation.dataset}_{evaluation.split}_stride{evaluation.stride}.png"
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def plot_expected(evaluation: Evaluation, out: Path) -> Path | None:
    """Per window a panel: each row's expected VRMSE without labels as a bar from its interval's low to high with
    the value marked, and its true value as a cross (None without an estimate)."""
    windows = [w for w, estimates in evaluation.expected.items() if estimates]
    if not windows:
        return None
    rows = {s.name: s for s in evaluation.scores}
    figure, axes = plt.subplots(1, len(windows), figsize=(4.2 * len(windows), 3.8), squeeze=False)
    for axis, window in zip(axes[0], windows, strict=True):
        estimates = evaluation.expected[window]
        names = list(estimates)
        for i, name in enumerate(names):
            e = estimates[name]
            axis.plot([i, i], [e["low"], e["high"]], "-", color="tab:blue", linewidth=6, alpha=0.35)
            axis.plot(i, e["value"], "o", color="tab:blue", label="expected [80%]" if i == 0 else None)
            true = rows[name].window_error(window) if name in rows else None
            if true is not None and math.isfinite(true) and true > 0:
                axis.plot(i, true, "x", color="black", markersize=8, label="true" if i == 0 else None)
        axis.set_yscale("log")
        axis.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=7)
        axis.set_title(f"{window}", fontsize=9)
        axis.grid(True, which="both", axis="y", alpha=0.3)
    axes[0][0].set_ylabel("VRMSE (the Well's definition)")
    axes[0][0].legend(fontsize=7)
    figure.suptitle(f"{evaluation.dataset}/{evaluation.split}: expected error without labels vs true", fontsize=10)
    figure.tight_layout()
    path = out / f"expected_{evaluation.dataset}_{evaluation.split}_stride{evaluation.stride}.png"
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
