"""Trainers for The Well's harness: ``shifted`` (supervised) and ``upao`` (unsupervised)."""

from well_upao.trainers.shifted import ShiftedTrainer
from well_upao.trainers.supervised import SupervisedTrainer
from well_upao.trainers.upao import UpaoTrainer

__all__ = ["ShiftedTrainer", "SupervisedTrainer", "UpaoTrainer"]
