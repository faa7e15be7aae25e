"""A user's arrays to a dataset in the Well's layout, written trajectory by trajectory: ``write_dataset``.

Directory written (the Well base path ``out`` and the dataset ``name``), as ``generate-*`` write theirs and through
the same staged directory (``well_upao.data.atomic``: nothing at the destination unless complete):

    out/<name>/data/{train,valid,test}/<name>_<split>_<nnn>.hdf5
    out/<name>/stats.yaml        mean, std, rms of every field and of its one-step increments, train/ only

Each file is the Well's layout (``well_upao.data.well_format.write_layout``): float64 time and coordinates, a
boundary group per axis, the fields as float32 ``(n, T, *grid[, D[, D]])`` in ``t0/t1/t2_fields``, the per-trajectory
scalars (the PDE's parameters) and the time-varying ones in ``/scalars``, and the root attribute ``well_upao_import``
(JSON: which source trajectory and frames each stored trajectory holds, what the import changed).

**Splits.** By trajectory, as the generators: ``valid`` gets ``max(1, round(valid_fraction * n))`` trajectories,
``test`` ``max(1, round(test_fraction * n))`` (the Well's 80/10/10 by default; ``test_fraction=0`` makes ``test`` the
``valid`` trajectories again, the paper's protocol), drawn by a permutation seeded with ``seed`` (42), ``train`` the
rest. With ``segments``, every trajectory is cut into that many consecutive pieces of equal length (the frames left
over at the end are dropped) and split **in time**: the first pieces of every trajectory train, the next validate,
the last test, so a model is judged on later times than it trained on (a single long trajectory is imported so).
A split left empty is refused.

**Slots.** Every channel (the Well's flattened names: ``T``, ``velocity_x``, ...) needs one of the backbone's 18 slots
(``well_upao.data.slots``): the registered dataset's row if ``name`` is registered, else ``slots``, else a channel
named as a slot keeps it (``temperature``, ``pressure``, ...) and ``velocity_x/y/z`` go to ``Vx/Vy/Vz``.

**The PDE** (``pde``, or the registered dataset's): each of its parameters must be a per-trajectory scalar under its
name (or an alias), each of its variables a slot some channel maps to.

**Values.** Read, checked (NaN, inf, a trajectory padded with NaN at its end: ragged) and written one trajectory
of one field at a time; statistics are fed the stored float32 values (``well_upao.data.stats``, exact sums: the
Well's ``compute_statistics.py`` numbers whatever the order).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter
from typing import Any

import h5py
import numpy as np
import yaml
from tqdm.auto import tqdm

from well_upao.data.atomic import atomic_write_text, staged_directory
from well_upao.data.datasets import DATASETS
from well_upao.data.generate import FILE_BYTES, check_free_space, mirror_files, split_trajectories
from well_upao.data.import_arrays import ImportInputError, ImportPlan, component_keys, plan_import
from well_upao.data.import_sources import gather
from well_upao.data.slot_inventory import SLOT_INDEX, SLOT_NAMES
from well_upao.data.source import SPLITS
from well_upao.data.stats import FieldStatistics
from well_upao.data.well_format import AXIS_NAMES, write_layout

#: the root attribute each imported file carries (JSON: source, trajectories, what was changed)
IMPORT_ATTRIBUTE = "well_upao_import"
NAME_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")

__all__ = ["ImportInputError", "ImportSummary", "Piece", "write_dataset"]


@dataclass(frozen=True)
class Piece:
    """One trajectory of the written dataset: source trajectory ``source`` from its kept frame ``first``
    (``segment`` its piece when trajectories are cut in time)."""

    source: int
    first: int
    segment: int = 0


@dataclass
class ImportSummary:
    """What ``write_dataset`` wrote, and what it read and changed, stated."""

    name: str
    path: Path
    source: str
    channels: list[str]
    slots: dict[str, str]
    fields: list[tuple[str, int]]  # (name, tensor order) in the Well's order
    splits: dict[str, list[Piece]]
    split_rule: str
    n_steps: int  # frames per written trajectory
    dt: float
    time_unit: str | None
    axes: tuple[str, ...]
    shape: tuple[int, ...]
    spacing: tuple[float, ...]
    boundaries: tuple[str, ...]
    scalars: list[str]
    varying_scalars: list[str]
    notes: list[str]
    n_files: dict[str, int]
    bytes_written: int
    seconds: float
    pde: str | None = None
    #: the fields to register when some have no slot (tensor fields), else ``None`` (all)
    kept_fields: tuple[str, ...] | None = None

    def describe(self) -> str:
        """The lines ``well-upao import`` prints."""
        kinds = {0: "scalar", 1: "vector", 2: "tensor"}
        grid = "; ".join(
            f"{a} {b.lower()}, d{a} = {s:.6g}" for a, b, s in zip(self.axes, self.boundaries, self.spacing, strict=True)
        )
        unit = f" {self.time_unit}" if self.time_unit else ""
        splits = ", ".join(f"{k} {len(v)}" for k, v in self.splits.items())
        lines = [
            f"dataset      {self.name} -> {self.path} (from {self.source})",
            "fields       " + ", ".join(f"{n} ({kinds[o]})" for n, o in self.fields),
            "channels     " + ", ".join(f"{c}->{self.slots[c]}" for c in self.channels) + " (the Well's order)",
            f"grid         {' x '.join(map(str, self.shape))}: {grid}",
            f"time         {self.n_steps} frames per trajectory, dt = {self.dt:.9g}{unit}",
            "scalars      "
            + (
                ", ".join(
                    [
                        *(f"{s} (per trajectory)" for s in self.scalars),
                        *(f"{s} (per frame)" for s in self.varying_scalars),
                    ]
                )
                or "none"
            ),
            f"trajectories {splits}; {self.split_rule}",
        ]
        lines += [f"note         {note}" for note in self.notes]
        lines.append(f"files        {', '.join(f'{k} {v}' for k, v in self.n_files.items())}")
        lines.append(f"written      {self.bytes_written / 2**20:.1f} MiB in {self.seconds:.2f} s")
        return "\n".join(lines)

    def registration(self) -> str:
        """The registry entry to put in the user's module (``register_dataset``)."""
        pde = self.pde or "YOUR_PDE"
        fields = f", fields={self.kept_fields!r}" if self.kept_fields else ""
        return f'register_dataset(DatasetSpec("{self.name}", slots={self.slots!r}{fields}, pde={pde}))'


