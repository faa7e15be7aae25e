"""The GPU check's shared pieces (``benchmarks/device/gpu_check.py``): its stages and sizes, the import chain, record
keeping on disk, timing on the device and the precisions a step runs in."""

from __future__ import annotations

import contextlib
import math
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

GiB = 2**30
STAGES = ("env", "backbone", "attention", "objective", "product", "rollout")
#: the modules a harness run imports (stage 1 imports them; tests/test_gpu_check.py checks that the image's
#: packages plus benchmarks/device/gpu_wheels.py's wheels cover every distribution they pull in)
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
