"""Run the studies' harness commands, one logged child process each, several at once with a thread count each.

A study on this two-core machine runs fastest as two single-threaded children at a time (``--jobs 2 --threads 1``):
each then has a core, so a wall-clock budget (``trainer.max_minutes``) is close to the same CPU time, and
:func:`run_logged` measures it: the child's user + system CPU seconds (``os.wait4``), which a report states beside
the wall clock instead of assuming them equal.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

#: ``well-upao`` run by this interpreter: ``python -m well_upao.cli`` works where no console script was installed
#: beside it (a ``pip install --target``, as on the GPU machine)
WELL_UPAO = [sys.executable, "-m", "well_upao.cli"]


@dataclass(frozen=True)
class Finished:
    """A child that ended: exit code, wall-clock seconds and CPU seconds (user + system, its threads included)."""

    returncode: int
    wall_seconds: float
    cpu_seconds: float


def thread_env(env: dict, threads: int | None) -> dict:
    """``env`` with the intra-op thread count of torch (and its BLAS) set to ``threads`` (unchanged if None)."""
    if threads is None:
        return dict(env)
    count = str(threads)
    return dict(env, OMP_NUM_THREADS=count, MKL_NUM_THREADS=count, OPENBLAS_NUM_THREADS=count)


def run_logged(command: list[str], log: Path, env: dict, cwd: Path | None = None) -> Finished:
    """Run ``command`` with stdout and stderr in ``log``; its exit code, wall clock and CPU time."""
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.time()
    with open(log, "w") as stream:
        child = subprocess.Popen(command, env=env, stdout=stream, stderr=subprocess.STDOUT, cwd=cwd)
        _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    return Finished(child.returncode, time.time() - start, usage.ru_utime + usage.ru_stime)


def write_done(path: Path, finished: Finished, jobs: int, threads: int | None, **extra) -> None:
    """The marker of a finished row (JSON: wall clock, CPU seconds, how many rows ran at once and with how many
    threads, ``extra``), written to a temporary name and renamed, so that a marker that exists is complete."""
    record = {
        "wall_seconds": finished.wall_seconds,
        "cpu_seconds": finished.cpu_seconds,
        "jobs": jobs,
        "threads": threads,
        **extra,
    }
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(record) + "\n")
    tmp.replace(path)


def sharing_note(records: Iterable[dict], jobs: int, threads: int | None) -> str:
    """How rows shared the CPU, from their markers (``jobs``, ``threads``; the current command's values for markers
    written before they were recorded): "2 rows at a time, 1 thread each", or each combination found."""
    found = sorted({(r.get("jobs", jobs), r.get("threads", threads)) for r in records} or {(jobs, threads)}, key=str)

    def phrase(n: int, t: int | None) -> str:
        each = f"{t} thread{'s' * (t != 1)}" if t else "torch's default threads"
        return f"{n} row{'s' * (n != 1)} at a time, {each} each"

    return "; ".join(phrase(n, t) for n, t in found)


def run_all(tasks: Iterable[Callable[[], object]], jobs: int) -> list[object]:
    """Call every task, ``jobs`` at a time (in order when ``jobs`` is 1); their results in the tasks' order. The
    first failed task's exception is raised after every task has run (a failed row does not stop the others of a
    resumable study)."""
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(task) for task in list(tasks)]
        pool.shutdown(wait=True)
        return [future.result() for future in futures]


def add_study_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments every resumable study shares: how runs share the CPU, how many to start, and analysis alone."""
    parser.add_argument("--jobs", type=int, default=1, help="runs at once")
    parser.add_argument("--threads", type=int, default=None, help="torch threads per run (default: torch's)")
    parser.add_argument("--max-runs", type=int, default=None, help="start at most this many new runs")
    parser.add_argument("--stop-after-minutes", type=float, default=None, help="start no new run after this")
    parser.add_argument("--analyse-only", action="store_true")


def study_arguments(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """Parse a study's command line (:func:`add_study_arguments` added): the arguments as typed (``argv``, for the
    report), ``out`` resolved, and the ``deadline`` after which no run starts."""
    args = parser.parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else list(argv)
    args.out = args.out.resolve()
    args.deadline = None if args.stop_after_minutes is None else time.time() + 60 * args.stop_after_minutes
    return args


def run_study_case(args: argparse.Namespace, name: str, folder: Path, command: list[str], base: Path) -> None:
    """One run of a resumable study (``args``: :func:`study_arguments`) in ``folder``: not started past the
    deadline; an unfinished earlier attempt there (no ``done.json``) removed first, its run folder would shadow the new
    one; ``command`` run niced with ``WELL_BASE_PATH=base``, wandb off and ``args.threads``, logged to ``train.log``;
    ``done.json`` written when it exits 0."""
    if args.deadline and time.time() > args.deadline:
        print(f"{name}: deadline reached, not started", flush=True)
        return
    if folder.exists():
        shutil.rmtree(folder)
    env = thread_env(dict(os.environ, WELL_BASE_PATH=str(base), WANDB_MODE="disabled"), args.threads)
    finished = run_logged(["nice", "-n", "10", *command], folder / "train.log", env, cwd=folder)
    print(f"{name}: exit {finished.returncode} in {finished.wall_seconds:.0f} s "
          f"({finished.cpu_seconds:.0f} CPU s)", flush=True)  # fmt: skip
    if finished.returncode == 0:
        write_done(folder / "done.json", finished, args.jobs, args.threads, command=command[1:])
