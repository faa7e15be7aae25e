"""Long horizons without labels: one-step UPAO against UPAO over its own rollouts, beside supervised LoRA and the
classical rows, in the Well's rollout windows (issue 41 part 5: reports/rollout.md).

Rows trained (the quickstart's backbone ``shipped_extrap2`` with ``model.base=extrap2``, LoRA / NSLoRA adapters, one
equal budget of ``--minutes`` of training per run, ``trainer.max_minutes`` with ``trainer.budget_clock=training`` (the
validations, whose cost differs between rows, not counted), on ``--threads`` threads, no early stopping):

* ``UPAO one-step``: ``model=na_nslora trainer=upao`` (``trainer.rollout_steps=1``, the paper's objective);
* ``UPAO 4-step``: the same with ``trainer.rollout_steps=4``; ``UPAO 4-step pushforward``: and ``rollout_pushforward``;
* ``supervised LoRA one-step`` / ``4-step``: ``model=na_lora trainer=shifted`` (labels on every step);

and, from ``well-upao evaluate``, persistence, extrap1/extrap2 and the solver where one exists. Data: the four Well
study replicas (``benchmarks/harness/study_data.py``) and wave2d / advdiff2d (``well-upao generate-exact`` at 64^2, 12
trajectories of 101 frames, a quarter for validation), all at stride 1 and history 8, so that every validation
trajectory holds the 13:30 window. Seeds: the training order (``data.shuffle_seed``) and ``+seed`` (initial adapter
weights) together; ``+seed`` reaches the adapters through the model config since the fix of 2026-11-26 (the runs of
reports/rollout.md and reports/rollout_gpu.md predate it: their adapters were drawn unseeded).

Facts from ``metrics.jsonl`` and evaluate's JSON only. The columns: one-step (the Well's VRMSE, channel mean), the
windows 6:12 and 13:30 (``loss[a:b].mean()`` over 0-based steps of up to ``--rollout-starts`` rollouts per
validation trajectory), each cell the mean over seeds with the seeds and rollouts behind it.

The rule for a difference between two rows of one dataset, stated before the runs: it counts as *resolved* when at
least two seeds ran, the same row is better on every seed, and the gap between the seed means exceeds both the sum of
the two rows' seed ranges (max - min) and 1% of the larger mean (rounding: a model that kept its prior predicts
extrap2 in float32); otherwise it is *not resolved* at this size.

The guard's record (UPAO rows): what ``best.pt`` holds (the selected epoch, or the prior when kept) against a label
oracle that picks, among the same validated candidates and the prior, the lowest ``valid_rollout_VRMSE_6:12`` (the first
``trainer.vrmse_trajectories`` = 2 validation trajectories rolled out 12 steps from their first window, logged at every
validation, never read by the selection).

Resumable (a finished run leaves ``done.json``; an evaluated (dataset, seed) its JSON).

    python benchmarks/studies/rollout_study.py --out outputs/rollout_study --report reports/rollout.md \
        --jobs 1 --threads 2
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import subprocess
import sys
from pathlib import Path

from well_upao.harness.metrics_file import read_metrics
from well_upao.harness.runs import harness_command, latest_run

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.jobs import WELL_UPAO, add_study_arguments, run_study_case, sharing_note, study_arguments, thread_env
from harness.jobs import run_all as run_tasks
from harness.readings import portable_paths
from harness.study_data import STUDY_REPLICAS, ensure_study_dataset, replica_note

from studies.rollout_tables import (
    CLASSICAL,
    ROWS,
    cell_text,
    comparisons,
    dataset_table,
    guard_record,
    resolved,
    row_values,
    training_record,
    training_table,
)

#: the study's command line and the tables it reads, as tests and other studies import them from here
__all__ = ["ROWS", "cell_text", "comparisons", "dataset_table", "guard_record", "main", "resolved", "training_record"]

EXACT = ("wave2d", "advdiff2d")
HISTORY = 8


def slug(text: str) -> str:
    return text.lower().replace(" ", "_")


def run_name(dataset: str, row: str, seed: int) -> str:
    return f"{dataset}-{slug(row)}-seed{seed}"


def cases(args) -> list[tuple[str, str, int]]:
    """Every (dataset, row, seed), the first seed of every (dataset, row) first: a capped study covers the grid."""
    grid = itertools.product(args.seeds, args.datasets, args.rows)
    return [(dataset, row, seed) for seed, dataset, row in grid]


def budget_overrides(args) -> list[str]:
    """Each run's budget: ``--minutes`` of training (validations not counted), or ``--max-steps`` optimizer steps
    whatever they take (an equal number of steps per row in place of an equal time)."""
    if args.max_steps is not None:
        return [f"+trainer.max_steps={args.max_steps}"]
    return [f"trainer.max_minutes={args.minutes}", "trainer.budget_clock=training"]


def budget_text(args) -> str:
    if args.max_steps is not None:
        return f"{args.max_steps} optimizer steps each (`trainer.max_steps`, whatever time they take)"
    return f"{args.minutes} minutes of training each (`trainer.max_minutes`, validations not counted)"


def command(args, dataset: str, row: str, seed: int, experiment: Path) -> list[str]:
    return harness_command(
        [
            *ROWS[row],
            f"data={dataset}",
            "model.pretrained=shipped_extrap2",
            "model.base=extrap2",
            "optimizer.lr=1e-3",
            f"data.n_steps_input={HISTORY}",
            "data.min_dt_stride=1",
            "data.max_dt_stride=1",
            "data.batch_size=4",
            f"data.shuffle_seed={seed}",
            f"+seed={seed}",
            "trainer.epochs=1000",
            f"trainer.epoch_steps={args.steps}",
            *budget_overrides(args),
            "trainer.patience=0",
            "trainer.warmup_steps=5",
            "trainer.max_rollout_steps=2",
            "data.max_rollout_steps=30",
            "trainer.rollout_val_frequency=100000",
            f"trainer.short_validation_length={args.validation_batches}",
            *(["trainer.rollout_vrmse_steps=12"] if "trainer=upao" in ROWS[row] else []),
            "trainer.progress=false",
            "auto_resume=false",
            f"experiment_dir={experiment}",
        ]
    )


def ensure_dataset(args, dataset: str) -> Path:
    """The Well base path holding ``dataset``, made if missing (``study_data.ensure_study_dataset``)."""
    return ensure_study_dataset(dataset, args.out / "datasets", 64)


def run_one(args, case: tuple[str, str, int]) -> None:
    folder = args.out / "runs" / run_name(*case)
    base = ensure_dataset(args, case[0])
    run_study_case(args, run_name(*case), folder, command(args, *case, folder / "experiment"), base)


def evaluation_file(args, dataset: str, seed: int) -> Path:
    return args.out / "evaluations" / f"{dataset}-seed{seed}" / f"evaluation_{dataset}_valid_stride1.json"


def evaluate(args, dataset: str, seed: int) -> None:
    """``well-upao evaluate`` of the (dataset, seed)'s finished runs beside the classical rows (skipped when its
    JSON exists or a run is missing)."""
    target = evaluation_file(args, dataset, seed)
    folders = {row: latest_run(args.out / "runs" / run_name(dataset, row, seed) / "experiment") for row in args.rows}
    if target.is_file() or any(f is None for f in folders.values()):
        return
    rows = [f"{row}={folder}" for row, folder in folders.items()]
    cmd = [*WELL_UPAO, "evaluate", *rows, "--rollout-steps", "30", "--rollout-starts", str(args.rollout_starts),
           "--history", str(HISTORY), "--out", str(target.parent), "--quiet",
           *(["--no-solver"] if args.no_solver else [])]  # fmt: skip
    env = thread_env(dict(os.environ, WELL_BASE_PATH=str(args.out / "datasets")), args.threads)
    result = subprocess.run(["nice", "-n", "10", *cmd], env=env, capture_output=True, text=True)
    print(f"evaluate {dataset} seed {seed}: exit {result.returncode}", flush=True)
    if result.returncode != 0:
        print(result.stderr[-2000:], flush=True)


def run_all(args) -> None:
    pending = [c for c in cases(args) if not (args.out / "runs" / run_name(*c) / "done.json").is_file()]
    pending = pending[: args.max_runs] if args.max_runs is not None else pending
    for dataset in dict.fromkeys(c[0] for c in pending):
        ensure_dataset(args, dataset)  # before the runs: two runs must not make one dataset at once
    run_tasks([lambda case=case: run_one(args, case) for case in pending], args.jobs)
    for dataset, seed in itertools.product(args.datasets, args.seeds):
        evaluate(args, dataset, seed)


# ---------------------------------------------------------------------------------------------- analysis


def evaluations(args) -> dict[str, dict[int, dict]]:
    """Evaluate's JSON per dataset and seed (those written)."""
    out: dict[str, dict[int, dict]] = {}
    for dataset, seed in itertools.product(args.datasets, args.seeds):
        path = evaluation_file(args, dataset, seed)
        if path.is_file():
            out.setdefault(dataset, {})[seed] = json.loads(path.read_text())
    return out


