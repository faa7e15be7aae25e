"""Streaming per-component statistics for the Well's ``stats.yaml``.

The Well's z-score / RMS normalisations read ``mean, std, rms`` of every field and ``mean_delta, std_delta,
rms_delta`` of its one-step increments ``u(t + dt) - u(t)``, per tensor component (a list of length D for a
vector field).

Each block of frames is reduced to power sums ``n, S1 = sum (x - s), S2 = sum (x - s)^2`` about a fixed shift
``s`` (the first frame's mean when it exceeds the spread, so that ``S2 - S1^2 / n`` does not cancel; else 0) and
merged into ``(count, mean, M2)`` with Chan et al.'s pairwise update. Generation produces data about as fast as
the disk takes it, so the reduction is arranged for speed: frames are processed in chunks that stay in the CPU
cache (``CHUNK_BYTES``), squares and increments go to scratch buffers that are reused instead of allocated, sums
are BLAS products (with a ones vector, or row dot products for squares of one-component fields), and the
increments' sum telescopes to ``last - first`` frame.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

#: float32 bytes of frames reduced at a time (the chunk, its shifted square and its increments stay in L2)
CHUNK_BYTES = 2**20
#: at most this many points per component are summed side by side (columns of one BLAS product)
SUM_WIDTH = 1024


def component_sums(values: np.ndarray) -> np.ndarray:
    """Per-component sums ``(C,)`` in float64 of a C-contiguous array ``(..., C)``.

    The array is viewed as a matrix of ``W C`` columns (``W = gcd(number of points, SUM_WIDTH)``) whose rows are
    summed by one product with a ones vector in the input precision (short partial sums), then the ``W`` columns
    of each component by a float64 product. (numpy's own ``sum(axis=0)`` over rows of length C is 20-30x slower.)
    """
    components = values.shape[-1]
    points = values.size // components
    width = math.gcd(points, SUM_WIDTH)
    rows = values.reshape(points // width, width * components)
    column_sums = np.ones(rows.shape[0], dtype=values.dtype) @ rows
    return np.ones(width) @ column_sums.astype(np.float64).reshape(width, components)


def component_square_sums(values: np.ndarray, scratch: np.ndarray) -> np.ndarray:
    """Per-component sums of squares ``(C,)`` in float64 of a C-contiguous array ``(..., C)``.

    One component: batched dot products of rows of ``gcd(number of points, SUM_WIDTH)`` values (one read, no
    writes, short float32 sums), added in float64. Several components: squares into ``scratch`` (same shape as
    ``values``, may be ``values`` itself), then :func:`component_sums`.
    """
    if values.shape[-1] > 1:
        return component_sums(np.square(values, out=scratch))
    width = math.gcd(values.size, SUM_WIDTH)
    rows = values.reshape(values.size // width, width)
    return np.array([np.matmul(rows[:, None, :], rows[:, :, None]).sum(dtype=np.float64)])


@dataclass
class RunningMoments:
    """Count, mean and sum of squared deviations (M2) per component.

    A block arrives as power sums ``(n, S1, S2)`` of ``x - s`` about a shift ``s``; its own mean is
    ``s + S1 / n`` and ``M2_b = S2 - S1^2 / n``. Blocks merge with Chan et al.'s pairwise update
    ``M2 = M2_a + M2_b + delta^2 n_a n_b / (n_a + n_b)``, so large means across blocks do not cancel.
    """

    n_components: int
    count: int = 0
    mean: np.ndarray = field(default=None)  # type: ignore[assignment]
    m2: np.ndarray = field(default=None)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        self.mean = np.zeros(self.n_components)
        self.m2 = np.zeros(self.n_components)

    def update_sums(self, n_b: int, s1: np.ndarray, s2: np.ndarray, shift: np.ndarray | float = 0.0) -> None:
        """Add a block given by its count and the sums of ``x - shift`` and of ``(x - shift)^2``."""
        if n_b == 0:
            return
        self.merge(n_b, np.asarray(shift, dtype=np.float64) + s1 / n_b, np.maximum(s2 - s1 * (s1 / n_b), 0.0))

    def merge(self, n_b: int, mean_b: np.ndarray, m2_b: np.ndarray) -> None:
        """Add a block (or another accumulator) given by its count, mean and M2."""
        if n_b == 0:
            return
        total = self.count + n_b
        delta = mean_b - self.mean
        self.mean = self.mean + delta * (n_b / total)
        self.m2 = self.m2 + m2_b + delta**2 * (self.count * n_b / total)
        self.count = total

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(self.m2 / max(self.count, 1))

    @property
    def rms(self) -> np.ndarray:
        return np.sqrt(self.m2 / max(self.count, 1) + self.mean**2)


class FieldStatistics:
    """Statistics of several fields and of their one-step increments, fed block by block.

    Not thread-safe: one instance owns scratch buffers and must be fed from one thread at a time.
    """

    def __init__(self, field_layout: dict[str, tuple[int, int]]):
        """``field_layout``: field name -> (tensor order, number of components)."""
        self.field_layout = dict(field_layout)
        self.values = {name: RunningMoments(d) for name, (_, d) in field_layout.items()}
        self.deltas = {name: RunningMoments(d) for name, (_, d) in field_layout.items()}
        self._shift: dict[str, np.ndarray | None] = {}
        self._scratch: dict[tuple, np.ndarray] = {}

    def update_trajectories(self, name: str, blocks: np.ndarray, previous_frames: np.ndarray | None = None) -> None:
        """Add ``blocks`` ``(B, T, ...)`` of field ``name``: the same time window of ``B`` trajectories.

        Increments are taken along ``T`` within each trajectory, and between ``previous_frames`` ``(B, ...)``
        (each trajectory's frame before the window, if given) and the window's first frame.
        """
        components = self.field_layout[name][1]
        n_traj, n_times = blocks.shape[:2]
        frames = np.ascontiguousarray(blocks).reshape(n_traj, n_times, -1, components)
        if previous_frames is not None:
            previous_frames = np.ascontiguousarray(previous_frames).reshape(n_traj, -1, components)
        if name not in self._shift:
            self._shift[name] = self._choose_shift(frames[0, 0])
        shift = self._shift[name]
        frame_size = frames[0, 0].size
        per_chunk = max(2, CHUNK_BYTES // (frame_size * frames.itemsize))
        # rectangles of whole trajectories (small frames) or of one trajectory's consecutive frames (large ones)
        traj_step, time_step = (max(1, per_chunk // n_times), n_times) if per_chunk >= n_times else (1, per_chunk)
        scratch = self._buffer(frames.dtype, (traj_step * (time_step + 1), *frames.shape[2:]))
        for b0 in range(0, n_traj, traj_step):
            b1 = min(b0 + traj_step, n_traj)
            for t0 in range(0, n_times, time_step):
                t1 = min(t0 + time_step, n_times)
                before = None if previous_frames is None else previous_frames[b0:b1]
                self._reduce_chunk(name, frames[b0:b1], t0, t1, before, shift, scratch)

    @staticmethod
    def _choose_shift(frame: np.ndarray) -> np.ndarray | None:
        """A whole frame ``(P, C)`` of the first frame's component means where a mean exceeds the spread (then
        ``S2 - S1^2 / n`` would cancel), else ``None``: no shift, one pass fewer over the data."""
        mean = frame.mean(axis=0, dtype=np.float64)
        if np.all(np.abs(mean) <= frame.std(axis=0, dtype=np.float64)):
            return None
        # a whole frame, so the subtraction runs over contiguous rows rather than rows of length C
        return np.ascontiguousarray(np.broadcast_to(mean.astype(frame.dtype), frame.shape))

    def _reduce_chunk(self, name, frames, t0, t1, previous_frames, shift, scratch) -> None:
        """Values ``frames[:, t0:t1]`` (minus the frame ``shift``, if any) and their increments (from frame
        ``t0 - 1``, or ``previous_frames``). The increments' sum telescopes to ``last - first`` frame."""
        n_traj, points = frames.shape[0], frames.shape[2]
        count = n_traj * (t1 - t0)
        window = frames[:, t0:t1].reshape(count, *frames.shape[2:])
        if shift is None:
            s1, s2 = component_sums(window), component_square_sums(window, scratch[:count])
            self.values[name].update_sums(count * points, s1, s2)
        else:
            shifted = np.subtract(window, shift, out=scratch[:count])
            s1, s2 = component_sums(shifted), component_square_sums(shifted, shifted)
            self.values[name].update_sums(count * points, s1, s2, shift[0])

        start = t0 - 1 if t0 > 0 else 0
        n_deltas = n_traj * (t1 - 1 - start)
        inner = scratch[:n_deltas].reshape(n_traj, t1 - 1 - start, *frames.shape[2:])
        np.subtract(frames[:, start + 1 : t1], frames[:, start : t1 - 1], out=inner)
        first = frames[:, start]
        if t0 == 0 and previous_frames is not None:
            np.subtract(frames[:, 0], previous_frames, out=scratch[n_deltas : n_deltas + n_traj])
            n_deltas += n_traj
            first = previous_frames
        if n_deltas:
            d1 = component_sums(np.subtract(frames[:, t1 - 1], first, dtype=np.float64))
            d2 = component_square_sums(scratch[:n_deltas], scratch[:n_deltas])
            self.deltas[name].update_sums(n_deltas * points, d1, d2)

    def _buffer(self, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
        """A reusable scratch array with the trailing dimensions of ``shape`` and at least ``shape[0]`` rows (grown,
        never shrunk); callers slice the rows they need."""
        key = (np.dtype(dtype).str, shape[1:])
        buffer = self._scratch.get(key)
        if buffer is None or buffer.shape[0] < shape[0]:
            buffer = self._scratch[key] = np.empty(shape, dtype=dtype)
        return buffer

    def merge(self, other: FieldStatistics) -> None:
        """Add everything ``other`` (same fields) has accumulated, e.g. from another thread."""
        for name in self.field_layout:
            for mine, theirs in ((self.values[name], other.values[name]), (self.deltas[name], other.deltas[name])):
                mine.merge(theirs.count, theirs.mean, theirs.m2)

    def as_yaml_dict(self) -> dict[str, dict[str, float | list[float]]]:
        """The six ``stats.yaml`` sections; scalar fields give floats, vector fields lists."""

        def pack(array: np.ndarray, order: int) -> float | list[float]:
            values = [float(v) for v in array]
            return values[0] if order == 0 else values

        out: dict[str, dict[str, float | list[float]]] = {
            key: {} for key in ("mean", "std", "rms", "mean_delta", "std_delta", "rms_delta")
        }
        for name, (order, _) in self.field_layout.items():
            moments, deltas = self.values[name], self.deltas[name]
            out["mean"][name] = pack(moments.mean, order)
            out["std"][name] = pack(moments.std, order)
            out["rms"][name] = pack(moments.rms, order)
            out["mean_delta"][name] = pack(deltas.mean, order)
            out["std_delta"][name] = pack(deltas.std, order)
            out["rms_delta"][name] = pack(deltas.rms, order)
        return out
