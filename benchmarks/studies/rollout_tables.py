"""The rows ``benchmarks/studies/rollout_study.py`` trains and compares, and the tables it makes of them
(reports/rollout.md): the rows' cells over seeds (mean ± half the range), the rule that says when a difference is
resolved, the guard against a 6:12 label oracle, and what training reached."""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.tables import rows_by_name

#: the trained rows: their name and the overrides that differ between them
ROWS: dict[str, list[str]] = {
    "UPAO one-step": ["model=na_nslora", "trainer=upao", "trainer.nslora_schedule=from_start"],
    "UPAO 4-step": ["model=na_nslora", "trainer=upao", "trainer.nslora_schedule=from_start", "trainer.rollout_steps=4"],
    "UPAO 4-step pushforward": [
        "model=na_nslora",
        "trainer=upao",
        "trainer.nslora_schedule=from_start",
        "trainer.rollout_steps=4",
        "trainer.rollout_pushforward=true",
    ],
    "supervised LoRA one-step": ["model=na_lora", "trainer=shifted"],
    "supervised LoRA 4-step": ["model=na_lora", "trainer=shifted", "trainer.rollout_steps=4"],
}
CLASSICAL = ("persistence", "extrap1", "extrap2", "solver")
WINDOWS = ("6:12", "13:30")


def guard_record(lines: list[dict]) -> dict | None:
    """What a UPAO run's ``best.pt`` holds against a label oracle on the 6:12 window of the validation rollouts: the
    oracle picks the lowest ``valid_rollout_VRMSE_6:12`` among the validated candidates (epoch 0 = the start) and
    the prior; ``None`` when the window was not logged."""
    key, prior_key = "valid_rollout_VRMSE_6:12", "valid_prior_rollout_VRMSE_6:12"
    validations = [line for line in lines if key in line]
    if not validations:
        return None
    last = validations[-1]
    truth = {line["epoch"]: line[key] for line in validations}
    candidates = dict(truth)
    if prior_key in last:
        candidates["prior"] = last[prior_key]
    kept = "prior" if last.get("kept_prior") else last["best_epoch"]
    oracle = min(candidates, key=candidates.get)
    return {"kept": kept, "oracle": oracle, "matched": kept == oracle, "cost": candidates[kept] / candidates[oracle]}


def training_record(lines: list[dict]) -> dict | None:
    """What training reached on the 6:12 window of the validation rollouts, whatever ``best.pt`` kept: the start
    (epoch 0), the last validated model, the prior (the extrapolation the correction is added to) and the optimizer
    steps run; ``None`` when the window was not logged."""
    key = "valid_rollout_VRMSE_6:12"
    validations = [line for line in lines if key in line]
    if not validations:
        return None
    last = validations[-1]
    start = next((line[key] for line in validations if line["epoch"] == 0), None)
    return {
        "start": start,
        "last": last[key],
        "prior": last.get("valid_prior_rollout_VRMSE_6:12"),
        "steps": last.get("step"),
    }


def training_table(records: list[dict]) -> list[str]:
    """One line per (dataset, UPAO row): the seeds' :func:`training_record` values, seed by seed."""
    lines = [
        "| dataset | row | steps | start 6:12 | last validated 6:12 | prior (extrap2) 6:12 | last / prior |",
        "|---|---|---|---|---|---|---|",
    ]
    groups: dict[tuple[str, str], list[dict]] = {}
    for record in records:
        groups.setdefault((record["dataset"], record["row"]), []).append(record)
    for (dataset, row), group in groups.items():
        group = sorted(group, key=lambda r: r["seed"])

        def seeds(key: str, values=group) -> str:
            return " / ".join(fmt(r[key]) for r in values)

        ratio = " / ".join(fmt(r["last"] / r["prior"]) if r["prior"] else "-" for r in group)
        lines.append(
            f"| {dataset} | {row} | {seeds('steps')} | {seeds('start')} | {seeds('last')} | {seeds('prior')} | "
            f"{ratio} |"
        )
    return lines


