"""Every ``well-upao`` command line (argparse only: building them loads no torch, so ``--help`` is fast).

Each command's parser names the module that runs it (``command_module``; ``well_upao.commands.running``
imports it after parsing). Options several commands take come from ``well_upao.commands.options``.
"""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

from well_upao.commands.help_texts import (
    EVALUATE,
    FORECAST,
    GENERATE_EXACT,
    GENERATE_REPLICA,
    REPLICA_EXAMPLES,
    RESIDUAL_FLOOR,
)
from well_upao.commands.import_parser import import_arrays
from well_upao.commands.options import (
    DATASETS_OUT,
    add_base_path,
    add_debug,
    add_imports,
    add_max_trajectories,
    add_out,
    add_overwrite_and_quiet,
    add_split,
    command,
    described,
)
from well_upao.data.datasets import generators
from well_upao.families.replicas.families import REPLICAS

#: commands that take a dataset or a run, hence a user's modules registering them
TAKES_IMPORTS = (
    "generate-exact",
    "import",
    "validate",
    "evaluate",
    "forecast",
    "adapters-report",
    "export-backbone",
    "residual-floor",
)


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
        "--no-figures",
        action="store_true",
        help="write the JSON without the PNG figures (a second or more per row: for scripted evaluations)",
    )
    parser.add_argument(
        "--device",
        default="auto",
        help="where the model rows run: auto (CUDA when present, else the CPU), cpu, cuda or cuda:N; the classical "
        "rows, the solver and the scores stay on the CPU (default auto)",
    )
    parser.add_argument("--quiet", action="store_true")


def forecast(sub) -> None:
    parser = command(
        sub,
        "forecast",
        "forecast",
        help="predict each trajectory's future from its history, with the candidate to trust per window",
        **described(FORECAST),
    )
    parser.add_argument("source", help="a run folder, a checkpoint, shipped / shipped_extrap2, or classical")
    parser.add_argument("--input", type=Path, required=True, help="a Well file, or a dataset folder (with --split)")
    add_split(parser, "valid")
    parser.add_argument("--history", type=int, help="frames of history (default: the run's, else 8)")
    parser.add_argument("--steps", type=int, default=30, help="frames to forecast (default 30)")
    parser.add_argument("--stride", type=int, help="stored frames between forecast frames (default: the run's, else 1)")
    parser.add_argument(
        "--start",
        type=int,
        help="forecast from this stored frame (the history ends before it) instead of after the last one",
    )
    parser.add_argument("--predictor", help="use this candidate for every step instead of the pick")
    parser.add_argument(
        "--with-history", action="store_true", help="put the history first in forecast.hdf5 (for the Well's reader)"
    )
    parser.add_argument(
        "--boundary",
        type=Path,
        help="a Well file of observed frames at the forecast's times: their boundary band (1 point wide) is imposed "
        "at every step (its interior is not read)",
    )
    parser.add_argument("--no-solver", action="store_true", help="leave the solver step out of the candidates")
    parser.add_argument(
        "--solver-budget",
        type=int,
        default=128,
        help="RK4 sub-steps one solver prediction may need (step doubling on the first history) for the solver to "
        "stay a candidate (default 128; a count, so the candidates do not depend on the machine's load)",
    )
    add_max_trajectories(parser, None)
    add_out(parser, "forecast", "folder for forecast.hdf5, forecast.json and the figures (./forecast)")
    parser.add_argument("--device", default="auto", help="where a model runs: auto, cpu, cuda or cuda:N")
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
        help="the main job: generate data, adapt the shipped backbone with UPAO + NSLoRA, compare (3.4 min, 2 cores)",
        description="Generate a small wave2d dataset at time stride 5, adapt the shipped pretrained backbone with "
        "NSLoRA under UPAO (no interior labels) through The Well's harness, train a supervised-LoRA reference, "
        "and print the evaluation table beside the classical baselines and the zero-shot backbone; PNG figures "
        "and JSON go to OUT/results. The quickstart took 3.4 minutes on two CPU cores (reports/user_times.md).",
    )
    add_out(parser, "quickstart", None)
    parser.add_argument("--pde", default="wave2d", help="exact dataset (wave2d or advdiff2d show the point best)")
    parser.add_argument("--stride", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=3, help="epochs of both runs, 24 optimizer steps each (3)")
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
    forecast,
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
