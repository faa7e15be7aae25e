"""The quickstart's two harness runs before and after the issue-76 speed-ups, measured in one run.

1. The code (``--before``'s package against this checkout's, each first on ``PYTHONPATH`` of a child process,
   alternated ``--rounds`` times so both see the same load; one thread, the share each run gets on two cores):
   ``quickstart_case.py`` times each run's parts at the quickstart's settings (its harness command, ``+seed=0`` so
   that the adapters start the same): the process's start, the validation before training, an optimizer step (the
   mean of ``--steps``) and a validation after them; and prints the validations' criteria, which must agree.
2. The schedule (this checkout's package): both runs of ``trainer.epochs=1`` and ``trainer.epoch_steps=--steps``
   one after the other with the threads torch takes by default (the quickstart before) against both at the same
   time with ``run_threads`` threads each (after): the wall seconds of the pair.

    python benchmarks/performance/quickstart_speed.py --before 5c7e392

Writes ``reports/quickstart_speed.md``; the numbers depend on the machine's load, which it records.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from performance.solver_speed import ROOT, assembled, cpu_model, git, package_at
from well_upao.quickstart import RUNS, QuickstartConfig, generate_data, harness_command, run_threads

CASE = Path(__file__).with_name("quickstart_case.py")
#: the report's section written by hand (where the time went), kept when the script rewrites the report
KEPT = "## Where the time went"
PARTS = ("start", "validation before training", "optimizer step", "validation")


def overrides(config: QuickstartConfig, run: tuple[str, str], base: Path, experiments: Path) -> list[str]:
    """The quickstart's harness overrides for ``run`` (``harness_command`` without its interpreter and module)."""
    return harness_command(config, *run, base, experiments)[3:]


def environment(tree: Path | None, threads: int | None, base: Path) -> dict:
    env = dict(os.environ, WELL_BASE_PATH=str(base), WANDB_MODE="disabled")
    env.pop("OMP_NUM_THREADS", None)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
    return env


def parts(tree: Path, config: QuickstartConfig, run: tuple[str, str], base: Path, folder: Path, steps: int) -> dict:
    """``quickstart_case.py`` with the package at ``tree``, one thread, in a folder of its own."""
    folder.mkdir(parents=True)
    command = [sys.executable, str(CASE), str(steps), *overrides(config, run, base, folder / "experiments"), "+seed=0"]
    done = subprocess.run(command, env=environment(tree, 1, base), cwd=folder, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{CASE.name} failed with the package at {tree}:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def schedule(config: QuickstartConfig, base: Path, folder: Path, steps: int, together: bool) -> float:
    """Wall seconds of both harness runs (one epoch of ``steps`` steps): at the same time with ``run_threads``
    threads each, or one after the other with torch's default threads."""
    config = QuickstartConfig(**{**config.__dict__, "epochs": 1})
    threads = run_threads(len(RUNS)) if together else None
    commands = []
    for index, run in enumerate(RUNS):
        cwd = folder / f"{'together' if together else 'apart'}{index}"
        cwd.mkdir(parents=True)
        command = [sys.executable, "-m", "the_well.benchmark.train"]
        command += [*overrides(config, run, base, cwd / "experiments"), f"trainer.epoch_steps={steps}"]
        commands.append((command, cwd))
    started = time.perf_counter()
    if together:
        processes = [
            subprocess.Popen(c, env=environment(None, threads, base), cwd=cwd, stdout=subprocess.DEVNULL)
            for c, cwd in commands
        ]
        codes = [process.wait() for process in processes]
    else:
        codes = [
            subprocess.run(c, env=environment(None, None, base), cwd=cwd, stdout=subprocess.DEVNULL).returncode
            for c, cwd in commands
        ]
    if any(codes):
        raise SystemExit(f"a harness run failed (codes {codes}) under {folder}")
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="the commit before the change")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--steps", type=int, default=6, help="optimizer steps per measured run")
    parser.add_argument("--report", type=Path, default=ROOT / "reports" / "quickstart_speed.md")
    args = parser.parse_args(argv)
    before_commit, after_commit = git("rev-parse", "--short=10", args.before), git("rev-parse", "--short=10", "HEAD")
    dirty = bool(git("status", "--porcelain", "well_upao"))
    config = QuickstartConfig()
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        base = generate_data(config, folder / "datasets")
        trees = {"before": package_at(args.before, folder), "after": assembled(ROOT, folder / "after")}
        measured: dict[tuple[str, str], dict[str, list[dict]]] = {run: {"before": [], "after": []} for run in RUNS}
        for round_ in range(args.rounds):
            for run in RUNS:
                for label, tree in trees.items():
                    where = folder / f"{label}-{'-'.join(run)}-{round_}"
                    measured[run][label].append(parts(tree, config, run, base, where, args.steps))
                    loads.append(os.getloadavg()[0])
                    print(f"round {round_ + 1} {'/'.join(run)} {label}: {measured[run][label][-1]}", file=sys.stderr)
        apart = schedule(config, base, folder / "schedule", args.steps, together=False)
        loads.append(os.getloadavg()[0])
        together = schedule(config, base, folder / "schedule", args.steps, together=True)
        loads.append(os.getloadavg()[0])
    given = " ".join(argv if argv is not None else sys.argv[1:])
    heading = (
        f"> `python benchmarks/performance/quickstart_speed.py {given}`: the package at {before_commit} against this "
        f"checkout at {after_commit}{' (with uncommitted changes to well_upao/)' if dirty else ''}; {cpu_model()}, "
        f"{run_threads(1)} cores; 1-minute load average {min(loads):.1f} to {max(loads):.1f} while it ran (other work "
        "on the machine: the same for both sides of each ratio only on average)."
    )
    text = report_text(heading, measured, args, apart, together)
    kept = args.report.read_text() if args.report.is_file() else ""
    if KEPT in kept:  # the written-by-hand profile below the measurement stays
        text += "\n" + kept[kept.index(KEPT) :]
    args.report.write_text(text)
    print(text)


def report_text(heading: str, measured: dict, args: argparse.Namespace, apart: float, together: float) -> str:
    """The report's tables: each run's parts before and after, whether their criteria agree, and the schedule."""
    lines = [
        "# The quickstart's harness runs, before and after (issue 76)",
        "",
        heading,
        "",
        f"## The code: one thread, the quickstart's settings, +seed=0 (median of {args.rounds} alternated children)",
        "",
        "| run | part | before (s) | after (s) | before / after |",
        "|---|---|---|---|---|",
    ]
    agree = []
    for run, sides in measured.items():
        for part in PARTS:
            before = statistics.median(r[part] for r in sides["before"])
            after = statistics.median(r[part] for r in sides["after"])
            lines.append(f"| {'/'.join(run)} | {part} | {before:.3g} | {after:.3g} | {before / after:.2f}x |")
        criteria = [tuple(r["criteria"]) for r in sides["before"] + sides["after"]]
        agree.append(f"{'/'.join(run)}: {'the same' if len(set(criteria)) == 1 else 'DIFFERENT'} ({criteria[0]})")
    lines += [
        "",
        f"Validation criteria (before training, after {args.steps} steps), before and after: {'; '.join(agree)}.",
        "",
        f"## The schedule: both runs, one epoch of {args.steps} steps each (this checkout's package)",
        "",
        "| one after the other, torch's default threads (s) | at the same time, "
        f"{run_threads(len(RUNS))} thread(s) each (s) | ratio |",
        "|---|---|---|",
        f"| {apart:.1f} | {together:.1f} | {apart / together:.2f}x |",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
