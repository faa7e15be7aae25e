"""Effective-rank diagnostics of adapter updates ``DeltaW`` (the paper's table "Spectral analysis of DeltaW").

For the singular values ``sigma_1 >= ... >= sigma_r`` of a rank-``r`` update (the nominal rank budget ``r``):

* stable rank          ``sum sigma_i^2 / sigma_1^2``                         (1 .. r)
* participation ratio  ``(sum sigma_i)^2 / (r sum sigma_i^2)``               (1/r .. 1, share of the budget used)
* entropy rank         ``exp(-sum p_i log p_i)`` with ``p_i = sigma_i / sum sigma_j``   (1 .. r)

The paper reports these without formulas; these are the standard definitions, stated so numbers can be compared.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from well_upao.models.assembly import load_model
from well_upao.models.lora import adapter_layers

METRICS = ("stable_rank", "participation_ratio", "entropy_rank")


def spectral_metrics(delta: torch.Tensor, rank: int) -> dict[str, float]:
    sigma = torch.linalg.svdvals(delta.double())[:rank]
    total = sigma.sum()
    if total <= 0:
        return {name: float("nan") for name in METRICS} | {"frobenius": 0.0}
    p = sigma / total
    entropy = -(p[p > 0] * p[p > 0].log()).sum()
    return {
        "stable_rank": float((sigma**2).sum() / sigma[0] ** 2),
        "participation_ratio": float(total**2 / (rank * (sigma**2).sum())),
        "entropy_rank": float(entropy.exp()),
        "frobenius": float(delta.norm()),
    }


def adapters_report(checkpoint: str | Path) -> dict:
    """Per-module and averaged metrics of every adapter of a checkpoint."""
    model = load_model(checkpoint)
    layers = adapter_layers(model)
    if not layers:
        raise ValueError(f"{checkpoint} has no LoRA/NSLoRA adapters")
    modules = {}
    with torch.no_grad():
        for name, layer in layers.items():
            modules[name] = spectral_metrics(layer.delta_weight(), layer.rank)
            modules[name]["forward"] = "nslora" if layer.runs_ns() else "lora"
    # adapters that never received a gradient (e.g. the 1D/3D variants when adapting on 2D data) keep
    # DeltaW = 0 and have no spectrum: they are counted, and left out of the means
    updated = {n: v for n, v in modules.items() if v["frobenius"] > 0}
    mean = {m: _mean(v[m] for v in updated.values()) for m in (*METRICS, "frobenius")}
    by_type: dict[str, dict[str, float]] = {}
    for kind in sorted({n.rsplit(".", 1)[-1] for n in updated}):
        rows = [v for n, v in updated.items() if n.rsplit(".", 1)[-1] == kind]
        by_type[kind] = {m: _mean(r[m] for r in rows) for m in METRICS}
    return {
        "checkpoint": str(checkpoint),
        "n_modules": len(modules),
        "n_untouched": len(modules) - len(updated),
        "mean": mean,
        "by_type": by_type,
        "modules": modules,
    }


def _mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else float("nan")


def report_markdown(report: dict) -> str:
    lines = [
        f"Adapters of {report['checkpoint']}: {report['n_modules']} modules "
        f"({report['n_untouched']} never updated, DeltaW = 0, left out of the means)",
        "",
        "| module | stable rank | participation ratio | entropy rank | forward |",
        "|---|---|---|---|---|",
    ]
    for name, row in report["modules"].items():
        if row["frobenius"] == 0:
            continue
        lines.append(
            f"| {name} | {row['stable_rank']:.3f} | {row['participation_ratio']:.3f} | {row['entropy_rank']:.3f} "
            f"| {row['forward']} |"
        )
    for kind, row in report["by_type"].items():
        lines.append(
            f"| mean of {kind} | {row['stable_rank']:.3f} | {row['participation_ratio']:.3f} | "
            f"{row['entropy_rank']:.3f} | |"
        )
    mean = report["mean"]
    lines.append(
        f"| **mean** | **{mean['stable_rank']:.3f}** | **{mean['participation_ratio']:.3f}** | "
        f"**{mean['entropy_rank']:.3f}** | |"
    )
    return "\n".join(lines)


def write_report(report: dict, json_path: str | Path) -> None:
    Path(json_path).write_text(json.dumps(report, indent=2))
