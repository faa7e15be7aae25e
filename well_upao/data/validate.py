"""Our own checker of The Well's on-disk format (files and dataset directories).

It checks what the Well's loaders rely on (root attributes, ``/dimensions``, ``/boundary_conditions``,
``/scalars``, the three ``t*_fields`` groups and their tensor shapes, ``stats.yaml``) plus our contracts
(string attributes are ``str``, per-trajectory parameters in ``/scalars``, a slot-table row for the dataset,
non-empty ``train/valid/test``), and the values with the Well's data checks (``data_checks``: NaN, constant
frames; frames close to the previous one and outliers as notes). With ``check_exact=True`` it re-evaluates the
closed form of exact-solution files from the stored parameters and compares with the stored fields.
"""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import yaml

from well_upao.data.data_checks import check_file
from well_upao.data.datasets import DATASET_SLOTS, generators, selected_fields
from well_upao.data.source import SPLITS, channels_by_field, split_files
from well_upao.data.specification import (
    SpecificationError,
    boundary_edges,
    check_grid_type,
    check_periodic_endpoints,
    scalar_entries,
    scalar_shape_problem,
)
from well_upao.data.well_format import BC_TYPES, EXACT_GROUP, FIELD_GROUPS, read_trajectory_parameters

ROOT_ATTRS = ("dataset_name", "grid_type", "n_spatial_dims", "n_trajectories", "simulation_parameters")
STATS_KEYS = ("mean", "std", "rms", "mean_delta", "std_delta", "rms_delta")
#: float32 rounding of O(1) values, relative to the field's max magnitude
EXACT_TOLERANCE = 2e-6


def _is_bytes(value) -> bool:
    if isinstance(value, bytes | np.bytes_):
        return True
    if isinstance(value, np.ndarray) and value.dtype.kind == "S":
        return True
    return False


def validate_file(
    path: str | Path,
    check_exact: bool = False,
    check_values: bool = True,
    notes: list[str] | None = None,
    strict: bool = False,
) -> list[str]:
    """Problems found in one HDF5 file (empty list when valid), group by group (root attributes, ``/dimensions``,
    ``/boundary_conditions``, ``/scalars``, the ``t*_fields`` groups, the slot row). With ``check_values`` the
    values are scanned for NaN / inf and the Well's data checks run (``well_upao.data.data_checks``): constant
    frames are problems, and near-constant frames (problems too with ``strict``), frames close to the previous one
    or outlying are appended to ``notes`` (when given)."""
    path = Path(path)
    try:
        f = h5py.File(path, "r")
    except OSError as error:
        return [f"{path}: cannot open as HDF5 ({error})"]
    with f:
        problems = root_problems(f)
        if not problems:
            shape, dimension_problems = dimensions_problems(f, path.name)
            problems = dimension_problems
            if shape is not None:
                problems += boundary_problems(f, path.name, shape) + scalars_problems(f, shape)
                problems += fields_problems(f, shape, check_values) + slot_problems(f)
        problems = [p if p.startswith(path.name) else f"{path.name}: {p}" for p in problems]
        if check_exact and not problems:
            problems += _check_exact(f, path)
    if check_values and not problems:
        report = check_file(path)
        problems += report.problems_found(strict)
        if notes is not None:
            notes += report.notes_found(strict)
    return problems


def root_problems(f: h5py.File) -> list[str]:
    """The root attributes the Well reads (present, ``str`` not bytes) and the groups it opens."""
    problems = [f"missing root attribute {attr!r}" for attr in ROOT_ATTRS if attr not in f.attrs]
    problems += [f"root attribute {key!r} is bytes, must be str" for key, value in f.attrs.items() if _is_bytes(value)]
    groups = ("dimensions", "boundary_conditions", "scalars", *FIELD_GROUPS)
    return problems + [f"missing group /{group}" for group in groups if group not in f]


