"""What a forecast writes: ``forecast.hdf5`` in the Well's layout, streamed step by step, and ``forecast.json``.

``forecast.hdf5`` holds one trajectory per forecast trajectory (of every input file, in order): the predicted frames of
the kept time-varying fields, at times continuing the input's (the history's last stored time plus ``k`` times the
forecast's step), with the input's coordinates, boundary conditions, constant fields and constant ``/scalars`` (the
PDE's parameters); ``with_history`` puts the history's frames first, so the Well's ``WellDataset`` can cut windows
from the file. Time-varying ``/scalars`` are not forecast and not written. The whole folder is staged and moved into
place when complete (``staged_directory`` of ``well_upao.data.atomic``): an interrupted forecast leaves nothing.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterator
from pathlib import Path

import h5py
import numpy as np

from well_upao.data.atomic import atomic_write_text, staged_directory
from well_upao.data.specification import FieldEntry
from well_upao.data.well_format import FIELD_GROUPS
from well_upao.forecast.inputs import ForecastError, ForecastInput, History
from well_upao.forecast.results import Forecast, ForecastRequest

#: the files a forecast folder holds (a folder holding anything else is not replaced)
FORECAST_FILES = ("forecast.hdf5", "forecast.json")


@contextlib.contextmanager
def staged_folder(out: Path) -> Iterator[Path]:
    """A staging folder that replaces ``out`` when the forecast completes; ``out`` is refused when it holds files a
    forecast does not write (nothing of the user's is ever replaced)."""
    out = Path(out)
    if out.exists():
        if not out.is_dir():
            raise ForecastError(f"--out {out} is a file: give a folder for the forecast")
        foreign = [p.name for p in out.iterdir() if p.name not in FORECAST_FILES and not p.name.startswith("forecast_")]
        if foreign:
            raise ForecastError(
                f"--out {out} holds files a forecast does not write ({', '.join(sorted(foreign)[:3])}): give a new or "
                "a forecast's own folder"
            )
    with staged_directory(out, overwrite=True) as stage:
        yield stage


class ForecastWriter:
    """``forecast.hdf5`` (see the module docstring), created at ``path`` for the input ``given`` and ``steps``
    forecast steps, filled by [`write`][well_upao.forecast.output.ForecastWriter.write] one frame at a time."""

    def __init__(self, path: Path, given: ForecastInput, steps: int, with_history: bool, last_times: list[float]):
        self.path, self.given, self.steps, self.with_history = path, given, steps, with_history
        self.source = given.files[0]
        self.offset = given.history if with_history else 0
        self.frames = self.offset + steps
        self.last_times = last_times
        self.file: h5py.File | None = None
        self.datasets: dict[str, h5py.Dataset] = {}
        self.constants: dict[str, h5py.Dataset] = {}
        self.scalars: dict[str, h5py.Dataset] = {}

    def __enter__(self) -> ForecastWriter:
        self.file = h5py.File(self.path, "w")
        self.layout()
        return self

    def __exit__(self, kind, *exc) -> None:
        if self.file is not None:
            if kind is None:
                self.finish()
            self.file.close()
            self.file = None

    # ------------------------------------------------------------------ the file's layout
    def layout(self) -> None:
        f, given = self.file, self.given
        n = given.n_trajectories
        with h5py.File(self.source.path, "r") as source:
            f.attrs["dataset_name"] = given.dataset
            f.attrs["grid_type"] = "cartesian"  # the only grid the input's reader accepts
            f.attrs["n_spatial_dims"] = given.layout.n_spatial_dims
            f.attrs["n_trajectories"] = n
            dims = f.create_group("dimensions")
            dims.attrs["spatial_dims"] = [str(d) for d in source["dimensions"].attrs["spatial_dims"]]
            for axis in given.layout.spatial_dims:
                source.copy(source["dimensions"][axis], dims, name=axis)
            if "boundary_conditions" in source:
                source.copy(source["boundary_conditions"], f, name="boundary_conditions")
            else:
                f.create_group("boundary_conditions")
            time_dtype = source["dimensions"]["time"].dtype
            constant_names = list(given.layout.scalar_names)
            self.write_times(dims, time_dtype)
            scalars = f.create_group("scalars")
            scalars.attrs["field_names"] = constant_names
            f.attrs["simulation_parameters"] = constant_names
            for name in constant_names:
                ds = scalars.create_dataset(name, shape=(n,), dtype=np.float64)
                ds.attrs["sample_varying"], ds.attrs["time_varying"] = True, False
                self.scalars[name] = ds
            groups = {order: f.create_group(group) for order, group in enumerate(FIELD_GROUPS)}
            names: dict[int, list[str]] = {0: [], 1: [], 2: []}
            space, d = tuple(given.layout.resolution), given.layout.n_spatial_dims
            for entry in self.source.varying_entries:
                shape = (n, self.frames, *space) + ((d**entry.order,) if entry.order else ())
                self.datasets[entry.name] = self.field_dataset(groups[entry.order], entry, shape, True)
                names[entry.order].append(entry.name)
            for entry in self.source.constant_entries:
                shape = (n, *space) + ((d**entry.order,) if entry.order else ())
                self.constants[entry.name] = self.field_dataset(groups[entry.order], entry, shape, False)
                names[entry.order].append(entry.name)
            for order, group in groups.items():
                group.attrs["field_names"] = names[order]

    def field_dataset(self, group: h5py.Group, entry: FieldEntry, shape: tuple, varying: bool) -> h5py.Dataset:
        ds = group.create_dataset(entry.name, shape=shape, dtype=np.float32)
        ds.attrs["dim_varying"] = [True] * self.given.layout.n_spatial_dims
        ds.attrs["sample_varying"] = True
        ds.attrs["time_varying"] = varying
        return ds

    def write_times(self, dims: h5py.Group, dtype) -> None:
        """``dimensions/time``: the forecast's times (after the history's, ``with_history``), one row per trajectory
        where their histories end at different times (``sample_varying``)."""
        step = self.given.step
        rows = []
        for last in self.last_times:
            ahead = last + step * np.arange(1, self.steps + 1)
            before = last - step * np.arange(self.given.history - 1, -1, -1) if self.with_history else np.zeros(0)
            rows.append(np.concatenate([before, ahead]))
        times = np.asarray(rows)
        varying = bool(len(times) > 1 and not np.all(times == times[0]))
        time = dims.create_dataset("time", data=(times if varying else times[0]).astype(dtype))
        time.attrs["sample_varying"], time.attrs["time_varying"] = varying, True

    # ------------------------------------------------------------------ frames
    def write(self, slot: int, history: History, step: int, frame) -> None:
        """Forecast step ``step`` (from 1) of trajectory ``slot``: ``frame`` ``(*space, C)`` in the input's channels;
        at its first step also the trajectory's history (``with_history``), constant fields and scalars."""
        if step == 1:
            self.trajectory(slot, history)
        self.put(slot, self.offset + step - 1, np.asarray(frame.detach().cpu(), dtype=np.float32))

    def put(self, slot: int, index: int, frame: np.ndarray) -> None:
        start = 0
        for entry in self.source.varying_entries:
            width = self.given.layout.n_spatial_dims**entry.order
            part = frame[..., start : start + width]
            self.datasets[entry.name][slot, index] = part[..., 0] if entry.order == 0 else part
            start += width

    def trajectory(self, slot: int, history: History) -> None:
        if self.with_history:
            for index, frame in enumerate(history.frames):
                self.put(slot, index, np.asarray(frame, dtype=np.float32))
        for name, ds in self.scalars.items():
            ds[slot] = float(history.trajectory.scalars[name])
        constants = history.trajectory.constant_fields
        start = 0
        for entry in self.source.constant_entries:
            width = self.given.layout.n_spatial_dims**entry.order
            part = np.asarray(constants[..., start : start + width], dtype=np.float32)
            self.constants[entry.name][slot] = part[..., 0] if entry.order == 0 else part
            start += width

    def finish(self) -> None:
        """The per-trajectory root attribute of each simulation parameter (the Well's files carry them)."""
        for name, ds in self.scalars.items():
            self.file.attrs[name] = np.asarray(ds)


def write_json(path: Path, result: Forecast, request: ForecastRequest) -> None:
    """``forecast.json``: what was forecast, from what, each window's pick with its evidence and expected VRMSE, the
    expected VRMSE per step, each trajectory's entry, the notes (atomically)."""
    document = {
        "source": request.source,
        "input": str(request.input),
        "dataset": result.dataset,
        "channels": result.channels,
        "history": result.history,
        "stride": result.stride,
        "dt": result.dt,
        "steps": result.steps,
        "start": request.start,
        "with_history": request.with_history,
        "boundary": None if request.boundary is None else str(request.boundary),
        "candidates": result.candidates,
        "windows": [p.as_dict() for p in result.picks],
        "per_step": result.per_step,
        "per_step_intervals": "none: the intervals are calibrated per window (windows[].expected_vrmse), not per step",
        "trajectories": result.trajectories,
        "notes": result.notes,
        "seconds": result.seconds,
    }
    atomic_write_text(path, json.dumps(finite(document), indent=2, allow_nan=False) + "\n")


def finite(value):
    """``value`` with every NaN or infinite number as ``None`` (JSON has no NaN) and numpy numbers as floats."""
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [finite(item) for item in value]
    if isinstance(value, float | np.floating):
        return float(value) if math.isfinite(value) else None
    return value
