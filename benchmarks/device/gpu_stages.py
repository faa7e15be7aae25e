"""The GPU check's measurements (``benchmarks/device/gpu_check.py`` stages 1 to 4): the environment and the matmul
ceilings, the backbone's training step, attention alone, the UPAO objective's cost."""

from __future__ import annotations

import importlib.metadata
import math
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from device.gpu_common import (
    IMPORT_CHAIN,
    GiB,
    Sizes,
    median_seconds,
    precision_mode,
    relative_error,
    synchronize,
    tf32,
)

if TYPE_CHECKING:
    from device.gpu_results import Results


# --------------------------------------------------------------------------------------------- 1: env
def stage_env(results: Results, device: torch.device, sizes: Sizes) -> dict:
    imported, failed = [], {}
    for module in IMPORT_CHAIN:
        try:
            __import__(module)
            imported.append(module)
        except Exception as error:
            failed[module] = f"{type(error).__name__}: {error}"
    versions = {}
    for distribution in ("well-upao", "the_well", "hydra-core", "omegaconf", "neuraloperator", "numpy", "h5py"):
        try:
            versions[distribution] = importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            versions[distribution] = None
    facts: dict = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "versions": versions,
        "imported": imported,
        "import_failures": failed,
        "device": str(device),
        "tf32_matmul_default": torch.backends.cuda.matmul.allow_tf32,
        "tf32_cudnn_default": torch.backends.cudnn.allow_tf32,
    }
    try:
        import natten

        facts["natten"] = getattr(natten, "__version__", "imported")
    except Exception as error:
        facts["natten"] = f"not importable ({type(error).__name__}: {error})"
    if device.type == "cuda":
        properties = torch.cuda.get_device_properties(device)
        facts |= {
            "name": properties.name,
            "memory_gib": properties.total_memory / GiB,
            "multiprocessors": properties.multi_processor_count,
            "capability": f"{properties.major}.{properties.minor}",
        }
        try:
            query = "--query-gpu=driver_version,name,memory.total"
            output = subprocess.run(["nvidia-smi", query, "--format=csv,noheader"], capture_output=True, text=True)
            facts["nvidia_smi"] = output.stdout.strip()
            facts["driver"] = output.stdout.split(",")[0].strip()
        except OSError as error:
            facts["driver"] = f"nvidia-smi not found ({error})"
    else:
        facts["name"] = platform.processor() or platform.machine()
    facts["ceilings_tflops"] = matmul_ceilings(device, sizes.matmul)
    facts["matmul_n"] = sizes.matmul
    results.data["device"] = {k: facts.get(k) for k in ("name", "memory_gib", "driver", "torch", "torch_cuda")}
    return facts


def matmul_ceilings(device: torch.device, n: int) -> dict[str, float]:
    """TFLOP/s of an ``n x n x n`` product of random matrices: fp32 (no TF32), tf32, bf16."""
    generator = torch.Generator(device=device).manual_seed(0)
    ceilings = {}
    precisions = (("fp32", torch.float32, False), ("tf32", torch.float32, True), ("bf16", torch.bfloat16, False))
    for name, dtype, allow in precisions:
        a = torch.randn(n, n, device=device, dtype=dtype, generator=generator)
        b = torch.randn(n, n, device=device, dtype=dtype, generator=generator)
        with tf32(allow):
            seconds = median_seconds(lambda a=a, b=b: a @ b, device, repeats=10, warmup=3)
        ceilings[name] = 2 * n**3 / seconds / 1e12
        del a, b
    return ceilings


