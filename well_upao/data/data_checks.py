"""The Well's data checks, our implementation: what PolymathicAI/the_well ``scripts/check_thewell_data.py`` looks for.

For every time-varying field of a file, every trajectory, every tensor component and every frame ``t``:

* **NaN**: the frame holds a NaN;
* **constant frame** (``t > 0``): every value equals the frame's first value exactly (the Well's script:
  ``np.all(f == f.item(0))``; a field decayed to a uniform state, such as Gray-Scott's trivial ``A = 1, B = 0``,
  gets there once its perturbation is below float32 rounding);
* **near-constant frame** (``t > 0``, ours, stricter than the Well's): not constant, but every value close to the
  frame's first value, ``|f - f_0| <= atol + rtol |f_0|`` with numpy's ``allclose`` tolerances ``rtol = 1e-5``,
  ``atol = 1e-8``: a field on its way to a uniform state, or one that is uniform to 1e-5 by its physics (active
  matter's concentration is a passive scalar at ``V0 = 0`` and diffuses out);
* **close to the previous frame**: ``allclose(f_t, f_{t-1})`` (a stationary state);
* **outlier frame**: the frame's spatial mean lies at least 5 standard deviations from the mean of the
  trajectory's frame means (frames with NaN or constant values left out of both, as the Well's script does; where
  the frame means agree to float32 rounding, e.g. a conserved total, nothing is an outlier: the Well's script would
  flag every frame).

The Well's script counts NaN and constant frames as issues and prints outliers with them; so do we:
``DataReport.problems`` and ``DataReport.notes`` (near-constant frames are notes, problems with
``strict``). Its boundary-name and dimension checks are part of our
format checker (``well_upao.data.validate``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np

from well_upao.data.well_format import FIELD_GROUPS

RTOL, ATOL = 1e-5, 1e-8
OUTLIER_SIGMAS = 5.0
#: how a report names near-constant frames
NEAR_CONSTANT = "near-constant frames (allclose to the first value)"
#: frame means closer than this (relative) count as equal: float32 rounding
ROUNDING = 1e-6


@dataclass
class DataReport:
    """Frames flagged in one file: ``{(field, trajectory): [time index, ...]}`` per kind of finding."""

    path: Path
    nan: dict[tuple[str, int], list[int]] = field(default_factory=lambda: defaultdict(list))
    constant: dict[tuple[str, int], list[int]] = field(default_factory=lambda: defaultdict(list))
    near_constant: dict[tuple[str, int], list[int]] = field(default_factory=lambda: defaultdict(list))
    close: dict[tuple[str, int], list[int]] = field(default_factory=lambda: defaultdict(list))
    outliers: dict[tuple[str, int], list[int]] = field(default_factory=lambda: defaultdict(list))

    @staticmethod
    def _describe(kind: str, found: dict[tuple[str, int], list[int]], path: Path) -> list[str]:
        return [
            f"{path.name}: field {name!r} trajectory {trajectory}: {len(steps)} {kind} (steps {_ranges(steps)})"
            for (name, trajectory), steps in sorted(found.items())
        ]

    def problems_found(self, strict: bool = False) -> list[str]:
        """NaN and constant frames (the Well's script's issues); with ``strict`` near-constant frames too."""
        found = self._describe("frames with NaN", self.nan, self.path)
        found += self._describe("constant frames", self.constant, self.path)
        return found + (self._describe(NEAR_CONSTANT, self.near_constant, self.path) if strict else [])

    def notes_found(self, strict: bool = False) -> list[str]:
        """Near-constant frames (unless ``strict``), frames close to the previous one and outlier frames (printed,
        not counted, by the Well's script)."""
        found = [] if strict else self._describe(NEAR_CONSTANT, self.near_constant, self.path)
        found += self._describe("frames close to the previous one", self.close, self.path)
        return found + self._describe("outlier frames", self.outliers, self.path)

    @property
    def problems(self) -> list[str]:
        """``problems_found``, not strict (the Well's script's issues)."""
        return self.problems_found()

    @property
    def notes(self) -> list[str]:
        """``notes_found``, not strict."""
        return self.notes_found()


def _ranges(steps: list[int]) -> str:
    """``[3, 4, 5, 9]`` -> ``3-5, 9``."""
    parts, start = [], None
    for i, step in enumerate(steps):
        if start is None:
            start = step
        if i + 1 == len(steps) or steps[i + 1] != step + 1:
            parts.append(f"{start}-{step}" if step != start else f"{step}")
            start = None
    return ", ".join(parts)


def check_trajectory(frames: np.ndarray) -> dict[str, list[int]]:
    """The five findings for one trajectory of one field, ``frames (T, *space, *components)`` with
    ``n_components`` trailing tensor axes flattened by the caller to ``(T, points, components)``; a frame is
    flagged when any of its components is."""
    n_steps = frames.shape[0]
    has_nan = np.isnan(frames).any(axis=1)  # (T, C)
    first = frames[:, :1, :]
    constant = (frames == first).all(axis=1) & ~has_nan
    near_constant = np.isclose(frames, first, rtol=RTOL, atol=ATOL).all(axis=1) & ~has_nan & ~constant
    constant[0] = near_constant[0] = False  # the Well's script skips the first frame (many files start uniform)
    close = np.zeros_like(constant)
    if n_steps > 1:
        close[1:] = np.isclose(frames[1:], frames[:-1], rtol=RTOL, atol=ATOL).all(axis=1)
    means = np.where(has_nan | constant, np.nan, np.nanmean(np.where(has_nan[:, None], 0, frames), axis=1))
    outliers = np.zeros_like(constant)
    for c in range(frames.shape[2]):
        valid = ~np.isnan(means[:, c])
        if valid.sum() > 1:
            centre, spread = means[valid, c].mean(), means[valid, c].std()
            if spread > ROUNDING * np.abs(means[valid, c]).max():
                outliers[valid, c] = np.abs(means[valid, c] - centre) >= OUTLIER_SIGMAS * spread
    return {
        "nan": [int(t) for t in np.flatnonzero(has_nan.any(axis=1))],
        "constant": [int(t) for t in np.flatnonzero(constant.any(axis=1))],
        "near_constant": [int(t) for t in np.flatnonzero(near_constant.any(axis=1) & ~constant.any(axis=1))],
        "close": [int(t) for t in np.flatnonzero(close.any(axis=1))],
        "outliers": [int(t) for t in np.flatnonzero(outliers.any(axis=1))],
    }


def check_file(path: str | Path) -> DataReport:
    """Run the checks on every time-varying field of one Well file (one trajectory in memory at a time)."""
    path = Path(path)
    report = DataReport(path)
    with h5py.File(path, "r") as f:
        n_dims = int(f.attrs["n_spatial_dims"])
        for order, group in enumerate(FIELD_GROUPS):
            if group not in f:
                continue
            for name in f[group].attrs.get("field_names", []):
                dataset = f[group][str(name)]
                if not dataset.attrs.get("time_varying", True) or not dataset.attrs.get("sample_varying", True):
                    continue
                for trajectory in range(dataset.shape[0]):
                    frames = np.asarray(dataset[trajectory])
                    frames = frames.reshape(frames.shape[0], -1, n_dims**order)
                    for kind, steps in check_trajectory(frames).items():
                        if steps:
                            getattr(report, kind)[(str(name), trajectory)] = steps
    return report


def check_dataset(path: str | Path) -> list[DataReport]:
    """``check_file`` on every HDF5 file of ``path/data/{train,valid,test}`` (or on ``path`` itself if a file)."""
    path = Path(path)
    if path.is_file():
        return [check_file(path)]
    files = sorted(p for split in ("train", "valid", "test") for p in (path / "data" / split).glob("*.h*5"))
    return [check_file(p) for p in files]
