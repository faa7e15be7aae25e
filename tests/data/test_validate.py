"""The format validator finds what would break The Well's loaders or our contracts."""

from __future__ import annotations

import shutil

import h5py
import numpy as np
import pytest
import yaml

from well_upao.data.source import WellSource
from well_upao.data.validate import validate_dataset, validate_file


@pytest.fixture()
def dataset_copy(small_datasets, tmp_path):
    target = tmp_path / "tg2d"
    shutil.copytree(small_datasets / "tg2d", target)
    return target


def first_file(dataset):
    return WellSource(dataset.parent, dataset.name).files[0]


def corrupt(path, action):
    with h5py.File(path, "r+") as f:
        action(f)


@pytest.mark.parametrize(
    "action, expected",
    [
        (lambda f: f.attrs.__setitem__("dataset_name", np.bytes_(b"tg2d")), "is bytes"),
        (lambda f: f.attrs.__delitem__("n_trajectories"), "missing root attribute 'n_trajectories'"),
        (lambda f: f.__delitem__("t2_fields"), "missing group /t2_fields"),
        (lambda f: f["boundary_conditions"]["x_periodic"].attrs.__setitem__("bc_type", "SLIPPERY"), "bc_type"),
        (lambda f: f["scalars"].attrs.__setitem__("field_names", ["nu", "Re"]), "no such dataset"),
        (lambda f: f.attrs.__setitem__("n_trajectories", 3), "expected (3,"),
        (lambda f: f["t1_fields"]["velocity"].__setitem__((0, 0, 0, 0), [np.nan, 0.0]), "NaN"),
        (lambda f: f["t1_fields"].attrs.__setitem__("field_names", ["speed"]), "no such dataset"),
    ],
)
def test_file_problems_are_reported(dataset_copy, action, expected):
    path = first_file(dataset_copy)
    assert validate_file(path) == []
    corrupt(path, action)
    problems = validate_file(path)
    assert problems and any(expected in p for p in problems), problems


def test_changed_values_break_the_exact_check(dataset_copy):
    path = first_file(dataset_copy)
    corrupt(path, lambda f: f["t0_fields"]["pressure"].__setitem__((1, 3, 2, 2), 0.5))
    assert validate_file(path) == []
    problems = validate_file(path, check_exact=True)
    assert any("differs from the closed form" in p for p in problems)


def test_dataset_level_problems(dataset_copy):
    assert validate_dataset(dataset_copy) == []
    stats = yaml.safe_load((dataset_copy / "stats.yaml").read_text())
    del stats["rms_delta"]
    stats["std"]["velocity"] = [1.0]
    (dataset_copy / "stats.yaml").write_text(yaml.safe_dump(stats))
    for path in (dataset_copy / "data" / "test").glob("*.hdf5"):
        path.unlink()
    problems = validate_dataset(dataset_copy)
    assert any("missing section 'rms_delta'" in p for p in problems)
    assert any("std['velocity']" in p for p in problems)
    assert any("test: split is missing or has no HDF5 files" in p for p in problems)
