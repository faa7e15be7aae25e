"""The two VRMSE definitions, labelled everywhere they are reported (the paper's eq. for VRMSE and The Well's
metric, which divide by different variances).

* The Well's VRMSE, per sample, time and channel: ``sqrt(mean_x (u^ - u)^2 / (var_x(u) + 1e-7))`` where the
  variance is over space at that time, unbiased (N - 1) as ``torch.std`` in ``the_well.benchmark.metrics.VRMSE``.
* The paper's VRMSE (its eq. for VRMSE), per trajectory and channel over the full time series:
  ``sqrt(sum_{x,t} (u^ - u)^2 / (sum_{x,t} (u - mean_t u(x))^2 + 1e-8))`` with the temporal mean at each
  location; the paper then averages over active channels.

Arrays are channels-last: ``(T, *space, C)``.
"""

from __future__ import annotations

import torch

WELL_EPS = 1e-7
PAPER_EPS = 1e-8


def vrmse_well(prediction: torch.Tensor, target: torch.Tensor, spatial_dims: int) -> torch.Tensor:
    """The Well's VRMSE, ``(..., T, C)`` for inputs ``(..., T, *space, C)``."""
    axes = tuple(range(-spatial_dims - 1, -1))
    mse = ((prediction - target) ** 2).mean(dim=axes)
    variance = target.var(dim=axes, unbiased=True)
    return torch.sqrt(mse / (variance + WELL_EPS))


def vrmse_paper(prediction: torch.Tensor, target: torch.Tensor, constant_as_nan: bool = False) -> torch.Tensor:
    """The paper's VRMSE of one trajectory, per channel ``(C,)``, for inputs ``(T, *space, C)``.

    A channel constant in time (e.g. a stored forcing field) has no temporal variance and the definition
    degenerates to ``error / 1e-8``; with ``constant_as_nan`` such channels give NaN (left out of means)."""
    axes = tuple(range(prediction.ndim - 1))
    error = ((prediction - target) ** 2).sum(dim=axes)
    deviation = ((target - target.mean(dim=0, keepdim=True)) ** 2).sum(dim=axes)
    value = torch.sqrt(error / (deviation + PAPER_EPS))
    if constant_as_nan:
        constant = deviation <= 1e-12 * (target**2).sum(dim=axes)
        value = torch.where(constant, torch.full_like(value, float("nan")), value)
    return value
