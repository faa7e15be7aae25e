"""Writer for The Well's HDF5 layout (``docs/data_format.md`` of the_well), one file at a time.

Layout written (``n`` trajectories per file, ``T`` time steps, spatial grid ``N_1 x ... x N_d``):

* root attributes ``dataset_name, grid_type, n_spatial_dims, n_trajectories, simulation_parameters`` and one
  attribute per simulation parameter (an array over the file's trajectories, since ours vary per trajectory);
* ``/dimensions``: ``time (T,)`` and one coordinate array per axis (float64, so dt and dx are exact),
  attribute ``spatial_dims``;
* ``/boundary_conditions/<axis>_<type>``: ``bc_type`` of the family per axis (``PERIODIC`` for the exact
  datasets), ``mask`` True on the first and last point;
* ``/scalars``: one ``(n,)`` float64 dataset per per-trajectory parameter (sample varying, constant in time);
* ``/t0_fields, /t1_fields, /t2_fields``: ``(n, T, *grid, D**order)`` float32, always all three groups;
* ``/exact_solution`` (ours, not read by the Well; attribute ``kind``: ``closed_form`` or ``simulation``): the
  parameter tables ``(n, max_modes)`` zero-padded (mode tables, or a simulation's initial-condition seed),
  ``n_modes (n,)`` and the global ``trajectory_index (n,)``, so the closed form can be re-evaluated from the file.

Strings are written as ``str`` (h5py stores them as variable-length UTF-8), never bytes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import h5py
import numpy as np

from well_upao.families.base import TrajectoryFamily, TrajectoryParameters

AXIS_NAMES = ("x", "y", "z")
FIELD_GROUPS = ("t0_fields", "t1_fields", "t2_fields")
EXACT_GROUP = "exact_solution"
BC_TYPES = ("WALL", "OPEN", "PERIODIC")


@dataclass(frozen=True)
class GridSpec:
    """Sizes shared by every file of one dataset."""

    resolution: int
    n_steps: int
    dt: float
    #: how ``dimensions/time`` is stored: ``float64`` (exact steps) or ``float32`` (as the Well stores it)
    time_dtype: str = "float64"

    def times(self) -> np.ndarray:
        """The frames' times in float64 (what the fields are evaluated at)."""
        return np.arange(self.n_steps, dtype=np.float64) * self.dt

    def stored_times(self) -> np.ndarray:
        """``dimensions/time`` as written: ``times`` in ``time_dtype``."""
        return self.times().astype(self.time_dtype)


