"""The learning-rate schedules and the budgets of a run.

Two schedules, one per protocol:

* the paper's (appendix "Training Protocol", INTERFACES.md section 6): a per-*step* linear warm-up and a cosine
  decay ``lr -> lr_min`` (with clipping at norm 1.0, in the loop): ``step_scheduler``;
* the Well's released protocol (``trainer=well``): a per-*epoch* linear warm-up from ``start_ratio * lr`` to ``lr``
  over ``warmup_epochs`` epochs, then a cosine from ``lr`` down to ``min_ratio * lr`` at the last epoch, stepped
  once at the end of every epoch (the Well's ``train.py`` builds its ``LinearWarmupCosineAnnealingLR`` with
  ``warmup_start_lr = eta_min = 0.1 lr``, 5 warm-up epochs): ``epoch_scheduler``, whose multiplier
  ``well_epoch_factor`` is that scheduler's closed form (its recursive form gives the same values up to
  rounding; ``tests/trainers/test_schedule.py`` checks both).

``Budget`` ends training at the first step past a wall-clock or step budget; ``CheckpointCadence`` says
when ``recent.pt`` is also written inside an epoch.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch.optim.lr_scheduler import LambdaLR


def warmup_cosine(step: int, warmup_steps: int, total_steps: int, min_ratio: float) -> float:
    """LR multiplier: linear warm-up ``(step + 1) / warmup`` then cosine from 1 down to ``min_ratio``."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
    return min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))


def step_scheduler(
    optimizer: torch.optim.Optimizer,
    total_steps: int,
    warmup_steps: int,
    lr_min: float,
    state: dict | None = None,
    start_step: int = 0,
    rewarm_steps: int = 0,
) -> LambdaLR:
    """The per-step warm-up + cosine schedule of ``optimizer`` over ``total_steps`` optimizer steps, from its
    initial learning rate down to ``lr_min`` (restored from ``state`` when resuming). Short runs never spend more
    than half of their steps warming up.

    A schedule spread over several runs (a backbone pretrained over lent device calls, each resuming from the
    last one's weights without its optimizer moments): ``total_steps`` is the budget of all of them, fixed up front,
    and this run starts at step ``start_step`` of it; its first ``rewarm_steps`` steps ramp linearly up to the
    schedule's rate (``(s + 1) / rewarm_steps`` times it), the fresh moments' warm-up."""
    total = max(1, total_steps)
    group = optimizer.param_groups[0]
    if "initial_lr" not in group:
        for g in optimizer.param_groups:
            g["initial_lr"] = g["lr"]
    base_lr = group["initial_lr"]
    ratio = min(1.0, lr_min / base_lr) if base_lr > 0 else 0.0
    warmup = max(1, min(warmup_steps, total // 2))

    def factor(step: int) -> float:
        rewarm = min(1.0, (step + 1) / rewarm_steps) if rewarm_steps > 0 else 1.0
        return rewarm * warmup_cosine(start_step + step, warmup, total, ratio)

    scheduler = LambdaLR(optimizer, factor)
    if state is not None:
        scheduler.load_state_dict(state)
        for g, lr in zip(optimizer.param_groups, scheduler.get_last_lr(), strict=True):
            g["lr"] = lr  # constructing the scheduler reset it to the first step's
    return scheduler


def well_epoch_factor(
    epochs_done: float, warmup_epochs: int, max_epochs: int, start_ratio: float, min_ratio: float
) -> float:
    """LR multiplier of the epoch after ``epochs_done`` finished epochs under the Well's per-epoch schedule:

    * ``epochs_done < warmup_epochs``: ``start_ratio + epochs_done (1 - start_ratio) / max(1, warmup_epochs - 1)``
      (so the first epoch runs at ``start_ratio`` and the full rate is reached after ``warmup_epochs - 1`` epochs);
    * otherwise ``min_ratio + (1 - min_ratio) (1 + cos(pi (epochs_done - warmup_epochs) / (max_epochs -
      warmup_epochs))) / 2``, reaching ``min_ratio`` after ``max_epochs`` epochs.
    """
    if epochs_done < warmup_epochs:
        return start_ratio + epochs_done * (1.0 - start_ratio) / max(1, warmup_epochs - 1)
    progress = (epochs_done - warmup_epochs) / max(1, max_epochs - warmup_epochs)
    return min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))


