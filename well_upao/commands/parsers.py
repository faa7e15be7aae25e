"""Every ``well-upao`` command line (argparse only: building them loads no torch, so ``--help`` is fast).

Each command's parser names the module that runs it (``command_module``; ``well_upao.commands.running``
imports it after parsing). Options several commands take come from ``well_upao.commands.options``.
"""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

from well_upao.commands.options import (
    add_base_path,
    add_debug,
    add_imports,
    add_max_trajectories,
    add_out,
    add_overwrite_and_quiet,
    add_split,
)
from well_upao.data.datasets import generators
from well_upao.families.replicas.families import REPLICAS

#: commands that take a dataset or a run, hence a user's modules registering them
TAKES_IMPORTS = (
    "generate-exact",
    "import",
    "validate",
    "evaluate",
    "adapters-report",
    "export-backbone",
    "residual-floor",
)

GENERATE_EXACT = """\
    Evaluate one of the paper's exact-solution PDE families on a periodic grid x_i = i L / N and
    write it where The Well's loaders (and `python -m the_well.benchmark.train data=<pde>`) find it:

      OUT/<pde>/data/{train,valid,test}/*.hdf5   and   OUT/<pde>/stats.yaml

    Trajectories are split 90% train / 10% valid by a permutation seeded with --seed (the paper's
    protocol). test/ holds the valid trajectories again (the paper evaluates on its validation split)
    unless --test-fraction carves out a separate held-out test set. stats.yaml uses train/ only.
    Defaults are the paper's table:
    """
GENERATE_REPLICA = """\
    Simulate one of The Well's datasets from its documented equations, parameters, domain and frame
    spacing, and write it as the Well does: OUT/<dataset>/data/{train,valid,test}/<the Well's file name
    per parameter set>.hdf5 and stats.yaml, with a root attribute `well_upao_replica` saying how it was
    made. Defaults are CPU sizes on a resolved subset of the parameters; --full gives the Well's sets
    and sizes (hours to days on a CPU).

    """
REPLICA_EXAMPLES = (
    "\n\nexamples:\n  well-upao generate-replica --dataset gray_scott_reaction_diffusion\n"
    "  well-upao generate-replica --dataset shear_flow --resolution 128 256 --n-traj 4\n"
    "  well-upao generate-replica --dataset active_matter --sets 0 --n-traj 3   # ~2 CPU-minutes a trajectory"
)
EVALUATE = """\
    Compare checkpoints (or run folders) with the classical baselines on a dataset split: persistence,
    linear and quadratic extrapolation of the history, and one step of a numerical solver of the PDE
    (where one exists). One-step errors use every frame's true history (the paper's protocol); rollouts
    feed each prediction back, from up to --rollout-starts windows of each trajectory, and are reported
    as the Well's benchmark tables report them: the mean VRMSE over the predicted steps 6:12 and 13:30
    (counted from 0), "not held" where the trajectories are too short. Prints a markdown table, writes
    JSON and PNG figures (truth / prediction / error / PDE residual; error vs rollout step with the
    windows marked) to --out.

    A run folder (or checkpoint) knows its dataset, base path, stride and history, and the modules its
    data.imports named: flags override them.

    examples:
      well-upao evaluate --data wave2d
      well-upao evaluate experiments/wave2d-na_nslora-upao-NATransformer-0.0001/0
      well-upao evaluate experiments/wave2d-na_nslora-upao-NATransformer-0.0001/0 --stride 10
      well-upao evaluate "UPAO, norm=runs/a/0" "UPAO, no_norm=runs/b/0"   (LABEL=PATH names a row)
      well-upao evaluate upao=runs/a/0 --match-solver upao   (solver rows at upao's cost and accuracy)
      well-upao evaluate --data wave2d --zero-shot-from "from burgers2d=runs/bg/0"   (cross-dataset)
    """
RESIDUAL_FLOOR = """\
    For each stride, derivative (fd; fd4 and spectral on periodic axes) and time scheme (explicit,
    implicit, crank_nicolson, central), the relative residual ||R_k|| / ||scale_k|| of every sub-equation
    over the interior, computed from the observed frames of a split only (what a UPAO run may read). UPAO
    cannot push a prediction closer to the truth than this floor; the lowest combination is marked (it is
    what trainer.derivative=auto and trainer.time_scheme=auto choose).

    examples:
      well-upao residual-floor --data wave2d --stride 1 5
      well-upao residual-floor --data gray_scott_reaction_diffusion --json floor.json
    """
