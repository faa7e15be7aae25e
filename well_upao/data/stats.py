"""Streaming per-component statistics for the Well's ``stats.yaml``.

The Well's z-score / RMS normalisations read ``mean, std, rms`` of every field and ``mean_delta, std_delta,
rms_delta`` of its one-step increments ``u(t + dt) - u(t)``, per tensor component (a list of length D for a
vector field). We accumulate (count, mean, M2) per component with Chan et al.'s pairwise update, which is exact
up to rounding and stable when the mean is large compared with the spread.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


def power_sums(values: np.ndarray, n_components: int) -> tuple[int, np.ndarray, np.ndarray]:
    """``(count, sum, sum of squares)`` per component of ``values`` (time first, ``(T, ..., n_components)``).

    Per-frame sums are BLAS products ``1^T X`` and ``1^T X^2`` in the input precision, accumulated across frames
    in float64; relative accuracy is ~1e-6 for float32 input, ample for normalisation.
    """
    frames = values.reshape(values.shape[0], -1, n_components)
    ones = np.ones((1, frames.shape[1]), dtype=frames.dtype)
    s1 = np.matmul(ones, frames)[:, 0, :].sum(axis=0, dtype=np.float64)
    s2 = np.matmul(ones, np.square(frames))[:, 0, :].sum(axis=0, dtype=np.float64)
    return frames.shape[0] * frames.shape[1], s1, s2


@dataclass
class RunningMoments:
    """Count, mean and sum of squared deviations (M2) per component.

    Blocks arrive as power sums ``(n, S1, S2)`` (one BLAS pass each, no temporaries); a block's own
    ``M2_b = S2 - S1^2 / n`` is merged with Chan et al.'s pairwise update
    ``M2 = M2_a + M2_b + delta^2 n_a n_b / (n_a + n_b)``, so large means across blocks do not cancel.
    """

    n_components: int
    count: int = 0
    mean: np.ndarray = field(default=None)  # type: ignore[assignment]
    m2: np.ndarray = field(default=None)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        self.mean = np.zeros(self.n_components)
        self.m2 = np.zeros(self.n_components)

    def update(self, values: np.ndarray) -> None:
        """Add a block of samples ``(..., n_components)``."""
        self.update_sums(*power_sums(values, self.n_components))

    def update_sums(self, n_b: int, s1: np.ndarray, s2: np.ndarray) -> None:
        """Add a block given by its count, sum and sum of squares per component."""
        if n_b == 0:
            return
        mean_b = s1 / n_b
        m2_b = np.maximum(s2 - s1 * mean_b, 0.0)
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
    """Statistics of several fields and of their one-step increments, fed trajectory block by block."""

    def __init__(self, field_layout: dict[str, tuple[int, int]]):
        """``field_layout``: field name -> (tensor order, number of components)."""
        self.field_layout = dict(field_layout)
        self.values = {name: RunningMoments(d) for name, (_, d) in field_layout.items()}
        self.deltas = {name: RunningMoments(d) for name, (_, d) in field_layout.items()}

    def update(self, name: str, block: np.ndarray, previous_frame: np.ndarray | None) -> None:
        """Add ``block`` (time first) of field ``name``; ``previous_frame`` is the frame before it, if any."""
        d = self.field_layout[name][1]
        self.values[name].update_sums(*power_sums(block, d))
        if previous_frame is not None:
            self.deltas[name].update_sums(*power_sums(block[:1] - previous_frame[None], d))
        if block.shape[0] > 1:
            self.deltas[name].update_sums(*power_sums(block[1:] - block[:-1], d))

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