def cell(values: list[float | None]) -> tuple[float, float, int] | None:
    """Mean, range (max - min) and count of the seeds' values (``None``: not held)."""
    held = [v for v in values if v is not None and math.isfinite(v)]
    if not held:
        return None
    return sum(held) / len(held), max(held) - min(held), len(held)


def cell_text(values: list[float | None]) -> str:
    """A table cell from the seeds' values: the mean ± half the range (no range for one seed); ``diverged`` where a
    seed's rollouts reached a non-finite value (the window's mean over rollouts is then NaN or infinite: saying
    "not held" would hide a failure); ``not held`` where no seed's trajectories hold the window."""
    diverged = sum(v is not None and not math.isfinite(v) for v in values)
    if diverged:
        return "diverged" + (f" ({diverged} of {len(values)} seeds)" if diverged < len(values) else "")
    c = cell(values)
    if c is None:
        return "not held"
    return fmt(c[0]) + (f" ± {c[1] / 2:.2g}" if c[2] > 1 else "")


def resolved(a: list[float], b: list[float]) -> str:
    """The rule of the module docstring for rows ``a`` and ``b`` (per-seed values, same seeds): ``a`` / ``b`` (the
    better, resolved) or ``not resolved``."""
    if len(a) != len(b) or len(a) < 2:
        return "not resolved"
    mean_a, mean_b = sum(a) / len(a), sum(b) / len(b)
    threshold = max((max(a) - min(a)) + (max(b) - min(b)), 0.01 * max(mean_a, mean_b))
    if all(x < y for x, y in zip(a, b, strict=True)) and mean_b - mean_a > threshold:
        return "a"
    if all(x > y for x, y in zip(a, b, strict=True)) and mean_a - mean_b > threshold:
        return "b"
    return "not resolved"


def row_values(result: dict, name: str) -> dict | None:
    score = rows_by_name(result).get(name)
    if score is None:
        return None
    windows = score.get("rollout_windows") or {}
    counts = score.get("rollout_counts") or []
    return {
        "one-step": score["mean_vrmse_well"],
        **{w: windows.get(w) for w in WINDOWS},
        "rollouts": min(counts) if counts else 0,
        "curve": score.get("rollout_vrmse_well") or [],
    }


def fmt(value: float | None) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3g}"


def dataset_table(name: str, per_seed: dict[int, dict]) -> list[str]:
    seeds = sorted(per_seed)
    names = [*ROWS, *CLASSICAL]
    lines = [
        f"### {name}",
        "",
        "| row | one-step | 6:12 | 13:30 | seeds | rollouts per seed |",
        "|---|---|---|---|---|---|",
    ]
    for row in names:
        values = [row_values(per_seed[s], row) for s in seeds]
        values = [v for v in values if v is not None]
        if not values:
            continue
        text = [cell_text([v[col] for v in values]) for col in ("one-step", *WINDOWS)]
        lines.append(f"| {row} | {' | '.join(text)} | {len(values)} | {values[0]['rollouts']} |")
    return [*lines, ""]


def comparisons(name: str, per_seed: dict[int, dict]) -> list[str]:
    """The rule applied to the pairs the study asks about, on the 6:12 window."""
    pairs = [
        ("UPAO 4-step", "UPAO one-step"),
        ("UPAO 4-step pushforward", "UPAO 4-step"),
        ("UPAO 4-step", "extrap2"),
        ("UPAO 4-step", "supervised LoRA 4-step"),
        ("supervised LoRA 4-step", "supervised LoRA one-step"),
    ]
    out = []
    seeds = sorted(per_seed)
    for a, b in pairs:
        va = [row_values(per_seed[s], a) for s in seeds]
        vb = [row_values(per_seed[s], b) for s in seeds]
        if any(v is None or v["6:12"] is None for v in (*va, *vb)):
            continue
        verdict = resolved([v["6:12"] for v in va], [v["6:12"] for v in vb])
        text = {"a": f"{a} better (resolved)", "b": f"{b} better (resolved)"}.get(verdict, "not resolved")
        out.append(f"| {name} | {a} vs {b} | {text} |")
    return out
