"""reports/gpu.md from the JSON files of ``benchmarks/device/gpu_check.py`` runs on a GPU (one section per run, as the
check wrote it), and the plan of reports/scaling.md set against them: activations per sample fitted to the measured
peaks, and the largest per-GPU batches the plan's formula gives with them.

    python benchmarks/device/gpu_report.py reports/gpu_check.json [more runs ...] --out reports/gpu.md

The hand-written ``## Reading`` of the report is kept (``benchmarks/harness/readings.py`` checks it against the tables).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.readings import exit_if_stale, write_keeping_reading

from device.gpu_check_report import report
from device.gpu_common import GiB

#: the device's install line (benchmarks/device/gpu_wheels.py); each run's JSON records the check's own command
INSTALL = (
    "python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --ignore-requires-python "
    "--find-links .gpu_wheels/build --target /tmp/site .gpu_wheels/*.whl . && export PYTHONPATH=/tmp/site"
)


def fitted_activations(runs: list[dict]) -> list[dict]:
    """Per (checkpointing, precision): a least-squares line through the measured peak bytes against the batch (every
    run's rows that ran, 2 batches or more): the slope is the activations per sample, the intercept what does not
    grow with the batch (weights, AdamW state, gradients, workspaces)."""
    points: dict[tuple[bool, str], dict[int, float]] = {}
    for run in runs:
        for row in run["stages"].get("backbone", {}).get("rows", []):
            if row.get("status") == "ok" and row.get("peak_bytes"):
                points.setdefault((row["checkpointing"], row["precision"]), {})[row["batch"]] = row["peak_bytes"]
    fits = []
    for (checkpointing, precision), peaks in sorted(points.items()):
        if len(peaks) < 2:
            continue
        batches = np.array(sorted(peaks), dtype=float)
        slope, intercept = np.polyfit(batches, [peaks[int(b)] for b in batches], 1)
        fits.append(
            dict(
                checkpointing=checkpointing,
                precision=precision,
                batches=[int(b) for b in batches],
                slope=slope,
                intercept=intercept,
            )
        )
    return fits


def plan_lines(runs: list[dict]) -> list[str]:
    from performance import scaling

    backbone = next(run["stages"]["backbone"] for run in runs if run["stages"].get("backbone", {}).get("plan"))
    plan = backbone["plan"]
    fits = fitted_activations(runs)
    lines = [
        "## The plan against the measurement",
        "",
        "Activations per sample: the slope of a least-squares line through the peak memory measured at each batch "
        "(every run above); the intercept is what does not grow with the batch. The plan's per-sample numbers are "
        "reports/scaling.md's (`benchmarks/performance/scaling.sample_plan`, fp32, on the meta device).",
        "",
        "| checkpointing | precision | batches | measured GiB per sample | intercept GiB | plan GiB per sample "
        "| plan / measured |",
        "|---|---|---|---|---|---|---|",
    ]
    measured = {}
    for fit in fits:
        per_sample = plan["with_checkpointing" if fit["checkpointing"] else "without"]
        planned = f"{per_sample / GiB:.3f}" if fit["precision"] != "bf16" else "-"
        ratio = f"{per_sample / fit['slope']:.2f}" if fit["precision"] != "bf16" else "-"
        measured[(fit["checkpointing"], fit["precision"])] = fit["slope"]
        lines.append(
            f"| {'yes' if fit['checkpointing'] else 'no'} | {fit['precision']} | "
            f"{', '.join(map(str, fit['batches']))} | {fit['slope'] / GiB:.3f} | {fit['intercept'] / GiB:.2f} | "
            f"{planned} | {ratio} |"
        )
    with torch.device("meta"):
        from well_upao.models.na_transformer import NATransformer, count_parameters

        model = NATransformer(preset="paper")
    parameters, gathered = count_parameters(model), scaling.gathered_bytes(model)
    lines += [
        "",
        f"Largest per-GPU batch at {scaling.PLAN_RANKS} ranks under FSDP2 (reports/scaling.md's formula: the "
        f"{parameters / 1e6:.1f}M-parameter model's fp32 state sharded, the gathered units whole, "
        f"{scaling.RESERVE:.0%} of each GPU kept free), with the planned and the measured fp32 activations:",
        "",
        "| GPU memory | checkpointing | planned activations | measured activations |",
        "|---|---|---|---|",
    ]
    for capacity in (48, 80):
        for checkpointing in (False, True):
            slope = measured.get((checkpointing, "fp32"))
            if slope is None:
                continue
            planned = scaling.largest_batch(
                capacity, plan["with_checkpointing" if checkpointing else "without"], parameters, gathered
            )
            found = scaling.largest_batch(capacity, slope, parameters, gathered)
            lines.append(f"| {capacity} GiB | {'yes' if checkpointing else 'no'} | {planned} | {found} |")
    return lines


def build(runs: list[tuple[Path, dict]]) -> list[str]:
    lines = [
        "# The first GPU check: reports/scaling.md's plan measured on one GPU",
        "",
        "Each section below is one run of `benchmarks/device/gpu_check.py` on a lent machine, from this checkout, "
        "after the install line of `benchmarks/device/gpu_wheels.py`:",
        "",
        f"    {INSTALL}",
        "",
        "Regenerate this page from the runs' JSON files (the reading is kept):",
        "",
        "    .venv/bin/python benchmarks/device/gpu_report.py "
        + " ".join(str(p) for p, _ in runs)
        + " --out reports/gpu.md",
        "",
    ]
    for path, run in runs:
        # the folder the device machine wrote to is a path of that machine: named OUT here
        run = dict(run, command=re.sub(r"--out \S+", "--out OUT", run["command"]))
        body = report(run).splitlines()
        sectioned = ["#" + line if line.startswith("#") else line for line in body[1:]]
        lines += [f"## Run `{path.name}`", "", *sectioned, ""]
    return [*lines, *plan_lines([run for _, run in runs])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path, help="gpu_check.json files of runs on a GPU")
    parser.add_argument("--out", type=Path, default=Path("reports/gpu.md"))
    args = parser.parse_args()
    runs = [(path, json.loads(path.read_text())) for path in args.runs]
    write_keeping_reading(args.out, build(runs))
    exit_if_stale(args.out)


if __name__ == "__main__":
    main()
