"""The one training loop: The Well's ``Trainer`` with the paper's protocol, and the run's one composition root.

``Trainer`` runs epochs of optimizer steps and validations, writes ``best.pt`` as the selection decides, stops
early, and resumes from ``recent.pt``. It builds the run's ``RunContext`` and composes the run from it
(``compose``): the loss (``shifted``, ``supervised``; ``upao`` with its label-free validation and judge,
``trainers/upao.py``); none of them holds the loop. Its concerns live beside it: the selection (``selection``, asking
the judge, ``guard``), its settings in typed groups (``settings``), the per-step LR schedule and budgets
(``schedule``), its files (``run_files``, ``records``), the LoRA -> NSLoRA switch (``switch``), the diagnosis of a
non-finite loss (``diagnosis``) and ``trainer.init_from`` (``warm_start``). The validation is the Well's on its
loaders by default; pretraining validates each dataset of its mixture (``trainers/pretraining.py``).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from tqdm.auto import tqdm

from well_upao.harness import metrics_file
from well_upao.harness.well_trainer import WellTrainer, trainer_argument
from well_upao.models.checkpoint import build_payload, unwrap
from well_upao.models.kinds import is_sequence_model
from well_upao.predict.classical import classical_prior
from well_upao.trainers import records
from well_upao.trainers.diagnosis import describe_non_finite
from well_upao.trainers.guard import Guard, Validated
from well_upao.trainers.run_context import Criterion, RunContext
from well_upao.trainers.run_files import RunFiles, device_facts
from well_upao.trainers.schedule import Budget, CheckpointCadence, epoch_scheduler, step_scheduler
from well_upao.trainers.selection import Decision, Selection
from well_upao.trainers.settings import TrainerSettings
from well_upao.trainers.sharding import ShardingOptions, prepare_in_process
from well_upao.trainers.switch import AdapterSwitch, resolve_nslora_schedule
from well_upao.trainers.training_loss import TrainingLoss, kept_prior
from well_upao.trainers.warm_start import initialize_from

logger = logging.getLogger(__name__)

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
    """The Well's ``Trainer`` with a warm-up + cosine LR schedule per step (the paper's) or per epoch (the Well's),
    optional gradient clipping, our checkpoints, and a pluggable ``loss`` (a ``TrainingLoss``) and
    ``validation`` (default ``well_validation``).

    ``settings``: the loop's settings in typed groups (``trainers.settings.TrainerSettings``: the protocol's name,
    the schedule and clipping, when training stops, checkpoints inside epochs, the NSLoRA schedule, where training
    starts, the rollout each loss trains over); without it, the flat ``trainer.*`` keys of the Hydra config among
    ``kwargs`` are sorted into them (``TrainerSettings.split``) and the rest go to the Well's ``Trainer``. The run's
    files are an object the loop holds (``files``, ``trainers.run_files.RunFiles``). Every epoch's logs are also
    appended to ``<artifact folder>/metrics.jsonl`` (``trainers/records.py``).
    """

    def __init__(
        self,
        *args,
        loss: TrainingLoss | None = None,
        validation: Validation | None = None,
        settings: TrainerSettings | None = None,
        **kwargs,
    ):
        if settings is None:
            settings, kwargs = TrainerSettings.split(kwargs)
        #: every setting of the loop, in typed groups (``trainers/settings.py``)
        self.settings: TrainerSettings = settings
        #: the steps each training loss rolls the model out over (``trainers/rollout.py``)
        self.rollout = settings.rollout
        stopping = settings.stopping
        self.cadence = CheckpointCadence.of(
            settings.checkpoints.checkpoint_steps, settings.checkpoints.checkpoint_minutes
        )
        self.budget = Budget.of(stopping.max_minutes, stopping.max_steps, stopping.budget_clock)
        #: where an interrupted epoch stopped (from recent.pt): epoch, batches done, the epoch's running sums
        self.resume_point: dict | None = None
        self.last_val_loss = float("inf")
        self.started = time.time()
        #: which candidate best.pt holds and why (``trainers/selection.py``), before the Well's trainer sets
        #: ``best_val_loss`` (a view of it)
        self.selection = Selection(patience=stopping.patience)
        #: the ``train`` section of the checkpoint this run resumed from (read by the loss when it is attached)
        self.resumed_train: dict[str, Any] = {}
        self.scheduler = None
        self._scheduler_state: dict | None = None
        self.global_step = 0
        #: the run's checkpoints and metrics.jsonl (the Well's constructor may resume from a checkpoint already)
        self.files = RunFiles(
            *(trainer_argument(name, args, kwargs) for name in ("checkpoint_folder", "artifact_folder"))
        )
        resuming = bool(kwargs.get("checkpoint_path"))
        sharding = ShardingOptions.pop_from(kwargs)  # trainer.strategy / mixed_precision / activation_checkpointing
        super().__init__(*args, **kwargs)
        if not self.rollout.one_step:
            self.rollout.check_frames(self.datamodule.train_dataset.n_steps_output)
        prepare_in_process(self.model, sharding)
        if settings.start.init_from and not resuming:
            meta = self.dset_metadata
            history = self.datamodule.train_dataset.n_steps_input
            initialize_from(self.bare_model, settings.start.init_from, meta.n_fields, meta.n_constant_fields, history)
        self.switch = self.adapter_switch()
        if self.lr_scheduler is not None:
            logger.info("well-upao trainers schedule the LR per step; the harness's epoch scheduler is ignored")
            self.lr_scheduler = None
        self.validation = validation or well_validation
        #: the last validation's label-free measurements (``None``: the run has no criterion of its own)
        self.validated: Validated | None = None
        #: the run as typed values, for the parts composed from it (``trainers/run_context.py``)
        self.run = self.run_context()
        #: the training loss; the run's own label-free validation, whose value is the selection's criterion
        #: (``None``: the Well's, its ``loss_fn`` on the validation rollout); the run's judge (the guard and the prior
        #: rule, which the selection asks; ``None`` without one)
        self.loss, self.criterion, self.judge = self.compose(self.run, loss)

    def adapter_switch(self) -> AdapterSwitch:
        """The LoRA -> NSLoRA switch of ``trainer.nslora_schedule`` (``trainers/switch.py``)."""
        adapters = self.settings.adapters
        schedule, patience = resolve_nslora_schedule(
            adapters.nslora_schedule, adapters.switch_patience, adapters.legacy
        )
        return AdapterSwitch(self.bare_model, schedule, patience)

    def run_context(self) -> RunContext:
        """The run as the parts composed from it read it (after the Well's constructor built model, data, device)."""
        return RunContext(
            model=self.model,
            bare_model=self.bare_model,
            device=self.device,
            datamodule=self.datamodule,
            metadata=self.dset_metadata,
            rollout=self.rollout,
            formatter_name=self.formatter_name,
            formatter=self.formatter,
            loss_fn=self.loss_fn,
            well_rollout=self.rollout_model,
            checkpoint_folder=self.checkpoint_folder,
            short_validation_length=self.short_validation_length,
            validate_start=self.settings.start.validate_start,
            resumed=dict(self.resumed_train),
        )

    def compose(
        self, run: RunContext, loss: TrainingLoss | None
    ) -> tuple[TrainingLoss, Criterion | None, Guard | None]:
        """The run's parts: here the ``loss`` it was handed, attached to ``run``, with the Well's criterion and no
        judge; a trainer whose loss brings its own validation and judge builds them here (``trainers/upao.py``)."""
        if loss is None:
            raise TypeError(f"{type(self).__name__} needs a training loss (loss=...)")
        if loss.needs_backbone:
            self.require_backbone(loss)
        loss.attach(run)
        return loss, None, None

    # ------------------------------------------------------------------ helpers
    @property
    def best_val_loss(self) -> float | None:
        """The selected candidate's criterion (the Well's trainer's name for it; ``Selection`` holds it)."""
        return self.selection.best_value

    @best_val_loss.setter
    def best_val_loss(self, value: float | None) -> None:
        self.selection.best_value = value

    @property
    def epochs_without_improvement(self) -> int:
        return self.selection.without_improvement

    @epochs_without_improvement.setter
    def epochs_without_improvement(self, value: int) -> None:
        self.selection.without_improvement = value

    @property
    def bare_model(self) -> torch.nn.Module:
        return unwrap(self.model)

    def require_backbone(self, loss: TrainingLoss) -> None:
        """The shifted loss needs a well-upao backbone (18 slots, ``forward_sequence``)."""
        if not is_sequence_model(self.bare_model):
            raise TypeError(
                f"{type(loss).__name__} needs a well-upao backbone (model=na, na_lora or na_nslora); "
                f"got {type(self.bare_model).__name__}. Train neural-operator baselines with trainer=supervised "
                "or trainer=upao (or experiment=fno / tfno / unet_classic / unet_convnext)."
            )

    def should_stop(self) -> bool:
        """Past the wall-clock budget or the step budget: training ends, then validates and tests as usual."""
        return self.budget.spent(self.global_step)

    # ------------------------------------------------------------------ training
    def train_one_epoch(self, epoch: int, dataloader) -> tuple[float, dict[str, Any]]:
        """One epoch of optimizer steps (continuing an interrupted epoch from its resume point)."""
        self.model.train()
        epoch_steps = self.settings.stopping.epoch_steps
        per_step = self.settings.schedule.lr_schedule == "per_step"
        batches = len(dataloader) if epoch_steps is None else min(len(dataloader), epoch_steps)
        if self.scheduler is None and self.optimizer is not None:
            self.scheduler = self.build_scheduler(batches)
        epoch_lr = self.optimizer.param_groups[0]["lr"]
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
            dataloader,
            desc=f"epoch {epoch}/{self.max_epoch}",
            total=batches,
            leave=False,
            disable=not self.settings.progress,
        )
        for batch in bar:
            if self.should_stop() or steps >= batches:
                break
            steps += 1
            with torch.autocast(self.device.type, enabled=self.enable_amp, dtype=self.amp_type):
                loss, logs = self.loss(batch)
            if not torch.isfinite(loss):
                names = [n for names in self.dset_metadata.field_names.values() for n in names]
                describe = getattr(self.datamodule.train_dataset, "describe_index", None)
                raise FloatingPointError(describe_non_finite(batch, loss, epoch, self.global_step + 1, names, describe))
            self.optimizer_step(loss, logs)
            epoch_loss += loss.item()
            for key, value in logs.items():
                totals[key] = totals.get(key, 0.0) + float(value)
            bar.set_postfix(loss=f"{loss.item():.3e}")
            if self.cadence.due(self.global_step):
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
        logs["lr"] = self.optimizer.param_groups[0]["lr"] if per_step else epoch_lr
        if self.scheduler is not None and not per_step:
            self.scheduler.step()  # the next epoch's rate (the Well steps its scheduler after each epoch)
        logger.info(f"epoch {epoch}: train loss {epoch_loss:.4e} lr {logs['lr']:.2e}")
        return epoch_loss, logs

    def optimizer_step(self, loss: torch.Tensor, logs: dict[str, Any]) -> None:
        """One optimizer step on ``loss``: gradient clipping (its norm into ``logs``), the per-step schedule."""
        schedule = self.settings.schedule
        self.optimizer.zero_grad(set_to_none=True)
        self.grad_scaler.scale(loss).backward()
        if schedule.grad_clip > 0:
            self.grad_scaler.unscale_(self.optimizer)
            logs["grad_norm"] = float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), schedule.grad_clip))
        self.grad_scaler.step(self.optimizer)
        self.grad_scaler.update()
        if self.scheduler is not None and schedule.lr_schedule == "per_step":
            self.scheduler.step()
        self.global_step += 1

    def build_scheduler(self, batches_per_epoch: int):
        """The LR schedule of ``trainer.lr_schedule`` over the run (restored from a resumed checkpoint's state)."""
        s, state = self.settings.schedule, self._scheduler_state
        if s.lr_schedule == "per_epoch":
            ratios = (s.warmup_start_ratio, s.min_lr_ratio)
            return epoch_scheduler(self.optimizer, self.max_epoch, s.warmup_epochs, *ratios, state)
        total = s.schedule_steps or batches_per_epoch * self.max_epoch
        return step_scheduler(self.optimizer, total, s.warmup_steps, s.lr_min, state, s.start_step, s.rewarm_steps)

    def after_validation(self, epoch: int, validation_loss: float, improved: bool) -> dict[str, Any]:
        """Hook run after each validation; returns values to log. Here: the paper's LoRA -> NSLoRA switch
        (``trainers/switch.py``), after which the early-stopping count restarts."""
        logs = self.switch.after_validation(epoch, self.epochs_without_improvement)
        if logs:
            self.epochs_without_improvement = 0
        return logs

    def place_best(self, epoch: int, validation_loss: float, decision: Decision) -> None:
        """Write ``best.pt`` as the selection decided: the model as it is, or predicting with the prior the judge chose
        (``NATransformer.set_prior``: the window's extrapolation, carried in the state dict); the checkpoint records
        the selection's state."""
        best_path = self.files.path("best.pt")
        if decision.save == "candidate":
            self.save_model(epoch, validation_loss, best_path)
        elif decision.save == "prior":
            with kept_prior(self.bare_model, classical_prior(decision.prior)):
                self.save_model(epoch, validation_loss, best_path)

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
        self.budget.start()
        metrics_file.forget_unfinished_epochs(self.artifact_folder, self.starting_epoch)
        train_loader = self.datamodule.train_dataloader()
        val_loss = self.last_val_loss = self.starting_val_loss
        epoch = self.starting_epoch
        if self.settings.start.validate_start and self.global_step == 0 and self.best_val_loss is None:
            with self.budget.excluded():
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
                val_loss, val_logs = self.validate_epoch(epoch, last)
                logs |= val_logs
                stop = self.selection.should_stop
            if epoch % self.rollout_val_frequency == 0 or last or stop:
                with self.budget.excluded():
                    logs |= self.validation(self, "rollout_valid", last or stop, epoch)[1]
            # the epoch's line first, then the checkpoint that counts the epoch as done: a run killed in between
            # redoes the epoch, whose line forget_unfinished_epochs then removes (never two lines for one epoch)
            self.record(logs | {"epoch": epoch, "step": self.global_step, "seconds": time.time() - self.started})
            self.save_model(epoch, val_loss, self.files.path("recent.pt"))
            self.cadence.mark()
            if self.checkpoint_frequency >= 1 and epoch % self.checkpoint_frequency == 0:
                self.save_model(epoch, val_loss, self.files.path(f"checkpoint_{epoch}.pt"))
            if stop:
                patience = self.selection.patience
                logger.info(f"early stopping at epoch {epoch}: no improvement for {patience} validations")
                break
            if self.should_stop():
                logger.info(f"stopping after epoch {epoch}: the step or time budget is spent")
                break
        test_loss, test_logs = self.validation(self, "test", True, epoch + 1000)
        test_logs |= self.validation(self, "rollout_test", True, epoch + 1000)[1]
        if test_loss is not None:
            self.record(test_logs | {"test": test_loss, "epoch": epoch})
            logger.info(f"test criterion {test_loss:.4e}")

    def validate_epoch(self, epoch: int, last: bool) -> tuple[float, dict[str, Any]]:
        """An epoch's validation (full on the last epoch unless the selection compares on the same batches): the
        selection's decision on the candidate, ``best.pt`` as it decides, the after-validation hook; returns the
        criterion and the line's validation keys."""
        full = last and self.criterion is None  # a run's own criterion compares every candidate on the same batches
        with self.budget.excluded():
            val_loss, val_logs = self.validation(self, "valid", full, epoch)
        self.last_val_loss = val_loss
        candidate = self.validated.candidate if self.validated is not None else None
        decision = self.selection.consider(epoch, val_loss, candidate, self.judge)
        self.place_best(epoch, val_loss, decision)
        logs = {"guard_rejected": bool(decision.guard_reason), "guard_reason": decision.guard_reason}
        logs |= {"guard_unchecked": decision.guard_unchecked}
        logs |= val_logs | {"valid": val_loss, "best_valid": self.best_val_loss} | self.selection.facts()
        logs |= self.after_validation(epoch, val_loss, decision.improved)
        logger.info(f"epoch {epoch}: validation criterion {val_loss:.4e} (best {self.best_val_loss:.4e})")
        return val_loss, logs

    def validate_untrained(self) -> None:
        """``trainer.validate_start``: the model as it starts (the pretrained backbone, or the prediction base
        itself while a zero-started correction is untrained) is the first candidate of the selection, so a run
        whose training never improves the criterion returns its starting point (``best.pt`` of epoch 0). Its
        validation is the epoch-0 line of ``metrics.jsonl``."""
        val_loss, logs = self.validation(self, "valid", False, 0)
        self.last_val_loss = val_loss
        candidate = self.validated.candidate if self.validated is not None else None
        self.place_best(0, val_loss, self.selection.start(val_loss, candidate, self.judge))
        verdict = self.judge.prior_verdict(candidate) if self.judge is not None and candidate is not None else None
        if verdict is not None:
            logger.info(f"epoch 0 (before training): {verdict}")
            logs["prior_verdict"] = verdict
        self.record(
            logs
            | {"valid": val_loss, "best_valid": val_loss, "epoch": 0, "step": 0, "seconds": 0.0}
            | self.selection.facts()
        )
        logger.info(f"epoch 0 (before training): validation criterion {val_loss:.4e}")

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
                "init_from": self.settings.start.init_from,
                **self.selection.state(),
                "resume": self.resume_point,
                **self.protocol_facts(),
                **self.loss.checkpoint_info(),
                **(self.criterion.checkpoint_info() if self.criterion is not None else {}),
                **(self.judge.facts() if self.judge is not None else {}),
                **self.datamodule.checkpoint_info(),
            },
            extra_model=records.model_description(
                self.bare_model, self.datamodule, self.formatter_name, self.checkpoint_folder
            ),
        )

    def protocol_facts(self) -> dict[str, Any]:
        """``protocol`` and ``protocol_settings`` (``TrainerSettings.protocol_facts``, with the loss's)."""
        loss_settings = self.loss.protocol_settings()
        return self.settings.protocol_facts(self.datamodule, self.optimizer, self.max_epoch, loss_settings)

    def save_model(self, epoch: int, validation_loss: float, output_path: str) -> None:
        """Write a checkpoint of the run at ``output_path`` (``RunFiles.save``)."""
        payload = functools.partial(self.checkpoint_payload, epoch, validation_loss)
        self.files.save(self.model, self.optimizer, lambda state: payload(model_state=state), output_path)

    def save_mid_epoch(self, epoch: int, batches: int, loss_sum: float, totals: dict[str, float]) -> None:
        """``recent.pt`` with the epoch counted as not finished and where it stopped (``train.resume``)."""
        self.resume_point = {"epoch": epoch, "batches": batches, "loss_sum": loss_sum, "totals": dict(totals)}
        try:
            self.save_model(epoch - 1, self.last_val_loss, self.files.path("recent.pt"))
        finally:
            self.resume_point = None
        self.cadence.mark()

    def load_checkpoint(self, checkpoint_path: str) -> None:
        """Resume from ``recent.pt`` (``RunFiles.read``): weights, optimizer, LR schedule, step count, selection state
        and an interrupted epoch's resume point."""
        payload = self.files.read(checkpoint_path, self.model, self.bare_model, self.optimizer)
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
        """One ``metrics.jsonl`` line (``RunFiles.record``); the first this process writes also carries the protocol
        (``protocol_facts``), the loss's facts (``TrainingLoss.run_facts``) and the device."""
        self.files.record(values, lambda: self.protocol_facts() | self.run_facts() | device_facts(self.device))

    def run_facts(self) -> dict[str, Any]:
        """What the run's parts decided (the loss's, e.g. an ``auto`` discretisation; whether the guard is on)."""
        facts = self.loss.run_facts()
        if self.judge is not None:
            facts["guard"] = self.judge.enabled
        return facts

    def validation_loop(self, dataloader, valid_or_test: str = "valid", full: bool = False, epoch: int = 0):
        """The Well's validation of a loader; on the validation split also the run's own criterion where it has one
        (its value becomes the selection's criterion, and what it measured goes to the judge: ``Guard.observe``)."""
        loss, logs = super().validation_loop(dataloader, valid_or_test, full, epoch)
        if valid_or_test == "valid" and self.criterion is not None:
            first = self.global_step == 0 and (self.judge is None or self.judge.start_card is None)
            self.validated = self.criterion.validate(dataloader, full, self.global_step, first)
            if self.judge is not None:
                self.judge.observe(self.validated, first)
            logs |= dict(self.validated.logs)
            loss = self.validated.value
        return loss, logs