# --------------------------------------------------------------------------------------------- 2: backbone
def stage_backbone(
    results: Results,
    device: torch.device,
    sizes: Sizes,
    batches: tuple[int, ...] | None = None,
    precisions: tuple[str, ...] = ("fp32", "bf16"),
) -> dict:
    from performance import scaling

    from well_upao.models.na_transformer import NATransformer
    from well_upao.trainers.sharding import checkpoint_layers

    batches = batches or sizes.batches
    plan = scaling.sample_plan(sizes.preset, sizes.resolution, dims=(2,))
    plan = {k: v for k, v in plan.items() if isinstance(v, int | float)}
    state_bytes = 16 * plan["parameters"]  # fp32 weight, gradient, AdamW exp_avg and exp_avg_sq
    capacity = torch.cuda.get_device_properties(device).total_memory if device.type == "cuda" else None
    ceilings = results.data["stages"].get("env", {}).get("ceilings_tflops", {})
    deadline = time.time() + sizes.backbone_share * max(results.left(), 0)
    mask = torch.zeros(18, device=device)
    mask[:2] = 1  # two active slots, as a 2D dataset with two fields
    rows = []
    for checkpointing in (False, True):
        torch.manual_seed(0)
        model = NATransformer(preset=sizes.preset, dims=(2,)).to(device)
        if checkpointing:
            checkpoint_layers(model)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        for precision in precisions:
            for batch in batches:
                row = {"checkpointing": checkpointing, "precision": precision, "batch": batch}
                per_sample = plan["with_checkpointing" if checkpointing else "without"]
                row["plan_bytes"] = batch * per_sample + state_bytes
                if time.time() > deadline:
                    rows.append(row | {"status": "skipped (the stage's share of the budget was spent)"})
                    continue
                if capacity is not None and row["plan_bytes"] > 0.92 * capacity:
                    rows.append(row | {"status": "not tried (its fp32 plan exceeds 92% of the device's memory)"})
                    continue
                rows.append(row | training_step(model, optimizer, mask, batch, precision, device, sizes))
                flops = plan["flops_checkpointed" if checkpointing else "flops"] * batch
                if rows[-1]["status"] == "ok":
                    rows[-1]["tflops"] = flops / rows[-1]["step_s"] / 1e12
                    ceiling = ceilings.get(precision)
                    rows[-1]["of_ceiling"] = rows[-1]["tflops"] / ceiling if ceiling else None
                    if rows[-1].get("peak_bytes"):
                        rows[-1]["peak_over_plan"] = rows[-1]["peak_bytes"] / row["plan_bytes"]
                results.data["stages"]["backbone"] = {"status": "running", "rows": rows, "plan": plan}
                results.write()
                if rows[-1]["status"].startswith("out of memory"):
                    break
        del model, optimizer
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return {
        "plan": plan,
        "parameters_2d": plan["parameters"],
        "rows": rows,
        "agreement": forward_agreement(device, sizes, NATransformer),
    }


def training_step(model, optimizer, mask, batch: int, precision: str, device: torch.device, sizes: Sizes) -> dict:
    """Median seconds and peak memory of one step (forward + backward + AdamW) on random frames."""
    generator = torch.Generator(device=device).manual_seed(batch)
    frames = torch.randn(batch, 9, sizes.resolution, sizes.resolution, 18, device=device, generator=generator) * mask

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        with precision_mode(device, precision):
            prediction = model(frames[:, :8], mask, sequence=True)
            loss = ((prediction.float() - frames[:, 1:]) * mask).square().mean()
        loss.backward()
        optimizer.step()

    try:
        step()  # warm-up (allocates the AdamW state the first time)
        if device.type == "cuda":
            synchronize(device)
            torch.cuda.reset_peak_memory_stats(device)
        seconds = median_seconds(step, device, repeats=sizes.steps, warmup=0)
        peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None
    except torch.OutOfMemoryError as error:
        optimizer.zero_grad(set_to_none=True)
        del frames
        torch.cuda.empty_cache()
        return {"status": f"out of memory ({str(error).splitlines()[0][:160]})"}
    return {"status": "ok", "step_s": seconds, "samples_per_s": batch / seconds, "peak_bytes": peak}


def forward_agreement(device: torch.device, sizes: Sizes, model_class) -> dict:
    """The backbone's forward on ``device`` (fp32, bf16 autocast) against a float64 forward on the CPU."""
    torch.manual_seed(1)
    reference_model = model_class(preset=sizes.preset, dims=(2,)).double()
    frames = torch.randn(1, 8, sizes.agreement_resolution, sizes.agreement_resolution, 18, dtype=torch.float64)
    mask = torch.zeros(18, dtype=torch.float64)
    mask[:2] = 1
    frames = frames * mask
    with torch.no_grad():
        reference = reference_model(frames, mask, sequence=True)
        model = reference_model.float().to(device)
        out = {"resolution": sizes.agreement_resolution}
        for precision in ("fp32", "bf16"):
            with precision_mode(device, precision):
                prediction = model(frames.float().to(device), mask.float().to(device), sequence=True)
            out[precision] = relative_error(prediction, reference)
    return out


