"""The plan for the paper preset (section 3 of reports/scaling.md, ``benchmarks/performance/scaling.py``), on the meta
device (no memory, no data): the activations one sample saves for the backward, with and without per-layer activation
checkpointing, the FLOPs of a forward + backward, the memory per GPU under FSDP2 at ``PLAN_RANKS`` ranks and the GPUs
that hold it. ``benchmarks/device/gpu_check.py`` and ``gpu_report.py`` set their measurements against it."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.tables import table

GiB = 2**30
PLAN_RESOLUTION, PLAN_BATCH, PLAN_RANKS = 256, 24, 8
#: bytes per parameter kept by training in fp32 with AdamW: weight, gradient, exp_avg, exp_avg_sq
STATE_BYTES = {"parameters": 4, "gradients": 4, "AdamW state": 8}
#: share of a GPU's memory left for the CUDA context, the allocator's fragmentation and the backward's transient
#: buffers (gradients of activations, workspaces), which the saved-tensor count does not see
RESERVE = 0.10


def saved_activations(model: nn.Module, frames: torch.Tensor) -> dict[str, float]:
    """Bytes of the tensors autograd saves for the backward in one forward of ``model`` (parameters excluded; each
    storage once), attributed to each NA layer's attention (``blocks.i.attention``) or the rest of the layer
    (``blocks.i``: norms, SwiGLU), or to the rest of the model (``rest``: encoder, decoder, final norm, base)."""
    parameters = {p.untyped_storage()._cdata for p in model.parameters()}
    storages: dict[int, tuple[str, int]] = {}
    where = ["rest"]

    def enter(name):
        return lambda *_: where.append(name)

    def leave(*_):
        where.pop()

    for index, block in enumerate(model.blocks):
        block.register_forward_pre_hook(enter(f"blocks.{index}"))
        block.register_forward_hook(leave)
        for variant in block.attention.values():
            variant.register_forward_pre_hook(enter(f"blocks.{index}.attention"))
            variant.register_forward_hook(leave)

    def pack(tensor):
        storage = tensor.untyped_storage()
        if storage._cdata not in parameters and storage._cdata not in storages:
            storages[storage._cdata] = (where[-1], storage.nbytes())
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        model(frames, None, sequence=True)
    totals: dict[str, float] = {}
    for name, size in storages.values():
        totals[name] = totals.get(name, 0) + size
    return totals


def step_flops(model: nn.Module, frames: torch.Tensor) -> int:
    """FLOPs of one forward + backward (``FlopCounterMode``; a recomputed layer counts again)."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        model(frames, None, sequence=True).square().mean().backward()
    return counter.get_total_flops()


def unit_parameters(model: nn.Module) -> list[int]:
    """Parameters gathered together when one NA layer runs under FSDP2: the layer's own unit (norms, SwiGLU) plus
    its largest attention variant (one variant runs per batch)."""
    sizes = []
    for block in model.blocks:
        attention = max(sum(p.numel() for p in a.parameters()) for a in block.attention.values())
        own = sum(p.numel() for name, p in block.named_parameters() if not name.startswith("attention."))
        sizes.append(own + attention)
    return sizes


def gathered_bytes(model: nn.Module) -> int:
    """Bytes FSDP2 holds gathered while one NA layer runs: the current and the prefetched unit, weights + gradients,
    fp32."""
    return 2 * max(unit_parameters(model)) * 4 * 2


def largest_batch(capacity_gib: float, activations: float, parameters: int, gathered: float) -> int:
    """Largest per-GPU batch of ``activations`` bytes per sample on a ``capacity_gib`` GPU under FSDP2 at
    :data:`PLAN_RANKS` ranks: the fp32 weights, gradients and AdamW state sharded, the gathered units whole,
    :data:`RESERVE` of the GPU kept free."""
    state = parameters * sum(STATE_BYTES.values()) / PLAN_RANKS + gathered
    return max(0, math.floor(((1 - RESERVE) * capacity_gib * GiB - state) / activations))


