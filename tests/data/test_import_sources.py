"""Imports from xarray: a netCDF file with its own dimension names and CF dates, the Well's own export
(``hdf5_to_xarray``) imported again, zarr where installed, and the message where xarray is missing.

Skipped where the ``io`` extra (xarray, h5netcdf) is not installed, except the message that names it."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import h5py
import numpy as np
import pytest

from well_upao.data.datasets import DATASETS, DatasetSpec, register_dataset
from well_upao.data.import_arrays import ImportInputError
from well_upao.data.importing import IMPORT_ATTRIBUTE, write_dataset
from well_upao.data.source import WellSource

needs_xarray = pytest.mark.skipif(
    importlib.util.find_spec("xarray") is None or importlib.util.find_spec("h5netcdf") is None,
    reason="the io extra (xarray, h5netcdf) is not installed",
)
RUNS, STEPS, LAT, LON = 5, 8, 6, 10


def stored(path: Path) -> list[int]:
    with h5py.File(path) as f:
        return [source for source, _ in json.loads(f.attrs[IMPORT_ATTRIBUTE])["trajectories"]]


def ocean(path: Path):
    """A netCDF file as a climate model writes one: (run, time, lat, lon), CF dates every 6 hours, the velocity as
    u (eastward, along lon) and v (northward, along lat), a per-run parameter and a forcing per time."""
    import xarray as xr

    rng = np.random.default_rng(0)
    shape = (RUNS, STEPS, LAT, LON)
    ds = xr.Dataset(
        {
            "sst": (("run", "time", "lat", "lon"), rng.normal(size=shape)),
            "u": (("run", "time", "lat", "lon"), rng.normal(size=shape)),
            "v": (("run", "time", "lat", "lon"), rng.normal(size=shape)),
            "kappa": (("run",), rng.uniform(0.1, 0.2, RUNS)),
            "forcing": (("time",), np.cos(np.arange(STEPS))),
        },
        coords={
            "time": np.datetime64("2026-03-01T00:00") + np.arange(STEPS) * np.timedelta64(6, "h"),
            "lat": np.linspace(-1.0, 1.0, LAT),
            "lon": np.arange(LON) * 0.5,
        },
    )
    ds.to_netcdf(path, engine="h5netcdf")
    return ds


@needs_xarray
def test_a_netcdf_file_with_its_own_dimension_names_and_dates(tmp_path):
    """Dimensions mapped by name (lat -> y, lon -> x), dates read in hours, u and v assembled into a vector along
    (x, y), the per-run and per-time variables found as scalars; frames as the file's, rearranged by hand."""
    ds = ocean(tmp_path / "ocean.nc")
    name = "import_ocean"
    if name not in DATASETS:
        register_dataset(DatasetSpec(name, slots={"sst": "temperature", "velocity_x": "Vx", "velocity_y": "Vy"}))
    options = dict(
        dim_names={"lat": "y", "lon": "x", "run": "trajectory"},
        boundaries={"x": "periodic", "y": "wall"},
        vectors={"velocity": ["u", "v"]},
        progress=False,
    )
    with pytest.raises(ImportInputError, match="dates or durations: pass --time-unit"):
        write_dataset(tmp_path / "ocean.nc", name, tmp_path / "out", **options)
    summary = write_dataset(tmp_path / "ocean.nc", name, tmp_path / "out", time_unit="h", **options)
    assert summary.dt == 6.0 and summary.scalars == ["kappa"] and summary.varying_scalars == ["forcing"]
    assert summary.channels == ["sst", "velocity_x", "velocity_y"] and summary.shape == (LON, LAT)
    source = WellSource(tmp_path / "out", name, "train")
    np.testing.assert_allclose(source.layout.spacing, (0.5, 0.4), rtol=1e-12)
    for path in source.files:
        frames = source.read_frames(path, range(STEPS))
        for slot, run in enumerate(stored(path)):
            for slot_name, variable in (("temperature", "sst"), ("Vx", "u"), ("Vy", "v")):
                expected = ds[variable].values[run].transpose(0, 2, 1).astype(np.float32)  # (time, lon, lat)
                np.testing.assert_array_equal(frames.fields[slot_name][slot].numpy(), expected)
            assert float(frames.scalars["kappa"][slot]) == ds["kappa"].values[run]
            np.testing.assert_array_equal(frames.varying_scalars["forcing"][slot].numpy(), ds["forcing"].values)