# --------------------------------------------------------------------------------------------- 3: attention
def stage_attention(results: Results, device: torch.device, sizes: Sizes) -> dict:
    import torch.nn.functional as F

    from well_upao.models.neighborhood_attention import neighborhood_attention

    grid, heads, dim, batch = sizes.attention_grid, sizes.attention_heads, sizes.attention_dim, sizes.attention_batch
    kernel, causal = (5, 5, 5), (True, False, False)
    tokens = math.prod(grid)
    rows = []
    for precision, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        generator = torch.Generator(device=device).manual_seed(2)
        q, k, v = (
            torch.randn(batch, *grid, heads, dim, device=device, dtype=dtype, generator=generator) for _ in range(3)
        )
        flat = [t.reshape(batch, tokens, heads, dim).transpose(1, 2).contiguous() for t in (q, k, v)]
        candidates = {
            "ours (query tiles, masked SDPA)": (
                lambda q, k, v: neighborhood_attention(q, k, v, kernel, is_causal=causal, backend="torch"),
                (q, k, v),
            ),
            "full attention (SDPA, no mask)": (F.scaled_dot_product_attention, tuple(flat)),
        }
        try:
            candidates["NATTEN (fused)"] = (
                lambda q, k, v: neighborhood_attention(q, k, v, kernel, is_causal=causal, backend="natten"),
                (q, k, v),
            )
        except Exception:
            pass
        rows += [
            timed_attention(name, function, inputs, precision, device)
            for name, (function, inputs) in candidates.items()
        ]
    full = {r["precision"]: r for r in rows if r["attention"].startswith("full") and r["status"] == "ok"}
    for row in rows:
        if row["status"] == "ok" and row["precision"] in full:
            row["vs_full_forward_backward"] = row["forward_backward_s"] / full[row["precision"]]["forward_backward_s"]
    agreement = attention_agreement(device, grid, heads, dim, kernel, causal)
    return {
        "grid": list(grid),
        "heads": heads,
        "head_dim": dim,
        "batch": batch,
        "kernel": list(kernel),
        "rows": rows,
        "agreement": agreement,
        "natten": natten_note(),
    }


def timed_attention(name: str, function, inputs, precision: str, device: torch.device) -> dict:
    """One attention's row: the median forward and forward + backward seconds of 10 calls (its error, if any)."""
    row = {"attention": name, "precision": precision}
    try:
        leaves = [t.detach().clone().requires_grad_(True) for t in inputs]

        def forward():
            with torch.no_grad():
                function(*inputs)

        def forward_backward():
            function(*leaves).float().square().mean().backward()

        row["forward_s"] = median_seconds(forward, device, repeats=10, warmup=2)
        row["forward_backward_s"] = median_seconds(forward_backward, device, repeats=10, warmup=2)
        row["status"] = "ok"
    except Exception as error:
        row["status"] = f"error: {type(error).__name__}: {str(error)[:200]}"
    return row


def attention_agreement(device: torch.device, grid, heads: int, dim: int, kernel, causal) -> dict[str, float]:
    """Ours on the device against a float64 evaluation of the same function on the CPU, in fp32 and bf16."""
    from well_upao.models.neighborhood_attention import neighborhood_attention

    generator = torch.Generator().manual_seed(3)
    q64, k64, v64 = (torch.randn(1, *grid, heads, dim, dtype=torch.float64, generator=generator) for _ in range(3))
    reference = neighborhood_attention(q64, k64, v64, kernel, is_causal=causal, backend="torch")
    agreement = {}
    for precision, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        moved = [t.to(device=device, dtype=dtype) for t in (q64, k64, v64)]
        agreement[precision] = relative_error(
            neighborhood_attention(*moved, kernel, is_causal=causal, backend="torch"), reference
        )
    return agreement


def natten_note() -> str:
    try:
        import natten

        return f"natten {getattr(natten, '__version__', '')} imported"
    except Exception as error:
        return f"natten not importable: {type(error).__name__}: {error}"


# --------------------------------------------------------------------------------------------- 4: objective
def stage_objective(results: Results, device: torch.device, sizes: Sizes) -> dict:
    from performance.upao_loss_cost import objective_cost

    cost = objective_cost(
        "tg2d", sizes.resolution, preset=sizes.preset, batch=sizes.objective_batch, device=device, repeats=5
    )
    return cost | {
        "ratio": cost["objective"] / cost["model"],
        "pde": "tg2d",
        "resolution": sizes.resolution,
        "batch": sizes.objective_batch,
        "frames": 8,
        "preset": sizes.preset,
    }
