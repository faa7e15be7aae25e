"""Trainers for The Well's harness: ``shifted`` (supervised) and ``upao`` (unsupervised)."""

from well_upao.trainers.shifted import ShiftedTrainer

__all__ = ["ShiftedTrainer"]
