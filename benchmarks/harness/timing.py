"""Shared timing helper of the benchmark scripts (run them from the repository root: python benchmarks/x.py)."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_time(
    function: Callable[[], object], repeats: int = 5, synchronize: Callable[[], object] | None = None
) -> float:
    """Best wall-clock seconds of ``repeats`` calls after one warm-up call. ``synchronize`` (e.g.
    ``torch.cuda.synchronize``) is called before each clock reading, so asynchronous device work is counted."""
    wait = synchronize or (lambda: None)
    function()
    times = []
    for _ in range(repeats):
        wait()
        start = time.perf_counter()
        function()
        wait()
        times.append(time.perf_counter() - start)
    return min(times)
