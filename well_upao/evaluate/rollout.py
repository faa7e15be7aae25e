"""One-step predictions along whole trajectories (the paper's evaluation: every frame from its true history)."""

from __future__ import annotations

import torch


@torch.no_grad()
def one_step_predictions(model, trajectory: torch.Tensor, history: int, batch_size: int = 8) -> torch.Tensor:
    """Predict frame ``t`` from the true frames ``t - history .. t - 1`` for every ``t >= history``.

    ``trajectory``: ``(T, *space, C)`` in the dataset's channels; returns ``(T - history, *space, C)``.
    ``model`` is a well-upao backbone (``to_slots``, ``forward_sequence``, ``from_slots``).
    """
    steps = trajectory.shape[0]
    if steps <= history:
        raise ValueError(f"a trajectory of {steps} frames has no frame after a history of {history}")
    outputs = []
    for start in range(history, steps, batch_size):
        stop = min(start + batch_size, steps)
        windows = torch.stack([trajectory[t - history : t] for t in range(start, stop)])
        prediction = model.forward_sequence(model.to_slots(windows))[:, -1]
        outputs.append(model.from_slots(prediction))
    return torch.cat(outputs)
