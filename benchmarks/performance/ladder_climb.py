"""The solver ladder climbed instead of scored whole, before and after, measured in one run (issue 76).

Before: ``well-upao evaluate --match-solver ROW`` (the quickstart's evaluation) scored every rung of the solver ladder
(RK4 with 1 to 256 sub-steps on the full grid, grid/2 and grid/4). After: each grid is climbed from its cheapest rung
until one settles the matched rows (``well_upao.evaluate.matched_solver.climb_ladder``). Both sides evaluate the same
quickstart folder (its zero-shot, UPAO and supervised checkpoints) in child processes with torch's default threads,
as the quickstart does, alternated ``--rounds`` times: ``--before``'s package against this checkout's. Printed and
written: the wall seconds of each side (median over the rounds) and their ratio, the rungs each scored, whether the
matched rows are the same rungs, and the largest relative difference of the rows' numbers (timings left out).

    python benchmarks/performance/ladder_climb.py --before b51cb00 --quickstart RUNS/quickstart

Writes ``reports/ladder_climb.md`` (its hand-written reading kept).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import fields
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.readings import exit_if_stale, write_keeping_reading

from performance.solver_speed import ROOT, assembled, cpu_model, git, package_at
from performance.tile_rule import TIMINGS, largest_difference
from well_upao.evaluate.matched_solver import climb_ladder, match_solvers
from well_upao.evaluate.results import Scores
from well_upao.predict.predictors import SolverStep
from well_upao.quickstart import UPAO_ROW

CASE = Path(__file__).with_name("ladder_case.py")


def evaluated(tree: Path, quickstart: Path, out: Path) -> tuple[float, dict]:
    """``ladder_case.py`` with the package at ``tree``: wall seconds and the evaluation JSON."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run(
        [sys.executable, str(CASE), str(quickstart), str(out)], env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"{CASE.name} failed with the package at {tree}:\n{done.stderr[-3000:]}")
    line = json.loads(done.stdout.strip().splitlines()[-1])
    return line["seconds"], json.loads(Path(line["evaluation"]).read_text())


def matched(result: dict) -> list[str]:
    return [row["name"] for row in result["scores"] if row["name"].startswith("solver, ")]


def rows_without_timings(rows: list[dict], matched_rows: bool = False) -> dict:
    """The rows without their timings, by name: the matched solver rows left out, or only those."""
    return {
        row["name"]: {k: v for k, v in row.items() if k not in TIMINGS}
        for row in rows
        if row["name"].startswith("solver, ") == matched_rows
    }


def as_scores(row: dict) -> Scores:
    return Scores(**{f.name: row[f.name] for f in fields(Scores)})


def replayed(result: dict) -> tuple[int, bool]:
    """The climb replayed on a whole ladder's measured scores: the rungs it scores, and whether ``match_solvers``
    picks the same rungs from them as from the whole ladder (the same timings on both sides, so any difference is
    the climb's)."""
    ladder = [as_scores(row) for row in result["solver_ladder"]]
    by_name = {s.name: s for s in ladder}
    reference = next(as_scores(row) for row in result["scores"] if row["name"] == UPAO_ROW)
    steps = [SolverStep(None, s.notes["substeps"], s.notes["coarsen"], name=s.name) for s in ladder]
    climbed = climb_ladder(steps, reference, lambda rungs: [by_name[r.name] for r in rungs])
    whole, part = match_solvers(ladder, reference), match_solvers([by_name[r.name] for r in climbed], reference)
    return len(climbed), [r.name for r in whole.rows()] == [r.name for r in part.rows()]


def measure(before: Path, after: Path, quickstart: Path, rounds: int) -> tuple[dict[str, list], list[float]]:
    """Per side, each round's (seconds, evaluation); the 1-minute load averages seen."""
    sides: dict[str, list] = {"before": [], "after": []}
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(rounds):
            for label, tree in (("before", before), ("after", after)):
                sides[label].append(evaluated(tree, quickstart, Path(tmp) / f"{label}{round_}"))
                loads.append(os.getloadavg()[0])
                print(f"round {round_ + 1} {label}: {sides[label][-1][0]:.1f} s", file=sys.stderr)
    return sides, loads


def report(sides: dict[str, list], heading: str) -> list[str]:
    seconds = {label: statistics.median(s for s, _ in runs) for label, runs in sides.items()}
    first = {label: runs[0][1] for label, runs in sides.items()}
    rungs = {label: len(result["solver_ladder"]) for label, result in first.items()}
    same = matched(first["before"]) == matched(first["after"])
    before, after = first["before"], first["after"]
    difference = largest_difference(rows_without_timings(before["scores"]), rows_without_timings(after["scores"]))
    common = {row["name"] for row in after["solver_ladder"]}
    rungs_difference = largest_difference(
        rows_without_timings([r for r in before["solver_ladder"] if r["name"] in common], matched_rows=False),
        rows_without_timings(after["solver_ladder"], matched_rows=False),
    )
    replay_rungs, replay_same = replayed(before)
    lines = [
        "# The solver ladder climbed, before and after (issue 76)",
        "",
        heading,
        "",
        "| side | evaluate wall (s) | rungs scored | matched rows |",
        "|---|---|---|---|",
    ]
    for label in ("before", "after"):
        lines.append(f"| {label} | {seconds[label]:.1f} | {rungs[label]} | {'; '.join(matched(first[label]))} |")
    lines += [
        "",
        f"Before / after: {seconds['before'] / seconds['after']:.2f}x. The matched rows are "
        f"{'the same rungs' if same else 'different rungs'} in the two runs (each picked by that run's own "
        "timings). The largest relative difference of the other rows' numbers (timings left out): "
        f"{difference:.2g}; of the rungs both scored: {rungs_difference:.2g}.",
        "",
        f"The climb replayed on the before side's whole ladder with its measured timings scores {replay_rungs} of its "
        f"{rungs['before']} rungs, and the match rule picks {'the same' if replay_same else 'different'} rungs from "
        "them as from the whole ladder.",
        "",
    ]
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="the commit before the change")
    parser.add_argument("--quickstart", type=Path, required=True, help="a quickstart's output folder")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--report", type=Path, default=ROOT / "reports" / "ladder_climb.md")
    args = parser.parse_args(argv)
    before_commit, after_commit = git("rev-parse", "--short=10", args.before), git("rev-parse", "--short=10", "HEAD")
    dirty = bool(git("status", "--porcelain", "well_upao"))
    with tempfile.TemporaryDirectory() as tmp:
        trees = package_at(args.before, Path(tmp)), assembled(ROOT, Path(tmp) / "after")
        sides, loads = measure(*trees, args.quickstart.resolve(), args.rounds)
    given = " ".join(argv if argv is not None else sys.argv[1:])
    heading = (
        f"> `python benchmarks/performance/ladder_climb.py {given}`: the package at {before_commit} against this "
        f"checkout at {after_commit}{' (with uncommitted changes to well_upao/)' if dirty else ''}; {cpu_model()}, "
        f"{os.cpu_count()} cores; 1-minute load average {min(loads):.1f} to {max(loads):.1f} while it ran; "
        f"{args.rounds} round(s), sides alternated."
    )
    lines = report(sides, heading)
    print("\n".join(lines))
    write_keeping_reading(args.report, lines)
    exit_if_stale(args.report)


if __name__ == "__main__":
    main()
