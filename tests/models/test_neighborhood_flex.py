"""The FlexAttention backend of neighborhood attention against the slow gather reference, in float64 on the CPU:
forward through the product's own path (eager FlexAttention), and gradients of q, k and v through FlexAttention's
differentiable operator (its public CPU entry refuses gradients); the block mask's brick order against torch's own
count of the blocks it keeps; an off-by-one window as the negative control."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
from torch.nn.attention.flex_attention import create_block_mask

import well_upao.models.neighborhood_flex as flex_module
from well_upao.models.na_transformer import NATransformer
from well_upao.models.neighborhood_attention import (
    chosen_backend,
    neighborhood_attention,
    reference_neighborhood_attention,
)
from well_upao.models.neighborhood_flex import brick_order, flex_neighborhood_attention, flex_plan, kept_entries
from well_upao.models.neighborhood_windows import axis_window_mask

#: (grid, kernel, dilation, causal): 1-3 spatial axes with time first (causal), borders (kernels near the axis
#: length), dilation, non-square grids
CASES = [
    ((12,), (4,), (2,), (False,)),
    ((9,), (3,), (1,), (True,)),
    ((6, 7), (3, 5), (1, 1), (True, False)),
    ((5, 8), (2, 3), (1, 2), (True, False)),
    ((4, 6, 5), (3, 5, 3), (1, 1, 1), (True, False, False)),
    ((3, 4, 4, 4), (2, 3, 2, 3), (1, 1, 2, 1), (True, False, False, False)),
]


def qkv(grid, seed=0, requires_grad=False):
    generator = torch.Generator().manual_seed(seed)
    return [
        torch.randn(2, *grid, 2, 4, generator=generator, dtype=torch.float64, requires_grad=requires_grad)
        for _ in range(3)
    ]


def differentiable_flex(q, k, v, block_mask):
    """FlexAttention's operator itself (the eager path under the public ``flex_attention``), which has a backward on
    the CPU: the public entry refuses inputs that require a gradient there."""
    from torch._higher_order_ops.flex_attention import flex_attention as flex_operator
    from torch.nn.attention.flex_attention import _apply_kernel_options

    options = _apply_kernel_options(q, k, v, False, None, None)
    out, *_ = flex_operator(q, k, v, lambda s, b, h, qi, ki: s, block_mask.as_tuple(), q.shape[-1] ** -0.5, options)
    return out


def eager(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "flex_attention called without torch.compile()": expected on the CPU
        return neighborhood_attention(*args, **kwargs)


#: grids that small blocks tile with bricks other than row-major lines (the default block of 128 tokens holds whole
#: rows of the small grids above, where brick order is row-major order)
BRICKED = [
    ((4, 8, 8), (3, 5, 3), (1, 1, 2), (True, False, False)),
    ((2, 8, 4, 4), (2, 3, 2, 2), (1, 1, 1, 1), (True, False, False, False)),
]


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 16 tokens: the plans of :data:`BRICKED` order their tokens in bricks."""
    monkeypatch.setattr(flex_module, "BLOCK_SIZE", 16)
    yield
    flex_plan.cache_clear()


@pytest.mark.parametrize("grid, kernel, dilation, causal", BRICKED)
def test_bricks_reorder_the_tokens_and_change_nothing_else(small_blocks, grid, kernel, dilation, causal):
    q, k, v = qkv(grid, seed=4, requires_grad=True)
    plan = flex_plan(grid, kernel, dilation, causal, "cpu", 16)
    assert not torch.equal(plan.order, torch.arange(math.prod(grid)))  # not row-major
    out = flex_neighborhood_attention(q, k, v, kernel, dilation, causal, attend=differentiable_flex)
    expected = reference_neighborhood_attention(q, k, v, kernel, dilation, causal)
    torch.testing.assert_close(out, expected, atol=1e-12, rtol=1e-12)
    ours, theirs = (torch.autograd.grad(o.pow(2).sum(), (q, k, v)) for o in (out, expected))
    for mine, reference in zip(ours, theirs, strict=True):
        torch.testing.assert_close(mine, reference, atol=1e-12, rtol=1e-10)


@pytest.mark.parametrize("grid, kernel, dilation, causal", CASES)
def test_the_flex_backend_matches_the_reference_forward(grid, kernel, dilation, causal):
    q, k, v = qkv(grid)
    expected = reference_neighborhood_attention(q, k, v, kernel, dilation, causal)
    torch.testing.assert_close(
        eager(q, k, v, kernel, dilation, causal, backend="flex"), expected, atol=1e-12, rtol=1e-12
    )


