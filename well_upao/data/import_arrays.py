"""A user's arrays as the Well's layout needs them: axes named and put in order, checked before anything is written.

What users get wrong, and what is done here about it (each refusal an ``ImportInputError``: one line naming the
problem and the fix, raised before a file is written):

* **Which axis is which.** Every stored axis is named: ``trajectory``, ``time``, ``x``, ``y``, ``z`` and the
  component axes ``i`` (and ``j`` for a tensor), the names the Well's own ``hdf5_to_xarray`` gives them. Numpy
  arrays get their names from ``dims`` (``"time y x"``, as xarray and netCDF files often store them), named arrays
  (xarray's ``DataArray``) carry theirs, renamed by ``dim_names`` (``{"lat": "y", "lon": "x"}``). Whatever the
  stored order, frames are handed on as ``(time, x, y, z, i, j)``.
* **Vector components.** Component ``k`` of a stored component axis is the one along the ``k``-th spatial axis
  (``x, y, z``) unless ``components`` names the stored order (``("y", "x")``) or the component axis carries labels
  (``i = ["x", "y"]``, as the Well's export writes them); a vector can also be given as one array per axis
  (``{"x": u, "y": v}``).
* **Time.** ``times`` (a coordinate, numbers or numpy datetimes with ``time_unit``) or ``dt``; the step must be
  uniform (``well_upao.axes.fit_uniform``, the readers' own test), ``dt`` and a coordinate must agree.
* **Grid.** ``coordinates`` or ``spacing`` per axis, equally spaced; ``boundaries`` per axis (``periodic``,
  ``wall``, ``open``). A periodic axis stored endpoint-inclusive (``linspace(0, L, N)``: the first and last points
  are one period apart, the same values in every field; ``specification.stores_endpoint_twice``) loses its last
  point, and the plan says so in its ``notes``.
* **Shapes.** Every field on the same trajectories, frames and grid; trajectories given as a list must have one
  length (a ragged list is refused, naming ``frames`` to cut them); a field without a time axis is refused.

The plan reads one trajectory of one field at a time (``FieldSource.read``): nothing here holds more than that, so
arrays larger than memory (memory maps, HDF5 or netCDF variables, lazily indexed xarray variables) stream.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from well_upao.axes import UnevenAxisError, fit_uniform
from well_upao.data.specification import stores_endpoint_twice
from well_upao.data.well_format import AXIS_NAMES, BC_TYPES

#: the axis names of the Well's layout (and of its ``hdf5_to_xarray``), in the order frames are handed on
TRAJECTORY, TIME, COMPONENTS = "trajectory", "time", ("i", "j")
CANONICAL = (TIME, *AXIS_NAMES, *COMPONENTS)
KNOWN_DIMS = (TRAJECTORY, *CANONICAL)
#: names of named arrays' dimensions read as ours without being told (the Well's export calls trajectories sample)
DIM_SYNONYMS = {"sample": TRAJECTORY, "t": TIME}
#: units a datetime or timedelta time axis can be converted to (``time_unit``), as numpy names them
TIME_UNITS = {"ns": "ns", "us": "us", "ms": "ms", "s": "s", "min": "m", "h": "h", "day": "D", "D": "D"}


class ImportInputError(ValueError):
    """Arrays that cannot become a dataset as given: the message names the problem and the fix, in one line."""


def _named(array: Any) -> tuple[str, ...] | None:
    """The dimension names an array carries (an xarray ``DataArray``), else ``None``."""
    dims = getattr(array, "dims", None)
    return tuple(str(d) for d in dims) if isinstance(dims, tuple) and dims else None


def parse_dims(dims: str | Sequence[str]) -> tuple[str, ...]:
    """``"trajectory time y x"`` (or a sequence) as a tuple of names."""
    return tuple(dims.replace(",", " ").split()) if isinstance(dims, str) else tuple(dims)


@dataclass
class StoredArray:
    """One stored array (a whole field, or one component of one) and the name of each of its axes.

    ``array`` is anything numpy can index (an ndarray, a memory map, an h5py or netCDF variable, an xarray
    ``DataArray``), or a list of such arrays, one per trajectory (``dims`` then has no ``trajectory``)."""

    field: str
    array: Any
    dims: tuple[str, ...]
    labels: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def per_trajectory(self) -> bool:
        return isinstance(self.array, list | tuple)

    def sizes(self) -> dict[str, int]:
        """Each named axis's length (``trajectory`` the list's length for a list of trajectories); a ragged list is
        refused."""
        if not self.per_trajectory:
            shape = tuple(self.array.shape)
            if len(shape) != len(self.dims):
                raise ImportInputError(
                    f"field {self.field!r} has {len(shape)} axes {shape} but its dims name {len(self.dims)} "
                    f"({' '.join(self.dims)}): name every axis with --dims (Python: dims=)"
                )
            return dict(zip(self.dims, shape, strict=True))
        shapes = [tuple(a.shape) for a in self.array]
        if not shapes:
            raise ImportInputError(f"field {self.field!r} is an empty list of trajectories: give at least one")
        for index, shape in enumerate(shapes):
            if len(shape) != len(self.dims):
                raise ImportInputError(
                    f"trajectory {index} of field {self.field!r} has {len(shape)} axes {shape} but dims name "
                    f"{len(self.dims)} ({' '.join(self.dims)}): name every axis with dims="
                )
            if shape != shapes[0]:
                differ = [d for d, a, b in zip(self.dims, shape, shapes[0], strict=True) if a != b]
                if differ == [TIME]:
                    lengths = sorted({s[self.dims.index(TIME)] for s in shapes})
                    raise ImportInputError(
                        f"ragged trajectories: field {self.field!r} has trajectories of {lengths} frames; the Well's "
                        f"layout needs one length: cut every trajectory to {lengths[0]} frames with --frames "
                        f"0:{lengths[0]} (Python: frames=slice(0, {lengths[0]})) or import the shorter ones apart"
                    )
                raise ImportInputError(
                    f"trajectory {index} of field {self.field!r} has shape {shape}, trajectory 0 {shapes[0]}: every "
                    "trajectory must be on the same grid"
                )
        return {TRAJECTORY: len(shapes), **dict(zip(self.dims, shapes[0], strict=True))}

    def read(self, trajectory: int, frames: slice, keep: Mapping[str, int]) -> np.ndarray:
        """Frames ``frames`` of one trajectory, float64, axes in ``CANONICAL`` order (``keep``: points kept per
        spatial axis, fewer than stored where a duplicated endpoint is dropped)."""
        if self.per_trajectory:
            array, dims = self.array[trajectory], self.dims
        else:
            array, dims = self.array, self.dims
        index = []
        for dim in dims:
            if dim == TRAJECTORY:
                index.append(trajectory)
            elif dim == TIME:
                index.append(frames)
            else:
                index.append(slice(0, keep.get(dim)))
        data = np.asarray(array[tuple(index)], dtype=np.float64)
        remaining = [d for d in dims if d != TRAJECTORY]
        return np.transpose(data, [remaining.index(d) for d in CANONICAL if d in remaining])


@dataclass
class FieldSource:
    """A field of the dataset: its name, tensor order and the stored arrays it is read from (one array holding its
    components on ``i`` / ``j`` axes, or one array per component, keyed by component index)."""

    name: str
    order: int
    parts: dict[tuple[int, ...], StoredArray]
    #: per component axis, the stored position of the component along spatial axis k (identity by default)
    permutations: dict[str, tuple[int, ...]] = field(default_factory=dict)

    def read(self, trajectory: int, frames: slice, keep: Mapping[str, int], n_dims: int) -> np.ndarray:
        """One trajectory's frames ``(T, *grid, D, ...)`` (``D`` once per tensor order), float64, components in the
        order of the axes."""
        if () in self.parts:
            data = self.parts[()].read(trajectory, frames, keep)
            for position, axis in enumerate(COMPONENTS[: self.order]):
                order = self.permutations.get(axis)
                if order is not None:
                    data = np.take(data, order, axis=data.ndim - self.order + position)
            return data
        blocks = [self.parts[key].read(trajectory, frames, keep) for key in component_keys(self.order, n_dims)]
        stacked = np.stack(blocks, axis=-1)
        return stacked.reshape(*stacked.shape[:-1], *((n_dims,) * self.order))


def component_keys(order: int, n_dims: int) -> list[tuple[int, ...]]:
    """Component indices of a tensor of ``order`` in ``n_dims`` dimensions, in the Well's flattened order."""
    keys: list[tuple[int, ...]] = [()]
    for _ in range(order):
        keys = [(*key, k) for key in keys for k in range(n_dims)]
    return keys


