"""The Well's four neural operators under both training protocols at one equal budget (reports/well_protocols.md).

For every dataset and model (FNO, TFNO, U-Net, CNextU-Net) it trains two rows through the harness with the same
wall-clock budget: ``experiment=<model>`` (the paper's protocol: history 8, no normalisation, per-step schedule,
clipping) and ``experiment=<model>_well`` (the Well's released protocol: history 4, z-score, per-epoch warm-up +
cosine over the protocol's 200 epochs, no clipping; docs/evaluation.md, "Comparing with the leaderboard"). Both keep
their own epoch counts, so a short budget runs the first epochs of each schedule, as a longer run would. Then one
``well-upao evaluate`` of all rows beside the classical baselines (every row on the same frames: those after the
longest history), the learning curves (validation VRMSE, the Well's definition, from each run's ``metrics.jsonl``,
against wall-clock seconds) as a figure, and the Well's published validation VRMSE in its own labelled column.

    python benchmarks/studies/well_protocols.py --base /tmp/replicas --make-data --datasets shear_flow --minutes 10 \
        --jobs 2 --threads 1 --resume

Resumable: with ``--resume`` a row whose log has a ``.done`` marker is not retrained; ``--evaluate-only`` only
re-evaluates and rewrites the report (keeping its hand-written reading, which must cite the new tables). With
``--make-data`` a missing replica is made under ``--base`` as ``benchmarks/harness/study_data.py`` defines it; other
data are not made here (point ``--base`` at them and say how they were made with ``--data-note``). ``--jobs 2 --threads
1`` trains two rows at a time, one core each, and every row's CPU time is measured and reported.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from well_upao.evaluate.leaderboard import MODELS, WELL_VALIDATION
from well_upao.harness.metrics_file import read_metrics
from well_upao.harness.runs import harness_command, latest_run

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.jobs import WELL_UPAO, run_all, run_logged, sharing_note, thread_env, write_done
from harness.readings import exit_if_stale, write_keeping_reading
from harness.study_data import STUDY_REPLICAS, ensure_replica, replica_note

#: model (config name) -> the leaderboard's name
MODEL_NAMES = dict(zip(("fno", "tfno", "unet_classic", "unet_convnext"), MODELS, strict=True))
PROTOCOLS = {"paper": "{model}", "well": "{model}_well"}


def row_tag(dataset: str, model: str, protocol: str) -> str:
    return f"{dataset}-{model}-{protocol}"


def row_command(args, dataset: str, model: str, protocol: str) -> tuple[list[str], Path]:
    """The harness command of one row and its experiment folder."""
    experiments = args.out.resolve() / "experiments" / row_tag(dataset, model, protocol)
    command = harness_command(
        [
            f"experiment={PROTOCOLS[protocol].format(model=model)}",
            f"data={dataset}",
            f"trainer.max_minutes={args.minutes:g}",
            "trainer.max_rollout_steps=5",
            "data.max_rollout_steps=5",
            "trainer.rollout_val_frequency=1000",
            "trainer.validate_start=false",  # the budget counts from the start: no validation of the untrained model
            f"trainer.short_validation_length={args.validation_batches}",
            "trainer.progress=false",
            "auto_resume=false",
            f"experiment_dir={experiments}",
            *args.extra,
        ]
    )
    if args.batch_size:
        command.append(f"data.batch_size={args.batch_size}")
    return command, experiments


def train_row(args, dataset: str, model: str, protocol: str, env: dict) -> None:
    """Train one row unless it finished before (``--resume``); its ``.done`` marker records the wall clock and the
    CPU time the row took (JSON)."""
    command, experiments = row_command(args, dataset, model, protocol)
    log = args.out.resolve() / f"{row_tag(dataset, model, protocol)}.log"
    done = log.with_suffix(".done")
    if args.resume and done.exists():
        return
    shutil.rmtree(experiments, ignore_errors=True)  # a half-trained earlier attempt
    print(f"training {log.stem} ({args.minutes:g} min)", flush=True)
    finished = run_logged(command, log, thread_env(env, args.threads))
    if finished.returncode != 0:
        raise RuntimeError(f"failed ({log}): {' '.join(command)}")
    write_done(done, finished, args.jobs, args.threads)
    print(f"{log.stem}: {finished.wall_seconds / 60:.1f} min, {finished.cpu_seconds / 60:.1f} CPU-min", flush=True)


def row_costs(args, dataset: str, model: str, protocol: str) -> dict:
    """The wall clock and CPU seconds a finished row recorded (empty for a row trained before they were)."""
    done = args.out.resolve() / f"{row_tag(dataset, model, protocol)}.done"
    try:
        return json.loads(done.read_text())
    except (OSError, ValueError):
        return {}


def curve(run: Path, dataset: str) -> list[tuple[float, float]]:
    """(seconds, validation VRMSE of the Well's definition) of every validation line of a run."""
    key = f"valid_{dataset}/full_VRMSE_T=all"
    return [(line["seconds"], line[key]) for line in read_metrics(run) if key in line and "seconds" in line]


def summary(run: Path) -> dict:
    """Epochs, steps, the last epoch's learning rate, the protocol recorded by the run."""
    lines = read_metrics(run)
    trained = [line for line in lines if "train_loss" in line]
    first = lines[0] if lines else {}
    return {
        "epochs": trained[-1]["epoch"] if trained else 0,
        "steps": trained[-1].get("step", 0) if trained else 0,
        "lr": trained[-1].get("lr") if trained else None,
        "seconds": trained[-1].get("seconds") if trained else None,
        "protocol": first.get("protocol", "?"),
        "settings": first.get("protocol_settings", {}),
    }


def evaluate(args, dataset: str, runs: dict[str, Path], env: dict) -> dict:
    out = args.out.resolve() / f"evaluation-{dataset}"
    command = [*WELL_UPAO, "evaluate", *[f"{k}={v}" for k, v in runs.items()]]
    command += ["--out", str(out), "--quiet", "--rollout-steps", "5", "--split", "valid"]
    if args.no_solver:
        command.append("--no-solver")
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    return json.loads(next(out.glob(f"evaluation_{dataset}_valid_stride1.json")).read_text())


def plot_curves(curves: dict[str, list[tuple[float, float]]], persistence: float, dataset: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 4.5))
    for label, points in curves.items():
        if points:
            style = "-" if label.endswith("well") else "--"
            axis.plot([p[0] / 60 for p in points], [p[1] for p in points], style, marker=".", label=label)
    axis.axhline(persistence, color="k", lw=0.8, label="persistence (evaluate, frames after 8)")
    axis.set_yscale("log")
    axis.set_xlabel("wall-clock minutes of training (this machine, shared)")
    axis.set_ylabel("validation VRMSE (the Well's definition)")
    axis.set_title(f"{dataset}: paper protocol (dashed) vs the Well's (solid)")
    axis.legend(fontsize=7)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)


