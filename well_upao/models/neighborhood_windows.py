"""The neighborhood rule of NATTEN (0.21) per axis: which keys a query's window holds, and which windows NATTEN
rejects. Every backend of `well_upao.models.neighborhood_attention` (query tiles, FlexAttention) builds on these two
functions; `reference_neighborhood_attention` there restates the rule independently for the tests.

* non-causal axis: the window ``[s, s + k)`` with ``s = clamp(i - k // 2, 0, L - k)`` is *shifted* at the
  borders, so every query keeps exactly ``k`` neighbours;
* causal axis: keys ``i - k + 1 .. i``, truncated at the start (fewer than ``k`` near ``i = 0``);
* dilation ``d``: the same rule inside each residue class ``i mod d`` (positions ``i mod d + d * j``);
* ``kernel < 2`` and ``kernel * dilation > L`` are rejected.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from well_upao.tensor_cache import cached_tensors


def check_window(lengths: Sequence[int], kernel: Sequence[int], dilation: Sequence[int]) -> None:
    """Reject what NATTEN rejects: kernel < 2, dilation < 1, kernel * dilation > axis length."""
    for axis, (length, k, d) in enumerate(zip(lengths, kernel, dilation, strict=True)):
        if k < 2:
            raise ValueError(f"kernel size {k} on axis {axis} is below 2 (NATTEN's minimum)")
        if d < 1:
            raise ValueError(f"dilation {d} on axis {axis} must be >= 1")
        if k * d > length:
            raise ValueError(
                f"kernel {k} x dilation {d} = {k * d} exceeds the length {length} of axis {axis}; "
                "clamp the kernel to the grid (the model does) or use a larger grid"
            )


@cached_tensors(maxsize=256)
def axis_window_mask(length: int, kernel: int, dilation: int, causal: bool) -> torch.Tensor:
    """``mask[i, j]`` is True when key ``j`` is in query ``i``'s window on one axis (``L x L`` bool)."""
    i = torch.arange(length)
    residue, j = i % dilation, i // dilation
    if causal:
        start = (j - kernel + 1).clamp(min=0)
        stop = j + 1
    else:
        class_length = (length - residue + dilation - 1) // dilation
        start = torch.minimum((j - kernel // 2).clamp(min=0), class_length - kernel)
        stop = start + kernel
    key = torch.arange(length)
    same_class = (key[None, :] % dilation) == residue[:, None]
    key_j = key[None, :] // dilation
    return same_class & (key_j >= start[:, None]) & (key_j < stop[:, None])