def _field_source(
    name: str,
    value: Any,
    dims: tuple[str, ...] | None,
    dim_names: Mapping[str, str],
    n_spatial: int | None,
    components: Sequence[str] | None,
) -> FieldSource:
    """A ``FieldSource`` from what the user gave for one field: one array, a list of trajectories, or a mapping
    from component names (``"x"``, ``"y"``; ``"xy"`` for a tensor) to arrays."""
    if isinstance(value, Mapping):
        parts, orders = {}, set()
        for label, part in value.items():
            label = str(label)
            if not label or any(c not in AXIS_NAMES for c in label):
                raise ImportInputError(
                    f"field {name!r}: component {label!r} is not named by axes (x, y, z): give a vector as "
                    "{'x': u, 'y': v}, components in the order of the axes"
                )
            orders.add(len(label))
            key = tuple(AXIS_NAMES.index(c) for c in label)
            parts[key] = _stored(f"{name}_{label}", part, dims, dim_names, n_spatial, extra=0)
        if len(orders) != 1:
            raise ImportInputError(f"field {name!r}: its components mix tensor orders ({sorted(value)})")
        return FieldSource(name, orders.pop(), parts)
    stored = _stored(name, value, dims, dim_names, n_spatial, extra=None)
    order = sum(d in COMPONENTS for d in stored.dims)
    source = FieldSource(name, order, {(): stored})
    for axis in COMPONENTS[:order]:
        labels = stored.labels.get(axis)
        if components is not None:
            labels = tuple(components)
        if labels is not None:
            source.permutations[axis] = _component_order(name, labels)
    return source


