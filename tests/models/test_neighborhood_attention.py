"""Neighborhood attention against NATTEN's CPU forward (skipped without natten), and, without natten too, against a
slow gather reference (four axes, gradients) and hand-written windows."""

from __future__ import annotations

import warnings

import pytest
import torch

import well_upao.models.neighborhood_attention as na_module
from well_upao.models.neighborhood_attention import (
    axis_window_mask,
    neighborhood_attention,
    reference_neighborhood_attention,
)


def qkv(*shape, seed=0, requires_grad=False):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(*shape, generator=generator, requires_grad=requires_grad) for _ in range(3)]


def assert_matches_with_gradients(ours, reference, inputs, grad_atol: float) -> None:
    """``ours`` equals ``reference``, and so do the gradients of a random weighting of each by ``inputs``."""
    torch.testing.assert_close(ours, reference, atol=2e-6, rtol=1e-5)
    weights = torch.randn_like(ours)
    grads = torch.autograd.grad((ours * weights).sum(), inputs)
    reference_grads = torch.autograd.grad((reference * weights).sum(), inputs)
    for got, want in zip(grads, reference_grads, strict=True):
        torch.testing.assert_close(got, want, atol=grad_atol, rtol=1e-4)


def natten(q, k, v, kernel, dilation, causal):
    """NATTEN's CPU forward (the tests that compare with it skip without natten; the others never need it)."""
    natten_functional = pytest.importorskip("natten.functional")
    function = {1: natten_functional.na1d, 2: natten_functional.na2d, 3: natten_functional.na3d}[q.ndim - 3]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function(q, k, v, kernel_size=kernel, dilation=dilation, is_causal=causal)


CASES = [
    ((11,), (3,), (1,), (False,)),
    ((11,), (4,), (2,), (True,)),
    ((7, 9), (3, 5), (1, 1), (True, False)),
    ((8, 9), (4, 3), (2, 1), (False, True)),
    ((6, 10), (5, 9), (1, 1), (True, False)),
    ((5, 6, 7), (3, 3, 5), (1, 2, 1), (True, False, False)),
    ((4, 5, 9), (2, 5, 9), (1, 1, 1), (True, False, False)),
]


@pytest.mark.parametrize("grid, kernel, dilation, causal", CASES)
def test_matches_natten_cpu_forward(grid, kernel, dilation, causal):
    q, k, v = qkv(2, *grid, 2, 8)
    ours = neighborhood_attention(q, k, v, kernel, dilation, causal, backend="torch")
    torch.testing.assert_close(ours, natten(q, k, v, kernel, dilation, causal), atol=2e-6, rtol=1e-5)


@pytest.mark.parametrize(
    "grid, kernel, dilation, causal",
    [
        ((6, 12, 14), (5, 5, 9), (1, 1, 1), (True, False, False)),
        ((4, 13, 11), (3, 5, 3), (1, 2, 3), (True, False, False)),
    ],
)
def test_tiled_path_matches_natten(monkeypatch, grid, kernel, dilation, causal):
    monkeypatch.setattr(na_module, "DENSE_TOKEN_LIMIT", 16)  # force query tiles with halos
    na_module._tiling.cache_clear()
    q, k, v = qkv(1, *grid, 2, 8, seed=3)
    ours = neighborhood_attention(q, k, v, kernel, dilation, causal, backend="torch", tile=4)
    na_module._tiling.cache_clear()
    torch.testing.assert_close(ours, natten(q, k, v, kernel, dilation, causal), atol=2e-6, rtol=1e-5)


@pytest.mark.parametrize("tiled", [False, True])
def test_four_axes_and_gradients_match_the_gather_reference(monkeypatch, tiled):
    """(t, x, y, z) windows, which NATTEN lacks; gradients of q, k, v for every path."""
    if tiled:
        monkeypatch.setattr(na_module, "DENSE_TOKEN_LIMIT", 16)
    na_module._tiling.cache_clear()
    grid, kernel, dilation, causal = (3, 5, 4, 6), (2, 3, 3, 5), (1, 1, 1, 1), (True, False, False, False)
    q, k, v = qkv(1, *grid, 2, 4, seed=5, requires_grad=True)
    ours = neighborhood_attention(q, k, v, kernel, dilation, causal, backend="torch", tile=2)
    reference = reference_neighborhood_attention(q, k, v, kernel, dilation, causal)
    assert_matches_with_gradients(ours, reference, (q, k, v), grad_atol=5e-6)
    na_module._tiling.cache_clear()


