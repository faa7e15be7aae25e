"""The reports of ``benchmarks/studies/reproduce.py``: a study's tables (one per dataset and stride, its rows beside the
paper's numbers), its summary, the transfer study's panels, and the commands that made every row."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from well_upao.evaluate.leaderboard import MODELS, PAPER_MAIN_TABLE, WELL_VALIDATION
from well_upao.harness.metrics_file import first_value, read_metrics

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.jobs import sharing_note
from harness.readings import write_keeping_reading
from harness.study_data import STUDY_REPLICAS, replica_note
from harness.tables import table

from studies.reproduce_rows import (
    ABLATION_ROWS,
    AUTO_SEEDS,
    NORMALIZATION_ROWS,
    PAPER,
    PAPER_ABLATIONS,
    PAPER_NORMALIZATION,
    PAPER_ROW,
    TRANSFER_MODELS,
    ZERO_SHOT,
    foundation_rows,
)
from studies.reproduce_runs import minutes_per_run, run_folder, run_tag


def cpu_note(args, commands: dict[tuple, str]) -> str:
    """How the rows shared the CPU and the CPU time they took (from their ``.done`` markers)."""
    records = []
    for dataset, stride, name in commands:
        done = args.out.resolve() / f"{run_tag(dataset, stride, name)}.done"
        try:
            records.append(json.loads(done.read_text()))
        except (OSError, ValueError):
            continue
    cpu = [r["cpu_seconds"] / 60 for r in records if isinstance(r, dict) and "cpu_seconds" in r]
    note = sharing_note([r for r in records if isinstance(r, dict)], args.jobs, args.threads)
    if cpu:
        note += f"; measured CPU time {min(cpu):.2g}-{max(cpu):.2g} minutes a row, {sum(cpu) / 60:.2g} hours in all"
    return note


def write_transfer_report(args, results, commands, channels, minutes) -> None:
    """One panel per model: rows = source, columns = target; a cell is "zero-shot / UPAO" (mean paper VRMSE),
    the diagonal the supervised in-domain run; our backbone's row and the classical rows below."""
    stride, datasets = args.strides[0], args.datasets

    def value(target, name):
        score = results.get((target, stride, name))
        return f"{score['mean_vrmse_paper']:.3g}" if score else "n/a"

    header = "| source \\ target | " + " | ".join(datasets) + " |"
    rule = "|---|" + "---|" * len(datasets)
    lines = [
        "# Cross-target transfer panels at CPU scale",
        "",
        "Command: `python " + " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]) + "`",
        "",
        *[f"Data: {d}, {replica_note(d)}." for d in datasets if d in STUDY_REPLICAS],
        "",
        "Mean one-step VRMSE (the paper's definition) on each target's validation split. Off the diagonal a cell is",
        "*zero-shot / UPAO*: the source's supervised checkpoint evaluated on the target through the best subset of",
        "its channels (`evaluate --zero-shot-from`; --- where the source has fewer channels than the target), then",
        "finetuned on the target with UPAO from that checkpoint (`trainer.init_from`, missing channels zero, 5",
        f"epochs, lambda_BC = 1e4). The diagonal is the supervised in-domain run. Every run had {minutes:.3g} minutes",
        f"of wall clock on this CPU ({cpu_note(args, commands)}). Channels: "
        f"{', '.join(f'{d} {c}' for d, c in channels.items())}.",
        "",
    ]
    for model in TRANSFER_MODELS:
        lines += [f"## {model}", "", header, rule]
        for source in datasets:
            cells = []
            for target in datasets:
                if source == target:
                    cells.append(f"**{value(target, f'{model} supervised (in-domain)')}**")
                    continue
                zero = value(target, f"{model} zero-shot from {source}")
                zero = "---" if channels[source] < channels[target] else zero
                cells.append(f"{zero} / {value(target, f'{model} UPAO from {source}')}")
            lines.append(f"| {source} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += ["## Our backbone, foundation models and the classical rows", ""]
    if args.fm_weights is not None:
        lines += [
            "PDE-Transformer (size XS) is adapted with UPAO from random weights and from its pretraining on our",
            f"corpus (`{args.fm_weights}`, `--config-name pretrain_pde_transformer`), as many minutes per row.",
            "",
        ]
    lines += ["| row | " + " | ".join(datasets) + " |", rule]
    fm_names = [name for name, _ in foundation_rows(args.fm_weights)]
    for name in (ZERO_SHOT, "ours UPAO + NSLoRA", *fm_names, "persistence", "extrap2", "solver"):
        lines.append(f"| {name} | " + " | ".join(value(t, name) for t in datasets) + " |")
    lines += ["", "## Commands", ""]
    lines += [f"- {d}, stride {s}, {name}: `{command}`" for (d, s, name), command in commands.items()]
    write_keeping_reading(args.report, lines)


def regimes_summary(args, results) -> list[str]:
    """Per dataset and stride: extrapolation, the best UPAO and supervised rows (and their base), and the solver
    matched to the UPAO extrap2 row in cost and in accuracy (mean paper VRMSE, ms / prediction)."""

    def best(dataset, stride, prefix):
        found = [(n, v) for (d, s, n), v in results.items() if (d, s) == (dataset, stride) and n.startswith(prefix)]
        return min(found, key=lambda item: item[1]["mean_vrmse_paper"], default=(None, None))

    def cell(score):
        if score is None:
            return "n/a"
        return f"{score['mean_vrmse_paper']:.3g} ({score['seconds_per_prediction'] * 1e3:.3g} ms)"

    lines = [
        "## Summary",
        "",
        "Mean one-step VRMSE (paper's definition) and ms / prediction. Solvers are matched to the UPAO + NSLoRA, "
        "base extrap2 row: *cost-matched* is the most accurate fixed-step solver no slower than it (or the cheapest, "
        "marked \\*, when every solver is slower), *accuracy-matched* the cheapest one as accurate.",
        "",
        "| dataset | stride | extrap2 | best UPAO (base) | best supervised (base) | cost-matched solver "
        "| accuracy-matched solver | UPAO beats extrap2 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for dataset in args.datasets:
        for stride in args.strides:
            extrap2 = results.get((dataset, stride, "extrap2"))
            upao_name, upao = best(dataset, stride, "UPAO")
            supervised_name, supervised = best(dataset, stride, "supervised")
            cost_name, cost = best(dataset, stride, "solver, cost-matched")
            if cost is None:
                cost_name, cost = best(dataset, stride, "solver, slower")
            _, accuracy = best(dataset, stride, "solver, accuracy-matched")
            if extrap2 is None or upao is None:
                continue
            wins = "yes" if upao["mean_vrmse_paper"] < extrap2["mean_vrmse_paper"] else "no"
            lines.append(
                f"| {dataset} | {stride} | {cell(extrap2)} | {cell(upao)} ({upao_name.rsplit(' ', 1)[-1]}) "
                f"| {cell(supervised)} ({supervised_name.rsplit(' ', 1)[-1] if supervised_name else ''}) "
                f"| {cell(cost)}{'*' if cost_name and 'slower' in cost_name else ''} | {cell(accuracy)} | {wins} |"
            )
    return [*lines, ""]


def auto_summary(args, results) -> list[str]:
    """Per dataset: mean paper VRMSE over the seeds of the default and the auto rows, and what auto chose."""
    lines = [
        "## Summary",
        "",
        "Mean one-step VRMSE (paper's definition) over the seeds; `auto` chooses per run from the training frames "
        "(its choice is in the run's metrics.jsonl: `upao_derivative`, `upao_time_scheme`).",
        "",
        "| dataset | stride | default (fd / crank_nicolson) | auto | auto chose | auto better |",
        "|---|---|---|---|---|---|",
    ]
    for dataset in args.datasets:
        for stride in args.strides:
            means = {}
            for label in ("default", "auto"):
                values = [
                    results[(dataset, stride, f"UPAO + NSLoRA, {label}, seed {seed}")]["mean_vrmse_paper"]
                    for seed in AUTO_SEEDS
                    if (dataset, stride, f"UPAO + NSLoRA, {label}, seed {seed}") in results
                ]
                means[label] = sum(values) / len(values) if values else None
            if None in means.values():
                continue
            folder = run_folder(args, dataset, stride, f"UPAO + NSLoRA, auto, seed {AUTO_SEEDS[0]}")
            lines = read_metrics(folder) if folder else []
            derivative, scheme = first_value(lines, "upao_derivative"), first_value(lines, "upao_time_scheme")
            choice = f"{derivative}/{scheme}" if derivative else ""
            better = "yes" if means["auto"] < means["default"] else "no"
            lines.append(
                f"| {dataset} | {stride} | {means['default']:.4g} | {means['auto']:.4g} | {choice} | {better} |"
            )
    return [*lines, ""]


def ablations_summary(args) -> list[str]:
    """Whether the NSLoRA row's LoRA -> NS switch fired within its budget (else it measured plain LoRA)."""
    name = ABLATION_ROWS[-1][0]
    lines = [
        "## The LoRA -> NSLoRA switch",
        "",
        f'"{name}" differs from the LoRA row only after its switch; where the switch did not fire within the '
        "row's budget, the two rows measured the same method.",
        "",
        "| dataset | stride | switch |",
        "|---|---|---|",
    ]
    for dataset in args.datasets:
        for stride in args.strides:
            folder = run_folder(args, dataset, stride, name)
            if folder is None:
                continue
            switched = first_value(read_metrics(folder), "nslora_switch_epoch")
            fired = "did not fire" if switched is None else f"after epoch {switched}"
            lines.append(f"| {dataset} | {stride} | {fired} |")
    return [*lines, ""]


def paper_reference(study: str, name: str, dataset: str) -> str:
    """The paper's number beside a row of ``study`` on ``dataset`` (the Well's leaderboard too, where it has one)."""
    if study == "main" and name in PAPER_ROW and dataset in PAPER:
        return PAPER[dataset][PAPER_ROW[name]]
    if study == "main" and name in PAPER_ROW and dataset in PAPER_MAIN_TABLE:
        reference = PAPER_MAIN_TABLE[dataset][PAPER_ROW[name]]
        if PAPER_ROW[name] < len(MODELS):  # the Well's own leaderboard (validation, Well VRMSE)
            reference = f"{reference}; the Well {WELL_VALIDATION[dataset][PAPER_ROW[name]]} (Well def.)"
        return reference
    if study == "ablations" and name in PAPER_ABLATIONS:
        value = PAPER_ABLATIONS[name].get(dataset, "")
        return "---" if value is None else value
    if study == "normalization" and dataset in PAPER_NORMALIZATION:
        strategies = [r[0] for r in NORMALIZATION_ROWS]
        if name in strategies:
            return PAPER_NORMALIZATION[dataset][strategies.index(name)]
    return ""


def dataset_table(args, results: dict, names: list[str], dataset: str, stride: int) -> list[str]:
    """One dataset and stride's table: the classical rows, the matched solvers, then the study's rows."""
    matched = sorted(n for d, s, n in results if (d, s) == (dataset, stride) and n.startswith("solver, "))
    here = [v for k, v in results.items() if k[:2] == (dataset, stride)]
    held = max((len(v.get("rollout_vrmse_well") or []) for v in here), default=0)
    rows = []
    for name in names[:4] + matched + names[4:]:
        score = results.get((dataset, stride, name))
        if score is None:
            continue
        rollout = score.get("rollout_vrmse_well") or [float("nan")]
        vrmse = [f"{score['mean_vrmse_paper']:.4g}", f"{score['mean_vrmse_well']:.4g}"]
        reference, cost = paper_reference(args.study, name, dataset), f"{score['seconds_per_prediction'] * 1e3:.3g}"
        rows.append([name, *vrmse, reference, f"{rollout[-1]:.4g}", cost])
    columns = ["row", "paper def.", "Well def.", "paper (stride 1, 256^2)", f"rollout step {held} (Well)"]
    return [f"## {dataset}, stride {stride}", "", *table([*columns, "ms / prediction"], rows), ""]


def write_report(args, rows, commands, results) -> None:
    titles = {
        "main": "# Reproduction of the paper's main table at CPU scale",
        "normalization": "# UPAO normalisation strategies at CPU scale",
        "regimes": "# Where adaptation pays: prediction bases, strides, extrapolation and matched solvers",
        "auto": "# UPAO with the default residual discretisation vs auto (the lowest residual floor)",
        "ablations": "# UPAO ablations at CPU scale: boundary weight, LoRA vs full finetuning, pretraining, NSLoRA",
    }
    lines = [
        titles[args.study],
        "",
        f"Command: `python benchmarks/studies/reproduce.py --study {args.study} "
        f"--budget-minutes {args.budget_minutes:g} --datasets "
        f"{' '.join(args.datasets)} --strides {' '.join(map(str, args.strides))} --resolution {args.resolution} "
        f"--n-traj {args.n_traj}`",
        "",
        "VRMSE on the validation split, one-step from true histories (the paper's protocol), regime `windows`.",
        '"paper def." is the paper\'s VRMSE (per trajectory, temporal-mean normalisation), "Well def." The Well\'s '
        "(per frame). The paper's numbers are at stride 1 and 256^2 with a GPU-scale pretrained backbone. Each "
        f"trained row had {minutes_per_run(args, rows):.3g} minutes of wall clock on this machine's CPU. "
        '"rollout step n" is the Well\'s VRMSE at the last step of a 5-step rollout that feeds predictions back '
        "as history, n the steps the validation trajectories held at that stride (fewer than 5 where they end "
        'sooner); "ms / prediction" is the wall clock per predicted '
        "frame on this CPU. NSLoRA rows run the Newton-Schulz forward from the first step (`schedule=from_start`): "
        "the paper's LoRA warm-up needs more epochs than a row gets here.",
        "",
    ]
    if args.study == "regimes":
        lines += regimes_summary(args, results)
    if args.study == "auto":
        lines += auto_summary(args, results)
    if args.study == "ablations":
        lines += ablations_summary(args)
    names = ["persistence", "extrap1", "extrap2", "solver", ZERO_SHOT, *[r[0] for r in rows]]
    for dataset in args.datasets:
        for stride in args.strides:
            lines += dataset_table(args, results, names, dataset, stride)
    lines += ["## Commands", ""]
    for (dataset, stride, name), command in commands.items():
        lines.append(f"- {dataset}, stride {stride}, {name}: `{command}`")
    write_keeping_reading(args.report, lines)
