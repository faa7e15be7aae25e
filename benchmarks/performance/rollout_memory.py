"""What a ``K``-step rollout costs a UPAO training step (``trainer.rollout_steps``): memory kept for the backward
and time, at K = 1, 2, 4 (with and without pushforward), as ratios to K = 1 measured in one run.

Memory: the bytes of the distinct tensor storages autograd saves for the backward of one loss evaluation
(``torch.autograd.graph.saved_tensors_hooks``; the parameters the graph saves count once): what the rollout adds to a
step's peak beyond the weights and the optimizer state, the same on any device and independent of the BLAS kernels.
Time: the median of ``--repeats`` forward + backward passes of the loss (CPU, the threads given).

The run: the quickstart's backbone (``model=na_nslora model.pretrained=shipped_extrap2 model.base=extrap2``, NSLoRA
from the start) on a generated ``wave2d`` set at ``--resolution``^2, history 8, batch ``--batch-size``, through the
harness's own configs and constructors (``well_upao.train.instantiate_trainer``).

    python benchmarks/performance/rollout_memory.py --out reports/rollout_memory.json --report reports/rollout_memory.md
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from well_upao.data.generate import GenerationRequest, generate_dataset
from well_upao.train import Distributed, instantiate_trainer

CASES = [(1, False), (2, False), (2, True), (4, False), (4, True)]


def saved_bytes(compute) -> tuple[torch.Tensor, int]:
    """``compute()``'s result and the bytes of the distinct storages its autograd graph saves for the backward."""
    storages: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        result = compute()
    return result, sum(storages.values())


def build(base: Path, work: Path, steps: int, pushforward: bool, batch_size: int):
    from hydra import compose, initialize_config_module

    os.environ["WELL_BASE_PATH"] = str(base)
    overrides = [
        "model=na_nslora",
        "trainer=upao",
        "data=wave2d",
        "model.pretrained=shipped_extrap2",
        "model.base=extrap2",
        "trainer.nslora_schedule=from_start",
        f"trainer.rollout_steps={steps}",
        f"trainer.rollout_pushforward={str(pushforward).lower()}",
        f"data.batch_size={batch_size}",
        "trainer.progress=false",
        "+seed=0",
    ]
    with initialize_config_module(config_module="well_upao.configs", version_base=None):
        cfg = compose(config_name="config", overrides=overrides)
    folders = [str(work / name) for name in ("checkpoints", "artifacts", "viz")]
    for folder in folders:
        Path(folder).mkdir(parents=True, exist_ok=True)
    return instantiate_trainer(cfg, Distributed(0, 1, 0), *folders)


def host_median_seconds(step, repeats: int) -> float:
    """The median wall-clock seconds of ``repeats`` calls of ``step`` (the host's clock: CPU work)."""
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def measure(
    base: Path, work: Path, steps: int, pushforward: bool, batch_size: int, repeats: int, timing=host_median_seconds
) -> dict:
    """One K-step loss evaluation and its backward, on the device the harness puts the model on: the bytes autograd
    saves (any device), the peak memory forward + backward add (CUDA only, else ``None``) and ``timing(step,
    repeats)`` of a forward + backward ``step`` (``benchmarks/device/gpu_check.py`` passes a CUDA-event timer)."""
    trainer = build(base, work / f"k{steps}-{pushforward}-b{batch_size}", steps, pushforward, batch_size)
    batch = next(iter(trainer.datamodule.train_dataloader()))
    trainer.model.train()
    torch.manual_seed(0)
    device = next(trainer.model.parameters()).device
    on_cuda = device.type == "cuda"
    if on_cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device) if on_cuda else 0
    loss, memory = saved_bytes(lambda: trainer.loss(batch)[0])
    loss.backward()
    if on_cuda:
        torch.cuda.synchronize(device)
    peak = torch.cuda.max_memory_allocated(device) - before if on_cuda else None
    del loss

    def step() -> None:
        trainer.model.zero_grad(set_to_none=True)
        trainer.loss(batch)[0].backward()

    return {
        "rollout_steps": steps,
        "pushforward": pushforward,
        "saved_bytes": memory,
        "peak_added_bytes": peak,
        "step_seconds": timing(step, repeats),
        "device": str(device),
    }


def table(rows: list[dict]) -> str:
    first = next(r for r in rows if r["rollout_steps"] == 1)
    lines = [
        "| K | pushforward | saved for backward (MiB) | x K = 1 | forward + backward (s) | x K = 1 |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['rollout_steps']} | {'yes' if r['pushforward'] else 'no'} | {r['saved_bytes'] / 2**20:.1f} | "
            f"{r['saved_bytes'] / first['saved_bytes']:.2f} | {r['step_seconds']:.3f} | "
            f"{r['step_seconds'] / first['step_seconds']:.2f} |"
        )
    return "\n".join(lines)


def write_report(path: Path, result: dict, command: str) -> None:
    """The generated part of the report; a hand-written ``## Reading`` already there is kept."""
    reading = ""
    if path.is_file() and "## Reading" in path.read_text():
        reading = "## Reading" + path.read_text().split("## Reading", 1)[1]
    text = (
        "# What a K-step rollout costs a UPAO training step\n\n"
        f"Made by `{command}` on {result['machine']} ({result['threads']} threads), "
        f"{result['setting']}.\n\n"
        "Memory: the bytes of the distinct storages autograd saves for one loss evaluation's backward (what the "
        "rollout adds to a step's peak beyond weights and optimizer state); time: median of "
        f"{result['repeats']} forward + backward passes.\n\n" + table(result["rows"]) + "\n\n" + reading
    )
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="JSON of the measurements")
    parser.add_argument("--report", type=Path, help="markdown report (its ## Reading is kept)")
    parser.add_argument("--resolution", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "data"
        request = GenerationRequest(pde="wave2d", out=base, n_traj=6, resolution=args.resolution, n_steps=30)
        generate_dataset(request, progress=False)
        for steps, pushforward in CASES:
            rows.append(measure(base, Path(tmp), steps, pushforward, args.batch_size, args.repeats))
            print(json.dumps(rows[-1]), flush=True)
    result = {
        "machine": os.uname().machine,
        "threads": torch.get_num_threads(),
        "setting": f"wave2d {args.resolution}^2, history 8, batch {args.batch_size}, the quickstart's backbone, NSLoRA",
        "repeats": args.repeats,
        "rows": rows,
    }
    print(table(rows))
    tmp_out = args.out.with_suffix(".tmp")
    tmp_out.write_text(json.dumps(result, indent=2))
    os.replace(tmp_out, args.out)
    if args.report:
        command = "python " + " ".join(
            ["benchmarks/performance/rollout_memory.py", *(argv if argv is not None else sys.argv[1:])]
        )
        write_report(args.report, result, command)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
