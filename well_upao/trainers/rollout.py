"""Training over the model's own rollouts (``trainer.rollout_steps=K``): the settings and the pieces every loss shares.

A rollout of ``K`` steps from the observed history ``h_1 .. h_T`` predicts ``u^_{T+1} .. u^_{T+K}``: step 1 reads the
true window, and each later step reads the window slid by one frame with the previous prediction appended, as the
Well's ``rollout_model`` feeds its predictions back:

    w_1 = (h_1 .. h_T),   w_{k+1} = (w_k[2:], u^_{T+k} + n_k),   u^_{T+k} = model(w_k)[last]

Options:

* ``rollout_pushforward``: the frames fed back are detached (``u^_{T+k}`` enters ``w_{k+1}`` without its graph), so
  every step's terms send their gradient through that step's forward pass only (the pushforward trick of
  Brandstetter, Worrall & Welling 2022, with every step's terms kept in the loss);
* ``rollout_noise`` ``sigma`` (training only): ``n_k = sigma * s * N(0, 1)`` with ``s`` per sample and channel, either
  the rms frame-to-frame change of the observed history (``rollout_noise_scale=change``) or the spread (standard
  deviation over time and space) of its frames (``spread``), in the units the model reads;
* ``rollout_step_weight`` ``gamma``: the loss is ``sum_k gamma^(k-1) L_k / sum_k gamma^(k-1)``, ``L_k`` the mean of
  step ``k``'s terms (``gamma = 1``: every step counts the same; ``< 1``: the near steps count more).

``K = 1`` is the one-step objective each loss had before, computed by the same code path (bitwise).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from well_upao.harness.samples import into_slots, one_frame_prediction
from well_upao.predict.rollout import autoregress

#: what the noise on fed-back frames is scaled to
NOISE_SCALES = ("change", "spread")


@dataclass(frozen=True)
class RolloutSettings:
    """``trainer.rollout_steps`` / ``rollout_pushforward`` / ``rollout_noise`` / ``rollout_noise_scale`` /
    ``rollout_step_weight`` (module docstring)."""

    steps: int = 1
    pushforward: bool = False
    noise: float = 0.0
    noise_scale: str = "change"
    step_weight: float = 1.0

    def __post_init__(self) -> None:
        if int(self.steps) < 1:
            raise ValueError(f"trainer.rollout_steps must be a positive number of steps, got {self.steps}")
        if self.noise < 0 or not math.isfinite(self.noise):
            raise ValueError(f"trainer.rollout_noise must be a finite number >= 0, got {self.noise}")
        if self.noise_scale not in NOISE_SCALES:
            raise ValueError(f"trainer.rollout_noise_scale must be one of {NOISE_SCALES}, got {self.noise_scale!r}")
        if not self.step_weight > 0:
            raise ValueError(f"trainer.rollout_step_weight must be > 0, got {self.step_weight}")

    @classmethod
    def of(
        cls,
        steps: int = 1,
        pushforward: bool = False,
        noise: float = 0.0,
        noise_scale: str = "change",
        step_weight: float = 1.0,
    ) -> RolloutSettings:
        return cls(int(steps), bool(pushforward), float(noise), str(noise_scale), float(step_weight))

    @property
    def one_step(self) -> bool:
        return self.steps == 1

    def weights(self) -> list[float]:
        """``gamma^(k-1) / sum_j gamma^(j-1)`` for ``k = 1 .. K``."""
        raw = [self.step_weight**k for k in range(self.steps)]
        return [w / sum(raw) for w in raw]

    def describe(self) -> str:
        if self.one_step:
            return "one step ahead"
        parts = [f"{self.steps}-step rollouts"]
        if self.pushforward:
            parts.append("pushforward")
        if self.noise:
            parts.append(f"noise {self.noise:g} x the history's {self.noise_scale}")
        if self.step_weight != 1:
            parts.append(f"step weight {self.step_weight:g}^(k-1)")
        return ", ".join(parts)

    def check_frames(self, n_steps_output: int) -> None:
        """Refuse data that serve fewer frames after the history than the rollout predicts (the band of every
        predicted frame, or its label, is read), with the fix."""
        if n_steps_output < self.steps:
            raise ValueError(
                f"trainer.rollout_steps={self.steps} needs data.n_steps_output >= {self.steps} (the band of every "
                f"predicted frame is compared with the observed band at its time); got {n_steps_output}: add "
                f"data.n_steps_output={self.steps} (the data configs follow trainer.rollout_steps by default)"
            )


def feed_back(window: torch.Tensor, frame: torch.Tensor) -> torch.Tensor:
    """The next step's window ``(B, T, ...)``: ``window`` without its first frame, ``frame`` ``(B, ...)`` appended."""
    return torch.cat([window[:, 1:], frame[:, None]], dim=1)


