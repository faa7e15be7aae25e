"""Checkpoints of runs sharded with FSDP2: ``torch.distributed.checkpoint`` (DCP) for resuming, one consolidated file
for everything else.

A sharded run writes, at every save of ``recent.pt`` (end of epoch, and inside epochs with
``trainer.checkpoint_steps`` / ``checkpoint_minutes``):

1. ``<checkpoint folder>/recent.sharded-<token>/``: a DCP checkpoint in which every process writes its own shards of
   the weights and of the AdamW state (``__<rank>_0.distcp``, plus ``.metadata``), together with the names of the
   parameters that have optimizer state (those never used, such as the NA variants of another dimensionality,
   have none) and the optimizer's group settings (learning rate, and the schedule's ``initial_lr``);
2. ``recent.pt``: the consolidated well-upao checkpoint (``well_upao.models.checkpoint``), written by rank 0 from
   the whole weights gathered onto its CPU, without optimizer state, naming the DCP directory it belongs to in
   ``train.sharded``. ``best.pt`` and ``checkpoint_N.pt`` are consolidated files only.

The DCP directory is complete before ``recent.pt`` names it (and the file is renamed into place), so a run killed at
any point resumes from a consistent pair; older directories are removed after the new ``recent.pt`` is in place.
``well-upao evaluate``, ``export-backbone`` and ``adapters-report`` read the consolidated file like any other.

Resuming (``restore``): a checkpoint that names a DCP directory restores weights and AdamW state from it, for any
number of processes (DCP re-shards) and any strategy (also DDP or one process); a sharded model resuming from a
consolidated-only file (one written by a DDP or one-process run) loads its weights, and its AdamW moments restart.
"""

from __future__ import annotations

import json
import logging
import secrets
import shutil
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch import nn
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_optimizer_state_dict,
    set_model_state_dict,
    set_optimizer_state_dict,
)

from well_upao.distributed import is_main_process
from well_upao.models.checkpoint import CheckpointError, clean_state_dict, save_checkpoint
from well_upao.models.lora import backbone_sha256
from well_upao.trainers.sharding import is_sharded

logger = logging.getLogger(__name__)

#: the ``train`` key of a consolidated checkpoint naming its DCP directory (relative to the file's folder)
SHARDED_KEY = "sharded"
#: file names whose saves also write a DCP checkpoint (the one a rerun resumes from)
RESUMABLE = ("recent.pt",)


def whole_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """The model's whole state dict on rank 0's CPU (empty on the other ranks), gathered from the shards in the
    weights' own precision (fp32 under a bf16 compute policy). A collective."""
    return get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))


def shared_token() -> str:
    """A random name part chosen by rank 0 and known to every process (a collective)."""
    token = [secrets.token_hex(4) if is_main_process() else None]
    if dist.is_initialized():
        dist.broadcast_object_list(token, src=0)
    return str(token[0])


def save_sharded_state(model: nn.Module, optimizer: torch.optim.Optimizer | None, directory: Path) -> None:
    """Every process writes its shards of the weights and of the optimizer state to ``directory`` (DCP)."""
    state: dict[str, Any] = {"model": get_model_state_dict(model)}
    if optimizer is not None:
        optimizer_state = get_optimizer_state_dict(model, optimizer)
        groups = [{k: v for k, v in group.items() if k != "params"} for group in optimizer.param_groups]
        state |= {
            "optimizer": optimizer_state,
            "optimizer_params": sorted(optimizer_state["state"]),
            "optimizer_groups": json.dumps(groups),  # one string: DCP would flatten a list of dicts
        }
    dcp.save(state, checkpoint_id=str(directory))


