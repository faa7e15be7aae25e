"""What the one training loop (``trainers/loop.py``) asks of a loss, and the prior's switch.

* ``TrainingLoss``: the objective of one step, attached to the run it trains (``RunContext``, which the loop builds
  and hands it; a loss never holds the loop), and its checkpoint facts. The losses: ``shifted``
  (``trainers/shifted.py``), ``supervised`` (``trainers/supervised.py``), ``upao`` (``trainers/upao.py``, whose
  validation and judge the loop holds beside it).
* ``kept_prior``: the model predicting with a prior (an extrapolation of the window), as ``best.pt`` holds it
  when the selection keeps the prior.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch

from well_upao.predict.classical import ClassicalPrior
from well_upao.trainers.run_context import RunContext


class TrainingLoss:
    """One objective of the loop, attached to the run it trains (``attach``): it may read the run's model, device and
    data (``self.run``)."""

    #: whether the loss needs a well-upao backbone (18 slots, ``forward_sequence``; the loop checks before attaching)
    needs_backbone = False

    def attach(self, run: RunContext) -> None:
        """Attach to ``run``, the run the loop trains."""
        self.run = run

    def __call__(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, float]]:
        """Scalar loss of one batch and named values to log."""
        raise NotImplementedError

    def checkpoint_info(self) -> dict[str, Any]:
        """What checkpoints should record about this loss (in their ``train`` section)."""
        return {}

    def run_facts(self) -> dict[str, Any]:
        """Facts about the run the loss decided (e.g. an ``auto`` discretisation), for the first metrics line."""
        return {}

    def protocol_settings(self) -> dict[str, Any]:
        """The loss's settings that belong to the training protocol (``Trainer.protocol_facts``)."""
        return {"objective": type(self).__name__}


@contextlib.contextmanager
def kept_prior(model: torch.nn.Module, prior: ClassicalPrior):
    """The model predicting with a classical ``prior`` (its table entry, ``predict.classical``: the window's
    extrapolation of polynomial ``prior.order``; ``NATransformer.set_prior``, carried in its state dict), restored
    to its network afterwards."""
    model.set_prior(prior.order)
    try:
        yield model
    finally:
        model.set_prior(-1)
