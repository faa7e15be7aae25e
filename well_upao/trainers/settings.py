"""The training loop's settings (``trainer.*`` in the Hydra configs), in typed groups.

The harness instantiates a trainer from its flat config (``trainer.warmup_steps=...``); ``TrainerSettings.split``
sorts those keys into the groups below, each a frozen dataclass whose fields are the config keys it takes (the
rollout's are ``trainer.rollout_<field>``), and leaves the rest to the Well's ``Trainer``. The loop
(``trainers/loop.py``) holds the groups and builds its working parts from them: the schedule, the budget, the
checkpoint cadence, the selection's patience, the adapter switch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from well_upao.trainers.rollout import RolloutSettings

#: the learning-rate schedules of ``trainer.lr_schedule`` (``trainers/schedule.py``)
LR_SCHEDULES = ("per_step", "per_epoch")


def _coerce(settings, **kinds) -> None:
    """Set each named field of a frozen ``settings`` to its value as ``kind`` (``None`` kept where it is one)."""
    for name, kind in kinds.items():
        value = getattr(settings, name)
        object.__setattr__(settings, name, value if value is None else kind(value))


@dataclass(frozen=True)
class ScheduleSettings:
    """The learning rate's schedule and the clipping: ``lr_schedule`` (``per_step``: linear warm-up over
    ``warmup_steps`` optimizer steps then cosine to ``lr_min``; ``per_epoch``: the Well's, warm-up over
    ``warmup_epochs`` epochs from ``warmup_start_ratio * lr``, cosine to ``min_lr_ratio * lr`` at the last epoch,
    stepped after each epoch); a per-step schedule spread over several runs (``schedule.step_scheduler``):
    ``schedule_steps`` its total, ``start_step`` where this run starts in it, ``rewarm_steps`` the re-warm of fresh
    optimizer moments (``None``, 0, 0: the run's own epochs); ``grad_clip`` (max gradient norm, ``0`` disables)."""

    lr_schedule: str = "per_step"
    warmup_epochs: int = 5
    warmup_start_ratio: float = 0.1
    min_lr_ratio: float = 0.1
    warmup_steps: int = 200
    lr_min: float = 1e-6
    schedule_steps: int | None = None
    start_step: int = 0
    rewarm_steps: int = 0
    grad_clip: float = 1.0

    def __post_init__(self) -> None:
        if self.lr_schedule not in LR_SCHEDULES:
            raise ValueError(f"trainer.lr_schedule must be one of {LR_SCHEDULES}, got {self.lr_schedule!r}")
        _coerce(self, warmup_epochs=int, warmup_start_ratio=float, min_lr_ratio=float, warmup_steps=int)
        _coerce(self, lr_min=float, schedule_steps=int, start_step=int, rewarm_steps=int, grad_clip=float)

    def protocol(self) -> dict[str, Any]:
        """The schedule's part of the protocol's settings (``TrainerSettings.protocol_facts``)."""
        out: dict[str, Any] = {"lr_schedule": self.lr_schedule}
        if self.lr_schedule == "per_epoch":
            names = ["warmup_epochs", "warmup_start_ratio", "min_lr_ratio"]
        else:  # a schedule spread over runs records its place in it
            names = ["warmup_steps", "lr_min"]
            names += ["schedule_steps", "start_step", "rewarm_steps"] if self.schedule_steps is not None else []
        return out | {name: getattr(self, name) for name in names}


@dataclass(frozen=True)
class StoppingSettings:
    """When training stops: ``patience`` (early stopping after that many validations without improvement of the
    selection criterion, ``0`` disables), ``max_minutes`` (wall-clock budget: training stops at the first step past
    it, then validates and tests as usual; ``budget_clock``: what it counts, ``all`` of the loop's time or only
    ``training``, the validations excluded), ``max_steps`` (stop after that many optimizer steps), ``epoch_steps``
    (end each epoch after that many batches of the shuffled training set: more validations, hence selection and
    switch points, in a short run)."""

    patience: int = 0
    max_minutes: float | None = None
    budget_clock: str = "all"
    max_steps: int | None = None
    epoch_steps: int | None = None

    def __post_init__(self) -> None:
        if self.epoch_steps is not None and int(self.epoch_steps) < 1:
            raise ValueError(f"trainer.epoch_steps must be a positive number of batches, got {self.epoch_steps}")
        _coerce(self, patience=int, epoch_steps=int)


@dataclass(frozen=True)
class CheckpointSettings:
    """``checkpoint_steps`` / ``checkpoint_minutes``: also save ``recent.pt`` inside epochs, every that many steps /
    minutes (rerunning resumes mid-epoch)."""

    checkpoint_steps: int | None = None
    checkpoint_minutes: float | None = None


@dataclass(frozen=True)
class AdapterSettings:
    """Models with NSLoRA adapters: ``nslora_schedule`` (``warmup``: the paper's LoRA warm-up until the criterion
    stalls for ``switch_patience`` validations, then NS; ``from_start``); ``adapter_schedule`` /
    ``adapter_switch_patience``: the model config's earlier names of those two (``model.adapter.schedule`` /
    ``switch_patience``, which the trainer config carries over), used where they are unset."""

    nslora_schedule: str | None = None
    switch_patience: int | None = None
    adapter_schedule: str | None = None
    adapter_switch_patience: int | None = None

    @property
    def legacy(self) -> dict[str, Any]:
        """The earlier names' values that are set, under the names ``resolve_nslora_schedule`` reads."""
        given = {"schedule": self.adapter_schedule, "switch_patience": self.adapter_switch_patience}
        return {key: value for key, value in given.items() if value is not None}


@dataclass(frozen=True)
class StartSettings:
    """Where training starts: ``init_from`` (another run's checkpoint to start from, ``trainers/warm_start.py``;
    a rerun that resumes from ``recent.pt`` ignores it), ``validate_start`` (the untrained model is the first
    candidate of the selection, ``Trainer.validate_untrained``)."""

    init_from: str | None = None
    validate_start: bool = False

    def __post_init__(self) -> None:
        _coerce(self, validate_start=bool)


#: the groups ``TrainerSettings.split`` fills by their fields' names
GROUPS = {
    "schedule": ScheduleSettings,
    "stopping": StoppingSettings,
    "checkpoints": CheckpointSettings,
    "adapters": AdapterSettings,
    "start": StartSettings,
}


@dataclass(frozen=True)
class TrainerSettings:
    """Every setting of the loop, grouped: ``protocol`` (the name of the training protocol the config follows,
    ``paper`` or ``well``: recorded with the settings that change numbers in checkpoints and on the first line of
    ``metrics.jsonl``, ``protocol_facts``, so ``evaluate`` can name it), ``progress`` (the progress bars), and the
    groups (``ScheduleSettings``, ``StoppingSettings``, ``CheckpointSettings``, ``AdapterSettings``,
    ``StartSettings``, and the rollout each loss trains over, ``trainers.rollout.RolloutSettings``)."""

    protocol: str = "paper"
    progress: bool = True
    schedule: ScheduleSettings = field(default_factory=ScheduleSettings)
    stopping: StoppingSettings = field(default_factory=StoppingSettings)
    checkpoints: CheckpointSettings = field(default_factory=CheckpointSettings)
    adapters: AdapterSettings = field(default_factory=AdapterSettings)
    start: StartSettings = field(default_factory=StartSettings)
    rollout: RolloutSettings = field(default_factory=RolloutSettings)

    def __post_init__(self) -> None:
        _coerce(self, protocol=str, progress=bool)

    @classmethod
    def split(cls, config: Mapping[str, Any]) -> tuple[TrainerSettings, dict[str, Any]]:
        """The settings among a flat trainer ``config`` (each group takes the keys named like its fields, the rollout
        ``rollout_<field>``), and the keys left for the Well's ``Trainer``."""
        rest = dict(config)

        def taken(names: Mapping[str, str]) -> dict[str, Any]:
            return {field_name: rest.pop(key) for key, field_name in names.items() if key in rest}

        groups = {name: group(**taken({f.name: f.name for f in fields(group)})) for name, group in GROUPS.items()}
        rollout = RolloutSettings.of(**taken({f"rollout_{f.name}": f.name for f in fields(RolloutSettings)}))
        return cls(**taken({"protocol": "protocol", "progress": "progress"}), rollout=rollout, **groups), rest

    def protocol_facts(self, datamodule, optimizer, epochs: int, loss_settings: Mapping[str, Any]) -> dict[str, Any]:
        """The protocol's name and every setting of the run that changes its numbers (history, normalisation, batch
        size, optimizer, schedule, clipping, objective, epochs, early stopping): ``protocol`` and
        ``protocol_settings`` in checkpoints (``train``) and on the first line of ``metrics.jsonl``."""
        settings: dict[str, Any] = {}
        data = getattr(datamodule, "settings", None) or {}
        for key in ("n_steps_input", "use_normalization", "normalization_type"):
            if key in data:
                settings[key] = data[key]
        settings["batch_size"] = getattr(datamodule, "batch_size", None)
        if optimizer is not None:
            group = optimizer.param_groups[0]
            settings["optimizer"] = type(optimizer).__name__
            settings["lr"] = group.get("initial_lr", group["lr"])
            settings["weight_decay"] = group.get("weight_decay")
        settings |= self.schedule.protocol()
        settings |= {"grad_clip": self.schedule.grad_clip, "epochs": epochs, "patience": self.stopping.patience}
        if not self.rollout.one_step:  # one-step runs keep the settings they always recorded
            settings |= {f"rollout_{k}": v for k, v in vars(self.rollout).items()}
        return {"protocol": self.protocol, "protocol_settings": settings | dict(loss_settings)}