def sample_plan(
    preset: str = "paper", resolution: int = PLAN_RESOLUTION, n_frames: int = 8, dims: tuple[int, ...] = (1, 2, 3)
) -> dict:
    """One sample of ``n_frames`` 2D frames at ``resolution``^2 through ``NATransformer(preset, dims)`` on the meta
    device (no memory, no data), in fp32: ``parameters``; bytes of activations saved for the backward ``without``
    checkpointing, ``with_checkpointing`` (the rest + every layer's input + one layer recomputed) and
    ``without_fused`` (a fused attention kernel's estimate instead of the masked SDPA's tiles); ``flops`` and
    ``flops_checkpointed`` of one forward + backward; ``saved`` by part, ``layers``, ``attention`` (per layer),
    ``fused`` (one layer's estimate) and ``model`` (the meta model, for FSDP's units)."""
    from well_upao.models.na_transformer import NATransformer, count_parameters
    from well_upao.trainers.sharding import checkpoint_layers

    with torch.device("meta"):
        model = NATransformer(preset=preset, dims=dims)
        checkpointed = NATransformer(preset=preset, dims=dims)
    checkpoint_layers(checkpointed)
    frames = torch.zeros(1, n_frames, resolution, resolution, 18, device="meta")
    saved = saved_activations(model, frames)
    count = len(model.blocks)
    attention = [saved[f"blocks.{i}.attention"] for i in range(count)]
    layers = [saved[f"blocks.{i}"] + attention[i] for i in range(count)]
    hidden, heads, patch = model.hidden, model.config["heads"], model.patch
    n_tokens = n_frames * (resolution // patch) ** 2
    tokens = n_tokens * hidden * 4  # one layer's input: T x tokens x H, fp32
    # a fused kernel (NATTEN on CUDA) keeps the two linears' inputs, the qkv output, the attention output and the
    # softmax statistics (one per token and head) instead of the masked SDPA's tiles
    fused = 2 * tokens + 3 * tokens + tokens + n_tokens * heads * 4
    without = sum(saved.values())
    return dict(
        parameters=count_parameters(model),
        without=without,
        without_fused=without - sum(attention) + count * fused,
        with_checkpointing=saved.get("rest", 0) + count * tokens + max(layers),
        flops=step_flops(model, frames),
        flops_checkpointed=step_flops(checkpointed, frames),
        saved=saved,
        layers=layers,
        attention=attention,
        fused=fused,
        model=model,
    )


def fsdp_bytes(parameters: int, gathered: float, activations: float, ranks: int = PLAN_RANKS) -> float:
    """Per GPU under FSDP2: the sharded fp32 training state, the gathered units and ``PLAN_BATCH`` samples'
    activations."""
    return parameters * sum(STATE_BYTES.values()) / ranks + gathered + PLAN_BATCH * activations


def fewest_gpus(capacity: float, parameters: int, gathered: float, activations: float) -> str:
    """The fewest GPUs of ``capacity`` GiB holding a per-GPU batch of ``PLAN_BATCH`` (``RESERVE`` kept free)."""
    room = (1 - RESERVE) * capacity * GiB - gathered - PLAN_BATCH * activations
    if room <= 0:
        return f"none (the batch's activations alone exceed {(1 - RESERVE) * capacity:.0f} GiB)"
    return str(max(1, math.ceil(parameters * sum(STATE_BYTES.values()) / room)))


def sample_table(plan: dict, parameters_2d: int) -> list[str]:
    """What one sample of the paper preset saves and costs (the meta device's measurement)."""
    saved, layers, attention, fused, parameters = (
        plan[k] for k in ("saved", "layers", "attention", "fused", "parameters")
    )
    rows = [
        [
            "activations saved for the backward, NA layers",
            f"{sum(layers) / GiB:.3f} GiB ({len(plan['model'].blocks)} layers, {max(layers) / 2**20:.0f} MiB each, of "
            f"which attention {max(attention) / 2**20:.0f} MiB)",
        ],
        [
            "activations saved for the backward, the rest (encoder, decoder, base)",
            f"{saved.get('rest', 0) / GiB:.3f} GiB",
        ],
        ["total without activation checkpointing", f"{plan['without'] / GiB:.3f} GiB"],
        [
            f"total without checkpointing, a fused attention kernel's {fused / 2**20:.0f} MiB per layer instead "
            "(estimate)",
            f"{plan['without_fused'] / GiB:.3f} GiB",
        ],
        [
            "total with per-layer checkpointing (the rest + every layer's input + one layer recomputed)",
            f"{plan['with_checkpointing'] / GiB:.3f} GiB",
        ],
        ["FLOPs, forward + backward", f"{plan['flops'] / 1e12:.2f} TFLOP"],
        [
            "FLOPs, forward + backward with checkpointing (layers recomputed)",
            f"{plan['flops_checkpointed'] / 1e12:.2f} TFLOP",
        ],
    ]
    return [
        f"Model: `model.preset=paper` with its default dims 1/2/3: {parameters / 1e6:.1f}M parameters "
        f"({parameters_2d / 1e6:.1f}M with the 2D variants only). Input: one sample of 8 frames of "
        f"{PLAN_RESOLUTION}^2 x 18 slots (patch 16: a 8 x 16 x 16 token grid, {8 * (PLAN_RESOLUTION // 16) ** 2} "
        "tokens), fp32.",
        "",
        *table(["per sample (meta device)", "value"], rows),
    ]


def gpu_tables(plan: dict, gathered: float) -> list[str]:
    """Memory per GPU under FSDP2 at ``PLAN_RANKS`` ranks, FLOPs per step, the fewest GPUs and the largest batch."""
    parameters, without, checkpointed = plan["parameters"], plan["without"], plan["with_checkpointing"]
    flops = plan["flops"]
    sharded = [
        [f"{name} (1/{PLAN_RANKS} each)", f"{parameters * b / PLAN_RANKS / GiB:.2f}"] for name, b in STATE_BYTES.items()
    ]
    rows = [[name, value, value] for name, value in sharded] + [
        [
            "gathered units (current + prefetched NA layer, weights + gradients)",
            f"{gathered / GiB:.2f}",
            f"{gathered / GiB:.2f}",
        ],
        [
            f"activations, {PLAN_BATCH} samples",
            f"{PLAN_BATCH * without / GiB:.2f}",
            f"{PLAN_BATCH * checkpointed / GiB:.2f}",
        ],
        [
            "**total**",
            f"**{fsdp_bytes(parameters, gathered, without) / GiB:.2f}**",
            f"**{fsdp_bytes(parameters, gathered, checkpointed) / GiB:.2f}**",
        ],
    ]
    fewest = [
        [f"{c} GiB", fewest_gpus(c, parameters, gathered, without), fewest_gpus(c, parameters, gathered, checkpointed)]
        for c in (48, 80)
    ]
    largest = "; ".join(
        f"{c} GiB: {largest_batch(c, without, parameters, gathered)} without checkpointing, "
        f"{largest_batch(c, checkpointed, parameters, gathered)} with it "
        f"({largest_batch(c, plan['without_fused'], parameters, gathered)} without it and a fused attention kernel)"
        for c in (48, 80)
    )
    return [
        f"Memory per GPU, FSDP2 at {PLAN_RANKS} ranks, per-GPU batch {PLAN_BATCH} "
        f"(global batch {PLAN_RANKS * PLAN_BATCH}), fp32:",
        "",
        *table(["part", "without checkpointing GiB", "with checkpointing GiB"], rows),
        "",
        f"FLOPs per step: {PLAN_BATCH * flops / 1e12:.0f} TFLOP per GPU, {PLAN_RANKS * PLAN_BATCH * flops / 1e15:.2f} "
        f"PFLOP over the {PLAN_RANKS} GPUs ({PLAN_RANKS * PLAN_BATCH * plan['flops_checkpointed'] / 1e15:.2f} PFLOP "
        "with checkpointing).",
        "",
        f"Fewest GPUs holding a per-GPU batch of {PLAN_BATCH} (FSDP2 shards the fp32 weights, gradients and AdamW "
        f"state over them; {RESERVE:.0%} of each GPU kept free):",
        "",
        *table(["GPU memory", "without checkpointing", "with checkpointing"], fewest),
        "",
        f"Largest per-GPU batch at {PLAN_RANKS} ranks: {largest}.",
    ]


def paper_plan() -> tuple[list[str], dict]:
    """Section 3 of the report: the paper preset's plan per sample and per GPU (meta device), and its numbers."""
    from well_upao.models.na_transformer import NATransformer, count_parameters

    with torch.device("meta"):
        two_d = NATransformer(preset="paper", dims=(2,))
    plan = sample_plan()
    parameters, gathered = plan["parameters"], gathered_bytes(plan["model"])
    ddp = parameters * (sum(STATE_BYTES.values()) + 4)
    lines = [*sample_table(plan, count_parameters(two_d)), "", *gpu_tables(plan, gathered)]
    lines += [
        "",
        f"For comparison, DDP holds the whole training state on every GPU: {ddp / GiB:.2f} GiB (16 bytes per "
        "parameter plus its gradient buckets, 4 more) before activations.",
    ]
    numbers = {k: plan[k] for k in ("parameters", "without", "with_checkpointing", "flops", "without_fused")}
    return lines, numbers