def load_guard(args) -> list[dict]:
    records = []
    for dataset, row, seed in cases(args):
        if "trainer=upao" not in ROWS[row]:
            continue
        folder = latest_run(args.out / "runs" / run_name(dataset, row, seed) / "experiment")
        if folder is None or not (args.out / "runs" / run_name(dataset, row, seed) / "done.json").is_file():
            continue
        lines = [line for line in read_metrics(folder) if "valid" in line]
        record, reached = guard_record(lines), training_record(lines)
        if record is not None:
            records.append({"dataset": dataset, "row": row, "seed": seed} | record | {"reached": reached})
    return records


def figure_path(report_path: Path) -> Path:
    """The figure beside the report, named after it (``rollout.md`` -> ``rollout_curves.png``)."""
    return report_path.with_name(f"{report_path.stem}_curves.png")


def run_devices(args) -> list[str]:
    """Where the finished runs trained, as their ``metrics.jsonl`` says (``cuda (NVIDIA H200)``, ``cpu``)."""
    devices = []
    for dataset, row, seed in cases(args):
        folder = latest_run(args.out / "runs" / run_name(dataset, row, seed) / "experiment")
        lines = read_metrics(folder) if folder is not None else []
        if lines and lines[0].get("device"):
            name = lines[0].get("device_name")
            devices.append(lines[0]["device"] + (f" ({name})" if name else ""))
    return sorted(set(devices))