def write_dataset(
    data: Any,
    name: str,
    out: str | Path = "datasets",
    *,
    fields: Sequence[str] | None = None,
    rename: Mapping[str, str] | None = None,
    vectors: Mapping[str, Sequence[str]] | None = None,
    time: str | None = None,
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
    slots: Mapping[str, str] | None = None,
    pde: Any = None,
    frames: slice | None = None,
    segments: int | None = None,
    valid_fraction: float = 0.1,
    test_fraction: float = 0.1,
    seed: int = 42,
    traj_per_file: int | None = None,
    overwrite: bool = False,
    progress: bool = True,
) -> ImportSummary:
    """Write ``data`` as the dataset ``out/name`` in the Well's layout and return what was written (see the module
    docstring; ``well_upao.data.import_sources`` says which variable is what, ``well_upao.data.import_arrays`` how
    the arrays are read).

    Args:
        data: a mapping of arrays, an xarray ``Dataset``, or the path of an ``.npz``, netCDF or zarr file. A field is
            an array ``(trajectory, time, *grid)`` (a scalar field; a vector adds a component axis, a tensor two),
            a list of per-trajectory arrays, or ``{"x": u, "y": v}`` (a vector by its components); numpy arrays,
            memory maps, h5py / netCDF variables and xarray ``DataArray`` s, read one trajectory at a time.
        name: the dataset's name (its folder, ``data.well_dataset_name`` in the harness).
        out: the Well base path (``./datasets`` by default, as the generators and the harness).
        fields, rename, vectors, time: which variables of ``data`` are the fields (default: those that change in
            time), renamed how, which assemble a vector (``{"velocity": ["u", "v"]}``), which is the time.
        dims: the axes of unnamed arrays in their stored order, e.g. ``"time y x"`` or ``"trajectory time y x"``
            (default ``trajectory time x [y [z]]`` with the axes ``spacing`` / ``coordinates`` name); per field
            as a mapping.
        dim_names: named arrays' dimensions -> ours (``{"lat": "y", "lon": "x", "run": "trajectory"}``).
        coordinates, spacing: per axis, its coordinates or the distance between its points (equally spaced).
        boundaries: ``periodic``, ``wall`` or ``open``, for every axis or per axis.
        times, dt, time_unit: the frames' times (numbers, or datetimes with ``time_unit``) or their step.
        components: per field, the axes its stored components point along, in their stored order (``("y", "x")``).
        scalars: per-trajectory constants (one value, or one per trajectory; a string or ``None`` names a variable
            of ``data``): the PDE's parameters, by its names.
        varying_scalars: scalars per frame (``(T,)`` or ``(trajectory, T)``).
        slots: channel -> one of the 18 slots (``well_upao.data.slots.SLOT_NAMES``).
        pde: the dataset's PDE (a ``well_upao.physics.PDE``): its parameters and variables are checked.
        frames: the stored frames to keep (a contiguous ``slice``).
        segments: cut every trajectory into this many pieces and split them in time.
        valid_fraction, test_fraction, seed: the split (``test_fraction=0``: test = valid).
        traj_per_file: trajectories per file (default: files of about 512 MiB).
        overwrite: replace an existing dataset folder.
        progress: show a progress bar.

    Raises ``ImportInputError`` (nothing written) on input that cannot become a dataset, with the fix.
    """
    started = perf_counter()
    if not NAME_PATTERN.match(name):
        raise ImportInputError(
            f"dataset name {name!r}: use letters, digits and _ (starting with a letter), e.g. --dataset my_system"
        )
    found = gather(
        data,
        fields=fields,
        rename=rename,
        vectors=vectors,
        scalars=scalars,
        varying_scalars=varying_scalars,
        time=time,
        coordinates=coordinates,
        dim_names=dim_names,
    )
    source = found.description
    plan = plan_import(
        found.fields,
        dims=dims,
        dim_names=dim_names,
        coordinates=found.coordinates,
        spacing=spacing,
        boundaries=boundaries,
        times=found.times if times is None else times,
        dt=dt,
        time_unit=time_unit,
        components=components,
        scalars=found.scalars,
        varying_scalars=found.varying_scalars,
        frames=frames,
    )
    registered = DATASETS.get(name)
    if pde is None and registered is not None and not isinstance(registered.pde, str | type(None)):
        pde = registered.pde
    # the backbone reads scalar and vector fields; a tensor field's channels get a slot only when asked
    tensor_channels = [c for c in plan.channels() if c not in plan.channels(max_order=1)]
    row = resolve_slots(
        plan.channels(max_order=1), {c: s for c, s in (slots or {}).items() if c not in tensor_channels}, name
    )
    row |= {c: s for c, s in (slots or {}).items() if c in tensor_channels}
    tensors = sorted({s.name for s in plan.fields if s.order > 1 and not all(c in row for c in _channels_of(s, plan))})
    if tensors:
        kept = tuple(s.name for s in plan.fields if s.name not in tensors)
        plan.notes.append(
            f"{', '.join(tensors)}: tensor field(s) without slots, stored but not read by the backbone; register the "
            f"dataset with fields={kept!r} to keep the others"
        )
    check_pde(pde, plan, row)
    splits, length, rule = assign_splits(plan, segments, valid_fraction, test_fraction, seed)
    per_file = traj_per_file or max(1, FILE_BYTES // plan.bytes_per_trajectory(length))
    if per_file < 1:
        raise ImportInputError(f"--traj-per-file must be at least 1 (got {per_file})")
    destination = Path(out) / name
    stored = {s: splits[s] for s in SPLITS if not (s == "test" and test_fraction == 0)}
    n_written = sum(len(v) for v in stored.values())
    check_free_space(destination.parent, n_written * plan.bytes_per_trajectory(length) + 2**20)
    layout = {s.name: (s.order, len(plan.axes) ** s.order) for s in plan.fields}
    statistics = FieldStatistics(layout)
    provenance = {"source": source, "notes": plan.notes, "time_unit": plan.time_unit, "split": rule}
    n_files: dict[str, int] = {}
    bar = tqdm(total=n_written, desc=f"import {name}", unit="traj", disable=not progress)
    with staged_directory(destination, overwrite) as staging:
        for split in SPLITS:
            directory = staging / "data" / split
            directory.mkdir(parents=True)
            if split not in stored:
                n_files[split] = mirror_files(staging / "data" / "valid", directory, "valid", "test")
                continue
            files = _file_groups(stored[split], per_file)
            for number, pieces in enumerate(files):
                path = directory / f"{name}_{split}_{number:03d}.hdf5"
                _write_file(path, name, plan, pieces, length, statistics if split == "train" else None, provenance)
                bar.update(len(pieces))
            n_files[split] = len(files)
        stats = statistics.as_yaml_dict()
        atomic_write_text(staging / "stats.yaml", yaml.safe_dump(stats, sort_keys=False))
    bar.close()
    spacing_out = tuple(float(c[1] - c[0]) if len(c) > 1 else 0.0 for c in plan.coordinates)
    return ImportSummary(
        name=name,
        path=destination,
        source=source,
        channels=[c for c in plan.channels() if c in row],
        slots=row,
        kept_fields=tuple(s.name for s in plan.fields if s.name not in tensors) if tensors else None,
        fields=[(s.name, s.order) for s in plan.fields],
        splits=splits,
        split_rule=rule,
        n_steps=length,
        dt=plan.dt,
        time_unit=plan.time_unit,
        axes=plan.axes,
        shape=plan.shape,
        spacing=spacing_out,
        boundaries=plan.boundaries,
        scalars=list(plan.scalars),
        varying_scalars=list(plan.varying_scalars),
        notes=plan.notes,
        n_files=n_files,
        bytes_written=n_written * plan.bytes_per_trajectory(length),
        seconds=perf_counter() - started,
        pde=getattr(pde, "name", None),
    )


def _channels_of(source, plan: ImportPlan) -> list[str]:
    """The flattened channel names of one field."""
    keys = component_keys(source.order, len(plan.axes))
    return [source.name + ("_" + "".join(AXIS_NAMES[k] for k in key) if key else "") for key in keys]


def resolve_slots(channels: list[str], given: Mapping[str, str] | None, name: str) -> dict[str, str]:
    """Each channel's slot (see the module docstring), refused where one has none or two share one."""
    given = dict(given or {})
    unknown = sorted(set(given) - set(channels))
    if unknown:
        raise ImportInputError(
            f"--slots names channel {unknown[0]!r}, which the fields do not have (channels: {', '.join(channels)})"
        )
    registered = DATASETS.get(name)
    if registered is not None:
        row = {c: registered.slots[c] for c in channels if c in registered.slots}
        clash = {c: s for c, s in given.items() if row.get(c, s) != s}
        if clash:
            raise ImportInputError(
                f"dataset {name!r} is registered with slots {dict(registered.slots)}, which --slots {clash} "
                "contradicts: change the registration or drop --slots"
            )
        row.update(given)
    else:
        row = dict(given)
    for channel in channels:
        if channel in row:
            continue
        if channel in SLOT_INDEX:
            row[channel] = channel
        elif re.fullmatch(r"velocity_[xyz]", channel):
            row[channel] = "V" + channel[-1]
    missing = [c for c in channels if c not in row]
    if missing:
        raise ImportInputError(
            f"channels {missing} have no slot: map each to one of the backbone's slots with --slots "
            f"{missing[0]}=SLOT (Python: slots={{{missing[0]!r}: SLOT}}); slots: {', '.join(SLOT_NAMES)}"
        )
    bad = {c: s for c, s in row.items() if s not in SLOT_INDEX}
    if bad:
        raise ImportInputError(f"--slots {bad}: not slots of the backbone ({', '.join(SLOT_NAMES)})")
    shared = [s for s in set(row.values()) if list(row.values()).count(s) > 1]
    if shared:
        users = [c for c, s in row.items() if s == shared[0]]
        raise ImportInputError(f"channels {users} share the slot {shared[0]!r}: give each its own (--slots)")
    return {c: row[c] for c in channels}


def check_pde(pde: Any, plan: ImportPlan, row: Mapping[str, str]) -> None:
    """The PDE's parameters are per-trajectory scalars (by name or alias; its ``constants`` need none) and its
    variables are slots of the channels."""
    if pde is None:
        return
    constants, aliases = dict(getattr(pde, "constants", {})), dict(getattr(pde, "aliases", {}))
    for parameter in pde.parameters:
        if parameter in constants:
            continue
        names = (parameter, *aliases.get(parameter, ()))
        if any(n in plan.scalars for n in names):
            continue
        if any(n in plan.varying_scalars for n in names):
            raise ImportInputError(
                f"PDE {pde.name!r} takes {parameter!r} as a parameter (one value per trajectory), but it is given per "
                "frame: give one value per trajectory (--scalar)"
            )
        have = ", ".join(plan.scalars) or "none"
        raise ImportInputError(
            f"PDE {pde.name!r} needs the parameter {parameter!r} and the scalars are {have}: give it under the PDE's "
            f"name (--scalar {parameter}=VALUE, or --rename OLD={parameter}; Python: scalars={{{parameter!r}: ...}})"
        )
    used = set(row.values())
    for variable in pde.variables:
        if variable not in used:
            raise ImportInputError(
                f"PDE {pde.name!r} reads the slot {variable!r}, which no channel maps to ({row}): map the channel with "
                f"--slots CHANNEL={variable}"
            )


def assign_splits(
    plan: ImportPlan, segments: int | None, valid_fraction: float, test_fraction: float, seed: int
) -> tuple[dict[str, list[Piece]], int, str]:
    """The trajectories of each split, their length and the rule, stated (see the module docstring)."""
    if not 0.0 < valid_fraction < 1.0 or not 0.0 <= test_fraction < 1.0:
        raise ImportInputError("--valid-fraction must lie in (0, 1) and --test-fraction in [0, 1)")
    n, steps = plan.n_trajectories, plan.n_steps
    if segments is None:
        counts = _split_counts(n, valid_fraction, test_fraction)
        if counts[0] < 1:
            raise ImportInputError(
                f"{n} trajectories cannot fill train, valid ({counts[1]}) and test ({counts[2]}): train is left empty; "
                "cut the trajectories in time with --segments N (Python: segments=), pass --test-fraction 0 (test "
                "repeats valid, the paper's protocol) or import more trajectories"
            )
        indices = split_trajectories(n, seed, valid_fraction, test_fraction)
        splits = {s: [Piece(i, 0) for i in indices[s]] for s in SPLITS}
        rule = f"split by trajectory, a permutation seeded with {seed}: " + "; ".join(
            f"{s} {_ranges(indices[s])}" for s in SPLITS
        )
        if test_fraction == 0:
            rule += " (test repeats valid)"
        return splits, steps, rule
    if segments < 2:
        raise ImportInputError(f"--segments {segments}: cut each trajectory into at least 2 pieces")
    length = steps // segments
    if length < 2:
        raise ImportInputError(
            f"--segments {segments} leaves {length} frame per piece of the {steps} frames: use at most {steps // 2}"
        )
    n_train, n_valid, n_test = _split_counts(segments, valid_fraction, test_fraction)
    if n_train < 1:
        raise ImportInputError(
            f"{segments} segments cannot fill train, valid ({n_valid}) and test ({n_test}): train is left empty; use "
            "more --segments or --test-fraction 0 (test repeats valid)"
        )
    order = ["train"] * n_train + ["valid"] * n_valid + ["test"] * n_test
    splits: dict[str, list[Piece]] = {s: [] for s in SPLITS}
    for k, split in enumerate(order):
        splits[split] += [Piece(t, k * length, k) for t in range(n)]
    if n_test == 0:
        splits["test"] = list(splits["valid"])
    dropped = steps - segments * length
    by_split = "; ".join(f"{s} {_ranges([k for k, o in enumerate(order) if o == s])}" for s in SPLITS if s in order)
    rule = (
        f"split in time: each trajectory cut into {segments} segments of {length} frames, segments {by_split}"
        + (" (test repeats valid)" if n_test == 0 else "")
        + (f"; its last {dropped} frame(s), less than a segment, dropped" if dropped else "")
    )
    return splits, length, rule


def _split_counts(n: int, valid_fraction: float, test_fraction: float) -> tuple[int, int, int]:
    """(train, valid, test) counts as ``generate.split_trajectories`` draws them."""
    n_valid = max(1, round(valid_fraction * n))
    n_test = max(1, round(test_fraction * n)) if test_fraction > 0 else 0
    return n - n_valid - n_test, n_valid, n_test


def _ranges(indices: Sequence[int]) -> str:
    """``[0-3, 5, 7-9]`` for a sorted list of indices."""
    parts, run = [], []
    for i in sorted(indices):
        if run and i == run[-1] + 1:
            run.append(i)
            continue
        if run:
            parts.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [i]
    if run:
        parts.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return "[" + ", ".join(parts) + "]"


def _file_groups(pieces: list[Piece], per_file: int) -> list[list[Piece]]:
    """Pieces grouped into files: one segment's pieces share a file (its time axis), at most ``per_file`` a file."""
    groups: list[list[Piece]] = []
    for segment in sorted({p.segment for p in pieces}):
        members = [p for p in pieces if p.segment == segment]
        groups += [members[i : i + per_file] for i in range(0, len(members), per_file)]
    return groups


def _write_file(
    path: Path,
    name: str,
    plan: ImportPlan,
    pieces: list[Piece],
    length: int,
    statistics: FieldStatistics | None,
    provenance: dict,
) -> None:
    """One file of ``pieces`` (sharing their frames), filled trajectory by trajectory, field by field."""
    first = pieces[0].first
    n_dims = len(plan.axes)
    with h5py.File(path, "w") as f:
        datasets = write_layout(
            f,
            dataset_name=name,
            n_trajectories=len(pieces),
            times=plan.times[first : first + length],
            coordinates=plan.coordinates,
            boundary_types=plan.boundaries,
            scalar_names=list(plan.scalars),
            fields=[(s.name, s.order, (len(pieces), length, *plan.shape, *(n_dims,) * s.order)) for s in plan.fields],
            varying_scalar_names=list(plan.varying_scalars),
        )
        if plan.time_unit:
            f["dimensions"]["time"].attrs["units"] = plan.time_unit
        for slot, piece in enumerate(pieces):
            for source in plan.fields:
                block = plan.read(source, piece.source, piece.first, length).astype(np.float32)
                _check_values(block, source.name, piece, plan)
                datasets[source.name][slot] = block
                if statistics is not None:
                    statistics.update_trajectories(source.name, block[None])
        for scalar, values in plan.scalars.items():
            f["scalars"][scalar][:] = [values[p.source] for p in pieces]
            f.attrs[scalar] = f["scalars"][scalar][()]
        for scalar, values in plan.varying_scalars.items():
            f["scalars"][scalar][:] = np.stack([values[p.source, p.first : p.first + length] for p in pieces])
        trajectories = [[p.source, plan.frames.start + p.first] for p in pieces]
        f.attrs[IMPORT_ATTRIBUTE] = json.dumps({**provenance, "trajectories": trajectories})


def _check_values(block: np.ndarray, field_name: str, piece: Piece, plan: ImportPlan) -> None:
    """Refuse NaN or inf (a trajectory whose last frames are all NaN: a ragged one, padded), naming the fix."""
    finite = np.isfinite(block)
    if finite.all():
        return
    per_frame = finite.reshape(len(block), -1)
    bad = int(np.argmin(per_frame.all(axis=1)))
    frame = plan.frames.start + piece.first + bad
    if bad > 0 and not per_frame[bad:].any() and piece.first + len(block) == plan.n_steps:
        raise ImportInputError(
            f"ragged trajectories: field {field_name!r} of trajectory {piece.source} holds only NaN from frame {frame} "
            f"on (a shorter run padded with NaN): cut every trajectory to its frames with --frames "
            f"{plan.frames.start}:{frame} (Python: frames=slice({plan.frames.start}, {frame})) or import it apart"
        )
    raise ImportInputError(
        f"field {field_name!r} holds NaN or inf in trajectory {piece.source}, frame {frame}: fill or drop those "
        "values before importing (e.g. xarray's interpolate_na), or keep the frames without them with --frames "
        "START:STOP"
    )
