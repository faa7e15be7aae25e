"""``well-upao generate-exact``: an exact-solution dataset (closed form) in the Well's format."""

from __future__ import annotations

import argparse

from well_upao.commands.generation import generate_and_report
from well_upao.data.datasets import generators


def run(args: argparse.Namespace) -> int:
    return generate_and_report(list(generators("exact")) if args.pde == "all" else [args.pde], args)