def noise_scale(history: torch.Tensor, kind: str) -> torch.Tensor:
    """Per sample and channel, the size noise on a fed-back frame is measured in, from the observed ``history``
    ``(B, T, *space, C)``: ``change``: ``sqrt(mean_{t, x} (h_{t+1} - h_t)^2)`` (needs ``T >= 2``); ``spread``: the
    standard deviation over ``t`` and ``x``. Shape ``(B, 1, .., 1, C)`` to broadcast over one frame ``(B, *space,
    C)``."""
    batch, channels = history.shape[0], history.shape[-1]
    if kind == "change":
        if history.shape[1] < 2:
            raise ValueError("rollout noise scaled to the frame-to-frame change needs a history of 2 frames or more")
        steps = (history[:, 1:] - history[:, :-1]).reshape(batch, -1, channels)
        scale = steps.pow(2).mean(1).sqrt()
    elif kind == "spread":
        scale = history.reshape(batch, -1, channels).std(1)
    else:
        raise ValueError(f"noise scale must be one of {NOISE_SCALES}, got {kind!r}")
    return scale.view(batch, *([1] * (history.dim() - 3)), channels)


def perturbed(frame: torch.Tensor, scale: torch.Tensor, sigma: float) -> torch.Tensor:
    """``frame + sigma * scale * N(0, 1)`` (``frame`` unchanged when ``sigma`` is 0)."""
    if sigma == 0:
        return frame
    return frame + sigma * scale.to(frame) * torch.randn_like(frame)


def fed_back_frame(frame: torch.Tensor, settings: RolloutSettings, scale: torch.Tensor | None, train: bool):
    """A predicted frame as the next step reads it: detached under pushforward, with noise in training."""
    if settings.pushforward:
        frame = frame.detach()
    if train and settings.noise and scale is not None:
        frame = perturbed(frame, scale, settings.noise)
    return frame


def weighted_steps(step_terms: list[torch.Tensor], settings: RolloutSettings) -> torch.Tensor:
    """``sum_k w_k mean(step_terms[k])`` with the weights of ``RolloutSettings.weights``."""
    weights = settings.weights()
    return sum(w * t.mean() for w, t in zip(weights, step_terms, strict=True))


def roll_out(
    model,
    history: torch.Tensor,
    constants: torch.Tensor | None,
    settings: RolloutSettings,
    slots: list[int],
    formatter: str | None,
    train: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A ``K``-step rollout (``settings.steps``, ``K > 1``; the loop of ``predict.rollout.autoregress``) from
    ``history`` ``(B, T, *space, C)`` in the model's units and dataset channels: ``(predicted, fed)``. A backbone's
    (``formatter`` ``None``; its slots ``slots``) ``predicted`` is its ``T`` shifted predictions of the true window
    followed by the new frame of each later step, ``(B, T + K - 1, ...)``; a one-frame model's (the Well's
    ``formatter``; ``constants``: its constant fields) is its ``K`` frames. ``fed``: the ``K - 1`` frames fed back
    (``fed_back_frame``: detached under pushforward, noisy in training), the earlier frame of each later step's
    residual pair."""
    scale = noise_scale(history, settings.noise_scale) if train and settings.noise else None
    fed: list[torch.Tensor] = []

    def feed(frame: torch.Tensor) -> torch.Tensor:
        fed.append(fed_back_frame(frame, settings, scale, train))
        return fed[-1] if formatter is not None else into_slots(fed[-1], slots)

    if formatter is not None:
        frames = autoregress(
            lambda w: one_frame_prediction(model, w, formatter, constants), history, settings.steps, feed=feed
        )
        return frames, torch.stack(fed, 1)
    shifted: list[torch.Tensor] = []  # the first step's predictions of the whole true window

    def step(window: torch.Tensor) -> torch.Tensor:
        predicted = model(window, sequence=True)[..., slots]
        if not shifted:
            shifted.append(predicted)
        return predicted[:, -1]

    frames = autoregress(step, into_slots(history, slots), settings.steps, feed=feed)
    return torch.cat([shifted[0], frames[:, 1:]], 1), torch.stack(fed, 1)
