"""``well-upao leaderboard``: the Well's and the paper's published numbers beside ours."""

from __future__ import annotations

import argparse

from well_upao.commands.options import CommandError
from well_upao.evaluate.leaderboard import leaderboard_markdown


def run(args: argparse.Namespace) -> int:
    missing = [str(p) for p in args.evaluations if not p.is_file()]
    if missing:
        raise CommandError(f"no such evaluation file: {', '.join(missing)}")
    print(leaderboard_markdown(args.evaluations))
    return 0
