"""Supervised next-step training with dense shifted supervision (the paper's pretraining loss).

For a window of ``T`` input frames and the frame after it, the model predicts ``[u^_2 .. u^_{T+1}]`` from
``[u_1 .. u_T]`` in one forward pass and the loss is

    L_pre = 1 / (T |Omega| c) * sum_{tau, x, active channels} (u^_{tau+1} - u_{tau+1})^2

(the paper's eq. for L_pre, averaged over the ``c`` active channels), which supervises every history length
``1..T`` at once thanks to the causal temporal attention. With ``trainer.rollout_steps=K > 1`` the later steps of
the model's own rollout are supervised too, each on its true frame (``ShiftedLoss.rollout_loss``). Batches
come in the dataset's channels (mapped to the 18 slots with the model's slot map) or already in slots with their
``slot_mask`` (a pretraining mixture).
"""

from __future__ import annotations

import logging

import torch

from well_upao.harness.well_trainer import trainer_argument, with_argument
from well_upao.models.kinds import is_sequence_model
from well_upao.predict.rollout import autoregress
from well_upao.trainers.loop import Trainer
from well_upao.trainers.rollout import fed_back_frame, feed_back, noise_scale, weighted_steps
from well_upao.trainers.supervised import SupervisedLoss
from well_upao.trainers.training_loss import TrainingLoss

logger = logging.getLogger(__name__)


def masked_mse(prediction: torch.Tensor, target: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean squared error over all entries of the active slots (``mask`` is ``(18,)`` of 0/1)."""
    squared = (prediction - target) ** 2 * mask
    return squared.sum() / (mask.sum() * squared[..., 0].numel())


class ShiftedLoss(TrainingLoss):
    needs_backbone = True

    def __call__(self, batch):
        run = self.run
        frames = run.batch_frames(batch)
        if "slot_mask" in batch:  # already in slots, with the batch's own dataset mask
            mask = batch["slot_mask"].to(run.device)
        else:
            frames, mask = run.bare_model.to_slots(frames), run.bare_model.slot_mask(run.device)
        history = batch["input_fields"].shape[1]
        prediction = run.model(frames[:, :history], mask, sequence=True)  # through DDP's forward when wrapped
        loss = masked_mse(prediction, frames[:, 1 : history + 1], mask)
        if run.rollout.one_step:
            return loss, {"mse_shifted": loss.item()}
        return self.rollout_loss(frames, history, mask, prediction, loss)

    def rollout_loss(self, frames, history: int, mask, prediction, first: torch.Tensor):
        """``trainer.rollout_steps=K > 1`` (``trainers/rollout.py``): step 1 is the shifted loss above, each later
        step ``k`` the masked MSE of the frame predicted from the window slid by ``k - 1`` frames (the previous
        predictions fed back, restricted to the active slots) against the true frame ``T + k``; the loss is the
        steps' weighted mean."""
        model, settings = self.run.model, self.run.rollout
        scale = noise_scale(frames[:, :history], settings.noise_scale) if settings.noise else None

        def feed(frame: torch.Tensor) -> torch.Tensor:
            return fed_back_frame(frame * mask, settings, scale, train=True) * mask

        window = feed_back(frames[:, :history], feed(prediction[:, -1]))
        rolled = autoregress(lambda w: model(w, mask, sequence=True)[:, -1], window, settings.steps - 1, feed=feed)
        steps = [first]
        for k in range(1, settings.steps):
            steps.append(masked_mse(rolled[:, k - 1 : k], frames[:, history + k : history + k + 1], mask))
        loss = weighted_steps(steps, settings)
        return loss, {"mse_shifted": first.item(), "mse_rollout_last": steps[-1].item(), "rollout_loss": loss.item()}


class NextFrameSlotLoss(TrainingLoss):
    """Pretraining of a one-frame model on a slot mixture (``model(history, slot_mask)`` returns the next frame in
    the 18 slots, e.g. ``well_upao.models.foundation.PDETransformerSlots``):

        L = 1 / (|Omega| c) * sum_{x, active channels} (u^_{T+1} - u_{T+1})^2

    the shifted loss's last term alone (a model without causal temporal attention has no shorter histories)."""

    def __call__(self, batch):
        run = self.run
        frames = run.batch_frames(batch)
        mask = batch["slot_mask"].to(run.device)
        history = batch["input_fields"].shape[1]
        prediction = run.model(frames[:, :history], mask)
        loss = masked_mse(prediction, frames[:, history], mask)
        return loss, {"mse_next": loss.item()}


class ShiftedTrainer(Trainer):
    """``trainer=shifted`` (the harness's default trainer): the loop with ``ShiftedLoss``. Given one of The
    Well's one-frame models (``model=fno`` and the like, which have no shifted output), it trains it as
    ``trainer=supervised`` does, with the one-step loss and the channels-first layout those models take, and
    says so in one log line."""

    def __init__(self, *args, **kwargs):
        one_frame = not is_sequence_model(trainer_argument("model", args, kwargs))
        if one_frame:  # the layout the one-frame models take, before the loss is attached
            args, kwargs = with_argument("formatter", "channels_first_default", args, kwargs)
        super().__init__(*args, loss=SupervisedLoss() if one_frame else ShiftedLoss(), **kwargs)
        if one_frame:
            logger.info(
                f"trainer=shifted got {type(self.bare_model).__name__}, a one-frame model: training it with the "
                "supervised one-step loss and channels-first inputs, as trainer=supervised does"
            )
