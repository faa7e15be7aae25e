"""The first GPU check (issue 39): the paper-scale plan of reports/scaling.md measured on one GPU, in stages.

    python benchmarks/gpu_check.py --out DIR [--dry-run] [--budget-s 300] [--stages env,backbone,...]

Stages, in priority order; each writes its result to ``DIR/gpu_check.json`` and rewrites ``DIR/gpu.md`` as soon as
it finishes (so a run stopped at its time limit keeps what ran), and an error in one stage is recorded and the
next one runs:

1. ``env``: the import chain a run needs (``well_upao``, ``the_well.benchmark.train``, Hydra), the device, driver,
   torch / CUDA versions, and the measured matmul ceilings: fp32 (as PyTorch computes it by default: no TF32),
   TF32 and bf16 (an ``n^3`` product of random matrices, median of 10 after 3 warm-ups, device events).
2. ``backbone``: ``NATransformer(preset="paper", dims=(2,))`` at 256^2, 8 input frames, one training step (forward
   + backward + AdamW) at batch 1, 2, 4, 8, in fp32 and under bf16 autocast, without and with per-layer
   activation checkpointing: step time, samples/s, achieved TFLOP/s (the plan's FLOPs x batch over the step time)
   against the measured ceiling, peak memory against the plan (fp32: batch x the per-sample activations + 16 bytes
   per parameter for the fp32 weights, gradients and AdamW state; ``benchmarks/scaling.sample_plan``, the function
   behind reports/scaling.md, recomputed here on the meta device). A batch whose fp32 plan exceeds the device's
   memory is not tried; an out-of-memory error ends that configuration's batches. Also: the backbone's forward on
   the GPU against a float64 forward on the CPU (relative error), at a small size.
3. ``attention``: our neighborhood attention alone at the paper's token count (8 x 16 x 16 tokens, 12 heads of 64,
   kernel 5 x 5 x 5, causal in time) against PyTorch's fused full attention (``scaled_dot_product_attention``, no
   mask) on the same tokens, forward and forward + backward, fp32 and bf16; its GPU output against a float64 CPU
   evaluation; NATTEN's fused kernel if ``natten`` imports there.
4. ``objective``: the UPAO objective's cost relative to the backbone's forward + backward at the paper preset
   (``benchmarks/upao_loss_cost.objective_cost``: tg2d exact frames, batch 4 x 8 frames at 256^2).
5. ``product``: the product's path once, small: ``well-upao generate-exact --pde wave2d --time-dtype float32`` (time
   stored as the Well's specification stores it), one UPAO + NSLoRA epoch
   through ``python -m the_well.benchmark.train`` (CUDA when present: the Well's train.py picks it), and
   ``well-upao evaluate --device auto`` of the run; where the run computed (its ``metrics.jsonl``) and the table.

6. ``rollout``: issue 41 on the device. What a K-step UPAO loss costs (K = 1, 2, 4, with and without
   pushforward; ``benchmarks/rollout_memory``'s measurement plus the device's peak memory) at 64^2 batch 4 (the
   CPU report's setting) and 128^2 batch 8; then UPAO K = 4 and supervised LoRA K = 4 through the harness on a
   wave2d set of 49 frames at stride 1, and ``well-upao evaluate`` of both: one-step, 6:12 and 13:30 per row.

``--dry-run`` runs every stage at tiny size (tiny preset, 32^2, batch 1-2, small matrices) on whatever device is
there (the CPU in CI) in under a minute or two: the rehearsal that the real check, which costs scarce GPU time,
will not fail on a typo. ``--budget-s`` bounds the whole (stages past it are skipped and say so); the real check
is sized to finish within 5 minutes on one H100 / H200.

On a lent machine (the tool library's ``device`` entry), after ``python benchmarks/gpu_wheels.py`` here::

    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --ignore-requires-python \\
        --find-links .gpu_wheels/build --target /tmp/site .gpu_wheels/*.whl . && export PYTHONPATH=/tmp/site && \\
        PYTHONUNBUFFERED=1 python3 benchmarks/gpu_check.py --out $OUT/gpu
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.metadata
import io
import json
import math
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

GiB = 2**30
STAGES = ("env", "backbone", "attention", "objective", "product", "rollout")
#: the modules a harness run imports (stage 1 imports them; tests/test_gpu_check.py checks that the image's
#: packages plus benchmarks/gpu_wheels.py's wheels cover every distribution they pull in)
IMPORT_CHAIN = (
    "well_upao",
    "well_upao.cli",
    "well_upao.train",
    "well_upao.trainers",
    "well_upao.harness.model_factory",
    "well_upao.harness.datamodule",
    "well_upao.evaluate.pipeline",
    "the_well.benchmark.train",
    "the_well.benchmark.models",
    "hydra.utils",
    "hydra_plugins.well_upao_searchpath",
)


@dataclass(frozen=True)
class Sizes:
    """What each stage runs: the real check, or the dry run's tiny version of it."""

    matmul: int
    preset: str
    resolution: int
    batches: tuple[int, ...]
    steps: int
    agreement_resolution: int
    attention_grid: tuple[int, int, int]
    attention_heads: int
    attention_dim: int
    attention_batch: int
    objective_batch: int
    product_traj: int
    product_resolution: int
    product_steps: int
    backbone_share: float
    #: the rollout stage: (resolution, batch) of each cost setting, frames of its set, steps of its two runs
    rollout_settings: tuple[tuple[int, int], ...]
    rollout_frames: int
    rollout_train_steps: int
    rollout_repeats: int