def figure(args, results: dict[str, dict[int, dict]], path: Path) -> None:
    """VRMSE against rollout step, one panel per dataset, the seed mean of every row."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results)
    columns = min(3, len(names))
    rows = math.ceil(len(names) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4 * columns, 3.2 * rows), squeeze=False)
    panels = axes.ravel()
    for ax in panels[len(names) :]:
        ax.set_visible(False)
    for ax, name in zip(panels, names, strict=False):
        for row in [*ROWS, "persistence", "extrap2", "solver"]:
            curves = [row_values(r, row) for r in results[name].values()]
            curves = [c["curve"] for c in curves if c is not None and c["curve"]]
            if not curves:
                continue
            steps = min(len(c) for c in curves)
            mean = [sum(c[k] for c in curves) / len(curves) for k in range(steps)]
            ax.semilogy(range(1, steps + 1), mean, label=row, ls="--" if row in CLASSICAL else "-")
        for start, end in ((6, 12), (13, 30)):
            ax.axvspan(start + 1, end, color="0.9", zorder=0)
        ax.set_title(name)
        ax.set_xlabel("rollout step")
    for ax in axes[:, 0]:
        ax.set_ylabel("VRMSE (the Well's, channel mean)")
    handles = {label: handle for ax in panels for handle, label in zip(*ax.get_legend_handles_labels(), strict=True)}
    # every row drawn in any panel, once, under the panels; the shaded spans are the Well's windows 6:12 and 13:30
    ncol = min(len(handles), 2 if columns == 1 else 5)
    legend_inches = 0.25 + 0.2 * math.ceil(len(handles) / ncol)
    fig.set_size_inches(4 * columns, 3.2 * rows + legend_inches)
    fig.legend(handles.values(), handles.keys(), loc="lower center", ncol=ncol, fontsize=8)
    fig.tight_layout(rect=(0, legend_inches / (3.2 * rows + legend_inches), 1, 1))
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=110)
    os.replace(tmp, path)


def exact_sets_note(datasets: list[str]) -> str:
    """The header's words on the exact sets of the study (``none`` where only replicas ran)."""
    exact = [name for name in datasets if name in EXACT]
    return f"{', '.join(exact)} at 64^2 (12 trajectories of 101 frames, 3 for validation)" if exact else "none"


def guard_sections(guard: list[dict]) -> list[str]:
    """The guard on the UPAO runs against the 6:12 label oracle, and what training reached (nothing without runs)."""
    if not guard:
        return []
    lines: list[str] = []
    matched = sum(r["matched"] for r in guard)
    worst = max(guard, key=lambda r: r["cost"])
    lines += [
        "## The guard on these runs",
        "",
        f"UPAO runs: {len(guard)}; what `best.pt` holds matched the 6:12 label oracle in {matched} of "
        f"{len(guard)}; worst cost {worst['cost']:.3g}x the oracle's 6:12 VRMSE ({worst['dataset']}, "
        f"{worst['row']}, seed {worst['seed']}). Compare reports/trust.md's prior study (one-step oracle).",
        "",
        "| dataset | row | seed | kept | oracle | matched | cost |",
        "|---|---|---|---|---|---|---|",
        *[
            f"| {r['dataset']} | {r['row']} | {r['seed']} | {r['kept']} | {r['oracle']} | "
            f"{'yes' if r['matched'] else 'no'} | {r['cost']:.3g} |"
            for r in guard
        ],
        "",
    ]
    lines += [
        "## What training reached, whatever best.pt kept",
        "",
        "From `metrics.jsonl`: the 6:12 window of the first 2 validation trajectories rolled out from their first "
        "window (labels for the record, never read by the selection), per seed (seed 0 / seed 1).",
        "",
        *training_table([r | r["reached"] for r in guard]),
        "",
    ]
    return lines


