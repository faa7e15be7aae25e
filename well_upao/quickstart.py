"""``well-upao quickstart``: the project's main job in one command (3.4 minutes on two CPU
cores, reports/user_times.md).

1. generate a small exact dataset (``wave2d`` by default) and train at time stride 5, where extrapolating the
   history fails (see the classical baselines in any `well-upao evaluate` table);
2. zero-shot: the shipped pretrained backbone on it, no training;
3. UPAO: adapt the shipped backbone with NSLoRA through The Well's harness,
   ``python -m the_well.benchmark.train model=na_nslora trainer=upao data=wave2d ...`` (no interior labels);
4. a supervised-LoRA reference through the same harness (``model=na_lora trainer=shifted``, with labels);
   both runs last a few CPU minutes, so they use 10x the paper's finetuning learning rate (1e-3), and both
   predict a correction to ``base`` (``model.base``, see ``well_upao.models.na_transformer``); the two runs go at
   the same time, each with an equal share of the cores (``run_threads``: one thread each on two cores);
5. ``well-upao evaluate`` of all of them beside the classical baselines and the solver matched to the UPAO row
   in runtime and in accuracy: the table, JSON and PNG figures, and one line saying whether UPAO beat ``extrap2``
   and the cost-matched solver, with the UPAO run's label-free score and whether its guard fired (from the run's
   ``metrics.jsonl``, ``label_free_summary``);
6. ``well-upao forecast`` of the first validation trajectory from its history alone (the UPAO run beside the
   classical candidates and the solver step): which candidate it used per window and the expected VRMSE with its
   interval, and, since the quickstart has the stored frames, the forecast's true VRMSE where they reach
   (``forecast_summary``).

While a training run works, a second progress bar follows its ``metrics.jsonl``: the epoch, the selection
criterion and the label-free scores of the last validation (``progress_text``).

A quarter of the trajectories (3 of 12) are the validation split: UPAO's label-free selection and the table use
all of them.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from well_upao.data.generate import GenerationRequest, generate_dataset
from well_upao.data.trajectories import TrajectoryFile
from well_upao.evaluate.metrics import vrmse_well
from well_upao.evaluate.pipeline import EvaluationRequest, run_evaluation
from well_upao.evaluate.results import Scores
from well_upao.forecast import ForecastRequest, forecast
from well_upao.harness import runs
from well_upao.harness.metrics_file import read_metrics
from well_upao.harness.model_factory import na_transformer
from well_upao.models.assembly import resolve_pretrained
from well_upao.models.checkpoint import build_payload, migrated_base, read_checkpoint, save_checkpoint

UPAO_ROW = "UPAO + NSLoRA (no labels)"
STEPS = (
    "generate data",
    "zero-shot backbone",
    "UPAO + NSLoRA (no labels)",
    "supervised LoRA (labels)",
    "evaluate",
    "forecast",
)
#: the forecast's steps: through the Well's 6:12 window
FORECAST_STEPS = 12


@dataclass
class QuickstartConfig:
    out: Path = Path("quickstart")
    pde: str = "wave2d"
    stride: int = 5
    n_traj: int = 12
    resolution: int = 64
    n_steps: int = 51
    #: 3 epochs of 24 optimizer steps (6 until 2026-11-29, when the quickstart took twice as long)
    epochs: int = 3
    batch_size: int = 4
    #: a few CPU minutes instead of the paper's 30 GPU epochs: 10x the paper's finetuning lr (1e-4)
    lr: float = 1e-3
    max_train_batches: int | None = None
    #: the prediction base of both runs (``model.base``): see reports/regimes.md for the measurement behind it
    base: str = "extrap2"
    #: share of the trajectories in the validation split (>= 3 of the default 12)
    valid_fraction: float = 0.25
    #: seed of the data (trajectories, parameters) and of the training order
    seed: int = 42
    #: the backbone adapted: a shipped one (``shipped_extrap2``, pretrained with the quickstart's base, which beat
    #: re-zeroing the ``last``-trained ``shipped`` one on three seeds, reports/quickstart.md) or a checkpoint's path
    backbone: str = "shipped_extrap2"


def backbone_label(backbone: str) -> str:
    """How rows name the adapted backbone: ``shipped backbone`` (``shipped``), ``shipped backbone, base extrap2``
    (``shipped_extrap2``) or the checkpoint's file name."""
    if backbone == "shipped":
        return "shipped backbone"
    if backbone == "shipped_extrap2":
        return "shipped backbone, base extrap2"
    return Path(backbone).name


