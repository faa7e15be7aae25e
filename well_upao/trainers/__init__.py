"""The one training loop (``loop.Trainer``) and its losses for The Well's harness: ``shifted`` (supervised,
dense shifted), ``supervised`` (one frame, any harness model), ``upao`` (unsupervised); pretraining is the
shifted loss on a mixture (``pretraining``)."""

from well_upao.trainers.shifted import ShiftedTrainer
from well_upao.trainers.supervised import SupervisedTrainer
from well_upao.trainers.upao import UpaoTrainer

__all__ = ["ShiftedTrainer", "SupervisedTrainer", "UpaoTrainer"]
