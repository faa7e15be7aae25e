"""``well-upao evaluate`` of one "What you get" case before and after a change, measured in one run (issue 76).

The case's seed-42 runs (``benchmarks/studies/what_you_get_study.py``'s folder: its UPAO and supervised runs, the
classical rows and the solver) are evaluated as ``benchmarks/performance/user_times.py`` times them (the same command
line, figures included, torch's default threads), each side in a child process with its package first on
``PYTHONPATH``: ``--before``'s package against this checkout's, alternated ``--rounds`` times. Printed and written:
each side's wall seconds (median over the rounds), their ratio, and the largest relative difference of the two
evaluations' numbers by path (timings left out), with the paths that differ most.

    python benchmarks/performance/evaluate_before_after.py --before b3182e5 --case RUNS/wyg/burgers1d/seed42 \\
        --setting burgers1d --report reports/solver_backtests.md --title "..."

Writes ``--report`` (its hand-written reading kept).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.readings import exit_if_stale, write_keeping_reading
from studies.what_you_get_study import BY_KEY

from performance.solver_speed import ROOT, assembled, cpu_model, git, package_at
from performance.tile_rule import numbers
from performance.user_times_commands import BY_NAME

#: paths listed under the table: the most different ones
SHOWN = 5


def evaluate_command(case: Path, setting: str, folder: Path) -> list[str]:
    """``user_times.py``'s ``evaluate-<setting>`` command line, run in ``folder`` (made here) beside a link ``wyg`` to
    the study folder that holds the case (``<study>/<setting>/seed42``), with this interpreter's ``well_upao.cli``
    in place of the ``well-upao`` script (so that ``PYTHONPATH`` picks the package)."""
    study = case.parents[1]
    if case != study / setting / "seed42":
        raise SystemExit(f"--case {case} is not a study's <setting>/seed42 folder for {setting}")
    folder.mkdir(parents=True)
    (folder / "wyg").symlink_to(study, target_is_directory=True)
    _, *arguments = BY_NAME[f"evaluate-{setting}"].argv
    return [sys.executable, "-m", "well_upao.cli", *arguments]


def evaluated(tree: Path, command: list[str], folder: Path) -> tuple[float, dict]:
    """The command in ``folder`` with the package at ``tree``: wall seconds and the evaluation JSON."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    began = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=folder)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"evaluate failed with the package at {tree}:\n{done.stderr[-3000:]}")
    return seconds, json.loads(next((folder / "evaluation").glob("evaluation_*.json")).read_text())


def differences(before: dict, after: dict) -> tuple[float, list[tuple[str, float]]]:
    """The largest relative difference of the two evaluations' numbers (timings left out; ``inf`` when their paths
    differ) and the paths that differ most."""
    left, right = numbers(before), numbers(after)
    if left.keys() != right.keys():
        return math.inf, [(path, math.inf) for path in sorted(left.keys() ^ right.keys())[:SHOWN]]
    relative = {k: abs(left[k] - right[k]) / max(abs(left[k]), abs(right[k]), 1e-300) for k in left}
    ranked = sorted(((k, v) for k, v in relative.items() if v > 0), key=lambda kv: -kv[1])
    return max(relative.values(), default=0.0), ranked[:SHOWN]


def measure(trees: dict[str, Path], case: Path, setting: str, rounds: int, folder: Path) -> tuple[dict, list[float]]:
    """Per side, each round's (seconds, evaluation), the sides alternated; the 1-minute load averages seen."""
    sides: dict[str, list] = {label: [] for label in trees}
    loads = [os.getloadavg()[0]]
    for round_ in range(rounds):
        for label, tree in trees.items():
            where = folder / f"{label}{round_}"
            sides[label].append(evaluated(tree, evaluate_command(case, setting, where), where))
            loads.append(os.getloadavg()[0])
            print(f"round {round_ + 1} {label}: {sides[label][-1][0]:.1f} s", file=sys.stderr)
    return sides, loads


def report(title: str, heading: str, sides: dict[str, list]) -> list[str]:
    seconds = {label: statistics.median(s for s, _ in runs) for label, runs in sides.items()}
    largest, ranked = differences(sides["before"][0][1], sides["after"][0][1])
    lines = [f"# {title}", "", heading, "", "| side | evaluate wall (s) |", "|---|---|"]
    lines += [f"| {label} | {value:.1f} |" for label, value in seconds.items()]
    lines += [
        "",
        f"Before / after: {seconds['before'] / seconds['after']:.2f}x. Largest relative difference of the two "
        f"evaluations' numbers (timings left out): {largest:.2g}.",
        "",
    ]
    if ranked:
        lines += ["| path | relative difference |", "|---|---|"]
        lines += [f"| `{path}` | {value:.2g} |" for path, value in ranked]
        lines.append("")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="the commit before the change")
    parser.add_argument("--case", type=Path, required=True, help="a what-you-get case folder (.../<setting>/seed42)")
    parser.add_argument("--setting", required=True, choices=sorted(BY_KEY))
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--report", type=Path, required=True)
    parser.add_argument("--title", required=True, help="the report's title")
    args = parser.parse_args(argv)
    before_commit, after_commit = git("rev-parse", "--short=10", args.before), git("rev-parse", "--short=10", "HEAD")
    dirty = bool(git("status", "--porcelain", "well_upao"))
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"before": package_at(args.before, Path(tmp)), "after": assembled(ROOT, Path(tmp) / "after")}
        sides, loads = measure(trees, args.case.absolute(), args.setting, args.rounds, Path(tmp) / "runs")
    given = shlex.join(argv if argv is not None else sys.argv[1:])
    heading = (
        f"> `python benchmarks/performance/evaluate_before_after.py {given}`: `well-upao evaluate` of the "
        f"{args.setting} case with the package at {before_commit} against this checkout at {after_commit}"
        f"{' (with uncommitted changes to well_upao/)' if dirty else ''}; {cpu_model()}, {os.cpu_count()} cores; "
        f"1-minute load average {min(loads):.1f} to {max(loads):.1f} while it ran; {args.rounds} round(s), sides "
        "alternated."
    )
    lines = report(args.title, heading, sides)
    print("\n".join(lines))
    write_keeping_reading(args.report, lines)
    exit_if_stale(args.report)


if __name__ == "__main__":
    main()
