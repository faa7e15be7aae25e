"""The Well's four datasets of the paper: field selection, slots, PDEs, and the harness on their layouts."""

from __future__ import annotations

import harness_command as harness
import pytest
import torch
import well_synthetic as synthetic

from well_upao.data.datasets import DATASET_SLOTS, slot_indices
from well_upao.harness.datamodule import WellUpaoDataModule
from well_upao.harness.model_factory import na_transformer
from well_upao.physics import pde_for_dataset

EXPECTED_CHANNELS = {
    "active_matter": ["concentration", "velocity_x", "velocity_y"],  # D and E dropped (the paper's selection)
    "gray_scott_reaction_diffusion": ["A", "B"],
    "rayleigh_benard": ["buoyancy", "pressure", "velocity_x", "velocity_y"],
    "shear_flow": ["tracer", "pressure", "velocity_x", "velocity_y"],
}


@pytest.fixture(scope="module")
def well_base(tmp_path_factory):
    base = tmp_path_factory.mktemp("well")
    for name in synthetic.LAYOUTS:
        synthetic.write_well_dataset(base, name)
    return base


@pytest.mark.parametrize("name", list(EXPECTED_CHANNELS))
def test_each_well_dataset_loads_with_the_papers_fields_and_slots(well_base, name):
    module = WellUpaoDataModule(
        str(well_base), name, batch_size=2, n_steps_input=4, n_steps_output=1, data_workers=0, max_rollout_steps=3
    )
    channels = [n for names in module.train_dataset.metadata.field_names.values() for n in names]
    assert channels == EXPECTED_CHANNELS[name]
    for dataset in (module.train_dataset, module.val_dataset, module.rollout_test_dataset):
        sample = dataset[0]
        assert sample["input_fields"].shape[-1] == len(channels)
    assert set(channels) == set(DATASET_SLOTS[name])
    model = na_transformer(preset="tiny", layers=1, dims=(2,), dataset_name=name, well_base_path=str(well_base))
    assert model.channel_slots == slot_indices(name, channels)
    pde = pde_for_dataset(name)
    scalars = {n: torch.tensor([1.0]) for n in module.train_dataset.metadata.constant_scalar_names}
    pde.resolve_parameters(scalars)  # the dataset's scalar names cover the PDE's parameters


def test_rayleigh_benard_walls_reach_the_residual(well_base, tmp_path):
    """Walls on the vertical axis: the UPAO trainer builds a non-periodic grid for it."""
    result = harness.run_harness(
        tmp_path,
        well_base,
        "trainer=upao",
        "data=rayleigh_benard",
        "data.n_steps_input=4",
        "model.history=4",
        *harness.FAST,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "PDE rayleigh_benard (4 sub-equations)" in result.stderr + result.stdout
