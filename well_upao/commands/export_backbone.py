"""``well-upao export-backbone``: a compact backbone checkpoint (no optimizer state)."""

from __future__ import annotations

import argparse

from well_upao.commands.options import CommandError
from well_upao.models.assembly import export_merged_backbone
from well_upao.models.checkpoint import CheckpointError, export_backbone


def run(args: argparse.Namespace) -> int:
    try:
        export = export_merged_backbone if args.merge else export_backbone
        size = export(args.source, args.destination)
    except CheckpointError as error:
        raise CommandError(str(error)) from error
    print(f"wrote {args.destination} ({size / 2**20:.1f} MiB)")
    return 0
