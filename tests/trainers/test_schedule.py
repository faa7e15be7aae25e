"""The learning-rate schedules of ``trainers/schedule.py`` against closed forms and the Well's own scheduler."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
from the_well.benchmark.optim.schedulers import LinearWarmupCosineAnnealingLR

from well_upao.trainers.schedule import epoch_scheduler, well_epoch_factor


def optimizer(lr: float) -> torch.optim.Optimizer:
    return torch.optim.AdamW([torch.nn.Parameter(torch.zeros(3))], lr=lr, weight_decay=1e-4)


def test_the_well_epoch_schedule_has_the_released_closed_form():
    """lr 1e-2, 5 warm-up epochs, 200 epochs, start = min = 0.1 lr: epoch k (0-based, k finished epochs) runs at
    1e-3 + k (1e-2 - 1e-3) / 4 while warming up, 1e-2 at k = 4 and 5, then 1e-3 + 4.5e-3 (1 + cos(pi (k - 5) / 195))."""
    lr, warmup, epochs = 1e-2, 5, 200
    expected = {0: 1e-3, 1: 3.25e-3, 2: 5.5e-3, 3: 7.75e-3, 4: 1e-2, 5: 1e-2, 200: 1e-3}
    for k in (6, 50, 102, 150, 199):
        expected[k] = 1e-3 + 4.5e-3 * (1 + math.cos(math.pi * (k - 5) / 195))
    expected[102] = 1e-3 + 4.5e-3 * (1 + math.cos(math.pi * 97 / 195))
    for k, value in expected.items():
        assert lr * well_epoch_factor(k, warmup, epochs, 0.1, 0.1) == pytest.approx(value, rel=1e-12), k
    # the cosine's midpoint is the mean of the full and the minimal rate
    assert lr * well_epoch_factor(5 + 195 / 2, warmup, epochs, 0.1, 0.1) == pytest.approx(5.5e-3, rel=1e-12)


@pytest.mark.parametrize("warmup, epochs", [(5, 200), (2, 6), (1, 4), (0, 3)])
def test_the_epoch_scheduler_follows_the_wells_own_scheduler_epoch_by_epoch(warmup, epochs):
    """Our per-epoch scheduler gives the learning rate of the_well's ``LinearWarmupCosineAnnealingLR`` (built as the
    Well's train.py builds it: warmup_start_lr = eta_min = 0.1 lr) before every epoch, to rounding; and it resumes
    from its saved state to the same rates."""
    lr = 1e-2
    ours, theirs = optimizer(lr), optimizer(lr)
    schedule = epoch_scheduler(ours, epochs, warmup, 0.1, 0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        well = LinearWarmupCosineAnnealingLR(theirs, warmup, epochs, warmup_start_lr=0.1 * lr, eta_min=0.1 * lr)
    seen = []
    for epoch in range(epochs):
        assert ours.param_groups[0]["lr"] == pytest.approx(theirs.param_groups[0]["lr"], rel=1e-9, abs=1e-15), epoch
        seen.append(ours.param_groups[0]["lr"])
        ours.step(), theirs.step()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            schedule.step(), well.step()
        if epoch == epochs // 2:
            state = schedule.state_dict()
    assert seen[0] == pytest.approx(0.1 * lr if warmup else lr)
    assert max(seen) == pytest.approx(lr)
    resumed_optimizer = optimizer(lr)
    resumed = epoch_scheduler(resumed_optimizer, epochs, warmup, 0.1, 0.1, state=state)
    assert resumed_optimizer.param_groups[0]["lr"] == pytest.approx(seen[epochs // 2 + 1])
    del resumed


class FakeClock:
    """``time.time`` of ``trainers/schedule.py`` under test control: it moves only when told."""

    def __init__(self) -> None:
        self.now = 1000.0

    def time(self) -> float:
        return self.now


@pytest.mark.parametrize("clock, steps", [("all", 0), ("training", 2)])
def test_the_training_clock_does_not_count_validations(small_datasets, tmp_path, monkeypatch, clock, steps):
    """A one-minute budget and validations that each take ten minutes (a fake clock that only they move), 2 epochs
    of one step: the ``all`` clock is spent by the start's validation before the first step; the
    ``training`` clock counts no validation and trains both steps."""
    from trainers.test_upao import make_trainer

    from well_upao.trainers import schedule

    fake = FakeClock()
    monkeypatch.setattr(schedule, "time", fake)
    trainer = make_trainer(
        small_datasets,
        tmp_path,
        epoch_steps=1,
        max_minutes=1.0,
        budget_clock=clock,
        validate_start=True,
        rollout_vrmse_steps=0,
        vrmse_trajectories=1,
    )
    trainer.max_epoch = 2
    validation = trainer.validation

    def slow_validation(*args, **kwargs):
        fake.now += 600.0
        return validation(*args, **kwargs)

    trainer.validation = slow_validation
    trainer.train()
    assert trainer.global_step == steps


def test_an_unknown_budget_clock_is_refused():
    with pytest.raises(ValueError, match="budget_clock"):
        schedule_budget("wall")


def schedule_budget(clock: str):
    from well_upao.trainers.schedule import Budget

    return Budget.of(1.0, None, clock)


def test_a_schedule_spread_over_runs_continues_where_the_last_one_stopped():
    """Runs of 30 steps each over a budget of 100 (warm-up 10, lr 1e-3 down to 1e-5): the second starts at step 30
    of the closed form (linear warm-up, then ``lr_min + (lr - lr_min) (1 + cos(pi p)) / 2``), its first 5 steps
    ramping up by ``(s + 1) / 5``."""
    import math

    from well_upao.trainers.schedule import step_scheduler

    def closed_form(step):
        if step < 10:
            return 1e-3 * (step + 1) / 10
        progress = (step - 10) / 90
        return 1e-5 + (1e-3 - 1e-5) * 0.5 * (1 + math.cos(math.pi * progress))

    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1e-3)
    schedule = step_scheduler(optimizer, 100, 10, 1e-5, start_step=30, rewarm_steps=5)
    rates = []
    for _ in range(30):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        schedule.step()
    expected = [closed_form(30 + s) * min(1.0, (s + 1) / 5) for s in range(30)]
    assert rates == pytest.approx(expected, rel=1e-12)