@needs_xarray
def test_the_wells_own_export_imported_again_gives_the_same_frames(tmp_path):
    """A dataset made by ``generate-exact`` (tg2d: a pressure and a velocity), exported by the Well's own
    ``hdf5_to_xarray`` (dims sample, time, x, y, i), imported again: every frame of every field is the original
    file's, bit for bit, and the Well's exporter reads the new files back to the same arrays."""
    import xarray as xr
    from the_well.utils.export import hdf5_to_xarray

    from well_upao.data.generate import GenerationRequest, generate_dataset

    request = GenerationRequest(pde="tg2d", out=tmp_path / "made", n_traj=12, resolution=16, n_steps=6)
    generate_dataset(request, progress=False)
    (original,) = sorted((tmp_path / "made" / "tg2d" / "data" / "train").glob("*.hdf5"))
    with h5py.File(original) as f:
        exported = hdf5_to_xarray(f)
        pressure, velocity = f["t0_fields"]["pressure"][()], f["t1_fields"]["velocity"][()]
    name = "import_tg2d_again"
    if name not in DATASETS:
        register_dataset(DatasetSpec(name, slots={"pressure": "pressure", "velocity_x": "Vx", "velocity_y": "Vy"}))
    summary = write_dataset(exported, name, tmp_path / "again", fields=["pressure", "velocity"], progress=False)
    assert summary.notes[0].startswith("axes: read pressure (trajectory time x y), velocity (trajectory time x y i)")
    for split in ("train", "valid", "test"):
        for path in WellSource(tmp_path / "again", name, split).files:
            with h5py.File(path) as f:
                again = hdf5_to_xarray(f)
                for slot, trajectory in enumerate(stored(path)):
                    np.testing.assert_array_equal(f["t0_fields"]["pressure"][slot], pressure[trajectory])
                    np.testing.assert_array_equal(f["t1_fields"]["velocity"][slot], velocity[trajectory])
                    xr.testing.assert_equal(
                        again["velocity"].isel(sample=slot).drop_vars("sample"),
                        exported["velocity"].isel(sample=trajectory).drop_vars("sample"),
                    )


@needs_xarray
def test_a_zarr_store_where_zarr_is_installed(tmp_path):
    pytest.importorskip("zarr")
    import xarray as xr

    ds = xr.Dataset(
        {"h": (("trajectory", "time", "x"), np.random.default_rng(1).normal(size=(4, 6, 12)))},
        coords={"time": np.arange(6) * 0.1, "x": np.arange(12) * 0.25},
    )
    ds.to_zarr(tmp_path / "run.zarr")
    write_dataset(tmp_path / "run.zarr", "import_zarr", tmp_path / "out", slots={"h": "height"}, progress=False)
    with h5py.File(sorted((tmp_path / "out" / "import_zarr" / "data" / "valid").glob("*.hdf5"))[0]) as f:
        (run,) = stored(Path(f.filename))
        np.testing.assert_array_equal(f["t0_fields"]["h"][0], ds["h"].values[run].astype(np.float32))


def test_without_xarray_a_netcdf_file_names_the_extra_to_install(tmp_path, monkeypatch):
    """Where xarray is missing (the default install), a netCDF source names the ``io`` extra; nothing is written."""
    (tmp_path / "run.nc").write_bytes(b"\x89HDF\r\n\x1a\n")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "xarray" else real(n, *a))
    with pytest.raises(
        ImportInputError, match=r"needs xarray: install the io extra \(.venv/bin/pip install '\.\[io\]'"
    ):
        write_dataset(tmp_path / "run.nc", "x", tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()
