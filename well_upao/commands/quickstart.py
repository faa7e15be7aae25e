"""``well-upao quickstart``: the main job (generate, adapt with UPAO + NSLoRA, compare)."""

from __future__ import annotations

import argparse

from well_upao.commands.options import CommandError
from well_upao.harness.install import harness_config_missing
from well_upao.quickstart import QuickstartConfig, run_quickstart


def run(args: argparse.Namespace) -> int:
    if args.stride < 1 or args.epochs < 1 or args.n_traj < 2:
        raise CommandError("--stride and --epochs must be >= 1 and --n-traj >= 2")
    missing = harness_config_missing()
    if missing:
        raise CommandError(missing)
    config = QuickstartConfig(
        out=args.out,
        pde=args.pde,
        stride=args.stride,
        epochs=args.epochs,
        n_traj=args.n_traj,
        resolution=args.resolution,
        n_steps=max(51, (8 + 1) * args.stride + 2),
        lr=args.lr,
        seed=args.seed,
        backbone=args.backbone,
        **({"base": args.base} if args.base else {}),
    )
    try:
        print(run_quickstart(config))
    except RuntimeError as error:
        raise CommandError(str(error)) from error
    return 0
