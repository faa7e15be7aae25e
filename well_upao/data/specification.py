"""The parts of the Well's file specification beyond fields and axes: what is read, and what is refused by name.

Implemented here, for ``well_upao.data.source`` (the readers) and ``well_upao.data.validate``:

* ``grid_type``: only ``cartesian`` grids are read; any other (the specification's ``spherical``) is refused
  (``check_grid_type``);
* fields of ``t0_fields`` / ``t1_fields`` / ``t2_fields`` (``field_entries``): a field whose ``time_varying``
  is false is a *constant field*, which the Well's ``WellDataset`` lists in its ``constant_field_names`` and serves
  as ``constant_fields``, not as channels; ``sample_varying`` false means no trajectory axis and ``dim_varying``
  false an axis of length one, both broadcast as the Well does (``read_field``);
* ``/scalars`` (``scalar_entries``): ``time_varying`` scalars are the Well's ``scalar_names`` (served per frame),
  the others its ``constant_scalar_names`` (per trajectory); the stored shape must be ``(n_traj,)`` when
  ``sample_varying`` then ``(T,)`` when ``time_varying``, empty when neither (``expected_scalar_shape``);
* ``/boundary_conditions/<group>`` (``boundary_edges``): its ``mask`` (shape: the grid along the group's
  ``associated_dims``) must mark whole edges of the domain along those axes and nothing inside; a ``PERIODIC``
  group marks both edges of each of its axes; two groups may not mark the same edge. A mask that marks interior
  points or part of an edge and a time- or sample-varying mask are refused. A ``values`` dataset (the boundary
  values, one per marked point) is not read, as the Well's loader does not read it (a warning). Edges no group
  marks are ``OPEN``, as in the Well's reader; a group whose mask marks nothing applies nowhere, as there (a
  warning, also in ``validate``).

* a PERIODIC axis stored endpoint-inclusive (``linspace(0, L, N)``: first and last point one period apart, the same
  values in every field) is refused with the fix (``check_periodic_endpoints``), never read as another grid.

Every refusal is a ``SpecificationError`` naming the file, the group and the attribute.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import h5py
import numpy as np

from well_upao.data.well_format import FIELD_GROUPS

logger = logging.getLogger(__name__)

SUPPORTED_GRID_TYPES = ("cartesian",)
#: what an edge no boundary group marks is, as the Well's reader (``_padding_bcs``) takes it
UNMARKED_EDGE = "OPEN"


class SpecificationError(ValueError):
    """A part of the Well's specification this package does not read (message: file, group, attribute)."""


def _flag(value) -> bool:
    return bool(np.asarray(value).item()) if value is not None else False


def check_grid_type(f: h5py.File, path: str) -> None:
    """Refuse a ``grid_type`` other than ``cartesian`` (the Well also writes ``spherical``)."""
    grid_type = f.attrs.get("grid_type", "cartesian")
    grid_type = grid_type.decode() if isinstance(grid_type, bytes) else str(grid_type)
    if grid_type.lower() not in SUPPORTED_GRID_TYPES:
        raise SpecificationError(
            f"{path}: root attribute grid_type = {grid_type!r} is not supported (only cartesian grids are read: "
            "finite differences need an equally spaced Cartesian grid)"
        )


@dataclass(frozen=True)
class FieldEntry:
    """One field of a ``t*_fields`` group and its specification attributes."""

    order: int
    name: str
    time_varying: bool
    sample_varying: bool
    dim_varying: tuple[bool, ...]


def field_entries(f: h5py.File) -> list[FieldEntry]:
    """Every field of the three groups in the Well's order (t0, t1, t2; each group's ``field_names`` order)."""
    n_dims = len(f["dimensions"].attrs["spatial_dims"])
    entries = []
    for order, group in enumerate(FIELD_GROUPS):
        for name in f[group].attrs["field_names"]:
            attrs = f[group][str(name)].attrs if str(name) in f[group] else {}  # a missing one: validate says so
            dim_varying = attrs.get("dim_varying", [True] * n_dims)
            entries.append(
                FieldEntry(
                    order,
                    str(name),
                    _flag(attrs.get("time_varying", True)),
                    _flag(attrs.get("sample_varying", True)),
                    tuple(bool(d) for d in np.asarray(dim_varying).reshape(-1)),
                )
            )
    return entries


