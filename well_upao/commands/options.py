"""What every command line shares, defined once: the user-facing error, the exit codes, and the options several
commands take (argparse only: building a parser loads no torch)."""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

EXIT_BAD_INPUT = 2
EXIT_FAILED = 1


class CommandError(Exception):
    """A user-facing error: printed as one line, exit code ``EXIT_BAD_INPUT``."""


def add_out(parser: argparse.ArgumentParser, default: str, help: str) -> None:
    parser.add_argument("--out", type=Path, default=Path(default), help=help)


def add_base_path(
    parser: argparse.ArgumentParser, help: str = "Well base path (default $WELL_BASE_PATH or ./datasets)"
):
    parser.add_argument("--base-path", type=Path, default=None, help=help)


def add_split(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument("--split", default=default, choices=["train", "valid", "test"])


def add_max_trajectories(parser: argparse.ArgumentParser, default: int | None, help: str | None = None) -> None:
    parser.add_argument("--max-trajectories", type=int, default=default, help=help)


def add_overwrite_and_quiet(parser: argparse.ArgumentParser, overwrite: str | None, quiet: str | None) -> None:
    parser.add_argument("--overwrite", action="store_true", help=overwrite)
    parser.add_argument("--quiet", action="store_true", help=quiet)


def add_debug(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")


def add_imports(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--imports",
        nargs="+",
        default=[],
        metavar="MODULE",
        help="modules to import first, where your own datasets and PDEs are registered (a run's checkpoint remembers "
        "its data.imports, so runs need none)",
    )


DATASETS_OUT = "Well base path (default ./datasets)"


def command(sub, name: str, module: str, **kwargs) -> argparse.ArgumentParser:
    """A subcommand run by ``well_upao.commands.<module>``."""
    parser = sub.add_parser(name, **kwargs)
    parser.set_defaults(command_module=f"well_upao.commands.{module}")
    return parser


def described(text: str) -> dict:
    """A description kept as written (its line breaks and indented examples)."""
    return {"formatter_class": argparse.RawDescriptionHelpFormatter, "description": textwrap.dedent(text)}
