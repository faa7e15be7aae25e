"""Decoding what a Well sample says about its physics: dt (at any time stride), grid spacing, periodic axes,
named scalars; for batches (trainers) and single whole-trajectory samples (evaluation)."""

from __future__ import annotations

import math

import pytest
import torch

from well_upao.harness.datamodule import WellUpaoDataModule
from well_upao.harness.samples import batch_dt, batch_grid, file_time_axis, grid_of, named_scalars, sample_context


@pytest.mark.parametrize("stride", [1, 3])
def test_a_batch_gives_its_dt_grid_and_scalars(small_datasets, stride):
    module = WellUpaoDataModule(
        str(small_datasets), "burgers2d", batch_size=2, n_steps_input=2, min_dt_stride=stride, max_dt_stride=stride
    )
    batch = next(iter(module.train_dataloader()))
    grid = batch_grid(batch)
    assert grid.periodic == (True, True)
    assert grid.spacing == pytest.approx((2 * torch.pi / 16, 2 * torch.pi / 16))
    torch.testing.assert_close(batch_dt(batch).float(), torch.full((2,), 0.01 * stride))
    names = list(module.train_dataset.metadata.constant_scalar_names)
    scalars = named_scalars(batch["constant_scalars"], names)
    assert set(scalars) == {"nu", "eps_x", "eps_y", "k_x", "k_y"} and scalars["nu"].shape == (2,)
    assert named_scalars(None, names) == {}


def test_a_single_sample_gives_its_grid(small_datasets):
    module = WellUpaoDataModule(str(small_datasets), "adv1d", batch_size=2, n_steps_input=2)
    sample = module.train_dataset[0]
    grid = grid_of(sample["space_grid"], sample["boundary_conditions"])
    assert grid.periodic == (True,) and grid.spacing == pytest.approx((2 * torch.pi / 64,))


def test_an_evaluation_split_smaller_than_a_batch_is_one_batch_of_all_its_windows(small_datasets):
    module = WellUpaoDataModule(str(small_datasets), "burgers2d", batch_size=16, n_steps_input=2)
    windows = len(module.val_dataset)
    assert 0 < windows < 16  # the Well's loader (drop_last) would yield no batch here
    batches = list(module.val_dataloader())
    assert [len(b["input_fields"]) for b in batches] == [windows]
    assert [len(b["input_fields"]) for b in module.test_dataloader()] == [len(module.test_dataset)]
    assert len(module.train_dataset) >= 16 and len(next(iter(module.train_dataloader()))["input_fields"]) == 16


def test_every_validation_sees_the_same_windows_in_the_same_order(small_datasets):
    """The selection compares epochs on the same samples; the Well's own loader (the negative control) reshuffles
    with torch's global generator at every pass."""
    from the_well.data import WellDataModule

    module = WellUpaoDataModule(str(small_datasets), "burgers2d", batch_size=2, n_steps_input=2)
    passes = [[b["input_fields"] for b in module.val_dataloader()] for _ in range(2)]
    assert len(passes[0]) == len(module.val_dataset) // 2 and all(len(b) == 2 for b in passes[0])
    assert all(torch.equal(a, b) for a, b in zip(*passes, strict=True))
    torch.manual_seed(0)
    well = [[b["input_fields"] for b in WellDataModule.val_dataloader(module)] for _ in range(2)]
    assert not all(torch.equal(a, b) for a, b in zip(*well, strict=True))


def test_a_training_split_smaller_than_a_batch_is_refused(small_datasets):
    module = WellUpaoDataModule(str(small_datasets), "burgers2d", batch_size=10_000, n_steps_input=2)
    with pytest.raises(ValueError, match="fewer than one batch of 10000"):
        module.train_dataloader()


def test_a_stride_the_wells_rollout_datasets_cannot_hold_is_refused_with_the_numbers(small_datasets):
    """12 frames, history 2: stride 3 fits (the Well's full-trajectory mode needs 2 * 3 + 3 = 9 frames), stride 5
    needs 15 (its own assertion only says "not supported")."""
    strides = {"min_dt_stride": 3, "max_dt_stride": 3}
    WellUpaoDataModule(str(small_datasets), "burgers2d", batch_size=2, n_steps_input=2, **strides)
    with pytest.raises(ValueError, match=r"12 frames are too short for history 2 at stride 5: .* at least 15 frames"):
        WellUpaoDataModule(
            str(small_datasets), "burgers2d", batch_size=2, n_steps_input=2, min_dt_stride=5, max_dt_stride=5
        )


@pytest.mark.parametrize("stride", [5, 10])
def test_at_a_stride_a_batch_and_an_evaluated_sample_get_stride_times_the_files_step(tmp_path, stride):
    """Float32 time from t = 1000 every 0.04 (``tests/advected_mode.py``): the loader's min-subtracted float32 window
    times alone are off by 1.5e-5 to 9e-5 of the step; a training batch's dt (``batch_dt`` with the file's time
    axis, as the UPAO trainer calls it) and an evaluated sample's (``sample_context``, as evaluate calls it) are
    ``stride`` times the file's step, within 2e-6 of the exact ``stride * 0.04``; the grid is the file's non-square
    one, the wall axis not periodic."""
    import advected_mode

    from well_upao.data.source import WellSource
    from well_upao.evaluate.plan import open_split

    advected_mode.write(tmp_path)
    source = WellSource(tmp_path, advected_mode.NAME)
    axis, exact = source.layout.time_axis, stride * advected_mode.DT
    module = WellUpaoDataModule(str(tmp_path), advected_mode.NAME, batch_size=2, n_steps_input=2,
                                min_dt_stride=stride, max_dt_stride=stride, data_workers=0)  # fmt: skip
    batch = next(iter(module.train_dataloader()))
    dt = batch_dt(batch, axis)
    torch.testing.assert_close(dt, torch.full((2,), stride * axis.step, dtype=torch.float64), rtol=0, atol=0)
    assert (dt / exact - 1).abs().max() < 2e-6
    assert (batch_dt(batch) / exact - 1).abs().min() > 1e-5  # the loader's float32 times, not snapped
    grid = batch_grid(batch)
    assert grid.periodic == (True, False)
    assert grid.spacing == pytest.approx((2 * math.pi / 24, 3 / 39), rel=1e-6)

    valid = source.with_split("valid")
    opened = open_split(valid, 2, stride)
    names = list(opened.metadata.constant_scalar_names)
    for index in range(len(opened)):
        context = sample_context(opened[index], names, valid.channel_slots, file_time_axis(valid))
        assert abs(float(context.dt) / exact - 1) < 2e-6
        assert context.grid == grid
