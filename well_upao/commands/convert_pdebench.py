"""``well-upao convert-pdebench``: PDEBench files (the paper's six pretraining subsets) in the Well's format."""

from __future__ import annotations

import argparse

from well_upao.commands.generation import format_generation_summary
from well_upao.commands.options import CommandError
from well_upao.data.generate import GenerationRequest, generate_dataset
from well_upao.families.pdebench import PDEBenchError, open_sources


def run(args: argparse.Namespace) -> int:
    if args.downsample < 1:
        raise CommandError("--downsample must be >= 1")
    try:
        families = open_sources(args.sources, args.downsample, args.max_steps, args.viscosity)
        for name, family in families.items():
            request = GenerationRequest(
                pde=name, out=args.out, n_traj=args.n_traj, seed=args.seed, overwrite=args.overwrite, traj_per_file=None
            )
            print(format_generation_summary(generate_dataset(request, not args.quiet, family=family), family))
    except (PDEBenchError, OSError, KeyError) as error:
        raise CommandError(str(error)) from error
    return 0
