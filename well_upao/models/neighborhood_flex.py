"""Neighborhood attention through PyTorch's FlexAttention: the window rule as a block mask, any number of axes.

The rule is ``well_upao.models.neighborhood_windows``'s (NATTEN's): per axis ``a`` the ``L_a x L_a`` window
mask ``axis_window_mask`` (shifted windows at the borders, causal
axes truncated at the start, dilation within residue classes), and a query attends to a key when every axis's
mask allows it,

    allowed(q, k) = AND_a  window_a[q_a, k_a],

on the grid coordinates ``q_a``, ``k_a`` of the two tokens. That predicate is FlexAttention's ``mask_mod``;
``create_block_mask`` turns it into a block-sparse mask whose empty blocks the kernels skip.

Which blocks are empty depends on how tokens are ordered. Row-major order puts a whole line of the last axis in a
block; here the tokens are reordered into *bricks*, one box of the grid per block of ``BLOCK_SIZE`` tokens
(``brick_order``), chosen among the boxes that tile the grid as the one whose block mask keeps the fewest
query x key entries. The rule is separable, so that count is a product over axes (``kept_entries``) and no
``N x N`` mask is formed to choose. Queries, keys and values are permuted into brick order before the kernel and
the output back after it.

The block mask and the order are built once per grid, kernel, dilation, causality and device (cached). On CUDA
the kernel is ``torch.compile(flex_attention)`` (forward and backward generated); on the CPU FlexAttention has no
backward in the pinned torch, so this backend refuses inputs that need a gradient there (the ``tiles`` backend
trains on the CPU) and runs the forward only, eagerly (``default_attend``).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

from well_upao.models.neighborhood_windows import axis_window_mask
from well_upao.tensor_cache import cached_tensors

#: tokens per block of the block mask (FlexAttention's default block size)
BLOCK_SIZE = 128

Attend = Callable[..., torch.Tensor]


@dataclass(frozen=True)
class FlexPlan:
    """What one grid configuration needs: the brick order of the tokens (``order[n]``: the row-major index of the
    token at position ``n``), its inverse, and the block mask over the reordered tokens."""

    order: torch.Tensor
    inverse: torch.Tensor
    block_mask: object  # torch.nn.attention.flex_attention.BlockMask
    brick: tuple[int, ...]


def kept_entries(lengths: Sequence[int], brick: Sequence[int], masks: Sequence[torch.Tensor]) -> int:
    """Query x key entries inside the non-empty blocks when each block is one ``brick`` of the grid: per axis, the
    pairs of brick rows whose window mask has a True entry, times the brick's side squared, multiplied over the axes
    (a block is non-empty exactly when it is non-empty on every axis: the rule is an AND over axes)."""
    total = 1
    for length, side, mask in zip(lengths, brick, masks, strict=True):
        blocks = mask.reshape(length // side, side, length // side, side).any(dim=(1, 3))
        total *= int(blocks.sum()) * side * side
    return total


def brick_candidates(lengths: Sequence[int], block: int) -> list[tuple[int, ...]]:
    """Boxes of whole powers of two that tile the grid (each side divides its axis) with ``block`` tokens, or as many
    as the grid has when it holds fewer; row-major lines (``(1, ..., 1, L_last)``-like boxes) are among them."""
    target = min(block, math.prod(lengths))
    sides = [[s for s in (2**p for p in range(16)) if s <= n and n % s == 0] for n in lengths]
    return [b for b in itertools.product(*sides) if math.prod(b) == target]


def brick_order(lengths: Sequence[int], brick: Sequence[int]) -> torch.Tensor:
    """Row-major token indices listed brick by brick (bricks in row-major order, tokens row-major inside each)."""
    n = len(lengths)
    index = torch.arange(math.prod(lengths)).reshape(lengths)
    split = [dim for length, side in zip(lengths, brick, strict=True) for dim in (length // side, side)]
    permutation = [2 * a for a in range(n)] + [2 * a + 1 for a in range(n)]
    return index.reshape(split).permute(permutation).reshape(-1)


@cached_tensors(maxsize=64)
def flex_plan(
    lengths: tuple[int, ...],
    kernel: tuple[int, ...],
    dilation: tuple[int, ...],
    causal: tuple[bool, ...],
    device: str,
    block: int = BLOCK_SIZE,
) -> FlexPlan:
    """The brick order and block mask of one configuration (see the module docstring); cached."""
    masks = [axis_window_mask(n, k, d, c) for n, k, d, c in zip(lengths, kernel, dilation, causal, strict=True)]
    candidates = brick_candidates(lengths, block)
    if candidates:
        brick = min(candidates, key=lambda b: (kept_entries(lengths, b, masks), b))
        order = brick_order(lengths, brick)
    else:  # a side that no power of two divides: row-major order
        brick, order = tuple(lengths), torch.arange(math.prod(lengths))
    coordinates = torch.stack(torch.unravel_index(order, lengths), dim=-1).to(device)  # (N, axes) in brick order
    axis_masks = [m.to(device) for m in masks]

    def allowed(b, h, q_index, k_index):
        q, k = coordinates[q_index], coordinates[k_index]
        result = axis_masks[0][q[..., 0], k[..., 0]]
        for a in range(1, len(axis_masks)):
            result = result & axis_masks[a][q[..., a], k[..., a]]
        return result

    tokens = math.prod(lengths)
    block_mask = create_block_mask(
        allowed, None, None, tokens, tokens, device=device, BLOCK_SIZE=block, _compile=device.startswith("cuda")
    )
    return FlexPlan(order.to(device), torch.argsort(order).to(device), block_mask, tuple(brick))


@functools.cache
def compiled_flex_attention() -> Attend:
    """``torch.compile(flex_attention)``, made once per process: the fused kernels (forward and backward on CUDA)."""
    return torch.compile(flex_attention)  # dynamic shapes after the first size change: few recompiles


def default_attend(query: torch.Tensor) -> Attend:
    """The FlexAttention call for ``query``'s device: compiled on CUDA; on the CPU the eager one (forward only, any
    float dtype; torch's CPU kernels compile for float32 and lower precisions only, after tens of seconds)."""
    return compiled_flex_attention() if query.is_cuda else flex_attention


def flex_neighborhood_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    kernel: tuple[int, ...],
    dilation: tuple[int, ...],
    causal: tuple[bool, ...],
    attend: Attend | None = None,
) -> torch.Tensor:
    """Neighborhood attention of ``(batch, *grid, heads, head_dim)`` tensors by FlexAttention (checked arguments, as
    ``neighborhood_attention`` passes them). ``attend(q, k, v, block_mask=...)`` on ``(batch, heads, tokens, dim)``
    defaults to ``default_attend``."""
    batch, *grid, heads, dim = query.shape
    needs_grad = torch.is_grad_enabled() and any(t.requires_grad for t in (query, key, value))
    if attend is None and query.device.type == "cpu" and needs_grad:
        raise NotImplementedError(
            "the flex neighborhood-attention backend has no backward on the CPU (FlexAttention in torch "
            f"{torch.__version__}): train with attention_backend=tiles (or auto) there"
        )
    plan = flex_plan(tuple(grid), kernel, dilation, causal, str(query.device), BLOCK_SIZE)
    tokens = math.prod(grid)
    q, k, v = (t.reshape(batch, tokens, heads, dim)[:, plan.order].transpose(1, 2) for t in (query, key, value))
    out = (attend or default_attend(query))(q, k, v, block_mask=plan.block_mask)
    return out.transpose(1, 2)[:, plan.inverse].reshape(batch, *grid, heads, dim)
