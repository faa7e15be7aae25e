"""``well-upao fix-harness``: the file the_well's harness asserts (after an editable install)."""

from __future__ import annotations

import argparse

from well_upao.harness.install import harness_config_missing, write_harness_config


def run(args: argparse.Namespace) -> int:
    missing = harness_config_missing()
    path = write_harness_config()
    print(f"{'wrote' if missing else 'already present:'} {path}")
    return 0
