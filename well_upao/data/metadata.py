"""Read what a model needs to know about a Well dataset (channel names, sizes) from its files alone."""

from __future__ import annotations

from pathlib import Path

import h5py

from well_upao.data.datasets import selected_fields
from well_upao.data.validate import flattened_channel_names


class DatasetNotFoundError(FileNotFoundError):
    """No HDF5 file where the dataset should be."""


def first_file(well_base_path: str | Path, dataset_name: str, split: str = "train") -> Path:
    directory = Path(well_base_path) / dataset_name / "data" / split
    files = sorted(list(directory.glob("*.hdf5")) + list(directory.glob("*.h5")))
    if not files:
        raise DatasetNotFoundError(
            f"no HDF5 files in {directory}; generate the dataset first "
            f"(e.g. `well-upao generate-exact --pde {dataset_name} --out {well_base_path}`) "
            "or point WELL_BASE_PATH / data.well_base_path at it"
        )
    return files[0]


def dataset_channel_names(well_base_path: str | Path, dataset_name: str, fields: list[str] | None = None) -> list[str]:
    """Flattened channel names in the Well's order (t0 fields, then t1 components, then t2), restricted to the
    field selection (``fields``, else the paper's selection for the dataset)."""
    with h5py.File(first_file(well_base_path, dataset_name), "r") as f:
        names = flattened_channel_names(f)
    kept = selected_fields(dataset_name, fields)
    if kept is None:
        return names
    return [n for n in names if any(n == k or n.startswith(f"{k}_") for k in kept)]
