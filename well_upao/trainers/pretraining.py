"""Pretraining (the paper's Stage 1) in the one loop: the shifted loss on a multi-dataset mixture.

Its protocol: AdamW (0.9, 0.95), lr 1e-4 cosine to 1e-6 after 200 warm-up steps, weight decay 0.01, gradient
clipping 1.0, the dense shifted loss on active channels (the next-frame loss for a one-frame model such as
PDE-Transformer), an equal number of clips per dataset per epoch
(``well_upao.harness.mixture``); single process, DDP or FSDP (``python -m well_upao.train --config-name
pretrain``). Validation is one-step VRMSE (both definitions) per dataset on whole validation trajectories; the
selection criterion is the mean of the paper's VRMSE over the datasets. A run folder holds ``recent.pt``,
``best.pt`` and ``metrics.jsonl``; rerunning the command resumes it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from the_well.benchmark.metrics import MSE

from well_upao.evaluate.metrics import vrmse_paper, vrmse_well
from well_upao.harness.mixture import MixtureDataModule
from well_upao.models.kinds import is_sequence_model
from well_upao.predict.predictors import SlotModel
from well_upao.predict.rollout import one_step_all
from well_upao.trainers.loop import Trainer
from well_upao.trainers.shifted import NextFrameSlotLoss, ShiftedLoss


@torch.no_grad()
def per_dataset_validation(trainer: Trainer, split: str, full: bool, epoch: int) -> tuple[float | None, dict]:
    """One-step VRMSE of every dataset of the mixture (the validation split only; a mixture has no test)."""
    if split != "valid":
        return None, {}
    mixture: MixtureDataModule = trainer.datamodule
    model = trainer.bare_model.eval()
    results = {}
    for name in mixture.modules:
        mask = mixture.mask(name).to(trainer.device)
        active = mask.bool()
        predictor = SlotModel(name, model, mask)
        paper, well = [], []
        for trajectory in mixture.validation_trajectories_of(name):
            trajectory = trajectory.to(trainer.device)
            prediction = one_step_all(predictor, trajectory, mixture.n_steps_input, None)[..., active]
            truth = trajectory[mixture.n_steps_input :][..., active]
            paper.append(vrmse_paper(prediction, truth, constant_as_nan=True).nanmean())
            well.append(vrmse_well(prediction, truth, truth.ndim - 2).mean())
        results[f"{name}/vrmse_paper"] = float(torch.stack(paper).mean())
        results[f"{name}/vrmse_well"] = float(torch.stack(well).mean())
    scores = [v for k, v in results.items() if k.endswith("/vrmse_paper")]
    return sum(scores) / len(scores), results


def pretraining_trainer(
    model: torch.nn.Module,
    mixture: MixtureDataModule,
    optimizer: torch.optim.Optimizer,
    output_dir: str | Path,
    device: torch.device,
    is_distributed: bool = False,
    epochs: int = 10,
    **protocol: Any,
) -> Trainer:
    """The loop for a pretraining run in ``output_dir`` (resumed from its ``recent.pt`` when there is one);
    ``protocol``: the loop's settings (``warmup_steps``, ``lr_min``, ``grad_clip``, ``max_minutes``,
    ``max_steps``, ``progress``, ...)."""
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    recent = output_dir / "recent.pt"
    return Trainer(
        checkpoint_folder=str(output_dir),
        artifact_folder=str(output_dir),
        viz_folder=str(output_dir / "viz"),
        formatter="channels_last_default",
        model=model,
        datamodule=mixture,
        optimizer=optimizer,
        loss_fn=MSE(),
        epochs=epochs,
        checkpoint_frequency=0,
        val_frequency=1,
        rollout_val_frequency=10**9,
        max_rollout_steps=1,
        short_validation_length=1,
        make_rollout_videos=False,
        num_time_intervals=1,
        device=device,
        is_distributed=is_distributed,
        checkpoint_path=str(recent) if recent.is_file() else "",
        loss=ShiftedLoss() if is_sequence_model(model) else NextFrameSlotLoss(),
        validation=per_dataset_validation,
        **protocol,
    )