class WellFileWriter:
    """Creates one Well file for ``len(trajectory_indices)`` trajectories of a family and fills it.

    Use as a context manager (or ``open`` / ``close``); call ``write_parameters`` and
    ``write_block`` for each group of trajectories or time block.
    """

    def __init__(
        self,
        path: str,
        pde: TrajectoryFamily,
        grid: GridSpec,
        trajectory_indices: Sequence[int],
        seed: int,
        sync_bytes: int | None = None,
    ):
        """With ``sync_bytes``, the kernel is asked to start writing field data back to disk after every
        ``sync_bytes`` written (``posix_fadvise(DONTNEED)`` starts writeback of the file's dirty pages without
        waiting for it), so that the disk works while later blocks are still being computed rather than all at
        once in ``close``'s fsync."""
        self.path = path
        self.pde = pde
        self.grid = grid
        self.trajectory_indices = list(trajectory_indices)
        self.seed = seed
        self.sync_bytes = sync_bytes
        self._unsynced_bytes = 0
        self.file: h5py.File | None = None

    def open(self) -> WellFileWriter:
        self.file = h5py.File(self.path, "w")
        self._write_layout()
        return self

    def close(self, durable: bool = False) -> None:
        """Mirror the parameters as root attributes, close, and with ``durable`` fsync the file to disk."""
        if self.file is None:
            return
        try:
            self.finalize_attributes()
        finally:
            self.file.close()
            self.file = None
        if durable:
            self._on_descriptor(os.fsync)

    def _on_descriptor(self, action: Callable[[int], None]) -> None:
        """Apply ``action`` (``os.fsync``, a writeback hint) to the file through a descriptor of our own."""
        fd = os.open(self.path, os.O_RDONLY)
        try:
            action(fd)
        finally:
            os.close(fd)

    def __enter__(self) -> WellFileWriter:
        return self.open()

    def __exit__(self, *exc) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None

    # ---------------------------------------------------------------- layout
    def _write_layout(self) -> None:
        f = self.file
        pde, grid = self.pde, self.grid
        n = len(self.trajectory_indices)
        write_layout(
            f,
            dataset_name=pde.name,
            n_trajectories=n,
            times=grid.stored_times(),
            coordinates=pde.grid_axes(grid.resolution),
            boundary_types=pde.boundary_types,
            scalar_names=pde.scalar_names,
            fields=[(s.name, s.order, (n, grid.n_steps, *pde.field_shape(s, grid.resolution))) for s in pde.fields],
        )
        exact = f.create_group(EXACT_GROUP)
        exact.attrs["pde"] = pde.name
        exact.attrs["kind"] = pde.kind
        exact.attrs["equation"] = pde.equation
        exact.attrs["seed"] = self.seed
        exact.attrs["domain_length"] = pde.domain_length
        exact.attrs["dt"] = grid.dt
        exact.attrs["mode_columns"] = list(pde.mode_columns)
        exact.create_dataset("trajectory_index", data=np.asarray(self.trajectory_indices, dtype=np.int64))

    # ---------------------------------------------------------------- content
    def write_parameters(self, params: Sequence[TrajectoryParameters]) -> None:
        """Store every trajectory's scalars (``/scalars``) and its mode table, zero-padded to the file's largest
        mode count (``/exact_solution/<column>``, ``(n, max modes)``), one HDF5 write per column."""
        f = self.file
        for name in self.pde.scalar_names:
            f["scalars"][name][:] = [p.scalars[name] for p in params]
        exact = f[EXACT_GROUP]
        exact.create_dataset("n_modes", data=np.array([p.n_modes for p in params], dtype=np.int64))
        max_modes = max(p.n_modes for p in params)
        for column in self.pde.mode_columns:
            table = np.zeros((len(params), max_modes))
            for row, p in zip(table, params, strict=True):
                row[: p.n_modes] = p.modes[column]
            exact.create_dataset(column, data=table)

    def finalize_attributes(self) -> None:
        """Mirror every simulation parameter as a root attribute (array over the file's trajectories)."""
        for name in self.pde.scalar_names:
            self.file.attrs[name] = self.file["scalars"][name][()]

    def write_block(self, first_slot: int, time_start: int, fields: dict[str, np.ndarray]) -> None:
        """Write fields ``(B, T, ...)`` of trajectories ``first_slot : first_slot + B`` and time steps
        ``time_start : time_start + T`` (one HDF5 write per field)."""
        for spec in self.pde.fields:
            block = fields[spec.name]
            dataset = self.file[FIELD_GROUPS[spec.order]][spec.name]
            slots = slice(first_slot, first_slot + block.shape[0])
            dataset[slots, time_start : time_start + block.shape[1]] = block.astype(np.float32, copy=False)
            self._unsynced_bytes += 4 * block.size
        if self.sync_bytes is not None and self._unsynced_bytes >= self.sync_bytes:
            self._on_descriptor(lambda fd: os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED))
            self._unsynced_bytes = 0


