"""Where a non-finite training loss came from: the batch's samples with non-finite data (by file, trajectory,
time and field), or, when the data is finite, that the optimisation diverged."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch


def describe_non_finite(
    batch: dict,
    loss: torch.Tensor,
    epoch: int,
    step: int,
    channel_names: Sequence[str],
    describe_index: Callable[[int], str] | None = None,
) -> str:
    """One line for the error a non-finite loss raises. ``describe_index`` names a sample from its
    ``sample_index`` (``WellUpaoDataset.describe_index``), when the dataset has it."""
    where = f"non-finite training loss ({loss.item()}) at epoch {epoch}, step {step}"
    indices = batch.get("sample_index")
    named = describe_index is not None and indices is not None
    bad = []
    for row in range(batch["input_fields"].shape[0]):
        frames = torch.cat([batch["input_fields"][row], batch["output_fields"][row]])
        finite = torch.isfinite(frames).reshape(-1, frames.shape[-1]).all(0)
        if not finite.all():
            sample = describe_index(int(indices[row])) if named else f"sample {row}"
            channels = [
                channel_names[c] if c < len(channel_names) else str(c) for c in (~finite).nonzero().flatten().tolist()
            ]
            bad.append(f"{sample} ({', '.join(channels)})")
    if bad:
        return f"{where}: non-finite values in {'; '.join(bad[:3])}{' ...' if len(bad) > 3 else ''}"
    samples = [describe_index(int(i)) for i in indices[:3]] if named else []
    return f"{where}; the batch's data is finite ({'; '.join(samples)}): the optimisation diverged (lower the lr)"
