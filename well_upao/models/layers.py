"""Building blocks of the NA Transformer: patch encoder/decoder, refinement, SwiGLU, the NA attention module.

Convolutions are dimension-generic (1D, 2D, 3D) through ``CONV`` / ``CONV_TRANSPOSE`` lookups; each spatial
dimensionality gets its own encoder and decoder weights.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn

from well_upao.models.neighborhood_attention import BACKENDS, neighborhood_attention

CONV = {1: nn.Conv1d, 2: nn.Conv2d, 3: nn.Conv3d}
CONV_TRANSPOSE = {1: nn.ConvTranspose1d, 2: nn.ConvTranspose2d, 3: nn.ConvTranspose3d}


def patch_strides(patch: int) -> tuple[int, int]:
    """Split the patch side into the strides of the encoder's two strided convolutions (16 -> 4, 4)."""
    if patch < 1 or patch & (patch - 1):
        raise ValueError(f"patch size {patch} must be a power of two")
    first = 2 ** math.ceil(math.log2(patch) / 2)
    return first, patch // first


class ResidualBlock(nn.Module):
    """``x + Conv3(GELU(Conv3(GELU(x))))`` at constant width (zero padding)."""

    def __init__(self, dims: int, width: int):
        super().__init__()
        self.conv1 = CONV[dims](width, width, 3, padding=1)
        self.conv2 = CONV[dims](width, width, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv2(F.gelu(self.conv1(F.gelu(x))))


class PatchEncoder(nn.Module):
    """Frame ``(N, C, *grid)`` -> tokens ``(N, H, *grid / p)``: strided conv (stride s1) -> residual block ->
    strided conv (stride s2), ``s1 * s2 = p``; kernels equal strides, so patches do not overlap."""

    def __init__(self, dims: int, channels: int, hidden: int, width: int, patch: int):
        super().__init__()
        s1, s2 = patch_strides(patch)
        self.down1 = CONV[dims](channels, width, s1, stride=s1)
        self.block = ResidualBlock(dims, width)
        self.down2 = CONV[dims](width, hidden, s2, stride=s2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down2(F.gelu(self.block(self.down1(x))))


class PatchDecoder(nn.Module):
    """Tokens ``(N, H, *tokens)`` -> field ``(N, C, *grid)``: transposed convolutions mirroring the encoder,
    then the ``I + Conv0`` refinement and a residual post-smoothing stack of three ``k^d`` convolutions
    (``k = 7`` in 1D/2D as in the paper, 3 in 3D to keep CPU cost sane). Both refinements start as identity
    (last convolution zero-initialised) and act on the full-resolution field, across patch borders."""

    def __init__(self, dims: int, channels: int, hidden: int, width: int, patch: int, smoothing_kernel: int):
        super().__init__()
        s1, s2 = patch_strides(patch)
        self.up1 = CONV_TRANSPOSE[dims](hidden, width, s2, stride=s2)
        self.block = ResidualBlock(dims, width)
        self.up2 = CONV_TRANSPOSE[dims](width, channels, s1, stride=s1)
        self.conv0 = CONV[dims](channels, channels, 3, padding=1)
        pad = smoothing_kernel // 2
        self.smooth = nn.ModuleList(CONV[dims](channels, channels, smoothing_kernel, padding=pad) for _ in range(3))
        for conv in (self.conv0, self.smooth[-1]):
            nn.init.zeros_(conv.weight)
            nn.init.zeros_(conv.bias)

    def forward(self, z: torch.Tensor, active: Sequence[int] | None = None) -> torch.Tensor:
        """``active``: the output channels the caller reads (``None``: all). The last smoothing convolution then
        computes only those (every earlier layer mixes all channels, so it runs whole) and its other channels are
        zero: the read channels are the same numbers, for a fraction of the last convolution's cost."""
        x = self.up2(F.gelu(self.block(self.up1(z))))
        x = x + self.conv0(x)  # I + Conv0
        s = x
        *stack, last = self.smooth
        for i, conv in enumerate(stack):
            s = conv(s if i == 0 else F.gelu(s))
        s = s if not stack else F.gelu(s)
        if active is None or len(active) == x.shape[1]:
            return x + last(s)
        index = list(active)
        smoothed = torch.zeros_like(x)
        bias = None if last.bias is None else last.bias[index]
        smoothed[:, index] = last._conv_forward(s, last.weight[index], bias)
        return x + smoothed


class SwiGLU(nn.Module):
    """``down(silu(gate(x)) * up(x))``, applied pointwise to tokens (shared across dimensionalities)."""

    def __init__(self, hidden: int, inner: int):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, inner, bias=False)
        self.up_proj = nn.Linear(hidden, inner, bias=False)
        self.down_proj = nn.Linear(inner, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class NeighborhoodAttention(nn.Module):
    """Multi-head neighborhood attention over ``(t, *space)`` tokens, causal in time, bidirectional in space.

    ``kernel`` is the window per axis ``(k_t, k_1, ..., k_d)``; at run time each is clamped to its axis length
    (a clamped axis is full attention on that axis) and axes of length 1 are dropped.
    """

    def __init__(self, hidden: int, heads: int, kernel: Sequence[int], backend: str = "auto"):
        super().__init__()
        if hidden % heads:
            raise ValueError(f"hidden size {hidden} is not divisible by {heads} heads")
        if backend not in BACKENDS:
            raise ValueError(f"unknown attention backend {backend!r}; choose from {', '.join(BACKENDS)}")
        self.heads = heads
        self.kernel = tuple(int(k) for k in kernel)
        self.backend = backend
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)

    def backend_for(self, query: torch.Tensor) -> str:
        """The backend this call runs: the layer's, except ``flex`` where it would need a backward on the CPU
        (FlexAttention has none there), which runs ``tiles`` (the same attention): a model trained with ``flex`` on a
        GPU resumes or adapts on the CPU."""
        if self.backend == "flex" and query.device.type == "cpu" and query.requires_grad and torch.is_grad_enabled():
            return "tiles"
        return self.backend

    def forward(self, x: torch.Tensor, kernel: Sequence[int] | None = None) -> torch.Tensor:
        """``x``: ``(B, T, *space, H)`` -> same shape. ``kernel`` overrides the window (e.g. re-oriented)."""
        grid = x.shape[1:-1]
        kernel = self.kernel if kernel is None else tuple(kernel)
        if len(grid) != len(kernel):
            raise ValueError(f"attention over {len(kernel)} axes got a {len(grid)}-axis token grid")
        q, k, v = rearrange(self.qkv(x), "b ... (three h d) -> three b ... h d", three=3, h=self.heads)
        kept = [a for a, n in enumerate(grid) if n > 1]
        if not kept:
            out = v  # a single token attends to itself
        else:
            squeeze = [a + 1 for a, n in enumerate(grid) if n == 1]
            q, k, v = (t.squeeze(squeeze) if squeeze else t for t in (q, k, v))
            kernel = [min(kernel[a], grid[a]) for a in kept]
            causal = [a == 0 for a in kept]
            out = neighborhood_attention(q, k, v, kernel, 1, causal, backend=self.backend_for(q))
            for axis in squeeze:
                out = out.unsqueeze(axis)
        return self.proj(rearrange(out, "b ... h d -> b ... (h d)"))