def write_layout(
    f: h5py.File,
    *,
    dataset_name: str,
    n_trajectories: int,
    times: np.ndarray,
    coordinates: Sequence[np.ndarray],
    boundary_types: Sequence[str],
    scalar_names: Sequence[str],
    fields: Sequence[tuple[str, int, tuple[int, ...]]],
    scalar_values: dict[str, float] | None = None,
    varying_scalar_names: Sequence[str] = (),
) -> dict[str, h5py.Dataset]:
    """The Well's layout of one file (see the module docstring), every writer's: root attributes, ``/dimensions``
    and ``/boundary_conditions`` (``write_grid_groups``), ``/scalars`` and the three ``t*_fields`` groups with
    one float32 dataset per ``(name, tensor order, shape)`` of ``fields``, to be filled by the caller.

    ``scalar_values``: the file's parameters when they are the same for all its trajectories (one 0-d float32
    dataset each, ``sample_varying`` false, as the Well stores a parameter set per file); else one ``(n,)`` float64
    dataset per name, per trajectory, filled by the caller. ``varying_scalar_names``: time-varying scalars (the
    Well's ``scalar_names``, served per frame), one ``(n, T)`` float64 dataset each (``sample_varying`` and
    ``time_varying`` true), filled by the caller; they are not simulation parameters. Returns the field datasets by
    name."""
    f.attrs["dataset_name"] = dataset_name
    f.attrs["grid_type"] = "cartesian"
    f.attrs["n_spatial_dims"] = len(coordinates)
    f.attrs["n_trajectories"] = n_trajectories
    f.attrs["simulation_parameters"] = list(scalar_names)
    write_grid_groups(f, times, coordinates, boundary_types)
    scalars = f.create_group("scalars")
    scalars.attrs["field_names"] = [*scalar_names, *varying_scalar_names]
    for name in scalar_names:
        if scalar_values is None:
            ds = scalars.create_dataset(name, shape=(n_trajectories,), dtype=np.float64)
        else:
            ds = scalars.create_dataset(name, data=np.float32(scalar_values[name]))
        ds.attrs["sample_varying"] = scalar_values is None
        ds.attrs["time_varying"] = False
    for name in varying_scalar_names:
        ds = scalars.create_dataset(name, shape=(n_trajectories, times.shape[-1]), dtype=np.float64)
        ds.attrs["sample_varying"] = True
        ds.attrs["time_varying"] = True
    groups = {order: f.create_group(g) for order, g in enumerate(FIELD_GROUPS)}
    for order, group in groups.items():
        group.attrs["field_names"] = [name for name, field_order, _ in fields if field_order == order]
    datasets = {}
    for name, order, shape in fields:
        ds = groups[order].create_dataset(name, shape=shape, dtype=np.float32)
        ds.attrs["dim_varying"] = [True] * len(coordinates)
        ds.attrs["sample_varying"] = True
        ds.attrs["time_varying"] = True
        datasets[name] = ds
    return datasets


def write_grid_groups(
    f: h5py.File, times: np.ndarray, coordinates: Sequence[np.ndarray], boundary_types: Sequence[str]
) -> None:
    """``/dimensions`` (``time`` and one coordinate array per axis, named x, y, z, stored in their own dtype) and
    ``/boundary_conditions`` (a group ``<axis>_<type>`` per axis, its mask True on the first and last point)."""
    spatial_dims = list(AXIS_NAMES[: len(coordinates)])
    dims = f.create_group("dimensions")
    dims.attrs["spatial_dims"] = spatial_dims
    time = dims.create_dataset("time", data=times)
    time.attrs["sample_varying"] = False
    time.attrs["time_varying"] = True
    for name, coords in zip(spatial_dims, coordinates, strict=True):
        ds = dims.create_dataset(name, data=coords)
        ds.attrs["sample_varying"] = False
        ds.attrs["time_varying"] = False
    bcs = f.create_group("boundary_conditions")
    for name, coords, bc_type in zip(spatial_dims, coordinates, boundary_types, strict=True):
        group = bcs.create_group(f"{name}_{bc_type.lower()}")
        group.attrs["bc_type"] = bc_type
        group.attrs["associated_dims"] = [name]
        group.attrs["associated_fields"] = []
        group.attrs["sample_varying"] = False
        group.attrs["time_varying"] = False
        mask = np.zeros(len(coords), dtype=bool)
        mask[[0, -1]] = True
        group.create_dataset("mask", data=mask)


def read_trajectory_parameters(file: h5py.File, pde: TrajectoryFamily, slot: int) -> TrajectoryParameters:
    """Rebuild the parameters of trajectory ``slot`` of an exact-solution file (inverse of ``write_parameters``)."""
    scalars = {name: float(file["scalars"][name][slot]) for name in pde.scalar_names}
    exact = file[EXACT_GROUP]
    count = int(exact["n_modes"][slot])
    modes = {column: np.asarray(exact[column][slot, :count]) for column in pde.mode_columns}
    return TrajectoryParameters(scalars=scalars, modes=modes)


def read_field(file: h5py.File, name: str) -> h5py.Dataset:
    """The dataset of field ``name`` from whichever tensor-order group holds it."""
    for group in FIELD_GROUPS:
        if name in file[group]:
            return file[group][name]
    raise KeyError(f"field {name!r} not in {file.filename}")
