"""Run the studies' harness commands, one logged child process each, several at once with a thread count each.

A study on this two-core machine runs fastest as two single-threaded children at a time (``--jobs 2 --threads 1``):
each then has a core, so a wall-clock budget (``trainer.max_minutes``) is close to the same CPU time, and
:func:`run_logged` measures it: the child's user + system CPU seconds (``os.wait4``), which a report states beside
the wall clock instead of assuming them equal.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path


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


def run_all(tasks: Iterable[Callable[[], object]], jobs: int) -> list[object]:
    """Call every task, ``jobs`` at a time (in order when ``jobs`` is 1); their results in the tasks' order. With
    several jobs, the first task's exception is raised after every task has run (a failed row does not stop the
    others of a resumable study)."""
    tasks = list(tasks)
    if jobs <= 1:
        return [task() for task in tasks]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(task) for task in tasks]
        return [future.result() for future in futures]
