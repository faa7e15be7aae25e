"""``trainer=supervised`` and ``trainer=well``: one-step supervised training of any harness model (the
neural-operator baselines).

The loss is the mean squared error of the next frame, through the Well's formatter (``model(x)`` path). Two
objectives (``trainer.objective``), equal up to rounding:

* ``mse``: ``((prediction - target) ** 2).mean()`` over the whole batch (``trainer=supervised``, the paper's
  protocol: per-step warm-up + cosine LR, gradient clipping, early stopping);
* ``loss_fn``: the harness's ``trainer.loss_fn(prediction, target, metadata).mean()``, the expression of the Well's
  own ``Trainer.train_one_epoch`` (``trainer=well``, the Well's released protocol: MSE, per-epoch schedule, no
  clipping): the same reductions in the same order as the Well's, so no rounding difference enters its steps
  (``tests/trainers/test_well_parity.py`` checks the Well's and our steps agree to 1e-5).

With ``trainer.rollout_steps=K > 1`` both train over ``K``-step rollouts with labels on every step
(``SupervisedLoss.rollout_loss``).
"""

from __future__ import annotations

import torch

from well_upao.trainers.loop import Trainer
from well_upao.trainers.rollout import fed_back_frame, feed_back, noise_scale, weighted_steps
from well_upao.trainers.training_loss import TrainingLoss

OBJECTIVES = ("mse", "loss_fn")


class SupervisedLoss(TrainingLoss):
    def __init__(self, objective: str = "mse"):
        if objective not in OBJECTIVES:
            raise ValueError(f"trainer.objective must be one of {OBJECTIVES}, got {objective!r}")
        self.objective = objective

    def __call__(self, batch):
        trainer = self.trainer
        if not trainer.rollout.one_step:
            return self.rollout_loss(batch)
        prediction, target = trainer.rollout_model(trainer.model, batch, trainer.formatter, train=True)
        if self.objective == "loss_fn":
            loss = trainer.loss_fn(prediction, target, trainer.dset_metadata).mean()
            return loss, {type(trainer.loss_fn).__name__.lower(): loss.item()}
        loss = ((prediction - target) ** 2).mean()
        return loss, {"mse": loss.item()}

    def step_loss(self, prediction: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """One step's loss by the objective: ``(B, *space, C)`` frames."""
        if self.objective == "loss_fn":
            return self.trainer.loss_fn(prediction[:, None], target[:, None], self.trainer.dset_metadata).mean()
        return ((prediction - target) ** 2).mean()

    def rollout_loss(self, batch):
        """``trainer.rollout_steps=K > 1`` (``trainers/rollout.py``): the model rolled out ``K`` steps through the
        formatter as the Well's ``rollout_model`` does (its prediction appended to the slid window), with the
        rollout's options (pushforward, noise, step weights); every step's loss is against its true frame."""
        trainer, settings = self.trainer, self.trainer.rollout
        moving = dict(batch)
        moving["input_fields"] = batch["input_fields"].to(trainer.device)
        if "constant_fields" in moving:
            moving["constant_fields"] = moving["constant_fields"].to(trainer.device)
        target = batch["output_fields"][:, : settings.steps].to(trainer.device)
        scale = noise_scale(moving["input_fields"], settings.noise_scale) if settings.noise else None
        steps = []
        for k in range(settings.steps):
            inputs, _ = trainer.formatter.process_input(moving)
            prediction = trainer.formatter.process_output_channel_last(trainer.model(*inputs))
            steps.append(self.step_loss(prediction, target[:, k]))
            if k < settings.steps - 1:
                fed = fed_back_frame(prediction, settings, scale, train=True)
                moving["input_fields"] = feed_back(moving["input_fields"], fed)
        loss = weighted_steps(steps, settings)
        return loss, {"rollout_loss": loss.item(), "rollout_last_step": steps[-1].item()}

    def protocol_settings(self):
        if self.objective == "loss_fn":
            return {"objective": f"loss_fn ({type(self.trainer.loss_fn).__name__})"}
        return {"objective": "mse"}


class SupervisedTrainer(Trainer):
    """``trainer=supervised`` / ``trainer=well``: the loop with ``SupervisedLoss`` (``objective``)."""

    def __init__(self, *args, objective: str = "mse", **kwargs):
        super().__init__(*args, loss=SupervisedLoss(objective), **kwargs)