def test_gradients_2d_dilated_match_reference():
    grid, kernel, dilation, causal = (5, 8), (3, 3), (1, 2), (True, False)
    q, k, v = qkv(2, *grid, 3, 4, seed=9, requires_grad=True)
    ours = neighborhood_attention(q, k, v, kernel, dilation, causal, backend="torch")
    reference = reference_neighborhood_attention(q, k, v, kernel, dilation, causal)
    for got, expected in zip(
        torch.autograd.grad(ours.square().sum(), (q, k, v)),
        torch.autograd.grad(reference.square().sum(), (q, k, v)),
        strict=True,
    ):
        torch.testing.assert_close(got, expected, atol=5e-6, rtol=1e-4)


def windows(mask):
    return [torch.nonzero(row).flatten().tolist() for row in mask]


def test_hand_written_windows():
    # non-causal, kernel 3 on 6 points: shifted at the borders so every query keeps 3 neighbours
    assert windows(axis_window_mask(6, 3, 1, False)) == [
        [0, 1, 2],
        [0, 1, 2],
        [1, 2, 3],
        [2, 3, 4],
        [3, 4, 5],
        [3, 4, 5],
    ]
    # even kernel 4: window i-2 .. i+1, clamped
    assert windows(axis_window_mask(6, 4, 1, False))[2] == [0, 1, 2, 3]
    assert windows(axis_window_mask(6, 4, 1, False))[5] == [2, 3, 4, 5]
    # causal, kernel 3: truncated at the start
    assert windows(axis_window_mask(5, 3, 1, True)) == [[0], [0, 1], [0, 1, 2], [1, 2, 3], [2, 3, 4]]
    # dilation 2 within residue classes {0,2,4,6} and {1,3,5,7}
    assert windows(axis_window_mask(8, 3, 2, False))[0] == [0, 2, 4]
    assert windows(axis_window_mask(8, 3, 2, False))[7] == [3, 5, 7]


def test_uniform_attention_averages_the_window():
    """With zero queries every key in the window gets the same weight: the output is the window mean."""
    values = torch.arange(6.0).view(1, 6, 1, 1)
    zeros = torch.zeros(1, 6, 1, 1)
    out = neighborhood_attention(zeros, zeros, values, (3,), 1, False, backend="torch").flatten()
    torch.testing.assert_close(out, torch.tensor([1.0, 1.0, 2.0, 3.0, 4.0, 4.0]))
    causal = neighborhood_attention(zeros, zeros, values, (3,), 1, True, backend="torch").flatten()
    torch.testing.assert_close(causal, torch.tensor([0.0, 0.5, 1.0, 2.0, 3.0, 4.0]))


@pytest.mark.parametrize(
    "grid, kernel, dilation, message",
    [((6,), (1,), (1,), "below 2"), ((6,), (7,), (1,), "exceeds"), ((6, 6), (3, 4), (1, 2), "exceeds")],
)
def test_rejects_what_natten_rejects(grid, kernel, dilation, message):
    q, k, v = qkv(1, *grid, 1, 4)
    with pytest.raises(ValueError, match=message):
        neighborhood_attention(q, k, v, kernel, dilation, False)


def test_small_grids_are_tiled_where_a_tiles_key_box_is_a_small_part_of_the_grid():
    """Under ``DENSE_TOKEN_LIMIT`` tokens, one dense SDPA unless a tile's key box holds at most ``1 / TILE_GAIN`` of
    the tokens: a 1D row of 128 tokens over 8 frames (box 8 x 12 = 96 of 1,024) is tiled, 8 x 8 x 8 tokens (box the
    whole grid) and 8 x 4^3 are not; over the limit every grid is tiled."""
    sides = na_module.query_tile_sides
    assert sides((8, 128), (5, 5), (1, 1), 8) == (8, 8)
    assert sides((8, 8, 8), (5, 5, 5), (1, 1, 1), 8) == (8, 8, 8)
    assert sides((8, 4, 4, 4), (5, 3, 3, 3), (1, 1, 1, 1), 8) == (8, 4, 4, 4)
    assert sides((8, 16, 16), (5, 5, 5), (1, 1, 1), 8) == (8, 8, 8)  # 2,048 tokens: over the limit
    assert sides((8, 32), (5, 5), (1, 1), 8) == (8, 32)  # box 96 of 256 tokens: dense


def test_a_small_grid_tiled_by_its_key_box_matches_the_gather_reference():
    """The 1D grid the rule tiles without any limit patched: values and gradients as the gather reference's."""
    na_module._tiling.cache_clear()
    grid, kernel, dilation, causal = (8, 128), (5, 5), (1, 1), (True, False)
    assert na_module.query_tile_sides(grid, kernel, dilation, 8) != grid
    q, k, v = qkv(2, *grid, 2, 4, seed=7, requires_grad=True)
    ours = neighborhood_attention(q, k, v, kernel, dilation, causal, backend="tiles")
    reference = reference_neighborhood_attention(q, k, v, kernel, dilation, causal)
    assert_matches_with_gradients(ours, reference, (q, k, v), grad_atol=2e-5)
