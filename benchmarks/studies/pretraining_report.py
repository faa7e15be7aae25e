"""Evaluate a pretrained backbone on every corpus dataset beside the classical baselines, and write the model
card and ``reports/pretraining.md``.

    python benchmarks/studies/pretraining_report.py RUN_DIR --corpus DATASETS_DIR \
        --command "<the pretraining command>" [--ship well_upao/weights/na_tiny_pretrained.pt]

``RUN_DIR`` holds ``recent.pt`` and ``metrics.jsonl`` of ``python -m well_upao.train --config-name pretrain``.
With ``--ship`` the final checkpoint is exported (no optimizer state) to that path.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from well_upao.evaluate.pipeline import EvaluationRequest, run_evaluation
from well_upao.harness.metrics_file import read_metrics
from well_upao.harness.model_factory import na_transformer
from well_upao.models.checkpoint import export_backbone, read_checkpoint
from well_upao.models.na_transformer import NATransformer, count_parameters
from well_upao.predict.predictors import BackboneModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.readings import portable_paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path)
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--command", required=True)
    parser.add_argument("--ship", type=Path)
    parser.add_argument("--card", type=Path, default=Path("well_upao/weights/MODEL_CARD.md"))
    parser.add_argument("--report", type=Path, default=Path("reports/pretraining.md"))
    parser.add_argument("--max-trajectories", type=int, default=3)
    args = parser.parse_args()

    checkpoint = args.run / "recent.pt"
    payload = read_checkpoint(checkpoint)
    history = read_metrics(args.run)
    last = history[-1]
    if args.ship:
        size = export_backbone(checkpoint, args.ship)
        print(f"shipped {args.ship} ({size / 2**20:.1f} MiB)")
    datasets = payload["train"]["datasets"]
    rows = []
    for name in datasets:
        model = na_transformer(
            preset=payload["model"]["config"]["preset"],
            dataset_name=name,
            well_base_path=str(args.corpus),
            pretrained=str(checkpoint),
        )
        request = EvaluationRequest(
            args.corpus, name, rollout_steps=5, max_trajectories=args.max_trajectories, out=None, progress=False
        )
        evaluation = run_evaluation(request, models=[BackboneModel("pretrained backbone", model)]).evaluation
        for score in evaluation.scores:
            rows.append((name, score.name, score.mean_paper, score.mean_well, score.rollout_vrmse_well[-1]))
    config = payload["model"]["config"]
    table = [
        "| dataset | model | one-step VRMSE (paper) | one-step VRMSE (Well) | 5-step rollout (Well) |",
        "|---|---|---|---|---|",
    ]
    table += [f"| {d} | {m} | {p:.4g} | {w:.4g} | {r:.4g} |" for d, m, p, w, r in rows]
    with_all = count_parameters(NATransformer(preset=config["preset"], dims=config["dims"]))
    in_2d = count_parameters(NATransformer(preset=config["preset"], dims=(2,)))
    size_line = (
        f"{with_all / 1e6:.2f}M parameters with the parts of every dimensionality; 2D data uses {in_2d / 1e6:.2f}M "
        "of them (the same preset built with `dims=[2]`)"
    )
    card = "\n".join(
        [
            "# Model card: `na_tiny_pretrained.pt`",
            "",
            f"- Architecture: NA Transformer, preset `{config['preset']}` (hidden {config['hidden']}, "
            f"{config['layers']} layers, {config['heads']} heads, patch {config['patch']}, kernel {config['kernel']}, "
            f"temporal kernel {config['temporal_kernel']}, T_in {config['n_steps_input']}, dimensionalities "
            f"{config['dims']}), {size_line}.",
            f"- Data: the simulated corpus of `well-upao generate-pretrain` ({', '.join(datasets)}), our own solvers "
            "of PDEBench's families at CPU sizes (not PDEBench itself); the 3D parts are untrained.",
            f"- Training: {last['step']} steps, {len(history)} epochs, {last['seconds'] / 60:.1f} minutes on 2 CPU "
            "cores, "
            "AdamW (0.9, 0.95), lr 1e-4 with 200 warm-up steps and cosine decay, weight decay 0.01, clipping 1.0, "
            "dense shifted loss on active slots, equal clips per dataset per epoch.",
            f"- Command: `{args.command}`",
            "- Intended use: a starting point for UPAO / LoRA adaptation on small problems and for testing the "
            "pipeline; it is far smaller and less trained than the paper's 182M-parameter backbone.",
            "",
            "Validation (one-step from true histories, 8 input frames, stride 1; classical baselines for scale):",
            "",
            *table,
            "",
            "`solver` (one RK4 step of the dataset's PDE, sub-stepped to convergence) appears where every equation "
            "evolves a stored field; the shallow-water and compressible sets store primitive variables (h, u, v; "
            "rho, u, p) while their equations evolve conservative ones, and the forced NS set stores velocity without "
            "pressure (its residual is the vorticity equation), so they have no solver row "
            "(`well_upao.predict.solver.supports`). On diffusion_reaction_2d the solver row is less accurate than "
            "extrapolation: its stencils fill ghost cells by quadratic extrapolation (the residual library's "
            "convention on non-periodic axes, where the boundary band is excluded), while the corpus was made with "
            "mirrored no-flux ghosts, so the step is wrong at the walls and the error spreads inwards; a solver "
            "baseline with the dataset's own wall condition is future work.",
        ]
    )
    args.card.write_text(card + "\n")
    curve = ["| epoch | step | train loss | minutes |", "|---|---|---|---|"]
    curve += [f"| {h['epoch']} | {h['step']} | {h['train_loss']:.4g} | {h['seconds'] / 60:.1f} |" for h in history]
    text = (
        "\n".join(
            [
                "# Pretraining the shipped tiny backbone",
                "",
                f"Command: `{args.command}`",
                "",
                "Report command: `python "
                + " ".join(
                    [
                        "benchmarks/studies/pretraining_report.py",
                        str(args.run),
                        "--corpus",
                        str(args.corpus),
                        "--command",
                        repr(args.command),
                    ]
                )
                + "`",
                "",
                card.split("\n", 2)[2],
                "",
                "## Training curve",
                "",
                *curve,
            ]
        )
        + "\n"
    )
    args.report.write_text(portable_paths(text))  # the run and corpus folders as RUNS/...
    print(f"wrote {args.card} and {args.report}")


if __name__ == "__main__":
    main()