@pytest.mark.parametrize("grid, kernel, dilation, causal", [*CASES[::2], CASES[-1]])
def test_the_flex_backend_has_the_references_gradients(grid, kernel, dilation, causal):
    q, k, v = qkv(grid, seed=1, requires_grad=True)
    weights = torch.randn(2, *grid, 2, 4, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    out = flex_neighborhood_attention(q, k, v, kernel, dilation, causal, attend=differentiable_flex)
    ours = torch.autograd.grad((out * weights).sum(), (q, k, v))
    expected = reference_neighborhood_attention(q, k, v, kernel, dilation, causal)
    theirs = torch.autograd.grad((expected * weights).sum(), (q, k, v))
    for mine, reference in zip(ours, theirs, strict=True):
        torch.testing.assert_close(mine, reference, atol=1e-12, rtol=1e-10)


def test_a_window_off_by_one_is_caught(monkeypatch):
    """Negative control: the same comparison fails when the non-causal window is shifted by one position."""
    grid, kernel, dilation, causal = (4, 6, 5), (3, 3, 3), (1, 1, 1), (True, False, False)
    q, k, v = qkv(grid)
    expected = reference_neighborhood_attention(q, k, v, kernel, dilation, causal)

    def shifted(length, kernel, dilation, causal):
        mask = axis_window_mask(length, kernel, dilation, causal)
        return mask if causal else torch.roll(mask, 1, dims=1)

    monkeypatch.setattr(flex_module, "axis_window_mask", shifted)
    flex_plan.cache_clear()
    try:
        wrong = eager(q, k, v, kernel, dilation, causal, backend="flex")
    finally:
        flex_plan.cache_clear()
    assert (wrong - expected).abs().max() > 1e-2


def test_the_brick_order_is_a_permutation_of_whole_bricks():
    order = brick_order((4, 6), (2, 3))
    assert sorted(order.tolist()) == list(range(24))
    first_brick = sorted(order[:6].tolist())  # rows 0-1, columns 0-2 of the 4 x 6 grid, row-major indices
    assert first_brick == [0, 1, 2, 6, 7, 8]


@pytest.mark.parametrize("grid, brick", [((8, 16, 16), (2, 8, 8)), ((8, 16, 16), (2, 4, 16)), ((16, 16), (8, 16))])
def test_the_kept_entries_are_what_torchs_block_mask_keeps(grid, brick):
    """The separable count that chooses the brick against torch's own block mask of the same token order."""
    kernel, causal = tuple(min(5, n) for n in grid), (True,) + (False,) * (len(grid) - 1)
    masks = [axis_window_mask(n, kk, 1, c) for n, kk, c in zip(grid, kernel, causal, strict=True)]
    coordinates = torch.stack(torch.unravel_index(brick_order(grid, brick), grid), dim=-1)

    def allowed(b, h, qi, ki):
        result = masks[0][coordinates[qi, 0], coordinates[ki, 0]]
        for a in range(1, len(grid)):
            result = result & masks[a][coordinates[qi, a], coordinates[ki, a]]
        return result

    tokens, block = math.prod(grid), math.prod(brick)
    block_mask = create_block_mask(allowed, None, None, tokens, tokens, device="cpu", BLOCK_SIZE=block)
    kept_blocks = int(block_mask.kv_num_blocks.sum() + block_mask.full_kv_num_blocks.sum())
    assert kept_entries(grid, brick, masks) == kept_blocks * block * block


def test_the_plan_keeps_fewer_blocks_than_row_major_order_on_the_papers_token_grid():
    """8 x 16 x 16 tokens, kernel 5, causal in time: the brick chosen keeps at most the blocks of row-major order
    (each block one line of 128 tokens there)."""
    grid, kernel, causal = (8, 16, 16), (5, 5, 5), (True, False, False)
    plan = flex_plan(grid, kernel, (1, 1, 1), causal, "cpu")
    masks = [axis_window_mask(n, kk, 1, c) for n, kk, c in zip(grid, kernel, causal, strict=True)]
    assert kept_entries(grid, plan.brick, masks) <= kept_entries(grid, (1, 8, 16), masks)
    assert plan.block_mask.sparsity() > 50


def test_the_flex_backend_refuses_a_cpu_backward_with_what_to_use():
    q, k, v = qkv((4, 5), requires_grad=True)
    with pytest.raises(NotImplementedError, match="attention_backend=tiles"):
        neighborhood_attention(q, k, v, (2, 3), 1, (True, False), backend="flex")


def test_auto_trains_with_tiles_on_the_cpu_and_unknown_names_are_refused():
    q = torch.zeros(1, 4, 4, 1, 2)
    assert chosen_backend("auto", q, 2) == "tiles"
    assert chosen_backend("torch", q, 2) == "tiles"  # the earlier name
    assert chosen_backend("flex", q, 2) == "flex"
    with pytest.raises(ValueError, match="tiles, flex, natten"):
        chosen_backend("fast", q, 2)
    with pytest.raises(ValueError, match="unknown attention backend"):
        NATransformer(preset="tiny", channel_slots=[0], dims=(2,), attention_backend="fast")


def test_the_model_predicts_the_same_through_either_backend():
    """The tiny preset on a 64^2 field at stride 1 (8 x 8 x 8 tokens): the backend changes how, not what."""
    torch.manual_seed(0)
    model = NATransformer(preset="tiny", channel_slots=[0, 15], dims=(2,)).eval()
    frames = torch.zeros(1, 8, 64, 64, 18)
    frames[..., [0, 15]] = torch.randn(1, 8, 64, 64, 2, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        tiles = model.forward_sequence(frames)
        for block in model.blocks:
            for attention in block.attention.values():
                attention.backend = "flex"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            flex = model.forward_sequence(frames)
    torch.testing.assert_close(flex, tiles, atol=1e-5, rtol=1e-5)


def test_a_flex_model_trains_on_the_cpu_through_the_tiles(monkeypatch):
    """A model configured with ``flex`` (trained on a GPU, say) that needs a backward on the CPU runs the tiles there:
    the same attention, and a gradient."""
    import well_upao.models.layers as layers

    asked: list[str] = []
    through = layers.neighborhood_attention

    def recording(*args, backend, **kwargs):
        asked.append(backend)
        return through(*args, backend=backend, **kwargs)

    monkeypatch.setattr(layers, "neighborhood_attention", recording)
    torch.manual_seed(0)
    model = NATransformer(preset="tiny", channel_slots=[0], dims=(2,), attention_backend="flex")
    frames = torch.zeros(1, 8, 32, 32, 18)
    frames[..., 0] = torch.randn(1, 8, 32, 32, generator=torch.Generator().manual_seed(4))
    model.forward_sequence(frames).square().mean().backward()
    grads = [p.grad for p in model.parameters() if p.requires_grad and p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)
    assert asked and set(asked) == {"tiles"}
