"""Does the label-free scorecard rank runs as the truth does? (issue 29, reports/trust.md)

Runs UPAO + NSLoRA on the shipped backbone through The Well's harness over a grid of exact datasets x time strides x
prediction bases (``last`` / ``extrap2``) x budgets (optimizer steps per epoch) x seeds (``data.shuffle_seed``: the
training order), each with ``trainer.validate_start`` and ``trainer.guard`` on, at least 3 validation trajectories
(``trainer.vrmse_trajectories`` covers the whole validation split, so ``valid_paper_VRMSE`` at every validation is the
true interior VRMSE of that candidate). Then reads every run's ``metrics.jsonl`` only:

* rank correlations (Spearman and Kendall, with bootstrap 95% intervals over runs) between each label-free score
  (``valid_score_residual_ratio``, ``valid_score_departure``, ``valid_score_backtest``) and the true VRMSE relative to
  the run's start (``valid_paper_VRMSE / valid_paper_VRMSE at epoch 0``, so that strides and datasets share a scale):
  across the candidates of all runs of one dataset, and within each run across its checkpoints (the mean of the
  per-run coefficients, with a bootstrap interval over runs);
* the selection: which epoch the criterion alone would keep (lowest ``valid``), which the guard kept
  (``best_epoch``) and which an oracle with labels would keep (lowest ``valid_paper_VRMSE``); how often each matched
  the oracle and what a mismatch cost (its VRMSE over the oracle's);
* a scatter figure of each score against the relative VRMSE (``reports/trust_scatter.png``).

Resumable: a finished run leaves ``done.json`` beside its run folder and is not run again; ``--max-runs`` caps how
many new runs one call starts (the report then says exactly how many runs stand behind each number).

    python benchmarks/studies/trust_study.py --out /tmp/trust_study --report reports/trust.md
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
import time
from pathlib import Path

from well_upao.harness.metrics_file import read_metrics
from well_upao.harness.runs import harness_command, latest_run

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.jobs import run_all as run_tasks
from harness.jobs import run_logged, thread_env, write_done
from harness.study_data import STUDY_REPLICAS, ensure_replica

from studies.trust_report import TRUTH_FRAMES, write_report


def run_name(dataset: str, stride: int, base: str, steps: int, seed: int) -> str:
    return f"{dataset}-s{stride}-{base}-b{steps}-seed{seed}"


def command(args, dataset: str, stride: int, base: str, steps: int, seed: int, experiment: Path) -> list[str]:
    return harness_command(
        [
            "model=na_nslora",
            "trainer=upao",
            f"data={dataset}",
            f"model.base={base}",
            "optimizer.lr=1e-3",
            "trainer.nslora_schedule=from_start",
            f"data.min_dt_stride={stride}",
            f"data.max_dt_stride={stride}",
            f"trainer.epochs={args.epochs}",
            f"trainer.epoch_steps={steps}",
            "trainer.warmup_steps=5",
            "data.batch_size=4",
            f"data.shuffle_seed={seed}",
            f"trainer.max_rollout_steps={TRUTH_FRAMES}",
            f"data.max_rollout_steps={TRUTH_FRAMES}",
            "trainer.rollout_val_frequency=1000",
            f"trainer.short_validation_length={args.validation_batches}",
            "trainer.vrmse_trajectories=1000",
            "trainer.patience=0",
            "trainer.progress=false",
            "auto_resume=false",
            f"experiment_dir={experiment}",
        ]
    )


def ensure_dataset(args, dataset: str) -> Path:
    """The Well base path holding ``dataset``, made if missing: a study replica (``benchmarks/harness/study_data.py``)
    or an exact set at ``--resolution`` with ``--n-traj`` trajectories of ``--n-steps`` frames."""
    from well_upao.data.generate import GenerationRequest, generate_dataset

    base = args.out / "datasets"
    if dataset in STUDY_REPLICAS:
        ensure_replica(dataset, base)
    elif not (base / dataset / "stats.yaml").is_file():
        generate_dataset(
            GenerationRequest(
                pde=dataset,
                out=base,
                n_traj=args.n_traj,
                resolution=args.resolution,
                n_steps=args.n_steps,
                seed=42,
                valid_fraction=args.valid_fraction,
            ),
            progress=False,
        )
    return base


def grid(args) -> list[tuple[str, int, str, int, int]]:
    """Every (dataset, stride, base, budget, seed) of the study: the exact sets at ``--strides``, the replicas at
    ``--replica-strides``."""
    cells = list(itertools.product(args.datasets, args.strides, args.bases, args.budgets, args.seeds))
    cells += itertools.product(args.replicas, args.replica_strides, args.bases, args.budgets, args.seeds)
    # one of every (dataset, stride, base) first, so that a capped study still covers the grid's axes
    cells.sort(key=lambda c: (c[4], c[3] != args.budgets[0], c[1], c[0], c[2]))
    return cells


def run_one(args, cell: tuple[str, int, str, int, int]) -> None:
    """Train one cell of the grid (not after ``--stop-after-minutes``); ``done.json`` records its command, wall
    clock and CPU time when it finished."""
    dataset, stride, base, steps, seed = cell
    name = run_name(*cell)
    folder = args.out / "runs" / name
    if args.deadline and time.time() > args.deadline:
        print(f"{name}: deadline reached, not started", flush=True)
        return
    datasets = ensure_dataset(args, dataset)
    cmd = command(args, dataset, stride, base, steps, seed, folder / "experiment")
    env = thread_env(dict(os.environ, WELL_BASE_PATH=str(datasets), WANDB_MODE="disabled"), args.threads)
    folder.mkdir(parents=True, exist_ok=True)
    finished = run_logged(["nice", "-n", "10", *cmd], folder / "train.log", env, cwd=folder)
    print(f"{name}: exit {finished.returncode} in {finished.wall_seconds:.0f} s "
          f"({finished.cpu_seconds:.0f} CPU s)", flush=True)  # fmt: skip
    if finished.returncode == 0:
        record = {"command": cmd[1:], "seconds": finished.wall_seconds}
        write_done(folder / "done.json", finished, args.jobs, args.threads, **record)


def run_all(args) -> None:
    """Run every unfinished cell (at most ``--max-runs``), ``--jobs`` at a time; a datasets is made before the
    runs start (two runs must not make it at once)."""
    pending = [c for c in grid(args) if not (args.out / "runs" / run_name(*c) / "done.json").is_file()]
    pending = pending[: args.max_runs] if args.max_runs is not None else pending
    for dataset in dict.fromkeys(c[0] for c in pending):
        ensure_dataset(args, dataset)
    run_tasks([lambda cell=cell: run_one(args, cell) for cell in pending], args.jobs)


# ---------------------------------------------------------------------------------------------- analysis
def load_runs(args) -> list[dict]:
    runs = []
    for done in sorted((args.out / "runs").glob("*/done.json")):
        folder = done.parent
        run_folder = latest_run(folder / "experiment")
        if run_folder is None:
            continue
        lines = [line for line in read_metrics(run_folder) if "valid" in line and "valid_paper_VRMSE" in line]
        if len(lines) < 2 or lines[0].get("epoch") != 0:
            continue
        dataset, stride, base, budget, seed = folder.name.split("-")
        runs.append(
            {
                "name": folder.name,
                "dataset": dataset,
                "stride": int(stride[1:]),
                "base": base,
                "budget": int(budget[1:]),
                "seed": int(seed[4:]),
                "lines": lines,
                "command": json.loads(done.read_text())["command"],
                "seconds": json.loads(done.read_text())["seconds"],
            }
        )
    return runs


def load_external(folders: list[Path]) -> list[dict]:
    """Run folders made outside the grid (``--include-runs``, e.g. the done-when runs of
    ``tests/trainers/test_guard_burgers.py``), described from their ``extended_config.yaml``. A run made before the
    departure was measured in step units (its first line logs no ``guard`` setting under the current rule) is kept
    with its departure converted: ``departure (floor units) x floor``."""
    from omegaconf import OmegaConf

    runs = []
    for folder in folders:
        config = OmegaConf.load(folder / "extended_config.yaml")
        lines = [line for line in read_metrics(folder) if "valid" in line and "valid_paper_VRMSE" in line]
        if len(lines) < 2 or lines[0].get("epoch") != 0:
            continue
        if config.trainer.get("guard_departure_limit") == 1.0:  # the first rule: departure in floor units
            for line in lines:
                for key in ("valid_score_departure", "valid_score_start_departure"):
                    if key in line and line[key] == line[key]:
                        line[key] *= line["valid_score_floor"]
        runs.append(
            {
                "name": str(folder),
                "dataset": config.data.well_dataset_name,
                "stride": int(config.data.min_dt_stride),
                "base": config.model.base,
                "budget": int(config.trainer.epoch_steps),
                "seed": int(config.data.get("shuffle_seed") or 0),
                "lines": lines,
                "command": [],
                "seconds": lines[-1].get("seconds", math.nan),
                "external": True,
                "guard_on": bool(config.trainer.get("guard", False)),
                "folder": folder,
            }
        )
    return runs


def main(argv: list[str] | None = None) -> None:
    """The study's command line (``argv``: its arguments, default ``sys.argv[1:]``; ``reproduce.py --study trust``
    passes its own)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("outputs/trust"))
    parser.add_argument("--report", type=Path, default=Path("reports/trust.md"))
    parser.add_argument("--figure", type=Path, default=Path("reports/trust_scatter.png"))
    parser.add_argument("--datasets", nargs="+", default=["burgers2d", "wave2d", "advdiff2d"])
    parser.add_argument("--strides", nargs="+", type=int, default=[1, 5, 10])
    parser.add_argument(
        "--replicas",
        nargs="*",
        default=["gray_scott_reaction_diffusion", "active_matter"],
        choices=list(STUDY_REPLICAS),
    )
    parser.add_argument(
        "--replica-strides",
        nargs="+",
        type=int,
        default=[1, 4],
        help="41 frames hold stride 4 with history 8 (the Well's rollout datasets need 8 s + s frames)",
    )
    parser.add_argument("--bases", nargs="+", default=["last", "extrap2"])
    parser.add_argument("--budgets", nargs="+", type=int, default=[5, 15], help="optimizer steps per epoch")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--validation-batches", type=int, default=2)
    parser.add_argument("--resolution", type=int, default=32)
    parser.add_argument("--n-traj", type=int, default=12)
    parser.add_argument("--n-steps", type=int, default=101)
    parser.add_argument("--valid-fraction", type=float, default=0.25)
    parser.add_argument("--jobs", type=int, default=1, help="runs at once")
    parser.add_argument("--threads", type=int, default=None, help="torch threads per run (default: torch's)")
    parser.add_argument("--max-runs", type=int, default=None, help="start at most this many new runs")
    parser.add_argument("--stop-after-minutes", type=float, default=None, help="start no new run after this")
    parser.add_argument("--draws", type=int, default=1000, help="bootstrap draws")
    parser.add_argument("--analyse-only", action="store_true")
    parser.add_argument("--include-runs", nargs="*", type=Path, default=[], help="run folders made outside the grid")
    args = parser.parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else list(argv)
    args.out = args.out.resolve()
    args.deadline = None if args.stop_after_minutes is None else time.time() + 60 * args.stop_after_minutes
    if not args.analyse_only:
        run_all(args)
    runs = load_runs(args) + load_external(args.include_runs)
    if not runs:
        raise SystemExit("no finished run to analyse")
    write_report(args, runs)


if __name__ == "__main__":
    main()