def per_channel_table(scores: dict[str, dict], model_rows: list[str]) -> list[str]:
    """Evaluate's one-step VRMSE (the Well's definition) of every row per channel: a mean over channels can hide one
    channel far above 1 (a field nearly uniform in space has a tiny spatial variance to divide by)."""
    names = [n for n in ("persistence", "extrap1", "extrap2", "solver", *model_rows) if n in scores]
    if not names:
        return []
    channels = list(scores[names[0]]["one_step_vrmse_well"])
    return [
        "",
        "Per channel (evaluate VRMSE, the Well's definition):",
        "",
        "| row | " + " | ".join(channels) + " |",
        "|---|" + "---|" * len(channels),
        *[
            f"| {name.replace('_', ' ')} | "
            + " | ".join(f"{scores[name]['one_step_vrmse_well'][c]:.4g}" for c in channels)
            + " |"
            for name in names
        ],
    ]


def summary_table(datasets: list[str], cells: dict[tuple[str, str], str]) -> list[str]:
    """Every row of every dataset in one table: evaluate VRMSE (the Well's definition, the frames after the 8th),
    the classical rows first and the Well's published validation VRMSE last (full-size data, 200 GPU epochs)."""
    if not cells:
        return []
    names = list(dict.fromkeys(name for name, _ in cells))
    published = [n for n in names if n.endswith("published validation")]
    names = [n for n in names if n not in published] + published
    header = "| row | " + " | ".join(datasets) + " |"
    return [
        "",
        "## All datasets",
        "",
        "Evaluate VRMSE (the Well's definition) of every row on its dataset's validation frames after the 8th; the "
        "Well's published validation VRMSE (full-size data, 200 GPU epochs) in its own rows at the bottom.",
        "",
        header,
        "|---|" + "---|" * len(datasets),
        *[f"| {name} | " + " | ".join(cells.get((name, d), "") for d in datasets) + " |" for name in names],
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", type=Path, required=True, help="the Well base path holding the datasets")
    parser.add_argument("--datasets", nargs="+", default=["shear_flow"])
    parser.add_argument("--models", nargs="+", default=list(MODEL_NAMES), choices=list(MODEL_NAMES))
    parser.add_argument("--minutes", type=float, default=10.0, help="wall-clock training budget of every row")
    parser.add_argument("--jobs", type=int, default=1, help="rows trained at once")
    parser.add_argument("--threads", type=int, default=None, help="torch threads per row (default: torch's)")
    parser.add_argument("--batch-size", type=int, default=None, help="override both protocols' batch sizes")
    parser.add_argument("--validation-batches", type=int, default=8, help="validation batches between epochs")
    parser.add_argument("--out", type=Path, default=Path("outputs/well_protocols"))
    parser.add_argument("--report", type=Path, default=Path("reports/well_protocols.md"))
    parser.add_argument(
        "--make-data",
        action="store_true",
        help="make a missing replica under --base with benchmarks/harness/study_data.py's arguments (the data note "
        "then says how)",
    )
    parser.add_argument("--data-note", default="", help="how the data were made (goes into the report)")
    parser.add_argument("--resume", action="store_true", help="keep rows that finished")
    parser.add_argument("--evaluate-only", action="store_true")
    parser.add_argument("--no-solver", action="store_true")
    parser.add_argument("extra", nargs="*", help="Hydra overrides added to every row")
    args = parser.parse_args()
    env = dict(os.environ, WELL_BASE_PATH=str(args.base.resolve()))
    env.pop("WANDB_MODE", None)
    notes = [args.data_note] if args.data_note else []
    for dataset in args.datasets:
        if args.make_data and dataset in STUDY_REPLICAS:
            ensure_replica(dataset, args.base.resolve(), quiet=False)
            notes.append(f"{dataset}: {replica_note(dataset)}")
    rows = [(d, m, p) for d in args.datasets for m in args.models for p in PROTOCOLS]
    if not args.evaluate_only:
        run_all([lambda row=row: train_row(args, *row, env) for row in rows], args.jobs)
    records = [row_costs(args, *row) for row in rows]
    sharing = sharing_note([r for r in records if r], args.jobs, args.threads)
    lines = [
        "# The Well's neural operators under the paper's and the Well's training protocols",
        "",
        "Generated by `python " + " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]) + "`.",
        "",
        f"Every row trained for the same wall-clock budget, {args.minutes:g} minutes (`trainer.max_minutes`), "
        f"{sharing} on this machine's two cores; the "
        "CPU minutes each row got are measured (its process's user + system time) and shown in the table. One seed. "
        "`paper` = `experiment=<model>` (history 8, no normalisation, AdamW with the paper's lr, per-step warm-up + "
        "cosine over 30 epochs, clipping 1.0, early stopping); `well` = `experiment=<model>_well` (history 4, z-score, "
        "AdamW lr 1e-2, per-epoch warm-up 5 + cosine over 200 epochs, no clipping): each runs the first epochs of its "
        "own schedule within the budget; the budget includes the validations between epochs, and neither row validates "
        "the untrained model (`trainer.validate_start=false`). Evaluation: `well-upao evaluate` of all rows of a "
        "dataset together, on its "
        "validation split, every row on the frames after the 8th (the longest history); the Well's published "
        "validation VRMSE is on its full-size data after 200 GPU epochs and sits in its own column, it does not "
        "measure the same thing.",
    ]
    if notes:
        lines += ["", "Data: " + "; ".join(notes) + "."]
    sections: list[str] = []
    summary_cells: dict[tuple[str, str], str] = {}  # (row, dataset) -> evaluate VRMSE (Well def.)
    for dataset in args.datasets:
        section: list[str] = []  # goes after the summary table
        runs, commands, curves, costs = {}, {}, {}, {}
        for model in args.models:
            for protocol in PROTOCOLS:
                command, experiments = row_command(args, dataset, model, protocol)
                run = latest_run(experiments)
                label = f"{MODEL_NAMES[model]} {protocol}"
                commands[label] = " ".join(command[1:])
                if run is not None:
                    runs[label.replace(" ", "_")] = run
                    curves[label] = curve(run, dataset)
                    costs[label] = row_costs(args, dataset, model, protocol)
        if not runs:
            continue
        result = evaluate(args, dataset, runs, env)
        scores = {s["name"]: s for s in result["scores"]}
        persistence = scores["persistence"]["mean_vrmse_well"]
        figure = args.report.parent / "figures" / f"well_protocols_{dataset}.png"
        plot_curves(curves, persistence, dataset, figure)
        published = dict(zip(MODELS, WELL_VALIDATION.get(dataset, (None,) * 4), strict=True))
        section += [
            "",
            f"## {dataset}",
            "",
            f"Evaluated on {result['n_trajectories']} validation trajectories, history {result['history']}. "
            f"Learning curves: `{figure.relative_to(args.report.parent).as_posix()}`.",
            "",
            "| row | protocol (recorded) | history | batch | CPU min | epochs | steps | last lr | best validation "
            "VRMSE (Well def., own windows) | evaluate VRMSE (Well def.) | evaluate VRMSE (paper def.) | "
            "5-step rollout (Well def.) | the Well's published validation VRMSE |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for name in ("persistence", "extrap1", "extrap2", "solver"):
            if name in scores:
                s = scores[name]
                roll = f"{s['rollout_vrmse_well'][-1]:.4g}" if s["rollout_vrmse_well"] else ""
                section.append(
                    f"| {name} | | | | | | | | | {s['mean_vrmse_well']:.4g} | {s['mean_vrmse_paper']:.4g} | {roll} | |"
                )
        for label in curves:
            key = label.replace(" ", "_")
            s, info = scores.get(key), summary(runs[key])
            best = min((v for _, v in curves[label]), default=float("nan"))
            roll = f"{s['rollout_vrmse_well'][-1]:.4g}" if s and s["rollout_vrmse_well"] else ""
            model = label.rsplit(" ", 1)[0]
            shown = f"{published[model]:.4g}" if published.get(model) is not None else ""
            lr = f"{info['lr']:.3g}" if info["lr"] is not None else ""
            cpu = costs[label].get("cpu_seconds")
            cpu = f"{cpu / 60:.1f}" if cpu is not None else ""
            settings = info["settings"]
            section.append(
                f"| {label} | {info['protocol']} | {settings.get('n_steps_input', '')} | "
                f"{settings.get('batch_size', '')} | {cpu} | {info['epochs']} | {info['steps']} | {lr} | {best:.4g} | "
                f"{s['mean_vrmse_well']:.4g} | {s['mean_vrmse_paper']:.4g} | {roll} | {shown} |"
            )
        section += per_channel_table(scores, [label.replace(" ", "_") for label in curves])
        passed = []
        for label, points in curves.items():
            below = [t for t, v in points if v < persistence]
            if below:
                passed.append(f"{label} after {below[0] / 60:.1f} min")
        section += [
            "",
            f"Rows whose validation VRMSE (the Well's definition, their own windows) fell below persistence's evaluate "
            f"VRMSE ({persistence:.4g}) within the budget: {', '.join(passed) if passed else 'none'}.",
        ]
        section += ["", "Commands (with `WELL_BASE_PATH` set to the data's base path):", ""]
        section += [f"- {label}: `python {command}`" for label, command in commands.items()]
        for name in ("persistence", "extrap2", *[label.replace(" ", "_") for label in curves]):
            if name in scores:
                summary_cells[(name.replace("_", " "), dataset)] = f"{scores[name]['mean_vrmse_well']:.3g}"
        for model in (MODEL_NAMES[m] for m in args.models):
            if published.get(model) is not None:
                summary_cells[(f"{model}, the Well's published validation", dataset)] = f"{published[model]:.3g}"
        sections += section
    lines += summary_table(args.datasets, summary_cells) + sections
    args.report.parent.mkdir(parents=True, exist_ok=True)
    write_keeping_reading(args.report, lines)  # keeps a hand-written "## Reading", checked against it
    print(f"wrote {args.report}")
    exit_if_stale(args.report)


if __name__ == "__main__":
    main()
