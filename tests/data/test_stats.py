"""FieldStatistics against float64 numpy over the same data, fed in the ways the generator feeds it."""

import numpy as np
import pytest

from well_upao.data import stats as stats_module
from well_upao.data.stats import FieldStatistics


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
    monkeypatch.setattr(stats_module, "CHUNK_BYTES", 3 * 12 * 10 * 8)


def feed(stats: FieldStatistics, name: str, data: np.ndarray, layout: str) -> FieldStatistics:
    """Feed trajectories ``data`` whole, per trajectory, as two batches, or in time blocks of 4 with the frame
    before each block (the ways the generator's write units do)."""
    if layout == "whole":
        stats.update_trajectories(name, data)
    elif layout == "per_trajectory":
        for trajectory in data:
            stats.update_trajectories(name, trajectory[None])
    elif layout == "batched":
        stats.update_trajectories(name, data[:3])
        stats.update_trajectories(name, data[3:])
    else:
        for trajectory in data:
            for start in range(0, data.shape[1], 4):
                previous = trajectory[None, start - 1] if start else None
                stats.update_trajectories(name, trajectory[None, start : start + 4], previous)
    return stats


@pytest.mark.parametrize("layout", ["per_trajectory", "batched", "time_blocks"])
def test_statistics_equal_float64_numpy(layout, small_chunks):
    """A vector field of 4 trajectories, fed whole, as one batch, or in time blocks with the previous frame."""
    rng = np.random.default_rng(1)
    data = (rng.standard_normal((4, 9, 12, 10, 2)) * [1.0, 0.1] + [0.5, -2.0]).astype(np.float32)
    stats = feed(FieldStatistics({"velocity": (1, 2)}), "velocity", data, layout)
    check(stats, "velocity", reference(data), rtol=1e-12)


@pytest.mark.parametrize("layout", ["whole", "time_blocks"])
def test_float64_scalar_field_in_time_chunks_and_the_input_is_untouched(layout, small_chunks):
    """A scalar field in float64, as the replica simulators hand it over, long enough to be reduced in several time
    chunks: the increments across a chunk boundary are the data's own (a reduction that overwrote its input in place
    made the frame before each chunk ~0, so the increment there was the field itself: ``std_delta`` of a
    concentration near 1 came out 0.22 instead of 6e-4), and the caller's array is left as it was."""
    rng = np.random.default_rng(3)
    data = 1.0 + 1e-3 * rng.standard_normal((3, 11, 12, 10, 1))
    kept = data.copy()
    stats = feed(FieldStatistics({"concentration": (0, 1)}), "concentration", data, layout)
    np.testing.assert_array_equal(data, kept)
    check(stats, "concentration", reference(kept), rtol=1e-9)


def test_statistics_are_the_same_bits_however_the_data_arrives(monkeypatch):
    """Every feeding layout, chunk size and merge order gives byte-identical statistics (exact combination)."""
    rng = np.random.default_rng(5)
    data = (rng.standard_normal((4, 9, 12, 10, 2)) * [3.0, 1e-3] + [7.0, -2.0]).astype(np.float32)
    results = []
    for chunk_bytes in (3 * 12 * 10 * 8, 2**19):
        monkeypatch.setattr(stats_module, "CHUNK_BYTES", chunk_bytes)
        for layout in ("whole", "per_trajectory", "batched", "time_blocks"):
            results.append(feed(FieldStatistics({"velocity": (1, 2)}), "velocity", data, layout).as_yaml_dict())
        for order in ((0, 1, 2, 3), (3, 1, 0, 2)):  # one accumulator per trajectory, merged in two orders
            merged = FieldStatistics({"velocity": (1, 2)})
            for index in order:
                single = FieldStatistics({"velocity": (1, 2)})
                merged.merge(feed(single, "velocity", data[index : index + 1], "whole"))
            results.append(merged.as_yaml_dict())
    assert all(result == results[0] for result in results[1:])


def test_large_mean_does_not_cancel(small_chunks):
    """std of 1000 + 0.01 noise: naive float32 power sums lose it entirely (S2 - S1^2 / n ~ 1e6 n * 1e-7)."""
    rng = np.random.default_rng(2)
    data = (1000.0 + 0.01 * rng.standard_normal((2, 7, 12, 10, 1))).astype(np.float32)
    stats = FieldStatistics({"u": (0, 1)})
    stats.update_trajectories("u", data)
    check(stats, "u", reference(data), rtol=1e-9)


def test_merging_per_thread_statistics_equals_one_pass(small_chunks):
    """Two accumulators fed disjoint trajectories (as two evaluation threads are), merged, equal one over all."""
    rng = np.random.default_rng(4)
    data = (rng.standard_normal((5, 6, 12, 10, 2)) * [2.0, 0.5] + [3.0, -1.0]).astype(np.float32)
    first, second, merged = (FieldStatistics({"velocity": (1, 2)}) for _ in range(3))
    first.update_trajectories("velocity", data[:2])
    second.update_trajectories("velocity", data[2:])
    merged.merge(first)
    merged.merge(second)
    check(merged, "velocity", reference(data), rtol=1e-12)
