"""Parity with the Well's own training: its ``Trainer`` + ``WellDataModule`` (the_well 1.2.0, constructed directly)
and our harness under ``experiment=fno_well`` give the same training losses, weights and validation metrics on
the same data, seed and order.

The one thing that cannot agree by construction is the training order: the Well's ``train_dataloader`` shuffles with
a ``RandomSampler`` that draws from torch's global generator at every pass (no seed of its own), ours draws each
epoch's permutation from ``(data.shuffle_seed, epoch)`` (``harness/datamodule.EpochSampler``, so an interrupted epoch
can resume). The test feeds the Well's ``Trainer.train_one_epoch`` our epoch orders (it takes the loader as an
argument) and pins that its own loader is such a ``RandomSampler``. Everything else is the Well's own code on its
side: normalisation (training batches z-scored by the dataset, validation mapped by ``rollout_model``), the FNO, the
MSE objective, AdamW, its ``LinearWarmupCosineAnnealingLR`` built as its train.py builds it (``warmup_start_lr =
eta_min = 0.1 lr``) and stepped after each epoch, no clipping, and its ``validation_loop``.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import harness_command as harness  # tests/ is on sys.path (conftest)
import pytest
import torch
from torch.utils.data import DataLoader, RandomSampler

EPOCHS, WARMUP, BATCH, SEED, HISTORY = 3, 1, 4, 0, 4
FNO = dict(modes1=4, modes2=4, hidden_channels=8)


@pytest.fixture(scope="module")
def tiny_burgers(tmp_path_factory) -> Path:
    from well_upao.data.generate import GenerationRequest, generate_dataset

    base = tmp_path_factory.mktemp("parity")
    generate_dataset(GenerationRequest(pde="burgers2d", out=base, n_traj=6, resolution=16, n_steps=8), progress=False)
    return base


def our_run(base: Path, out: Path, monkeypatch, *overrides: str) -> Path:
    """``python -m well_upao.train experiment=fno_well ...`` in this process (the same function, composed configs)."""
    return harness.run_harness_in_process(
        base,
        out,
        monkeypatch,
        "experiment=fno_well",
        "data=burgers2d",
        f"data.shuffle_seed={SEED}",
        f"data.batch_size={BATCH}",
        f"trainer.epochs={EPOCHS}",
        f"trainer.warmup_epochs={WARMUP}",
        *[f"model.{k}={v}" for k, v in FNO.items()],
        "trainer.short_validation_length=1000",  # every validation batch, as the Well's full validation
        "trainer.rollout_val_frequency=1000",
        "trainer.max_rollout_steps=1",
        "data.max_rollout_steps=2",
        "name=parity",  # the primary config names runs after Hydra's runtime choices (not set by compose)
        *overrides,
        seed=SEED,
    )


def well_run(base: Path, folder: Path, monkeypatch) -> tuple[list[float], list[dict], torch.nn.Module]:
    """The Well's own Trainer and WellDataModule, built as its train.py builds them, on our epoch orders."""
    import wandb
    from the_well.benchmark.metrics import MSE
    from the_well.benchmark.models import FNO as WellFNO
    from the_well.benchmark.optim.schedulers import LinearWarmupCosineAnnealingLR
    from the_well.benchmark.trainer import Trainer
    from the_well.data import WellDataModule
    from the_well.data import utils as well_utils
    from the_well.data.normalization import ZScoreNormalization

    from well_upao.harness.datamodule import EpochSampler

    monkeypatch.setattr(well_utils, "WELL_DATASETS", [*well_utils.WELL_DATASETS, "burgers2d"])
    monkeypatch.setenv("WANDB_MODE", "disabled")
    wandb.init(mode="disabled")
    torch.manual_seed(SEED)
    data = WellDataModule(
        str(base),
        "burgers2d",
        batch_size=BATCH,
        use_normalization=True,
        normalization_type=ZScoreNormalization,
        n_steps_input=HISTORY,
        n_steps_output=1,
        max_rollout_steps=2,
        data_workers=0,
        rank=0,
    )
    meta = data.train_dataset.metadata
    model = WellFNO(
        dim_in=HISTORY * meta.n_fields + meta.n_constant_fields,
        dim_out=meta.n_fields,
        n_spatial_dims=meta.n_spatial_dims,
        spatial_resolution=meta.spatial_resolution,
        modes3=4,
        **FNO,
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=1e-4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scheduler = LinearWarmupCosineAnnealingLR(optimizer, WARMUP, EPOCHS, warmup_start_lr=1e-3, eta_min=1e-3)
    folders = [folder / name for name in ("checkpoints", "artifacts", "viz")]
    for f in folders:
        f.mkdir(parents=True)
    trainer = Trainer(
        *map(str, folders),
        formatter="channels_first_default",
        model=model,
        datamodule=data,
        optimizer=optimizer,
        loss_fn=MSE(),
        epochs=EPOCHS,
        checkpoint_frequency=0,
        val_frequency=1,
        rollout_val_frequency=1000,
        max_rollout_steps=1,
        short_validation_length=1000,
        make_rollout_videos=False,
        num_time_intervals=5,
        lr_scheduler=scheduler,
        device=torch.device("cpu"),
    )
    # the Well's own training order: torch's global generator, no per-epoch seed (the difference pinned here)
    assert isinstance(data.train_dataloader().sampler, RandomSampler)
    sampler = EpochSampler(len(data.train_dataset), SEED)
    losses, validations = [], []
    for epoch in range(1, EPOCHS + 1):
        sampler.set_epoch(epoch)
        loader = DataLoader(data.train_dataset, batch_size=BATCH, sampler=sampler, drop_last=True, num_workers=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            losses.append(trainer.train_one_epoch(epoch, loader)[0])
        validations.append(trainer.validation_loop(data.val_dataloader(), "valid", full=True, epoch=epoch))
    return losses, validations, model


def test_fno_well_trains_as_the_wells_own_trainer(tiny_burgers, tmp_path, monkeypatch):
    from the_well.benchmark.trainer import training as well_training

    monkeypatch.setattr(well_training, "validation_plots", [])  # figures only (slow); the numbers are unchanged
    theirs, their_validations, their_model = well_run(tiny_burgers, tmp_path / "well", monkeypatch)
    run = our_run(tiny_burgers, tmp_path / "ours", monkeypatch)
    lines = [json.loads(line) for line in (run / "artifacts" / "metrics.jsonl").read_text().splitlines()]
    epochs = [line for line in lines if "train_loss" in line]
    assert [line["epoch"] for line in epochs] == list(range(1, EPOCHS + 1))
    assert lines[0]["protocol"] == "well" and lines[0]["protocol_settings"]["n_steps_input"] == HISTORY
    ours = [line["train_loss"] for line in epochs]
    assert ours == pytest.approx(theirs, rel=1e-5), (ours, theirs)
    assert theirs[-1] < 0.5 * theirs[0]  # training moved: equal losses are not both flat
    # the learning rate of each epoch: 0.1 lr, then lr (after WARMUP - 1 = 0 more epochs), then the cosine
    assert [line["lr"] for line in epochs] == pytest.approx([1e-3, 1e-2, 5.5e-3], rel=1e-9)
    key = "valid_burgers2d/full_VRMSE_T=all"
    for line, (criterion, logs) in zip(epochs, their_validations, strict=True):
        assert line["valid"] == pytest.approx(criterion, rel=1e-5)  # the MSE criterion, in physical units
        assert line[key] == pytest.approx(logs[key], rel=1e-5)
    from well_upao.models.checkpoint import read_checkpoint

    state = read_checkpoint(run / "checkpoints" / "recent.pt")["state_dict"]
    for name, value in their_model.state_dict().items():
        torch.testing.assert_close(state[name], value, rtol=1e-4, atol=1e-6, msg=name)
