"""The neighborhood attention's tile rule, before and after, measured in one run (issue 76).

Before: a grid of at most ``DENSE_TOKEN_LIMIT`` tokens was always one dense masked SDPA. After: it is tiled where a
tile's key box holds at most ``1 / TILE_GAIN`` of its tokens (``well_upao.models.neighborhood_attention.
query_tile_sides``). The before side is this checkout with ``TILE_GAIN = inf`` (no small grid tiled: the earlier
rule exactly), so both sides run in one process, alternated ``--rounds`` times, each after the tilings' cache is
cleared:

* which attention grids of the tiny backbone at the "What you get" sizes (1D 1,024 points, 2D 64^2, 3D 32^3; the
  the shear-flow and Rayleigh-Benard replicas' grids; the model's own routing and kernels, recorded from one forward)
  each rule tiles; where the two rules tile a grid
  alike the code is the same, and nothing is timed;
* where they differ, the tiny backbone's forward (no graph) and forward + backward on 8 windows of 8 frames, the
  least of ``--repeats`` calls per round, the median over the rounds;
* with ``--case FOLDER --dataset NAME``, ``well-upao evaluate`` of a what-you-get case folder (its UPAO and
  supervised runs, the classical rows and the solver, as the study runs it) in this process under each rule: wall
  seconds, and the largest relative difference between the two evaluations' numbers (the tiles and the dense SDPA
  sum in different orders: round-off, or the change is not a speed-up).

    OMP_NUM_THREADS=1 python benchmarks/performance/tile_rule.py --case RUNS/wyg/burgers1d/seed42 --dataset burgers1d

Writes ``reports/tile_rule.md`` (its hand-written reading kept).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.readings import write_keeping_reading

import well_upao.models.neighborhood_attention as attention
from performance.solver_speed import cpu_model
from well_upao.data.slot_inventory import N_SLOTS
from well_upao.models.na_transformer import NATransformer

ROOT = Path(__file__).resolve().parents[2]
#: (label, spatial shape) of the "What you get" sizes
GRIDS = (
    ("1D, 1,024 points", (1024,)),
    ("2D, 64^2", (64, 64)),
    ("2D, 64 x 128 (shear flow)", (64, 128)),
    ("2D, 128 x 32 (Rayleigh-Benard)", (128, 32)),
    ("3D, 32^3", (32, 32, 32)),
)
#: the rule as this checkout states it, and the earlier one (no grid under the limit tiled)
CHECKOUT_GAIN = attention.TILE_GAIN
RULES = {"before (dense under the limit)": math.inf, "after (key-box rule)": CHECKOUT_GAIN}


def use_rule(gain: float) -> None:
    attention.TILE_GAIN = gain
    attention._tiling.cache_clear()


def least_seconds(call, repeats: int) -> float:
    call()  # warm-up: the tilings built
    best = math.inf
    for _ in range(repeats):
        began = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - began)
    return best


def model_inputs(shape: tuple[int, ...]) -> tuple[NATransformer, torch.Tensor, torch.Tensor]:
    """The tiny backbone for ``len(shape)`` axes, 8 windows of 8 frames at ``shape`` and a mask of two slots."""
    torch.manual_seed(0)
    model = NATransformer(preset="tiny", dims=(len(shape),))
    mask = torch.zeros(N_SLOTS)
    mask[:2] = 1
    return model, torch.randn(8, 8, *shape, N_SLOTS), mask


def attention_grids(shape: tuple[int, ...]) -> set[tuple]:
    """The (token grid, kernel, dilation) of every attention call of one forward at ``shape``."""
    model, frames, mask = model_inputs(shape)
    seen: set[tuple] = set()
    tiling = attention._tiling

    def recording(lengths, kernel, dilation, causal, tile):
        seen.add((lengths, kernel, dilation, tile))
        return tiling(lengths, kernel, dilation, causal, tile)

    attention._tiling = recording
    try:
        with torch.no_grad():
            model.forward_sequence(frames, mask)
    finally:
        attention._tiling = tiling
    return seen


def tiles_under(gain: float, grids: set[tuple]) -> list[tuple[int, ...]]:
    """Each grid's query tile sides under ``TILE_GAIN = gain``."""
    kept = attention.TILE_GAIN
    attention.TILE_GAIN = gain
    try:
        return [attention.query_tile_sides(*grid) for grid in sorted(grids)]
    finally:
        attention.TILE_GAIN = kept


