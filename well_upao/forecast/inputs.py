"""What a forecast reads: the input's trajectories, the history of each and the physics a predictor needs of them.

The input is one file in the Well's layout, or a dataset folder (``<folder>/data/<split>/*.hdf5``, or a folder of
HDF5 files). Each trajectory's history is ``history`` frames ``stride`` stored frames apart, ending just before the
first forecast frame: by default the file's last frame is the history's last (a file holding only the history
works), with ``start = T`` the history ends at stored frame ``T - stride`` and the forecast's step ``k`` is the stored
frame ``T + (k - 1) stride`` (for checks against stored frames). Nothing after the history is read.

Bad input is refused before anything is written (``ForecastError``, one line naming the problem and the fix): a
file that is not in the Well's layout, fewer frames than the history needs, a history holding a NaN or an infinite
value, channels or a grid other than the model's, a dataset no module registered (its channels have no slots).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import torch

from well_upao.axes import UnevenAxisError
from well_upao.data.datasets import DATASETS, selected_fields, slot_indices
from well_upao.data.source import HDF5_SUFFIXES, Layout, split_files
from well_upao.data.specification import SpecificationError
from well_upao.data.trajectories import Trajectory, TrajectoryFile
from well_upao.harness.samples import Context
from well_upao.physics.stencils import Grid


class ForecastError(ValueError):
    """A forecast that cannot be made as asked (bad input, unknown predictor): one line with the fix."""


def input_files(path: Path, split: str) -> list[Path]:
    """The HDF5 files of the input: the file itself, a dataset folder's split (``<path>/data/<split>``), or the HDF5
    files of a folder."""
    if path.is_file():
        if path.suffix not in HDF5_SUFFIXES:
            raise ForecastError(f"--input {path} is not an HDF5 file (.hdf5 or .h5) in the Well's layout")
        return [path]
    if not path.is_dir():
        raise ForecastError(f"--input {path} does not exist: give a Well file or a dataset folder")
    files = split_files(path / "data" / split) or split_files(path)
    if not files:
        raise ForecastError(
            f"--input {path} holds no HDF5 file (looked in {path / 'data' / split} and {path}); give a Well file, "
            f"a dataset folder with data/{split}/, or another --split"
        )
    return files


@dataclass(frozen=True)
class History:
    """One trajectory's history and its physics: ``frames`` ``(H, *space, C)`` (physical units), ``context`` (dt at
    the stride, grid, scalars, slots, constant fields), where it came from (``file``, ``index``) and the time of its
    last frame (``last_time``, float64 of the stored time)."""

    file: Path
    index: int
    frames: torch.Tensor
    context: Context
    last_time: float
    trajectory: Trajectory = field(repr=False)


@dataclass
class ForecastInput:
    """The input's trajectories, with the history each gives (see the module docstring)."""

    path: Path
    split: str
    history: int
    stride: int
    start: int | None = None
    max_trajectories: int | None = None

    @cached_property
    def files(self) -> list[TrajectoryFile]:
        files = [TrajectoryFile(path) for path in input_files(self.path, self.split)]
        try:
            name = files[0].layout.dataset_name
        except (OSError, KeyError, SpecificationError) as error:
            raise ForecastError(f"--input {files[0].path} is not a file in the Well's layout ({error})") from error
        fields = selected_fields(name, None)
        return [TrajectoryFile(f.path, fields) for f in files]

    @property
    def layout(self) -> Layout:
        return self.files[0].layout

    @property
    def dataset(self) -> str:
        """The dataset the input says it holds (its ``dataset_name``): its registry entry gives slots and the PDE."""
        return self.layout.dataset_name

    @property
    def channels(self) -> list[str]:
        return self.files[0].channels

    @cached_property
    def channel_slots(self) -> list[int]:
        if self.dataset not in DATASETS:
            raise ForecastError(
                f"dataset {self.dataset!r} (the input's dataset_name) is not registered: pass --imports MODULE, the "
                "module that registers it (docs: your-data.md)"
            )
        return slot_indices(self.dataset, self.channels)

    @cached_property
    def step(self) -> float:
        """The forecast's time step: ``stride`` x the file's float64 step (``well_upao.axes``)."""
        try:
            return self.stride * self.layout.time_axis.step
        except UnevenAxisError as error:
            raise ForecastError(f"--input: {error}") from error

    @cached_property
    def grid(self) -> Grid:
        try:
            spacing = self.layout.require_spacing()
        except UnevenAxisError as error:
            raise ForecastError(f"--input: {error}") from error
        return Grid(tuple(spacing), tuple(self.layout.periodic))

    def frame_indices(self, n_steps: int) -> list[int]:
        """The stored frames of the history (see the module docstring), refused where the file holds too few."""
        last = (n_steps - 1) if self.start is None else self.start - self.stride
        first = last - (self.history - 1) * self.stride
        if self.start is not None and not 0 < self.start <= n_steps:
            raise ForecastError(f"--start {self.start} is not a frame of the input (it stores {n_steps} frames)")
        if first < 0:
            needed = (self.history - 1) * self.stride + 1
            where = "" if self.start is None else f" before frame {self.start}"
            raise ForecastError(
                f"--input holds {n_steps if self.start is None else self.start} frames{where}; a history of "
                f"{self.history} at stride {self.stride} needs {needed}: lower --history or --stride"
                + ("" if self.start is None else ", or raise --start")
            )
        return list(range(first, last + 1, self.stride))

    def histories(self) -> Iterator[History]:
        """Each trajectory's history, file by file (one trajectory in memory at a time), the first
        ``max_trajectories``."""
        served = 0
        for file in self.files:
            for index in range(len(file)):
                if self.max_trajectories is not None and served >= self.max_trajectories:
                    return
                yield self.history_of(file, index)
                served += 1

    def history_of(self, file: TrajectoryFile, index: int) -> History:
        trajectory = file[index]
        indices = self.frame_indices(trajectory.frames.shape[0])
        frames = trajectory.frames[indices]
        if not torch.isfinite(frames).all():
            bad = sorted({indices[t] for t in torch.nonzero(~torch.isfinite(frames))[:, 0].tolist()})
            raise ForecastError(
                f"trajectory {index} of {file.path} has NaN or infinite values in stored frames {bad[:5]} of its "
                "history: forecast from finite frames (--start before them, or a shorter --history)"
            )
        scalars = {name: value.reshape(1).double() for name, value in trajectory.scalars.items()}
        dt = torch.tensor([self.step], dtype=torch.float32)
        context = Context(dt, self.grid, scalars, self.channel_slots, trajectory.constant_fields)
        last = float(trajectory.times[indices[-1]])
        return History(file.path, index, frames, context, last, trajectory)

    @property
    def n_trajectories(self) -> int:
        total = sum(len(f) for f in self.files)
        return total if self.max_trajectories is None else min(total, self.max_trajectories)


def uniform_channels(frame: torch.Tensor) -> list[int]:
    """The channels of a frame ``(*space, C)`` with no spatial spread (the Well's VRMSE of such a channel divides by
    ``sqrt(1e-7)``, not by a spread: its expected VRMSE is left out, and says so)."""
    flat = frame.reshape(-1, frame.shape[-1]).double()
    spread = flat.std(0)
    scale = flat.abs().amax(0).clamp_min(1.0)
    return [c for c in range(frame.shape[-1]) if not math.isfinite(float(spread[c])) or spread[c] <= 1e-7 * scale[c]]
