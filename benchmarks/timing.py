"""Shared timing helper of the benchmark scripts (run them from the repository root: python benchmarks/x.py)."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_time(function: Callable[[], object], repeats: int = 5) -> float:
    """Best wall-clock seconds of ``repeats`` calls after one warm-up call."""
    function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)
