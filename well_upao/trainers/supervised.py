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

from well_upao.predict.rollout import autoregress
from well_upao.trainers.loop import Trainer
from well_upao.trainers.rollout import fed_back_frame, noise_scale, weighted_steps
from well_upao.trainers.training_loss import TrainingLoss

OBJECTIVES = ("mse", "loss_fn")


class SupervisedLoss(TrainingLoss):
    def __init__(self, objective: str = "mse"):
        if objective not in OBJECTIVES:
            raise ValueError(f"trainer.objective must be one of {OBJECTIVES}, got {objective!r}")
        self.objective = objective

    def __call__(self, batch):
        run = self.run
        if not run.rollout.one_step:
            return self.rollout_loss(batch)
        prediction, target = run.well_rollout(run.model, batch, run.formatter, train=True)
        if self.objective == "loss_fn":
            loss = run.loss_fn(prediction, target, run.metadata).mean()
            return loss, {type(run.loss_fn).__name__.lower(): loss.item()}
        loss = ((prediction - target) ** 2).mean()
        return loss, {"mse": loss.item()}

    def step_loss(self, prediction: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """One step's loss by the objective: ``(B, *space, C)`` frames."""
        if self.objective == "loss_fn":
            return self.run.loss_fn(prediction[:, None], target[:, None], self.run.metadata).mean()
        return ((prediction - target) ** 2).mean()

    def rollout_loss(self, batch):
        """``trainer.rollout_steps=K > 1`` (``trainers/rollout.py``): the model rolled out ``K`` steps through the
        formatter as the Well's ``rollout_model`` does (its prediction appended to the slid window), with the
        rollout's options (pushforward, noise, step weights); every step's loss is against its true frame."""
        run, settings = self.run, self.run.rollout
        moving = dict(batch)
        if "constant_fields" in moving:
            moving["constant_fields"] = moving["constant_fields"].to(run.device)
        window = batch["input_fields"].to(run.device)
        target = batch["output_fields"][:, : settings.steps].to(run.device)
        scale = noise_scale(window, settings.noise_scale) if settings.noise else None

        def step(frames: torch.Tensor) -> torch.Tensor:
            inputs, _ = run.formatter.process_input(moving | {"input_fields": frames})
            return run.formatter.process_output_channel_last(run.model(*inputs))

        rolled = autoregress(
            step, window, settings.steps, feed=lambda frame: fed_back_frame(frame, settings, scale, train=True)
        )
        steps = [self.step_loss(rolled[:, k], target[:, k]) for k in range(settings.steps)]
        loss = weighted_steps(steps, settings)
        return loss, {"rollout_loss": loss.item(), "rollout_last_step": steps[-1].item()}

    def protocol_settings(self):
        if self.objective == "loss_fn":
            return {"objective": f"loss_fn ({type(self.run.loss_fn).__name__})"}
        return {"objective": "mse"}


class SupervisedTrainer(Trainer):
    """``trainer=supervised`` / ``trainer=well``: the loop with ``SupervisedLoss`` (``objective``)."""

    def __init__(self, *args, objective: str = "mse", **kwargs):
        super().__init__(*args, loss=SupervisedLoss(objective), **kwargs)