def report(args, results: dict[str, dict[int, dict]], guard: list[dict]) -> str:
    records = [json.loads(p.read_text()) for p in (args.out / "runs").glob("*/done.json")]
    cpu_minutes = sum(r["cpu_seconds"] for r in records) / 60
    replicas = "; ".join(replica_note(name) for name in args.datasets if name in STUDY_REPLICAS)
    lines = [
        "# Long horizons without labels: UPAO over its own rollouts (issue 41)",
        "",
        "Command:",
        "",
        f"    python benchmarks/studies/rollout_study.py {' '.join(args.argv)}",
        "",
        f"{len(records)} of {len(cases(args))} planned runs finished, {budget_text(args)}, {cpu_minutes:.0f} "
        "CPU-minutes in all "
        f"({sharing_note(records, args.jobs, args.threads)}), trained on {' and '.join(run_devices(args)) or '?'}. "
        "Backbone `shipped_extrap2`, `model.base=extrap2`, "
        f"history {HISTORY}, stride 1, batch 4, lr 1e-3, {args.steps} steps per epoch. Replicas: {replicas or 'none'}; "
        f"exact sets: {exact_sets_note(args.datasets)}. Cells: the mean over seeds "
        "(± half the range), the Well's VRMSE (channel mean) of the validation split; windows over up to "
        f"{args.rollout_starts} rollouts per trajectory.",
        "",
        "Rule, stated before the runs: a difference between two rows counts as resolved when at least two seeds ran, "
        "the same row is better on every seed, and the gap between seed means exceeds both the sum of the rows' seed "
        "ranges and 1% of the larger mean.",
        "",
    ]
    for name, per_seed in results.items():
        lines += dataset_table(name, per_seed)
    comparison = [c for name, per_seed in results.items() for c in comparisons(name, per_seed)]
    if comparison:
        lines += ["## Differences on the 6:12 window", "", "| dataset | pair | by the rule |", "|---|---|---|"]
        lines += [*comparison, ""]
    lines += guard_sections(guard)
    lines += [f"![VRMSE against rollout step]({figure_path(args.report).name})", ""]
    return portable_paths("\n".join(lines))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("outputs/rollout_study"))
    parser.add_argument("--report", type=Path, default=Path("reports/rollout.md"))
    parser.add_argument("--datasets", nargs="+", default=[*STUDY_REPLICAS, *EXACT])
    parser.add_argument("--rows", nargs="+", default=list(ROWS), choices=list(ROWS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument(
        "--minutes", type=float, default=2.0, help="training budget per run (trainer.max_minutes, validations excluded)"
    )
    parser.add_argument(
        "--max-steps", type=int, default=None, help="budget each run this many optimizer steps instead of --minutes"
    )
    parser.add_argument("--steps", type=int, default=25, help="optimizer steps per epoch (one validation each)")
    parser.add_argument("--validation-batches", type=int, default=2)
    parser.add_argument("--rollout-starts", type=int, default=3)
    parser.add_argument(
        "--no-solver", action="store_true", help="evaluate without the solver row (its rollouts dominate the time)"
    )
    add_study_arguments(parser)
    args = study_arguments(parser, argv)
    if not args.analyse_only:
        run_all(args)
    results = evaluations(args)
    if not results:
        raise SystemExit("no evaluated (dataset, seed) to report")
    reading = ""
    if args.report.is_file() and "## Reading" in args.report.read_text():
        reading = "## Reading" + args.report.read_text().split("## Reading", 1)[1]
    figure(args, results, figure_path(args.report))
    tmp = args.report.with_suffix(".md.tmp")
    tmp.write_text(report(args, results, load_guard(args)) + reading)
    tmp.replace(args.report)
    print(f"wrote {args.report} from {sum(len(v) for v in results.values())} evaluations")


if __name__ == "__main__":
    main()
