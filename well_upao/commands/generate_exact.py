"""``well-upao generate-exact``: an exact-solution dataset (closed form) in the Well's format."""

from __future__ import annotations

import argparse

from well_upao.commands.generation import generate_and_report
from well_upao.commands.options import CommandError
from well_upao.data.datasets import generators
from well_upao.data.generate import no_generator


def run(args: argparse.Namespace) -> int:
    if args.pde != "all" and args.pde not in generators():
        from well_upao.physics import PDE_REGISTRY

        if args.pde in PDE_REGISTRY:  # a PDE registered without a dataset (the registry's first form)
            raise CommandError(no_generator(args.pde, "PDE"))
    return generate_and_report(list(generators("exact")) if args.pde == "all" else [args.pde], args)
