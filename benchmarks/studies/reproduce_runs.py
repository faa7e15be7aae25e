"""The runs of ``benchmarks/studies/reproduce.py``: where a study's data and run folders live, one row trained through
the harness (its command recorded for the report), and the evaluation of a dataset's rows."""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

from well_upao.harness.runs import harness_command, latest_run

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.jobs import WELL_UPAO, run_logged, thread_env, write_done
from harness.study_data import STUDY_REPLICAS, ensure_replica
from harness.tables import evaluation, rows_by_name

from studies.reproduce_rows import HISTORY


def data_base(args: argparse.Namespace) -> Path:
    """The Well base path the study reads and makes its datasets in: ``--data-base``, else ``OUT/datasets``."""
    return (args.data_base or args.out / "datasets").resolve()


def minutes_per_run(args: argparse.Namespace, rows: list) -> float:
    """Each trained row's equal share of ``--budget-minutes``."""
    return args.budget_minutes / (len(args.datasets) * len(args.strides) * len(rows))


#: which row name each run folder name was given to in this process (two rows must never share a folder)
TAG_OWNERS: dict[str, str] = {}


def run_tag(dataset: str, stride: int, name: str) -> str:
    """A run's folder name: only letters, digits, `_` and `-` (a `,` or `=` would break Hydra's override parser),
    without a trailing parenthetical; refused when another row already owns it (`--resume` would read one row's
    run as the other's)."""
    short = name.split(" (")[0].replace("+", "plus")
    tag = f"{dataset}-s{stride}-" + re.sub(r"[^A-Za-z0-9_-]+", "_", short).strip("_")
    owner = TAG_OWNERS.setdefault(tag, name)
    if owner != name:
        raise ValueError(f"rows {owner!r} and {name!r} would share the run folder {tag}: rename one")
    return tag


def run(command: list[str], log: Path, env: dict, jobs: int, threads: int | None) -> float:
    """Run one harness command with its output in `log`; a `<log>.done` marker records that it finished, with its
    wall clock, CPU time and how many rows ran at once with how many threads (JSON, written atomically)."""
    finished = run_logged(command, log, thread_env(env, threads))
    if finished.returncode != 0:
        raise RuntimeError(f"failed ({log}): {' '.join(command)}")
    write_done(log.with_suffix(".done"), finished, jobs, threads)
    return finished.wall_seconds


def run_folder(args: argparse.Namespace, dataset: str, stride: int, name: str) -> Path | None:
    """The run folder of a row (``experiments/<tag>/<experiment>/<n>``), ``None`` when it was not trained."""
    return latest_run(args.out.resolve() / "experiments" / run_tag(dataset, stride, name))


def ensure_dataset(args: argparse.Namespace, dataset: str, base: Path, env: dict) -> None:
    """Generate ``dataset`` under ``base`` unless it is there: a Well replica as ``benchmarks/harness/study_data.py``
    makes it, or an exact set at ``--resolution`` with enough frames for several windows at the largest stride."""
    if dataset in STUDY_REPLICAS:
        ensure_replica(dataset, base)
        return
    if (base / dataset).exists():
        return
    steps = max(51, (HISTORY + 1) * max(args.strides) + 11)
    command = [*WELL_UPAO, "generate-exact", "--pde", dataset, "--n-traj", str(args.n_traj)]
    command += ["--resolution", str(args.resolution), "--n-steps", str(steps)]
    subprocess.run([*command, "--out", str(base), "--quiet"], check=True, env=env)


def train_row(
    args, name: str, overrides: list[str], dataset: str, stride: int, minutes: float, commands, env, train=True
):
    """Train one row through the harness (unless ``--evaluate-only``, or ``--resume`` and it finished, or not
    ``train``); its run folder, or None when there is none. Its command goes into ``commands`` either way (a first
    pass with ``train=False`` fixes the order in which a report lists them when rows then train in parallel)."""
    out = args.out.resolve()
    experiments = out / "experiments"
    tag = run_tag(dataset, stride, name)
    command = harness_command(
        [
            *overrides,
            f"data={dataset}",
            f"data.min_dt_stride={stride}",
            f"data.max_dt_stride={stride}",
            *([] if any(o.startswith("trainer.epochs=") for o in overrides) else ["trainer.epochs=30"]),
            f"trainer.max_minutes={minutes:.2f}",
            "trainer.max_rollout_steps=5",
            "data.max_rollout_steps=5",
            "trainer.rollout_val_frequency=1000",
            "trainer.short_validation_length=8",
            "trainer.progress=false",
            "auto_resume=false",
            f"experiment_dir={experiments / tag}",
        ]
    )
    commands[(dataset, stride, name)] = " ".join(command[1:])
    log = out / f"{tag}.log"
    finished = args.resume and log.with_suffix(".done").exists()
    if train and not (args.evaluate_only or finished):
        shutil.rmtree(experiments / tag, ignore_errors=True)  # a half-trained earlier attempt
        print(f"training {tag} ({minutes:.2f} min)", flush=True)
        run(command, log, env, args.jobs, args.threads)
    return latest_run(experiments / tag)


def write_zero_shot_checkpoint(dataset: str, base: Path, path: Path) -> Path:
    """The shipped backbone as it is, saved as a checkpoint for `dataset` (the no-adaptation reference row)."""
    from well_upao.harness.model_factory import na_transformer
    from well_upao.models.checkpoint import build_payload, save_checkpoint

    model = na_transformer(preset="tiny", dataset_name=dataset, well_base_path=str(base), pretrained="shipped")
    save_checkpoint(path, build_payload(model))
    return path


def collect_scores(eval_out: Path, dataset: str, stride: int, results: dict) -> None:
    """Read `well-upao evaluate`'s JSON in `eval_out` (its rows carry our table's labels)."""
    for name, score in rows_by_name(evaluation(eval_out)).items():
        results[(dataset, stride, name)] = score


def evaluate_rows(
    rows: list[tuple[str, Path]], dataset: str, stride: int, out: Path, env: dict, results: dict, before=(), after=()
) -> None:
    """``well-upao evaluate`` of ``rows`` (label, run folder or checkpoint: rows named by label, run names can clash)
    on ``dataset`` at ``stride`` into ``out``, 5 rollout steps, its scores into ``results`` (``collect_scores``);
    ``before`` / ``after``: more options, before ``--data`` and after the rest."""
    command = [*WELL_UPAO, "evaluate", *[f"{label}={path}" for label, path in rows], *before]
    command += ["--data", dataset, "--stride", str(stride), "--out", str(out), "--quiet", "--rollout-steps", "5"]
    subprocess.run([*command, *after], check=True, env=env, stdout=subprocess.DEVNULL)
    collect_scores(out, dataset, stride, results)