def _component_order(name: str, labels: Sequence[str]) -> tuple[int, ...]:
    """Stored positions of the components along x, y, z, from the stored order's labels."""
    labels = tuple(str(label) for label in labels)
    if sorted(labels) != sorted(AXIS_NAMES[: len(labels)]):
        raise ImportInputError(
            f"field {name!r}: its components are labelled {list(labels)}; name them by the axes they point along "
            f"({', '.join(AXIS_NAMES[: len(labels)])}) in their stored order with --components {name}=y,x "
            "(Python: components=)"
        )
    return tuple(labels.index(axis) for axis in AXIS_NAMES[: len(labels)])


def _stored(
    name: str, value: Any, dims: tuple[str, ...] | None, dim_names: Mapping[str, str], n_spatial: int | None, extra
) -> StoredArray:
    """One stored array with its axes named: its own names (renamed), else ``dims`` with component axes appended
    for the extra trailing axes (``extra`` fixes their number for a component array: 0)."""
    sample = value[0] if isinstance(value, list | tuple) and value else value
    own = _named(sample)
    labels: dict[str, tuple[str, ...]] = {}
    if own is not None:
        named = tuple(dim_names.get(d, DIM_SYNONYMS.get(d, d)) for d in own)
        unknown = [d for d, ours in zip(own, named, strict=True) if ours not in KNOWN_DIMS]
        if unknown:
            raise ImportInputError(
                f"field {name!r} has dimension {unknown[0]!r}, which is none of {', '.join(KNOWN_DIMS)}: map it with "
                f"--dim-names {unknown[0]}=y (Python: dim_names={{{unknown[0]!r}: 'y'}})"
            )
        for ours, theirs in zip(named, own, strict=True):
            coordinate = getattr(sample, "coords", {}).get(theirs) if ours in COMPONENTS else None
            values = np.asarray(coordinate) if coordinate is not None else None
            if values is not None and values.dtype.kind in "USO" and all(isinstance(v, str) for v in values.tolist()):
                labels[ours] = tuple(values.tolist())
        stored = StoredArray(name, value, named, labels)
        if extra == 0 and any(d in COMPONENTS for d in named):
            raise ImportInputError(f"component {name!r} has a component axis itself: give each component as a scalar")
    else:
        base = parse_dims(dims) if dims is not None else None
        ndim = len(sample.shape)
        if base is None:
            if n_spatial is None:
                raise ImportInputError(
                    f"field {name!r}: its axes are not named: give --dims (e.g. 'trajectory time y x'; Python: dims=)"
                )
            base = (TRAJECTORY, TIME, *AXIS_NAMES[:n_spatial])
        if isinstance(value, list | tuple):
            base = tuple(d for d in base if d != TRAJECTORY)
        trailing = ndim - len(base) if extra is None else extra
        if not 0 <= trailing <= 2 or any(d in COMPONENTS for d in base):
            return StoredArray(name, value, base)  # sizes() names the disagreement
        stored = StoredArray(name, value, (*base, *COMPONENTS[:trailing]))
    problems = [d for d in stored.dims if stored.dims.count(d) > 1]
    if problems:
        raise ImportInputError(f"field {name!r}: axis {problems[0]!r} is named twice in its dims {stored.dims}")
    if TIME not in stored.dims:
        raise ImportInputError(
            f"field {name!r} has no time axis (its axes: {' '.join(stored.dims)}): constant fields are not imported; "
            "name its time axis with --dims or --dim-names, or leave the field out (--fields)"
        )
    return stored


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
            if source.order > max_order:
                continue
            suffixes = ["".join(AXIS_NAMES[k] for k in key) for key in component_keys(source.order, len(self.axes))]
            out += [f"{source.name}_{s}" if s else source.name for s in suffixes]
        return out

    def bytes_per_trajectory(self, n_steps: int | None = None) -> int:
        """Stored float32 bytes of one trajectory (``n_steps`` frames, default all kept)."""
        points = math.prod(self.shape)
        steps = self.n_steps if n_steps is None else n_steps
        return 4 * steps * points * sum(len(self.axes) ** s.order for s in self.fields)


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
    per_field = dict(dims) if isinstance(dims, Mapping) else {}
    shared = None if isinstance(dims, Mapping) else dims
    hint = _spatial_hint(shared, coordinates, spacing)
    sources = []
    for name, value in fields.items():
        own = per_field.get(name, shared)
        order = None if components is None else components.get(name)
        sources.append(_field_source(str(name), value, own, dim_names, hint, order))
    sources.sort(key=lambda s: s.order)  # the Well's order: t0 fields, then t1, then t2 (stable within an order)
    sizes = _agreed_sizes(sources)
    axes = tuple(d for d in AXIS_NAMES if d in sizes)
    if axes != AXIS_NAMES[: len(axes)] or not axes:
        named = [d for d in AXIS_NAMES if d in sizes]
        raise ImportInputError(
            f"the spatial axes are {named or 'missing'}: name them x, y, z in order (--dims or --dim-names)"
        )
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
    n_traj = sizes.get(TRAJECTORY, 1)
    stored_steps = sizes[TIME]
    frames = _frames(frames, stored_steps)
    notes: list[str] = []
    time_values, step, unit = _time_axis(times, dt, time_unit, stored_steps, frames, sources, dim_names, notes)
    coords, bcs = _grid(axes, sizes, coordinates, spacing, boundaries, sources, dim_names)
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
        scalars=_constant_scalars(scalars or {}, n_traj, [s.name for s in sources]),
        varying_scalars=_varying_scalars(varying_scalars or {}, n_traj, stored_steps, frames),
        notes=notes,
    )
    _drop_duplicated_endpoints(plan)
    plan.notes.insert(0, _axes_note(sources, axes))
    return plan


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


