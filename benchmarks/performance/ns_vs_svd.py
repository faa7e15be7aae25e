"""Newton-Schulz (NSLoRA's 5 steps) vs the exact SVD polar factor ``U V^T`` (``torch.linalg.svd``), measured in
one run on this machine (the paper, appendix "Newton-Schulz vs SVD", reports 1.38x end to end on an A100).

1. One NSLoRA layer forward (orthogonalise A and B, then ``W0 x + s (x A'^T) B'^T``) at the paper's module
   shapes 768->2304 (qkv), 768->768 (proj), 768->3072 (gate/up), 3072->768 (down), rank 16, batch 8 x 1024
   tokens; and the orthogonalisation alone (what differs between the two paths).
2. A full forward of the tiny preset with every adapter in NS mode, NS vs SVD.

    python benchmarks/performance/ns_vs_svd.py [--threads 2] [--repeats 5] [--device cuda]

On a GPU (``--device cuda``) every clock reading waits for the device (``torch.cuda.synchronize``).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

import torch
from torch import nn

import well_upao.models.lora as lora
from well_upao.models.assembly import assemble
from well_upao.models.lora import LoRALinear, set_ns_active

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.timing import best_time

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


def synchronizer(device: torch.device):
    """What waits for ``device`` before a clock reading (``None`` on the CPU)."""
    return torch.cuda.synchronize if device.type == "cuda" else None


def layer_timings(device: torch.device, repeats: int = 5, tokens: int = 1024) -> list[dict]:
    """Per module shape of the paper: seconds of NS and SVD orthogonalisation of A and B, and of the NSLoRA layer
    forward with each, on ``device`` (rank 16, batch 8 x ``tokens``, fp32)."""
    wait, rows = synchronizer(device), []
    for name, d_in, d_out in SHAPES:
        layer = LoRALinear(nn.Linear(d_in, d_out), rank=16).to(device)
        with torch.no_grad():
            layer.lora_B.normal_(0, 0.02)
        set_ns_active(layer, True)
        x = torch.randn(8, tokens, d_in, device=device)
        row = {"module": name, "d_in": d_in, "d_out": d_out}
        for label, function in (("ns", lora.newton_schulz), ("svd", svd_polar)):
            row[f"{label}_orthogonalise_s"] = best_time(
                lambda f=function, m=layer: (f(m.lora_A), f(m.lora_B)), repeats, wait
            )
            with orthogonalizer(function), torch.no_grad():
                row[f"{label}_forward_s"] = best_time(lambda m=layer, inputs=x: m(inputs), repeats, wait)
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=1024)
    parser.add_argument("--device", default="cpu", help="cpu or cuda (timings wait for the device)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = torch.device(args.device)

    print(
        f"torch {torch.__version__}, {device}, {args.threads} threads, rank 16, batch 8 x {args.tokens} tokens, fp32\n"
    )
    print(
        "| module | in -> out | NS orthogonalise ms | SVD orthogonalise ms | speed-up "
        "| NS layer fwd ms | SVD layer fwd ms | speed-up |"
    )
    print("|---|---|---|---|---|---|---|---|")
    total_ns = total_svd = 0.0
    for row in layer_timings(device, args.repeats, args.tokens):
        name, d_in, d_out = row["module"], row["d_in"], row["d_out"]
        ortho = {k: row[f"{k}_orthogonalise_s"] for k in ("ns", "svd")}
        forward = {k: row[f"{k}_forward_s"] for k in ("ns", "svd")}
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
    model = model.to(device)
    frames = torch.zeros(2, 8, 64, 64, 18, device=device)
    frames[..., :2] = torch.randn(2, 8, 64, 64, 2, device=device)
    timings = {}
    for label, function in (("NS", lora.newton_schulz), ("SVD", svd_polar)):
        with orthogonalizer(function), torch.no_grad():
            timings[label] = best_time(lambda: model.forward_sequence(frames), args.repeats, synchronizer(device))
    print(
        f"\ntiny preset, full forward (2 x 8 frames x 64^2, {len(lora.adapter_layers(model))} adapters in NS mode): "
        f"NS {timings['NS'] * 1e3:.0f} ms, SVD {timings['SVD'] * 1e3:.0f} ms, "
        f"speed-up {timings['SVD'] / timings['NS']:.2f}x"
    )


if __name__ == "__main__":
    main()
