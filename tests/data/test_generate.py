"""Generated datasets: layout, splits, exactness, statistics, reproducibility, and loading by The Well."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
import yaml

from well_upao.data.digest import dataset_digest
from well_upao.data.generate import GenerationRequest, generate_dataset, split_trajectories
from well_upao.data.validate import validate_dataset
from well_upao.data.well_format import EXACT_GROUP, read_field
from well_upao.datasets_exact import EXACT_PDES


def trajectory_ids(dataset_dir, split):
    ids = []
    for path in sorted((dataset_dir / "data" / split).glob("*.hdf5")):
        with h5py.File(path, "r") as f:
            ids += list(f[EXACT_GROUP]["trajectory_index"][()])
    return ids


@pytest.mark.parametrize("name", list(EXACT_PDES))
def test_every_dataset_validates_and_matches_the_closed_form(small_datasets, name):
    problems = validate_dataset(small_datasets / name, check_exact=True)
    assert problems == []


def test_split_is_the_seeded_ninety_ten_partition():
    splits = split_trajectories(100, seed=42)
    assert len(splits["train"]) == 90 and len(splits["valid"]) == 10
    assert not set(splits["train"]) & set(splits["valid"])
    assert sorted(splits["train"] + splits["valid"]) == list(range(100))
    assert splits["test"] == splits["valid"]  # the paper evaluates on its validation split
    assert split_trajectories(100, seed=42) == splits
    assert split_trajectories(100, seed=43)["valid"] != splits["valid"]
    held_out = split_trajectories(100, seed=42, test_fraction=0.1)
    assert len(held_out["test"]) == 10 and not set(held_out["test"]) & set(held_out["valid"])
    assert len(held_out["train"]) == 80


def test_files_follow_the_split_and_test_mirrors_valid(small_datasets):
    dataset = small_datasets / "burgers2d"
    splits = split_trajectories(6, seed=42)
    assert trajectory_ids(dataset, "train") == splits["train"]
    assert trajectory_ids(dataset, "valid") == splits["valid"]
    assert trajectory_ids(dataset, "test") == splits["valid"]
    assert len(list((dataset / "data" / "train").glob("*.hdf5"))) == 3  # 5 train trajectories, 2 per file


def test_file_layout_matches_the_well(small_datasets):
    path = sorted((small_datasets / "tg2d" / "data" / "train").glob("*.hdf5"))[0]
    with h5py.File(path, "r") as f:
        assert f.attrs["dataset_name"] == "tg2d" and isinstance(f.attrs["dataset_name"], str)
        assert f.attrs["n_spatial_dims"] == 2 and f.attrs["n_trajectories"] == 2
        assert list(f.attrs["simulation_parameters"]) == ["nu"]
        np.testing.assert_array_equal(f.attrs["nu"], f["scalars"]["nu"][()])
        assert list(f["dimensions"].attrs["spatial_dims"]) == ["x", "y"]
        np.testing.assert_allclose(f["dimensions"]["x"][()], np.arange(16) * 2 * np.pi / 16)  # x_i = i L / N
        np.testing.assert_allclose(np.diff(f["dimensions"]["time"][()]), 0.01)
        assert f["boundary_conditions"]["x_periodic"].attrs["bc_type"] == "PERIODIC"
        assert f["t1_fields"]["velocity"].shape == (2, 12, 16, 16, 2)  # vector: trailing D
        assert f["t0_fields"]["pressure"].shape == (2, 12, 16, 16)
        assert list(f["t2_fields"].attrs["field_names"]) == []
        assert f["t1_fields"]["velocity"].dtype == np.float32
        assert f["scalars"]["nu"].shape == (2,) and f["scalars"]["nu"].attrs["sample_varying"]
    with h5py.File(sorted((small_datasets / "wave2d" / "data" / "train").glob("*.hdf5"))[0], "r") as f:
        assert f[EXACT_GROUP]["amplitude"].shape == (2, 48)  # mode table outside /scalars
        assert list(f["scalars"].attrs["field_names"]) == ["c"]


def assert_stats_equal_numpy_over_train_files(dataset, fields) -> None:
    """stats.yaml against float64 numpy over every train file; ``fields``: (name, components or None)."""
    stats = yaml.safe_load((dataset / "stats.yaml").read_text())
    for field, components in fields:
        arrays = []
        for path in sorted((dataset / "data" / "train").glob("*.hdf5")):
            with h5py.File(path, "r") as f:
                arrays.append(np.asarray(read_field(f, field), dtype=np.float64))
        data = np.concatenate(arrays)  # (n, T, H, W[, D])
        deltas = np.diff(data, axis=1)
        axes = tuple(range(data.ndim - (1 if components else 0)))
        for key, values in (("mean", data), ("mean_delta", deltas)):
            np.testing.assert_allclose(stats[key][field], values.mean(axis=axes), atol=1e-6)
        for key, values in (("std", data), ("std_delta", deltas)):
            np.testing.assert_allclose(stats[key][field], values.std(axis=axes), rtol=1e-5)
        for key, values in (("rms", data), ("rms_delta", deltas)):
            np.testing.assert_allclose(stats[key][field], np.sqrt((values**2).mean(axis=axes)), rtol=1e-5)
        if components:
            assert isinstance(stats["std"][field], list) and len(stats["std"][field]) == components


def test_stats_equal_numpy_over_the_train_split(small_datasets):
    assert_stats_equal_numpy_over_train_files(small_datasets / "tg2d", (("pressure", None), ("velocity", 2)))


def spy_on_evaluations(monkeypatch, pde) -> list[tuple[int, int]]:
    """Record ``(trajectories, time steps)`` of every ``evaluate_many`` call of ``pde``'s class."""
    calls = []
    original = type(pde).evaluate_many

    def spy(self, params, axes, times, dtype=np.float64):
        calls.append((len(params), len(times)))
        return original(self, params, axes, times, dtype)

    monkeypatch.setattr(type(pde), "evaluate_many", spy)
    return calls