def model_times(shape: tuple[int, ...], repeats: int) -> dict[str, float]:
    """The tiny backbone's forward without a graph and forward + backward on 8 windows of 8 frames at ``shape``."""
    model, frames, mask = model_inputs(shape)

    def forward() -> None:
        with torch.no_grad():
            model.forward_sequence(frames, mask)

    def backward() -> None:
        model.zero_grad()
        model.forward_sequence(frames, mask).square().mean().backward()

    return {"forward": least_seconds(forward, repeats), "forward + backward": least_seconds(backward, repeats)}


#: the evaluation JSON's measured times, which differ between any two runs
TIMINGS = {"seconds_per_prediction"}


def numbers(value, prefix: str = "") -> dict[str, float]:
    """Every finite number of an evaluation JSON by its path (timings left out: they differ between any two runs)."""
    out: dict[str, float] = {}
    if isinstance(value, dict):
        for key, item in value.items():
            if key not in TIMINGS:
                out |= numbers(item, f"{prefix}/{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out |= numbers(item, f"{prefix}[{index}]")
    elif isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        out[prefix] = float(value)
    return out


def evaluate_case(case: Path, dataset: str, out: Path) -> tuple[float, dict]:
    """``well-upao evaluate`` of a what-you-get case (as the study runs it) in this process: wall seconds, JSON."""
    from well_upao.cli import main as cli

    experiments = case / "experiments"
    roles = (("UPAO + NSLoRA (no labels)", "na_nslora-upao"), ("supervised LoRA (reference)", "na_lora-shifted"))
    runs = {role: next(experiments.glob(f"{dataset}-{model}-*/0")) for role, model in roles}
    base = case / "datasets" if (case / "datasets").is_dir() else case.parents[1] / "replicas"
    stride = json.loads(next((case / "evaluation").glob("evaluation_*.json")).read_text())["stride"]
    argv = ["evaluate", *(f"{label}={run}" for label, run in runs.items()), "--data", dataset, "--base-path",
            str(base), "--stride", str(stride), "--out", str(out), "--quiet", "--no-figures"]  # fmt: skip
    began = time.perf_counter()
    cli(argv)
    seconds = time.perf_counter() - began
    return seconds, json.loads(next(out.glob("evaluation_*.json")).read_text())


def largest_difference(a: dict, b: dict) -> float:
    left, right = numbers(a), numbers(b)
    if left.keys() != right.keys():
        return math.inf
    return max((abs(left[k] - right[k]) / max(abs(left[k]), abs(right[k]), 1e-300) for k in left), default=0.0)


def model_rounds(changed: list[tuple[str, tuple[int, ...]]], rounds: int, repeats: int) -> dict[tuple, list[float]]:
    """Per (data, pass, rule) the times of every round: the rules alternated within each round."""
    times: dict[tuple[str, str, str], list[float]] = {}
    for round_ in range(rounds):
        for rule, gain in RULES.items():
            use_rule(gain)
            for label, shape in changed:
                for part, seconds in model_times(shape, repeats).items():
                    times.setdefault((label, part, rule), []).append(seconds)
            print(f"round {round_ + 1}/{rounds} {rule}: done", file=sys.stderr)
    return times


def evaluate_rounds(case: Path, dataset: str, rounds: int) -> dict[str, list[tuple[float, dict]]]:
    """Per rule, each round's `evaluate_case`: the rules alternated within each round."""
    evaluations: dict[str, list[tuple[float, dict]]] = {rule: [] for rule in RULES}
    with tempfile.TemporaryDirectory() as folder:
        for round_ in range(rounds):
            for index, (rule, gain) in enumerate(RULES.items()):
                use_rule(gain)
                evaluations[rule].append(evaluate_case(case, dataset, Path(folder) / f"r{round_}-{index}"))
                print(f"evaluate {rule}: {evaluations[rule][-1][0]:.1f} s", file=sys.stderr)
    return evaluations


def header(shown: str, rounds: int) -> list[str]:
    commit = subprocess.run(["git", "rev-parse", "--short=10", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "well_upao"], cwd=ROOT, capture_output=True, text=True)
    return [
        "# The neighborhood attention's tile rule, before and after",
        "",
        f"> `python benchmarks/performance/tile_rule.py {shown}` at {commit.stdout.strip()}"
        f"{' (with uncommitted changes to well_upao/)' if dirty.stdout.strip() else ''}; {cpu_model()}, "
        f"{torch.get_num_threads()} thread(s) (OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}), load "
        f"average {os.getloadavg()[0]:.1f} at the end. Before: `TILE_GAIN = inf` (every grid of at most "
        f"{attention.DENSE_TOKEN_LIMIT} tokens one dense masked SDPA, the earlier rule); after: the checkout's "
        f"`TILE_GAIN = {CHECKOUT_GAIN}`. Both in one process, alternated {rounds} times.",
    ]


def grid_table(grids: dict[str, set[tuple]]) -> list[str]:
    lines = [
        "## The tiny backbone's attention grids",
        "",
        "Every attention call of one forward (token grid: frames x tokens per axis), its query tile under each rule.",
        "",
        "| data | token grid | kernel | query tile before | query tile after |",
        "|---|---|---|---|---|",
    ]
    for label, found in grids.items():
        for grid, old, new in zip(sorted(found), *(tiles_under(g, found) for g in RULES.values()), strict=True):
            lines.append(f"| {label} | {' x '.join(map(str, grid[0]))} | {grid[1]} | {' x '.join(map(str, old))} | "
                         f"{' x '.join(map(str, new))} |")  # fmt: skip
    return lines


def timing_tables(repeats: int, changed, times, evaluations, case: Path | None, dataset: str | None) -> list[str]:
    before, after = RULES
    lines = [
        "## The tiny backbone, 8 windows of 8 frames, where the rules differ",
        "",
        f"The least of {repeats} calls per round, the median over the rounds.",
        "",
        "| data | pass | before (s) | after (s) | before / after |",
        "|---|---|---|---|---|",
    ]
    for label, _ in changed:
        for part in ("forward", "forward + backward"):
            b = statistics.median(times[(label, part, before)])
            a = statistics.median(times[(label, part, after)])
            lines.append(f"| {label} | {part} | {b:.3g} | {a:.3g} | {b / a:.2f}x |")
    if case is None:
        return lines
    b = statistics.median(s for s, _ in evaluations[before])
    a = statistics.median(s for s, _ in evaluations[after])
    difference = max(largest_difference(x, y) for (_, x) in evaluations[before] for (_, y) in evaluations[after])
    return [
        *lines,
        "",
        f"## `well-upao evaluate` of `{case.name}` of {dataset}",
        "",
        f"In this process, without figures, {len(evaluations[before])} round(s) per rule; the largest relative "
        "difference over every number of the two evaluations' JSON but the timings.",
        "",
        "| dataset | before (s) | after (s) | before / after | largest relative difference |",
        "|---|---|---|---|---|",
        f"| {dataset} | {b:.1f} | {a:.1f} | {b / a:.2f}x | {difference:.1e} |",
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--case", type=Path, help="a what-you-get case folder (<out>/<setting>/seed<S>)")
    parser.add_argument("--dataset", help="the case's dataset")
    parser.add_argument("--evaluate-rounds", type=int, default=1)
    parser.add_argument("--report", type=Path, default=ROOT / "reports" / "tile_rule.md")
    args = parser.parse_args(argv)
    if (args.case is None) != (args.dataset is None):
        parser.error("--case and --dataset go together")
    shown = " ".join(argv if argv is not None else sys.argv[1:])
    grids = {label: attention_grids(shape) for label, shape in GRIDS}
    differs = {label: len({tuple(tiles_under(g, grids[label])) for g in RULES.values()}) > 1 for label in grids}
    changed = [(label, shape) for label, shape in GRIDS if differs[label]]
    times = model_rounds(changed, args.rounds, args.repeats)
    evaluations = {} if args.case is None else evaluate_rounds(args.case, args.dataset, args.evaluate_rounds)
    use_rule(CHECKOUT_GAIN)
    lines = [*header(shown, args.rounds), "", *grid_table(grids), ""]
    lines += timing_tables(args.repeats, changed, times, evaluations, args.case, args.dataset)
    write_keeping_reading(args.report, lines)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
