"""``trainer=supervised``: one-step supervised training of any harness model (the neural-operator baselines).

The loss is the mean squared error of the next frame, through the Well's formatter (``model(x)`` path), with
the same protocol as our finetuning (per-step warm-up + cosine LR, gradient clipping, early stopping).
"""

from __future__ import annotations

from well_upao.trainers.loop import Trainer, TrainingLoss


class SupervisedLoss(TrainingLoss):
    def __call__(self, batch):
        trainer = self.trainer
        prediction, target = trainer.rollout_model(trainer.model, batch, trainer.formatter, train=True)
        loss = ((prediction - target) ** 2).mean()
        return loss, {"mse": loss.item()}


class SupervisedTrainer(Trainer):
    """``trainer=supervised``: the loop with :class:`SupervisedLoss`."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, loss=SupervisedLoss(), **kwargs)