def read_field(
    dataset: h5py.Dataset, entry: FieldEntry, n_traj: int, indices: Sequence[int], resolution: Sequence[int]
) -> np.ndarray:
    """Frames ``indices`` of the first ``n_traj`` trajectories of a time-varying field, float64
    ``(n_traj, len(indices), *resolution, D**order)`` (no component axis for order 0): axes the file does not store
    (``sample_varying`` / ``dim_varying`` false) are broadcast as the Well's reader tiles them."""
    if not entry.time_varying:
        raise ValueError(f"{dataset.name} is a constant field (time_varying = false): it has no frames")
    index: tuple = ((slice(0, n_traj),) if entry.sample_varying else ()) + (list(indices),)
    data = np.asarray(dataset[index], dtype=np.float64)
    if not entry.sample_varying:
        data = data[None]
    stored = [n if used else 1 for n, used in zip(resolution, entry.dim_varying, strict=True)]
    components = data.shape[2 + len(stored) :]
    data = data.reshape(data.shape[0], data.shape[1], *stored, *components)
    return np.broadcast_to(data, (n_traj, len(indices), *resolution, *components)).copy()


@dataclass(frozen=True)
class ScalarEntry:
    """One ``/scalars`` dataset and its specification attributes."""

    name: str
    time_varying: bool
    sample_varying: bool
    shape: tuple[int, ...]


def scalar_entries(f: h5py.File) -> list[ScalarEntry]:
    """The ``/scalars`` listed in its ``field_names`` (empty without the group)."""
    if "scalars" not in f:
        return []
    group = f["scalars"]
    return [
        ScalarEntry(
            str(name),
            _flag(group[str(name)].attrs.get("time_varying", False)),
            _flag(group[str(name)].attrs.get("sample_varying", False)),
            tuple(group[str(name)].shape),
        )
        for name in group.attrs.get("field_names", [])
        if str(name) in group
    ]


def expected_scalar_shape(entry: ScalarEntry, n_traj: int, n_steps: int) -> tuple[int, ...]:
    """The shape the specification gives a scalar with these attributes (the Well's reader indexes it so)."""
    return ((n_traj,) if entry.sample_varying else ()) + ((n_steps,) if entry.time_varying else ())


def scalar_shape_problem(entry: ScalarEntry, n_traj: int, n_steps: int) -> str | None:
    """Why a scalar's stored shape disagrees with its ``sample_varying`` / ``time_varying`` (``None`` if it agrees).
    A constant scalar stored as one value per trajectory without ``sample_varying`` is accepted (ours are written
    so, and a single value broadcasts)."""
    expected = expected_scalar_shape(entry, n_traj, n_steps)
    if entry.shape == expected:
        return None
    if not entry.time_varying and not entry.sample_varying and entry.shape in ((1,), (n_traj,)):
        return None
    return (
        f"/scalars/{entry.name} has shape {entry.shape} but its attributes sample_varying = {entry.sample_varying}, "
        f"time_varying = {entry.time_varying} give {expected} (n_trajectories = {n_traj}, {n_steps} frames)"
    )


def read_constant_scalar(dataset: h5py.Dataset, entry: ScalarEntry, n_traj: int) -> np.ndarray:
    """A constant scalar's value per trajectory ``(n_traj,)`` float64."""
    value = np.asarray(dataset, dtype=np.float64).reshape(-1)
    return np.array(value[:n_traj] if value.size > 1 else np.broadcast_to(value, (n_traj,)), dtype=np.float64)


def read_varying_scalar(dataset: h5py.Dataset, entry: ScalarEntry, n_traj: int, indices: Sequence[int]) -> np.ndarray:
    """A time-varying scalar at frames ``indices`` per trajectory ``(n_traj, len(indices))`` float64 (``(T,)`` when
    not ``sample_varying``, broadcast over trajectories)."""
    values = np.asarray(dataset, dtype=np.float64)
    values = values[:n_traj, list(indices)] if entry.sample_varying else values[None, list(indices)]
    return np.broadcast_to(values, (n_traj, len(indices))).copy()