def dimensions_problems(f: h5py.File, name: str) -> tuple[tuple[int, ...] | None, list[str]]:
    """``/dimensions`` and ``grid_type``: the grid's shape (``None`` where it cannot be read) and the problems."""
    problems = []
    n_traj, n_dims = int(f.attrs["n_trajectories"]), int(f.attrs["n_spatial_dims"])
    try:
        check_grid_type(f, name)
    except SpecificationError as error:
        problems.append(str(error))
    spatial = [str(d) for d in f["dimensions"].attrs.get("spatial_dims", [])]
    if len(spatial) != n_dims:
        return None, [*problems, f"/dimensions spatial_dims {spatial} does not match n_spatial_dims={n_dims}"]
    for axis in ["time", *spatial]:
        if axis not in f["dimensions"]:
            return None, [*problems, f"/dimensions/{axis} missing"]
        if "sample_varying" not in f["dimensions"][axis].attrs:
            problems.append(f"/dimensions/{axis} lacks attribute 'sample_varying'")
    times = np.asarray(f["dimensions"]["time"])
    time_varying = bool(f["dimensions"]["time"].attrs.get("sample_varying", False))
    expected = (n_traj, times.shape[-1]) if time_varying else (times.shape[-1],)
    if times.shape != expected:
        problems.append(
            f"/dimensions/time has shape {times.shape} but its attribute sample_varying = {time_varying} "
            f"gives {expected} (n_trajectories = {n_traj})"
        )
    elif times.shape[-1] > 1 and not np.all(np.diff(times, axis=-1) > 0):
        problems.append("/dimensions/time is not strictly increasing")
    for axis in spatial:
        coordinate = f["dimensions"][axis]
        varying = bool(coordinate.attrs.get("sample_varying", False))
        if coordinate.ndim != 1 + varying or (varying and coordinate.shape[0] != n_traj):
            problems.append(
                f"/dimensions/{axis} has shape {coordinate.shape} but its attribute sample_varying = {varying}"
            )
    return tuple(f["dimensions"][axis].shape[-1] for axis in spatial), problems


def boundary_problems(f: h5py.File, name: str, shape: tuple[int, ...]) -> list[str]:
    """``/boundary_conditions``: each edge's type as the readers take it (``specification.boundary_edges``, a periodic
    axis stored twice refused), each group's ``bc_type``, ``associated_dims`` and ``mask``."""
    problems = []
    spatial = [str(d) for d in f["dimensions"].attrs["spatial_dims"]]
    try:
        check_periodic_endpoints(f, name, spatial, boundary_edges(f, name, spatial, shape))
    except SpecificationError as error:
        problems.append(str(error))
    for bc_name, bc in f["boundary_conditions"].items():
        bc_type = bc.attrs.get("bc_type")
        if _is_bytes(bc_type):
            problems.append(f"bc {bc_name}: bc_type is bytes, must be str")
        elif str(bc_type).upper() not in BC_TYPES:
            problems.append(f"bc {bc_name}: bc_type {bc_type!r} not in {BC_TYPES}")
        dims = [str(d) for d in bc.attrs.get("associated_dims", [])]
        if not dims or not set(dims) <= set(spatial):
            problems.append(f"bc {bc_name}: associated_dims {dims} not within {spatial}")
        if "mask" not in bc:
            problems.append(f"bc {bc_name}: no mask dataset")
        elif str(bc_type).upper() == "PERIODIC":
            mask = np.asarray(bc["mask"])
            # a mask marking nothing applies nowhere, as in the Well's reader (boundary_edges warns: read as OPEN)
            if mask.dtype != bool or (mask.any() and not (mask.reshape(-1)[0] and mask.reshape(-1)[-1])):
                problems.append(f"bc {bc_name}: a periodic mask must be boolean and True at both ends")
    return problems


