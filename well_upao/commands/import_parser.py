"""The command line of ``well-upao import`` (argparse only: no torch), with the option types it parses."""

from __future__ import annotations

import argparse
from pathlib import Path

from well_upao.commands.help_texts import IMPORT
from well_upao.commands.options import DATASETS_OUT, add_out, add_overwrite_and_quiet, command, described


def key_value(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` of an option."""
    key, sep, value = text.partition("=")
    if not sep or not key or not value:
        raise argparse.ArgumentTypeError(f"{text!r}: give KEY=VALUE")
    return key, value


def key_or_pair(text: str) -> tuple[str, str | None]:
    """``KEY`` or ``KEY=VALUE`` of an option."""
    key, sep, value = text.partition("=")
    if not key or (sep and not value):
        raise argparse.ArgumentTypeError(f"{text!r}: give NAME or NAME=VALUE")
    return key, value if sep else None


def frame_range(text: str) -> slice:
    """``START:STOP`` (either may be left out), the frames to keep."""
    start, sep, stop = text.partition(":")
    try:
        if not sep:
            raise ValueError
        return slice(int(start) if start else None, int(stop) if stop else None)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{text!r}: give START:STOP (frame numbers, e.g. 0:100)") from error


def import_arrays(sub) -> None:
    """``well-upao import SOURCE --dataset NAME``: the source, the dataset, then the options in three groups."""
    parser = command(
        sub,
        "import",
        "import_data",
        help="write your arrays (.npz, netCDF, zarr) as a dataset in The Well's layout, with splits and stats.yaml",
        **described(IMPORT),
    )
    parser.add_argument("source", type=Path, help=".npz file, netCDF file (.nc) or zarr folder (.zarr)")
    parser.add_argument(
        "--dataset",
        "--name",
        dest="name",
        required=True,
        help="the dataset's name (its folder; data.well_dataset_name)",
    )
    add_out(parser, "datasets", DATASETS_OUT)
    _variable_options(parser)
    _axis_options(parser)
    _split_options(parser)
    add_overwrite_and_quiet(parser, "replace an existing dataset directory", "no progress bar")


def _variable_options(parser: argparse.ArgumentParser) -> None:
    """The group "which variable is what": which variable of the source is a field, a vector's component, a scalar."""
    what = parser.add_argument_group("which variable is what")
    what.add_argument("--fields", nargs="+", metavar="VAR", help="the fields (default: every variable over time)")
    what.add_argument("--rename", nargs="+", type=key_value, default=[], metavar="OLD=NEW", help="rename variables")
    what.add_argument(
        "--vector",
        nargs="+",
        type=key_value,
        default=[],
        metavar="NAME=VX,VY[,VZ]",
        help="a vector field from one variable per axis, in the order of the axes x, y, z",
    )
    what.add_argument(
        "--components",
        nargs="+",
        type=key_value,
        default=[],
        metavar="FIELD=y,x",
        help="the axes a stored component axis points along, in its stored order (default x, y, z)",
    )
    what.add_argument(
        "--scalar",
        nargs="+",
        type=key_or_pair,
        default=[],
        metavar="NAME[=VALUE]",
        help="a per-trajectory constant (the PDE's parameter, by the PDE's name): a variable, or one value for all",
    )
    what.add_argument("--varying-scalar", nargs="+", default=[], metavar="VAR", help="a scalar given per frame")


def _axis_options(parser: argparse.ArgumentParser) -> None:
    """The group "axes, grid and time": which stored axis is which, the grid's spacing or coordinates, the boundaries,
    the time and the frames."""
    axes = parser.add_argument_group("axes, grid and time")
    axes.add_argument(
        "--dims", nargs="+", metavar="AXIS", help="the axes of .npz arrays in their stored order, e.g. time y x"
    )
    axes.add_argument(
        "--dim-names",
        nargs="+",
        type=key_value,
        default=[],
        metavar="THEIRS=OURS",
        help="netCDF/zarr dimensions to ours (trajectory, time, x, y, z, i, j), e.g. lat=y lon=x run=trajectory",
    )
    axes.add_argument(
        "--spacing", nargs="+", type=key_value, default=[], metavar="AXIS=D", help="distance between grid points"
    )
    axes.add_argument(
        "--coordinates", nargs="+", type=key_value, default=[], metavar="AXIS=VAR", help="an axis's coordinates"
    )
    axes.add_argument(
        "--boundary",
        nargs="+",
        type=key_or_pair,
        default=[],
        metavar="[AXIS=]TYPE",
        help="periodic (default), wall or open: one for every axis, or one per axis",
    )
    axes.add_argument("--time", metavar="VAR", help="the time variable (default: time or t)")
    axes.add_argument("--dt", type=float, help="time between stored frames (where no time variable gives it)")
    axes.add_argument(
        "--time-unit", help="unit of the time (s, min, h, day, ...): needed to read dates; recorded in the files"
    )
    axes.add_argument("--frames", type=frame_range, metavar="START:STOP", help="keep these stored frames only")


def _split_options(parser: argparse.ArgumentParser) -> None:
    """The group "slots, PDE and splits": the channels' slots, the PDE to check, the split and the files."""
    model = parser.add_argument_group("slots, PDE and splits")
    model.add_argument(
        "--slots",
        nargs="+",
        type=key_value,
        default=[],
        metavar="CHANNEL=SLOT",
        help="the backbone's slot of a channel (default: a channel named as a slot, velocity_x/y/z -> Vx/Vy/Vz)",
    )
    model.add_argument("--pde", help="check its parameters and variables against the data (a PDE named by --imports)")
    model.add_argument("--segments", type=int, help="cut every trajectory into N pieces and split them in time")
    model.add_argument("--valid-fraction", type=float, default=0.1, help="trajectories for valid/ (0.1)")
    model.add_argument(
        "--test-fraction", type=float, default=0.1, help="trajectories for test/ (0.1; 0: test repeats valid)"
    )
    model.add_argument("--seed", type=int, default=42, help="seed of the split's permutation (42)")
    model.add_argument("--traj-per-file", type=int, help="trajectories per HDF5 file (default: ~512 MB files)")
