"""The paper's main-table comparison at CPU scale, on the exact 2D datasets (reports/reproduction.md).

For every dataset and time stride: generate the data (64^2 by default), then train each row through The Well's
harness with a wall-clock share of the budget, and evaluate all rows beside the classical baselines:

* classical: persistence, linear / quadratic extrapolation, one step of a numerical solver of the PDE;
* FNO, TFNO, U-Net, CNextU-Net (supervised, ``experiment=<name>``);
* NA supervised LoRA on the shipped pretrained backbone (``model=na_lora trainer=shifted``);
* NA UPAO with LoRA and with NSLoRA on the shipped backbone (``trainer=upao``, no interior labels);
* NA UPAO from scratch (``model=na trainer=upao model.pretrained=null``, full training).

Every row is one command, printed in the report; results go to ``reports/reproduction.md`` (with the paper's
numbers beside ours) and the evaluation JSON/PNG files to ``--out``.

    python benchmarks/studies/reproduce.py --budget-minutes 120 [--datasets wave2d advdiff2d] [--strides 1 5]

``--study regimes`` maps where adaptation pays: UPAO + NSLoRA and supervised LoRA with the prediction
bases ``last`` and ``extrap2`` on wave2d, advdiff2d and burgers2d at strides 1, 5 and 10, beside the classical rows
and the solver matched to the UPAO (``extrap2``) row in runtime and in accuracy (``evaluate --match-solver``);
report ``reports/regimes.md``.

    python benchmarks/studies/reproduce.py --study regimes --budget-minutes 90 --out regimes --report reports/regimes.md

``--study auto`` compares UPAO + NSLoRA with the default residual discretisation against ``trainer.derivative=auto
trainer.time_scheme=auto`` (the lowest residual floor of the training frames), two seeds each, on the four exact 2D sets
and the three replicas. The Well's datasets (``gray_scott_reaction_diffusion``, ``shear_flow``, ``rayleigh_benard``,
``active_matter``) are the replicas of ``benchmarks/harness/study_data.py`` (made by ``well-upao generate-replica``
where ``--data-base`` lacks them) and get the Well's leaderboard and the paper's numbers beside them. ``--jobs 2
--threads 1`` trains two rows at a time, one core each (the transfer study in two phases: the diagonal first, then the
rows that start from it).

``--study ablations`` runs the paper's ablations under our default normalisation (``norm``): UPAO + NSLoRA
with lambda_BC = 1e2 ... 1e5, full finetuning of the shipped backbone, full training from random weights, and plain
LoRA vs NSLoRA after the paper's LoRA warm-up (``switch_patience=1`` so that the switch fires within a row: both
start from the same seed and share the LoRA phase until the switch), beside the paper's ablation tables.

    python benchmarks/studies/reproduce.py --study ablations --budget-minutes 72 --out ablations \
        --report reports/ablations.md

``--study transfer`` builds the paper's cross-target panels for CNextU-Net and TFNO over burgers2d,
wave2d and tg2d (``--datasets`` adds replicas): supervised on each source, zero-shot and UPAO from each source on
each other target, our backbone's zero-shot and UPAO columns, classical rows.

    python benchmarks/studies/reproduce.py --study transfer --budget-minutes 60 --out transfer \
        --report reports/transfer.md

``--study trust`` is ``benchmarks/studies/trust_study.py`` (issue 29, reports/trust.md): every other argument goes to
it.

    python benchmarks/studies/reproduce.py --study trust --out trust --jobs 2 --threads 1 --report reports/trust.md
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from well_upao.harness.runs import latest_run

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.jobs import run_all
from harness.readings import exit_if_stale

from studies.reproduce_report import write_report, write_transfer_report
from studies.reproduce_rows import (
    ABLATION_ROWS,
    AUTO_ROWS,
    NORMALIZATION_ROWS,
    OURS_UPAO,
    PAPER,
    REGIME_MATCHED,
    REGIME_ROWS,
    ROWS,
    STUDY_DEFAULTS,
    TRANSFER_FINETUNE,
    TRANSFER_MODELS,
    ZERO_SHOT,
    foundation_rows,
)
from studies.reproduce_runs import (
    data_base,
    ensure_dataset,
    evaluate_rows,
    minutes_per_run,
    run_tag,
    train_row,
    write_zero_shot_checkpoint,
)

__all__ = ["main", "train_row"]


def transfer_rows(args: argparse.Namespace, stride: int) -> tuple[list, list]:
    """``(key, label, overrides, dataset)`` of every row of the transfer study in the report's order: the diagonal
    (supervised on each source), then the rows that start from it (UPAO from each other source's ``best.pt``,
    written ``{best:<experiments>}`` until it trained), our backbone and the foundation models on each target."""
    out, datasets = args.out.resolve(), args.datasets
    diagonal, rest = [], []
    for model, experiment in TRANSFER_MODELS.items():
        for source in datasets:
            diagonal.append(((model, source, source), f"{model} supervised", [experiment], source))
        for target in datasets:
            for source in datasets:
                if source != target:
                    start = out / "experiments" / run_tag(source, stride, f"{model} supervised")
                    overrides = [experiment, *TRANSFER_FINETUNE, f"trainer.init_from={{best:{start}}}"]
                    rest.append(((model, source, target), f"{model} UPAO from {source}", overrides, target))
    for target in datasets:
        rest.append((("ours", target, target), "ours UPAO + NSLoRA", OURS_UPAO, target))
        for name, overrides in foundation_rows(args.fm_weights):  # same minutes per row as the panels
            rest.append(((name, target, target), name, overrides, target))
    return diagonal, rest


def resolved(overrides: list[str]) -> list[str]:
    """``{best:<experiments>}`` -> the diagonal run's ``checkpoints/best.pt`` (known once it trained)."""
    out_overrides = []
    for item in overrides:
        if "{best:" in item:
            head, experiments = item.split("{best:")
            folder = latest_run(experiments.rstrip("}"))
            item = head + (str(folder / "checkpoints" / "best.pt") if folder else "<not trained>")
        out_overrides.append(item)
    return out_overrides


