"""Training over several processes (DDP vs FSDP2), a memory and compute plan for the paper preset, and adapters
merged at inference, measured in one run (reports/scaling.md).

    python benchmarks/performance/scaling.py [--preset tiny] [--resolution 64] [--batch 2] [--steps 8] \
        [--out reports/scaling.md]

1. Per-process training state after a few AdamW steps of the same model (``--preset``, dims 1/2/3) under DDP and
   under FSDP2 (``trainer.strategy=fsdp``, ``well_upao.trainers.sharding``) at 2 gloo processes, and in one process:
   bytes of the parameters, gradients and AdamW state each process holds (a sharded tensor counts its local
   shard). Both strategies go through ``well_upao.train.wrap``, the entry point's own code.
2. Throughput of the same runs: samples per second of 1 process and of 2 processes at the same per-process batch
   of 2D frames (``--resolution``), one thread per process.
3. A plan for ``model.preset=paper`` at 256^2, computed on the meta device (no memory, no data): parameters;
   activations saved for the backward per sample (torch.autograd saved-tensor hooks, attributed to the NA layers
   or the rest, parameters excluded), with and without per-layer activation checkpointing; FLOPs of one forward +
   backward (``torch.utils.flop_counter.FlopCounterMode``); then the memory per GPU at 8 ranks with a per-GPU batch
   of 24 and the fewest 48 GiB / 80 GiB GPUs that hold it, under the assumptions the report lists.
4. Adapters merged for inference: ms per prediction of the shipped tiny backbone with NSLoRA adapters (NS forward
   on) before and after ``merge_adapters``, and the predictions' relative difference.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from performance.scaling_plan import (  # the plan's functions, as other studies import them from here
    PLAN_BATCH,
    PLAN_RANKS,
    PLAN_RESOLUTION,
    RESERVE,
    STATE_BYTES,
    GiB,
    gathered_bytes,
    largest_batch,
    paper_plan,
    sample_plan,
)

__all__ = ["PLAN_BATCH", "PLAN_RANKS", "RESERVE", "GiB", "gathered_bytes", "largest_batch", "main", "sample_plan"]


# --------------------------------------------------------------------------------------------- 1-2: processes
def local_bytes(tensor: torch.Tensor) -> int:
    """Bytes this process holds of ``tensor`` (a ``DTensor``'s local shard)."""
    from torch.distributed.tensor import DTensor

    if isinstance(tensor, DTensor):
        tensor = tensor.to_local()
    return tensor.numel() * tensor.element_size()


def worker(strategy: str, preset: str, resolution: int, batch: int, steps: int, result: Path) -> None:
    """One process of a measured run: the model wrapped as the entry point wraps it, ``steps`` timed AdamW steps on
    random 2D frames after 2 warm-up steps, then the bytes of its training state (written to ``result``)."""
    import torch.distributed as dist

    from well_upao.models.na_transformer import NATransformer
    from well_upao.train import Distributed, wrap
    from well_upao.trainers.sharding import ShardingOptions

    torch.set_num_threads(1)
    info = Distributed.from_environment()
    torch.manual_seed(0)
    model = wrap(NATransformer(preset=preset), info, options=ShardingOptions(strategy=strategy))
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    generator = torch.Generator().manual_seed(1 + info.rank)
    mask = torch.zeros(18)
    mask[:2] = 1  # two active slots, as a 2D dataset with two fields
    frames = torch.randn(batch, 5, resolution, resolution, 18, generator=generator) * mask

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        prediction = model(frames[:, :4], mask, sequence=True)
        ((prediction - frames[:, 1:]) * mask).square().mean().backward()
        optimizer.step()

    for _ in range(2):
        step()
    if info.enabled:
        dist.barrier()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    if info.enabled:
        dist.barrier()
    seconds = time.perf_counter() - start
    state = [t for s in optimizer.state.values() for t in s.values() if isinstance(t, torch.Tensor)]
    record = {
        "strategy": strategy if info.enabled else "one process",
        "rank": info.rank,
        "world": info.world_size,
        "parameters": sum(local_bytes(p) for p in model.parameters()),
        "gradients": sum(local_bytes(p.grad) for p in model.parameters() if p.grad is not None),
        "AdamW state": sum(local_bytes(t) for t in state),
        "seconds": seconds,
        "samples": steps * batch * info.world_size,
    }
    (result / f"{record['strategy']}-{info.rank}.json").write_text(json.dumps(record))
    if info.enabled:
        dist.destroy_process_group()


def run_workers(args: argparse.Namespace, directory: Path) -> list[dict]:
    """1 process, then 2 processes with DDP and with FSDP2 (torchrun, gloo)."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    here = str(Path(__file__).resolve())
    settings = [
        f"--preset={args.preset}",
        f"--resolution={args.resolution}",
        f"--batch={args.batch}",
        f"--steps={args.steps}",
        f"--result={directory}",
    ]
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    for command in (
        [sys.executable, here, "--worker=ddp", *settings],
        [*torchrun, here, "--worker=ddp", *settings],
        [*torchrun, here, "--worker=fsdp", *settings],
    ):
        subprocess.run(command, env=env, check=True, capture_output=True, text=True)
    return [json.loads(path.read_text()) for path in sorted(directory.glob("*.json"))]


def process_tables(records: list[dict]) -> tuple[list[str], list[str]]:
    """The memory table (one row per process) and the throughput table (one row per run)."""
    by = {}
    for record in records:
        by.setdefault(record["strategy"], []).append(record)
    order = [s for s in ("one process", "ddp", "fsdp") if s in by]
    names = {"one process": "1 process", "ddp": "DDP, 2 processes", "fsdp": "FSDP2, 2 processes"}
    lines = [
        "| run | rank | parameters MiB | gradients MiB | AdamW state MiB | total MiB | vs 1 process |",
        "|---|---|---|---|---|---|---|",
    ]
    single = by["one process"][0]
    single_total = sum(single[k] for k in STATE_BYTES)
    for strategy in order:
        for record in sorted(by[strategy], key=lambda r: r["rank"]):
            total = sum(record[k] for k in STATE_BYTES)
            values = " | ".join(f"{record[k] / 2**20:.3f}" for k in STATE_BYTES)
            ratio = total / single_total
            lines.append(f"| {names[strategy]} | {record['rank']} | {values} | {total / 2**20:.3f} | {ratio:.3f} |")
    throughput = ["| run | samples / s (all processes) | ratio to 1 process |", "|---|---|---|"]
    rate = {s: by[s][0]["samples"] / max(r["seconds"] for r in by[s]) for s in order}
    for strategy in order:
        throughput.append(f"| {names[strategy]} | {rate[strategy]:.2f} | {rate[strategy] / rate['one process']:.2f} |")
    return lines, throughput


# --------------------------------------------------------------------------------------------- 3: the plan
# --------------------------------------------------------------------------------------------- 4: merged
def merged_inference(repeats: int = 30) -> list[str]:
    """The evaluation's predictor of a tiny NSLoRA model (shipped base-extrap2 backbone, wave2d's slots, 64^2,
    history 4), with its adapters and merged, timed alternately on the same windows in this run (the medians: the
    machine is shared)."""
    import copy
    import statistics

    from well_upao.data.datasets import slot_indices
    from well_upao.models.assembly import assemble
    from well_upao.models.lora import adapter_layers, merge_adapters, set_ns_active
    from well_upao.predict.predictors import BackboneModel

    torch.set_num_threads(2)
    torch.manual_seed(0)
    slots = slot_indices("wave2d", ["u", "w"])
    model = assemble(
        dict(
            preset="tiny", base="extrap2", channel_slots=slots, pretrained="shipped_extrap2", adapter={"kind": "nslora"}
        )
    )
    set_ns_active(model, True)
    with torch.no_grad():
        for layer in adapter_layers(model).values():
            layer.lora_B.normal_(0, 0.01)
    count = len(adapter_layers(model))
    predictors = {"adapters": BackboneModel("adapters", model)}
    predictors["merged"] = BackboneModel("merged", merge_adapters(copy.deepcopy(model)))
    windows = [torch.randn(1, 4, 64, 64, 2) for _ in range(repeats)]
    times: dict[str, list[float]] = {name: [] for name in predictors}
    outputs: dict[str, list[torch.Tensor]] = {name: [] for name in predictors}
    for predictor in predictors.values():
        predictor.predict(windows[0], None)  # warm-up
    for index, window in enumerate(windows):
        for name in sorted(predictors, reverse=bool(index % 2)):  # alternate which goes first
            start = time.perf_counter()
            outputs[name].append(predictors[name].predict(window, None))
            times[name].append(time.perf_counter() - start)
    pairs = zip(outputs["merged"], outputs["adapters"], strict=True)
    difference = max(float((a - b).norm() / b.norm()) for a, b in pairs)
    ms = {name: 1e3 * statistics.median(values) for name, values in times.items()}
    ratios = [a / m for a, m in zip(times["adapters"], times["merged"], strict=True)]
    return [
        "| predictor | ms per prediction (median) |",
        "|---|---|",
        f"| NSLoRA adapters ({count} layers, Newton-Schulz at every prediction) | {ms['adapters']:.1f} |",
        f"| merged (`merge_adapters`, what `well-upao evaluate` now uses) | {ms['merged']:.1f} |",
        "",
        f"{repeats} predictions each (batch 1, 2 threads), the two predictors alternating on the same windows; median "
        f"of the per-window ratios {statistics.median(ratios):.2f}x; largest relative difference of the predictions "
        f"{difference:.1e}.",
    ]


# --------------------------------------------------------------------------------------------- report
def cpu_name() -> str:
    """The CPU's model name (Linux), else the machine type."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def build_parser() -> argparse.ArgumentParser:
    """The study's command line (``--worker``: one process of the first two sections, run by the study itself)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--resolution", type=int, default=64)
    parser.add_argument("--batch", type=int, default=2, help="samples per process and step")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--out", type=Path, default=None, help="write the report here (else print it)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    return parser


def report_lines(args, command: str, memory: list[str], throughput: list[str]) -> list[str]:
    """The report: the command, the processes' memory and throughput, the paper preset's plan, merged adapters."""
    plan, _ = paper_plan()
    cpu = cpu_name()
    return [
        "# Scaling: DDP vs FSDP2 over processes, a plan for the paper preset, merged adapters",
        "",
        f"Command (installed package, {datetime.date.today()}, {os.cpu_count()} CPU cores ({cpu}), torch "
        f"{torch.__version__}):",
        "",
        f"    {command}",
        "",
        "## 1. Training state per process: 1 process, DDP and FSDP2 at 2 gloo processes (CPU)",
        "",
        f"`{args.preset}` preset with dims 1/2/3, AdamW, bytes each process holds after {args.steps + 2} steps on 2D "
        "frames (a sharded tensor counts its local shard; DDP's gradient buckets are not counted). A batch uses one "
        "dimensionality, so the 1D/3D encoders, decoders and NA variants get no gradient and no AdamW state in any "
        "run.",
        "",
        *memory,
        "",
        "## 2. Throughput, 1 vs 2 processes",
        "",
        f"The same runs: {args.batch} samples (4 input frames each) per process and step at {args.resolution}^2, "
        "one thread per process. The machine has 2 cores shared with other work, so the two processes compete with "
        "everything else on it: these ratios show that the code runs, not how it scales on GPUs.",
        "",
        *throughput,
        "",
        f"## 3. Plan for `model.preset=paper` at {PLAN_RESOLUTION}^2 (meta device)",
        "",
        *plan,
        "",
        "Assumptions: fp32 weights, gradients and AdamW state (the paper's full-precision pretraining; "
        "`trainer.mixed_precision=bf16` keeps these fp32 and computes in bfloat16, which would about halve the "
        "gathered copies and the saved activations: not measured here); activations = the tensors autograd saves, "
        "measured with our pure-PyTorch neighborhood attention (query tiles with halos through masked SDPA, the "
        "path CPUs and GPUs without `natten` take; NATTEN's fused kernels save less for the attention); FSDP2 holds "
        f"one NA layer's units whole plus the next one prefetched; {RESERVE:.0%} of each GPU is kept for the CUDA "
        "context, fragmentation and the backward's transient buffers; the per-GPU batch stays 24 whatever the number "
        "of GPUs (the global batch grows with them). FLOPs count matrix products, convolutions and attention as "
        "`FlopCounterMode` does (the masked SDPA of a tile counts its whole tile x halo product, more than the "
        "window's).",
        "",
        "## 4. Adapters merged at inference",
        "",
        *merged_inference(),
        "",
    ]


def main() -> None:
    args = build_parser().parse_args()
    if args.worker:
        return worker(args.worker, args.preset, args.resolution, args.batch, args.steps, args.result)
    interpreter = os.path.relpath(sys.executable) if not os.path.relpath(sys.executable).startswith("..") else "python"
    command = " ".join([interpreter, "benchmarks/performance/scaling.py", *sys.argv[1:]])
    with tempfile.TemporaryDirectory() as directory:
        records = run_workers(args, Path(directory))
    memory, throughput = process_tables(records)
    report = report_lines(args, command, memory, throughput)
    text = "\n".join(report)
    print(text)
    if args.out:
        from harness.readings import exit_if_stale, write_keeping_reading

        write_keeping_reading(args.out, report)  # keeps the hand-written "## Reading" (the GPU measurement's)
        exit_if_stale(args.out)


if __name__ == "__main__":
    main()
