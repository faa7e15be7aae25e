"""Newton-Schulz (NSLoRA's 5 steps) vs the exact SVD polar factor ``U V^T`` (``torch.linalg.svd``), measured in
one run on this machine (the paper, appendix "Newton-Schulz vs SVD", reports 1.38x end to end on an A100).

1. One NSLoRA layer forward (orthogonalise A and B, then ``W0 x + s (x A'^T) B'^T``) at the paper's module
   shapes 768->2304 (qkv), 768->768 (proj), 768->3072 (gate/up), 3072->768 (down), rank 16, batch 8 x 1024
   tokens; and the orthogonalisation alone (what differs between the two paths).
2. A full forward of the tiny preset with every adapter in NS mode, NS vs SVD.

    python benchmarks/ns_vs_svd.py [--threads 2] [--repeats 5]
"""

from __future__ import annotations

import argparse
import contextlib

import torch
from timing import best_time
from torch import nn

import well_upao.models.lora as lora
from well_upao.models.assembly import assemble
from well_upao.models.lora import LoRALinear, set_ns_active

SHAPES = [
    ("qkv", 768, 2304),
    ("proj", 768, 768),
    ("gate_proj", 768, 3072),
    ("up_proj", 768, 3072),
    ("down_proj", 3072, 768),
]


def svd_polar(matrix: torch.Tensor, steps: int = 5, coefficients=None, eps: float = 1e-7, dtype=torch.float32):
    """Exact polar factor ``U V^T`` of ``matrix`` (the reference NSLoRA approximates)."""
    u, _, vh = torch.linalg.svd(matrix.to(dtype), full_matrices=False)
    return (u @ vh).to(matrix.dtype)


@contextlib.contextmanager
def orthogonalizer(function):
    original = lora.newton_schulz
    lora.newton_schulz = function
    try:
        yield
    finally:
        lora.newton_schulz = original


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=1024)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    print(f"torch {torch.__version__}, {args.threads} threads, rank 16, batch 8 x {args.tokens} tokens, fp32\n")
    print(
        "| module | in -> out | NS orthogonalise ms | SVD orthogonalise ms | speed-up "
        "| NS layer fwd ms | SVD layer fwd ms | speed-up |"
    )
    print("|---|---|---|---|---|---|---|---|")
    total_ns = total_svd = 0.0
    for name, d_in, d_out in SHAPES:
        layer = LoRALinear(nn.Linear(d_in, d_out), rank=16)
        with torch.no_grad():
            layer.lora_B.normal_(0, 0.02)
        set_ns_active(layer, True)
        x = torch.randn(8, args.tokens, d_in)
        ortho = {}
        forward = {}
        for label, function in (("ns", lora.newton_schulz), ("svd", svd_polar)):
            ortho[label] = best_time(lambda f=function, m=layer: (f(m.lora_A), f(m.lora_B)), args.repeats)
            with orthogonalizer(function), torch.no_grad():
                forward[label] = best_time(lambda m=layer, inputs=x: m(inputs), args.repeats)
        total_ns += forward["ns"]
        total_svd += forward["svd"]
        print(
            f"| {name} | {d_in} -> {d_out} | {ortho['ns'] * 1e3:.3f} | {ortho['svd'] * 1e3:.3f} "
            f"| {ortho['svd'] / ortho['ns']:.2f}x | {forward['ns'] * 1e3:.1f} | {forward['svd'] * 1e3:.1f} "
            f"| {forward['svd'] / forward['ns']:.2f}x |"
        )
    per_block_ns, per_block_svd = total_ns, total_svd
    print(
        f"\n12 blocks x the 5 module types (the paper's sum): NS {12 * per_block_ns * 1e3:.0f} ms, "
        f"SVD {12 * per_block_svd * 1e3:.0f} ms, speed-up {per_block_svd / per_block_ns:.2f}x"
    )

    model = assemble(dict(preset="tiny", channel_slots=[0, 1], dims=(2,), adapter={"kind": "nslora"})).eval()
    with torch.no_grad():
        for layer in lora.adapter_layers(model).values():
            layer.lora_B.normal_(0, 0.02)
    set_ns_active(model, True)
    frames = torch.zeros(2, 8, 64, 64, 18)
    frames[..., :2] = torch.randn(2, 8, 64, 64, 2)
    timings = {}
    for label, function in (("NS", lora.newton_schulz), ("SVD", svd_polar)):
        with orthogonalizer(function), torch.no_grad():
            timings[label] = best_time(lambda: model.forward_sequence(frames), args.repeats)
    print(
        f"\ntiny preset, full forward (2 x 8 frames x 64^2, {len(lora.adapter_layers(model))} adapters in NS mode): "
        f"NS {timings['NS'] * 1e3:.0f} ms, SVD {timings['SVD'] * 1e3:.0f} ms, "
        f"speed-up {timings['SVD'] / timings['NS']:.2f}x"
    )


if __name__ == "__main__":
    main()
