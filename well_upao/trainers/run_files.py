"""A run's files, an object the training loop (``trainers/loop.py``) holds: where its checkpoints (``recent.pt``,
``best.pt``, ``checkpoint_N.pt``) and its ``metrics.jsonl`` live, how a checkpoint is written (one file, or with a
sharded run's DCP directory beside it, ``trainers/sharded_checkpoint.py``) and read back to resume, and how a line is
appended (the first line a process writes carries the run's facts). What a checkpoint holds is the loop's to say
(``Trainer.checkpoint_payload``): the files read nothing of the loop."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

import torch
import wandb

from well_upao.distributed import is_main_process
from well_upao.harness import metrics_file
from well_upao.models.checkpoint import clean_state_dict, load_state, read_checkpoint, save_checkpoint
from well_upao.trainers import sharded_checkpoint
from well_upao.trainers.sharding import is_sharded

logger = logging.getLogger(__name__)

#: what a checkpoint holds: ``payload(model_state)``, the model's whole state gathered from its shards for a sharded
#: run (``None``: the model's own state dict, and the optimizer's state)
Payload = Callable[[dict[str, torch.Tensor] | None], dict[str, Any]]


def device_facts(device: torch.device | str) -> dict[str, Any]:
    """Where the run computes (``device``, and ``device_name`` on a GPU), for the first ``metrics.jsonl`` line."""
    device = torch.device(device)
    facts: dict[str, Any] = {"device": str(device)}
    if device.type == "cuda":
        facts["device_name"] = torch.cuda.get_device_name(device)
    return facts


class RunFiles:
    """The files of one run: its checkpoint folder (``path``) and artifact folder (``metrics.jsonl``)."""

    def __init__(self, checkpoint_folder: str, artifact_folder: str):
        self.checkpoint_folder, self.artifact_folder = checkpoint_folder, artifact_folder
        #: whether this process wrote its first ``metrics.jsonl`` line (the one with the run's facts)
        self.facts_written = False

    def path(self, name: str) -> str:
        """A checkpoint of the run by its file name (``recent.pt``, ``best.pt``, ...)."""
        return os.path.join(self.checkpoint_folder, name)

    def save(self, model: torch.nn.Module, optimizer, payload: Payload, output_path: str) -> None:
        """Write a checkpoint: every process of a sharded run its shards (rank 0 the consolidated file,
        ``sharded_checkpoint.save``), else the main process the file."""
        if is_sharded(model):
            return sharded_checkpoint.save(model, optimizer, payload, output_path)
        if is_main_process():
            save_checkpoint(output_path, payload(None))

    def read(self, checkpoint_path: str, model: torch.nn.Module, bare_model: torch.nn.Module, optimizer) -> dict:
        """Resume from ``recent.pt`` (ours, or a checkpoint of the Well's own trainer): the weights and the optimizer's
        state are loaded into ``model`` (``bare_model``: it unwrapped) and ``optimizer``; returns the checkpoint for
        the rest of the loop's state."""
        logger.info(f"resuming from {checkpoint_path}")
        payload = read_checkpoint(checkpoint_path, accept_well_trainer=True)
        optimizer_state = payload.get("optimizer_state_dit")
        if sharded_checkpoint.restore(model, optimizer, payload, checkpoint_path):
            optimizer_state = None  # a sharded run's weights and optimizer state (or a sharded model's weights)
        elif payload.get("format") == "well-upao":
            load_state(bare_model, payload, checkpoint_path)
        else:
            bare_model.load_state_dict(clean_state_dict(payload["model_state_dict"]))
        if optimizer is not None and optimizer_state is not None:
            optimizer.load_state_dict(optimizer_state)
        return payload

    def record(self, values: dict[str, Any], facts: Callable[[], dict[str, Any]]) -> None:
        """Log to wandb (when on) and append one line to ``metrics.jsonl``; the first line this process writes also
        carries ``facts()`` (the protocol, the loss's facts, the device) before the line's own values."""
        if not self.facts_written:
            values = facts() | values
            self.facts_written = True
        clean = metrics_file.append_metrics(self.artifact_folder, values)
        if is_main_process() and wandb.run is not None:
            wandb.log(clean, step=values["epoch"])
