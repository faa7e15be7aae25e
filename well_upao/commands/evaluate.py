"""``well-upao evaluate``: models and classical baselines on a split, one step and rollouts."""

from __future__ import annotations

import argparse
from pathlib import Path

from well_upao.commands.options import CommandError
from well_upao.data.source import default_base_path
from well_upao.evaluate.pipeline import EvaluationRequest, run_evaluation
from well_upao.evaluate.plan import EvaluationError
from well_upao.harness.runs import RunCheckpoint, labelled_checkpoints
from well_upao.models.checkpoint import CheckpointError
from well_upao.predict.rollout import ProtocolError


def run(args: argparse.Namespace) -> int:
    # reading a checkpoint imports the modules its run named in data.imports (a user's datasets)
    checkpoints = [RunCheckpoint.read(label, path) for label, path in labelled_checkpoints(args.checkpoints)]
    settings = checkpoints[0].settings if checkpoints else {}
    dataset = args.data or settings.get("dataset")
    if dataset is None:
        raise CommandError("--data is required when no run (or checkpoint that names its dataset) is given")
    own_base = settings.get("base") if dataset == settings.get("dataset") else None
    request = EvaluationRequest(
        base=args.base_path or own_base or default_base_path(),
        dataset=dataset,
        split=args.split,
        history=args.history,
        stride=args.stride or settings.get("stride") or 1,
        rollout_steps=args.rollout_steps,
        rollout_starts=args.rollout_starts,
        max_trajectories=args.max_trajectories,
        solver=not args.no_solver,
        match_solver=args.match_solver,
        out=args.out,
        figures=not args.no_figures,
        progress=not args.quiet,
        device=args.device,
    )
    try:
        report = run_evaluation(request, checkpoints, transfers=transfers_of(args.zero_shot_from))
    except (EvaluationError, ProtocolError, CheckpointError, FileNotFoundError, KeyError) as error:
        raise CommandError(str(error).strip("'\"")) from error
    print(report.table)
    print(f"\nwrote {report.json_path} and {len(report.figures)} figures to {args.out}/")
    return 0


def transfers_of(specs: list[str]) -> list[tuple[str, Path]]:
    """``--zero-shot-from LABEL=PATH`` values as ``(label, path)``."""
    transfers = []
    for spec in specs:
        label, separator, path = spec.partition("=")
        if not (separator and label and path):
            raise CommandError(f"--zero-shot-from takes LABEL=PATH, got {spec!r}")
        transfers.append((label, Path(path)))
    return transfers
