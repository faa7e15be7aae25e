"""Neighborhood attention (NA) with NATTEN's semantics, in pure PyTorch (trains on CPU), any number of axes.

Each query at grid position ``i = (i_1, ..., i_n)`` attends to the keys in a window of ``k_a`` positions per
axis ``a`` (NATTEN 0.21, confirmed numerically against its CPU forward):

* non-causal axis: the window ``[s, s + k)`` with ``s = clamp(i - k // 2, 0, L - k)`` is *shifted* at the
  borders, so every query keeps exactly ``k`` neighbours;
* causal axis: keys ``i - k + 1 .. i``, truncated at the start (fewer than ``k`` near ``i = 0``);
* dilation ``d``: the same rule inside each residue class ``i mod d`` (positions ``i mod d + d * j``);
* like NATTEN, ``kernel < 2`` and ``kernel * dilation > L`` are rejected.

The attention weights are ``softmax(q . k / sqrt(head_dim))`` over the window; the output is the weighted sum
of the window's values. Layout is NATTEN's "heads last": ``(batch, *grid, heads, head_dim)``.

The rule lives in `well_upao.models.neighborhood_windows`; three backends implement it (``backend=``,
`chosen_backend` picks one for ``auto``):

* ``tiles`` (this module, trains on the CPU): per axis a boolean ``L x L`` window mask; a query tile attends to
  the box of keys that covers all of its windows (the tile plus a halo), with the exact window mask, through
  ``torch.nn.functional.scaled_dot_product_attention``. All tiles have the same shape and run as one batched
  call, so time and memory grow linearly in the number of tokens; small grids use a single tile (one masked SDPA)
  unless a tile's key box is far smaller than the grid (`query_tile_sides`: a 1D row of 128 tokens over 8 frames);
* ``flex`` (`well_upao.models.neighborhood_flex`): the rule as a FlexAttention block mask over tokens ordered
  in bricks, empty blocks skipped; forward and backward on CUDA, forward only on the CPU;
* ``natten``: NATTEN's fused kernels, 1-3 axes (NATTEN has no 4-D NA, needed for 3D data with time; the other two
  have no such limit).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F

from well_upao.models.neighborhood_flex import flex_neighborhood_attention
from well_upao.models.neighborhood_windows import axis_window_mask, check_window
from well_upao.tensor_cache import cached_tensors

__all__ = [
    "BACKENDS",
    "axis_window_mask",
    "check_window",
    "chosen_backend",
    "neighborhood_attention",
    "reference_neighborhood_attention",
]

#: grids with at most this many tokens use one dense masked SDPA, unless tiles pay (``TILE_GAIN``)
DENSE_TOKEN_LIMIT = 1024
#: a grid of at most ``DENSE_TOKEN_LIMIT`` tokens is tiled where a tile's key box holds at most ``1 / TILE_GAIN`` of
#: its tokens: dense masked SDPA scores every key, so its cost grows with the grid where a tile's grows with its box
#: (reports/tile_rule.md, ``benchmarks/performance/tile_rule.py``: the tiny backbone's 1D grid of 8 x 128 tokens is
#: tiled, its forward 1.40x and forward + backward 1.66x faster on one CPU thread; its 2D and 3D grids, whose boxes
#: hold the whole grid, are not)
TILE_GAIN = 4
#: default query tile side on tiled (long) axes
DEFAULT_TILE = 8


def _as_tuple(value: int | Sequence[int] | bool | Sequence[bool], n: int, name: str) -> tuple:
    if isinstance(value, int | bool):
        return (value,) * n
    value = tuple(value)
    if len(value) != n:
        raise ValueError(f"{name} has {len(value)} entries for {n} attention axes")
    return value


def query_tile_sides(
    lengths: tuple[int, ...], kernel: tuple[int, ...], dilation: tuple[int, ...], tile: int
) -> tuple[int, ...]:
    """The query tile's side per axis: ``tile`` (at most the axis) on grids of more than ``DENSE_TOKEN_LIMIT`` tokens
    and on smaller grids whose tile key box (the tile plus its halo, ``q + (k - 1) d`` per axis) holds at most
    ``1 / TILE_GAIN`` of the tokens; the whole grid (one dense masked SDPA) otherwise."""
    tiled = tuple(min(length, tile) for length in lengths)
    tokens = math.prod(lengths)
    if tokens > DENSE_TOKEN_LIMIT:
        return tiled
    box = math.prod(min(n, q + (k - 1) * d) for n, q, k, d in zip(lengths, tiled, kernel, dilation, strict=True))
    return tiled if TILE_GAIN * box <= tokens else tuple(lengths)


@cached_tensors(maxsize=64)
def _tiling(
    lengths: tuple[int, ...], kernel: tuple[int, ...], dilation: tuple[int, ...], causal: tuple[bool, ...], tile: int
):
    """Index tensors of one tiled evaluation (cached per grid/kernel configuration).

    Returns ``(query_index (n_tiles, q_tokens), key_index (n_tiles, k_tokens), mask (n_tiles, q_tokens,
    k_tokens), select (n_tokens,))`` where ``select`` picks each query's output from the flattened tiles.
    """
    per_axis = []
    sides = query_tile_sides(lengths, kernel, dilation, tile)
    for length, k, d, c, q_len in zip(lengths, kernel, dilation, causal, sides, strict=True):
        full = axis_window_mask(length, k, d, c)
        box = min(length, q_len + (k - 1) * d)
        n_tiles = -(-length // q_len)
        q_starts = [min(t * q_len, length - q_len) for t in range(n_tiles)]
        q_idx, k_idx, masks = [], [], []
        for q0 in q_starts:
            rows = full[q0 : q0 + q_len]
            first_key = int(rows.float().argmax(dim=1).min())
            k0 = min(first_key, length - box)
            assert int(rows[:, k0 : k0 + box].sum()) == int(rows.sum()), "window outside its key box"
            q_idx.append(torch.arange(q0, q0 + q_len))
            k_idx.append(torch.arange(k0, k0 + box))
            masks.append(rows[:, k0 : k0 + box])
        position = torch.arange(length)
        tile_of = (position // q_len).clamp(max=n_tiles - 1)
        offset = position - torch.tensor(q_starts)[tile_of]
        per_axis.append((torch.stack(q_idx), torch.stack(k_idx), torch.stack(masks), tile_of, offset, q_len))

    strides = [math.prod(lengths[a + 1 :]) for a in range(len(lengths))]
    query_index = key_index = mask = None
    for a, (q_idx, k_idx, m, _, _, _) in enumerate(per_axis):
        q_lin, k_lin = q_idx * strides[a], k_idx * strides[a]
        if query_index is None:
            query_index, key_index, mask = q_lin, k_lin, m
            continue
        # combine tiles (outer product over tile ids) and tokens (outer sum of linear indices)
        query_index = (query_index[:, None, :, None] + q_lin[None, :, None, :]).flatten(0, 1).flatten(1)
        key_index = (key_index[:, None, :, None] + k_lin[None, :, None, :]).flatten(0, 1).flatten(1)
        mask = (mask[:, None, :, None, :, None] & m[None, :, None, :, None, :]).flatten(0, 1).flatten(1, 2).flatten(2)

    tile_lin = torch.zeros(lengths, dtype=torch.long)
    offset_lin = torch.zeros(lengths, dtype=torch.long)
    q_tile_tokens = 1
    for a, (q_idx, _, _, tile_of, offset, q_len) in enumerate(per_axis):
        shape = [1] * len(lengths)
        shape[a] = lengths[a]
        tile_lin = tile_lin * q_idx.shape[0] + tile_of.view(shape)
        offset_lin = offset_lin * q_len + offset.view(shape)
        q_tile_tokens *= q_len
    select = (tile_lin * q_tile_tokens + offset_lin).flatten()
    return query_index, key_index, mask, select


def _torch_neighborhood_attention(q, k, v, kernel, dilation, causal, tile):
    batch, *grid, heads, dim = q.shape
    n_tokens = math.prod(grid)
    query_index, key_index, mask, select = _tiling(tuple(grid), kernel, dilation, causal, tile)
    device = q.device
    query_index, key_index, mask, select = (t.to(device) for t in (query_index, key_index, mask, select))
    # (B, heads, N, D) token-major
    q, k, v = (t.reshape(batch, n_tokens, heads, dim).transpose(1, 2) for t in (q, k, v))
    # tiles ride in SDPA's "heads" slot and batch x heads in its batch slot: 4-D inputs keep SDPA's fused CPU
    # kernels (5-D inputs fall back to a ~3x slower path); the (tiles, q, k) mask broadcasts over the batch.
    q_tiles, k_tiles, v_tiles = (
        t[:, :, index].flatten(0, 1) for t, index in ((q, query_index), (k, key_index), (v, key_index))
    )
    out = F.scaled_dot_product_attention(q_tiles, k_tiles, v_tiles, attn_mask=mask[None])  # 4-D mask: fused path
    out = out.unflatten(0, (batch, heads)).flatten(2, 3)[:, :, select]  # (B, heads, N, D)
    return out.transpose(1, 2).reshape(batch, *grid, heads, dim)


#: the backends a caller may name; ``torch`` is the earlier name of ``tiles`` (configs that say it keep working)
BACKENDS = ("auto", "tiles", "flex", "natten", "torch")


def _natten_importable() -> bool:
    try:
        import natten  # noqa: F401  (NATTEN is optional: probed, never required)
    except ImportError:
        return False
    return True


def chosen_backend(backend: str, query: torch.Tensor, n_axes: int) -> str:
    """The backend that runs (``tiles``, ``flex`` or ``natten``) for ``backend`` on ``query``'s device.

    ``auto`` follows the measured rule of ``reports/attention_backends.md``
    (``benchmarks/performance/attention_backends.py``): on the CPU ``tiles`` (FlexAttention has no backward there, and
    its compiled forward did not beat the tiles at the tiny preset's grids); on CUDA, where the GPU rows are not
    measured yet, the earlier rule: NATTEN's fused kernels for 1-3 axes when ``natten`` is installed, else ``tiles``.
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown neighborhood-attention backend {backend!r}; choose from {', '.join(BACKENDS)}")
    if backend == "torch":
        return "tiles"
    if backend != "auto":
        return backend
    if query.is_cuda and n_axes <= 3 and _natten_importable():
        return "natten"
    return "tiles"


def neighborhood_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    kernel_size: int | Sequence[int],
    dilation: int | Sequence[int] = 1,
    is_causal: bool | Sequence[bool] = False,
    *,
    backend: str = "auto",
    tile: int = DEFAULT_TILE,
) -> torch.Tensor:
    """Neighborhood attention over the grid axes of ``(batch, *grid, heads, head_dim)`` tensors.

    Args:
        kernel_size, dilation, is_causal: one value, or one per grid axis.
        backend: ``"auto"`` (`chosen_backend`), ``"tiles"`` (query tiles through masked SDPA, this module),
            ``"flex"`` (FlexAttention with a block mask, `well_upao.models.neighborhood_flex`; no backward on the
            CPU) or ``"natten"`` (NATTEN's kernels, 1-3 axes; ``natten`` installed).
        tile: query tile side on the axes of grids that are tiled (``tiles``, `query_tile_sides`).
    """
    if query.shape != key.shape or key.shape[:-1] != value.shape[:-1]:
        raise ValueError(f"query {tuple(query.shape)}, key {tuple(key.shape)}, value {tuple(value.shape)} differ")
    grid = tuple(query.shape[1:-2])
    n_axes = len(grid)
    if n_axes < 1:
        raise ValueError("expected (batch, *grid, heads, head_dim) with at least one grid axis")
    kernel = tuple(int(k) for k in _as_tuple(kernel_size, n_axes, "kernel_size"))
    dilation = tuple(int(d) for d in _as_tuple(dilation, n_axes, "dilation"))
    causal = tuple(bool(c) for c in _as_tuple(is_causal, n_axes, "is_causal"))
    check_window(grid, kernel, dilation)
    chosen = chosen_backend(backend, query, n_axes)
    if chosen == "natten":
        if n_axes > 3:
            raise ValueError(f"NATTEN has no {n_axes}-axis neighborhood attention; use the tiles or flex backend")
        from natten import functional as natten_functional  # optional NATTEN, asked for by name or probed

        function = {1: natten_functional.na1d, 2: natten_functional.na2d, 3: natten_functional.na3d}[n_axes]
        return function(query, key, value, kernel_size=kernel, dilation=dilation, is_causal=causal)
    if chosen == "flex":
        return flex_neighborhood_attention(query, key, value, kernel, dilation, causal)
    return _torch_neighborhood_attention(query, key, value, kernel, dilation, causal, tile)


