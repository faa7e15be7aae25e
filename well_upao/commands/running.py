"""Running a parsed command: the user's modules first (``--imports``), then the command's own module (imported here,
after parsing, so ``--help`` needs no torch), its errors reported as one line with an exit code."""

from __future__ import annotations

import argparse
import importlib
import sys

from well_upao.commands.options import EXIT_BAD_INPUT, EXIT_FAILED, CommandError
from well_upao.data.atomic import OutputExistsError
from well_upao.data.datasets import UserModuleError, import_modules
from well_upao.data.generate import GenerationError
from well_upao.data.import_arrays import ImportInputError
from well_upao.data.source import DatasetNotFoundError
from well_upao.data.specification import SpecificationError
from well_upao.models.checkpoint import CheckpointError

#: errors that mean bad input (exit ``EXIT_BAD_INPUT``); any other is a failure (``EXIT_FAILED``)
BAD_INPUT = (
    CommandError,
    GenerationError,
    OutputExistsError,
    UserModuleError,
    CheckpointError,
    SpecificationError,
    DatasetNotFoundError,
    ImportInputError,
)


def run(args: argparse.Namespace) -> int:
    """``args.command_module``'s ``run(args)``, its errors as one line on stderr (``--debug``: the traceback)."""
    try:
        import_modules(getattr(args, "imports", []), "--imports")
        return importlib.import_module(args.command_module).run(args)
    except KeyboardInterrupt:
        print(f"well-upao {args.command}: interrupted, partial output removed", file=sys.stderr)
        return 130
    except Exception as error:
        if args.debug:
            raise
        return report(args.command, error)


def report(command: str, error: Exception) -> int:
    """Print ``error`` as one line and return the exit code its kind earns."""
    if isinstance(error, BAD_INPUT):
        message, code = str(error), EXIT_BAD_INPUT
    elif isinstance(error, OSError) and error.strerror:
        message, code = f"{error.strerror}{f' ({error.filename})' if error.filename else ''}", EXIT_FAILED
    else:
        message, code = f"{type(error).__name__}: {error} (--debug shows the traceback)", EXIT_FAILED
    print(f"well-upao {command}: error: {' '.join(str(message).split())}", file=sys.stderr)
    return code
