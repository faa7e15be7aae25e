"""The Well's four datasets of the paper: field selection, slots, PDEs, and the harness on their layouts."""

from __future__ import annotations

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


def test_rayleigh_benard_walls_reach_the_residual(well_base, tmp_path, monkeypatch):
    """Walls on the vertical axis: the UPAO trainer hands its objective a grid periodic in x only, with the file's
    spacing (32 x 16 points on [0, 1)^2)."""
    from the_well.benchmark.metrics import MSE

    from well_upao.physics.objective import UpaoObjective
    from well_upao.trainers.upao import UpaoTrainer

    datamodule = WellUpaoDataModule(
        str(well_base), "rayleigh_benard", batch_size=2, n_steps_input=4, n_steps_output=1, data_workers=0,
        max_rollout_steps=3,
    )  # fmt: skip
    model = na_transformer(
        preset="tiny", layers=1, dims=(2,), dataset_name="rayleigh_benard", well_base_path=str(well_base), history=4
    )
    folders = {f"{name}_folder": str(tmp_path / name) for name in ("checkpoint", "artifact", "viz")}
    trainer = UpaoTrainer(
        **folders, formatter="channels_last_default", model=model, datamodule=datamodule,
        optimizer=torch.optim.AdamW(model.parameters(), lr=1e-4), loss_fn=MSE(), epochs=1, checkpoint_frequency=0,
        val_frequency=1, rollout_val_frequency=1, max_rollout_steps=2, short_validation_length=1,
        make_rollout_videos=False, num_time_intervals=2, device=torch.device("cpu"), progress=False,
    )  # fmt: skip
    grids = []
    original = UpaoObjective.__call__

    def spy(self, prediction, inputs, next_band, dt, bound, *args, **kwargs):
        grids.append(bound.ops.grid)
        return original(self, prediction, inputs, next_band, dt, bound, *args, **kwargs)

    monkeypatch.setattr(UpaoObjective, "__call__", spy)
    terms = trainer.loss.upao_terms(next(iter(datamodule.train_dataloader())))
    assert torch.isfinite(terms.total) and len(grids) == 1
    assert grids[0].periodic == (True, False)
    assert grids[0].spacing == pytest.approx((1 / 32, 1 / 16))
    assert trainer.loss.setup.objective.pde.name == "rayleigh_benard" and len(terms.residual_mse) == 4
