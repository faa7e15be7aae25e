"""A non-finite training loss names its cause: the samples (file, trajectory, time) and fields with non-finite
values, or finite data and a diverged optimisation."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
import torch
from the_well.benchmark.metrics import MSE

from well_upao.data.generate import GenerationRequest, generate_dataset
from well_upao.harness.datamodule import WellUpaoDataModule
from well_upao.harness.model_factory import na_transformer
from well_upao.trainers.shifted import ShiftedTrainer


def trainer_for(base, tmp_path, lr=1e-4) -> ShiftedTrainer:
    data = WellUpaoDataModule(str(base), "adv1d", batch_size=2, n_steps_input=4, data_workers=0)
    model = na_transformer(preset="tiny", layers=1, dims=(1,), dataset_name="adv1d", well_base_path=str(base))
    folders = {name: str(tmp_path / name) for name in ("checkpoint", "artifact", "viz")}
    return ShiftedTrainer(
        **{f"{name}_folder": folder for name, folder in folders.items()},
        formatter="channels_last_default",
        model=model,
        datamodule=data,
        optimizer=torch.optim.SGD(model.parameters(), lr=lr),
        loss_fn=MSE(),
        epochs=1,
        checkpoint_frequency=0,
        val_frequency=1,
        rollout_val_frequency=1,
        max_rollout_steps=2,
        short_validation_length=1,
        make_rollout_videos=False,
        num_time_intervals=2,
        device=torch.device("cpu"),
        progress=False,
    )


@pytest.fixture
def data_with_a_nan(tmp_path):
    generate_dataset(GenerationRequest(pde="adv1d", out=tmp_path, n_traj=4, resolution=32, n_steps=8), False)
    path = sorted((tmp_path / "adv1d" / "data" / "train").glob("*.hdf5"))[0]
    with h5py.File(path, "r+") as f:
        f["t0_fields"]["u"][1, 7, 3] = np.nan  # the last of 8 frames: only the window starting at frame 3 holds it
    return tmp_path, path.name


def test_non_finite_data_is_named_by_file_trajectory_time_and_field(data_with_a_nan, tmp_path):
    base, file_name = data_with_a_nan
    trainer = trainer_for(base, tmp_path)
    # windows of 4 input + 1 output frames start at frames 0..3; the NaN at frame 7 is in the one starting at 3
    with pytest.raises(FloatingPointError, match=rf"non-finite values in {file_name} trajectory 1 time 3 \(u\)"):
        trainer.train_one_epoch(1, trainer.datamodule.train_dataloader())


def test_finite_data_and_a_diverging_loss_say_so(tmp_path):
    generate_dataset(GenerationRequest(pde="adv1d", out=tmp_path, n_traj=4, resolution=32, n_steps=8), False)
    trainer = trainer_for(tmp_path, tmp_path / "run", lr=1e30)
    with pytest.raises(FloatingPointError, match=r"data is finite \(adv1d_train_000.hdf5 trajectory .*diverged"):
        for _ in range(3):
            trainer.train_one_epoch(1, trainer.datamodule.train_dataloader())