def _frames(frames: slice | None, stored: int) -> slice:
    frames = frames or slice(None)
    start, stop, step = frames.indices(stored)
    if step != 1:
        raise ImportInputError("frames must be a contiguous range (--frames START:STOP, no step)")
    if stop - start < 2:
        raise ImportInputError(f"frames {start}:{stop} of {stored} keep fewer than 2 frames: keep at least 2")
    return slice(start, stop)


def _coordinate_of(sources: list[FieldSource], dim: str, dim_names: Mapping[str, str]):
    """The coordinate a named array carries for our axis ``dim`` (its values), else ``None``."""
    for source in sources:
        for part in source.parts.values():
            sample = part.array[0] if part.per_trajectory else part.array
            own = _named(sample)
            if own is None:
                continue
            for theirs in own:
                if dim_names.get(theirs, DIM_SYNONYMS.get(theirs, theirs)) == dim:
                    coordinate = getattr(sample, "coords", {}).get(theirs)
                    if coordinate is not None:
                        return coordinate
    return None


def _time_axis(times, dt, time_unit, stored, frames, sources, dim_names, notes):
    """The kept frames' float64 times, their uniform step and unit (see the module docstring)."""
    origin = "the given times"
    if times is None:
        times = _coordinate_of(sources, TIME, dim_names)
        origin = "the time coordinate"
    if times is not None:
        unit_attr = getattr(times, "attrs", {}).get("units") if time_unit is None else None
        values = np.asarray(times)
        if values.shape != (stored,):
            raise ImportInputError(
                f"the time axis has {values.shape} values for {stored} stored frames: give one time per frame"
            )
        if values.dtype.kind in "Mm":
            if time_unit is None:
                raise ImportInputError(
                    "the time axis holds dates or durations: pass --time-unit (s, min, h, day, ...; the unit of the "
                    "PDE's coefficients) to turn them into numbers (Python: time_unit=)"
                )
            if time_unit not in TIME_UNITS:
                raise ImportInputError(f"--time-unit {time_unit!r} is none of {', '.join(TIME_UNITS)}")
            values = (values - values[0]) / np.timedelta64(1, TIME_UNITS[time_unit])
            notes.append(f"time: dates turned into {time_unit} since the first frame")
        elif unit_attr and time_unit is None:
            time_unit = str(unit_attr)
        values = np.asarray(values, dtype=np.float64)[frames]
        axis = _uniform(values, "time")
        if dt is not None and not math.isclose(axis.step, dt, rel_tol=1e-6):
            raise ImportInputError(
                f"--dt {dt:g} disagrees with the step {axis.step:.9g} of the time axis ({origin}): drop --dt "
                "(Python: dt=) or correct it"
            )
        step = axis.step
    else:
        if dt is None:
            raise ImportInputError(
                "no time step: pass --dt DT (the time between stored frames, in the unit of the PDE's coefficients; "
                "Python: dt=) or a time coordinate"
            )
        if not (dt > 0 and math.isfinite(dt)):
            raise ImportInputError(f"--dt must be a positive number (got {dt})")
        values = np.arange(frames.start, frames.stop, dtype=np.float64) * dt
        step, origin = float(dt), "the given step"
    unit = f" {time_unit}" if time_unit else ""
    notes.append(f"time: {len(values)} frames, dt = {step:.9g}{unit} (from {origin})")
    return values, step, time_unit


