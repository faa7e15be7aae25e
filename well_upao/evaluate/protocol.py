"""The one-step and rollout protocol: one implementation, used by evaluation, the trainers' validation and
pretraining.

* one step (the paper's protocol): frame ``t`` predicted from the true frames ``t - history .. t - 1``, for every
  ``t >= history`` of a trajectory;
* rollout: ``steps`` autoregressive predictions from the first window, each fed back as the newest frame.

A ``Predictor`` (``well_upao.evaluate.predictors``) maps windows ``(B, T, *space, C)`` to next frames.
"""

from __future__ import annotations

import torch

from well_upao.evaluate.predictors import Context, Predictor


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
        ctx = None
        if context is not None:
            n = len(windows)
            scalars = {k: v.expand(n) for k, v in context.scalars.items()}
            ctx = Context(context.dt.expand(n), context.grid, scalars, context.channel_slots)
        outputs.append(predictor.predict(windows, ctx))
    return torch.cat(outputs)


def rollout(predictor: Predictor, frames: torch.Tensor, history: int, steps: int, context: Context):
    """``steps`` autoregressive predictions from the first window: ``(steps, *space, C)``."""
    window = frames[:history].clone()
    out = []
    for _ in range(steps):
        nxt = predictor.predict(window[None], context)[0]
        out.append(nxt)
        window = torch.cat([window[1:], nxt[None]])
    return torch.stack(out)
