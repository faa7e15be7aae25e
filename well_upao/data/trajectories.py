"""Whole trajectories of one file in The Well's layout, one at a time, as the Well's reader serves them.

A [`TrajectoryFile`][well_upao.data.trajectories.TrajectoryFile] opens one file (any path: a dataset's split file or
a user's history file) and serves trajectory ``i`` as a [`Trajectory`][well_upao.data.trajectories.Trajectory]:

* ``frames`` ``(T, *space, C)`` float32: the time-varying fields flattened in the Well's channel order (t0 fields,
  then each component of the t1 fields in the order of the axes, then t2), restricted to the kept fields, what the
  Well's ``WellDataset`` serves as ``input_fields`` + ``output_fields`` of a whole trajectory;
* ``constant_fields`` ``(*space, C_const)`` (the Well's ``constant_fields``; ``None`` without), the constant
  ``/scalars`` (``scalars``: the PDE's parameters), the time-varying ones (``varying_scalars``, per frame) and the
  frames' ``times`` (float64 of the stored float32).

Only one trajectory is in memory at a time, so a file larger than memory is read trajectory by trajectory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import h5py
import numpy as np
import torch

from well_upao.data.source import Layout, read_layout
from well_upao.data.specification import (
    FieldEntry,
    field_entries,
    read_constant_scalar,
    read_field,
    read_varying_scalar,
    scalar_entries,
)
from well_upao.data.well_format import FIELD_GROUPS


@dataclass
class Trajectory:
    """One trajectory of a file (see the module docstring); ``index``: its position in the file."""

    index: int
    frames: torch.Tensor
    constant_fields: torch.Tensor | None
    scalars: dict[str, torch.Tensor]
    varying_scalars: dict[str, torch.Tensor]
    times: np.ndarray


def kept(name: str, fields: Sequence[str] | None) -> bool:
    return fields is None or name in fields


class TrajectoryFile:
    """The trajectories of the Well file at ``path``, the time-varying fields restricted to ``fields`` (``None``: all;
    a dataset's registered selection, ``selected_fields`` of ``well_upao.data.datasets``)."""

    def __init__(self, path: str | Path, fields: Sequence[str] | None = None):
        self.path, self.fields = Path(path), None if fields is None else tuple(fields)

    @cached_property
    def layout(self) -> Layout:
        return read_layout(self.path)

    @cached_property
    def entries(self) -> list[FieldEntry]:
        with h5py.File(self.path, "r") as file:
            return field_entries(file)

    @cached_property
    def n_trajectories(self) -> int:
        with h5py.File(self.path, "r") as file:
            return int(file.attrs["n_trajectories"])

    def __len__(self) -> int:
        return self.n_trajectories

    @property
    def channels(self) -> list[str]:
        """The kept channels in the Well's order (a vector field ``v`` as ``v_x, v_y, ...``)."""
        return [name for entry in self.varying_entries for name in self.channel_names(entry)]

    @property
    def varying_entries(self) -> list[FieldEntry]:
        return [e for e in self.entries if e.time_varying and kept(e.name, self.fields)]

    @property
    def constant_entries(self) -> list[FieldEntry]:
        return [e for e in self.entries if not e.time_varying]

    def channel_names(self, entry: FieldEntry) -> list[str]:
        """The channels of one field: its name, or one per component in the order of the axes."""
        if entry.order == 0:
            return [entry.name]
        axes = self.layout.spatial_dims
        if entry.order == 1:
            return [f"{entry.name}_{a}" for a in axes]
        return [f"{entry.name}_{a}{b}" for a in axes for b in axes]

    def __getitem__(self, index: int) -> Trajectory:
        if not 0 <= index < self.n_trajectories:
            raise IndexError(f"{self.path} holds {self.n_trajectories} trajectories; there is no trajectory {index}")
        layout = self.layout
        steps = list(range(layout.n_steps))
        with h5py.File(self.path, "r") as file:
            channels = [self.read(file, e, index, steps) for e in self.varying_entries]
            constants = [self.read_constant(file, e, index) for e in self.constant_entries]
            scalars, varying = {}, {}
            for entry in scalar_entries(file):
                dataset = file["scalars"][entry.name]
                if entry.time_varying:
                    values = read_varying_scalar(dataset, entry, index + 1, steps)[index]
                    varying[entry.name] = torch.as_tensor(values)
                else:
                    scalars[entry.name] = torch.as_tensor(read_constant_scalar(dataset, entry, index + 1)[index])
            times = np.asarray(file["dimensions"]["time"], dtype=np.float64)
        times = times.reshape(-1, times.shape[-1])
        frames = torch.as_tensor(np.concatenate(channels, axis=-1), dtype=torch.float32)
        constant_fields = torch.as_tensor(np.concatenate(constants, -1), dtype=torch.float32) if constants else None
        return Trajectory(index, frames, constant_fields, scalars, varying, times[min(index, len(times) - 1)])

    def read(self, file: h5py.File, entry: FieldEntry, index: int, steps: list[int]) -> np.ndarray:
        """One trajectory's frames of a time-varying field ``(T, *space, D**order)`` (components flattened)."""
        data = read_field(file[FIELD_GROUPS[entry.order]][entry.name], entry, index + 1, steps, self.layout.resolution)
        data = data[index]
        return data.reshape(*data.shape[: 1 + self.layout.n_spatial_dims], -1)

    def read_constant(self, file: h5py.File, entry: FieldEntry, index: int) -> np.ndarray:
        """One trajectory's constant field ``(*space, D**order)``, broadcast where the file does not vary it."""
        data = np.asarray(file[FIELD_GROUPS[entry.order]][entry.name], dtype=np.float64)
        if entry.sample_varying:
            data = data[index]
        resolution = self.layout.resolution
        stored = [n if used else 1 for n, used in zip(resolution, entry.dim_varying, strict=True)]
        components = data.shape[len(stored) :]
        data = np.broadcast_to(data.reshape(*stored, *components), (*resolution, *components))
        return data.reshape(*resolution, -1)