def test_memory_is_bounded_by_time_blocks(monkeypatch, tmp_path):
    """A trajectory larger than BATCH_BYTES is evaluated one block of time steps at a time."""
    import well_upao.data.generate as generate

    monkeypatch.setattr(generate, "BLOCK_BYTES", 16 * 16 * 3 * 8 * 4)  # four tg2d steps at 16^2 in float64
    monkeypatch.setattr(generate, "BATCH_BYTES", 0)
    calls = spy_on_evaluations(monkeypatch, EXACT_PDES["tg2d"])
    generate_dataset(GenerationRequest(pde="tg2d", out=tmp_path, n_traj=3, resolution=16, n_steps=10), False)
    assert {n for n, _ in calls} == {1} and max(t for _, t in calls) <= 4 + 1  # + the frame before, for statistics
    assert validate_dataset(tmp_path / "tg2d", check_exact=True) == []
    # increments across time-block boundaries are counted once each
    assert_stats_equal_numpy_over_train_files(tmp_path / "tg2d", (("pressure", None), ("velocity", 2)))


def test_small_trajectories_are_evaluated_in_batches(monkeypatch, tmp_path):
    """Trajectories up to BATCH_BYTES share one call; files and statistics are the same bytes as without."""
    import well_upao.data.generate as generate

    request = GenerationRequest(pde="burgers1d", out=tmp_path / "batched", n_traj=12, resolution=32, n_steps=6)
    monkeypatch.setattr(generate, "BATCH_BYTES", 3 * 32 * 6 * 4)  # three trajectories
    calls = spy_on_evaluations(monkeypatch, EXACT_PDES["burgers1d"])
    generate_dataset(request, False)
    assert max(n for n, _ in calls) == 3 and sum(n for n, _ in calls) == 12 and {t for _, t in calls} == {6}
    assert validate_dataset(tmp_path / "batched" / "burgers1d", check_exact=True) == []

    monkeypatch.setattr(generate, "BATCH_BYTES", 0)  # one trajectory per call: the same bytes
    generate_dataset(GenerationRequest(**{**request.__dict__, "out": tmp_path / "single"}), False)
    assert dataset_digest(tmp_path / "batched" / "burgers1d") == dataset_digest(tmp_path / "single" / "burgers1d")


