"""The plan of an import: the user's fields on one set of trajectories, frames and grid, with the time axis, the grid
and the scalars, checked before anything is written (``plan_import``, which ``well_upao.data.importing`` writes).

* **Shapes.** Every field on the same trajectories, frames and grid (two that disagree are refused, naming both and
  how each was read); the spatial axes are ``x``, ``[y, [z]]`` in that order; a vector holds one component per
  spatial axis (a tensor one per pair); ``frames`` keeps a contiguous range of at least 2 stored frames.
* **The order of the fields** is the Well's: scalar fields, then vectors, then tensors (stable within an order).
* **A periodic axis stored endpoint-inclusive** (``linspace(0, L, N)``: the first and last points are one period
  apart, the same values in every field; ``specification.stores_endpoint_twice``) loses its last point, and the plan
  says so in its ``notes``.

Each refusal is an ``ImportInputError``: one line naming the problem and the fix. The axes of one field are named in
``well_upao.data.import_arrays``, the time axis and grid read in ``well_upao.data.import_grid``, the scalars in
``well_upao.data.import_scalars``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from well_upao.data.import_arrays import (
    COMPONENTS,
    TIME,
    TRAJECTORY,
    FieldSource,
    ImportInputError,
    component_keys,
    field_source,
)
from well_upao.data.import_grid import grid, time_axis
from well_upao.data.import_scalars import per_frame_scalars, per_trajectory_scalars
from well_upao.data.specification import stores_endpoint_twice
from well_upao.data.well_format import AXIS_NAMES


@dataclass
class ImportPlan:
    """Everything needed to write the dataset, checked: the fields (in the Well's order), the grid, the time axis,
    the scalars, and ``notes``: what was read and changed, in sentences."""

    fields: list[FieldSource]
    n_trajectories: int
    frames: slice  # the stored frames kept
    times: np.ndarray  # float64, the kept frames' times
    dt: float
    time_unit: str | None
    axes: tuple[str, ...]  # ("x",), ("x", "y") or ("x", "y", "z")
    shape: tuple[int, ...]  # points per axis, as written
    coordinates: tuple[np.ndarray, ...]
    boundaries: tuple[str, ...]  # PERIODIC / WALL / OPEN per axis
    scalars: dict[str, np.ndarray]  # per source trajectory, float64
    varying_scalars: dict[str, np.ndarray]  # (n_traj, T) float64 over the kept frames
    notes: list[str] = field(default_factory=list)

    @property
    def n_steps(self) -> int:
        return len(self.times)

    def keep(self) -> dict[str, int]:
        return dict(zip(self.axes, self.shape, strict=True))

    def read(self, source: FieldSource, trajectory: int, first: int, count: int) -> np.ndarray:
        """``count`` kept frames of one trajectory from kept frame ``first``, as written (float64)."""
        start = self.frames.start + first
        return source.read(trajectory, slice(start, start + count), self.keep(), len(self.axes))

    def channels(self, max_order: int = 2) -> list[str]:
        """The flattened channel names in the Well's order (t0 fields, then each component of the t1 fields, ...), of
        the fields of tensor order up to ``max_order``."""
        out = []
        for source in self.fields:
            if source.order <= max_order:
                out += channels_of(source, len(self.axes))
        return out

    def bytes_per_trajectory(self, n_steps: int | None = None) -> int:
        """Stored float32 bytes of one trajectory (``n_steps`` frames, default all kept)."""
        points = math.prod(self.shape)
        steps = self.n_steps if n_steps is None else n_steps
        return 4 * steps * points * sum(len(self.axes) ** s.order for s in self.fields)


def channels_of(source: FieldSource, n_dims: int) -> list[str]:
    """The flattened channel names of one field: its name, or one per component (``velocity_x``, ``D_xy``)."""
    suffixes = ["".join(AXIS_NAMES[k] for k in key) for key in component_keys(source.order, n_dims)]
    return [f"{source.name}_{s}" if s else source.name for s in suffixes]


def plan_import(
    fields: Mapping[str, Any],
    *,
    dims: str | Sequence[str] | Mapping[str, str | Sequence[str]] | None = None,
    dim_names: Mapping[str, str] | None = None,
    coordinates: Mapping[str, Any] | None = None,
    spacing: Mapping[str, float] | None = None,
    boundaries: str | Mapping[str, str] = "periodic",
    times: Any = None,
    dt: float | None = None,
    time_unit: str | None = None,
    components: Mapping[str, Sequence[str]] | None = None,
    scalars: Mapping[str, Any] | None = None,
    varying_scalars: Mapping[str, Any] | None = None,
    frames: slice | None = None,
) -> ImportPlan:
    """Name, order and check the user's arrays (see the module docstring and ``well_upao.data.importing``)."""
    if not fields:
        raise ImportInputError("no fields to import: give at least one array that changes in time")
    dim_names = dict(dim_names or {})
    sources = _field_sources(fields, dims, dim_names, components, _spatial_hint(dims, coordinates, spacing))
    sizes = _agreed_sizes(sources)
    axes = _spatial_axes(sizes)
    _check_components(sources, axes)
    n_traj, stored_steps = sizes.get(TRAJECTORY, 1), sizes[TIME]
    frames = _frames(frames, stored_steps)
    notes: list[str] = []
    time_values, step, unit = time_axis(times, dt, time_unit, stored_steps, frames, sources, dim_names, notes)
    coords, bcs = grid(axes, sizes, coordinates, spacing, boundaries, sources, dim_names)
    plan = ImportPlan(
        fields=sources,
        n_trajectories=n_traj,
        frames=frames,
        times=time_values,
        dt=step,
        time_unit=unit,
        axes=axes,
        shape=tuple(sizes[a] for a in axes),
        coordinates=coords,
        boundaries=bcs,
        scalars=per_trajectory_scalars(scalars or {}, n_traj, [s.name for s in sources]),
        varying_scalars=per_frame_scalars(varying_scalars or {}, n_traj, stored_steps, frames),
        notes=notes,
    )
    _drop_duplicated_endpoints(plan)
    plan.notes.insert(0, _axes_note(sources, axes))
    return plan


def _field_sources(
    fields: Mapping[str, Any],
    dims: str | Sequence[str] | Mapping[str, str | Sequence[str]] | None,
    dim_names: Mapping[str, str],
    components: Mapping[str, Sequence[str]] | None,
    hint: int | None,
) -> list[FieldSource]:
    """Every field with its axes named (``dims`` shared, or per field), in the Well's order: t0 fields, then t1,
    then t2 (stable within an order)."""
    per_field = dict(dims) if isinstance(dims, Mapping) else {}
    shared = None if isinstance(dims, Mapping) else dims
    sources = []
    for name, value in fields.items():
        own = per_field.get(name, shared)
        order = None if components is None else components.get(name)
        sources.append(field_source(str(name), value, own, dim_names, hint, order))
    sources.sort(key=lambda s: s.order)
    return sources


def _spatial_hint(dims, coordinates, spacing) -> int | None:
    """How many spatial axes unnamed arrays have when ``dims`` is not given: the axes ``coordinates`` or ``spacing``
    name."""
    if dims is not None:
        return None
    named = set(coordinates or {}) | set(spacing or {})
    return len(named) or None


def _agreed_sizes(sources: list[FieldSource]) -> dict[str, int]:
    """The size of every named axis, the same in every field (refused, naming both, where two disagree)."""
    agreed: dict[str, tuple[int, str]] = {}
    for source in sources:
        for part in source.parts.values():
            for dim, size in part.sizes().items():
                known = agreed.setdefault(dim, (size, part.field))
                if dim not in COMPONENTS and known[0] != size:
                    what = {TRAJECTORY: "trajectories", TIME: "frames"}.get(dim, f"points along {dim}")
                    raise ImportInputError(
                        f"field {part.field!r} has {size} {what} but {known[1]!r} has {known[0]}: every field must "
                        f"share trajectories, frames and grid (check the axes' names and order: "
                        f"{part.field!r} is read as ({' '.join(part.dims)}))"
                    )
    return {dim: size for dim, (size, _) in agreed.items()}


def _spatial_axes(sizes: Mapping[str, int]) -> tuple[str, ...]:
    """The spatial axes the fields have: ``x``, ``x y`` or ``x y z`` (refused otherwise)."""
    axes = tuple(d for d in AXIS_NAMES if d in sizes)
    if axes != AXIS_NAMES[: len(axes)] or not axes:
        named = [d for d in AXIS_NAMES if d in sizes]
        raise ImportInputError(
            f"the spatial axes are {named or 'missing'}: name them x, y, z in order (--dims or --dim-names)"
        )
    return axes


def _check_components(sources: list[FieldSource], axes: tuple[str, ...]) -> None:
    """Each field's components agree with its tensor order and the number of spatial axes: one component axis per
    order, holding one component per spatial axis, or one array per component."""
    for source in sources:
        for key, part in source.parts.items():
            if source.order and key == () and sum(d in COMPONENTS for d in part.dims) != source.order:
                raise ImportInputError(f"field {source.name!r}: its component axes do not match its tensor order")
        own = source.parts[()].sizes() if () in source.parts else {}
        for axis in COMPONENTS[: source.order]:
            if axis in own and own[axis] != len(axes):
                raise ImportInputError(
                    f"field {source.name!r} has {own[axis]} components on axis {axis!r} in {len(axes)}D: a vector "
                    f"holds one component per spatial axis ({', '.join(axes)})"
                )
        if () not in source.parts and set(source.parts) != set(component_keys(source.order, len(axes))):
            names = ["".join(AXIS_NAMES[k] for k in key) for key in component_keys(source.order, len(axes))]
            raise ImportInputError(
                f"field {source.name!r} gives components {sorted(p.field for p in source.parts.values())}; in "
                f"{len(axes)}D it needs {names}"
            )


def _frames(frames: slice | None, stored: int) -> slice:
    """The kept stored frames as ``slice(start, stop)``: contiguous, at least 2."""
    frames = frames or slice(None)
    start, stop, step = frames.indices(stored)
    if step != 1:
        raise ImportInputError("frames must be a contiguous range (--frames START:STOP, no step)")
    if stop - start < 2:
        raise ImportInputError(f"frames {start}:{stop} of {stored} keep fewer than 2 frames: keep at least 2")
    return slice(start, stop)


def _drop_duplicated_endpoints(plan: ImportPlan) -> None:
    """Drop the last point of each periodic axis stored endpoint-inclusive, judged on the first trajectory's first,
    middle and last kept frame (``specification.stores_endpoint_twice``), and say so."""
    count = plan.n_steps
    picks = sorted({0, count // 2, count - 1})
    frames = [
        np.stack([plan.read(source, 0, first, 1)[0] for first in picks])  # (frames, *grid, components)
        for source in plan.fields
    ]
    shape = list(plan.shape)
    coords = list(plan.coordinates)
    for position, (axis, kind) in enumerate(zip(plan.axes, plan.boundaries, strict=True)):
        if kind != "PERIODIC" or shape[position] < 3:
            continue
        if stores_endpoint_twice([(data, 1 + position) for data in frames]):
            shape[position] -= 1
            coords[position] = coords[position][:-1]
            plan.notes.append(
                f"{axis}: periodic and stored endpoint-inclusive (its first and last points hold the same values in "
                f"every field): dropped the last point, {shape[position] + 1} -> {shape[position]} points"
            )
    plan.shape, plan.coordinates = tuple(shape), tuple(coords)


def _axes_note(sources: list[FieldSource], axes: tuple[str, ...]) -> str:
    """How each field's stored axes were read."""
    read = []
    for source in sources:
        for key, part in source.parts.items():
            label = part.field if key else source.name
            read.append(f"{label} ({' '.join(part.dims)})")
    return f"axes: read {', '.join(read)}; written as (trajectory time {' '.join(axes)}[ components])"
