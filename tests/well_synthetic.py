"""Small synthetic files in the layouts of the Well's datasets (fields, scalars, boundary conditions as the
Well documents them), for tests: random smooth fields, not physics."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import yaml

LAYOUTS = {
    # name: (shape, t0 fields, t1 fields, t2 fields, scalars, boundary types per axis)
    "active_matter": (
        (16, 16),
        ["concentration"],
        ["velocity"],
        ["D", "E"],
        {"alpha": -1.0, "beta": 0.8, "zeta": 5.0},
        ("PERIODIC", "PERIODIC"),
    ),
    "gray_scott_reaction_diffusion": ((16, 16), ["A", "B"], [], [], {"F": 0.03, "k": 0.062}, ("PERIODIC", "PERIODIC")),
    "rayleigh_benard": (
        (32, 16),
        ["buoyancy", "pressure"],
        ["velocity"],
        [],
        {"Rayleigh": 1e6, "Prandtl": 1.0},
        ("PERIODIC", "WALL"),
    ),
    "shear_flow": (
        (16, 32),
        ["tracer", "pressure"],
        ["velocity"],
        [],
        {"Rayleigh": 1e4, "Schmidt": 1.0},
        ("PERIODIC", "PERIODIC"),
    ),
}


def write_well_dataset(base: Path, name: str, n_traj: int = 2, n_steps: int = 12, seed: int = 0) -> Path:
    shape, t0, t1, t2, scalars, bcs = LAYOUTS[name]
    rng = np.random.default_rng(seed)
    axes = ["x", "y"]
    stats: dict = {k: {} for k in ("mean", "std", "rms", "mean_delta", "std_delta", "rms_delta")}
    for split in ("train", "valid", "test"):
        directory = base / name / "data" / split
        directory.mkdir(parents=True)
        with h5py.File(directory / f"{name}_{split}.hdf5", "w") as f:
            f.attrs.update(
                dataset_name=name,
                grid_type="cartesian",
                n_spatial_dims=2,
                n_trajectories=n_traj,
                simulation_parameters=list(scalars),
                **scalars,
            )
            dims = f.create_group("dimensions")
            dims.attrs["spatial_dims"] = axes
            dims.create_dataset("time", data=np.arange(n_steps) * 0.25).attrs["sample_varying"] = False
            for axis, n in zip(axes, shape, strict=True):
                dims.create_dataset(axis, data=np.linspace(0, 1, n, endpoint=False)).attrs["sample_varying"] = False
            group = f.create_group("boundary_conditions")
            for axis, kind in zip(axes, bcs, strict=True):
                bc = group.create_group(f"{axis}_{kind.lower()}")
                bc.attrs.update(
                    bc_type=kind, associated_dims=[axis], associated_fields=[], sample_varying=False, time_varying=False
                )
                mask = np.zeros(shape[axes.index(axis)], dtype=bool)
                mask[[0, -1]] = True
                bc.create_dataset("mask", data=mask)
            group = f.create_group("scalars")
            group.attrs["field_names"] = list(scalars)
            for key, value in scalars.items():
                ds = group.create_dataset(key, data=np.array(value))
                ds.attrs.update(sample_varying=False, time_varying=False)
            for order, names in enumerate((t0, t1, t2)):
                group = f.create_group(f"t{order}_fields")
                group.attrs["field_names"] = names
                for field in names:
                    x, y = np.meshgrid(*(np.linspace(0, 2 * np.pi, n, endpoint=False) for n in shape), indexing="ij")
                    phase = rng.uniform(0, 2 * np.pi, size=(n_traj, 1, 1, 1))
                    t = np.arange(n_steps)[None, :, None, None] * 0.1
                    base_field = np.sin(x + phase + t) * np.cos(y)
                    data = np.repeat(base_field[..., None], 2**order, axis=-1) if order else base_field
                    ds = group.create_dataset(field, data=data.astype(np.float32))
                    ds.attrs.update(dim_varying=[True, True], sample_varying=True, time_varying=True)
                    for key in stats:
                        stats[key][field] = 1.0 if order == 0 else [1.0] * (2**order)
    (base / name / "stats.yaml").write_text(yaml.safe_dump(stats))
    return base / name


def store_as_specified(dataset: Path, t0: float = 100.0, boundary: str = "OPEN") -> Path:
    """Rewrite a dataset's files the way the Well's file specification stores them, where our writers do not:
    ``dimensions/time`` and the coordinates in float32 (time shifted to start at ``t0``, so a spacing such as 0.05
    is not exactly equal from frame to frame) and the non-periodic boundaries as ``boundary``. Fields untouched."""
    for path in sorted((dataset / "data").glob("*/*.hdf5")):
        with h5py.File(path, "r+") as f:
            dims = f["dimensions"]
            for name in ["time", *[str(d) for d in dims.attrs["spatial_dims"]]]:
                values = np.asarray(dims[name], dtype=np.float64) + (t0 if name == "time" else 0.0)
                attrs = dict(dims[name].attrs)
                del dims[name]
                dims.create_dataset(name, data=values.astype(np.float32)).attrs.update(attrs)
            for group in f["boundary_conditions"].values():
                if str(group.attrs["bc_type"]).upper() != "PERIODIC":
                    group.attrs["bc_type"] = boundary
    return dataset