def boundary_edges(f: h5py.File, path: str, spatial: Sequence[str], resolution: Sequence[int]) -> tuple:
    """Per spatial axis, the boundary type of its low and high edge ``((low, high), ...)`` read from the groups'
    masks (see the module docstring for what is refused); an edge no group marks is ``UNMARKED_EDGE``."""
    edges: list[list[str | None]] = [[None, None] for _ in spatial]
    owners: list[list[str | None]] = [[None, None] for _ in spatial]
    if "boundary_conditions" not in f:
        return tuple((UNMARKED_EDGE, UNMARKED_EDGE) for _ in spatial)
    for name, group in f["boundary_conditions"].items():
        where = f"{path}: /boundary_conditions/{name}"
        bc_type, dims = checked_group(group, where, spatial)
        marked_sides = marked_edges(group, where, bc_type, dims, tuple(int(resolution[spatial.index(d)]) for d in dims))
        for dim, side in marked_sides:
            axis = list(spatial).index(dim)
            if edges[axis][side] is not None and edges[axis][side] != bc_type:
                raise SpecificationError(
                    f"{where}: 'mask' marks the {('low', 'high')[side]} edge of axis {dim!r} as {bc_type}, which "
                    f"/boundary_conditions/{owners[axis][side]} marks as {edges[axis][side]}"
                )
            edges[axis][side], owners[axis][side] = bc_type, name
    for axis, (low, high) in enumerate(edges):
        if (low == "PERIODIC") != (high == "PERIODIC"):
            raise SpecificationError(
                f"{path}: /boundary_conditions: axis {spatial[axis]!r} is PERIODIC on one edge only ({low}, {high})"
            )
    return tuple((low or UNMARKED_EDGE, high or UNMARKED_EDGE) for low, high in edges)


def checked_group(group: h5py.Group, where: str, spatial: Sequence[str]) -> tuple[str, list[str]]:
    """A boundary group's ``bc_type`` and ``associated_dims``, its attributes checked (time- or sample-varying
    boundaries refused, ``values`` read past with a warning, a ``mask`` present)."""
    bc_type = str(group.attrs.get("bc_type", "")).upper()
    dims = [str(d) for d in group.attrs.get("associated_dims", [])]
    if not dims or not set(dims) <= set(spatial):
        raise SpecificationError(f"{where}: attribute associated_dims = {dims} is not within {list(spatial)}")
    for attribute in ("time_varying", "sample_varying"):
        if _flag(group.attrs.get(attribute, False)):
            raise SpecificationError(
                f"{where}: attribute {attribute} = true is not supported (boundaries fixed in time and shared by "
                "every trajectory only)"
            )
    if "values" in group and group["values"].size:
        logger.warning(
            f"{where}: dataset 'values' ({group['values'].size} boundary values) is not read, as in the Well's "
            "loader: only the boundary's type is; UPAO's band loss takes its reference from the frames' band"
        )
    if "mask" not in group:
        raise SpecificationError(f"{where}: no 'mask' dataset (the specification stores one per group)")
    return bc_type, dims


def marked_edges(group: h5py.Group, where: str, bc_type: str, dims: list[str], shape: tuple[int, ...]) -> list:
    """The ``(axis name, side)`` pairs (side 0 low, 1 high) whose whole edge a group's ``mask`` marks; a mask marking
    interior points or part of an edge, or a PERIODIC one marking one edge of an axis, is refused; one marking
    nothing applies nowhere (a warning), as in the Well's reader."""
    mask = np.asarray(group["mask"]).astype(bool)
    if mask.shape != shape:
        raise SpecificationError(
            f"{where}: 'mask' has shape {mask.shape}, the grid along associated_dims {dims} is {shape}"
        )
    edge_points = np.zeros(shape, dtype=bool)
    covered = np.zeros(shape, dtype=bool)
    marked = []
    for axis, dim in enumerate(dims):
        for side, index in enumerate((0, -1)):
            selector = [slice(None)] * len(shape)
            selector[axis] = index
            face_points = np.zeros(shape, dtype=bool)
            face_points[tuple(selector)] = True
            edge_points |= face_points
            if mask.take(index, axis=axis).all():
                marked.append((dim, side))
                covered |= face_points
    inside = mask & ~edge_points
    if inside.any():
        raise SpecificationError(
            f"{where}: 'mask' marks {int(inside.sum())} points inside the domain (attribute bc_type = {bc_type}); "
            "only masks marking whole edges of the domain are read"
        )
    if (mask & ~covered).any():
        raise SpecificationError(
            f"{where}: 'mask' marks part of an edge (attribute bc_type = {bc_type}); only whole edges are read"
        )
    if not marked:  # the Well's reader applies such a group nowhere (its own example file has two)
        logger.warning(
            f"{where}: 'mask' marks no edge of the domain (attribute bc_type = {bc_type}): the group applies "
            f"nowhere, as in the Well's reader; its edges are read from the other groups, else as {UNMARKED_EDGE}"
        )
    if bc_type == "PERIODIC" and marked:
        for dim in dims:
            if {side for d, side in marked if d == dim} != {0, 1}:
                raise SpecificationError(
                    f"{where}: attribute bc_type = PERIODIC but 'mask' marks one edge of axis {dim!r}; a periodic "
                    "boundary marks both"
                )
    return marked


