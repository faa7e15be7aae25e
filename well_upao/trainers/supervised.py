"""``trainer=supervised``: one-step supervised training of any harness model (the neural-operator baselines).

The loss is the mean squared error of the next frame, through the Well's formatter (``model(x)`` path), with
the same protocol as our finetuning (per-step warm-up + cosine LR, gradient clipping, early stopping).
"""

from __future__ import annotations

from well_upao.trainers.common import WellUpaoTrainer


class SupervisedTrainer(WellUpaoTrainer):
    def training_loss(self, batch):
        prediction, target = self.rollout_model(self.model, batch, self.formatter, train=True)
        loss = ((prediction - target) ** 2).mean()
        return loss, {"mse": loss.item()}
