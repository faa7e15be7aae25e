"""The files of an import, written trajectory by trajectory into a staged directory (``well_upao.data.atomic``:
nothing at the destination unless complete):

    out/<name>/data/{train,valid,test}/<name>_<split>_<nnn>.hdf5
    out/<name>/stats.yaml        mean, std, rms of every field and of its one-step increments, train/ only

Each file is the Well's layout (``well_upao.data.well_format.write_layout``): float64 time and coordinates, a
boundary group per axis, the fields as float32 ``(n, T, *grid[, D[, D]])`` in ``t0/t1/t2_fields``, the per-trajectory
scalars (the PDE's parameters) and the time-varying ones in ``/scalars``, and the root attribute ``well_upao_import``
(JSON: which source trajectory and frames each stored trajectory holds, what the import changed). One segment's
pieces share a file (its time axis), at most ``traj_per_file`` a file (default: files of about 512 MiB); a ``test``
split that repeats ``valid`` links valid's files.

**Values.** Read, checked (NaN, inf, a trajectory padded with NaN at its end: ragged) and written one trajectory of
one field at a time; statistics are fed the stored float32 values (``well_upao.data.stats``, exact sums: the Well's
``compute_statistics.py`` numbers whatever the order). A refusal (``ImportInputError``, naming the fix) removes the
staged directory.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np
import yaml
from tqdm.auto import tqdm

from well_upao.data.atomic import atomic_write_text, staged_directory
from well_upao.data.generate import FILE_BYTES, check_free_space, mirror_files
from well_upao.data.import_arrays import ImportInputError
from well_upao.data.import_plan import ImportPlan
from well_upao.data.import_splits import Piece, Splits, file_groups
from well_upao.data.source import SPLITS
from well_upao.data.stats import FieldStatistics
from well_upao.data.well_format import write_layout

#: the root attribute each imported file carries (JSON: source, trajectories, what was changed)
IMPORT_ATTRIBUTE = "well_upao_import"


@dataclass(frozen=True)
class WrittenFiles:
    """What ``write_files`` wrote: files per split and the fields' stored bytes."""

    n_files: dict[str, int]
    bytes_written: int


def write_files(
    destination: Path,
    plan: ImportPlan,
    splits: Splits,
    source: str,
    *,
    traj_per_file: int | None = None,
    overwrite: bool = False,
    progress: bool = True,
) -> WrittenFiles:
    """Write the dataset ``destination`` (its folder's name is the dataset's) and its ``stats.yaml`` from ``plan``,
    split as ``splits`` (see the module docstring; ``source`` describes where the arrays came from)."""
    per_file = traj_per_file or max(1, FILE_BYTES // plan.bytes_per_trajectory(splits.length))
    if per_file < 1:
        raise ImportInputError(f"--traj-per-file must be at least 1 (got {per_file})")
    written = splits.written()
    n_written = sum(len(pieces) for pieces in written.values())
    bytes_written = n_written * plan.bytes_per_trajectory(splits.length)
    check_free_space(destination.parent, bytes_written + 2**20)
    provenance = {"source": source, "notes": plan.notes, "time_unit": plan.time_unit, "split": splits.rule}
    writer = _Writer(destination.name, plan, splits.length, provenance)
    bar = tqdm(total=n_written, desc=f"import {destination.name}", unit="traj", disable=not progress)
    n_files: dict[str, int] = {}
    with staged_directory(destination, overwrite) as staging:
        for split in SPLITS:
            directory = staging / "data" / split
            directory.mkdir(parents=True)
            if split not in written:
                n_files[split] = mirror_files(staging / "data" / "valid", directory, "valid", "test")
                continue
            groups = file_groups(written[split], per_file)
            for number, pieces in enumerate(groups):
                writer.write(directory / f"{destination.name}_{split}_{number:03d}.hdf5", pieces, split == "train")
                bar.update(len(pieces))
            n_files[split] = len(groups)
        atomic_write_text(staging / "stats.yaml", yaml.safe_dump(writer.statistics.as_yaml_dict(), sort_keys=False))
    bar.close()
    return WrittenFiles(n_files, bytes_written)


class _Writer:
    """Writes the files of one dataset: ``length`` frames of each piece, the train files' values fed to
    ``statistics``."""

    def __init__(self, name: str, plan: ImportPlan, length: int, provenance: dict):
        self.name, self.plan, self.length, self.provenance = name, plan, length, provenance
        self.statistics = FieldStatistics({s.name: (s.order, len(plan.axes) ** s.order) for s in plan.fields})

    def write(self, path: Path, pieces: list[Piece], train: bool) -> None:
        """One file of ``pieces`` (sharing their frames), filled trajectory by trajectory, field by field."""
        plan, length = self.plan, self.length
        with h5py.File(path, "w") as f:
            datasets = self._layout(f, pieces)
            for slot, piece in enumerate(pieces):
                for source in plan.fields:
                    block = plan.read(source, piece.source, piece.first, length).astype(np.float32)
                    check_values(block, source.name, piece, plan)
                    datasets[source.name][slot] = block
                    if train:
                        self.statistics.update_trajectories(source.name, block[None])
            for scalar, values in plan.scalars.items():
                f["scalars"][scalar][:] = [values[p.source] for p in pieces]
                f.attrs[scalar] = f["scalars"][scalar][()]
            for scalar, values in plan.varying_scalars.items():
                f["scalars"][scalar][:] = np.stack([values[p.source, p.first : p.first + length] for p in pieces])
            trajectories = [[p.source, plan.frames.start + p.first] for p in pieces]
            f.attrs[IMPORT_ATTRIBUTE] = json.dumps({**self.provenance, "trajectories": trajectories})

    def _layout(self, f: h5py.File, pieces: list[Piece]) -> dict[str, h5py.Dataset]:
        """The Well's groups, coordinates and empty field datasets of a file of ``pieces``, by field name."""
        plan, length, first = self.plan, self.length, pieces[0].first
        n_dims = len(plan.axes)
        datasets = write_layout(
            f,
            dataset_name=self.name,
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
        return datasets


def check_values(block: np.ndarray, field_name: str, piece: Piece, plan: ImportPlan) -> None:
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
