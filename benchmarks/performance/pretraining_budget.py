"""Step cost of two pretraining configurations on the same corpus, measured in one run, and the number of steps that
gives the second the first's compute budget.

    WELL_BASE_PATH=corpus python benchmarks/performance/pretraining_budget.py --reference-steps 5243

The reference is the shipped tiny NA backbone (``configs/pretrain.yaml``, all five corpus sets); the candidate is
PDE-Transformer (``configs/pretrain_pde_transformer.yaml``, the four 2D sets). Each optimizer step (forward,
backward, clipping, AdamW) is timed on real batches of every dataset of its mixture, alternating the two models so
that machine load hits both alike; a model's cost per step is the mean over its datasets (the mixture draws an
equal number of clips from each). The printed ``candidate steps`` is ``reference steps x reference cost /
candidate cost``: the candidate's step budget for equal compute (``trainer.max_steps``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
from hydra import compose, initialize_config_module
from hydra.utils import instantiate
from omegaconf import OmegaConf

from well_upao.harness.mixture import MixtureDataModule
from well_upao.models.kinds import is_sequence_model
from well_upao.trainers.shifted import masked_mse


def step_function(model: torch.nn.Module):
    """One optimizer step of the pretraining loss of ``model`` on a slot batch; returns its duration in seconds."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), weight_decay=0.01)
    one_frame = not is_sequence_model(model)

    def step(frames: torch.Tensor, mask: torch.Tensor) -> float:
        start = time.perf_counter()
        history = frames.shape[1] - 1
        if one_frame:
            loss = masked_mse(model(frames[:, :history], mask), frames[:, history], mask)
        else:
            loss = masked_mse(model(frames[:, :history], mask, sequence=True), frames[:, 1:], mask)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return time.perf_counter() - start

    return step


def configuration(name: str, overrides: list[str]):
    with initialize_config_module(config_module="well_upao.configs", version_base=None):
        return compose(config_name=name, overrides=overrides)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference-steps", type=int, required=True, help="the reference run's optimizer steps")
    parser.add_argument("--candidate", default="pretrain_pde_transformer", help="config name of the candidate")
    parser.add_argument("--candidate-overrides", nargs="*", default=[])
    parser.add_argument("--steps", type=int, default=6, help="timed steps per dataset and model (after one warm-up)")
    args = parser.parse_args()
    if "WELL_BASE_PATH" not in os.environ:
        parser.error("set WELL_BASE_PATH to the corpus (well-upao generate-pretrain --out corpus)")

    models, mixtures = {}, {}
    for label, name, overrides in (
        ("reference", "pretrain", []),
        ("candidate", args.candidate, args.candidate_overrides),
    ):
        cfg = configuration(name, overrides)
        data = OmegaConf.to_container(cfg.data, resolve=True)
        mixtures[label] = MixtureDataModule(**data)
        torch.manual_seed(0)
        models[label] = instantiate(cfg.model).train()
    steps = {label: step_function(model) for label, model in models.items()}
    costs: dict[str, dict[str, list[float]]] = {label: {} for label in models}
    batches = {label: {} for label in models}
    for label, mixture in mixtures.items():
        for batch in mixture.train_batches(1):
            batches[label].setdefault(batch.dataset, batch)
    for repeat in range(args.steps + 1):
        for label in models:  # alternate: both models see the same machine load
            for dataset, batch in batches[label].items():
                seconds = steps[label](batch.frames, batch.mask)
                if repeat:  # the first pass warms up allocators and caches
                    costs[label].setdefault(dataset, []).append(seconds)
    per_step = {}
    for label, by_dataset in costs.items():
        medians = {dataset: statistics.median(values) for dataset, values in by_dataset.items()}
        per_step[label] = statistics.mean(medians.values())
        parameters = sum(p.numel() for p in models[label].parameters()) / 1e6
        print(f"{label}: {type(models[label]).__name__}, {parameters:.2f}M parameters")
        for dataset, seconds in medians.items():
            print(f"  {dataset}: {seconds * 1e3:.0f} ms per step")
        print(f"  mean over the mixture: {per_step[label] * 1e3:.0f} ms per step")
    ratio = per_step["reference"] / per_step["candidate"]
    print(f"reference / candidate cost per step: {ratio:.3f}")
    print(f"candidate steps for the reference's {args.reference_steps} steps: {round(args.reference_steps * ratio)}")


if __name__ == "__main__":
    main()
