"""benchmarks/harness/bisection.py on closed forms: the smallest p with min(p / 3, 1) >= 0.8 is 2.4."""

from __future__ import annotations

import pytest
from harness.bisection import smallest_reaching


def test_the_smallest_parameter_reaching_the_target_is_the_closed_form():
    assert smallest_reaching(lambda p: min(p / 3, 1.0), 0.8) == pytest.approx(2.4, abs=1e-12)
    assert smallest_reaching(lambda p: 1.0, 0.8) == 0.0  # reached at 0 already
    assert smallest_reaching(lambda p: p / 100, 0.8) == pytest.approx(10.0)  # never reached: the top
