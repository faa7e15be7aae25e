"""Datasets written by The Well's own code, as a user who follows its documentation would have them.

* :func:`write_dummy_dataset`: every split written by ``the_well.utils.dummy_data.write_dummy_data`` (shipped in
  the installed the-well package): a 2D 32 x 32 file, 2 trajectories, 10 float32 frames on ``linspace(0, 1, 10)``,
  one random vector field ``field`` (channels ``field_x``, ``field_y``), the constant field ``constant_field``
  (``time_varying = false``), the constant scalars ``a = 0.25``, ``b = 0.75`` and a time-varying scalar, and
  PERIODIC boundary groups whose masks mark nothing (its line ``mask[0] = mask[-1]`` copies False), so the Well's
  loader reads every edge as OPEN. The writer draws from numpy's global generator: seeded here.
* :func:`write_well_statistics`: ``stats.yaml`` made as the Well's ``scripts/compute_statistics.py`` makes it (its
  logic, written here): ``mean``, ``std``, ``rms`` of every field over the train split, per component, and
  ``mean_delta``, ``std_delta``, ``rms_delta`` of the one-step increments for time-varying fields only.

The user module that makes the dummy trainable: :mod:`well_dummy_dataset` (slots and a PDE)."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import yaml

#: the name ``write_dummy_data`` gives its dataset (the folder is named so too)
DUMMY_NAME = "dummy_dataset"
DUMMY_FRAMES, DUMMY_SHAPE = 10, (32, 32)


def write_dummy_dataset(base: Path, name: str = DUMMY_NAME, seed: int = 0) -> Path:
    """``base/name/data/{train,valid,test}/<name>_<split>.hdf5`` by the Well's writer, and ``stats.yaml``."""
    from the_well.utils.dummy_data import write_dummy_data

    state = np.random.get_state()  # noqa: NPY002  (the Well's writer draws from the global generator)
    np.random.seed(seed)  # noqa: NPY002
    try:
        for split in ("train", "valid", "test"):
            directory = base / name / "data" / split
            directory.mkdir(parents=True, exist_ok=True)
            write_dummy_data(str(directory / f"{name}_{split}.hdf5"))
    finally:
        np.random.set_state(state)  # noqa: NPY002
    write_well_statistics(base / name)
    return base / name


def write_well_statistics(dataset: Path) -> Path:
    """``dataset/stats.yaml`` as the Well's statistics script writes it (see the module docstring)."""
    sums: dict[str, list[np.ndarray]] = {}
    deltas: dict[str, list[np.ndarray]] = {}
    for path in sorted((dataset / "data" / "train").glob("*.hdf5")):
        with h5py.File(path, "r") as f:
            n_dims = int(f.attrs["n_spatial_dims"])
            for order, group in enumerate(("t0_fields", "t1_fields", "t2_fields")):
                for field in f[group].attrs["field_names"]:
                    data = np.asarray(f[group][str(field)], dtype=np.float64)
                    values = data.reshape(-1, n_dims**order) if order else data.reshape(-1, 1)
                    sums.setdefault(str(field), []).append(values)
                    if bool(f[group][str(field)].attrs["time_varying"]):
                        step = np.diff(data, axis=1)  # (n_traj, T - 1, ...): the time axis follows the trajectories
                        delta = step.reshape(-1, n_dims**order) if order else step.reshape(-1, 1)
                        deltas.setdefault(str(field), []).append(delta)

    def moments(parts: list[np.ndarray]) -> dict[str, list[float] | float]:
        values = np.concatenate(parts)
        out = {"mean": values.mean(0), "std": values.std(0), "rms": np.sqrt((values**2).mean(0))}
        return {k: (v.tolist() if v.size > 1 else float(v[0])) for k, v in out.items()}

    stats: dict[str, dict] = {k: {} for k in ("mean", "std", "rms", "mean_delta", "std_delta", "rms_delta")}
    for field, parts in sums.items():
        for key, value in moments(parts).items():
            stats[key][field] = value
    for field, parts in deltas.items():
        for key, value in moments(parts).items():
            stats[f"{key}_delta"][field] = value
    path = dataset / "stats.yaml"
    path.write_text(yaml.safe_dump(stats))
    return path
