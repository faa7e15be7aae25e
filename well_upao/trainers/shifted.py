"""Supervised next-step training with dense shifted supervision (the paper's pretraining loss).

For a window of ``T`` input frames and the frame after it, the model predicts ``[u^_2 .. u^_{T+1}]`` from
``[u_1 .. u_T]`` in one forward pass and the loss is

    L_pre = 1 / (T |Omega| c) * sum_{tau, x, active channels} (u^_{tau+1} - u_{tau+1})^2

(the paper's eq. for L_pre, averaged over the ``c`` active channels), which supervises every history length
``1..T`` at once thanks to the causal temporal attention.
"""

from __future__ import annotations

import torch

from well_upao.trainers.common import WellUpaoTrainer


def masked_mse(prediction: torch.Tensor, target: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean squared error over all entries of the active slots (``mask`` is ``(18,)`` of 0/1)."""
    squared = (prediction - target) ** 2 * mask
    return squared.sum() / (mask.sum() * squared[..., 0].numel())


class ShiftedTrainer(WellUpaoTrainer):
    """``trainer=shifted``: the Well's trainer with the shifted supervised loss on ``forward_sequence``."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.require_backbone()

    def training_loss(self, batch):
        model = self.bare_model
        frames = model.to_slots(self.batch_frames(batch))
        history = batch["input_fields"].shape[1]
        prediction = self.model(frames[:, :history], sequence=True)  # through DDP's forward when wrapped
        loss = masked_mse(prediction, frames[:, 1 : history + 1], self.slot_mask())
        return loss, {"mse_shifted": loss.item()}
