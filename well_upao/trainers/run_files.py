"""A run's files, as the training loop (``trainers/loop.py``) writes and reads them: its checkpoints (``recent.pt``,
``best.pt``, ``checkpoint_N.pt``; sharded ones through ``trainers/sharded_checkpoint.py``), resuming from them, and
its ``metrics.jsonl`` lines (the first carries the protocol, the loss's facts and the device)."""

from __future__ import annotations

import logging
import os
from typing import Any

import torch
import wandb

from well_upao.distributed import is_main_process
from well_upao.harness import metrics_file
from well_upao.models.checkpoint import build_payload, clean_state_dict, load_state, read_checkpoint, save_checkpoint
from well_upao.trainers import records, sharded_checkpoint
from well_upao.trainers.sharding import is_sharded

logger = logging.getLogger(__name__)


class RunFiles:
    """The checkpoint and record methods of ``well_upao.trainers.loop.Trainer`` (a mixin: they read its
    state, the model, optimizer, schedule, selection, loss and data)."""

    def protocol_facts(self) -> dict[str, Any]:
        """The protocol's name and every setting of the run that changes its numbers (history, normalisation,
        batch size, optimizer, schedule, clipping, objective, epochs, early stopping): ``protocol`` and
        ``protocol_settings`` in checkpoints (``train``) and on the first line of ``metrics.jsonl``."""
        settings: dict[str, Any] = {}
        data = getattr(self.datamodule, "settings", None) or {}
        for key in ("n_steps_input", "use_normalization", "normalization_type"):
            if key in data:
                settings[key] = data[key]
        settings["batch_size"] = getattr(self.datamodule, "batch_size", None)
        if self.optimizer is not None:
            group = self.optimizer.param_groups[0]
            settings["optimizer"] = type(self.optimizer).__name__
            settings["lr"] = group.get("initial_lr", group["lr"])
            settings["weight_decay"] = group.get("weight_decay")
        settings["lr_schedule"] = self.lr_schedule
        if self.lr_schedule == "per_epoch":
            settings |= {
                "warmup_epochs": self.warmup_epochs,
                "warmup_start_ratio": self.warmup_start_ratio,
                "min_lr_ratio": self.min_lr_ratio,
            }
        else:
            settings |= {"warmup_steps": self.warmup_steps, "lr_min": self.lr_min}
            if self.schedule_steps is not None:  # a schedule spread over runs records its place in it
                settings |= {
                    "schedule_steps": self.schedule_steps,
                    "start_step": self.start_step,
                    "rewarm_steps": self.rewarm_steps,
                }
        settings |= {"grad_clip": self.grad_clip, "epochs": self.max_epoch, "patience": self.selection.patience}
        if not self.rollout.one_step:  # one-step runs keep the settings they always recorded
            settings |= {f"rollout_{k}": v for k, v in vars(self.rollout).items()}
        settings |= self.loss.protocol_settings()
        return {"protocol": self.protocol, "protocol_settings": settings}

    def device_facts(self) -> dict[str, Any]:
        """Where the run computes (``device``, and ``device_name`` on a GPU), for the first ``metrics.jsonl`` line."""
        device = torch.device(self.device)
        facts: dict[str, Any] = {"device": str(device)}
        if device.type == "cuda":
            facts["device_name"] = torch.cuda.get_device_name(device)
        return facts

    def save_mid_epoch(self, epoch: int, batches: int, loss_sum: float, totals: dict[str, float]) -> None:
        """``recent.pt`` with the epoch counted as not finished and where it stopped (``train.resume``)."""
        self.resume_point = {"epoch": epoch, "batches": batches, "loss_sum": loss_sum, "totals": dict(totals)}
        try:
            self.save_model(epoch - 1, self.last_val_loss, os.path.join(self.checkpoint_folder, "recent.pt"))
        finally:
            self.resume_point = None
        self.cadence.mark()

    # ------------------------------------------------------------------ checkpoints and records
    def checkpoint_payload(
        self, epoch: int, validation_loss: float, model_state: dict[str, torch.Tensor] | None = None
    ) -> dict[str, Any]:
        """The run's checkpoint; ``model_state``: the model's whole state dict gathered from its shards (a sharded
        run, whose optimizer state goes to its sharded checkpoint instead, ``trainers/sharded_checkpoint.py``)."""
        return build_payload(
            self.model,
            state=model_state,
            epoch=epoch,
            optimizer=self.optimizer if model_state is None else None,
            scheduler_state=self.scheduler.state_dict() if self.scheduler else None,
            validation_loss=validation_loss,
            best_validation_loss=self.best_val_loss,
            extra_train={
                "global_step": self.global_step,
                "init_from": self.init_from,
                **self.selection.state(),
                "resume": self.resume_point,
                **self.protocol_facts(),
                **self.loss.checkpoint_info(),
                **self.datamodule.checkpoint_info(),
            },
            extra_model=records.model_description(
                self.bare_model, self.datamodule, self.formatter_name, self.checkpoint_folder
            ),
        )

    def save_model(self, epoch: int, validation_loss: float, output_path: str) -> None:
        if is_sharded(self.model):  # every process writes its shards; rank 0 the consolidated file
            return sharded_checkpoint.save(self, epoch, validation_loss, output_path)
        if is_main_process():
            save_checkpoint(output_path, self.checkpoint_payload(epoch, validation_loss))

    def load_checkpoint(self, checkpoint_path: str) -> None:
        """Resume from ``recent.pt`` (ours, or a checkpoint of the Well's own trainer): weights, optimizer, LR
        schedule, step count, selection state and an interrupted epoch's resume point."""
        logger.info(f"resuming from {checkpoint_path}")
        payload = read_checkpoint(checkpoint_path, accept_well_trainer=True)
        optimizer_state = payload.get("optimizer_state_dit")
        if sharded_checkpoint.restore(self.model, self.optimizer, payload, checkpoint_path):
            optimizer_state = None  # a sharded run's weights and optimizer state (or a sharded model's weights)
        elif payload.get("format") == "well-upao":
            load_state(self.bare_model, payload, checkpoint_path)
        else:
            self.bare_model.load_state_dict(clean_state_dict(payload["model_state_dict"]))
        if self.optimizer is not None and optimizer_state is not None:
            self.optimizer.load_state_dict(optimizer_state)
        train = payload.get("train", {})
        self.resumed_train = dict(train)
        self._scheduler_state = train.get("scheduler")
        self.global_step = int(train.get("global_step", 0))
        self.selection.restore(train, payload.get("best_validation_loss"))
        self.starting_val_loss = payload.get("validation_loss") or float("inf")
        self.starting_epoch = int(payload.get("epoch", 0)) + 1
        self.resume_point = train.get("resume")
        if self.resume_point:
            logger.info(f"continuing epoch {self.resume_point['epoch']} after {self.resume_point['batches']} batches")

    def record(self, values: dict[str, Any]) -> None:
        """Log to wandb (when on) and append one line to ``metrics.jsonl``; the first line this process writes
        also carries the protocol (``protocol_facts``) and the loss's facts (``TrainingLoss.run_facts``)."""
        if not self._facts_written:
            values = self.protocol_facts() | self.loss.run_facts() | self.device_facts() | values
            self._facts_written = True
        clean = metrics_file.append_metrics(self.artifact_folder, values)
        if is_main_process() and wandb.run is not None:
            wandb.log(clean, step=values["epoch"])
