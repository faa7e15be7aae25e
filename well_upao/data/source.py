"""The dataset source: the one home for *reading* a dataset in The Well's layout.

A [`WellSource`][well_upao.data.source.WellSource] is resolved once, from ``(base path, name, split)`` or from the data
settings a run stored in its checkpoint ([`WellSource.from_settings`][well_upao.data.source.WellSource.from_settings]),
and then owns everything other parts need to know about the data on disk:

* its files: ``{base}/{name}/data/{split}/*.hdf5`` (``*.h5`` too), globbed here and nowhere else
  (``split_files``);
* its decoded [`Layout`][well_upao.data.source.Layout], read once from the first file: spatial axes, resolution,
  spacing, periodicity (per axis, from ``/boundary_conditions``), the stored frames' time axis (``dt`` and ``dx`` from
  ``well_upao.axes``: float64 fits of the whole float32 axes), field names per tensor order and the
  flattened channel names in the Well's order (t0 fields, then each component of the t1 fields, then t2) of the
  time-varying fields, the constant fields apart (the Well's ``constant_field_names``), the constant and the
  time-varying ``/scalars`` names, each edge's boundary type (``well_upao.data.specification``: what is not read
  is refused there by name), and our replica attribute (provenance);
* its registry entry (``well_upao.data.datasets``): slot row, field selection (the paper's, e.g. active matter
  without its tensor fields), the UPAO defaults;
* observed frames keyed by slot name ([`WellSource.observed`][well_upao.data.source.WellSource.observed]), what residual
  floors and fitted constants are computed from (``well_upao.physics.floor``, on frames in memory).

The PDE of a dataset is one lookup, ``well_upao.physics.pde_for_dataset(source.name)``: the PDE class lives in
the physics layer above this one, so the source names the dataset and physics resolves it (for built-in and
user datasets alike).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import torch
import yaml

from well_upao.axes import UnevenAxisError, UniformAxis, fit_uniform
from well_upao.data.datasets import DATASETS, DatasetSpec, selected_fields, slot_indices
from well_upao.data.specification import (
    SpecificationError,
    boundary_edges,
    check_grid_type,
    check_periodic_endpoints,
    field_entries,
    read_constant_scalar,
    read_field,
    read_varying_scalar,
    scalar_entries,
    scalar_shape_problem,
)
from well_upao.data.well_format import FIELD_GROUPS

logger = logging.getLogger(__name__)

SPLITS = ("train", "valid", "test")
HDF5_SUFFIXES = (".hdf5", ".h5")
#: the root attribute our replicas of the Well's datasets carry (JSON: generator, version, sizes, seed, ...)
REPLICA_ATTRIBUTE = "well_upao_replica"


class DatasetNotFoundError(FileNotFoundError):
    """No HDF5 file where the dataset should be."""


def default_base_path() -> Path:
    """``$WELL_BASE_PATH``, else ``./datasets`` (the generators' default ``--out``)."""
    return Path(os.environ.get("WELL_BASE_PATH", "datasets"))


def split_files(directory: str | Path) -> list[Path]:
    """The HDF5 files of one split directory, sorted (empty when the directory does not exist)."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.suffix in HDF5_SUFFIXES and p.is_file())


def channels_by_field(file: h5py.File, time_varying: bool = True) -> dict[str, list[str]]:
    """Each field's flattened channel names in the Well's order (t0, then t1 components, then t2): the time-varying
    fields (the channels), or with ``time_varying=False`` the constant ones (the Well's ``constant_field_names``)."""
    spatial = [str(d) for d in file["dimensions"].attrs["spatial_dims"]]
    out: dict[str, list[str]] = {}
    for entry in field_entries(file):
        if entry.time_varying != time_varying:
            continue
        suffixes = ["".join(p) for p in itertools.product(spatial, repeat=entry.order)]
        out[entry.name] = [f"{entry.name}_{s}" if s else entry.name for s in suffixes]
    return out


def flattened_channel_names(file: h5py.File) -> list[str]:
    """Channel names in the Well's order (t0, then t1 components, then t2), like ``WellMetadata.field_names``:
    time-varying fields only (constant fields are the Well's ``constant_field_names``, not channels)."""
    return [name for names in channels_by_field(file).values() for name in names]


@dataclass(frozen=True)
class Layout:
    """What a Well file says about the data's physics and channels (see the module docstring)."""

    dataset_name: str  # the file's ``dataset_name`` attribute
    spatial_dims: tuple[str, ...]
    resolution: tuple[int, ...]
    spacing: tuple[float, ...]  # float64 steps of the coordinate axes (``well_upao.axes``)
    periodic: tuple[bool, ...]
    boundary_types: tuple[tuple[str, ...], ...]  # per axis, the bc_type of every group touching it
    n_steps: int  # stored frames per trajectory (the last axis of ``dimensions/time``, sample-varying or not)
    field_names: tuple[tuple[str, ...], ...]  # time-varying fields per tensor order 0, 1, 2
    channels: tuple[str, ...]  # flattened, every time-varying field (the Well's ``field_names``)
    scalar_names: tuple[str, ...]  # constant ``/scalars`` (the Well's ``constant_scalar_names``): PDE parameters
    replica: Mapping[str, Any] | None = None
    #: ``dimensions/time`` as stored (``(T,)``, or ``(n_traj, T)`` when sample-varying), its dtype and file
    times: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False, compare=False)
    time_dtype: str = "float32"
    path: str = ""
    #: why a coordinate axis has no step (not equally spaced; its entry of ``spacing`` is nan), else ``None``
    spacing_problem: str | None = None
    #: constant fields (``time_varying`` false) per tensor order: the Well's ``constant_field_names``, not channels
    constant_field_names: tuple[tuple[str, ...], ...] = ((), (), ())
    #: time-varying ``/scalars`` (the Well's ``scalar_names``), served per frame, never PDE parameters
    varying_scalar_names: tuple[str, ...] = ()
    #: per spatial axis, the boundary type of its low and high edge, from the groups' masks
    edges: tuple[tuple[str, str], ...] = ()

    @property
    def n_spatial_dims(self) -> int:
        return len(self.spatial_dims)

    @cached_property
    def time_axis(self) -> UniformAxis:
        """The stored frames' uniform time axis (float64 step fitted to the whole stored axis, every trajectory's
        when time is sample-varying); an axis that is not equally spaced at its stored precision is refused
        (``well_upao.axes.UnevenAxisError``) when a step is asked for, not when the file is opened."""
        rows = self.times.reshape(-1, self.times.shape[-1])
        axes = [fit_uniform(row, self.time_dtype, "time", self.path) for row in rows]
        first = axes[0]
        for index, axis in enumerate(axes[1:], 1):
            if abs(axis.step - first.step) > max(first.tolerance, axis.tolerance):
                raise UnevenAxisError(
                    f"the time axis of {self.path} is sample-varying with different steps ({first.step:.9g} for "
                    f"trajectory 0, {axis.step:.9g} for trajectory {index}); UPAO and the evaluation take one step "
                    "per dataset: split the file by step"
                )
        # every trajectory's rounding bounds what a window of any of them carries
        tolerance, magnitude = max(a.tolerance for a in axes), max(a.magnitude for a in axes)
        return dataclasses.replace(first, tolerance=tolerance, magnitude=magnitude)

    def require_spacing(self) -> tuple[float, ...]:
        """``spacing``, refused (``UnevenAxisError``, with its numbers) where a coordinate axis is not equally
        spaced: finite differences need it; reading and training without physics do not."""
        if self.spacing_problem:
            raise UnevenAxisError(self.spacing_problem)
        return self.spacing


def read_layout(path: str | Path) -> Layout:
    """Decode the layout of one Well file. What the package does not read is refused here with its file, group and
    attribute (``well_upao.data.specification.SpecificationError``: a grid_type other than cartesian, a periodic axis
    stored with its endpoint twice, boundary masks marking more than whole edges, a scalar whose shape disagrees
    with its attributes). Axes that are not equally spaced at their stored precision are refused when a step is
    asked for, not here: coordinates by [`Layout.require_spacing`][well_upao.data.source.Layout.require_spacing]
    (``spacing`` holds nan), time by [`Layout.time_axis`][well_upao.data.source.Layout.time_axis]."""
    with h5py.File(path, "r") as f:
        check_grid_type(f, str(path))
        spatial = tuple(str(d) for d in f["dimensions"].attrs["spatial_dims"])
        resolution = tuple(int(f["dimensions"][d].shape[-1]) for d in spatial)
        spacing, problems = coordinate_steps(f, spatial, str(path))
        edges = boundary_edges(f, str(path), spatial, resolution)
        check_periodic_endpoints(f, str(path), spatial, edges)
        bc_types = [
            tuple(
                str(group.attrs["bc_type"]).upper()
                for group in f["boundary_conditions"].values()
                if axis in [str(d) for d in group.attrs["associated_dims"]]
            )
            for axis in spatial
        ]
        stored_time = f["dimensions"]["time"]
        times = np.asarray(stored_time, dtype=np.float64)
        n_steps = int(times.shape[-1]) if times.ndim else 1
        scalars = checked_scalars(f, str(path), n_steps)
        fields = field_entries(f)
        constant = [e.name for e in fields if not e.time_varying]
        if constant:
            logger.info(
                f"{path}: constant fields {constant} (time_varying = false) are the Well's constant_field_names: "
                "served as its constant_fields, not as channels; physics residuals do not read them"
            )
        replica = f.attrs.get(REPLICA_ATTRIBUTE)
        return Layout(
            dataset_name=str(f.attrs["dataset_name"]),
            spatial_dims=spatial,
            resolution=resolution,
            spacing=spacing,
            spacing_problem="; ".join(problems) or None,
            periodic=tuple(low == high == "PERIODIC" for low, high in edges),
            boundary_types=tuple(bc_types),
            edges=edges,
            n_steps=n_steps,
            times=times,
            time_dtype=str(stored_time.dtype),
            path=str(path),
            field_names=tuple(tuple(e.name for e in fields if e.order == o and e.time_varying) for o in range(3)),
            constant_field_names=tuple(
                tuple(e.name for e in fields if e.order == o and not e.time_varying) for o in range(3)
            ),
            channels=tuple(flattened_channel_names(f)),
            scalar_names=tuple(e.name for e in scalars if not e.time_varying),
            varying_scalar_names=tuple(e.name for e in scalars if e.time_varying),
            replica=None if replica is None else json.loads(str(replica)),
        )


def checked_scalars(f: h5py.File, path: str, n_steps: int) -> list:
    """The file's ``/scalars`` entries, a shape that disagrees with its attributes refused by name."""
    entries = scalar_entries(f)
    for entry in entries:
        problem = scalar_shape_problem(entry, int(f.attrs["n_trajectories"]), n_steps)
        if problem:
            raise SpecificationError(f"{path}: {problem}")
    return entries


def coordinate_steps(f: h5py.File, spatial: Sequence[str], path: str) -> tuple[tuple[float, ...], list[str]]:
    """Each coordinate axis's float64 step (``well_upao.axes.fit_uniform`` at its stored precision; ``nan`` where it
    is not equally spaced) and why (the problems, one per uneven axis)."""
    spacing, problems = [], []
    for d in spatial:
        coordinate = np.asarray(f["dimensions"][d], dtype=np.float64)
        first_row = coordinate.reshape(-1, coordinate.shape[-1])[0]
        try:
            spacing.append(fit_uniform(first_row, f["dimensions"][d].dtype, f"{d} coordinate", path).step)
        except UnevenAxisError as error:
            spacing.append(float("nan"))
            problems.append(str(error))
    return tuple(spacing), problems


@dataclass
class ObservedFrames:
    """Frames of some trajectories as slot fields ``(n_traj, T, *space)`` (float64) and what a residual needs:
    the named constant ``/scalars`` per trajectory, the grid (spacing, periodicity), the frames' times (trajectory
    0's when time is sample-varying: every trajectory has the same step) and their step (``step``: from the file's
    whole time axis, ``well_upao.axes``; ``None``: fitted to ``times``, stored as ``time_dtype``);
    ``varying_scalars``: the time-varying ``/scalars`` at the frames, ``(n_traj, T)``."""

    dataset: str
    fields: dict[str, torch.Tensor]
    scalars: dict[str, torch.Tensor]
    spacing: tuple[float, ...]
    periodic: tuple[bool, ...]
    times: np.ndarray
    step: float | None = None
    time_dtype: str = "float64"
    varying_scalars: dict[str, torch.Tensor] = field(default_factory=dict)


@dataclass
class WellSource:
    """One split of one dataset on disk (see the module docstring). ``fields``: the core fields to keep (default:
    the dataset's registered selection, else all)."""

    base: Path
    name: str
    split: str = "train"
    fields: Sequence[str] | None = None
    _files: list[Path] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.base = Path(self.base)
        if self.split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {self.split!r}")

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], split: str = "train", base: str | Path | None = None):
        """The source a run trained on, from the data settings its checkpoint stored (``train.data``)."""
        fields = settings.get("fields")
        return cls(base or settings["well_base_path"], settings["well_dataset_name"], split, fields or None)

    def with_split(self, split: str) -> WellSource:
        """The same dataset, another split."""
        return WellSource(self.base, self.name, split, self.fields)

    # ------------------------------------------------------------------ files
    @property
    def directory(self) -> Path:
        return self.base / self.name / "data" / self.split

    @property
    def stats_path(self) -> Path:
        return self.base / self.name / "stats.yaml"

    @property
    def files(self) -> list[Path]:
        """The split's files (globbed once); a missing split is a one-line error with the command that makes it."""
        if self._files is None:
            found = split_files(self.directory)
            if not found:
                raise DatasetNotFoundError(
                    f"no HDF5 files in {self.directory}; generate the dataset first "
                    f"(e.g. `well-upao generate-exact --pde {self.name} --out {self.base}`) "
                    "or point WELL_BASE_PATH / data.well_base_path at it"
                )
            self._files = found
        return self._files

    def n_trajectories(self) -> int:
        """How many trajectories the split holds (the ``n_trajectories`` attribute of each of its files)."""
        total = 0
        for path in self.files:
            with h5py.File(path, "r") as file:
                total += int(file.attrs["n_trajectories"])
        return total

    def stats(self) -> dict:
        """``stats.yaml`` (mean, std, rms and their deltas per field)."""
        with open(self.stats_path) as stream:
            return yaml.safe_load(stream) or {}

    # ------------------------------------------------------------------ layout and registry
    @cached_property
    def layout(self) -> Layout:
        layout = read_layout(self.files[0])
        if layout.dataset_name != self.name:
            logger.warning(
                f"{self.files[0]} says dataset_name={layout.dataset_name!r}, its folder {self.name!r}: "
                f"the folder name is used"
            )
        return layout

    @property
    def spec(self) -> DatasetSpec | None:
        """The dataset's registry entry (``None`` for a dataset nobody registered)."""
        return DATASETS.get(self.name)

    @property
    def kept_fields(self) -> tuple[str, ...] | None:
        """Core fields kept: the request, else the registered selection, else all (``None``)."""
        return selected_fields(self.name, self.fields)

    @property
    def channels(self) -> list[str]:
        """Flattened channel names in the Well's order, restricted to the kept fields."""
        kept = self.kept_fields
        names = list(self.layout.channels)
        if kept is None:
            return names
        return [n for n in names if any(n == k or n.startswith(f"{k}_") for k in kept)]

    @property
    def channel_slots(self) -> list[int]:
        """Slot index of each kept channel (the registry's slot row)."""
        return slot_indices(self.name, self.channels)

    @property
    def defaults(self) -> dict[str, Any]:
        """UPAO settings the dataset prefers where a run leaves them unset."""
        spec = self.spec
        return dict(spec.defaults) if spec is not None else {}

    @property
    def provenance(self) -> str:
        """``replica (<grid>, well-upao generate-replica v<n>)`` for our replicas of the Well's datasets, else
        empty."""
        info = self.layout.replica
        if info is None:
            return ""
        return f"replica ({'x'.join(map(str, info['resolution']))}, well-upao generate-replica v{info['version']})"

    # ------------------------------------------------------------------ frames
    def observed(
        self, stride: int = 1, max_trajectories: int = 4, max_frames: int = 12, start: int = 1
    ) -> ObservedFrames:
        """Up to ``max_frames`` frames ``start, start + stride, ...`` of the first ``max_trajectories``
        trajectories of the split, keyed by slot name (the first stored frame is skipped by default: the Well's
        files store a zero pressure there)."""
        indices = list(range(start, self.layout.n_steps, stride))[:max_frames]
        if len(indices) < 3:
            raise ValueError(
                f"{self.name}/{self.split}: {self.layout.n_steps} frames hold fewer than 3 at stride {stride} "
                f"from frame {start}"
            )
        parts: list[ObservedFrames] = []
        taken = 0
        for path in self.files:
            part = self.read_frames(path, indices, max_trajectories - taken)
            parts.append(part)
            taken += next(iter(part.fields.values())).shape[0]
            if taken >= max_trajectories:
                break
        fields = {k: torch.cat([p.fields[k] for p in parts]) for k in parts[0].fields}
        scalars = {k: torch.cat([p.scalars[k] for p in parts]) for k in parts[0].scalars}
        varying = {k: torch.cat([p.varying_scalars[k] for p in parts]) for k in parts[0].varying_scalars}
        return dataclasses.replace(parts[0], fields=fields, scalars=scalars, varying_scalars=varying)

    def read_frames(self, path: Path, indices: Sequence[int], max_trajectories: int | None = None) -> ObservedFrames:
        """Time ``indices`` (increasing) of the first ``max_trajectories`` (default all) trajectories of one of the
        source's files, keyed by slot name."""
        indices = list(indices)
        spec = self.spec
        if spec is None:
            raise KeyError(f"dataset {self.name!r} is not registered (its slot row is needed to read its frames)")
        slots, layout = spec.slots, self.layout
        with h5py.File(path, "r") as f:
            n_traj = int(f.attrs["n_trajectories"])
            n_traj = n_traj if max_trajectories is None else min(n_traj, max_trajectories)
            fields: dict[str, torch.Tensor] = {}
            for entry in field_entries(f):
                if entry.order > 1 or not entry.time_varying:  # tensor fields and constant fields have no slot
                    continue
                group = f[FIELD_GROUPS[entry.order]]
                data = torch.as_tensor(read_field(group[entry.name], entry, n_traj, indices, layout.resolution))
                if entry.order == 0:
                    if entry.name in slots:
                        fields[slots[entry.name]] = data
                    continue
                for i, axis in enumerate(layout.spatial_dims):
                    if f"{entry.name}_{axis}" in slots:
                        fields[slots[f"{entry.name}_{axis}"]] = data[..., i]
            scalars, varying = {}, {}
            for entry in scalar_entries(f):
                if entry.time_varying:
                    varying[entry.name] = torch.as_tensor(
                        read_varying_scalar(f["scalars"][entry.name], entry, n_traj, indices)
                    )
                else:
                    scalars[entry.name] = torch.as_tensor(read_constant_scalar(f["scalars"][entry.name], entry, n_traj))
            times = np.asarray(f["dimensions"]["time"], dtype=np.float64)
            times = times.reshape(-1, times.shape[-1])[0][indices]
        strides = np.diff(indices)
        step = float(strides[0]) * layout.time_axis.step if strides.size and (strides == strides[0]).all() else None
        return ObservedFrames(
            self.name,
            fields,
            scalars,
            layout.require_spacing(),
            layout.periodic,
            times,
            step,
            layout.time_dtype,
            varying,
        )