def epoch_scheduler(
    optimizer: torch.optim.Optimizer,
    max_epochs: int,
    warmup_epochs: int,
    start_ratio: float,
    min_ratio: float,
    state: dict | None = None,
) -> LambdaLR:
    """The Well's per-epoch warm-up + cosine schedule of ``optimizer`` (``well_epoch_factor`` times its initial
    learning rate); call ``step()`` once after each epoch. ``state``: a saved state to resume from."""
    if warmup_epochs < 0 or max_epochs < 1:
        raise ValueError(f"need warmup_epochs >= 0 and epochs >= 1, got {warmup_epochs} and {max_epochs}")
    for g in optimizer.param_groups:
        g.setdefault("initial_lr", g["lr"])
    scheduler = LambdaLR(
        optimizer, lambda e: well_epoch_factor(e, int(warmup_epochs), int(max_epochs), start_ratio, min_ratio)
    )
    if state is not None:
        scheduler.load_state_dict(state)
        for g, lr in zip(optimizer.param_groups, scheduler.get_last_lr(), strict=True):
            g["lr"] = lr  # constructing the scheduler reset it to the first epoch's
    return scheduler


#: what the wall-clock budget counts: ``all`` (the loop's whole time, validations included) or ``training`` (the
#: time between validations: an equal budget buys equal training whatever the validations cost)
BUDGET_CLOCKS = ("all", "training")


@dataclass
class Budget:
    """Wall-clock (``max_seconds``) and optimizer-step (``max_steps``) budgets; ``None`` is unlimited. The clock
    starts with ``start`` (when training starts, not when the trainer is built); with ``clock="training"`` the
    time inside ``excluded`` (the loop's validations) moves the deadline on by its length."""

    max_seconds: float | None = None
    max_steps: int | None = None
    deadline: float | None = None
    clock: str = "all"

    @classmethod
    def of(cls, max_minutes: float | None, max_steps: int | None, clock: str = "all") -> Budget:
        if clock not in BUDGET_CLOCKS:
            raise ValueError(f"trainer.budget_clock must be one of {BUDGET_CLOCKS}, got {clock!r}")
        return cls(
            None if max_minutes is None else 60.0 * float(max_minutes),
            None if max_steps is None else int(max_steps),
            clock=clock,
        )

    def start(self) -> None:
        if self.max_seconds is not None:
            self.deadline = time.time() + self.max_seconds

    @contextmanager
    def excluded(self) -> Iterator[None]:
        """A stretch of the loop (a validation) the ``training`` clock does not count: the deadline moves on by
        its length; the ``all`` clock counts it."""
        began = time.time()
        try:
            yield
        finally:
            if self.clock == "training" and self.deadline is not None:
                self.deadline += time.time() - began

    def out_of_time(self) -> bool:
        return self.deadline is not None and time.time() > self.deadline

    def spent(self, global_step: int) -> bool:
        """Past the wall-clock budget or the step budget: training ends, then validates and tests as usual."""
        return self.out_of_time() or (self.max_steps is not None and global_step >= self.max_steps)


@dataclass
class CheckpointCadence:
    """When ``recent.pt`` is also written inside an epoch: every ``steps`` optimizer steps and/or every
    ``seconds`` of wall clock since the last checkpoint (``None``: never)."""

    steps: int | None = None
    seconds: float | None = None
    last: float = field(default_factory=time.time)

    @classmethod
    def of(cls, checkpoint_steps: int | None, checkpoint_minutes: float | None) -> CheckpointCadence:
        return cls(
            int(checkpoint_steps) if checkpoint_steps else None,
            60.0 * float(checkpoint_minutes) if checkpoint_minutes else None,
        )

    def due(self, global_step: int) -> bool:
        by_steps = self.steps is not None and global_step % self.steps == 0
        by_time = self.seconds is not None and time.time() - self.last >= self.seconds
        return by_steps or by_time

    def mark(self) -> None:
        self.last = time.time()
