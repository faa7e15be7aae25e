"""The one training loop: The Well's ``Trainer`` with the paper's protocol, pluggable losses and validations.

The Well's harness steps its LR scheduler once per epoch and never clips gradients; the paper's protocol
(appendix "Training Protocol") uses a per-step linear warm-up and cosine decay ``lr -> lr_min`` and gradient
clipping at norm 1.0. :class:`Trainer` does both itself, shows a progress bar, stops early, writes checkpoints in
our schema (which also carries the Well's keys), resumes from them, and logs every epoch to ``metrics.jsonl``.

What varies is pluggable:

* the loss (:class:`TrainingLoss`): the objective of one step and, where it has one, its own validation
  criterion: ``shifted`` (dense shifted supervision, ``trainers/shifted.py``), ``supervised`` (one frame through
  the harness's formatter, ``trainers/supervised.py``), ``upao`` (PDE residual + boundary band,
  ``trainers/upao.py``);
* the validation: The Well's, on its validation, rollout and test loaders, by default; pretraining (the shifted
  loss on a multi-dataset mixture) validates each dataset of the mixture instead (``trainers/pretraining.py``),
  and otherwise runs, checkpoints and resumes like every other run.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import wandb
from torch.optim.lr_scheduler import LambdaLR
from tqdm.auto import tqdm

from well_upao.data.atomic import atomic_write_text
from well_upao.data.slots import N_SLOTS
from well_upao.distributed import is_main_process
from well_upao.harness.well_trainer import WellTrainer
from well_upao.models.assembly import resolved_model_node
from well_upao.models.checkpoint import (
    CheckpointError,
    build_payload,
    clean_state_dict,
    load_state,
    save_checkpoint,
    unwrap,
)
from well_upao.models.lora import adapter_layers, delta_norms, ns_active, set_ns_active
from well_upao.trainers import sharded_checkpoint
from well_upao.trainers.sharding import ShardingOptions, is_sharded, prepare_in_process

logger = logging.getLogger(__name__)


SCHEDULES = ("warmup", "from_start")
_warned_about_alias = False


def resolve_nslora_schedule(schedule: str | None, switch_patience: int | None, alias: dict | None) -> tuple[str, int]:
    """The NSLoRA schedule: the trainer's settings, else the model config's earlier names for them
    (``model.adapter.schedule`` / ``switch_patience``, with one warning), else ``warmup`` after 5 validations."""
    global _warned_about_alias
    alias = alias or {}
    if alias and not _warned_about_alias:
        logger.warning(
            "model.adapter.schedule / model.adapter.switch_patience are now trainer.nslora_schedule / "
            f"trainer.switch_patience; using {alias} from the model config"
        )
        _warned_about_alias = True
    schedule = schedule if schedule is not None else alias.get("schedule", "warmup")
    patience = switch_patience if switch_patience is not None else alias.get("switch_patience", 5)
    if schedule not in SCHEDULES:
        raise ValueError(f"nslora_schedule must be one of {SCHEDULES}, got {schedule!r}")
    return schedule, int(patience)


def warmup_cosine(step: int, warmup_steps: int, total_steps: int, min_ratio: float) -> float:
    """LR multiplier: linear warm-up ``(step + 1) / warmup`` then cosine from 1 down to ``min_ratio``."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
    return min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))


class TrainingLoss:
    """One objective of the loop, bound to its trainer (:meth:`bind`), which it may read (model, device, data)."""

    #: whether the loss needs a well-upao backbone (18 slots, ``forward_sequence``)
    needs_backbone = False

    def bind(self, trainer: Trainer) -> None:
        self.trainer = trainer
        if self.needs_backbone:
            trainer.require_backbone()

    def __call__(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, float]]:
        """Scalar loss of one batch and named values to log."""
        raise NotImplementedError

    def validate(self, dataloader, full: bool) -> tuple[float | None, dict[str, float]]:
        """The loss's own validation on the validation loader: ``(selection criterion or None, logs)``; ``None``
        keeps The Well's criterion (its ``loss_fn`` on the validation rollout)."""
        return None, {}

    def checkpoint_info(self) -> dict[str, Any]:
        """What checkpoints should record about this loss (in their ``train`` section)."""
        return {}


#: ``validation(trainer, split, full, epoch) -> (criterion or None, logs)`` for split in valid, rollout_valid,
#: test, rollout_test
Validation = Callable[["Trainer", str, bool, int], tuple[float | None, dict[str, Any]]]