IMPORT = """\
    Write your arrays as a dataset in The Well's layout, where its loaders, our commands and
    `python -m the_well.benchmark.train data.well_dataset_name=NAME` find it:

      OUT/NAME/data/{train,valid,test}/*.hdf5   and   OUT/NAME/stats.yaml (train/ only, as the Well's
      statistics script computes it)

    SOURCE is an .npz archive (members saved with np.savez are memory-mapped), a netCDF file or a zarr
    folder (read lazily with xarray: the io extra). Every axis is named: trajectory, time, x, y, z and the
    component axes i, j; frames are written as (trajectory, time, x, y, z, components) whatever the stored
    order. Vector components point along x, y, z in that order. A periodic axis stored with its endpoint
    twice loses the duplicate (said so). Trajectories are split 80/10/10 by a permutation seeded with
    --seed; --segments cuts long trajectories in time and splits them in time. Bad input (ragged
    trajectories, uneven time, NaN, disagreeing shapes, an empty split) is refused with the fix, and
    nothing is written. Prints what was read, changed and written, then the next step.

    examples:
      well-upao import heat.npz --dataset my_heat --dims trajectory time x --spacing x=0.098 --dt 0.05 \\
          --scalar kappa --slots T=temperature
      well-upao import run.nc --dataset ocean --dim-names lat=y lon=x run=trajectory --boundary x=periodic y=wall \\
          --vector velocity=u,v --time-unit h
      well-upao import long_run.npz --dataset long --dims time x y --spacing x=0.1 y=0.1 --dt 0.01 --segments 10
    """
DATASETS_OUT = "Well base path (default ./datasets)"


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


def command(sub, name: str, module: str, **kwargs) -> argparse.ArgumentParser:
    """A subcommand run by ``well_upao.commands.<module>``."""
    parser = sub.add_parser(name, **kwargs)
    parser.set_defaults(command_module=f"well_upao.commands.{module}")
    return parser


def described(text: str) -> dict:
    """A description kept as written (its line breaks and indented examples)."""
    return {"formatter_class": argparse.RawDescriptionHelpFormatter, "description": textwrap.dedent(text)}


def generator_parser(sub, name: str, module: str, origin: str, help: str, intro: str, examples: list[str]):
    """A generator's subcommand: its description (``intro``, the default sizes of the registered families of
    ``origin``, ``examples``) and the options every generator takes; returns the parser and the families."""
    families = generators(origin)
    table = "\n".join(
        f"  {f.name:<28} {f.n_spatial_dims}D {f.default_resolution}^{f.n_spatial_dims} x {f.default_n_steps} steps, "
        f"dt={f.default_dt}, {f.default_n_traj} traj   {f.equation}"
        for f in families.values()
    )
    text = textwrap.dedent(intro) + table + "\n\nexamples:\n" + "\n".join(f"  {line}" for line in examples)
    parser = command(
        sub, name, module, help=help, formatter_class=argparse.RawDescriptionHelpFormatter, description=text
    )
    add_out(parser, "datasets", DATASETS_OUT)
    parser.add_argument("--n-traj", type=int, help="trajectories over all splits (default: the family's)")
    parser.add_argument("--resolution", type=int, help="grid points per axis (default: the family's)")
    parser.add_argument("--n-steps", type=int, help="stored time steps per trajectory, t = 0..(n-1) dt")
    parser.add_argument("--dt", type=float, help="time between stored steps (default: the family's)")
    parser.add_argument("--seed", type=int, default=42, help="seed of the split and of every trajectory (42)")
    parser.add_argument("--traj-per-file", type=int, help="trajectories per HDF5 file (default: ~512 MB files)")
    parser.add_argument(
        "--time-dtype",
        choices=("float64", "float32"),
        default="float64",
        help="how dimensions/time is stored: float64 (exact steps, default) or float32 (as the Well stores it)",
    )
    add_overwrite_and_quiet(parser, "replace an existing dataset directory", "no progress bar")
    return parser, families


def generate_exact(sub) -> None:
    parser, exact = generator_parser(
        sub,
        "generate-exact",
        "generate_exact",
        "exact",
        help="write an exact-solution dataset (closed form, no solver error) in The Well's HDF5 format",
        intro=GENERATE_EXACT,
        examples=[
            "well-upao generate-exact --pde burgers2d",
            "well-upao generate-exact --pde wave2d --n-traj 20 --resolution 64 --out datasets",
            "well-upao generate-exact --pde all --resolution 64 --n-traj 10",
        ],
    )
    parser.add_argument("--pde", required=True, help=f"one of {', '.join(exact)}, or 'all'")
    parser.add_argument(
        "--test-fraction", type=float, default=0.0, help="separate test split (default 0: mirror valid)"
    )


