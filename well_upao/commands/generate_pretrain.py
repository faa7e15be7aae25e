"""``well-upao generate-pretrain``: the simulated pretraining corpus (PDEBench's families) in the Well's format."""

from __future__ import annotations

import argparse

from well_upao.commands.generation import generate_and_report
from well_upao.commands.options import CommandError
from well_upao.data.datasets import generators


def run(args: argparse.Namespace) -> int:
    simulated = generators("simulated")
    names = list(simulated) if args.family == ["all"] else args.family
    unknown = [n for n in names if n not in simulated]
    if unknown:
        raise CommandError(f"unknown families {unknown}; choose from {', '.join(simulated)} or all")
    return generate_and_report(names, args)