def run_transfer_study(args: argparse.Namespace) -> None:
    """The paper's cross-target panels (appendix "Construction of the cross-target panels") at CPU scale: per model,
    a supervised run on every source (the diagonal), and on every other target the source's zero-shot transfer
    (the best subset of its channels, ``evaluate --zero-shot-from``; "---" with fewer source than target channels)
    and UPAO finetuning from it (``trainer.init_from``, missing channels zero); our backbone's zero-shot and UPAO
    beside them; classical rows per target."""
    from well_upao.data.source import WellSource

    base = data_base(args)
    env = dict(os.environ, WELL_BASE_PATH=str(base), WANDB_MODE="disabled")
    stride, datasets = args.strides[0], args.datasets
    n = len(datasets)
    minutes = args.budget_minutes / (len(TRANSFER_MODELS) * n * n + n)  # diagonal + off-diagonal, + ours
    commands: dict[tuple, str] = {}
    for dataset in datasets:
        ensure_dataset(args, dataset, base, env)
    channels = {d: len(WellSource(base, d).channels) for d in datasets}
    diagonal, rest = transfer_rows(args, stride)
    for _, name, overrides, dataset in diagonal + rest:  # fixes the order of the report's commands
        train_row(args, name, resolved(overrides), dataset, stride, minutes, commands, env, train=False)
    for phase in (diagonal, rest):  # the off-diagonal rows start from the diagonal's best.pt: after all of it
        trained = [
            lambda r=r: train_row(args, r[1], resolved(r[2]), r[3], stride, minutes, commands, env) for r in phase
        ]
        run_all(trained, args.jobs)
        for _, name, overrides, dataset in phase:  # the commands of the off-diagonal rows now name best.pt
            train_row(args, name, resolved(overrides), dataset, stride, minutes, commands, env, train=False)
    trained = {
        key: train_row(args, name, resolved(overrides), dataset, stride, minutes, commands, env, False)
        for key, name, overrides, dataset in diagonal + rest
        if key[0] in TRANSFER_MODELS
    }
    results: dict[tuple, dict] = {}
    for target in datasets:
        rows, zero_shot = target_rows(args, target, trained, channels, (base, stride, minutes, commands, env))
        eval_out = args.out.resolve() / "evaluation" / f"{target}-s{stride}"
        evaluate_rows(rows, target, stride, eval_out, env, results, before=zero_shot)
        write_transfer_report(args, results, commands, channels, minutes)
    exit_if_stale(args.report)


def target_rows(args, target: str, trained: dict, channels: dict, run: tuple) -> tuple[list, list[str]]:
    """A target's rows of the transfer study (the shipped backbone zero-shot, ours, the foundation models, each
    model's in-domain and UPAO-from-source runs) and the ``--zero-shot-from`` options of the sources with enough
    channels; ``run``: the base path, stride, minutes, commands and environment of ``train_row``."""
    base, stride, minutes, commands, env = run
    ours = train_row(args, "ours UPAO + NSLoRA", OURS_UPAO, target, stride, minutes, commands, env, False)
    rows = [(ZERO_SHOT, write_zero_shot_checkpoint(target, base, args.out.resolve() / f"zero_shot-{target}.pt"))]
    rows += [("ours UPAO + NSLoRA", ours)] if ours is not None else []
    for name, overrides in foundation_rows(args.fm_weights):
        folder = train_row(args, name, overrides, target, stride, minutes, commands, env, False)
        rows += [(name, folder)] if folder is not None else []
    zero_shot = []
    for (model, source, tgt), folder in trained.items():
        if tgt != target or folder is None:
            continue
        if source == target:
            rows.append((f"{model} supervised (in-domain)", folder))
            continue
        rows.append((f"{model} UPAO from {source}", folder))
        if channels[source] >= channels[target]:
            zero_shot += ["--zero-shot-from", f"{model} zero-shot from {source}={trained[(model, source, source)]}"]
    return rows, zero_shot


