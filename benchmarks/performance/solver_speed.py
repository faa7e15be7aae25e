"""The solver row's step before and after a change, measured in one run: ``solver_case.py`` in child processes, one
with the package of ``--before`` (its ``well_upao/`` from ``git archive``) first on ``PYTHONPATH``, one with this
checkout's, alternated ``--rounds`` times so both see the same load; per case the median of the rounds' times, the
ratio before / after, and the largest relative difference of the results' checksums (the same values to round-off,
or the change is not a speed-up).

    python benchmarks/performance/solver_speed.py --before 8efe7c3

Writes ``reports/solver_speed.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CASE = Path(__file__).with_name("solver_case.py")


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


#: the checkout's folders that the install puts inside the package (pyproject.toml's package-dir)
INSTALLED_INSIDE = {"datasets_exact": "datasets_exact", "configs": "configs"}


def assembled(source: Path, tree: Path) -> Path:
    """The package as the install lays it out (``well_upao/`` with ``datasets_exact/`` and ``configs/`` inside),
    copied from the checkout ``source`` into ``tree``; returns the folder to put on ``PYTHONPATH``."""
    shutil.copytree(source / "well_upao", tree / "well_upao", ignore=shutil.ignore_patterns("__pycache__"))
    for folder, inside in INSTALLED_INSIDE.items():
        shutil.copytree(source / folder, tree / "well_upao" / inside, ignore=shutil.ignore_patterns("__pycache__"))
    return tree


def package_at(revision: str, folder: Path) -> Path:
    """The package as it was at ``revision``, unpacked and assembled under ``folder``."""
    archive = folder / f"{revision}.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "archive", revision, "well_upao", *INSTALLED_INSIDE], cwd=ROOT, stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(folder / "checkout", filter="data")
    return assembled(folder / "checkout", folder / "before")


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").is_file() else []:
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def timed(tree: Path, repeats: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    done = subprocess.run([sys.executable, str(CASE), str(repeats)], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{CASE.name} failed with the package at {tree}:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="the commit before the change")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3, help="calls per child; the least is its time")
    parser.add_argument("--report", type=Path, default=ROOT / "reports" / "solver_speed.md")
    args = parser.parse_args(argv)
    before_commit, after_commit = git("rev-parse", "--short=10", args.before), git("rev-parse", "--short=10", "HEAD")
    dirty = bool(git("status", "--porcelain", "well_upao"))
    with tempfile.TemporaryDirectory() as folder:
        before_tree = package_at(args.before, Path(folder))
        after_tree = assembled(ROOT, Path(folder) / "after")
        runs: dict[str, list[dict]] = {"before": [], "after": []}
        for round_ in range(args.rounds):
            for label, tree in (("before", before_tree), ("after", after_tree)):
                runs[label].append(timed(tree, args.repeats))
                print(f"round {round_ + 1}/{args.rounds} {label}: {runs[label][-1]}", file=sys.stderr)
    load = os.getloadavg()
    lines = [
        "# The solver row's step, before and after",
        "",
        f"> `python benchmarks/performance/solver_speed.py {' '.join(argv if argv is not None else sys.argv[1:])}`: "
        f"the package at {before_commit} against this checkout at {after_commit}"
        f"{' (with uncommitted changes to well_upao/)' if dirty else ''}; {cpu_model()}, "
        f"one thread, load average {load[0]:.1f} at the end (the two alternate, so both see the same load). "
        f"`benchmarks/performance/solver_case.py`: one `PDESolver.step` of 2 smooth random states on a periodic "
        f"64^2 grid, the least of {args.repeats} calls per child; the median over {args.rounds} children.",
        "",
        "| case | sub-steps | before (s) | after (s) | before / after | largest relative checksum difference |",
        "|---|---|---|---|---|---|",
    ]
    for case in runs["after"][0]:
        before = statistics.median(r[case]["seconds"] for r in runs["before"])
        after = statistics.median(r[case]["seconds"] for r in runs["after"])
        sums = [r[case]["checksum"] for r in runs["before"] + runs["after"]]
        spread = (max(sums) - min(sums)) / max(abs(s) for s in sums)
        substeps = sorted({r[case]["substeps"] for r in runs["before"] + runs["after"]})
        lines.append(
            f"| {case} | {', '.join(map(str, substeps))} | {before:.3g} | {after:.3g} | {before / after:.2f}x | "
            f"{spread:.1e} |"
        )
    text = "\n".join(lines) + "\n"
    args.report.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