def reference_neighborhood_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    kernel_size: Sequence[int],
    dilation: Sequence[int],
    is_causal: Sequence[bool],
) -> torch.Tensor:
    """Slow per-query gather implementation, written from NATTEN's "centre clamp" formulation (for tests).

    Non-causal: centre ``c = clamp(j, k // 2, L_r - 1 - (k // 2 + k % 2 - 1))`` within the residue class,
    window ``c - k // 2 .. c - k // 2 + k - 1``. Causal: ``j - k + 1 .. j`` truncated at 0.
    """
    _, *grid, _, dim = query.shape
    neighbours_per_axis = []
    for length, k, d, c in zip(grid, kernel_size, dilation, is_causal, strict=True):
        lists = []
        for i in range(length):
            r, j = i % d, i // d
            class_length = len(range(r, length, d))
            if c:
                js = range(max(0, j - k + 1), j + 1)
            else:
                centre = min(max(j, k // 2), class_length - 1 - (k // 2 + k % 2 - 1))
                js = range(centre - k // 2, centre - k // 2 + k)
            lists.append([r + d * jj for jj in js])
        neighbours_per_axis.append(lists)
    out = torch.empty_like(query)
    scale = dim**-0.5
    for position in _product([list(range(n)) for n in grid]):
        windows = [neighbours_per_axis[a][p] for a, p in enumerate(position)]
        keys = torch.stack([key[(slice(None), *w)] for w in _product(windows)], dim=1)  # (B, K, heads, D)
        values = torch.stack([value[(slice(None), *w)] for w in _product(windows)], dim=1)
        q = query[(slice(None), *position)]  # (B, heads, D)
        weights = torch.softmax(torch.einsum("bhd,bkhd->bhk", q, keys) * scale, dim=-1)
        out[(slice(None), *position)] = torch.einsum("bhk,bkhd->bhd", weights, values)
    return out


def _product(lists):
    if not lists:
        yield ()
        return
    for head in lists[0]:
        for tail in _product(lists[1:]):
            yield (head, *tail)
