"""The ``well-upao`` command line: a dispatcher. Parsing (``well_upao.commands.parsers``, argparse only: ``--help``
loads no torch), then the chosen command's own module, imported after parsing by
``well_upao.commands.running``, which reports errors from bad input as one line on stderr with a non-zero exit
code."""

from __future__ import annotations

import importlib
import sys

from well_upao.commands.options import EXIT_BAD_INPUT, EXIT_FAILED, CommandError
from well_upao.commands.parsers import build_parser

__all__ = ["EXIT_BAD_INPUT", "EXIT_FAILED", "CommandError", "build_parser", "main"]


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)  # --help ends here, before anything imports torch (tests/test_cli.py)
    return importlib.import_module("well_upao.commands.running").run(args)


if __name__ == "__main__":
    sys.exit(main())
