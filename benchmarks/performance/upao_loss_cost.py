"""Cost of the UPAO objective relative to one forward + backward of the tiny backbone, measured in one run.

For a batch of 4 windows of 8 frames at 64x64 (tg2d: 3 sub-equations, the most expensive 2D exact PDE), time

* the model's forward + backward alone (loss = mean of the predictions), and
* the UPAO objective (residuals on the 8 shifted predictions, s_k on the input window, band loss) plus its
  backward into the predictions,

and print the ratio. Goal: the objective costs < 10% of the forward + backward.

    python benchmarks/performance/upao_loss_cost.py [--threads 2] [--pde tg2d]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import torch

from well_upao.data.datasets import DATASET_SLOTS
from well_upao.data.slots import N_SLOTS, SLOT_INDEX
from well_upao.datasets_exact import EXACT_PDES
from well_upao.models.na_transformer import NATransformer
from well_upao.physics import Grid, UpaoObjective, band_values, get_pde

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.timing import best_time


def objective_cost(
    pde: str = "tg2d",
    resolution: int = 64,
    preset: str = "tiny",
    batch: int = 4,
    steps: int = 8,
    device: str | torch.device = "cpu",
    repeats: int = 10,
) -> dict:
    """Seconds of the backbone's forward + backward (``model``) and of the UPAO objective + its backward into the
    predictions (``objective``) on ``batch`` windows of ``steps`` exact frames of ``pde`` at ``resolution``, on
    ``device`` (best of ``repeats`` after a warm-up; CUDA work is waited for), and the objective's sub-equations."""
    device = torch.device(device)
    torch.manual_seed(0)
    pde_exact = EXACT_PDES[pde]
    frames = torch.zeros(batch, steps + 1, resolution, resolution, N_SLOTS)
    scalars: dict[str, list[float]] = {}
    for b in range(batch):
        params = pde_exact.sample_parameters(np.random.default_rng(b), b)
        fields = pde_exact.evaluate(params, pde_exact.grid_axes(resolution), np.arange(steps + 1) * 0.01, np.float32)
        for channel, slot in DATASET_SLOTS[pde].items():
            field, _, component = channel.rpartition("_")
            array = fields[field][..., "xy".index(component)] if field in fields else fields[channel]
            frames[b, ..., SLOT_INDEX[slot]] = torch.as_tensor(array)
        for k, v in params.scalars.items():
            scalars.setdefault(k, []).append(v)
    frames = frames.to(device)
    scalar_tensors = {k: torch.tensor(v, device=device) for k, v in scalars.items()}
    slots = [SLOT_INDEX[s] for s in DATASET_SLOTS[pde].values()]
    model = NATransformer(preset=preset, channel_slots=slots, dims=(2,)).to(device)
    inputs, next_band = frames[:, :steps], band_values(frames[:, steps], 2)
    grid = Grid((2 * math.pi / resolution,) * 2, (True, True))
    dt = torch.full((batch,), 0.01, device=device)
    mask = model.slot_mask(device)
    objective = UpaoObjective(get_pde(pde))

    def model_step():
        model.zero_grad()
        model.forward_sequence(inputs).mean().backward()

    prediction = model.forward_sequence(inputs).detach()

    def objective_step():
        leaf = prediction.clone().requires_grad_(True)
        bound = objective.bind(grid, scalar_tensors)  # once per batch, as in training
        objective(leaf, inputs, next_band, dt, bound, mask).total.backward()

    synchronize = torch.cuda.synchronize if device.type == "cuda" else None
    return dict(
        model=best_time(model_step, repeats=repeats, synchronize=synchronize),
        objective=best_time(objective_step, repeats=repeats, synchronize=synchronize),
        equations=len(objective.pde.equations),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--pde", default="tg2d")
    parser.add_argument("--resolution", type=int, default=64)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    batch, steps = 4, 8
    cost = objective_cost(args.pde, args.resolution, batch=batch, steps=steps)
    model_seconds, objective_seconds = cost["model"], cost["objective"]
    print(
        f"| {args.pde} | {batch} x {steps} frames x {args.resolution}^2 | {cost['equations']} "
        f"| {model_seconds * 1e3:.0f} | {objective_seconds * 1e3:.1f} | {objective_seconds / model_seconds:.1%} |"
    )


if __name__ == "__main__":
    main()