def generate_pretrain(sub) -> None:
    parser, simulated = generator_parser(
        sub,
        "generate-pretrain",
        "generate_pretrain",
        "simulated",
        help="simulate the pretraining corpus (PDEBench's families) in The Well's format",
        intro="Integrate the paper's pretraining families with our solvers (well_upao/families/pdebench_solvers.py)\n"
        "and write each as a Well dataset OUT/<family>/ (splits, stats.yaml). Defaults fit a 2-core CPU:\n",
        examples=["well-upao generate-pretrain --out datasets --n-traj 12"],
    )
    parser.add_argument("--family", nargs="+", default=["all"], help=f"families ({', '.join(simulated)}) or all")


def generate_replica(sub) -> None:
    table = "\n".join(
        f"  {f.name:<30} CPU {'x'.join(map(str, f.cpu_size.shape))} x {f.cpu_size.n_steps} frames, "
        f"{len(f.parameter_sets(False))} sets x {f.cpu_size.n_traj_per_set} traj; the Well "
        f"{'x'.join(map(str, f.well_size.shape))} x {f.well_size.n_steps}, {len(f.parameter_sets(True))} sets "
        f"x {f.well_size.n_traj_per_set}; frames every {f.frame_dt:g}\n    {f.method}"
        for f in REPLICAS.values()
    )
    parser = command(
        sub,
        "generate-replica",
        "generate_replica",
        help="re-make one of The Well's simulated datasets with our solvers, in the Well's exact layout",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=textwrap.dedent(GENERATE_REPLICA) + table + REPLICA_EXAMPLES,
    )
    parser.add_argument("--dataset", required=True, choices=sorted(REPLICAS))
    add_out(parser, "datasets", DATASETS_OUT)
    parser.add_argument(
        "--resolution",
        type=int,
        nargs="+",
        help="grid points per axis (default: the CPU size); active_matter: N [N [orientations]] (orientations = N)",
    )
    parser.add_argument("--n-steps", type=int, help="stored frames per trajectory")
    parser.add_argument("--n-traj", type=int, help="trajectories per parameter set (split 80/10/10)")
    parser.add_argument("--full", action="store_true", help="the Well's parameter sets and sizes")
    parser.add_argument(
        "--sets", type=int, nargs="+", help="indices of the parameter sets to make (default: all; see --list-sets)"
    )
    parser.add_argument("--list-sets", action="store_true", help="print the parameter sets and exit")
    parser.add_argument("--seed", type=int, default=42, help="seed of the initial conditions and splits (42)")
    parser.add_argument("--workers", type=int, default=2, help="trajectories simulated at once (2)")
    add_overwrite_and_quiet(parser, "replace an existing dataset directory", "no progress bar")


def convert_pdebench(sub) -> None:
    parser = command(
        sub,
        "convert-pdebench",
        "convert_pdebench",
        help="convert PDEBench files (the paper's six pretraining subsets) into The Well's format",
        description="Supported layouts: 1D/2D/3D CFD, 2D shallow water (rdb), 2D diffusion-reaction, 2D "
        "inhomogeneous incompressible NS (see well_upao/families/pdebench.py). Files of the same family (e.g. the "
        "three 1D CFD configurations) are combined into one dataset OUT/<family>.",
    )
    parser.add_argument("sources", nargs="+", type=Path, help="PDEBench HDF5 files")
    add_out(parser, "datasets", DATASETS_OUT)
    parser.add_argument("--downsample", type=int, default=1, help="keep every k-th grid point per axis")
    parser.add_argument("--max-steps", type=int, help="keep the first time steps (the paper: 21)")
    parser.add_argument("--n-traj", type=int, help="convert only the first N trajectories")
    parser.add_argument("--viscosity", type=float, default=0.01, help="nu of the incompressible NS subset (0.01)")
    parser.add_argument("--seed", type=int, default=42, help="seed of the train/valid split")
    add_overwrite_and_quiet(parser, None, None)


def import_arrays(sub) -> None:
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
    add_overwrite_and_quiet(parser, "replace an existing dataset directory", "no progress bar")


