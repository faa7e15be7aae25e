"""Fully sharded data parallelism (FSDP2, ``torch.distributed.fsdp.fully_shard``) per block of the backbone.

Every process holds ``1/N`` of each parameter (a ``DTensor`` sharded along its first dimension), and of its gradient
and AdamW state. A *unit* all-gathers its parameters just before its forward (and again before its backward) and
frees them after; gradients are reduce-scattered (averaged over the ``N`` processes, as DDP's all-reduce does).
The units of ``NATransformer`` (``sharding_units``):

* every neighborhood-attention variant of every layer (``blocks.i.attention.<variant>``): a batch uses one variant,
  so the others are never gathered;
* every layer (``blocks.i``: its RMSNorms and the shared SwiGLU);
* every encoder and decoder (``encoders.<d>``, ``decoders.<d>``: one per dimensionality, used by that data only);
* the root (the history-position embedding, the final norm, the correction gain).

At most one layer's weights are whole at a time (plus the next one's while it is fetched), instead of the whole model
as with one unit. Any other model (e.g. a harness baseline) is sharded as one unit. Frozen weights (the core under
LoRA / NSLoRA adapters) are sharded like the others and get no gradient; the adapters and the encoders/decoders
train.

Options (``trainer.*`` settings, ``ShardingOptions``): ``mixed_precision=bf16`` computes in bfloat16 (weights
gathered in bf16, gradients reduced in fp32; the master weights and AdamW state stay fp32); the default is fp32
throughout (the paper's pretraining). ``activation_checkpointing=true`` keeps only each layer's input during the
forward and recomputes the layer in the backward (any strategy, also one process).

Calls that bypass ``forward`` (``model.forward_sequence`` by the validation's predictors) are routed through it
(``route_forward_sequence``), so the root's parameters are gathered for them too.
"""

from __future__ import annotations

import functools
import logging
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import FSDPModule, MixedPrecisionPolicy, fully_shard
from torch.utils.checkpoint import checkpoint

from well_upao.models.checkpoint import unwrap
from well_upao.models.kinds import is_sequence_model

logger = logging.getLogger(__name__)

STRATEGIES = ("ddp", "fsdp")
PRECISIONS = {None: None, "fp32": None, "float32": None, "bf16": torch.bfloat16, "bfloat16": torch.bfloat16}


@dataclass(frozen=True)
class ShardingOptions:
    """How a model is spread over processes: ``strategy`` (``ddp`` | ``fsdp``), ``mixed_precision`` (``None`` /
    ``fp32`` | ``bf16``, FSDP only) and ``activation_checkpointing`` (recompute each layer in the backward)."""

    strategy: str = "ddp"
    mixed_precision: str | None = None
    activation_checkpointing: bool = False

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(f"trainer.strategy must be one of {STRATEGIES}, got {self.strategy!r}")
        if self.mixed_precision not in PRECISIONS:
            raise ValueError(f"trainer.mixed_precision must be null, fp32 or bf16, got {self.mixed_precision!r}")
        if self.mixed_precision not in (None, "fp32", "float32") and self.strategy != "fsdp":
            raise ValueError("trainer.mixed_precision=bf16 is FSDP's policy: use it with trainer.strategy=fsdp")

    @classmethod
    def pop_from(cls, settings: dict) -> ShardingOptions:
        """The options held in a trainer config (removed from ``settings``, which goes on to the trainer)."""
        return cls(
            strategy=str(settings.pop("strategy", None) or "ddp"),
            mixed_precision=settings.pop("mixed_precision", None),
            activation_checkpointing=bool(settings.pop("activation_checkpointing", False)),
        )


def sharding_units(model: nn.Module) -> Iterator[nn.Module]:
    """The submodules sharded as units of their own, innermost first (the root is not listed)."""
    blocks = getattr(model, "blocks", None)
    if isinstance(blocks, nn.ModuleList):
        for block in blocks:
            yield from getattr(block, "attention", {}).values()
            yield block
    for name in ("encoders", "decoders"):
        group = getattr(model, name, None)
        if isinstance(group, nn.ModuleDict):
            yield from group.values()


