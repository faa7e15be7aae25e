"""Where a user's arrays come from: a mapping of arrays, an ``.npz`` file, an xarray ``Dataset``, a netCDF or zarr
file, gathered into the fields, scalars, time and coordinates ``well_upao.data.import_plan`` plans from.

* **``.npz``** (``open_npz``): members saved uncompressed (``np.savez``) are memory-mapped, so a trajectory is read
  from disk when it is written and an archive larger than memory streams; compressed members
  (``np.savez_compressed``) are decompressed whole, one array at a time.
* **netCDF** (``.nc``, read with xarray's ``h5netcdf`` engine) and **zarr** (a ``.zarr`` folder, where the ``zarr``
  package is installed): opened lazily, so only the trajectory being written is read. xarray and h5netcdf are the
  optional extra ``io``.
* **Which variable is what.** ``rename`` first (``{"T": "temperature"}``); then the fields: ``fields`` by name, or
  every remaining variable that changes in time (an xarray variable with a ``time`` dimension, a numpy array with
  two axes or more); ``vectors`` assemble a vector field from one variable per axis (``{"velocity": ["u", "v"]}``:
  components in the order of the axes x, y, z); ``scalars`` and ``varying_scalars`` name variables (or give
  values); the time is ``time`` (a variable's name), else a variable called ``time`` or ``t``; coordinates are the
  variables called ``x``, ``y``, ``z`` (or ``coordinates``). In an xarray ``Dataset`` the floating-point variables
  over trajectories only (or nothing) are per-trajectory scalars and those over time (and trajectories) are
  per-frame scalars, unless named otherwise.
"""

from __future__ import annotations

import importlib.util
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from well_upao.data.import_arrays import TIME, TRAJECTORY, ImportInputError, our_name
from well_upao.data.well_format import AXIS_NAMES

NETCDF_SUFFIXES = (".nc", ".nc4", ".netcdf", ".cdf")
#: the optional extra that reads netCDF and zarr (pyproject.toml), and how to install it from a checkout
IO_EXTRA = "install the io extra (.venv/bin/pip install '.[io]' in the checkout)"


@dataclass
class Gathered:
    """What ``gather`` found: keyword arguments for ``plan_import`` and a description of the source."""

    fields: dict[str, Any]
    scalars: dict[str, Any] = field(default_factory=dict)
    varying_scalars: dict[str, Any] = field(default_factory=dict)
    times: Any = None
    coordinates: dict[str, Any] = field(default_factory=dict)
    description: str = "arrays"


def is_xarray_dataset(data: Any) -> bool:
    return hasattr(data, "data_vars") and hasattr(data, "dims")


