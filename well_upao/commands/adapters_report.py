"""``well-upao adapters-report``: spectral diagnostics of every LoRA/NSLoRA update in a checkpoint."""

from __future__ import annotations

import argparse

from well_upao.commands.options import CommandError
from well_upao.evaluate.spectral import adapters_report, report_markdown, write_report
from well_upao.models.checkpoint import CheckpointError


def run(args: argparse.Namespace) -> int:
    try:
        report = adapters_report(args.checkpoint)
    except (CheckpointError, ValueError) as error:
        raise CommandError(str(error)) from error
    print(report_markdown(report))
    if args.json:
        write_report(report, args.json)
    return 0
