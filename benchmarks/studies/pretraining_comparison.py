"""Pretrained models side by side on the corpus they were pretrained on, beside the classical baselines.

    python benchmarks/studies/pretraining_comparison.py --corpus corpus \
        --na "NA tiny, base last (shipped)=shipped" --na "NA tiny, base extrap2=na_tiny_extrap2.pt" \
        --pde-transformer "PDE-Transformer XS (our corpus)=pretrain_pdet_xs/best.pt" \
        --report reports/pretraining_comparison.md --command "<how the checkpoints were made>"

Every model is evaluated with the same protocol (``well-upao evaluate``'s pipeline: one-step VRMSE from true
histories of 8 frames on the validation split, both VRMSE definitions, and a 5-step rollout) on the datasets the
PDE-Transformer checkpoint was pretrained on (its 2D part of the corpus), or ``--datasets``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from well_upao.data.datasets import slot_indices
from well_upao.data.source import WellSource
from well_upao.evaluate.pipeline import EvaluationRequest, run_evaluation
from well_upao.harness.model_factory import na_transformer
from well_upao.models.assembly import resolve_pretrained
from well_upao.models.checkpoint import migrated_base, read_checkpoint
from well_upao.predict.predictors import BackboneModel, HarnessModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.readings import exit_if_stale, write_keeping_reading


def labelled(value: str) -> tuple[str, str]:
    label, _, path = value.partition("=")
    if not path:
        raise argparse.ArgumentTypeError(f"expected LABEL=PATH, got {value!r}")
    return label, path


def mean_rows(rows: list[tuple], datasets: list[str]) -> list[str]:
    """A row per model evaluated on every dataset: its mean over them of each column (what a reading compares)."""
    models = list(dict.fromkeys(m for _, m, *_ in rows))
    lines = []
    for model in models:
        values = [row[2:] for row in rows if row[1] == model]
        if len(values) != len(datasets):
            continue
        means = [sum(column) / len(column) for column in zip(*values, strict=True)]
        lines.append(
            f"| mean over the {len(datasets)} datasets | {model} | " + " | ".join(f"{v:.4g}" for v in means) + " |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--na", type=labelled, action="append", default=[], help="LABEL=backbone checkpoint")
    parser.add_argument("--pde-transformer", type=labelled, action="append", default=[], help="LABEL=checkpoint")
    parser.add_argument("--datasets", nargs="+", help="default: those the first PDE-Transformer was pretrained on")
    parser.add_argument("--max-trajectories", type=int, default=3)
    parser.add_argument("--report", type=Path, default=Path("reports/pretraining_comparison.md"))
    parser.add_argument("--command", default="", help="how the compared checkpoints were made (for the report)")
    args = parser.parse_args()
    if not args.na and not args.pde_transformer:
        parser.error("give at least one --na or --pde-transformer checkpoint")

    from well_upao.models.foundation import PDETransformerOneStep

    pde_payloads = [read_checkpoint(path) for _, path in args.pde_transformer]
    if not args.datasets and not pde_payloads:
        parser.error("name the --datasets (the default is a PDE-Transformer checkpoint's)")
    datasets = args.datasets or pde_payloads[0]["train"]["datasets"]
    na_configs = [read_checkpoint(resolve_pretrained(path))["model"]["config"] for _, path in args.na]
    rows = []
    for name in datasets:
        channels = WellSource(args.corpus, name).channels
        models = []
        for (label, path), config in zip(args.na, na_configs, strict=True):
            model = na_transformer(
                preset=config["preset"],
                base=migrated_base(config),  # the prediction base the backbone was trained with
                dataset_name=name,
                well_base_path=str(args.corpus),
                pretrained=path,
            )
            models.append(BackboneModel(label, model))
        for (label, path), payload in zip(args.pde_transformer, pde_payloads, strict=True):
            config = payload["model"]["config"]
            model = PDETransformerOneStep(
                history=config["history"],
                n_fields=len(channels),
                channel_types=list(slot_indices(name, channels)),
                size=config["size"],
                patch_size=config["patch_size"],
                window_size=config["window_size"],
                periodic=config["periodic"],
                carrier_tokens=config["carrier_tokens"],
                weights=path,
            )
            models.append(HarnessModel(label, model, "channels_first_default", config["history"]))
        request = EvaluationRequest(
            args.corpus, name, history=8, rollout_steps=5, max_trajectories=args.max_trajectories, out=None,
            progress=False,
        )  # fmt: skip
        evaluation = run_evaluation(request, models=models).evaluation
        for score in evaluation.scores:
            rows.append((name, score.name, score.mean_paper, score.mean_well, score.rollout_vrmse_well[-1]))
        print(f"evaluated {name}")

    table = [
        "| dataset | model | one-step VRMSE (paper) | one-step VRMSE (Well) | 5-step rollout (Well) |",
        "|---|---|---|---|---|",
    ]
    table += [f"| {d} | {m} | {p:.4g} | {w:.4g} | {r:.4g} |" for d, m, p, w, r in rows]
    table += mean_rows(rows, datasets)
    sources = [f"- {label}: `{path}`" for label, path in [*args.na, *args.pde_transformer]]
    lines = [
        "# Pretrained models on their corpus",
        "",
        "Report command: `python benchmarks/studies/pretraining_comparison.py --corpus "
        + str(args.corpus)
        + "".join(f" --na '{label}={path}'" for label, path in args.na)
        + "".join(f" --pde-transformer '{label}={path}'" for label, path in args.pde_transformer)
        + "`",
        "",
        *([f"Checkpoints made by: `{args.command}`", ""] if args.command else []),
        *sources,
        "",
        f"Validation split (at most {args.max_trajectories} trajectories), one-step from true histories of 8 frames, "
        "stride 1, and a 5-step rollout:",
        "",
        *table,
    ]
    write_keeping_reading(args.report, lines)
    exit_if_stale(args.report)


if __name__ == "__main__":
    main()