def open_npz(path: str | Path) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` archive: a read-only memory map for a member stored uncompressed, else the array
    decompressed (see the module docstring)."""
    path = Path(path)
    out: dict[str, np.ndarray] = {}
    with zipfile.ZipFile(path) as archive, path.open("rb") as handle:
        for info in archive.infolist():
            if not info.filename.endswith(".npy"):
                continue
            name = info.filename[: -len(".npy")]
            if info.compress_type != zipfile.ZIP_STORED:
                with archive.open(info) as member:
                    out[name] = np.lib.format.read_array(member, allow_pickle=False)
                continue
            # the member's data starts after its local header: 30 bytes, the name and the extra field
            handle.seek(info.header_offset + 26)
            name_length, extra_length = np.frombuffer(handle.read(4), dtype="<u2")
            handle.seek(info.header_offset + 30 + int(name_length) + int(extra_length))
            version = np.lib.format.read_magic(handle)
            header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, fortran, dtype = header(handle)
            if dtype.hasobject:
                raise ImportInputError(f"{path}: array {name!r} holds Python objects: save numbers (no pickles)")
            order = "F" if fortran else "C"
            out[name] = np.memmap(path, dtype=dtype, mode="r", offset=handle.tell(), shape=shape, order=order)
    return out


def open_xarray(path: str | Path):
    """A netCDF file or zarr folder as a lazily read xarray ``Dataset``."""
    path = Path(path)
    if importlib.util.find_spec("xarray") is None:
        raise ImportInputError(f"reading {path.name} needs xarray: {IO_EXTRA}")
    import xarray as xr

    if path.suffix == ".zarr" or (path / ".zgroup").exists() or (path / "zarr.json").exists():
        if importlib.util.find_spec("zarr") is None:
            raise ImportInputError(
                f"reading the zarr store {path.name} needs the zarr package (.venv/bin/pip install zarr)"
            )
        return xr.open_zarr(path)
    if importlib.util.find_spec("h5netcdf") is None:
        raise ImportInputError(f"reading {path.name} needs h5netcdf: {IO_EXTRA}")
    try:
        return xr.open_dataset(path, engine="h5netcdf")
    except (OSError, ValueError) as error:
        raise ImportInputError(
            f"{path}: cannot read it as netCDF-4 ({' '.join(str(error).split())[:200]}); save it as netCDF-4 "
            "(xarray: ds.to_netcdf(path, engine='h5netcdf'))"
        ) from error


def open_source(path: str | Path) -> tuple[Any, str]:
    """The arrays of a file (an ``.npz`` archive's mapping, or an xarray ``Dataset``) and its kind."""
    path = Path(path)
    if not path.exists():
        raise ImportInputError(f"{path}: no such file or directory")
    if path.suffix == ".npz":
        return open_npz(path), "npz"
    if path.suffix in NETCDF_SUFFIXES or path.suffix in (".h5", ".hdf5"):
        return open_xarray(path), "netCDF"
    if path.suffix == ".zarr" or path.is_dir():
        return open_xarray(path), "zarr"
    raise ImportInputError(
        f"{path}: unknown kind of file ({path.suffix or 'no suffix'}): import .npz, netCDF (.nc) or zarr (.zarr)"
    )


def gather(
    data: Any,
    *,
    fields: Sequence[str] | None = None,
    rename: Mapping[str, str] | None = None,
    vectors: Mapping[str, Sequence[str]] | None = None,
    scalars: Mapping[str, Any] | None = None,
    varying_scalars: Mapping[str, Any] | None = None,
    time: str | None = None,
    coordinates: Mapping[str, Any] | None = None,
    dim_names: Mapping[str, str] | None = None,
) -> Gathered:
    """The fields, scalars, time and coordinates of ``data`` (a mapping of arrays, an xarray ``Dataset`` or a path),
    by the rules of the module docstring. A scalar or coordinate given as a string names a variable of ``data``;
    ``None`` as a scalar's value reads the variable of that name."""
    data, description = _opened(data)
    pool = _Variables.of(data, rename)
    found = Gathered(fields={}, description=description)
    found.times = _time(pool, time)
    found.coordinates = _coordinates(pool, coordinates)
    for target, given in (("scalars", scalars), ("varying_scalars", varying_scalars)):
        for name, value in dict(given or {}).items():
            if value is None or isinstance(value, str):
                value = np.asarray(pool.take(name if value is None else value, "scalar"))
            getattr(found, target)[name] = value
    for name, parts in dict(vectors or {}).items():
        if not 1 <= len(parts) <= 3:
            raise ImportInputError(f"--vector {name}: give one variable per axis (x, y[, z]), got {list(parts)}")
        found.fields[name] = {AXIS_NAMES[k]: pool.take(part, "vector component") for k, part in enumerate(parts)}
    dims = dict(dim_names or {})
    if pool.named:
        pool.claimed |= {str(c) for c in data.coords}
        _classify_scalars(pool.variables, pool.claimed, found, dims, fields)
    chosen = list(fields) if fields is not None else [n for n in pool.variables if n not in pool.claimed]
    for name in chosen:
        value = pool.take(name, "field")
        if fields is None and not _changes_in_time(value, pool.named, dims):
            continue
        found.fields[name] = value
    return found


def _opened(data: Any) -> tuple[Any, str]:
    """``data`` with a path opened (``open_source``), and a description of where it came from."""
    if isinstance(data, str | Path):
        opened, kind = open_source(data)
        return opened, f"{Path(data).name} ({kind})"
    return data, "an xarray Dataset" if is_xarray_dataset(data) else "arrays"


@dataclass
class _Variables:
    """The variables of the data by their names after ``rename``, and those already given a role (``claimed``)."""

    variables: dict[str, Any]
    named: bool  # an xarray Dataset (its variables carry dimension names)
    claimed: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, data: Any, rename: Mapping[str, str] | None) -> _Variables:
        """The variables of a mapping or an xarray ``Dataset`` (its data variables and coordinates), renamed."""
        named = is_xarray_dataset(data)
        keys = [*data.data_vars, *data.coords] if named else list(data)
        variables = {str(k): data[k] for k in keys}
        rename = dict(rename or {})
        missing = sorted(set(rename) - set(variables))
        if missing:
            raise ImportInputError(f"--rename names {missing[0]!r}, which is not in the data ({', '.join(variables)})")
        return cls({rename.get(k, k): v for k, v in variables.items()}, named)

    def take(self, name: str, role: str) -> Any:
        """The variable ``name``, claimed for ``role`` (refused, naming the variables, where there is none)."""
        if name not in self.variables:
            raise ImportInputError(f"{role} {name!r} is not in the data (variables: {', '.join(self.variables)})")
        self.claimed.add(name)
        return self.variables[name]


def _time(pool: _Variables, time: str | None) -> Any:
    """The time variable: ``time`` by name, else (arrays only) a one-dimensional ``time`` or ``t``, else ``None``."""
    if time is not None:
        return np.asarray(pool.take(time, "the time variable"))
    if not pool.named:
        for candidate in ("time", "t"):
            if candidate in pool.variables and np.ndim(pool.variables[candidate]) == 1:
                return np.asarray(pool.take(candidate, "the time variable"))
    return None


def _coordinates(pool: _Variables, coordinates: Mapping[str, Any] | None) -> dict[str, Any]:
    """Each axis's coordinates: given (values, or a variable's name), else (arrays only) a one-dimensional variable
    named for the axis."""
    found = {}
    for axis, value in dict(coordinates or {}).items():
        found[axis] = np.asarray(pool.take(value, f"the {axis} coordinate") if isinstance(value, str) else value)
    if not pool.named:
        for axis in AXIS_NAMES:
            if axis not in found and axis in pool.variables and np.ndim(pool.variables[axis]) == 1:
                found[axis] = np.asarray(pool.take(axis, "coordinate"))
    return found


def _our_dims(value: Any, dims: Mapping[str, str]) -> tuple[str, ...]:
    """A named variable's dimensions by our names (``import_arrays.our_name``)."""
    return tuple(our_name(str(d), dims) for d in value.dims)


def _changes_in_time(value: Any, named: bool, dims: Mapping[str, str]) -> bool:
    """A default field: an xarray variable over time and space, a numpy array with two axes or more, a list of
    trajectories or a vector's components."""
    if isinstance(value, Mapping | list | tuple):
        return True
    if named:
        ours = _our_dims(value, dims)
        return TIME in ours and any(d in AXIS_NAMES for d in ours)
    return len(getattr(value, "shape", np.shape(value))) >= 2


def _classify_scalars(variables, claimed, found: Gathered, dims, fields) -> None:
    """An xarray Dataset's floating-point variables over trajectories only (per-trajectory scalars) or over time
    (per-frame scalars), unless claimed or named as fields."""
    for name, value in variables.items():
        if name in claimed or (fields is not None and name in fields) or value.dtype.kind != "f":
            continue
        ours = _our_dims(value, dims)
        if set(ours) <= {TRAJECTORY}:
            found.scalars.setdefault(name, np.asarray(value))
            claimed.add(name)
        elif TIME in ours and set(ours) <= {TRAJECTORY, TIME}:
            values = np.asarray(value)
            if ours == (TIME, TRAJECTORY):
                values = values.T
            found.varying_scalars.setdefault(name, values)
            claimed.add(name)