def scalars_problems(f: h5py.File, shape: tuple[int, ...]) -> list[str]:
    """``/scalars``: listed names present with their attributes, per-trajectory values only (mode tables elsewhere),
    shapes as their attributes say; simulation parameters both scalars and root attributes."""
    problems = []
    n_traj, n_steps = int(f.attrs["n_trajectories"]), np.asarray(f["dimensions"]["time"]).shape[-1]
    scalars = f["scalars"]
    names = [str(s) for s in scalars.attrs.get("field_names", [])]
    for name in names:
        if name not in scalars:
            problems.append(f"/scalars lists {name!r} but has no such dataset")
            continue
        problems += [
            f"/scalars/{name} lacks attribute {a!r}"
            for a in ("sample_varying", "time_varying")
            if a not in scalars[name].attrs
        ]
    for entry in scalar_entries(f):
        if len(entry.shape) > entry.sample_varying + entry.time_varying and len(entry.shape) > 1:
            problems.append(f"/scalars/{entry.name} is array-valued; mode tables belong outside /scalars")
            continue
        problem = scalar_shape_problem(entry, n_traj, n_steps)
        if problem:
            problems.append(problem)
    for name in f.attrs["simulation_parameters"]:
        if str(name) not in names:
            problems.append(f"simulation parameter {name!r} is not a /scalars dataset")
        if str(name) not in f.attrs:
            problems.append(f"simulation parameter {name!r} is not a root attribute")
    return problems


def fields_problems(f: h5py.File, shape: tuple[int, ...], check_values: bool) -> list[str]:
    """The ``t0/t1/t2_fields`` groups: listed fields present with their attributes, shapes as the attributes say,
    floating point, and (``check_values``) finite."""
    problems = []
    n_traj, n_dims = int(f.attrs["n_trajectories"]), len(shape)
    n_steps = np.asarray(f["dimensions"]["time"]).shape[-1]
    for order, group_name in enumerate(FIELD_GROUPS):
        group = f[group_name]
        if "field_names" not in group.attrs:
            problems.append(f"/{group_name} lacks attribute 'field_names'")
            continue
        for field in map(str, group.attrs["field_names"]):
            if field not in group:
                problems.append(f"/{group_name} lists {field!r} but has no such dataset")
                continue
            ds = group[field]
            problems += [
                f"{group_name}/{field} lacks attribute {a!r}"
                for a in ("dim_varying", "sample_varying", "time_varying")
                if a not in ds.attrs
            ]
            used = ds.attrs.get("dim_varying", [True] * n_dims)
            expected = (
                ((n_traj,) if ds.attrs.get("sample_varying") else ())
                + ((n_steps,) if ds.attrs.get("time_varying") else ())
                + tuple(s for s, on in zip(shape, used, strict=False) if on)
                + (n_dims,) * order
            )
            if ds.shape != expected:
                problems.append(f"{group_name}/{field} has shape {ds.shape}, expected {expected}")
            if ds.dtype.kind != "f":
                problems.append(f"{group_name}/{field} has dtype {ds.dtype}, expected floating point")
            if check_values and ds.shape == expected and ds.size:
                first_bad = next((i for i in range(ds.shape[0]) if not np.all(np.isfinite(ds[i]))), None)
                if first_bad is not None:
                    problems.append(f"{group_name}/{field} has NaN or inf values in entry {first_bad}")
    return problems


def slot_problems(f: h5py.File) -> list[str]:
    """Our contract: the dataset has a slot-table row, with a slot for every channel of the fields it keeps."""
    dataset_name = str(f.attrs["dataset_name"])
    if dataset_name not in DATASET_SLOTS:
        return [
            f"dataset {dataset_name!r} has no row in the slot table: register its DatasetSpec in a module and "
            "name it with --imports MODULE"
        ]
    # only the fields the dataset's registry entry keeps need a slot (active matter drops D and E)
    selection = selected_fields(dataset_name)
    channels = [
        c for field, names in channels_by_field(f).items() if selection is None or field in selection for c in names
    ]
    missing = [c for c in channels if c not in DATASET_SLOTS[dataset_name]]
    return [f"channels {missing} have no slot in the slot table row of {dataset_name!r}"] if missing else []


