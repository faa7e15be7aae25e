"""Decoding what a Well sample says about its physics: dt (at any time stride), grid spacing, periodic axes,
named scalars; for batches (trainers) and single whole-trajectory samples (evaluation)."""

from __future__ import annotations

import pytest
import torch

from well_upao.harness.datamodule import WellUpaoDataModule
from well_upao.harness.samples import batch_dt, batch_grid, grid_of, named_scalars


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
