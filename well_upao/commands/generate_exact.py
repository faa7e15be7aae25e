"""``well-upao generate-exact``: an exact-solution dataset (closed form) in the Well's format."""

from __future__ import annotations

import argparse

from well_upao.commands.generation import generate_and_report
from well_upao.commands.options import CommandError
from well_upao.data.datasets import DATASETS, generators
from well_upao.data.generate import no_generator
from well_upao.physics.discretisation import pde_for_dataset


def run(args: argparse.Namespace) -> int:
    """Generate ``--pde`` (or every exact family), refusing a PDE registered without a dataset that generates it
    (the registry's first form) with what to do instead (``no_generator``: ``well-upao import`` for a user's PDE)."""
    if args.pde != "all" and args.pde not in generators() and _is_pde_without_dataset(args.pde):
        raise CommandError(no_generator(args.pde, "PDE"))
    return generate_and_report(list(generators("exact")) if args.pde == "all" else [args.pde], args)


def _is_pde_without_dataset(name: str) -> bool:
    """Whether ``name`` is a PDE's, not a dataset's: the one PDE lookup (``pde_for_dataset``) knows it, and no
    dataset of that name is registered (a registered dataset without a generator is ``generate_dataset``'s to
    refuse)."""
    return name not in DATASETS and pde_for_dataset(name, required=False) is not None