def _uniform(values: np.ndarray, name: str):
    try:
        return fit_uniform(values, np.float64, name, "the imported data")
    except UnevenAxisError as error:
        fix = " (keep an equally spaced stretch with --frames START:STOP)" if name == "time" else " (or resample it)"
        raise ImportInputError(str(error) + fix) from error


def _grid(axes, sizes, coordinates, spacing, boundaries, sources, dim_names):
    """Each axis's coordinates (float64, equally spaced) and boundary type."""
    coordinates, spacing = dict(coordinates or {}), dict(spacing or {})
    unknown = sorted((set(coordinates) | set(spacing)) - set(axes))
    if unknown:
        raise ImportInputError(f"coordinates or spacing for axis {unknown[0]!r}, which the fields lack ({axes})")
    coords = []
    for axis in axes:
        if axis in coordinates:
            values = np.asarray(coordinates[axis], dtype=np.float64)
        elif axis in spacing:
            step = float(spacing[axis])
            if not (step > 0 and math.isfinite(step)):
                raise ImportInputError(f"spacing {axis}={step}: must be a positive number")
            values = np.arange(sizes[axis], dtype=np.float64) * step
        else:
            found = _coordinate_of(sources, axis, dim_names)
            if found is None:
                raise ImportInputError(
                    f"no coordinates for axis {axis!r}: pass --spacing {axis}=D{axis.upper()} (the distance between "
                    f"grid points; Python: spacing={{{axis!r}: ...}} or coordinates=)"
                )
            values = np.asarray(found, dtype=np.float64)
        if values.shape != (sizes[axis],):
            raise ImportInputError(
                f"axis {axis!r} has {values.shape} coordinates for {sizes[axis]} grid points: give one per point"
            )
        _uniform(values, axis)
        coords.append(values)
    if isinstance(boundaries, str):
        boundaries = dict.fromkeys(axes, boundaries)
    extra = sorted(set(boundaries) - set(axes))
    if extra:
        raise ImportInputError(f"a boundary for axis {extra[0]!r}, which the fields lack ({axes})")
    bcs = []
    for axis in axes:
        kind = str(boundaries.get(axis, "periodic")).upper()
        if kind not in BC_TYPES:
            raise ImportInputError(
                f"boundary {axis}={kind.lower()}: choose periodic, wall or open (--boundary {axis}=wall)"
            )
        bcs.append(kind)
    return tuple(coords), tuple(bcs)


