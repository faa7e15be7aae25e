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
"""

from __future__ import annotations

from well_upao.trainers.loop import Trainer, TrainingLoss

OBJECTIVES = ("mse", "loss_fn")


class SupervisedLoss(TrainingLoss):
    def __init__(self, objective: str = "mse"):
        if objective not in OBJECTIVES:
            raise ValueError(f"trainer.objective must be one of {OBJECTIVES}, got {objective!r}")
        self.objective = objective

    def __call__(self, batch):
        trainer = self.trainer
        prediction, target = trainer.rollout_model(trainer.model, batch, trainer.formatter, train=True)
        if self.objective == "loss_fn":
            loss = trainer.loss_fn(prediction, target, trainer.dset_metadata).mean()
            return loss, {type(trainer.loss_fn).__name__.lower(): loss.item()}
        loss = ((prediction - target) ** 2).mean()
        return loss, {"mse": loss.item()}

    def protocol_settings(self):
        if self.objective == "loss_fn":
            return {"objective": f"loss_fn ({type(self.trainer.loss_fn).__name__})"}
        return {"objective": "mse"}


class SupervisedTrainer(Trainer):
    """``trainer=supervised`` / ``trainer=well``: the loop with :class:`SupervisedLoss` (``objective``)."""

    def __init__(self, *args, objective: str = "mse", **kwargs):
        super().__init__(*args, loss=SupervisedLoss(objective), **kwargs)