def checkpoint_layers(model: nn.Module) -> int:
    """Per-layer activation checkpointing: each of ``model.blocks`` keeps its input and recomputes its forward in
    the backward (``torch.utils.checkpoint``, non-reentrant). Returns the number of layers changed."""
    blocks = getattr(model, "blocks", None)
    if not isinstance(blocks, nn.ModuleList):
        logger.warning(f"{type(model).__name__} has no layers to checkpoint; activation checkpointing is off")
        return 0
    for block in blocks:
        if getattr(block, "checkpointed", False):
            continue
        forward = block.forward
        block.forward = functools.partial(checkpoint, forward, use_reentrant=False)
        block.checkpointed = True
    return len(blocks)


def route_forward_sequence(model: nn.Module) -> None:
    """Make ``model.forward_sequence(frames, mask)`` go through ``model(frames, mask, sequence=True)``, so FSDP's
    hooks (which wrap ``forward`` only) gather the root's parameters; the call that ``forward`` itself makes runs
    the original method."""
    if not is_sequence_model(model):
        return
    original = model.forward_sequence
    inside = [False]

    @functools.wraps(original)
    def forward_sequence(frames: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        if inside[0]:
            return original(frames, mask)
        inside[0] = True
        try:
            return model(frames, mask, sequence=True)
        finally:
            inside[0] = False

    model.forward_sequence = forward_sequence


def shard(model: nn.Module, options: ShardingOptions, device: torch.device) -> nn.Module:
    """``model`` fully sharded over the default process group (in place: the same object, now an FSDP module),
    starting from rank 0's weights."""
    complex_parameters = [name for name, p in model.named_parameters() if p.is_complex()]
    if complex_parameters:
        raise ValueError(
            f"trainer.strategy=fsdp cannot shard {type(model).__name__}: its parameters {complex_parameters[:2]} are "
            "complex (spectral weights), which FSDP2 does not shard; use trainer.strategy=ddp"
        )
    with torch.no_grad():  # every process starts from rank 0's weights, as DDP does (each keeps its own shard)
        for tensor in [*model.parameters(), *model.buffers()]:
            dist.broadcast(tensor.data, src=0)
    mesh = init_device_mesh(device.type, (dist.get_world_size(),))
    param_dtype = PRECISIONS[options.mixed_precision]
    policy = MixedPrecisionPolicy(param_dtype=param_dtype, reduce_dtype=torch.float32 if param_dtype else None)
    units = list(sharding_units(model))
    # NALayer adds the attention's output out of place, so the view FSDP2 warns about is never modified in place
    warnings.filterwarnings("ignore", message="FSDP2-wrapped module .* returned a view tensor")
    try:
        for unit in units:
            fully_shard(unit, mesh=mesh, mp_policy=policy)
        fully_shard(model, mesh=mesh, mp_policy=policy)
    except RuntimeError as error:  # e.g. tensorly-torch's complex weights (The Well's FNO/TFNO) re-register views
        raise ValueError(
            f"trainer.strategy=fsdp cannot shard {type(model).__name__} ({str(error).splitlines()[0]}); use "
            "trainer.strategy=ddp"
        ) from error
    route_forward_sequence(model)
    logger.info(
        f"FSDP2 over {dist.get_world_size()} processes: {len(units)} units + the root"
        f" ({'bf16 compute, fp32 reduction' if param_dtype else 'fp32'})"
    )
    return model


def prepare_in_process(model: nn.Module, options: ShardingOptions) -> None:
    """What the options ask of a model the trainer receives: activation checkpointing (once; ``python -m
    well_upao.train`` applies it before sharding), and a note when a sharding strategy cannot apply (one
    process, e.g. ``python -m the_well.benchmark.train``)."""
    if options.activation_checkpointing:
        checkpoint_layers(unwrap(model))
    if options.strategy == "fsdp" and not (dist.is_initialized() and dist.get_world_size() > 1):
        logger.info("trainer.strategy=fsdp shards over several processes (torchrun -m well_upao.train); one here")


def is_sharded(model: nn.Module) -> bool:
    """Whether ``model`` is an FSDP2 module (its parameters are ``DTensor`` shards)."""
    return isinstance(model, FSDPModule)