#: relative size (to a field's largest magnitude) below which two stored values count as the same: float32 rounding
DUPLICATE_TOLERANCE = 1e-5


def stores_endpoint_twice(samples: Sequence[tuple[np.ndarray, int]]) -> bool:
    """Whether an axis holds its endpoint twice: ``samples`` are ``(frames of one field, the axis's position in
    them)``; true when some field varies along the axis and every field's first and last slices along it agree to
    ``DUPLICATE_TOLERANCE`` of the field's largest magnitude (the same point stored twice, one period apart). The
    readers refuse such a periodic axis (``check_periodic_endpoints``); ``well-upao import`` drops the duplicate."""
    same_ends, varies = bool(samples), False
    for data, along in samples:
        data = np.asarray(data, dtype=np.float64)
        scale = max(float(np.abs(data).max()), 1e-30)
        first, last = data.take(0, axis=along), data.take(-1, axis=along)
        same_ends &= bool(np.abs(first - last).max() <= DUPLICATE_TOLERANCE * scale)
        varies |= bool(np.abs(data - np.expand_dims(first, along)).max() > DUPLICATE_TOLERANCE * scale)
    return same_ends and varies


def check_periodic_endpoints(f: h5py.File, path: str, spatial: Sequence[str], edges: Sequence[tuple[str, str]]) -> None:
    """Refuse a PERIODIC axis stored endpoint-inclusive (e.g. ``linspace(0, L, N)``, the Well's dummy writer's grid):
    its first and last points are one period apart, the same point stored twice, so every field holds the same
    values there. Read as ``N`` distinct periodic points it would be a different grid (wrong neighbours at the seam,
    a period ``N / (N - 1)`` too long). Detected on the time-varying fields of the first trajectory at its first,
    middle and last frame: an axis along which some field varies, and whose two end slices agree in every field to
    ``DUPLICATE_TOLERANCE`` of the field's size, is refused by name with the fix."""
    entries = [e for e in field_entries(f) if e.time_varying]
    for axis, (low, _) in enumerate(edges):
        if low != "PERIODIC" or not entries:
            continue
        samples: list[tuple[np.ndarray, int]] = []
        for entry in entries:
            group = f[FIELD_GROUPS[entry.order]]
            if entry.name not in group or len(entry.dim_varying) != len(spatial) or not entry.dim_varying[axis]:
                continue  # a missing or misshapen field: validate names it
            dataset = group[entry.name]
            stored_axes = [a for a, used in enumerate(entry.dim_varying) if used]
            if dataset.ndim != entry.sample_varying + 1 + len(stored_axes) + (entry.order > 0):
                continue
            n_steps = dataset.shape[1 if entry.sample_varying else 0]
            frames = sorted({0, n_steps // 2, n_steps - 1})
            lead = ((0,) if entry.sample_varying else ()) + (frames,)
            data = np.asarray(dataset[lead], dtype=np.float64)  # (frames, *space[, components])
            samples.append((data, 1 + stored_axes.index(axis)))
        if stores_endpoint_twice(samples):
            name = spatial[axis]
            raise SpecificationError(
                f"{path}: /dimensions/{name}: the periodic axis {name!r} stores its endpoint twice (its first and last "
                f"points hold the same values in every field: one period apart, e.g. linspace(0, L, N)); read as "
                f"{int(f['dimensions'][name].shape[-1])} distinct periodic points it would be another grid. Store it "
                "without the endpoint (linspace(0, L, N - 1, endpoint=False), dropping the last point of every field "
                "along it; `well-upao import` does so) or mark the axis other than PERIODIC"
            )
