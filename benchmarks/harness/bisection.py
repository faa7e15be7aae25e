"""The smallest parameter that reaches a target, by bisection: the calibration studies fit each interval spread as
the smallest that covers a share of the tuned cells (``studies/expected_error_study.py``,
``studies/expected_rule3_study.py``)."""

from __future__ import annotations

from collections.abc import Callable


def smallest_reaching(measure: Callable[[float], float], target: float, top: float = 10.0) -> float:
    """The smallest ``p`` in ``[0, top]`` with ``measure(p) >= target`` (``measure`` non-decreasing in ``p``), to 60
    halvings; 0 where ``measure(0)`` already reaches it."""
    low, high = 0.0, top
    if measure(low) >= target:
        return 0.0
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (low, middle) if measure(middle) >= target else (middle, high)
    return high
