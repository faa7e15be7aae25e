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


# ---------------------------------------------------------------------------- written to the specification
#: the conformance fixtures' sizes per dimension (1D 32 cells, 2D 16 x 16, 3D 8 x 8 x 8)
SPEC_SHAPES = {1: (32,), 2: (16, 16), 3: (8, 8, 8)}
SPEC_T0, SPEC_DT, SPEC_FRAMES, SPEC_KAPPA = 100.0, 0.1, 12, 0.05
SPEC_BOUNDARIES = ("PERIODIC", "WALL", "OPEN")


def spec_dataset_name(dims: int, boundary: str) -> str:
    """The registered name of a conformance fixture (``tests/spec_conformance_dataset.py``)."""
    return f"spec{dims}d_{boundary.lower()}"


def spec_temperature(axes: list[np.ndarray], elapsed: np.ndarray, kappa: float, phase: float) -> np.ndarray:
    """``T = exp(-kappa |k|^2 t) prod_i sin(k_i x_i + phase)`` with ``k_i = 1``: an exact solution of
    ``d_t T = kappa lap T`` on periodic axes of length 2 pi, ``(T, *space)`` float64."""
    grids = np.meshgrid(*axes, indexing="ij")
    shape = np.prod([np.sin(g + phase) for g in grids], axis=0)
    return np.exp(-kappa * len(axes) * elapsed)[(slice(None),) + (None,) * len(axes)] * shape[None]


def write_spec_dataset(
    base: Path,
    dims: int,
    boundary: str,
    n_traj: int = 2,
    sample_varying_time: bool = False,
    name: str | None = None,
) -> Path:
    """A dataset written to the Well's file specification (its documentation's "Data format"), not by our writer:

    * ``dimensions/time`` float32 from ``t0 = 100`` every 0.1 (12 frames; its float32 steps are not exactly equal),
      ``(n_traj, T)`` with ``sample_varying = true`` when ``sample_varying_time`` (each trajectory starting 5 later);
      float32 coordinates (``[0, 2 pi)`` on periodic axes, ``[0, pi]`` with both ends otherwise);
    * float32 fields with ``dim_varying``, ``sample_varying``, ``time_varying``: ``t0_fields/temperature`` (an exact
      solution of ``d_t T = kappa lap T`` on periodic axes), ``t1_fields/velocity`` (time-varying), the constant
      field ``t0_fields/obstacle`` (``time_varying = false``, ``sample_varying = false``), an empty ``t2_fields``;
    * ``/scalars``: ``kappa`` per trajectory (``sample_varying``), the time-varying scalars ``forcing`` ``(B, T)``
      and ``clock`` ``(T,)`` (``time_varying = true``);
    * ``/boundary_conditions/<axis>_<type>`` per axis with ``bc_type = boundary``, ``associated_dims``,
      ``associated_fields``, a boolean ``mask`` marking both ends of the axis;
    * ``stats.yaml`` over every field (constant ones too).
    """
    name = name or spec_dataset_name(dims, boundary)
    shape = SPEC_SHAPES[dims]
    axis_names = ["x", "y", "z"][:dims]
    periodic = boundary == "PERIODIC"
    axes = [np.linspace(0, 2 * np.pi, n, endpoint=False) if periodic else np.linspace(0, np.pi, n) for n in shape]
    elapsed = np.arange(SPEC_FRAMES) * SPEC_DT
    stats: dict = {k: {} for k in ("mean", "std", "rms", "mean_delta", "std_delta", "rms_delta")}
    for key in stats:
        stats[key] |= {"temperature": 1.0, "obstacle": 1.0, "velocity": [1.0] * dims}
    for split_index, split in enumerate(("train", "valid", "test")):
        directory = base / name / "data" / split
        directory.mkdir(parents=True)
        rng = np.random.default_rng(split_index)
        phases = rng.uniform(0, 2 * np.pi, n_traj)
        with h5py.File(directory / f"{name}_{split}.hdf5", "w") as f:
            f.attrs.update(
                dataset_name=name,
                grid_type="cartesian",
                n_spatial_dims=dims,
                n_trajectories=n_traj,
                simulation_parameters=["kappa"],
                kappa=SPEC_KAPPA,
            )
            group = f.create_group("dimensions")
            group.attrs["spatial_dims"] = axis_names
            if sample_varying_time:
                starts = SPEC_T0 + 5.0 * np.arange(n_traj)[:, None]
                time = group.create_dataset("time", data=(starts + elapsed[None]).astype(np.float32))
            else:
                time = group.create_dataset("time", data=(SPEC_T0 + elapsed).astype(np.float32))
            time.attrs.update(sample_varying=sample_varying_time, time_varying=True)
            for axis, values in zip(axis_names, axes, strict=True):
                group.create_dataset(axis, data=values.astype(np.float32)).attrs.update(
                    sample_varying=False, time_varying=False
                )
            group = f.create_group("boundary_conditions")
            for axis, n in zip(axis_names, shape, strict=True):
                bc = group.create_group(f"{axis}_{boundary.lower()}")
                bc.attrs.update(
                    bc_type=boundary, associated_dims=[axis], associated_fields=[], sample_varying=False,
                    time_varying=False,
                )  # fmt: skip
                mask = np.zeros(n, dtype=bool)
                mask[[0, -1]] = True
                bc.create_dataset("mask", data=mask)
            group = f.create_group("scalars")
            group.attrs["field_names"] = ["kappa", "forcing", "clock"]
            kappa = group.create_dataset("kappa", data=np.full(n_traj, SPEC_KAPPA, dtype=np.float32))
            kappa.attrs.update(sample_varying=True, time_varying=False)
            forcing = np.sin(elapsed[None] + phases[:, None]).astype(np.float32)
            group.create_dataset("forcing", data=forcing).attrs.update(sample_varying=True, time_varying=True)
            clock = group.create_dataset("clock", data=(SPEC_T0 + elapsed).astype(np.float32))
            clock.attrs.update(sample_varying=False, time_varying=True)
            temperature = np.stack([spec_temperature(axes, elapsed, SPEC_KAPPA, p) for p in phases])
            grids = np.meshgrid(*axes, indexing="ij")
            velocity = np.stack(
                [
                    np.stack([np.cos(g[None] + 0.3 * elapsed[(slice(None),) + (None,) * dims] + p) for g in grids], -1)
                    for p in phases
                ]
            )
            obstacle = np.exp(-sum((g - np.pi / 2) ** 2 for g in grids))
            fields = {
                "t0_fields": {"temperature": (temperature, True, True), "obstacle": (obstacle, False, False)},
                "t1_fields": {"velocity": (velocity, True, True)},
                "t2_fields": {},
            }
            for group_name, entries in fields.items():
                group = f.create_group(group_name)
                group.attrs["field_names"] = list(entries)
                for field, (data, time_varying, sample_varying) in entries.items():
                    ds = group.create_dataset(field, data=data.astype(np.float32))
                    ds.attrs.update(dim_varying=[True] * dims, sample_varying=sample_varying, time_varying=time_varying)
    (base / name / "stats.yaml").write_text(yaml.safe_dump(stats))
    return base / name