REAL = Sizes(
    matmul=8192,
    preset="paper",
    resolution=256,
    batches=(1, 2, 4, 8),
    steps=3,
    agreement_resolution=64,
    attention_grid=(8, 16, 16),
    attention_heads=12,
    attention_dim=64,
    attention_batch=8,
    objective_batch=4,
    product_traj=8,
    product_resolution=64,
    product_steps=31,
    backbone_share=0.45,
    rollout_settings=((64, 4), (128, 8)),
    rollout_frames=48,
    rollout_train_steps=25,
    rollout_repeats=5,
)
DRY = Sizes(
    matmul=256,
    preset="tiny",
    resolution=32,
    batches=(1,),
    steps=1,
    agreement_resolution=32,
    attention_grid=(8, 6, 6),
    attention_heads=2,
    attention_dim=8,
    attention_batch=1,
    objective_batch=2,
    product_traj=6,
    product_resolution=16,
    product_steps=16,
    backbone_share=0.6,
    rollout_settings=((16, 2),),
    rollout_frames=24,
    rollout_train_steps=2,
    rollout_repeats=1,
)


# --------------------------------------------------------------------------------------------- record keeping
class Results:
    """The check's results: ``gpu_check.json`` and ``gpu.md`` in ``folder``, rewritten (atomically) after each
    stage."""

    def __init__(self, folder: Path, command: str, dry_run: bool, budget_s: float):
        self.folder = folder
        self.started = time.time()
        self.budget_s = budget_s
        self.data: dict = {
            "command": command,
            "dry_run": dry_run,
            "started": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "budget_s": budget_s,
            "stages": {},
        }
        folder.mkdir(parents=True, exist_ok=True)

    def elapsed(self) -> float:
        return time.time() - self.started

    def left(self) -> float:
        return self.budget_s - self.elapsed()

    def stage(self, name: str, function: Callable[[Results], dict]) -> None:
        start = time.time()
        if self.left() <= 0:
            entry = {"status": "skipped", "reason": f"the budget of {self.budget_s:.0f} s was spent"}
        else:
            print(f"[{self.elapsed():6.1f} s] stage {name}", flush=True)
            try:
                entry = {"status": "ok", **function(self)}
            except Exception as error:  # a stage's failure is a result: record it, run the next
                entry = {"status": "error", "error": f"{type(error).__name__}: {error}"}
                entry["traceback"] = traceback.format_exc()[-4000:]
                print(entry["traceback"], flush=True)
        entry["seconds"] = round(time.time() - start, 2)
        self.data["stages"][name] = entry
        self.write()

    def write(self) -> None:
        self.data["elapsed_s"] = round(self.elapsed(), 1)
        atomic_write(self.folder / "gpu_check.json", json.dumps(self.data, indent=2, default=str))
        atomic_write(self.folder / "gpu.md", report(self.data))


