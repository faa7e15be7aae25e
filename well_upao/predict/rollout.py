"""The autoregressive loop and the one-step protocol: one implementation, used by the trainers' validation and their
rollout objective, evaluation, the forecast and pretraining.

* [`autoregressive_frames`][well_upao.predict.rollout.autoregressive_frames] (stacked:
  [`autoregress`][well_upao.predict.rollout.autoregress]): the loop itself, on any step function
  ``window -> next frame``: ``u^_{k+1} = step(w_k)``, ``w_{k+1} = w_k`` with ``feed(u^_{k+1})`` appended, its first
  frame dropped when the window slides (a fixed history length) or kept when it grows (a causal model served a
  window shorter than its history);
* one step (the paper's protocol, [`one_step_all`][well_upao.predict.rollout.one_step_all]): frame ``t`` predicted
  from the true frames ``t - history .. t - 1``, for every ``t >= history`` of a trajectory;
* rollout ([`rollout`][well_upao.predict.rollout.rollout]): ``steps`` autoregressive predictions of a
  ``Predictor`` (``well_upao.predict.predictors``) from one or several start windows, each prediction fed back as the
  newest frame (the Well's ``rollout_model``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

import torch

from well_upao.harness.samples import Context


class Predictor(Protocol):
    """What a rollout steps: a row of ``well_upao.predict.predictors`` (``predict(window, context) -> next frame``)."""

    def predict(self, window: torch.Tensor, context: Context | None) -> torch.Tensor: ...


class ProtocolError(ValueError):
    """A trajectory too short for the requested history."""


def autoregressive_frames(
    step: Callable[[torch.Tensor], torch.Tensor],
    window: torch.Tensor,
    steps: int,
    *,
    slide: bool = True,
    feed: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> Iterator[torch.Tensor]:
    """The loop: ``steps`` predictions ``(B, ...)`` of ``step`` (``(B, T, ...) -> (B, ...)``) from ``window``
    ``(B, T, ...)``, yielded one at a time, each fed back (as ``feed`` makes it, by default itself) as the newest
    frame of the next window; ``slide``: the next window drops its first frame (a fixed length), else it grows by one
    frame. A caller that writes each frame as it comes (the forecast) holds one window, not the rollout."""
    for k in range(steps):
        frame = step(window)
        yield frame
        if k + 1 < steps:
            fed = frame if feed is None else feed(frame)
            window = torch.cat([window[:, 1:] if slide else window, fed[:, None]], dim=1)


def autoregress(
    step: Callable[[torch.Tensor], torch.Tensor],
    window: torch.Tensor,
    steps: int,
    *,
    slide: bool = True,
    feed: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> torch.Tensor:
    """The predictions of [`autoregressive_frames`][well_upao.predict.rollout.autoregressive_frames] stacked,
    ``(B, steps, ...)``."""
    return torch.stack(list(autoregressive_frames(step, window, steps, slide=slide, feed=feed)), dim=1)


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
    starts: Sequence[int] = (0,),
) -> torch.Tensor:
    """``steps`` autoregressive predictions from each start's window ``frames[s : s + history]``, each prediction
    fed back as the newest frame of its window (the Well's ``rollout_model``): ``(len(starts), steps, *space, C)``,
    to be compared with ``frames[s + history : s + history + steps]``. The starts roll out together, one batch. A
    start may leave fewer than ``steps`` frames after its window (a forecast beyond the stored frames); the window
    itself must be there."""
    if any(s < 0 or s + history > frames.shape[0] for s in starts):
        raise ProtocolError(
            f"a rollout after a history of {history} from starts {list(starts)} needs {max(starts) + history} "
            f"frames; the trajectory has {frames.shape[0]}"
        )
    window = torch.stack([frames[s : s + history] for s in starts])
    ctx = batch_context(context, len(starts))
    return autoregress(lambda w: predictor.predict(w, ctx), window, steps)