def validate(sub) -> None:
    parser = command(
        sub,
        "validate",
        "validate",
        help="check a dataset directory or HDF5 file against The Well's format and our contracts",
        description="Check OUT/<name> (splits, files, stats.yaml) or a single .hdf5 file, and its values with the "
        "checks of The Well's scripts/check_thewell_data.py (NaN and constant frames are problems; near-constant "
        "frames, allclose to their first value, frames close to the previous one and outlier frames are printed as "
        "notes). Exit 1 on problems.",
    )
    parser.add_argument("path", type=Path)
    parser.add_argument("--check-exact", action="store_true", help="re-evaluate the closed form and compare")
    parser.add_argument(
        "--no-values", action="store_true", help="skip the value checks (NaN/inf, constant frames, notes)"
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="near-constant frames (every value within numpy's allclose of the frame's first) are problems too",
    )
    parser.add_argument(
        "--digest",
        action="store_true",
        help="also print the sha256 of the dataset's content (arrays, attributes, stats.yaml; not the HDF5 layout): "
        "generate-exact gives the same digest for the same command on any x86 CPU",
    )


def evaluate(sub) -> None:
    parser = command(
        sub,
        "evaluate",
        "evaluate",
        help="one-step and rollout VRMSE (both definitions) of models and classical baselines on a split",
        **described(EVALUATE),
    )
    parser.add_argument(
        "checkpoints", nargs="*", help="well-upao checkpoints or run folders, each optionally as LABEL=PATH"
    )
    parser.add_argument("--data", help="dataset name (default: the first run's)")
    add_base_path(parser, "Well base path (default: the run's, else $WELL_BASE_PATH or ./datasets)")
    add_split(parser, "valid")
    parser.add_argument(
        "--history",
        type=int,
        help="frames before each scored frame (default: the longest history of the rows, else the paper's 8); "
        "every row reads the history its run trained with, and all rows are scored on the same frames",
    )
    parser.add_argument(
        "--stride", type=int, help="time stride between frames, the Well's dt_stride (default: the run's, else 1)"
    )
    parser.add_argument(
        "--rollout-steps",
        type=int,
        default=30,
        help="autoregressive steps per rollout, at most what a trajectory holds after the history (default 30: the "
        "end of the Well's 13:30 window; the table reports the windows 6:12 and 13:30 and the last step run)",
    )
    parser.add_argument(
        "--rollout-starts",
        type=int,
        default=3,
        help="rollouts per trajectory, from start windows spread over it (default 3; fewer where it holds fewer)",
    )
    add_max_trajectories(parser, None)
    evaluate_rows(parser)


def evaluate_rows(parser: argparse.ArgumentParser) -> None:
    """``evaluate``'s options on the rows beyond the checkpoints, and where it writes and computes."""
    parser.add_argument("--no-solver", action="store_true", help="skip the numerical-solver baseline")
    parser.add_argument(
        "--match-solver",
        metavar="ROW",
        help="add solver rows matched to ROW (a row's name, e.g. a LABEL) in runtime and in accuracy: fixed-step "
        "RK4 on the full and coarsened grids, picked by ms / prediction and VRMSE measured in this run",
    )
    parser.add_argument(
        "--zero-shot-from",
        metavar="LABEL=PATH",
        action="append",
        default=[],
        help="a one-frame model trained on another dataset (C_src >= C_tgt channels): evaluated on every C_tgt-subset "
        "of its channels, the best kept as row LABEL (the paper's zero-shot transfer); repeatable",
    )
    add_out(parser, "evaluation", "folder for JSON and PNG (./evaluation)")
    parser.add_argument(
        "--device",
        default="auto",
        help="where the model rows run: auto (CUDA when present, else the CPU), cpu, cuda or cuda:N; the classical "
        "rows, the solver and the scores stay on the CPU (default auto)",
    )
    parser.add_argument("--quiet", action="store_true")


def residual_floor(sub) -> None:
    parser = command(
        sub,
        "residual-floor",
        "residual_floor",
        help="how far the observed frames are from making the PDE residual vanish, per derivative and time scheme",
        **described(RESIDUAL_FLOOR),
    )
    parser.add_argument("--data", required=True, help="dataset name")
    add_base_path(parser)
    add_split(parser, "train")
    parser.add_argument("--stride", type=int, nargs="+", default=[1], help="time strides between frames (1)")
    add_max_trajectories(parser, 4)
    parser.add_argument("--max-frames", type=int, default=12, help="frames per trajectory and stride (12)")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON")
    parser.add_argument(
        "--fit",
        nargs="+",
        metavar="NAME",
        help="least-squares values of these PDE coefficients (e.g. delta_A delta_B) from the observed frames, "
        "under the derivative and time scheme whose floor after the fit is lowest, with the floor at the "
        "documented and at the fitted values",
    )


