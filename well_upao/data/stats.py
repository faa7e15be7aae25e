"""Per-component statistics for the Well's ``stats.yaml``, with the same bits however the data arrives.

The Well's z-score / RMS normalisations read ``mean, std, rms`` of every field and ``mean_delta, std_delta,
rms_delta`` of its one-step increments ``u(t + dt) - u(t)``, per tensor component (a list of length D for a
vector field).

Every frame, and every increment between two consecutive frames, is reduced on its own in float64 to its sum
``s_f`` and the sum of squared deviations from its own mean ``m2_f`` (two passes; numpy's pairwise summation over
one contiguous row per component). The frames are then combined with ``math.fsum``, which returns the correctly
rounded *exact* sum in any order, through the exact decomposition of the total sum of squared deviations:

    N = sum_f n_f,    mean = fsum(s_f) / N,    M2 = fsum(m2_f) + fsum(n_f (s_f / n_f - mean)^2)

So the statistics depend only on the stored values: not on how frames were batched, cut into time blocks, spread
over threads or ordered, nor on the x86 CPU model (no BLAS, no accumulation whose order a kernel chooses; other
architectures are untested). Centring each
frame on its own mean also keeps a large mean from cancelling a small spread.

Frames are processed in chunks that fit the CPU cache (``CHUNK_BYTES`` of float64 per array).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

#: float64 bytes of one chunk of frames (the chunk and its increments stay in L2)
CHUNK_BYTES = 2**19


@dataclass
class FrameSums:
    """Per-frame reductions of one field: ``sums`` and ``m2`` of shape ``(frames, components)``, ``points`` values
    per frame and component."""

    points: int
    sums: list[np.ndarray] = field(default_factory=list)
    m2: list[np.ndarray] = field(default_factory=list)

    def add_frames(self, frames: np.ndarray) -> None:
        """Reduce float64 ``frames`` ``(F, C, P)`` (overwritten) frame by frame."""
        sums = np.add.reduce(frames, axis=-1)
        frames -= (sums / self.points)[..., None]
        np.square(frames, out=frames)
        self.sums.append(sums)
        self.m2.append(np.add.reduce(frames, axis=-1))

    def extend(self, other: FrameSums) -> None:
        self.sums += other.sums
        self.m2 += other.m2

    def moments(self, components: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(mean, std, rms)`` per component over every frame added (zeros when there is none)."""
        mean, std, rms = np.zeros(components), np.zeros(components), np.zeros(components)
        if not self.sums:
            return mean, std, rms
        sums, m2 = np.concatenate(self.sums), np.concatenate(self.m2)
        count = self.points * sums.shape[0]
        for c in range(components):
            mean[c] = math.fsum(sums[:, c]) / count
            deviation = sums[:, c] / self.points - mean[c]
            total_m2 = math.fsum(m2[:, c]) + math.fsum(self.points * deviation * deviation)
            std[c] = math.sqrt(total_m2 / count)
            rms[c] = math.sqrt(total_m2 / count + mean[c] ** 2)
        return mean, std, rms


class FieldStatistics:
    """Statistics of several fields and of their one-step increments, fed block by block (see the module docstring).

    One instance per thread; ``merge`` combines them (in any order, with the same result).
    """

    def __init__(self, field_layout: dict[str, tuple[int, int]]):
        """``field_layout``: field name -> (tensor order, number of components)."""
        self.field_layout = dict(field_layout)
        self.values: dict[str, FrameSums] = {}
        self.deltas: dict[str, FrameSums] = {}

    def update_trajectories(self, name: str, blocks: np.ndarray, previous_frames: np.ndarray | None = None) -> None:
        """Add ``blocks`` ``(B, T, ...)`` of field ``name``: the same time window of ``B`` trajectories.

        Increments are taken along ``T`` within each trajectory, and between ``previous_frames`` ``(B, ...)``
        (each trajectory's frame before the window, if given) and the window's first frame.
        """
        components = self.field_layout[name][1]
        n_traj, n_times = blocks.shape[:2]
        frames = blocks.reshape(n_traj, n_times, -1, components)
        points = frames.shape[2]
        values = self.values.setdefault(name, FrameSums(points))
        deltas = self.deltas.setdefault(name, FrameSums(points))
        if previous_frames is not None:
            previous_frames = previous_frames.reshape(n_traj, 1, points, components)
        per_chunk = max(2, CHUNK_BYTES // (8 * points * components))
        # rectangles of whole trajectories (small frames) or of one trajectory's consecutive frames (large ones)
        traj_step, time_step = (max(1, per_chunk // n_times), n_times) if per_chunk >= n_times else (1, per_chunk)
        for b0 in range(0, n_traj, traj_step):
            b1 = min(b0 + traj_step, n_traj)
            for t0 in range(0, n_times, time_step):
                t1 = min(t0 + time_step, n_times)
                chunk = _components_first(frames[b0:b1, t0:t1])  # (nb, nt, C, P) float64
                before = frames[b0:b1, t0 - 1 : t0] if t0 > 0 else None
                if before is None and previous_frames is not None:
                    before = previous_frames[b0:b1]
                if before is None:
                    increments = np.subtract(chunk[:, 1:], chunk[:, :-1])
                else:
                    increments = np.empty_like(chunk)
                    np.subtract(chunk[:, 1:], chunk[:, :-1], out=increments[:, 1:])
                    np.subtract(chunk[:, 0], _components_first(before)[:, 0], out=increments[:, 0])
                deltas.add_frames(increments.reshape(-1, components, points))
                values.add_frames(chunk.reshape(-1, components, points))

    def merge(self, other: FieldStatistics) -> None:
        """Add everything ``other`` (same fields) has accumulated, e.g. from another thread."""
        for mine, theirs in ((self.values, other.values), (self.deltas, other.deltas)):
            for name, sums in theirs.items():
                mine.setdefault(name, FrameSums(sums.points)).extend(sums)

    def as_yaml_dict(self) -> dict[str, dict[str, float | list]]:
        """The six ``stats.yaml`` sections in the Well's shapes: scalar fields give floats, vector fields lists,
        tensor fields nested lists (``D x D`` for order 2, as the Well's ``active_matter/stats.yaml``)."""
        out: dict[str, dict[str, float | list[float]]] = {
            key: {} for key in ("mean", "std", "rms", "mean_delta", "std_delta", "rms_delta")
        }
        for name, (order, components) in self.field_layout.items():
            for suffix, sums in (("", self.values.get(name)), ("_delta", self.deltas.get(name))):
                moments = sums.moments(components) if sums is not None else (np.zeros(components),) * 3
                for key, array in zip(("mean", "std", "rms"), moments, strict=True):
                    values = [float(v) for v in array]
                    if order == 0:
                        out[key + suffix][name] = values[0]
                    elif order == 1:
                        out[key + suffix][name] = values
                    else:
                        dims = round(components ** (1 / order))
                        out[key + suffix][name] = np.reshape(values, (dims,) * order).tolist()
        return out


def _components_first(frames: np.ndarray) -> np.ndarray:
    """``(..., P, C)`` frames as a new float64 array ``(..., C, P)`` (one contiguous row per component).

    Always a copy: the reductions overwrite it in place. (``np.ascontiguousarray`` would return float64 frames of one
    component as a view, which is already contiguous after the swap, and the caller's frames, among them the frame
    before the next time chunk, would be overwritten.)"""
    return np.swapaxes(frames, -1, -2).astype(np.float64, order="C", copy=True)