def skip_batches(loader, count: int) -> None:
    """Make ``loader``'s next pass start after ``count`` batches (a resumed epoch): by its sampler's ``skip`` or
    the loader's own ``skip_batches`` (a mixture)."""
    if hasattr(loader, "skip_batches"):
        loader.skip_batches(count)
    elif hasattr(getattr(loader, "sampler", None), "skip"):
        loader.sampler.skip(count * loader.batch_size)
    else:
        logger.warning("this data loader cannot skip batches: the interrupted epoch restarts from its beginning")


def well_validation(trainer: Trainer, split: str, full: bool, epoch: int) -> tuple[float | None, dict[str, Any]]:
    """The Well's validation of a split (its loaders, metrics and plots, plus the loss's own criterion)."""
    loaders = {
        "valid": trainer.datamodule.val_dataloader,
        "rollout_valid": trainer.datamodule.rollout_val_dataloader,
        "test": trainer.datamodule.test_dataloader,
        "rollout_test": trainer.datamodule.rollout_test_dataloader,
    }
    return trainer.validation_loop(loaders[split](), split, full, epoch)


class Trainer(WellTrainer):
    """The Well's ``Trainer`` with per-step warm-up + cosine LR, gradient clipping, our checkpoints, and a
    pluggable ``loss`` (a :class:`TrainingLoss`) and ``validation`` (default :func:`well_validation`).

    Extra arguments (all from the trainer config): ``grad_clip`` (max gradient norm, ``0`` disables),
    ``warmup_steps``, ``lr_min`` (end of the cosine), ``patience`` (early stopping after that many
    validations without improvement of the selection criterion, ``0`` disables), ``max_minutes`` (wall-clock
    budget: training stops at the first step past it, then validates and tests as usual), ``progress``,
    ``max_steps`` (stop after that many optimizer steps), ``epoch_steps`` (end each epoch after that many
    batches of the shuffled training set: more validations, hence selection and switch points, in a short run),
    ``init_from`` (another run's checkpoint to start from,
    see :meth:`initialize_from`), ``validate_start`` (the untrained model is the first candidate of the selection,
    :meth:`validate_untrained`), ``checkpoint_steps`` / ``checkpoint_minutes`` (also
    save ``recent.pt`` inside epochs, every that many steps / minutes: rerunning resumes mid-epoch),
    ``nslora_schedule`` (``warmup``: the paper's LoRA warm-up until the criterion stalls for
    ``switch_patience`` validations, then NS; ``from_start``) for models
    with NSLoRA adapters. Every epoch's logs are also appended to ``<artifact folder>/metrics.jsonl``.
    """

    def __init__(
        self,
        *args,
        loss: TrainingLoss,
        validation: Validation | None = None,
        grad_clip: float = 1.0,
        warmup_steps: int = 200,
        lr_min: float = 1e-6,
        patience: int = 0,
        max_minutes: float | None = None,
        max_steps: int | None = None,
        epoch_steps: int | None = None,
        checkpoint_steps: int | None = None,
        checkpoint_minutes: float | None = None,
        progress: bool = True,
        nslora_schedule: str | None = None,
        switch_patience: int | None = None,
        init_from: str | None = None,
        validate_start: bool = False,
        **kwargs,
    ):
        self.checkpoint_steps = int(checkpoint_steps) if checkpoint_steps else None
        self.checkpoint_seconds = 60.0 * float(checkpoint_minutes) if checkpoint_minutes else None
        self.last_checkpoint = time.time()
        #: where an interrupted epoch stopped (from recent.pt): epoch, batches done, the epoch's running sums
        self.resume_point: dict | None = None
        self.last_val_loss = float("inf")
        self.grad_clip = float(grad_clip)
        self.warmup_steps = int(warmup_steps)
        self.lr_min = float(lr_min)
        self.patience = int(patience)
        self.max_seconds = None if max_minutes is None else 60.0 * float(max_minutes)
        self.deadline: float | None = None
        self.max_steps = None if max_steps is None else int(max_steps)
        if epoch_steps is not None and int(epoch_steps) < 1:
            raise ValueError(f"trainer.epoch_steps must be a positive number of batches, got {epoch_steps}")
        self.epoch_steps = None if epoch_steps is None else int(epoch_steps)
        self.started = time.time()
        self.epochs_without_improvement = 0
        self.progress = bool(progress)
        self.step_scheduler: LambdaLR | None = None
        self._scheduler_state: dict | None = None
        self.global_step = 0
        self.validate_start = bool(validate_start)
        self.init_from = init_from
        resuming = bool(kwargs.get("checkpoint_path"))
        sharding = ShardingOptions.pop_from(kwargs)  # trainer.strategy / mixed_precision / activation_checkpointing
        super().__init__(*args, **kwargs)
        prepare_in_process(self.model, sharding)
        if init_from and not resuming:
            self.initialize_from(init_from)
        self.nslora_schedule, self.switch_patience = resolve_nslora_schedule(
            nslora_schedule, switch_patience, getattr(self.bare_model, "schedule_alias", None)
        )
        if self.nslora_schedule == "from_start" and self._adapter_kind() == "nslora":
            set_ns_active(self.bare_model, True)
        if self.lr_scheduler is not None:
            logger.info("well-upao trainers schedule the LR per step; the harness's epoch scheduler is ignored")
            self.lr_scheduler = None
        self.validation = validation or well_validation
        self.loss = loss
        loss.bind(self)

    # ------------------------------------------------------------------ helpers
    @property
    def bare_model(self) -> torch.nn.Module:
        return unwrap(self.model)

    def batch_frames(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Input and output frames of a batch concatenated in time: ``(B, T_in + T_out, *space, C)``."""
        return torch.cat([batch["input_fields"], batch["output_fields"]], dim=1).to(self.device)

    def require_backbone(self) -> None:
        """The shifted loss needs a well-upao backbone (18 slots, ``forward_sequence``)."""
        if not hasattr(self.bare_model, "forward_sequence"):
            raise TypeError(
                f"{type(self.loss).__name__} needs a well-upao backbone (model=na, na_lora or na_nslora); "
                f"got {type(self.bare_model).__name__}. Train neural-operator baselines with trainer=supervised "
                "or trainer=upao (or experiment=fno / tfno / unet_classic / unet_convnext)."
            )

    def slot_mask(self) -> torch.Tensor:
        model = self.bare_model
        if hasattr(model, "slot_mask"):
            return model.slot_mask(self.device)
        return torch.ones(N_SLOTS, device=self.device)

    def _ensure_scheduler(self, steps_per_epoch: int) -> None:
        if self.step_scheduler is not None or self.optimizer is None:
            return
        total = max(1, steps_per_epoch * self.max_epoch)
        base_lr = self.optimizer.param_groups[0]["lr"]
        if "initial_lr" not in self.optimizer.param_groups[0]:
            for group in self.optimizer.param_groups:
                group["initial_lr"] = group["lr"]
        else:
            base_lr = self.optimizer.param_groups[0]["initial_lr"]
        ratio = min(1.0, self.lr_min / base_lr) if base_lr > 0 else 0.0
        # short runs: never spend more than half of the steps warming up
        warmup = max(1, min(self.warmup_steps, total // 2))
        self.step_scheduler = LambdaLR(self.optimizer, lambda s: warmup_cosine(s, warmup, total, ratio))
        if self._scheduler_state is not None:
            self.step_scheduler.load_state_dict(self._scheduler_state)
            for group, lr in zip(self.optimizer.param_groups, self.step_scheduler.get_last_lr(), strict=True):
                group["lr"] = lr  # constructing the scheduler reset it to the first step's

    # ------------------------------------------------------------------ training
    def train_one_epoch(self, epoch: int, dataloader) -> tuple[float, dict[str, Any]]:
        """One epoch of optimizer steps (continuing an interrupted epoch from its resume point)."""
        self.model.train()
        batches = len(dataloader) if self.epoch_steps is None else min(len(dataloader), self.epoch_steps)
        self._ensure_scheduler(batches)
        resumed = self.resume_point if self.resume_point and self.resume_point["epoch"] == epoch else None
        self.resume_point = None
        done = resumed["batches"] if resumed else 0
        if done:
            skip_batches(dataloader, done)
        totals: dict[str, float] = dict(resumed["totals"]) if resumed else {}
        epoch_loss = resumed["loss_sum"] if resumed else 0.0
        steps = done
        start = time.time()
        bar = tqdm(
            dataloader, desc=f"epoch {epoch}/{self.max_epoch}", total=batches, leave=False, disable=not self.progress
        )
        for batch in bar:
            if self.should_stop() or steps >= batches:
                break
            steps += 1
            with torch.autocast(self.device.type, enabled=self.enable_amp, dtype=self.amp_type):
                loss, logs = self.loss(batch)
            if not torch.isfinite(loss):
                raise FloatingPointError(self.describe_non_finite(batch, epoch, loss))
            self.optimizer.zero_grad(set_to_none=True)
            self.grad_scaler.scale(loss).backward()
            if self.grad_clip > 0:
                self.grad_scaler.unscale_(self.optimizer)
                logs["grad_norm"] = float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.grad_clip))
            self.grad_scaler.step(self.optimizer)
            self.grad_scaler.update()
            if self.step_scheduler is not None:
                self.step_scheduler.step()
            self.global_step += 1
            epoch_loss += loss.item()
            for key, value in logs.items():
                totals[key] = totals.get(key, 0.0) + float(value)
            bar.set_postfix(loss=f"{loss.item():.3e}")
            if self.mid_epoch_checkpoint_due():
                self.save_mid_epoch(epoch, steps, epoch_loss, totals)
        steps = max(steps, 1)
        epoch_loss /= steps
        if self.is_distributed and dist.is_initialized():  # log the mean over processes, as one process would see
            mean = torch.tensor(epoch_loss, device=self.device)
            dist.all_reduce(mean, op=dist.ReduceOp.AVG)
            epoch_loss = float(mean)
        logs = {f"train_{k}": v / steps for k, v in totals.items()}
        logs["train_loss"] = epoch_loss
        logs["time_per_train_iter"] = (time.time() - start) / max(steps - done, 1)
        logs["lr"] = self.optimizer.param_groups[0]["lr"]
        logger.info(f"epoch {epoch}: train loss {epoch_loss:.4e} lr {logs['lr']:.2e}")
        return epoch_loss, logs

    def mid_epoch_checkpoint_due(self) -> bool:
        by_steps = self.checkpoint_steps is not None and self.global_step % self.checkpoint_steps == 0
        by_time = self.checkpoint_seconds is not None and time.time() - self.last_checkpoint >= self.checkpoint_seconds
        return by_steps or by_time

    def save_mid_epoch(self, epoch: int, batches: int, loss_sum: float, totals: dict[str, float]) -> None:
        """``recent.pt`` with the epoch counted as not finished and where it stopped (``train.resume``)."""
        self.resume_point = {"epoch": epoch, "batches": batches, "loss_sum": loss_sum, "totals": dict(totals)}
        try:
            self.save_model(epoch - 1, self.last_val_loss, os.path.join(self.checkpoint_folder, "recent.pt"))
        finally:
            self.resume_point = None
        self.last_checkpoint = time.time()

    def describe_non_finite(self, batch: dict, epoch: int, loss: torch.Tensor) -> str:
        """One line: where a non-finite loss came from (the samples with non-finite data, by file, trajectory and
        time, and their fields), or that the data is finite and the optimisation diverged."""
        where = f"non-finite training loss ({loss.item()}) at epoch {epoch}, step {self.global_step + 1}"
        describe = getattr(self.datamodule.train_dataset, "describe_index", None)
        indices = batch.get("sample_index")
        names = [n for names in self.dset_metadata.field_names.values() for n in names]
        bad = []
        for row in range(batch["input_fields"].shape[0]):
            frames = torch.cat([batch["input_fields"][row], batch["output_fields"][row]])
            finite = torch.isfinite(frames).reshape(-1, frames.shape[-1]).all(0)
            if not finite.all():
                sample = describe(int(indices[row])) if describe and indices is not None else f"sample {row}"
                channels = [names[c] if c < len(names) else str(c) for c in (~finite).nonzero().flatten().tolist()]
                bad.append(f"{sample} ({', '.join(channels)})")
        if bad:
            return f"{where}: non-finite values in {'; '.join(bad[:3])}{' ...' if len(bad) > 3 else ''}"
        samples = [describe(int(i)) for i in indices[:3]] if describe and indices is not None else []
        return f"{where}; the batch's data is finite ({'; '.join(samples)}): the optimisation diverged (lower the lr)"

    def out_of_time(self) -> bool:
        return self.deadline is not None and time.time() > self.deadline

    def should_stop(self) -> bool:
        """Past the wall-clock budget or the step budget: training ends, then validates and tests as usual."""
        return self.out_of_time() or (self.max_steps is not None and self.global_step >= self.max_steps)

    def after_validation(self, epoch: int, validation_loss: float, improved: bool) -> dict[str, Any]:
        """Hook run after each validation; returns values to log. Here: the paper's LoRA -> NSLoRA switch.

        With ``adapter.kind=nslora`` and ``schedule=warmup`` the adapters run the standard LoRA forward until the
        selection criterion has not improved for ``switch_patience`` validations, then switch to the NS
        forward, keeping A, B and the optimizer state. ``||DeltaW||`` is logged on both sides of the switch
        (the two parametrisations give different norms, paper-decisions.md point 4), and the early-stopping
        counter restarts.
        """
        if self._adapter_kind() != "nslora" or self.nslora_schedule != "warmup" or ns_active(self.bare_model):
            return {}
        if self.epochs_without_improvement < self.switch_patience:
            return {}
        before = sum(delta_norms(self.bare_model).values())
        set_ns_active(self.bare_model, True)
        after = sum(delta_norms(self.bare_model).values())
        self.epochs_without_improvement = 0
        logger.info(
            f"epoch {epoch}: switching adapters LoRA -> NSLoRA after {self.switch_patience} validations without "
            f"improvement; sum of ||DeltaW||_F {before:.4e} -> {after:.4e}"
        )
        return {"nslora_switch_epoch": epoch, "delta_w_norm_before_switch": before, "delta_w_norm_after_switch": after}

    def _adapter_kind(self) -> str | None:
        spec = getattr(self.bare_model, "config", {}).get("adapter")
        return spec["kind"] if spec and adapter_layers(self.bare_model) else None

    def train(self):
        """Epochs of training, validation (early stopping, the after-validation hook, ``best.pt``), ``recent.pt``
        and a ``metrics.jsonl`` line each, then the test split."""
        if self.starting_epoch > self.max_epoch:
            logger.warning(
                f"the run already finished its {self.max_epoch} epochs (resumed from its recent.pt); nothing to "
                "train. Raise trainer.epochs, or start a new run with auto_resume=false."
            )
            return
        self.started = time.time()
        if self.max_seconds is not None:
            self.deadline = time.time() + self.max_seconds
        self.forget_unfinished_epochs()
        train_loader = self.datamodule.train_dataloader()
        val_loss = self.last_val_loss = self.starting_val_loss
        epoch = self.starting_epoch
        if self.validate_start and self.global_step == 0 and self.best_val_loss is None:
            self.validate_untrained()
        for epoch in range(self.starting_epoch, self.max_epoch + 1):
            if hasattr(train_loader, "set_epoch"):  # a mixture draws its batches per epoch
                train_loader.set_epoch(epoch)
            elif hasattr(getattr(train_loader, "sampler", None), "set_epoch"):  # a per-epoch order
                train_loader.sampler.set_epoch(epoch)
            _, logs = self.train_one_epoch(epoch, train_loader)
            last = epoch == self.max_epoch or self.should_stop()
            stop = False
            if epoch % self.val_frequency == 0 or last:
                val_loss, val_logs = self.validation(self, "valid", last, epoch)
                self.last_val_loss = val_loss
                improved = self.best_val_loss is None or val_loss < self.best_val_loss
                if improved:
                    self.best_val_loss = val_loss
                    self.epochs_without_improvement = 0
                    self.save_model(epoch, val_loss, os.path.join(self.checkpoint_folder, "best.pt"))
                else:
                    self.epochs_without_improvement += 1
                logs |= val_logs | {"valid": val_loss, "best_valid": self.best_val_loss}
                logs |= self.after_validation(epoch, val_loss, improved)
                logger.info(f"epoch {epoch}: validation criterion {val_loss:.4e} (best {self.best_val_loss:.4e})")
                stop = 0 < self.patience <= self.epochs_without_improvement
            if epoch % self.rollout_val_frequency == 0 or last or stop:
                logs |= self.validation(self, "rollout_valid", last or stop, epoch)[1]
            # the epoch's line first, then the checkpoint that counts the epoch as done: a run killed in between
            # redoes the epoch, whose line forget_unfinished_epochs then removes (never two lines for one epoch)
            self.record(logs | {"epoch": epoch, "step": self.global_step, "seconds": time.time() - self.started})
            self.save_model(epoch, val_loss, os.path.join(self.checkpoint_folder, "recent.pt"))
            self.last_checkpoint = time.time()
            if self.checkpoint_frequency >= 1 and epoch % self.checkpoint_frequency == 0:
                self.save_model(epoch, val_loss, os.path.join(self.checkpoint_folder, f"checkpoint_{epoch}.pt"))
            if stop:
                logger.info(f"early stopping at epoch {epoch}: no improvement for {self.patience} validations")
                break
            if self.should_stop():
                logger.info(f"stopping after epoch {epoch}: the step or time budget is spent")
                break
        test_loss, test_logs = self.validation(self, "test", True, epoch + 1000)
        test_logs |= self.validation(self, "rollout_test", True, epoch + 1000)[1]
        if test_loss is not None:
            self.record(test_logs | {"test": test_loss, "epoch": epoch})
            logger.info(f"test criterion {test_loss:.4e}")

    def validate_untrained(self) -> None:
        """``trainer.validate_start``: the model as it starts (the pretrained backbone, or the prediction base
        itself while a zero-started correction is untrained) is the first candidate of the selection, so a run
        whose training never improves the criterion returns its starting point (``best.pt`` of epoch 0)."""
        val_loss, _ = self.validation(self, "valid", False, 0)
        self.best_val_loss = self.last_val_loss = val_loss
        self.save_model(0, val_loss, os.path.join(self.checkpoint_folder, "best.pt"))
        logger.info(f"epoch 0 (before training): validation criterion {val_loss:.4e}")

    def validation_loop(self, dataloader, valid_or_test: str = "valid", full: bool = False, epoch: int = 0):
        """The Well's validation of a loader; on the validation split also the loss's own (which, when it has a
        criterion, becomes the selection criterion)."""
        loss, logs = super().validation_loop(dataloader, valid_or_test, full, epoch)
        if valid_or_test == "valid":
            selection, extra = self.loss.validate(dataloader, full)
            logs |= extra
            if selection is not None:
                loss = selection
        return loss, logs

    def initialize_from(self, path: str) -> None:
        """``trainer.init_from``: start from another run's weights. One-frame models of another dataset get their
        channel-facing layers re-shaped (``well_upao.models.transfer``); our backbone loads them as they are (its
        18 slots are the same for every dataset)."""
        from well_upao.models.checkpoint import clean_state_dict, read_checkpoint
        from well_upao.models.transfer import adapt_state_dict

        payload = read_checkpoint(path)
        state = clean_state_dict(payload["state_dict"])
        model = self.bare_model
        if hasattr(model, "forward_sequence"):
            model.load_state_dict(state)
            logger.info(f"started from {path} ({len(state)} tensors)")
            return
        meta = self.dset_metadata
        source = payload["model"].get("harness_args") or {}
        if not source.get("dim_out"):
            raise ValueError(f"{path} does not say how many channels its model had (not a harness model checkpoint)")
        history = self.datamodule.train_dataset.n_steps_input
        c_src, constants = int(source["dim_out"]), meta.n_constant_fields
        if int(source["dim_in"]) != history * c_src + constants:
            raise ValueError(
                f"{path} read {source['dim_in']} input channels, not {history} steps of its {c_src} channels "
                f"+ {constants} constants: train with the same history (data.n_steps_input)"
            )
        adapted, changed = adapt_state_dict(state, model.state_dict(), c_src, meta.n_fields, history, constants)
        model.load_state_dict(adapted)
        logger.info(
            f"started from {path} ({payload['model'].get('dataset')}, {c_src} channels -> {meta.n_fields}); "
            f"re-shaped along the channel axis: {', '.join(changed) or 'nothing'}"
        )

    # ------------------------------------------------------------------ checkpoints
    def model_description(self) -> dict[str, Any]:
        """How the harness built the model: dataset, formatter, constructor arguments, and its Hydra node
        (from the run's ``extended_config.yaml``) for models without their own stored config. A datamodule that
        is not one Well dataset (a mixture) describes itself instead (``checkpoint_info``)."""
        if hasattr(self.datamodule, "checkpoint_info"):
            return {}
        meta = self.dset_metadata
        history = self.datamodule.train_dataset.n_steps_input
        description = {
            "dataset": meta.dataset_name,
            "formatter": self.formatter_name,
            "harness_args": {
                "n_spatial_dims": meta.n_spatial_dims,
                "spatial_resolution": list(meta.spatial_resolution),
                "dim_in": history * meta.n_fields + meta.n_constant_fields,
                "dim_out": meta.n_fields,
            },
        }
        config_file = os.path.join(os.path.dirname(self.checkpoint_folder), "extended_config.yaml")
        if not getattr(self.bare_model, "config", None) and os.path.isfile(config_file):
            from omegaconf import OmegaConf

            run_config = OmegaConf.load(config_file)
            if run_config.get("model") is not None:
                description["hydra"] = resolved_model_node(run_config)
        return description

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
            scheduler_state=self.step_scheduler.state_dict() if self.step_scheduler else None,
            validation_loss=validation_loss,
            best_validation_loss=self.best_val_loss,
            extra_train={
                "global_step": self.global_step,
                "init_from": self.init_from,
                "epochs_without_improvement": self.epochs_without_improvement,
                "resume": self.resume_point,
                "data": getattr(self.datamodule, "settings", None),
                **self.loss.checkpoint_info(),
                **getattr(self.datamodule, "checkpoint_info", dict)(),
            },
            extra_model=self.model_description(),
        )

    def save_model(self, epoch: int, validation_loss: float, output_path: str) -> None:
        if is_sharded(self.model):  # every process writes its shards; rank 0 the consolidated file
            return sharded_checkpoint.save(self, epoch, validation_loss, output_path)
        if is_main_process():
            save_checkpoint(output_path, self.checkpoint_payload(epoch, validation_loss))

    def load_checkpoint(self, checkpoint_path: str) -> None:
        logger.info(f"resuming from {checkpoint_path}")
        if not os.path.isfile(checkpoint_path):
            raise CheckpointError(f"checkpoint {checkpoint_path} does not exist")
        try:
            payload = torch.load(checkpoint_path, map_location="cpu", weights_only=False)
        except Exception as error:  # torch raises many types for damaged files
            raise CheckpointError(f"cannot resume from {checkpoint_path}: {type(error).__name__}: {error}") from error
        if not isinstance(payload, dict):
            raise CheckpointError(f"cannot resume from {checkpoint_path}: it holds a {type(payload).__name__}")
        optimizer_state = payload.get("optimizer_state_dit")
        if sharded_checkpoint.restore(self.model, self.optimizer, payload, checkpoint_path):
            optimizer_state = None  # a sharded run's weights and optimizer state (or a sharded model's weights)
        elif payload.get("format") == "well-upao":
            load_state(self.bare_model, payload, checkpoint_path)
        elif "model_state_dict" in payload:  # a checkpoint of the Well's own trainer
            self.bare_model.load_state_dict(clean_state_dict(payload["model_state_dict"]))
        else:
            raise CheckpointError(f"{checkpoint_path} has no model weights")
        if self.optimizer is not None and optimizer_state is not None:
            self.optimizer.load_state_dict(optimizer_state)
        train = payload.get("train", {})
        self._scheduler_state = train.get("scheduler")
        self.global_step = int(train.get("global_step", 0))
        self.best_val_loss = payload.get("best_validation_loss")
        self.starting_val_loss = payload.get("validation_loss") or float("inf")
        self.starting_epoch = int(payload.get("epoch", 0)) + 1
        self.epochs_without_improvement = int(train.get("epochs_without_improvement", 0))
        self.resume_point = train.get("resume")
        if self.resume_point:
            logger.info(f"continuing epoch {self.resume_point['epoch']} after {self.resume_point['batches']} batches")

    def forget_unfinished_epochs(self) -> None:
        """Drop ``metrics.jsonl`` lines of epochs the checkpoint does not count as done (a run killed between
        writing an epoch's line and its checkpoint), so that a resumed run logs every epoch once."""
        path = os.path.join(self.artifact_folder, "metrics.jsonl")
        if not is_main_process() or not os.path.isfile(path):
            return
        with open(path) as stream:
            lines = stream.readlines()
        kept = [line for line in lines if json.loads(line).get("epoch", 0) < self.starting_epoch]
        if len(kept) != len(lines):
            atomic_write_text(Path(path), "".join(kept))

    def record(self, values: dict[str, Any]) -> None:
        """Log to wandb (when on) and append one JSON line to ``<artifact folder>/metrics.jsonl``."""
        if not is_main_process():
            return
        clean = {k: (v.item() if isinstance(v, torch.Tensor) else v) for k, v in values.items()}
        if wandb.run is not None:
            wandb.log(clean, step=values["epoch"])
        with open(os.path.join(self.artifact_folder, "metrics.jsonl"), "a") as stream:
            stream.write(json.dumps(clean, default=float) + "\n")