def leaderboard(sub) -> None:
    parser = command(
        sub,
        "leaderboard",
        "leaderboard",
        help="the Well's published VRMSE and the paper's numbers beside ours for the Well's four datasets",
        description="Print the Well's leaderboard (FNO, TFNO, U-Net, CNextU-Net) and the paper's main-table rows "
        "for active_matter, gray_scott_reaction_diffusion, rayleigh_benard and shear_flow, with ours from "
        "`well-upao evaluate` JSON files (both VRMSE definitions, labelled).",
    )
    parser.add_argument("evaluations", nargs="*", type=Path, help="evaluation_*.json files from well-upao evaluate")


def adapters_report(sub) -> None:
    parser = command(
        sub,
        "adapters-report",
        "adapters_report",
        help="stable rank, participation ratio and entropy rank of every LoRA/NSLoRA update in a checkpoint",
        description="Spectral diagnostics of DeltaW per adapter module and averaged (the paper's spectral table). "
        "Prints a markdown table; --json writes the numbers.",
    )
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("--json", type=Path, help="also write the report as JSON to this path")


def quickstart(sub) -> None:
    parser = command(
        sub,
        "quickstart",
        "quickstart",
        help="the main job: generate data, adapt the shipped backbone with UPAO + NSLoRA, compare (~10 min)",
        description="Generate a small wave2d dataset at time stride 5, adapt the shipped pretrained backbone with "
        "NSLoRA under UPAO (no interior labels) through The Well's harness, train a supervised-LoRA reference, "
        "and print the evaluation table beside the classical baselines and the zero-shot backbone; PNG figures "
        "and JSON go to OUT/results.",
    )
    add_out(parser, "quickstart", None)
    parser.add_argument("--pde", default="wave2d", help="exact dataset (wave2d or advdiff2d show the point best)")
    parser.add_argument("--stride", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--lr", type=float, default=1e-3, help="learning rate of both runs (1e-3; the paper: 1e-4)")
    parser.add_argument("--n-traj", type=int, default=12)
    parser.add_argument("--resolution", type=int, default=64)
    parser.add_argument(
        "--base",
        choices=["extrap1", "extrap2", "last", "none"],
        default=None,
        help="prediction base of both runs (default: extrap2, the better one measured in reports/regimes.md)",
    )
    parser.add_argument("--seed", type=int, default=42, help="seed of the data and the training order (42)")
    parser.add_argument(
        "--backbone",
        default="shipped_extrap2",
        help="backbone to adapt: shipped_extrap2 (default: the tiny backbone pretrained with base extrap2), shipped "
        "(the one pretrained with base last, re-zeroed for other bases) or a checkpoint path",
    )


def export_backbone(sub) -> None:
    parser = command(
        sub,
        "export-backbone",
        "export_backbone",
        help="write a compact backbone checkpoint (no optimizer state) for sharing or shipping",
    )
    parser.add_argument("source", type=Path)
    parser.add_argument("destination", type=Path)
    parser.add_argument(
        "--merge",
        action="store_true",
        help="fold the checkpoint's LoRA/NSLoRA adapters into the weights: a plain backbone for model.pretrained=",
    )


def fix_harness(sub) -> None:
    command(
        sub,
        "fix-harness",
        "fix_harness",
        help="write the file the_well's harness asserts (needed once after an editable install)",
        description="the_well/benchmark/train.py asserts that the_well/benchmark/configs/config.yaml exists; a "
        "regular install of well-upao writes it, an editable one (pip install -e .) cannot. This writes it.",
    )


#: the commands in the order ``well-upao --help`` lists them
COMMANDS = (
    generate_exact,
    generate_pretrain,
    generate_replica,
    convert_pdebench,
    import_arrays,
    validate,
    evaluate,
    residual_floor,
    leaderboard,
    adapters_report,
    quickstart,
    export_backbone,
    fix_harness,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="well-upao",
        description="Unsupervised PDE-based adaptation (UPAO) of PDE foundation models, for The Well.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in COMMANDS:
        add(sub)
    for name, subparser in sub.choices.items():
        add_debug(subparser)
        if name in TAKES_IMPORTS:
            add_imports(subparser)
    return parser
