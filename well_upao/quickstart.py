"""``well-upao quickstart``: the project's main job in one command (about 10 minutes on two CPU cores).

1. generate a small exact dataset (``wave2d`` by default) and train at time stride 5, where extrapolating the
   history fails (see the classical baselines in any `well-upao evaluate` table);
2. zero-shot: the shipped pretrained backbone on it, no training;
3. UPAO: adapt the shipped backbone with NSLoRA through The Well's harness,
   ``python -m the_well.benchmark.train model=na_nslora trainer=upao data=wave2d ...`` (no interior labels);
4. a supervised-LoRA reference through the same harness (``model=na_lora trainer=shifted``, with labels);
   both runs last a few CPU minutes, so they use 10x the paper's finetuning learning rate (1e-3);
5. ``well-upao evaluate`` of all of them beside the classical baselines: the table, JSON and PNG figures.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm

STEPS = ("generate data", "zero-shot backbone", "UPAO + NSLoRA (no labels)", "supervised LoRA (labels)", "evaluate")


@dataclass
class QuickstartConfig:
    out: Path = Path("quickstart")
    pde: str = "wave2d"
    stride: int = 5
    n_traj: int = 12
    resolution: int = 64
    n_steps: int = 51
    epochs: int = 6
    batch_size: int = 4
    #: a few CPU minutes instead of the paper's 30 GPU epochs: 10x the paper's finetuning lr (1e-4)
    lr: float = 1e-3
    max_train_batches: int | None = None
    seed: int = 42


def harness_command(config: QuickstartConfig, model: str, trainer: str, base: Path, experiments: Path) -> list[str]:
    """The Well's training command for one of the quickstart's runs (printed with the results)."""
    command = [
        sys.executable,
        "-m",
        "the_well.benchmark.train",
        f"model={model}",
        f"trainer={trainer}",
        f"data={config.pde}",
        f"data.well_base_path={base}",
        f"experiment_dir={experiments}",
        f"data.min_dt_stride={config.stride}",
        f"data.max_dt_stride={config.stride}",
        f"data.batch_size={config.batch_size}",
        f"trainer.epochs={config.epochs}",
        f"optimizer.lr={config.lr:g}",
        "trainer.max_rollout_steps=2",
        "data.max_rollout_steps=2",
        "trainer.rollout_val_frequency=1000",
        "trainer.short_validation_length=4",
        "trainer.progress=false",
        "auto_resume=false",
    ]
    if trainer == "upao":
        command.append("trainer.vrmse_trajectories=1")
    if model == "na_nslora":
        # a few epochs are too few for the paper's LoRA warm-up to stall and switch (the run would be plain LoRA)
        command.append("trainer.nslora_schedule=from_start")
    return command


def run_quickstart(config: QuickstartConfig) -> str:
    from well_upao.data.generate import GenerationRequest, generate_dataset
    from well_upao.evaluate.pipeline import EvaluationRequest, run_evaluation
    from well_upao.harness.model_factory import na_transformer
    from well_upao.models.checkpoint import build_payload, save_checkpoint

    out = config.out.resolve()
    base, experiments, results = out / "datasets", out / "experiments", out / "results"
    started = time.time()
    bar = tqdm(total=len(STEPS), desc="quickstart", unit="step")

    def advance(label: str) -> None:
        bar.set_postfix_str(label)

    advance(STEPS[0])
    generate_dataset(
        GenerationRequest(
            pde=config.pde,
            out=base,
            n_traj=config.n_traj,
            resolution=config.resolution,
            n_steps=config.n_steps,
            seed=config.seed,
            overwrite=True,
        ),
        progress=False,
    )
    bar.update(1)

    advance(STEPS[1])
    zero_shot = na_transformer(preset="tiny", dataset_name=config.pde, well_base_path=str(base), pretrained="shipped")
    zero_shot_path = out / "zero_shot.pt"
    save_checkpoint(zero_shot_path, build_payload(zero_shot))
    bar.update(1)

    env = dict(os.environ, WELL_BASE_PATH=str(base), WANDB_MODE="disabled")
    runs = {}
    for step, (model, trainer) in zip(STEPS[2:4], (("na_nslora", "upao"), ("na_lora", "shifted")), strict=True):
        advance(step)
        command = harness_command(config, model, trainer, base, experiments)
        log = out / f"{model}-{trainer}.log"
        with open(log, "w") as stream:
            result = subprocess.run(command, env=env, stdout=stream, stderr=subprocess.STDOUT, cwd=out)
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed; see {log}")
        runs[(model, trainer)] = next((experiments).glob(f"{config.pde}-{model}-{trainer}-*/*/checkpoints/best.pt"))
        bar.update(1)

    advance(STEPS[4])
    report = run_evaluation(
        EvaluationRequest(base, config.pde, stride=config.stride, rollout_steps=5, out=results, progress=False),
        [
            ("zero-shot (shipped backbone)", zero_shot_path),
            ("UPAO + NSLoRA (no labels)", runs[("na_nslora", "upao")]),
            ("supervised LoRA (reference)", runs[("na_lora", "shifted")]),
        ],
    )
    bar.update(1)
    bar.close()
    minutes = (time.time() - started) / 60
    commands = "\n".join(
        f"    {' '.join(harness_command(config, m, t, base, experiments))}"
        for m, t in (("na_nslora", "upao"), ("na_lora", "shifted"))
    )
    return (
        report.table
        + f"\n\nquickstart finished in {minutes:.1f} min; figures and JSON in {results}/\nharness runs:\n{commands}"
    )
