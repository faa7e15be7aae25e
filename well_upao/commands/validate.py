"""``well-upao validate``: a dataset directory or HDF5 file against the Well's format and our contracts."""

from __future__ import annotations

import argparse

from well_upao.commands.options import EXIT_FAILED, CommandError
from well_upao.data.digest import dataset_digest
from well_upao.data.validate import validate_dataset


def run(args: argparse.Namespace) -> int:
    if not args.path.exists():
        raise CommandError(f"{args.path}: no such file or directory")
    notes: list[str] = []
    problems = validate_dataset(
        args.path, check_exact=args.check_exact, check_values=not args.no_values, notes=notes, strict=args.strict
    )
    for problem in problems:
        print(f"problem: {problem}")
    for note in notes:
        print(f"note: {note}")
    print(f"{args.path}: {'OK' if not problems else f'{len(problems)} problem(s)'}")
    if args.digest:
        if not args.path.is_dir():
            raise CommandError(f"{args.path}: --digest takes a dataset directory (with data/ and stats.yaml)")
        print(f"content sha256 {dataset_digest(args.path)}")
    return 0 if not problems else EXIT_FAILED