def build_parser() -> argparse.ArgumentParser:
    """The command line of every study but ``trust`` (which has its own, ``benchmarks/studies/trust_study.py``)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget-minutes", type=float, default=120.0, help="total training time over all rows")
    parser.add_argument(
        "--datasets", nargs="+", help="default: the four paper sets (regimes: wave2d advdiff2d burgers2d)"
    )
    parser.add_argument("--strides", nargs="+", type=int, help="default: 1 5 (regimes: 1 5 10)")
    parser.add_argument("--resolution", type=int, default=64)
    parser.add_argument("--n-traj", type=int, default=12)
    parser.add_argument(
        "--data-base",
        type=Path,
        help="the Well base path holding (or to make) the datasets (default: OUT/datasets); replicas missing there "
        "are made as benchmarks/harness/study_data.py defines them",
    )
    parser.add_argument("--jobs", type=int, default=1, help="rows trained at once")
    parser.add_argument("--threads", type=int, default=None, help="torch threads per row (default: torch's)")
    parser.add_argument("--rows", nargs="*", help="subset of row names (default: all)")
    parser.add_argument(
        "--study",
        choices=["main", "normalization", "regimes", "auto", "ablations", "transfer", "trust"],
        default="main",
        help="main: the paper's main table; normalization: the three UPAO normalisations; regimes: prediction "
        "bases x strides beside extrapolation and matched solvers; auto: default vs auto residual discretisation; "
        "ablations: lambda_BC, LoRA vs full finetuning, scratch vs pretrained, NSLoRA vs LoRA after a warm-up; "
        "transfer: the cross-target panels of CNextU-Net and TFNO beside our backbone; trust: the label-free "
        "scorecard against the truth (benchmarks/studies/trust_study.py, with that script's arguments)",
    )
    parser.add_argument(
        "--fm-weights",
        type=Path,
        help="transfer: a PDE-Transformer checkpoint pretrained on our corpus; adds PDE-Transformer UPAO rows from "
        "it and from random weights (needs the extra well-upao[fm])",
    )
    parser.add_argument("--out", type=Path, default=Path("reproduction"))
    parser.add_argument("--report", type=Path, default=Path("reports/reproduction.md"))
    parser.add_argument(
        "--evaluate-only",
        action="store_true",
        help="train nothing: evaluate the run folders already in --out again and rewrite the report",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="keep the rows that finished in an earlier call with the same --out; rerun the others from scratch",
    )
    return parser


def main() -> None:
    study = argparse.ArgumentParser(add_help=False)
    study.add_argument("--study")
    known, rest = study.parse_known_args()
    if known.study == "trust":  # its own command line: benchmarks/studies/trust_study.py
        from studies import trust_study

        trust_study.main(rest)
        return
    args = build_parser().parse_args()
    defaults = STUDY_DEFAULTS[args.study]
    args.datasets = args.datasets or defaults["datasets"] or list(PAPER)
    args.strides = args.strides or defaults["strides"]
    if args.study == "transfer":
        run_transfer_study(args)
    else:
        run_study(args)


def run_study(args: argparse.Namespace) -> None:
    """Train the study's rows on every dataset and stride (``--jobs`` at a time), then evaluate each dataset and
    stride's rows together and rewrite the report after each (partial results survive)."""
    study_rows = {
        "main": ROWS,
        "normalization": NORMALIZATION_ROWS,
        "regimes": REGIME_ROWS,
        "auto": AUTO_ROWS,
        "ablations": ABLATION_ROWS,
    }[args.study]
    rows = [r for r in study_rows if not args.rows or r[0] in args.rows]
    out, base = args.out.resolve(), data_base(args)
    env = dict(os.environ, WELL_BASE_PATH=str(base), WANDB_MODE="disabled")
    minutes = minutes_per_run(args, rows)
    commands: dict[tuple, str] = {}
    results: dict[tuple, dict] = {}
    cells = [(d, s, name, overrides) for d in args.datasets for s in args.strides for name, overrides in rows]
    for dataset in args.datasets:
        ensure_dataset(args, dataset, base, env)
    for dataset, stride, name, overrides in cells:  # fixes the order of the report's commands
        train_row(args, name, overrides, dataset, stride, minutes, commands, env, train=False)
    run_all([lambda c=c: train_row(args, c[2], c[3], c[0], c[1], minutes, commands, env) for c in cells], args.jobs)
    for dataset in args.datasets:
        for stride in args.strides:
            folders = []
            for name, overrides in rows:
                folder = train_row(args, name, overrides, dataset, stride, minutes, commands, env, train=False)
                folders += [(name, folder)] if folder is not None else []
            if args.study == "main":
                zero_shot = write_zero_shot_checkpoint(dataset, base, out / f"zero_shot-{dataset}.pt")
                folders.insert(0, (ZERO_SHOT, zero_shot))
            matched = args.study == "regimes" and any(name == REGIME_MATCHED for name, _ in folders)
            after = ["--match-solver", REGIME_MATCHED] if matched else []
            evaluate_rows(
                folders, dataset, stride, out / "evaluation" / f"{dataset}-s{stride}", env, results, after=after
            )
            write_report(args, rows, commands, results)  # after every dataset: partial results survive
    exit_if_stale(args.report)  # the reading kept from the last report must cite the new tables


if __name__ == "__main__":
    main()