@pytest.mark.parametrize("name", ["tg2d", "burgers1d", "adv3d", "wave2d"])
def test_the_well_loads_the_files_unchanged(small_datasets, name):
    from the_well.data import WellDataModule, WellDataset
    from the_well.data.normalization import ZScoreNormalization

    from well_upao.harness.names import register_exact_datasets

    register_exact_datasets()
    pde = EXACT_PDES[name]
    module = WellDataModule(
        str(small_datasets),
        name,
        batch_size=2,
        n_steps_input=8,
        n_steps_output=1,
        data_workers=0,
        use_normalization=True,
        normalization_type=ZScoreNormalization,
    )
    batch = next(iter(module.train_dataloader()))
    n_channels = sum(pde.n_spatial_dims**spec.order for spec in pde.fields)
    spatial = module.train_dataset.metadata.spatial_resolution
    assert batch["input_fields"].shape == (2, 8, *spatial, n_channels)
    assert batch["output_fields"].shape == (2, 1, *spatial, n_channels)
    assert batch["constant_scalars"].shape == (2, len(pde.scalar_names))
    assert (batch["boundary_conditions"] == 2).all()  # PERIODIC on every side
    dataset = WellDataset(
        well_base_path=str(small_datasets), well_dataset_name=name, well_split_name="test", n_steps_input=8
    )
    sample = dataset[0]
    assert np.isclose(float(sample["output_time_grid"][0] - sample["input_time_grid"][-1]), pde.default_dt)


def test_early_writeback_keeps_files_complete(monkeypatch, tmp_path):
    """Writeback hints after every block (SYNC_BYTES = 1) drop written pages from the cache; the files must still
    read back exactly, so nothing depends on those pages staying cached."""
    import well_upao.data.generate as generate

    monkeypatch.setattr(generate, "SYNC_BYTES", 1)
    monkeypatch.setattr(generate, "BATCH_BYTES", 0)
    generate_dataset(GenerationRequest(pde="wave2d", out=tmp_path, n_traj=4, resolution=16, n_steps=5), False)
    assert validate_dataset(tmp_path / "wave2d", check_exact=True) == []


def test_time_stored_as_the_well_stores_it_changes_nothing_but_its_dtype(tmp_path):
    """``--time-dtype float32``: ``dimensions/time`` is float32 (its steps then differ by rounding), the fields are
    the float64 run's bit for bit, the closed form still validates, and every reader gets the same step (the
    residual floors equal the float64 dataset's to rounding)."""
    from well_upao.data.source import WellSource
    from well_upao.physics import pde_for_dataset
    from well_upao.physics.floor import floor_rows

    common = dict(pde="advdiff2d", n_traj=4, resolution=16, n_steps=21, dt=0.05)
    generate_dataset(GenerationRequest(out=tmp_path / "f64", **common), progress=False)
    generate_dataset(GenerationRequest(out=tmp_path / "f32", time_dtype="float32", **common), progress=False)
    (f64,) = sorted((tmp_path / "f64" / "advdiff2d" / "data" / "train").glob("*.hdf5"))
    (f32,) = sorted((tmp_path / "f32" / "advdiff2d" / "data" / "train").glob("*.hdf5"))
    with h5py.File(f64) as a, h5py.File(f32) as b:
        assert a["dimensions"]["time"].dtype == np.float64 and b["dimensions"]["time"].dtype == np.float32
        steps = np.diff(b["dimensions"]["time"][()].astype(np.float64))
        assert steps.max() > steps.min()  # float32 rounding: not equal from frame to frame
        assert np.array_equal(a["t0_fields"]["u"][()], b["t0_fields"]["u"][()])
    assert validate_dataset(tmp_path / "f32" / "advdiff2d", check_exact=True) == []
    sources = [WellSource(tmp_path / out, "advdiff2d") for out in ("f64", "f32")]
    assert abs(sources[1].layout.time_axis.step / 0.05 - 1) < 1e-8
    floors = [
        floor_rows(s.observed(2, max_trajectories=2, max_frames=8), 2, pde_for_dataset("advdiff2d")) for s in sources
    ]
    for row64, row32 in zip(*floors, strict=True):
        for name, value in row64.residuals.items():
            assert row32.residuals[name] == pytest.approx(value, rel=1e-5)
    with pytest.raises(ValueError, match="--time-dtype"):
        generate_dataset(GenerationRequest(out=tmp_path / "bad", time_dtype="float16", **common), progress=False)