def load_sharded_state(model: nn.Module, optimizer: torch.optim.Optimizer | None, directory: Path) -> None:
    """Weights and optimizer state from a DCP ``directory``, re-sharded for this run's processes. Parameters that
    had no optimizer state when it was written (never used) get none now, as in the run that wrote it."""
    if not (directory / ".metadata").is_file():
        raise CheckpointError(f"{directory} is not a complete sharded checkpoint (no .metadata)")
    alone = not dist.is_initialized()  # one process reading a checkpoint that several wrote
    state: dict[str, Any] = {"model": get_model_state_dict(model)}
    if optimizer is not None:
        names: dict[str, Any] = {"optimizer_params": [], "optimizer_groups": ""}
        dcp.load(names, checkpoint_id=str(directory), no_dist=alone)
        kept = set(names["optimizer_params"])
        template = get_optimizer_state_dict(model, optimizer)  # also creates state for every parameter
        template["state"] = {name: value for name, value in template["state"].items() if name in kept}
        state["optimizer"] = template
    dcp.load(state, checkpoint_id=str(directory), no_dist=alone)
    set_model_state_dict(model, state["model"])
    if optimizer is not None:
        # replaces the whole state: the parameters left out above have none again
        set_optimizer_state_dict(model, optimizer, state["optimizer"], options=StateDictOptions(strict=False))
        # every setting of the groups as saved, also those a fresh optimizer lacks (the schedule's initial_lr)
        for group, saved in zip(optimizer.param_groups, json.loads(names["optimizer_groups"]), strict=True):
            group.update({k: tuple(v) if isinstance(group.get(k), tuple) else v for k, v in saved.items()})


def save(model: nn.Module, optimizer: torch.optim.Optimizer | None, payload, output_path: str | Path) -> None:
    """The sharded run's checkpoint at ``output_path`` (see the module docstring); every process calls it.
    ``payload(state)``: the consolidated file's content for the model's whole ``state``
    (``well_upao.trainers.run_files.Payload``)."""
    output_path = Path(output_path)
    state = whole_state(model)
    directory = None
    if output_path.name in RESUMABLE:
        directory = output_path.parent / f"{output_path.stem}.sharded-{shared_token()}"
        save_sharded_state(model, optimizer, directory)
    if is_main_process():
        content = payload(state)
        if directory is not None:
            content["train"][SHARDED_KEY] = directory.name
        save_checkpoint(output_path, content)
        if directory is not None:
            for old in output_path.parent.glob(f"{output_path.stem}.sharded-*"):
                if old != directory:
                    shutil.rmtree(old, ignore_errors=True)
    if dist.is_initialized():
        dist.barrier()


def restore(model: nn.Module, optimizer: torch.optim.Optimizer | None, payload: dict, path: str | Path) -> bool:
    """Weights and optimizer state of a resumed run when sharding is involved (every process calls it): from the
    DCP directory ``payload`` names, or, for a sharded model and a consolidated-only file, its weights. Returns
    ``False`` when neither applies (the caller loads the file as usual)."""
    name = (payload.get("train") or {}).get(SHARDED_KEY)
    if name:
        directory = Path(path).parent / name
        if not directory.is_dir():
            raise CheckpointError(f"{path} belongs to the sharded checkpoint {directory}, which is missing")
        load_sharded_state(model, optimizer, directory)
        logger.info(f"weights and optimizer state from the sharded checkpoint {directory}")
        return True
    if not is_sharded(model):
        return False
    load_whole_state(model, payload, path)
    logger.warning(
        f"{path} holds no sharded state (written by a DDP or one-process run): its weights are loaded, the AdamW "
        "moments restart"
    )
    return True


def load_whole_state(model: nn.Module, payload: dict, path: str | Path) -> None:
    """A consolidated checkpoint's weights into a sharded model; slim adapter files keep the model's frozen
    backbone, which must be the one the adapters were trained on."""
    state = clean_state_dict(payload["state_dict"])
    complete = payload.get("state_dict_complete", True)
    adapters = payload.get("adapters")
    if adapters is not None and not complete:
        own = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))
        if backbone_sha256(model, own) != adapters["backbone_sha256"]:
            raise CheckpointError(
                f"{path}: these adapters were trained on another backbone ({adapters.get('backbone')})"
            )
    set_model_state_dict(model, state, options=StateDictOptions(full_state_dict=True, strict=complete))
