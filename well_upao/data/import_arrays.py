"""A user's arrays with every stored axis named: the stored arrays a field is read from, one trajectory at a time.

What users get wrong about their arrays' axes, and what is done here about it (each refusal an ``ImportInputError``:
one line naming the problem and the fix, raised before a file is written; ``well_upao.data.import_plan`` checks the
fields against each other, ``well_upao.data.import_grid`` the time axis and the grid):

* **Which axis is which.** Every stored axis is named: ``trajectory``, ``time``, ``x``, ``y``, ``z`` and the
  component axes ``i`` (and ``j`` for a tensor), the names the Well's own ``hdf5_to_xarray`` gives them. Numpy
  arrays get their names from ``dims`` (``"time y x"``, as xarray and netCDF files often store them), named arrays
  (xarray's ``DataArray``) carry theirs, renamed by ``dim_names`` (``{"lat": "y", "lon": "x"}``). Whatever the
  stored order, frames are handed on as ``(time, x, y, z, i, j)``.
* **Vector components.** Component ``k`` of a stored component axis is the one along the ``k``-th spatial axis
  (``x, y, z``) unless ``components`` names the stored order (``("y", "x")``) or the component axis carries labels
  (``i = ["x", "y"]``, as the Well's export writes them); a vector can also be given as one array per axis
  (``{"x": u, "y": v}``).
* **Shapes of one field.** Trajectories given as a list must have one length (a ragged list is refused, naming
  ``frames`` to cut them); every axis is named once; a field without a time axis is refused.

A field reads one trajectory at a time (``FieldSource.read``): nothing here holds more than that, so arrays larger
than memory (memory maps, HDF5 or netCDF variables, lazily indexed xarray variables) stream.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from well_upao.data.well_format import AXIS_NAMES

#: the axis names of the Well's layout (and of its ``hdf5_to_xarray``), in the order frames are handed on
TRAJECTORY, TIME, COMPONENTS = "trajectory", "time", ("i", "j")
CANONICAL = (TIME, *AXIS_NAMES, *COMPONENTS)
KNOWN_DIMS = (TRAJECTORY, *CANONICAL)
#: names of named arrays' dimensions read as ours without being told (the Well's export calls trajectories sample)
DIM_SYNONYMS = {"sample": TRAJECTORY, "t": TIME}


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


def field_source(
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
        return _by_components(name, value, dims, dim_names, n_spatial)
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


def _by_components(
    name: str, value: Mapping, dims: tuple[str, ...] | None, dim_names: Mapping[str, str], n_spatial: int | None
) -> FieldSource:
    """A field given as one array per component, keyed by the axes it points along (``{"x": u, "y": v}``)."""
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
    if _named(sample) is not None:
        return _checked(_named_stored(name, value, sample, dim_names, extra))
    base = _base_dims(name, value, dims, n_spatial)
    trailing = len(sample.shape) - len(base) if extra is None else extra
    if not 0 <= trailing <= 2 or any(d in COMPONENTS for d in base):
        return StoredArray(name, value, base)  # sizes() names the disagreement
    return _checked(StoredArray(name, value, (*base, *COMPONENTS[:trailing])))


def _checked(stored: StoredArray) -> StoredArray:
    """``stored``, refused where an axis is named twice or none is time."""
    name = stored.field
    problems = [d for d in stored.dims if stored.dims.count(d) > 1]
    if problems:
        raise ImportInputError(f"field {name!r}: axis {problems[0]!r} is named twice in its dims {stored.dims}")
    if TIME not in stored.dims:
        raise ImportInputError(
            f"field {name!r} has no time axis (its axes: {' '.join(stored.dims)}): constant fields are not imported; "
            "name its time axis with --dims or --dim-names, or leave the field out (--fields)"
        )
    return stored


def our_name(theirs: str, dim_names: Mapping[str, str]) -> str:
    """Our name of a named array's dimension: ``dim_names``'s, else a synonym's (``sample``, ``t``), else its own."""
    return dim_names.get(theirs, DIM_SYNONYMS.get(theirs, theirs))


def _named_stored(name: str, value: Any, sample: Any, dim_names: Mapping[str, str], extra) -> StoredArray:
    """A named array (xarray's ``DataArray``, or a list of them) with its dimensions renamed to ours, and the labels
    its component axes carry (``i = ["x", "y"]``)."""
    own = _named(sample) or ()
    named = tuple(our_name(d, dim_names) for d in own)
    unknown = [d for d, ours in zip(own, named, strict=True) if ours not in KNOWN_DIMS]
    if unknown:
        raise ImportInputError(
            f"field {name!r} has dimension {unknown[0]!r}, which is none of {', '.join(KNOWN_DIMS)}: map it with "
            f"--dim-names {unknown[0]}=y (Python: dim_names={{{unknown[0]!r}: 'y'}})"
        )
    labels: dict[str, tuple[str, ...]] = {}
    for ours, theirs in zip(named, own, strict=True):
        coordinate = getattr(sample, "coords", {}).get(theirs) if ours in COMPONENTS else None
        values = np.asarray(coordinate) if coordinate is not None else None
        if values is not None and values.dtype.kind in "USO" and all(isinstance(v, str) for v in values.tolist()):
            labels[ours] = tuple(values.tolist())
    if extra == 0 and any(d in COMPONENTS for d in named):
        raise ImportInputError(f"component {name!r} has a component axis itself: give each component as a scalar")
    return StoredArray(name, value, named, labels)


def _base_dims(name: str, value: Any, dims: tuple[str, ...] | None, n_spatial: int | None) -> tuple[str, ...]:
    """An unnamed array's axes before its component axes: ``dims``, else ``trajectory time`` and the ``n_spatial``
    first spatial axes (without ``trajectory`` for a list of trajectories)."""
    base = parse_dims(dims) if dims is not None else None
    if base is None:
        if n_spatial is None:
            raise ImportInputError(
                f"field {name!r}: its axes are not named: give --dims (e.g. 'trajectory time y x'; Python: dims=)"
            )
        base = (TRAJECTORY, TIME, *AXIS_NAMES[:n_spatial])
    if isinstance(value, list | tuple):
        base = tuple(d for d in base if d != TRAJECTORY)
    return base


def coordinate_of(fields: Sequence[FieldSource], dim: str, dim_names: Mapping[str, str]) -> Any:
    """The coordinate a named array carries for our axis ``dim`` (its values), else ``None``."""
    for source in fields:
        for part in source.parts.values():
            sample = part.array[0] if part.per_trajectory else part.array
            for theirs in _named(sample) or ():
                if our_name(theirs, dim_names) == dim:
                    coordinate = getattr(sample, "coords", {}).get(theirs)
                    if coordinate is not None:
                        return coordinate
    return None
