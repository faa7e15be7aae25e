"""Neighborhood attention speed on this machine, measured in one run (reports/attention.md).

1. Forward time at equal semantics (causal temporal kernel 5, spatial 5x5 on a (t, x, y) token grid):
   ours (pure PyTorch, tiled masked SDPA) vs one dense SDPA with the full neighbourhood mask vs NATTEN's CPU
   forward (flex backend), plus unmasked full attention as the dense lower bound (different semantics).
2. Forward + backward time of ours at 2k, 8k and 32k tokens; goal: time grows no faster than 1.3x the token
   ratio.
3. Forward + backward throughput of the tiny preset on a 64x64 field with 8 history frames.

    python benchmarks/performance/attention_scaling.py [--threads 2]
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import torch
import torch.nn.functional as F

from well_upao.models.na_transformer import NATransformer
from well_upao.models.neighborhood_attention import axis_window_mask, neighborhood_attention

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.timing import best_time

KERNEL, CAUSAL = (5, 5, 5), (True, False, False)


def dense_mask(grid) -> torch.Tensor:
    masks = [axis_window_mask(n, k, 1, c) for n, k, c in zip(grid, KERNEL, CAUSAL, strict=True)]
    full = masks[0][:, None, None, :, None, None] & masks[1][None, :, None, None, :, None]
    full = full & masks[2][None, None, :, None, None, :]
    n = grid[0] * grid[1] * grid[2]
    return full.reshape(n, n)


def forward_comparison(grid, batch=2, heads=4, dim=32) -> dict[str, float]:
    q, k, v = (torch.randn(batch, *grid, heads, dim) for _ in range(3))
    flat = [t.reshape(batch, -1, heads, dim).transpose(1, 2) for t in (q, k, v)]
    mask = dense_mask(grid)
    results = {
        "ours": best_time(lambda: neighborhood_attention(q, k, v, KERNEL, 1, CAUSAL, backend="torch")),
        "dense masked SDPA": best_time(lambda: F.scaled_dot_product_attention(*flat, attn_mask=mask)),
        "full attention (no mask)": best_time(lambda: F.scaled_dot_product_attention(*flat)),
    }
    try:
        from natten.functional import na3d

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results["natten CPU forward"] = best_time(
                lambda: na3d(q, k, v, kernel_size=KERNEL, is_causal=CAUSAL), repeats=1
            )
    except ImportError:
        results["natten CPU forward"] = float("nan")
    return results


def forward_backward(grid, batch=2, heads=4, dim=32) -> float:
    q, k, v = (torch.randn(batch, *grid, heads, dim, requires_grad=True) for _ in range(3))

    def step():
        neighborhood_attention(q, k, v, KERNEL, 1, CAUSAL, backend="torch").sum().backward()

    return best_time(step)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    print(
        f"torch {torch.__version__}, {args.threads} threads; batch 2, 4 heads, head dim 32, "
        "kernel (5, 5, 5) causal in t\n"
    )
    print("## Forward at equal semantics (ms)\n")
    print("| token grid (t, x, y) | tokens | ours | dense masked SDPA | NATTEN CPU | full attention (lower bound) |")
    print("|---|---|---|---|---|---|")
    for grid in [(8, 16, 16), (8, 32, 32)]:
        r = forward_comparison(grid)
        print(
            f"| {grid} | {grid[0] * grid[1] * grid[2]} | {r['ours'] * 1e3:.1f} | {r['dense masked SDPA'] * 1e3:.1f} "
            f"| {r['natten CPU forward'] * 1e3:.1f} | {r['full attention (no mask)'] * 1e3:.1f} |"
        )

    print("\n## Forward + backward of ours vs token count\n")
    print("| token grid | tokens | ms | time ratio | token ratio | time ratio / token ratio (goal <= 1.3) |")
    print("|---|---|---|---|---|---|")
    previous = None
    for grid in [(8, 16, 16), (8, 32, 32), (8, 64, 64)]:
        tokens = grid[0] * grid[1] * grid[2]
        seconds = forward_backward(grid)
        if previous is None:
            print(f"| {grid} | {tokens} | {seconds * 1e3:.0f} | | | |")
        else:
            time_ratio, token_ratio = seconds / previous[1], tokens / previous[0]
            print(
                f"| {grid} | {tokens} | {seconds * 1e3:.0f} | {time_ratio:.2f} | {token_ratio:.0f} "
                f"| {time_ratio / token_ratio:.2f} |"
            )
        previous = (tokens, seconds)

    print("\n## Tiny preset, forward + backward\n")
    model = NATransformer(preset="tiny", channel_slots=[0, 1], dims=(2,))
    frames = torch.zeros(4, 8, 64, 64, 18)
    frames[..., :2] = torch.randn(4, 8, 64, 64, 2)

    def train_step():
        model.forward_sequence(frames).square().mean().backward()

    seconds = best_time(train_step)
    print(
        f"tiny preset ({sum(p.numel() for p in model.parameters()) / 1e6:.2f}M parameters), batch 4 x 8 frames x "
        f"64x64 x 18 slots: {seconds * 1e3:.0f} ms per step, {4 / seconds:.1f} samples/s"
    )


if __name__ == "__main__":
    main()