def atomic_write(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


# --------------------------------------------------------------------------------------------- timing
def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def median_seconds(function: Callable[[], object], device: torch.device, repeats: int, warmup: int) -> float:
    """Median seconds of ``repeats`` calls after ``warmup`` calls (CUDA events on a GPU, else the host clock)."""
    for _ in range(warmup):
        function()
    times = []
    for _ in range(repeats):
        if device.type == "cuda":
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            function()
            end.record()
            end.synchronize()
            times.append(begin.elapsed_time(end) / 1e3)
        else:
            start = time.perf_counter()
            function()
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def relative_error(value: torch.Tensor, reference: torch.Tensor) -> float:
    value, reference = value.detach().double().cpu(), reference.detach().double().cpu()
    if not torch.isfinite(value).all():
        return math.inf
    return float((value - reference).norm() / reference.norm())


@contextlib.contextmanager
def tf32(enabled: bool):
    """TF32 for float32 matrix products (PyTorch's default is off), restored afterwards."""
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = enabled
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before


#: the training step's precisions: fp32 as PyTorch computes it by default (no TF32 in matrix products), fp32 with
#: TF32 matrix products (``torch.backends.cuda.matmul.allow_tf32``), and bf16 autocast over fp32 weights
PRECISIONS = ("fp32", "tf32", "bf16")


@contextlib.contextmanager
def precision_mode(device: torch.device, precision: str):
    """The context a step of ``precision`` runs in (:data:`PRECISIONS`)."""
    if precision == "bf16":
        with torch.autocast(device.type, dtype=torch.bfloat16):
            yield
    else:
        with tf32(precision == "tf32"):
            yield


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
    import scaling

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
            import natten

            candidates["NATTEN (fused)"] = (
                lambda q, k, v: neighborhood_attention(q, k, v, kernel, is_causal=causal, backend="natten"),
                (q, k, v),
            )
        except Exception:
            pass
        for name, (function, inputs) in candidates.items():
            row = {"attention": name, "precision": precision}
            try:
                leaves = [t.detach().clone().requires_grad_(True) for t in inputs]

                def forward(function=function, inputs=inputs):
                    with torch.no_grad():
                        function(*inputs)

                def forward_backward(function=function, leaves=leaves):
                    function(*leaves).float().square().mean().backward()

                row["forward_s"] = median_seconds(forward, device, repeats=10, warmup=2)
                row["forward_backward_s"] = median_seconds(forward_backward, device, repeats=10, warmup=2)
                row["status"] = "ok"
            except Exception as error:
                row["status"] = f"error: {type(error).__name__}: {str(error)[:200]}"
            rows.append(row)
    full = {r["precision"]: r for r in rows if r["attention"].startswith("full") and r["status"] == "ok"}
    for row in rows:
        if row["status"] == "ok" and row["precision"] in full:
            row["vs_full_forward_backward"] = row["forward_backward_s"] / full[row["precision"]]["forward_backward_s"]
    # correctness: ours on the device against a float64 evaluation of the same function on the CPU
    generator = torch.Generator().manual_seed(3)
    q64, k64, v64 = (torch.randn(1, *grid, heads, dim, dtype=torch.float64, generator=generator) for _ in range(3))
    reference = neighborhood_attention(q64, k64, v64, kernel, is_causal=causal, backend="torch")
    agreement = {}
    for precision, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        moved = [t.to(device=device, dtype=dtype) for t in (q64, k64, v64)]
        agreement[precision] = relative_error(
            neighborhood_attention(*moved, kernel, is_causal=causal, backend="torch"), reference
        )
    try:
        import natten

        natten_note = f"natten {getattr(natten, '__version__', '')} imported"
    except Exception as error:
        natten_note = f"natten not importable: {type(error).__name__}: {error}"
    return {
        "grid": list(grid),
        "heads": heads,
        "head_dim": dim,
        "batch": batch,
        "kernel": list(kernel),
        "rows": rows,
        "agreement": agreement,
        "natten": natten_note,
    }


# --------------------------------------------------------------------------------------------- 4: objective
def stage_objective(results: Results, device: torch.device, sizes: Sizes) -> dict:
    from upao_loss_cost import objective_cost

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


# --------------------------------------------------------------------------------------------- product steps
class StepRunner:
    """Runs the product's commands in ``work`` and records each in ``steps`` (its command with ``work`` written
    as ``<work>``, exit code, seconds and output tail); a failed command raises with its output."""

    def __init__(self, work: Path, base: Path, steps: list[dict]):
        self.work = work
        self.env = dict(os.environ, WANDB_MODE="disabled", WELL_BASE_PATH=str(base), HYDRA_FULL_ERROR="1")
        self.steps = steps

    def __call__(self, label: str, command: list[str], timeout: float) -> subprocess.CompletedProcess:
        """``well-upao ...`` runs in this process (its ``main``, as the console script calls it: no second
        interpreter start), anything else as a subprocess."""
        work = self.work
        start = time.time()
        if command[0] == "well-upao":
            from well_upao.cli import main as well_upao_main

            stdout, stderr = io.StringIO(), io.StringIO()
            with contextlib.chdir(work), contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                code = well_upao_main(command[1:])
            done = subprocess.CompletedProcess(command, code, stdout.getvalue(), stderr.getvalue())
        else:
            done = subprocess.run(command, cwd=work, env=self.env, capture_output=True, text=True, timeout=timeout)
        self.steps.append(
            {
                "step": label,
                "command": shlex.join([Path(command[0]).name, *command[1:]]).replace(str(work), "<work>"),
                "returncode": done.returncode,
                "seconds": round(time.time() - start, 1),
                "output_tail": (done.stdout + done.stderr)[-1500:].replace(str(work), "<work>"),
            }
        )
        if done.returncode != 0:
            raise RuntimeError(f"{label} failed (exit {done.returncode}):\n{(done.stdout + done.stderr)[-2000:]}")
        return done


# --------------------------------------------------------------------------------------------- 5: product
def stage_product(results: Results, device: torch.device, sizes: Sizes) -> dict:
    # imported by the stage that needs it, as the other stages do: the env stage reports a broken import chain
    from well_upao.harness.metrics_file import read_metrics
    from well_upao.harness.runs import harness_command, run_folders

    work = Path(tempfile.mkdtemp(prefix="gpu_check_product_"))
    base, experiments = work / "datasets", work / "experiments"
    cli = ["well-upao"]
    steps = []
    run = StepRunner(work, base, steps)

    out = {"steps": steps}
    try:
        generate = [*cli, "generate-exact", "--pde", "wave2d", "--out", str(base), "--quiet"]
        generate += ["--n-traj", str(sizes.product_traj), "--resolution", str(sizes.product_resolution)]
        generate += ["--n-steps", str(sizes.product_steps), "--time-dtype", "float32"]  # as the Well's files store it
        run("generate", generate, timeout=300)
        train = harness_command(
            [
                "model=na_nslora",
                "trainer=upao",
                "data=wave2d",
                f"data.well_base_path={base}",
                f"experiment_dir={experiments}",
                "model.pretrained=shipped_extrap2",
                "model.base=extrap2",
                "trainer.epochs=1",
                "data.batch_size=2",
                "optimizer.lr=0.001",
                "trainer.nslora_schedule=from_start",
                "trainer.max_rollout_steps=2",
                "data.max_rollout_steps=3",
                "trainer.rollout_val_frequency=1000",
                "trainer.short_validation_length=2",
                "trainer.progress=false",
                "auto_resume=false",
            ]
        )
        run("train", train, timeout=600)
        (folder,) = run_folders(experiments)
        lines = read_metrics(folder)
        out["run_device"] = lines[0].get("device")
        out["run_device_name"] = lines[0].get("device_name")
        out["epochs_logged"] = [line.get("epoch") for line in lines]
        validations = [line for line in lines if "valid" in line]
        out["prior_verdict"] = validations[0].get("prior_verdict") if validations else None
        out["kept_prior"] = validations[-1].get("kept_prior") if validations else None
        evaluation = work / "evaluation"
        done = run(
            "evaluate",
            [*cli, "evaluate", str(folder), "--device", "auto", "--out", str(evaluation), "--rollout-steps", "3"],
            timeout=600,
        )
        out["table"] = done.stdout.split("\nwrote ")[0].replace(str(work), "<work>")[-6000:]
        (json_path,) = sorted(evaluation.glob("*.json"))
        scores = json.loads(json_path.read_text())["scores"]
        out["rows"] = [
            {
                "name": s["name"],
                "mean_paper_vrmse": statistics.fmean(s["one_step_vrmse_paper"].values()),
                "device": s.get("notes", {}).get("device", "cpu"),
                "ms_per_prediction": 1e3 * s["seconds_per_prediction"],
            }
            for s in scores
        ]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


# --------------------------------------------------------------------------------------------- 6: rollout
#: the two harness runs of the rollout stage: UPAO and its supervised counterpart, both K = 4 (issue 41)
ROLLOUT_RUNS = {
    "upao_4step": [
        "model=na_nslora",
        "trainer=upao",
        "trainer.nslora_schedule=from_start",
        "trainer.rollout_vrmse_steps=12",
    ],
    "supervised_4step": ["model=na_lora", "trainer=shifted"],
}


def rollout_cost(base: Path, work: Path, steps: int, pushforward: bool, batch: int, device, repeats: int) -> dict:
    """One K-step UPAO loss on the device (``benchmarks/rollout_memory.measure``, the harness's own constructors):
    the bytes autograd saves for its backward (device independent: the CPU report's column), the peak memory the
    forward + backward adds on the device, and the median forward + backward time (CUDA events). The trainer sits
    where the harness puts it (CUDA when present, whatever ``--device`` says): ``ran_on`` records where."""
    from rollout_memory import measure

    def timing(step, n: int) -> float:
        return median_seconds(step, device, repeats=n, warmup=1)

    row = measure(base, work, steps, pushforward, batch, repeats, timing=timing)
    return {"rollout_steps": steps, "pushforward": pushforward, "batch": batch, "saved_bytes": row["saved_bytes"],
            "peak_added_bytes": row["peak_added_bytes"], "step_s": row["step_seconds"], "repeats": repeats,
            "ran_on": row["device"]}  # fmt: skip


def stage_rollout(results: Results, device: torch.device, sizes: Sizes) -> dict:
    """Issue 41 on the device: what a K-step UPAO step costs (K = 1, 2, 4, with and without pushforward, at each
    of ``sizes.rollout_settings``), then K = 4 UPAO and supervised K = 4 through the harness on one wave2d set
    of ``sizes.rollout_frames`` steps at stride 1 and ``well-upao evaluate`` of both: one-step, 6:12 and 13:30."""
    from rollout_memory import CASES

    from well_upao.harness.metrics_file import read_metrics
    from well_upao.harness.runs import harness_command, run_folders

    work = Path(tempfile.mkdtemp(prefix="gpu_check_rollout_"))
    steps: list[dict] = []
    out: dict = {"costs": [], "steps": steps, "runs": {}}
    previous_base = os.environ.get("WELL_BASE_PATH")
    try:
        for resolution, batch in sizes.rollout_settings:
            base = work / f"datasets_{resolution}"
            generate = ["well-upao", "generate-exact", "--pde", "wave2d", "--out", str(base), "--quiet"]
            generate += ["--n-traj", str(sizes.product_traj), "--resolution", str(resolution)]
            generate += ["--n-steps", str(sizes.rollout_frames), "--time-dtype", "float32"]
            StepRunner(work, base, steps)(f"generate {resolution}^2", generate, timeout=300)
            for k, pushforward in CASES:
                row = rollout_cost(base, work, k, pushforward, batch, device, sizes.rollout_repeats)
                out["costs"].append({"resolution": resolution, **row})
                results.data["stages"]["rollout"] = {"status": "running", **out}  # kept if the machine is lost
                results.write()
        base = work / f"datasets_{sizes.rollout_settings[0][0]}"
        run = StepRunner(work, base, steps)
        folders = {}
        for name, row in ROLLOUT_RUNS.items():
            experiments = work / "experiments" / name
            overrides = [*row, "trainer.rollout_steps=4", "data=wave2d", f"data.well_base_path={base}"]
            overrides += [f"experiment_dir={experiments}", "model.pretrained=shipped_extrap2", "model.base=extrap2"]
            overrides += ["optimizer.lr=1e-3", "data.n_steps_input=8", "data.min_dt_stride=1", "data.max_dt_stride=1"]
            overrides += ["data.batch_size=4", "trainer.epochs=1", f"trainer.epoch_steps={sizes.rollout_train_steps}"]
            overrides += ["trainer.warmup_steps=5", "trainer.max_rollout_steps=2", "data.max_rollout_steps=30"]
            overrides += ["trainer.rollout_val_frequency=100000", "trainer.short_validation_length=2"]
            overrides += ["trainer.progress=false", "auto_resume=false", "+seed=0"]
            run(f"train {name}", harness_command(overrides), timeout=600)
            (folder,) = run_folders(experiments)
            folders[name] = folder
            lines = read_metrics(folder)
            last = [line for line in lines if "valid" in line][-1]
            out["runs"][name] = {
                "device": lines[0].get("device"),
                "device_name": lines[0].get("device_name"),
                "steps": last.get("step"),
                "seconds": last.get("seconds"),
                "valid_rollout_6_12": last.get("valid_rollout_VRMSE_6:12"),
                "prior_rollout_6_12": last.get("valid_prior_rollout_VRMSE_6:12"),
                "kept_prior": last.get("kept_prior"),
            }
        evaluation = work / "evaluation"
        labelled = [f"{name}={folder}" for name, folder in folders.items()]
        done = run("evaluate", ["well-upao", "evaluate", *labelled, "--device", "auto", "--out", str(evaluation)], 600)
        out["table"] = done.stdout.split("\nwrote ")[0].replace(str(work), "<work>")[-8000:]
        (json_path,) = sorted(evaluation.glob("*.json"))
        evaluated = json.loads(json_path.read_text())
        out["rollout_steps_run"] = evaluated.get("rollout_steps_run")
        out["rollout_starts"] = evaluated.get("rollout_starts")
        out["rows"] = [
            {
                "name": s["name"],
                "one_step": statistics.fmean(s["one_step_vrmse_paper"].values()),
                "windows": s.get("rollout_windows", {}),
                "device": s.get("notes", {}).get("device", "cpu"),
                "ms_per_prediction": 1e3 * s["seconds_per_prediction"],
            }
            for s in evaluated["scores"]
        ]
    finally:
        if previous_base is None:
            os.environ.pop("WELL_BASE_PATH", None)
        else:
            os.environ["WELL_BASE_PATH"] = previous_base
        shutil.rmtree(work, ignore_errors=True)
    return out


# --------------------------------------------------------------------------------------------- report
def fmt(value, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def report(data: dict) -> str:
    """``gpu.md``: the command, device, versions and one section per stage (what ran; no reading)."""
    stages = data["stages"]
    env = stages.get("env", {})
    lines = [
        "# GPU check" + (" (dry run)" if data["dry_run"] else ""),
        "",
        f"Command ({data['started']}):",
        "",
        f"    {data['command']}",
        "",
        f"Device: {env.get('name', '?')}; {fmt(env.get('memory_gib'))} GiB; {env.get('multiprocessors', '-')} "
        f"multiprocessors; driver {env.get('driver', '-')}; Python {env.get('python', '?')}, torch "
        f"{env.get('torch', '?')} (CUDA {env.get('torch_cuda', '-')}, cuDNN {env.get('cudnn', '-')}); "
        f"natten: {env.get('natten', '?')}. Elapsed {data.get('elapsed_s', 0):.0f} s of a {data['budget_s']:.0f} s "
        "budget.",
        "",
        "| stage | status | seconds |",
        "|---|---|---|",
    ]
    for name in STAGES:
        if name in stages:
            entry = stages[name]
            status = entry["status"] + (f": {entry['error']}" if entry.get("error") else "")
            status += f" ({entry['reason']})" if entry.get("reason") else ""
            lines.append(f"| {name} | {status.replace('|', '/')[:300]} | {fmt(entry.get('seconds'))} |")
    if env.get("status") == "ok":
        versions = ", ".join(f"{k} {v}" for k, v in env["versions"].items())
        ceilings = env["ceilings_tflops"]
        lines += [
            "",
            "## 1. Imports and ceilings",
            "",
            f"Imported: {', '.join(env['imported'])}. Failed: {env['import_failures'] or 'none'}. {versions}.",
            f"PyTorch defaults here: TF32 matmul {env['tf32_matmul_default']}, TF32 cuDNN {env['tf32_cudnn_default']}.",
            "",
            f"| precision | TFLOP/s ({env['matmul_n']}^3 product, random data, median of 10) |",
            "|---|---|",
            *(f"| {name} | {fmt(value, 4)} |" for name, value in ceilings.items()),
        ]
    backbone = stages.get("backbone", {})
    if backbone.get("rows"):
        plan = backbone["plan"]
        lines += [
            "",
            "## 2. The backbone: one training step (forward + backward + AdamW)",
            "",
            f"Plan per sample (benchmarks/scaling.sample_plan on the meta device, as reports/scaling.md): "
            f"{plan['without'] / GiB:.3f} GiB of activations without checkpointing, "
            f"{plan['with_checkpointing'] / GiB:.3f} GiB with it; {plan['flops'] / 1e12:.3g} TFLOP forward + backward "
            f"({plan['flops_checkpointed'] / 1e12:.3g} with checkpointing); {plan['parameters'] / 1e6:.1f}M "
            f"parameters (16 bytes each: {16 * plan['parameters'] / GiB:.2f} GiB of fp32 weights, gradients and "
            "AdamW state). Plan = batch x activations + that state; it models fp32 only.",
            "",
            "| checkpointing | precision | batch | step ms | samples/s | TFLOP/s | of ceiling | peak GiB | plan GiB "
            "| peak / plan | status |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for row in backbone["rows"]:
            peak = row.get("peak_bytes")
            ratio = row.get("peak_over_plan") if row["precision"] != "bf16" else None
            lines.append(
                f"| {'yes' if row['checkpointing'] else 'no'} | {row['precision']} | {row['batch']} | "
                f"{fmt(row['step_s'] * 1e3 if row.get('step_s') else None, 4)} | {fmt(row.get('samples_per_s'))} | "
                f"{fmt(row.get('tflops'))} | {fmt(row.get('of_ceiling'), 2)} | "
                f"{fmt(peak / GiB if peak else None)} | {row['plan_bytes'] / GiB:.3g} | {fmt(ratio, 3)} | "
                f"{row.get('status', '-')} |"
            )
        agreement = backbone.get("agreement")
        if agreement:
            lines += [
                "",
                f"Forward on the device against a float64 forward on the CPU ({agreement['resolution']}^2, batch 1): "
                f"relative error {fmt(agreement['fp32'])} in fp32, {fmt(agreement['bf16'])} under bf16 autocast.",
            ]
    attention = stages.get("attention", {})
    if attention.get("rows"):
        grid = " x ".join(map(str, attention["grid"]))
        lines += [
            "",
            "## 3. Attention alone",
            "",
            f"Token grid {grid} (t, y, x), {attention['heads']} heads of {attention['head_dim']}, batch "
            f"{attention['batch']}, kernel {' x '.join(map(str, attention['kernel']))}, causal in time; median of "
            f"10. {attention['natten']}.",
            "",
            "| attention | precision | forward ms | forward + backward ms | vs full attention (fwd + bwd) | status |",
            "|---|---|---|---|---|---|",
        ]
        for row in attention["rows"]:
            forward = row.get("forward_s")
            both = row.get("forward_backward_s")
            lines.append(
                f"| {row['attention']} | {row['precision']} | {fmt(forward * 1e3 if forward else None, 4)} | "
                f"{fmt(both * 1e3 if both else None, 4)} | {fmt(row.get('vs_full_forward_backward'), 3)} | "
                f"{row['status']} |"
            )
        agreement = attention["agreement"]
        lines += [
            "",
            f"Ours on the device against float64 on the CPU (batch 1): relative error {fmt(agreement['fp32'])} in "
            f"fp32, {fmt(agreement['bf16'])} in bf16.",
        ]
    objective = stages.get("objective", {})
    if objective.get("status") == "ok":
        lines += [
            "",
            "## 4. The UPAO objective's cost",
            "",
            f"{objective['pde']}, {objective['batch']} windows of {objective['frames']} frames at "
            f"{objective['resolution']}^2, preset {objective['preset']} ({objective['equations']} sub-equations), "
            "best of 5.",
            "",
            "| backbone forward + backward ms | objective + its backward ms | ratio |",
            "|---|---|---|",
            f"| {objective['model'] * 1e3:.4g} | {objective['objective'] * 1e3:.4g} | {objective['ratio']:.1%} |",
        ]
    product = stages.get("product", {})
    if product.get("steps"):
        lines += ["", "## 5. The product's path", "", "| step | exit | seconds | command |", "|---|---|---|---|"]
        lines += [
            f"| {s['step']} | {s['returncode']} | {s['seconds']} | `{s['command'][:400]}` |" for s in product["steps"]
        ]
        if "run_device" in product:
            name = product.get("run_device_name")
            lines += ["", f"The run's metrics.jsonl: device {product['run_device']}" + (f" ({name})." if name else ".")]
            if product.get("prior_verdict"):
                verdict, kept = product["prior_verdict"], product.get("kept_prior")
                lines[-1] += f" Before training: {verdict}; kept the prior: {kept}."
        if product.get("rows"):
            lines += ["", "| row | mean paper VRMSE | ran on | ms per prediction |", "|---|---|---|---|"]
            lines += [
                f"| {r['name']} | {r['mean_paper_vrmse']:.4g} | {r['device']} | {r['ms_per_prediction']:.3g} |"
                for r in product["rows"]
            ]
        table = [line for line in product.get("table", "").splitlines() if line.startswith("|")]
        if table:
            lines += ["", "evaluate's own table (its label-free columns included):", "", *table]
    rollout = stages.get("rollout", {})
    if rollout.get("costs"):
        first = {(r["resolution"], r["batch"]): r for r in rollout["costs"] if r["rollout_steps"] == 1}

        def ratio(row: dict, key: str) -> str:
            base = first.get((row["resolution"], row["batch"]), {}).get(key)
            return f"{row[key] / base:.2f}" if base and row.get(key) is not None else "-"

        lines += [
            "",
            "## 6. Rollout UPAO: what K steps cost, and K = 4 through the harness",
            "",
            "One UPAO loss evaluation (wave2d, history 8, the quickstart's backbone, NSLoRA) and its backward: the "
            "bytes autograd saves (device independent), the peak memory forward + backward add on the device, and "
            f"the median forward + backward time of {rollout['costs'][0].get('repeats', 'several')} passes.",
            "",
            "| resolution | batch | K | pushforward | saved (MiB) | x K = 1 | peak added (MiB) | x K = 1 "
            "| fwd + bwd ms | x K = 1 |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in rollout["costs"]:
            peak = r.get("peak_added_bytes")
            lines.append(
                f"| {r['resolution']}^2 | {r['batch']} | {r['rollout_steps']} | {'yes' if r['pushforward'] else 'no'} "
                f"| {r['saved_bytes'] / 2**20:.1f} | {ratio(r, 'saved_bytes')} | "
                f"{fmt(peak / 2**20 if peak is not None else None, 4)} | {ratio(r, 'peak_added_bytes')} | "
                f"{r['step_s'] * 1e3:.4g} | {ratio(r, 'step_s')} |"
            )
    if rollout.get("steps"):
        lines += ["", "| step | exit | seconds | command |", "|---|---|---|---|"]
        lines += [
            f"| {s['step']} | {s['returncode']} | {s['seconds']} | `{s['command'][:600]}` |" for s in rollout["steps"]
        ]
    if rollout.get("runs"):
        lines += [
            "",
            "| run | ran on | optimizer steps | seconds | rollout VRMSE 6:12 at its last validation | the prior's | "
            "kept the prior |",
            "|---|---|---|---|---|---|---|",
        ]
        for name, r in rollout["runs"].items():
            where = r["device"] + (f" ({r['device_name']})" if r.get("device_name") else "")
            lines.append(
                f"| {name} | {where} | {fmt(r['steps'])} | {fmt(r['seconds'])} | {fmt(r['valid_rollout_6_12'], 4)} "
                f"| {fmt(r['prior_rollout_6_12'], 4)} | {fmt(r['kept_prior'])} |"
            )
    if rollout.get("rows"):
        lines += [
            "",
            f"evaluate: {fmt(rollout.get('rollout_steps_run'))} rollout steps from "
            f"{fmt(rollout.get('rollout_starts'))} starts per trajectory.",
            "",
            "| row | one-step VRMSE (paper) | 6:12 | 13:30 | ran on | ms per prediction |",
            "|---|---|---|---|---|---|",
        ]
        for r in rollout["rows"]:
            windows = r["windows"]
            lines.append(
                f"| {r['name']} | {r['one_step']:.4g} | {fmt(windows.get('6:12'), 4)} | {fmt(windows.get('13:30'), 4)} "
                f"| {r['device']} | {r['ms_per_prediction']:.3g} |"
            )
        table = [line for line in rollout.get("table", "").splitlines() if line.startswith("|")]
        if table:
            lines += ["", "evaluate's own table:", "", *table]
    return "\n".join(lines) + "\n"


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
    command = shlex.join(["python", "benchmarks/gpu_check.py", *(argv if argv is not None else sys.argv[1:])])
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