def selected_line(lines: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The validation line of the model a run selected (``best_epoch`` of its last validation line)."""
    validations = [line for line in lines if "valid" in line]
    if not validations:
        return None
    best = validations[-1].get("best_epoch")
    return next((line for line in validations if line.get("epoch") == best), validations[-1])


def label_free_summary(lines: list[dict[str, Any]]) -> str:
    """What the UPAO run's ``metrics.jsonl`` says without labels: the selected model's residual over the floor
    and backtest, and whether the guard fired (refused candidates, kept the start)."""
    chosen = selected_line(lines)
    if chosen is None:
        return "no validation recorded"
    validations = [line for line in lines if "valid" in line]
    last = validations[-1]
    ratio, backtest = chosen.get("valid_score_residual_ratio"), chosen.get("valid_score_backtest")
    scores = (
        f"residual {ratio:.3g}x the floor, backtest {backtest:.3g} of a step (epoch {chosen['epoch']})"
        if ratio is not None and backtest is not None
        else "label-free scores not logged"
    )
    refused = int(last.get("guard_rejections") or 0)
    if not any(line.get("guard") for line in lines):
        guard = "the guard was off"
    elif refused == 0:
        guard = "the guard did not fire"
    else:
        reason = last.get("kept_start_reason") or ""
        kept = "kept the start" if reason.startswith("guard") else "did not change the selection"
        guard = f"the guard fired ({refused} candidate{'s' if refused > 1 else ''} refused; it {kept})"
    prior = ""
    if last.get("kept_prior"):
        prior = f"; best.pt keeps the prior extrapolation ({last.get('kept_prior_reason')})"
    verdict = next((line["prior_verdict"] for line in validations if line.get("prior_verdict")), None)
    if verdict:
        prior += f"; before training, {verdict}"
    return f"{scores}; {guard}{prior}"


def progress_text(lines: list[dict[str, Any]], epochs: int) -> str:
    """The training bar's text from a run's ``metrics.jsonl`` so far: epoch, criterion, label-free scores and the
    model's expected VRMSE for the trust window without labels."""
    validations = [line for line in lines if "valid" in line]
    if not validations:
        return "starting"
    line = validations[-1]
    text = f"epoch {line.get('epoch')}/{epochs} criterion {line['valid']:.3g}"
    if line.get("valid_score_residual_ratio") is not None:
        text += f" residual/floor {line['valid_score_residual_ratio']:.3g} backtest {line['valid_score_backtest']:.3g}"
    model = (line.get("valid_expected_vrmse") or {}).get("model")
    if model:
        text += f" expected VRMSE {model['value']:.3g} [{model['low']:.3g}, {model['high']:.3g}]"
    if line.get("guard_rejections"):
        text += f" guard refused {line['guard_rejections']}"
    return text


@dataclass
class FollowedRun:
    """One training process the quickstart starts and follows: its ``command`` and ``env``, run in ``cwd`` (its own:
    Hydra names its output folder by the second it starts in), its output to ``log``, its run folder the newest
    ``<experiments>/<name>/<n>`` (``name`` a glob pattern), its progress bar's ``label``."""

    command: list[str]
    env: dict
    cwd: Path
    log: Path
    experiments: Path
    name: str
    label: str


def follow_run(
    command: list[str], env: dict, cwd: Path, log: Path, experiments: Path, name: str, epochs: int, label: str
) -> int:
    """Run a training command in ``cwd``, its output to ``log``, while a progress bar follows the metrics.jsonl of
    the newest run folder ``<experiments>/<name>/<n>`` (``name`` a glob pattern; epochs and label-free scores)."""
    return follow_runs([FollowedRun(command, env, cwd, log, experiments, name, label)], epochs)[0]


def follow_runs(followed: list[FollowedRun], epochs: int) -> list[int]:
    """Run the training commands at the same time, each followed by a progress bar of its own (``follow_run``);
    their exit codes, in order, once all have ended. An interrupted quickstart stops them."""
    bars = [
        tqdm(total=epochs, desc=run.label, unit="epoch", leave=False, position=position)
        for position, run in enumerate(followed, start=1)
    ]
    shown: list[tuple | None] = [None] * len(followed)
    codes: list[int | None] = [None] * len(followed)
    processes, streams = [], []
    try:
        for run in followed:
            run.cwd.mkdir(parents=True, exist_ok=True)
            streams.append(open(run.log, "w"))
            processes.append(
                subprocess.Popen(run.command, env=run.env, stdout=streams[-1], stderr=subprocess.STDOUT, cwd=run.cwd)
            )
        while any(code is None for code in codes):
            time.sleep(2)
            for index, (run, process, bar) in enumerate(zip(followed, processes, bars, strict=True)):
                if codes[index] is not None:
                    continue
                code = process.poll()
                state = progress_state(run, epochs)
                if state is not None and state != shown[index]:  # redraw on news only: a log file grows per redraw
                    bar.n, shown[index] = state[0], state
                    bar.set_postfix_str(state[1], refresh=False)
                    bar.refresh()
                codes[index] = code
        return [int(code) for code in codes]
    finally:
        for process in processes:
            if process.poll() is None:  # interrupted: no orphaned training process
                process.terminate()
                process.wait()
        for stream in streams:
            stream.close()
        for bar in bars:
            bar.close()


def progress_state(run: FollowedRun, epochs: int) -> tuple[int, str] | None:
    """A followed run's bar: its epochs done and ``progress_text`` from its metrics.jsonl (``None``: no run folder
    yet)."""
    folder = runs.latest_run(run.experiments, run.name)
    if folder is None:
        return None
    lines = read_metrics(folder)
    epoch = max((int(line.get("epoch", 0)) for line in lines if "valid" in line), default=0)
    return min(epoch, epochs), progress_text(lines, epochs)


def verdict(scores: list[Scores], upao_metrics: list[dict[str, Any]] | None = None) -> str:
    """One line: did the UPAO row beat ``extrap2`` and the cost-matched solver (mean paper VRMSE)? With the UPAO
    run's ``metrics.jsonl`` lines, also its label-free score and whether the guard fired
    (``label_free_summary``)."""
    rows = {s.name: s for s in scores}
    upao, extrap2 = rows[UPAO_ROW], rows["extrap2"]
    solver = next((s for s in scores if s.name.startswith(("solver, cost-matched", "solver, slower"))), None)

    def compare(other: Scores, label: str) -> str:
        word = "beat" if upao.mean_paper < other.mean_paper else "did not beat"
        return f"{word} {label} ({other.mean_paper:.3g})"

    parts = [compare(extrap2, "extrap2")]
    if solver is not None:
        ms = solver.seconds_per_prediction * 1e3
        label = "the cost-matched solver" if "cost-matched" in solver.name else "the cheapest solver (slower)"
        word = "beat" if upao.mean_paper < solver.mean_paper else "did not beat"
        parts.append(
            f"{word} {label} ({solver.mean_paper:.3g} at {ms:.1f} ms per prediction; "
            f"the model {upao.seconds_per_prediction * 1e3:.1f} ms)"
        )
    text = f"UPAO + NSLoRA (mean paper VRMSE {upao.mean_paper:.3g}) " + " and ".join(parts) + "."
    if upao_metrics is not None:
        text += f" Without labels: {label_free_summary(upao_metrics)}."
    return text


def harness_command(config: QuickstartConfig, model: str, trainer: str, base: Path, experiments: Path) -> list[str]:
    """The Well's training command for one of the quickstart's runs (printed with the results)."""
    overrides = [
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
        f"model.base={config.base}",
        f"model.pretrained={config.backbone}",
        f"data.shuffle_seed={config.seed}",
        "trainer.max_rollout_steps=2",
        "data.max_rollout_steps=2",
        "trainer.rollout_val_frequency=1000",
        "trainer.short_validation_length=4",
        "trainer.progress=false",
        "auto_resume=false",
    ]
    if trainer == "upao":
        overrides.append("trainer.vrmse_trajectories=3")
    if model == "na_nslora":
        # a few epochs are too few for the paper's LoRA warm-up to stall and switch (the run would be plain LoRA)
        overrides.append("trainer.nslora_schedule=from_start")
    return runs.harness_command(overrides)


#: the quickstart's two harness runs: (model, trainer)
RUNS = (("na_nslora", "upao"), ("na_lora", "shifted"))


def generate_data(config: QuickstartConfig, base: Path) -> Path:
    """The quickstart's exact dataset under the Well base path ``base`` (replaced if there): ``config.n_traj``
    trajectories of ``config.pde`` at ``config.resolution``, ``config.n_steps`` frames, a ``valid_fraction`` split."""
    request = GenerationRequest(
        pde=config.pde,
        out=base,
        n_traj=config.n_traj,
        resolution=config.resolution,
        n_steps=config.n_steps,
        seed=config.seed,
        valid_fraction=config.valid_fraction,
        overwrite=True,
    )
    generate_dataset(request, progress=False)
    return base


def zero_shot_checkpoint(config: QuickstartConfig, base: Path, path: Path) -> Path:
    """The adapted backbone as it was trained (its own prediction base), for ``config.pde``, saved at ``path``."""
    trained_base = migrated_base(read_checkpoint(resolve_pretrained(config.backbone))["model"]["config"])
    zero_shot = na_transformer(
        preset="tiny", dataset_name=config.pde, well_base_path=str(base), pretrained=config.backbone, base=trained_base
    )
    save_checkpoint(path, build_payload(zero_shot))
    return path


def run_threads(runs_at_once: int, cores: int | None = None) -> int:
    """Intra-op threads of each of ``runs_at_once`` training processes sharing this machine's ``cores`` (default:
    the cores this process may run on): an equal share, at least one. Two runs of one thread on two cores keep
    both busy without the per-operation thread synchronisation that small tensors pay, which grows without bound
    when the cores are also busy with other work (reports/quickstart_speed.md)."""
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, cores // max(1, runs_at_once))


def train_runs(config: QuickstartConfig, base: Path, out: Path) -> dict[tuple[str, str], Path]:
    """The quickstart's harness runs (``RUNS``) under ``out/experiments``, at the same time, each with its share of
    the cores (``run_threads``; ``OMP_NUM_THREADS`` where the environment sets none) and its progress bar; their
    run folders by ``(model, trainer)``. Refuses, naming the command and its log, when one failed."""
    experiments = out / "experiments"
    env = dict(os.environ, WELL_BASE_PATH=str(base), WANDB_MODE="disabled")
    env.setdefault("OMP_NUM_THREADS", str(run_threads(len(RUNS))))
    followed = [
        FollowedRun(
            harness_command(config, model, trainer, base, experiments),
            env,
            out / "hydra" / f"{model}-{trainer}",
            out / f"{model}-{trainer}.log",
            experiments,
            f"{config.pde}-{model}-{trainer}-*",
            label,
        )
        for (model, trainer), label in zip(RUNS, STEPS[2:4], strict=True)
    ]
    codes = follow_runs(followed, config.epochs)
    failed = [run for run, code in zip(followed, codes, strict=True) if code != 0]
    if failed:
        raise RuntimeError("; ".join(f"{' '.join(run.command)} failed; see {run.log}" for run in failed))
    return {
        key: runs.latest_run(experiments, run.name) or experiments / run.name
        for key, run in zip(RUNS, followed, strict=True)
    }


def run_quickstart(config: QuickstartConfig) -> str:
    """Generate, adapt, evaluate (the module docstring); returns the table, the verdict and the commands."""
    out = config.out.resolve()
    base, experiments, results = out / "datasets", out / "experiments", out / "results"
    started = time.time()
    bar = tqdm(total=len(STEPS), desc="quickstart", unit="step")

    bar.set_postfix_str(STEPS[0])
    generate_data(config, base)
    bar.update(1)

    bar.set_postfix_str(STEPS[1])
    zero_shot_path = zero_shot_checkpoint(config, base, out / "zero_shot.pt")
    bar.update(1)

    bar.set_postfix_str(" and ".join(STEPS[2:4]))  # at the same time, each on its share of the cores
    trained = train_runs(config, base, out)
    bar.update(2)

    bar.set_postfix_str(STEPS[4])
    request = EvaluationRequest(
        base, config.pde, stride=config.stride, out=results, progress=False, match_solver=UPAO_ROW
    )
    rows = [
        (f"zero-shot ({backbone_label(config.backbone)})", zero_shot_path),
        (UPAO_ROW, runs.find_checkpoint(trained[("na_nslora", "upao")])),
        ("supervised LoRA (reference)", runs.find_checkpoint(trained[("na_lora", "shifted")])),
    ]
    report = run_evaluation(request, [runs.RunCheckpoint.read(label, path) for label, path in rows])
    bar.update(1)

    bar.set_postfix_str(STEPS[5])
    forecast_text = forecast_summary(config, base, trained[("na_nslora", "upao")], out / "forecast")
    bar.update(1)
    bar.close()
    minutes = (time.time() - started) / 60
    commands = "\n".join(f"    {' '.join(harness_command(config, m, t, base, experiments))}" for m, t in RUNS)
    return (
        report.table
        + f"\n\n{verdict(report.evaluation.scores, read_metrics(trained[('na_nslora', 'upao')]))}"
        + f"\n\n{forecast_text}"
        + f"\n\nquickstart finished in {minutes:.1f} min; figures and JSON in {results}/\nharness runs:\n{commands}"
    )


def forecast_summary(config: QuickstartConfig, base: Path, run: Path, out: Path) -> str:
    """``well-upao forecast`` of the first validation trajectory from a history in the middle of its stored frames (so
    the stored frames after it check the first steps; none of them is read): its per-window lines and the true VRMSE
    (the Well's, mean over the channels) of the steps the file holds."""
    valid = base / config.pde / "data" / "valid"
    frames = TrajectoryFile(next(valid.glob("*.hdf5")))[0].frames
    history = runs.RunCheckpoint.read(None, run).settings.get("history") or 8
    earliest = history * config.stride  # the first frame a whole history at the stride lies before
    start = earliest + ((frames.shape[0] - 1 - earliest) // (2 * config.stride)) * config.stride
    result = forecast(
        ForecastRequest(str(run), valid, out, steps=FORECAST_STEPS, start=start, max_trajectories=1, progress=False)
    )
    predicted = TrajectoryFile(result.hdf5)[0].frames
    dims = predicted.dim() - 2
    stored = {k: start + (k - 1) * config.stride for k in range(1, FORECAST_STEPS + 1)}
    errors = {
        k: float(vrmse_well(predicted[k - 1][None], frames[frame][None], dims).mean())
        for k, frame in stored.items()
        if frame < frames.shape[0]
    }
    true = ", ".join(f"step {k} {value:.3g}" for k, value in errors.items())
    return (
        f"forecast of validation trajectory 0 from the {history} frames before stored frame {start} (no later frame "
        f"read), {FORECAST_STEPS} steps at stride {config.stride}, in {out}/:\n{result.summary()}\n"
        f"true VRMSE where the stored frames reach: {true}"
    )
