"""The one-step and rollout protocol: one implementation, used by evaluation, the trainers' validation and
pretraining.

* one step (the paper's protocol): frame ``t`` predicted from the true frames ``t - history .. t - 1``, for every
  ``t >= history`` of a trajectory;
* rollout: ``steps`` autoregressive predictions from one or several start windows, each prediction fed back as the
  newest frame.

A ``Predictor`` (``well_upao.evaluate.predictors``) maps windows ``(B, T, *space, C)`` to next frames.
"""

from __future__ import annotations

import dataclasses

import torch

from well_upao.evaluate.predictors import Predictor
from well_upao.harness.samples import Context


class ProtocolError(ValueError):
    """A trajectory too short for the requested history."""


def one_step_all(
    predictor: Predictor, frames: torch.Tensor, history: int, context: Context | None, batch: int = 8
) -> torch.Tensor:
    """Predictions of frames ``history .. T-1`` from their true histories: ``(T - history, *space, C)``.
    ``context`` (the sample's physics) is only needed by the solver baseline."""
    if frames.shape[0] <= history:
        raise ProtocolError(f"a trajectory of {frames.shape[0]} frames has no frame after a history of {history}")
    outputs = []
    for start in range(history, frames.shape[0], batch):
        stop = min(start + batch, frames.shape[0])
        windows = torch.stack([frames[t - history : t] for t in range(start, stop)])
        outputs.append(predictor.predict(windows, batch_context(context, len(windows))))
    return torch.cat(outputs)


def batch_context(context: Context | None, n: int) -> Context | None:
    """``context`` for a batch of ``n`` windows of one trajectory: its dt and scalars expanded, its grid, slots and
    constant fields (a one-frame model reads them after the frames, as in training) kept."""
    if context is None:
        return None
    scalars = {k: v.expand(n) for k, v in context.scalars.items()}
    return dataclasses.replace(context, dt=context.dt.expand(n), scalars=scalars)


def rollout(
    predictor: Predictor,
    frames: torch.Tensor,
    history: int,
    steps: int,
    context: Context | None,
    starts: tuple[int, ...] | list[int] = (0,),
) -> torch.Tensor:
    """``steps`` autoregressive predictions from each start's window ``frames[s : s + history]``, each prediction
    fed back as the newest frame of its window (the Well's ``rollout_model``): ``(len(starts), steps, *space, C)``,
    to be compared with ``frames[s + history : s + history + steps]``. The starts roll out together, one batch."""
    if any(s < 0 or s + history + steps > frames.shape[0] for s in starts):
        raise ProtocolError(
            f"a rollout of {steps} steps after a history of {history} from starts {list(starts)} needs "
            f"{max(starts) + history + steps} frames; the trajectory has {frames.shape[0]}"
        )
    window = torch.stack([frames[s : s + history] for s in starts])
    ctx = batch_context(context, len(starts))
    out = []
    for _ in range(steps):
        nxt = predictor.predict(window, ctx)
        out.append(nxt)
        window = torch.cat([window[:, 1:], nxt[:, None]], dim=1)
    return torch.stack(out, dim=1)