def _check_exact(f: h5py.File, path: Path) -> list[str]:
    """Compare stored fields with the closed form re-evaluated from the file's own parameters."""
    if EXACT_GROUP not in f:
        return [f"{path.name}: no /{EXACT_GROUP} group, cannot re-evaluate the closed form"]
    if str(f[EXACT_GROUP].attrs.get("kind", "closed_form")) != "closed_form":
        return [f"{path.name}: simulated data has no closed form to compare with"]
    name = str(f[EXACT_GROUP].attrs["pde"])
    pde = generators().get(name)
    if pde is None:
        return [f"{path.name}: no registered generator {name!r} to re-evaluate (import the module registering it)"]
    spatial = [str(d) for d in f["dimensions"].attrs["spatial_dims"]]
    resolution = f["dimensions"][spatial[0]].shape[0]
    axes = pde.grid_axes(resolution)
    stored_axes = [np.asarray(f["dimensions"][d], dtype=np.float64) for d in spatial]
    problems = []
    for stored, exact in zip(stored_axes, axes, strict=True):
        if not np.allclose(stored, exact, atol=1e-6):
            problems.append(f"{path.name}: grid is not x_i = i L / N")
    times = np.asarray(f["dimensions"]["time"], dtype=np.float64)
    if "dt" in f[EXACT_GROUP].attrs:  # the generator's float64 times (the stored ones may be float32)
        times = np.arange(times.shape[-1]) * float(f[EXACT_GROUP].attrs["dt"])
    for slot in range(int(f.attrs["n_trajectories"])):
        params = read_trajectory_parameters(f, pde, slot)
        reference = pde.evaluate(params, axes, times)
        for spec in pde.fields:
            stored = np.asarray(f[FIELD_GROUPS[spec.order]][spec.name][slot], dtype=np.float64)
            scale = max(np.abs(reference[spec.name]).max(), 1e-30)
            error = np.abs(stored - reference[spec.name]).max() / scale
            if error > EXACT_TOLERANCE:
                problems.append(
                    f"{path.name}: trajectory {slot} field {spec.name!r} differs from the closed form "
                    f"(max relative error {error:.2e})"
                )
    return problems


def validate_dataset(
    path: str | Path,
    check_exact: bool = False,
    check_values: bool = True,
    notes: list[str] | None = None,
    strict: bool = False,
) -> list[str]:
    """Problems in a dataset directory ``path`` (containing ``data/{train,valid,test}`` and ``stats.yaml``),
    or in a single file when ``path`` is a file; the data checks' notes go to ``notes`` (see ``validate_file``)."""
    path = Path(path)
    if path.is_file():
        return validate_file(path, check_exact, check_values, notes, strict)
    if not path.is_dir():
        return [f"{path}: no such file or directory"]
    problems: list[str] = []
    signatures = set()
    fields_seen: dict[str, int] = {}
    varying_fields: set[str] = set()
    for split in SPLITS:
        split_dir = path / "data" / split
        files = split_files(split_dir)
        if not files:
            problems.append(f"{split_dir}: split is missing or has no HDF5 files")
            continue
        for file in files:
            problems += validate_file(file, check_exact, check_values, notes, strict)
            try:
                with h5py.File(file, "r") as f:
                    spatial = [str(d) for d in f["dimensions"].attrs["spatial_dims"]]
                    signatures.add((str(f.attrs["dataset_name"]), tuple(f["dimensions"][d].shape[-1] for d in spatial)))
                    for order, group in enumerate(FIELD_GROUPS):
                        for field in f[group].attrs["field_names"]:
                            fields_seen[str(field)] = len(spatial) ** order
                            if str(field) in f[group] and bool(f[group][str(field)].attrs.get("time_varying", True)):
                                varying_fields.add(str(field))
            except (OSError, KeyError):
                pass
    if len(signatures) > 1:
        problems.append(f"{path}: files disagree on dataset name or resolution: {sorted(signatures)}")
    stats_path = path / "stats.yaml"
    if not stats_path.is_file():
        problems.append(f"{stats_path}: missing")
    else:
        stats = yaml.safe_load(stats_path.read_text()) or {}
        for key in STATS_KEYS:
            if key not in stats:
                problems.append(f"{stats_path}: missing section {key!r}")
                continue
            for field, components in fields_seen.items():
                value = stats[key].get(field)
                if value is None and key.endswith("_delta") and field not in varying_fields:
                    continue  # the Well's statistics script writes increments of time-varying fields only
                if value is None:
                    problems.append(f"{stats_path}: {key} has no entry for field {field!r}")
                elif np.size(value) != components or not np.all(np.isfinite(value)):
                    problems.append(f"{stats_path}: {key}[{field!r}] should hold {components} finite value(s)")
    return problems
