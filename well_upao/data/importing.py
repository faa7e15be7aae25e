"""A user's arrays to a dataset in the Well's layout, written trajectory by trajectory: ``write_dataset``.

Directory written (the Well base path ``out`` and the dataset ``name``), as ``generate-*`` write theirs and through
the same staged directory (``well_upao.data.atomic``: nothing at the destination unless complete):

    out/<name>/data/{train,valid,test}/<name>_<split>_<nnn>.hdf5
    out/<name>/stats.yaml        mean, std, rms of every field and of its one-step increments, train/ only

``write_dataset`` runs the import's steps in order, each in a module of its own, and nothing is written before every
check has passed (the values, checked as they are written, excepted: a refusal there removes the staged directory):

1. **Where the arrays come from** (``well_upao.data.import_sources``): which variable of a mapping, an ``.npz``,
   netCDF or zarr file, or an xarray ``Dataset`` is a field, a scalar, the time or a coordinate.
2. **The plan** (``well_upao.data.import_plan``): every stored axis named and put in order
   (``well_upao.data.import_arrays``), the time axis and the grid (``well_upao.data.import_grid``), the scalars
   (``well_upao.data.import_scalars``), a periodic axis stored endpoint-inclusive trimmed.
3. **Slots** (``well_upao.data.import_slots``): every channel (the Well's flattened names: ``T``, ``velocity_x``, ...)
   needs one of the backbone's 18 slots (``well_upao.data.slots``): the registered dataset's row if ``name`` is
   registered, else ``slots``, else a channel named as a slot keeps it and ``velocity_x/y/z`` go to ``Vx/Vy/Vz``.
4. **The PDE** (``well_upao.data.import_pde``; ``pde``, or the registered dataset's): each of its parameters must be
   a per-trajectory scalar under its name (or an alias), each of its variables a slot some channel maps to.
5. **Splits** (``well_upao.data.import_splits``): by trajectory, as the generators (the Well's 80/10/10 by default,
   a permutation seeded with ``seed``; ``test_fraction=0`` makes ``test`` the ``valid`` trajectories again, the
   paper's protocol), or with ``segments`` **in time**: every trajectory cut into that many pieces, the first
   training, the next validating, the last testing (a single long trajectory is imported so). A split left empty is
   refused.
6. **The files** (``well_upao.data.import_files``): the Well's layout, one trajectory of one field at a time, its
   values checked (NaN, inf, a trajectory padded with NaN at its end: ragged) and fed to the statistics (exact sums:
   the Well's ``compute_statistics.py`` numbers whatever the order); each file's root attribute
   ``well_upao_import`` (JSON) says which source trajectory and frames each stored trajectory holds and what the
   import changed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter
from typing import Any

from well_upao.data.import_arrays import ImportInputError
from well_upao.data.import_files import IMPORT_ATTRIBUTE, WrittenFiles, write_files
from well_upao.data.import_pde import check_pde, registered_pde
from well_upao.data.import_plan import ImportPlan, plan_import
from well_upao.data.import_slots import SlotRow, assign_slots
from well_upao.data.import_sources import gather
from well_upao.data.import_splits import Piece, Splits, assign_splits

NAME_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")

__all__ = ["IMPORT_ATTRIBUTE", "ImportInputError", "ImportSummary", "Piece", "write_dataset"]


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
    check_name(name)
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
    pde = registered_pde(name) if pde is None else pde
    row = assign_slots(plan, slots, name)
    check_pde(pde, plan, row.row)
    splits = assign_splits(plan.n_trajectories, plan.n_steps, segments, valid_fraction, test_fraction, seed)
    destination = Path(out) / name
    written = write_files(
        destination,
        plan,
        splits,
        found.description,
        traj_per_file=traj_per_file,
        overwrite=overwrite,
        progress=progress,
    )
    return summarize(name, destination, found.description, plan, row, splits, written, pde, started)


def check_name(name: str) -> None:
    """A dataset's name is a folder and a config value: letters, digits and ``_``, starting with a letter."""
    if not NAME_PATTERN.match(name):
        raise ImportInputError(
            f"dataset name {name!r}: use letters, digits and _ (starting with a letter), e.g. --dataset my_system"
        )


def summarize(
    name: str,
    path: Path,
    source: str,
    plan: ImportPlan,
    row: SlotRow,
    splits: Splits,
    written: WrittenFiles,
    pde: Any,
    started: float,
) -> ImportSummary:
    """What ``write_dataset`` wrote, read and changed (``started``: when it began, ``time.perf_counter``)."""
    spacing = tuple(float(c[1] - c[0]) if len(c) > 1 else 0.0 for c in plan.coordinates)
    return ImportSummary(
        name=name,
        path=path,
        source=source,
        channels=row.channels,
        slots=row.row,
        kept_fields=row.kept_fields,
        fields=[(s.name, s.order) for s in plan.fields],
        splits=splits.pieces,
        split_rule=splits.rule,
        n_steps=splits.length,
        dt=plan.dt,
        time_unit=plan.time_unit,
        axes=plan.axes,
        shape=plan.shape,
        spacing=spacing,
        boundaries=plan.boundaries,
        scalars=list(plan.scalars),
        varying_scalars=list(plan.varying_scalars),
        notes=plan.notes,
        n_files=written.n_files,
        bytes_written=written.bytes_written,
        seconds=perf_counter() - started,
        pde=getattr(pde, "name", None),
    )
