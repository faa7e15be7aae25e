"""What the one training loop (``trainers/loop.py``) asks of a loss, and the prior's switch.

* ``TrainingLoss``: the objective of one step and, where it has one, its own validation criterion, its
  checkpoint facts and its label-free judge (``judge``: ``trainers.guard.Guard`` or ``None``). The losses:
  ``shifted`` (``trainers/shifted.py``), ``supervised`` (``trainers/supervised.py``), ``upao``
  (``trainers/upao.py``).
* ``kept_prior``: the model predicting with a prior (an extrapolation of the window), as ``best.pt`` holds it
  when the selection keeps the prior.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch


class TrainingLoss:
    """One objective of the loop, attached to its trainer (``attach``), which it may read (model, device, data)."""

    #: whether the loss needs a well-upao backbone (18 slots, ``forward_sequence``)
    needs_backbone = False
    #: whether the selection must score every candidate on the same validation batches: the last validation is
    #: then short like the others (the Well's loop makes it full, on the whole split, so its last candidate was
    #: compared on other windows than the earlier ones and the start)
    selects_on_the_same_batches = False
    #: the run's label-free judge (``trainers.guard.Guard``: the guard and the prior rule), ``None`` for losses
    #: whose selection needs none; the loop holds it
    judge = None

    def attach(self, trainer: Any) -> None:
        """Attach to ``trainer``, the loop (``well_upao.trainers.loop.Trainer``, which imports this module)."""
        self.trainer = trainer
        if self.needs_backbone:
            trainer.require_backbone()

    def __call__(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, float]]:
        """Scalar loss of one batch and named values to log."""
        raise NotImplementedError

    def validate(self, dataloader, full: bool) -> tuple[float | None, dict[str, float]]:
        """The loss's own validation on the validation loader: ``(selection criterion or None, logs)``; ``None``
        keeps The Well's criterion (its ``loss_fn`` on the validation rollout)."""
        return None, {}

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
def kept_prior(model: torch.nn.Module, order: int):
    """The model predicting with a prior, the window's extrapolation of polynomial ``order``
    (``NATransformer.set_prior``, carried in its state dict), restored to its network afterwards."""
    model.set_prior(order)
    try:
        yield model
    finally:
        model.set_prior(-1)