def _constant_scalars(scalars: Mapping[str, Any], n_traj: int, field_names: list[str]) -> dict[str, np.ndarray]:
    """Per-trajectory constants (the PDE's parameters): one value for all, or one per trajectory."""
    out = {}
    for name, value in scalars.items():
        if name in field_names:
            raise ImportInputError(f"{name!r} is both a field and a scalar: rename one (--rename)")
        values = np.asarray(value, dtype=np.float64)
        if values.ndim == 0:
            values = np.full(n_traj, float(values))
        if values.shape != (n_traj,):
            raise ImportInputError(
                f"scalar {name!r} has shape {values.shape}: give one value, or one per trajectory ({n_traj},); a value "
                "per frame is a time-varying scalar (--varying-scalar)"
            )
        if not np.isfinite(values).all():
            raise ImportInputError(f"scalar {name!r} holds NaN or inf: give a finite value per trajectory")
        out[str(name)] = values
    return out


def _varying_scalars(scalars: Mapping[str, Any], n_traj: int, stored: int, frames: slice) -> dict[str, np.ndarray]:
    """Scalars given per frame (``(T,)``, the same in every trajectory, or ``(n_traj, T)``), over the kept frames."""
    out = {}
    for name, value in scalars.items():
        values = np.asarray(value, dtype=np.float64)
        if values.shape == (stored,):
            values = np.broadcast_to(values, (n_traj, stored))
        if values.shape != (n_traj, stored):
            raise ImportInputError(
                f"time-varying scalar {name!r} has shape {values.shape}: give one value per frame ({stored},) or "
                f"per trajectory and frame ({n_traj}, {stored})"
            )
        values = np.ascontiguousarray(values[:, frames])
        if not np.isfinite(values).all():
            raise ImportInputError(f"time-varying scalar {name!r} holds NaN or inf: give finite values")
        out[str(name)] = values
    return out


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
