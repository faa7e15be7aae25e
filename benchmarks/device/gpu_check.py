"""The first GPU check (issue 39): the paper-scale plan of reports/scaling.md measured on one GPU, in stages.

    python benchmarks/device/gpu_check.py --out DIR [--dry-run] [--budget-s 300] [--stages env,backbone,...]

Stages, in priority order; each writes its result to ``DIR/gpu_check.json`` and rewrites ``DIR/gpu.md`` as soon as
it finishes (so a run stopped at its time limit keeps what ran), and an error in one stage is recorded and the
next one runs:

1. ``env``: the import chain a run needs (``well_upao``, ``the_well.benchmark.train``, Hydra), the device, driver,
   torch / CUDA versions, and the measured matmul ceilings: fp32 (as PyTorch computes it by default: no TF32),
   TF32 and bf16 (an ``n^3`` product of random matrices, median of 10 after 3 warm-ups, device events).
2. ``backbone``: ``NATransformer(preset="paper", dims=(2,))`` at 256^2, 8 input frames, one training step (forward +
   backward + AdamW) at batch 1, 2, 4, 8, in fp32 and under bf16 autocast, without and with per-layer activation
   checkpointing: step time, samples/s, achieved TFLOP/s (the plan's FLOPs x batch over the step time) against the
   measured ceiling, peak memory against the plan (fp32: batch x the per-sample activations + 16 bytes per parameter for
   the fp32 weights, gradients and AdamW state; ``benchmarks/performance/scaling.sample_plan``, the function behind
   reports/scaling.md, recomputed here on the meta device). A batch whose fp32 plan exceeds the device's memory is not
   tried; an out-of-memory error ends that configuration's batches. Also: the backbone's forward on the GPU against a
   float64 forward on the CPU (relative error), at a small size.
3. ``attention``: our neighborhood attention alone at the paper's token count (8 x 16 x 16 tokens, 12 heads of 64,
   kernel 5 x 5 x 5, causal in time) against PyTorch's fused full attention (``scaled_dot_product_attention``, no
   mask) on the same tokens, forward and forward + backward, fp32 and bf16; its GPU output against a float64 CPU
   evaluation; NATTEN's fused kernel if ``natten`` imports there.
4. ``objective``: the UPAO objective's cost relative to the backbone's forward + backward at the paper preset
   (``benchmarks/performance/upao_loss_cost.objective_cost``: tg2d exact frames, batch 4 x 8 frames at 256^2).
5. ``product``: the product's path once, small: ``well-upao generate-exact --pde wave2d --time-dtype float32`` (time
   stored as the Well's specification stores it), one UPAO + NSLoRA epoch
   through ``python -m the_well.benchmark.train`` (CUDA when present: the Well's train.py picks it), and
   ``well-upao evaluate --device auto`` of the run; where the run computed (its ``metrics.jsonl``) and the table.

6. ``rollout``: issue 41 on the device. What a K-step UPAO loss costs (K = 1, 2, 4, with and without pushforward;
   ``benchmarks/performance/rollout_memory``'s measurement plus the device's peak memory) at 64^2 batch 4 (the CPU
   report's setting) and 128^2 batch 8; then UPAO K = 4 and supervised LoRA K = 4 through the harness on a wave2d set of
   49 frames at stride 1, and ``well-upao evaluate`` of both: one-step, 6:12 and 13:30 per row.

``--dry-run`` runs every stage at tiny size (tiny preset, 32^2, batch 1-2, small matrices) on whatever device is
there (the CPU in CI) in under a minute or two: the rehearsal that the real check, which costs scarce GPU time,
will not fail on a typo. ``--budget-s`` bounds the whole (stages past it are skipped and say so); the real check
is sized to finish within 5 minutes on one H100 / H200.

On a lent machine (the tool library's ``device`` entry), after ``python benchmarks/device/gpu_wheels.py`` here::

    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --ignore-requires-python \\
        --find-links .gpu_wheels/build --target /tmp/site .gpu_wheels/*.whl . && export PYTHONPATH=/tmp/site && \\
        PYTHONUNBUFFERED=1 python3 benchmarks/device/gpu_check.py --out $OUT/gpu
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from device.gpu_check_report import report
from device.gpu_common import (
    DRY,
    IMPORT_CHAIN,
    PRECISIONS,
    REAL,
    STAGES,
    GiB,
    Sizes,
)
from device.gpu_product import stage_product, stage_rollout
from device.gpu_results import Results
from device.gpu_stages import stage_attention, stage_backbone, stage_env, stage_objective

__all__ = ["IMPORT_CHAIN", "STAGES", "GiB", "Results", "Sizes", "main", "report"]


# --------------------------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="folder for gpu_check.json and gpu.md")
    parser.add_argument("--dry-run", action="store_true", help="every stage at tiny size (the CPU rehearsal)")
    parser.add_argument("--budget-s", type=float, default=300.0, help="stop starting stages after this many seconds")
    parser.add_argument("--stages", default=",".join(STAGES), help=f"comma-separated subset of {','.join(STAGES)}")
    parser.add_argument("--device", default="auto", help="auto (CUDA when present), cpu or cuda")
    parser.add_argument("--batches", help="the backbone stage's batches, comma-separated (default 1,2,4,8)")
    parser.add_argument(
        "--precisions", default="fp32,bf16", help=f"the backbone stage's precisions, a subset of {','.join(PRECISIONS)}"
    )
    args = parser.parse_args(argv)
    stages = [s.strip() for s in args.stages.split(",") if s.strip()]
    unknown = sorted(set(stages) - set(STAGES))
    if unknown:
        parser.error(f"unknown stages {unknown}; choose from {', '.join(STAGES)}")
    device = torch.device(("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device here")
    sizes = DRY if args.dry_run else REAL
    batches = tuple(int(b) for b in args.batches.split(",")) if args.batches else None
    precisions = tuple(p.strip() for p in args.precisions.split(",") if p.strip())
    if set(precisions) - set(PRECISIONS) or (batches and min(batches) < 1):
        parser.error(f"--precisions takes {','.join(PRECISIONS)}; --batches positive integers")
    command = shlex.join(["python", "benchmarks/device/gpu_check.py", *(argv if argv is not None else sys.argv[1:])])
    results = Results(args.out, command, args.dry_run, args.budget_s)
    functions = {
        "env": stage_env,
        "backbone": lambda r, d, s: stage_backbone(r, d, s, batches, precisions),
        "attention": stage_attention,
        "objective": stage_objective,
        "product": stage_product,
        "rollout": stage_rollout,
    }
    for name in STAGES:
        if name in stages:
            results.stage(name, lambda r, f=functions[name]: f(r, device, sizes))
    print(report(results.data), flush=True)
    failed = [n for n, e in results.data["stages"].items() if e["status"] == "error"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
