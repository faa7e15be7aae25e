"""FieldStatistics against float64 numpy over the same data, fed in the ways the generator feeds it."""

import numpy as np
import pytest

from well_upao.data import stats as stats_module
from well_upao.data.stats import FieldStatistics, component_square_sums, component_sums


def reference(trajectories: np.ndarray) -> dict[str, np.ndarray]:
    """mean/std/rms of values and one-step increments per component, float64, trajectories ``(B, T, ..., C)``."""
    values = trajectories.astype(np.float64)
    deltas = np.diff(values, axis=1)
    out = {}
    for prefix, data in (("", values), ("_delta", deltas)):
        flat = data.reshape(-1, data.shape[-1])
        out["mean" + prefix] = flat.mean(axis=0)
        out["std" + prefix] = flat.std(axis=0)
        out["rms" + prefix] = np.sqrt((flat**2).mean(axis=0))
    return out


def check(stats: FieldStatistics, name: str, expected: dict[str, np.ndarray], rtol: float) -> None:
    got = stats.as_yaml_dict()
    for key, value in expected.items():
        scale = np.abs(expected["std" if "delta" not in key else "std_delta"])
        np.testing.assert_allclose(
            np.atleast_1d(got[key][name]), value, rtol=rtol, atol=rtol * scale.max(), err_msg=key
        )


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of a few frames, so that chunk boundaries fall inside every trajectory."""
    monkeypatch.setattr(stats_module, "CHUNK_BYTES", 3 * 12 * 10 * 4)


def test_component_sums_match_float64():
    rng = np.random.default_rng(0)
    frames = rng.standard_normal((5, 96, 3)).astype(np.float32)  # 96 points: gcd with SUM_WIDTH is 32
    np.testing.assert_allclose(component_sums(frames), frames.astype(np.float64).sum(axis=(0, 1)), rtol=1e-5)


@pytest.mark.parametrize("components", [1, 3])
def test_component_square_sums_match_float64(components):
    rng = np.random.default_rng(3)
    values = (rng.standard_normal((7, 96, components)) + 2.0).astype(np.float32)
    expected = np.square(values.astype(np.float64)).sum(axis=(0, 1))
    np.testing.assert_allclose(component_square_sums(values.copy(), np.empty_like(values)), expected, rtol=1e-6)


@pytest.mark.parametrize("layout", ["per_trajectory", "batched", "time_blocks"])
def test_statistics_equal_float64_numpy(layout, small_chunks):
    """A vector field of 4 trajectories, fed whole, as one batch, or in time blocks with the previous frame."""
    rng = np.random.default_rng(1)
    data = (rng.standard_normal((4, 9, 12, 10, 2)) * [1.0, 0.1] + [0.5, -2.0]).astype(np.float32)
    stats = FieldStatistics({"velocity": (1, 2)})
    if layout == "per_trajectory":
        for trajectory in data:
            stats.update_trajectories("velocity", trajectory[None])
    elif layout == "batched":
        stats.update_trajectories("velocity", data[:3])
        stats.update_trajectories("velocity", data[3:])
    else:
        for trajectory in data:
            for start in range(0, 9, 4):
                previous = trajectory[start - 1] if start else None
                previous = None if previous is None else previous[None]
                stats.update_trajectories("velocity", trajectory[None, start : start + 4], previous)
    check(stats, "velocity", reference(data), rtol=1e-5)


def test_large_mean_does_not_cancel(small_chunks):
    """std of 1000 + 0.01 noise: naive float32 power sums lose it entirely (S2 - S1^2 / n ~ 1e6 n * 1e-7)."""
    rng = np.random.default_rng(2)
    data = (1000.0 + 0.01 * rng.standard_normal((2, 7, 12, 10, 1))).astype(np.float32)
    stats = FieldStatistics({"u": (0, 1)})
    stats.update_trajectories("u", data)
    check(stats, "u", reference(data), rtol=1e-4)


def test_merging_per_thread_statistics_equals_one_pass(small_chunks):
    """Two accumulators fed disjoint trajectories (as two evaluation threads are), merged, equal one over all."""
    rng = np.random.default_rng(4)
    data = (rng.standard_normal((5, 6, 12, 10, 2)) * [2.0, 0.5] + [3.0, -1.0]).astype(np.float32)
    first, second, merged = (FieldStatistics({"velocity": (1, 2)}) for _ in range(3))
    first.update_trajectories("velocity", data[:2])
    second.update_trajectories("velocity", data[2:])
    merged.merge(first)
    merged.merge(second)
    check(merged, "velocity", reference(data), rtol=1e-5)
