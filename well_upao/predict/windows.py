"""The Well's rollout windows: time-averaged VRMSE over the predicted steps ``a:b`` of an autoregressive rollout.

The Well's trainer (``the_well.benchmark.trainer.training.Trainer.temporal_split_losses``) slices the per-step
losses of a rollout as ``loss_values[a:b].mean()``, over 0-based predicted steps, and its benchmark tables report
the windows 6:12 and 13:30 ("Rollout loss (6:12)", "(13:30)"): the mean of the 7th to 12th and of the 14th to 30th
predicted frames. A window is *held* when the rollout ran at least ``b`` steps; it then needs ``history + b`` frames
of the trajectory at the evaluated stride.

Rollouts start at several windows of each trajectory (``rollout_starts``) so that a window is averaged over
more than one rollout.
"""

from __future__ import annotations

import math

#: the windows a user may trust a prediction for: (first, last) horizon, counted from 1 (the Well's 6:12 is steps
#: 7..12 of a rollout counted from 1, its slice ``[6:12]`` counted from 0); the pick (``predict.evidence``), the
#: expected error (``predict.expected``) and the forecast read a prediction per window
WINDOWS: dict[str, tuple[int, int]] = {"one_step": (1, 1), "6:12": (7, 12), "13:30": (14, 30)}


def window_of_step(step: int) -> str:
    """The window whose pick a forecast's step ``step`` (from 1) is taken with: ``one_step`` for step 1, ``6:12`` for
    steps 2 to 12 (the steps before the Well's window are read with its pick), ``13:30`` from step 13 on (continued
    past 30)."""
    if step < 1:
        raise ValueError(f"a forecast step counts from 1, got {step}")
    if step == 1:
        return "one_step"
    return "6:12" if step <= WINDOWS["6:12"][1] else "13:30"


#: the windows of the Well's benchmark tables, ``(a, b)``: 0-based predicted steps ``a .. b - 1``
WELL_WINDOWS: tuple[tuple[int, int], ...] = ((6, 12), (13, 30))
#: the rollout length that holds every window of ``WELL_WINDOWS``
LONGEST_WINDOW_END = max(end for _, end in WELL_WINDOWS)


def window_label(window: tuple[int, int]) -> str:
    return f"{window[0]}:{window[1]}"


def rollout_starts(n_frames: int, history: int, steps: int, count: int) -> list[int]:
    """Up to ``count`` distinct first frames of rollouts of ``steps`` steps after ``history`` frames, spread evenly
    from the trajectory's first window to its last one that still holds the whole rollout (one start when the
    trajectory holds only one)."""
    last = n_frames - history - steps
    if last < 0 or steps < 1:
        return []
    if count <= 1 or last == 0:
        return [0]
    count = min(count, last + 1)
    return sorted({round(i * last / (count - 1)) for i in range(count)})


def window_means(per_step: list[float]) -> dict[str, float | None]:
    """The Well's windows of one per-step curve (step 0 first): ``loss[a:b].mean()`` where the curve holds all of
    ``a .. b - 1``, else ``None`` (not held)."""
    means: dict[str, float | None] = {}
    for start, end in WELL_WINDOWS:
        held = len(per_step) >= end
        means[window_label((start, end))] = sum(per_step[start:end]) / (end - start) if held else None
    return means


def first_non_finite_step(per_step: list[float]) -> int | None:
    """The 1-based rollout step from which a per-step curve is NaN or infinite (a rollout diverged: one
    non-finite rollout makes the mean over rollouts non-finite), ``None`` when every step is finite."""
    return next((step for step, value in enumerate(per_step, 1) if not math.isfinite(value)), None)


def frames_needed(history: int, window: tuple[int, int]) -> int:
    """Frames (at the evaluated stride) a trajectory needs to hold ``window``: the history and ``b`` steps."""
    return history + window[1]
