"""The ``well-upao`` command line. Subcommands are thin: parsing and printing here, the work in modules.

Errors from bad input are reported as one line on stderr with a non-zero exit code.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

EXIT_BAD_INPUT = 2
EXIT_FAILED = 1


class CommandError(Exception):
    """A user-facing error: printed as one line, exit code ``EXIT_BAD_INPUT``."""


# --------------------------------------------------------------------------- generate-exact
def _generate_exact_parser(sub: argparse._SubParsersAction) -> None:
    parser, exact = _generator_parser(
        sub,
        "generate-exact",
        "exact",
        help="write an exact-solution dataset (closed form, no solver error) in The Well's HDF5 format",
        intro="""\
            Evaluate one of the paper's exact-solution PDE families on a periodic grid x_i = i L / N and
            write it where The Well's loaders (and `python -m the_well.benchmark.train data=<pde>`) find it:

              OUT/<pde>/data/{train,valid,test}/*.hdf5   and   OUT/<pde>/stats.yaml

            Trajectories are split 90% train / 10% valid by a permutation seeded with --seed (the paper's
            protocol). test/ holds the valid trajectories again (the paper evaluates on its validation split)
            unless --test-fraction carves out a separate held-out test set. stats.yaml uses train/ only.
            Defaults are the paper's table:
            """,
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
    parser.set_defaults(handler=_run_generate_exact)


def _generator_parser(
    sub: argparse._SubParsersAction, command: str, origin: str, help: str, intro: str, examples: list[str]
) -> tuple[argparse.ArgumentParser, dict]:
    """A generator's subcommand: its description (``intro``, the default sizes of the registered families of
    ``origin``, ``examples``) and the options every generator takes; returns the parser and the families."""
    from well_upao.data.datasets import generators

    families = generators(origin)
    description = textwrap.dedent(intro) + _defaults_table(families.values()) + "\n\nexamples:\n"
    parser = sub.add_parser(
        command,
        help=help,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=description + "\n".join(f"  {line}" for line in examples),
    )
    _add_generation_options(parser)
    return parser, families


def _add_generation_options(parser: argparse.ArgumentParser) -> None:
    """The size and output options every generator takes (defaults: the family's, see the table above)."""
    parser.add_argument("--out", type=Path, default=Path("datasets"), help="Well base path (default ./datasets)")
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
    parser.add_argument("--overwrite", action="store_true", help="replace an existing dataset directory")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def _run_generate_exact(args: argparse.Namespace) -> int:
    from well_upao.data.datasets import generators

    return _generate_and_report(list(generators("exact")) if args.pde == "all" else [args.pde], args)


def _generate_and_report(names: list[str], args: argparse.Namespace) -> int:
    """Generate each named family with the size options of ``args`` and print its summary."""
    from well_upao.data.generate import GenerationRequest, generate_dataset

    for name in names:
        request = GenerationRequest(
            pde=name,
            out=args.out,
            n_traj=args.n_traj,
            resolution=args.resolution,
            n_steps=args.n_steps,
            dt=args.dt,
            seed=args.seed,
            traj_per_file=args.traj_per_file,
            overwrite=args.overwrite,
            test_fraction=getattr(args, "test_fraction", 0.0),
            time_dtype=args.time_dtype,
        )
        print(format_generation_summary(generate_dataset(request, progress=not args.quiet)))
    return 0


def _defaults_table(families) -> str:
    """One line per family: its default sizes (for --help)."""
    return "\n".join(
        f"  {f.name:<28} {f.n_spatial_dims}D {f.default_resolution}^{f.n_spatial_dims} x {f.default_n_steps} steps, "
        f"dt={f.default_dt}, {f.default_n_traj} traj   {f.equation}"
        for f in families
    )


def format_generation_summary(summary, family=None) -> str:
    from well_upao.data.datasets import DATASET_SLOTS, generators

    pde = family or generators()[summary.pde]
    grid = summary.grid
    shape = "x".join([str(grid.resolution)] * pde.n_spatial_dims)
    slots = ", ".join(f"{c}->{s}" for c, s in DATASET_SLOTS[summary.pde].items())
    test_note = " (same trajectories as valid)" if summary.test_mirrors_valid else " (held out)"
    lines = [
        f"dataset      {summary.pde}: {pde.equation}",
        f"path         {summary.path}",
        f"grid         {shape}, {grid.n_steps} steps, dt={grid.dt:g}, "
        + (
            f"periodic x_i = i L/N, L={pde.domain_length:.6g}"
            if pde.kind == "closed_form"
            else f"{'/'.join(pde.boundary_types)} borders, domain length {pde.domain_length:.6g}, {pde.kind}"
        ),
        "trajectories "
        + ", ".join(f"{k} {v}" for k, v in summary.split_sizes.items())
        + test_note
        + f"; files: {', '.join(f'{k} {v}' for k, v in summary.n_files.items())}",
        f"channels     {slots}",
    ]
    for name, (low, high) in summary.parameter_ranges.items():
        lines.append(f"param        {name:<6} in [{low:.4g}, {high:.4g}]")
    lines.append(
        f"written      {summary.bytes_written / 2**20:.1f} MiB in {summary.seconds:.2f} s "
        f"({summary.megabytes_per_second:.0f} MiB/s)"
    )
    return "\n".join(lines)


# --------------------------------------------------------------------------- generate-replica
def _generate_replica_parser(sub: argparse._SubParsersAction) -> None:
    from well_upao.families.replicas.families import REPLICAS

    table = "\n".join(
        f"  {f.name:<30} CPU {'x'.join(map(str, f.cpu_size.shape))} x {f.cpu_size.n_steps} frames, "
        f"{len(f.parameter_sets(False))} sets x {f.cpu_size.n_traj_per_set} traj; the Well "
        f"{'x'.join(map(str, f.well_size.shape))} x {f.well_size.n_steps}, {len(f.parameter_sets(True))} sets "
        f"x {f.well_size.n_traj_per_set}; frames every {f.frame_dt:g}\n    {f.method}"
        for f in REPLICAS.values()
    )
    parser = sub.add_parser(
        "generate-replica",
        help="re-make one of The Well's simulated datasets with our solvers, in the Well's exact layout",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=textwrap.dedent(
            """\
            Simulate one of The Well's datasets from its documented equations, parameters, domain and frame
            spacing, and write it as the Well does: OUT/<dataset>/data/{train,valid,test}/<the Well's file name
            per parameter set>.hdf5 and stats.yaml, with a root attribute `well_upao_replica` saying how it was
            made. Defaults are CPU sizes on a resolved subset of the parameters; --full gives the Well's sets
            and sizes (hours to days on a CPU).

            """
        )
        + table
        + "\n\nexamples:\n  well-upao generate-replica --dataset gray_scott_reaction_diffusion\n"
        "  well-upao generate-replica --dataset shear_flow --resolution 128 256 --n-traj 4\n"
        "  well-upao generate-replica --dataset active_matter --sets 0 --n-traj 3   # ~2 CPU-minutes a trajectory",
    )
    parser.add_argument("--dataset", required=True, choices=sorted(REPLICAS))
    parser.add_argument("--out", type=Path, default=Path("datasets"), help="Well base path (default ./datasets)")
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
    parser.add_argument("--overwrite", action="store_true", help="replace an existing dataset directory")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(handler=_run_generate_replica)


def _run_generate_replica(args: argparse.Namespace) -> int:
    from well_upao.data.replicas import ReplicaRequest, generate_replica
    from well_upao.families.replicas.families import REPLICAS

    if args.list_sets:
        family = REPLICAS[args.dataset]
        for index, scalars in enumerate(family.parameter_sets(args.full)):
            print(f"{index:>3}  {family.file_stem(scalars)}")
        return 0
    request = ReplicaRequest(
        dataset=args.dataset,
        out=args.out,
        shape=tuple(args.resolution) if args.resolution else None,
        n_steps=args.n_steps,
        n_traj_per_set=args.n_traj,
        full=args.full,
        sets=args.sets,
        seed=args.seed,
        overwrite=args.overwrite,
        workers=args.workers,
    )
    summary = generate_replica(request, progress=not args.quiet)
    size = summary.size
    print(
        f"wrote {summary.path}: {summary.parameter_sets} parameter sets x {size.n_traj_per_set} trajectories, "
        f"{'x'.join(map(str, size.shape))} x {size.n_steps} frames, {summary.files} files in {summary.seconds:.1f} s"
    )
    return 0


# --------------------------------------------------------------------------- generate-pretrain
def _generate_pretrain_parser(sub: argparse._SubParsersAction) -> None:
    parser, simulated = _generator_parser(
        sub,
        "generate-pretrain",
        "simulated",
        help="simulate the pretraining corpus (PDEBench's families) in The Well's format",
        intro="Integrate the paper's pretraining families with our solvers (well_upao/families/pdebench_solvers.py)\n"
        "and write each as a Well dataset OUT/<family>/ (splits, stats.yaml). Defaults fit a 2-core CPU:\n",
        examples=["well-upao generate-pretrain --out datasets --n-traj 12"],
    )
    parser.add_argument("--family", nargs="+", default=["all"], help=f"families ({', '.join(simulated)}) or all")
    parser.set_defaults(handler=_run_generate_pretrain)


def _run_generate_pretrain(args: argparse.Namespace) -> int:
    from well_upao.data.datasets import generators

    simulated = generators("simulated")
    names = list(simulated) if args.family == ["all"] else args.family
    unknown = [n for n in names if n not in simulated]
    if unknown:
        raise CommandError(f"unknown families {unknown}; choose from {', '.join(simulated)} or all")
    return _generate_and_report(names, args)


# --------------------------------------------------------------------------- convert-pdebench
def _convert_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "convert-pdebench",
        help="convert PDEBench files (the paper's six pretraining subsets) into The Well's format",
        description="Supported layouts: 1D/2D/3D CFD, 2D shallow water (rdb), 2D diffusion-reaction, 2D "
        "inhomogeneous incompressible NS (see well_upao/families/pdebench.py). Files of the same family (e.g. the "
        "three 1D CFD configurations) are combined into one dataset OUT/<family>.",
    )
    parser.add_argument("sources", nargs="+", type=Path, help="PDEBench HDF5 files")
    parser.add_argument("--out", type=Path, default=Path("datasets"), help="Well base path (default ./datasets)")
    parser.add_argument("--downsample", type=int, default=1, help="keep every k-th grid point per axis")
    parser.add_argument("--max-steps", type=int, help="keep the first time steps (the paper: 21)")
    parser.add_argument("--n-traj", type=int, help="convert only the first N trajectories")
    parser.add_argument("--viscosity", type=float, default=0.01, help="nu of the incompressible NS subset (0.01)")
    parser.add_argument("--seed", type=int, default=42, help="seed of the train/valid split")
    parser.add_argument("--overwrite", action="store_true")
    parser.add_argument("--quiet", action="store_true")
    parser.set_defaults(handler=_run_convert)


def _run_convert(args: argparse.Namespace) -> int:
    from well_upao.data.generate import GenerationRequest, generate_dataset
    from well_upao.families.pdebench import PDEBenchError, open_sources

    if args.downsample < 1:
        raise CommandError("--downsample must be >= 1")
    try:
        families = open_sources(args.sources, args.downsample, args.max_steps, args.viscosity)
        for name, family in families.items():
            request = GenerationRequest(
                pde=name, out=args.out, n_traj=args.n_traj, seed=args.seed, overwrite=args.overwrite, traj_per_file=None
            )
            print(format_generation_summary(generate_dataset(request, not args.quiet, family=family), family))
    except (PDEBenchError, OSError, KeyError) as error:
        raise CommandError(str(error)) from error
    return 0


# --------------------------------------------------------------------------- validate
def _validate_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
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
    parser.set_defaults(handler=_run_validate)


def _run_validate(args: argparse.Namespace) -> int:
    from well_upao.data.validate import validate_dataset

    if not args.path.exists():
        raise CommandError(f"{args.path}: no such file or directory")
    notes: list[str] = []
    problems = validate_dataset(
        args.path, check_exact=args.check_exact, check_values=not args.no_values, notes=notes, strict=args.strict
    )
    for problem in problems:
        print(f"problem: {problem}")
    for note in notes:
        print(f"note: {note}")
    print(f"{args.path}: {'OK' if not problems else f'{len(problems)} problem(s)'}")
    if args.digest:
        from well_upao.data.digest import dataset_digest

        if not args.path.is_dir():
            raise CommandError(f"{args.path}: --digest takes a dataset directory (with data/ and stats.yaml)")
        print(f"content sha256 {dataset_digest(args.path)}")
    return 0 if not problems else EXIT_FAILED


# --------------------------------------------------------------------------- evaluate
def _evaluate_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "evaluate",
        help="one-step and rollout VRMSE (both definitions) of models and classical baselines on a split",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=textwrap.dedent(
            """\
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
        ),
    )
    parser.add_argument(
        "checkpoints", nargs="*", help="well-upao checkpoints or run folders, each optionally as LABEL=PATH"
    )
    parser.add_argument("--data", help="dataset name (default: the first run's)")
    parser.add_argument(
        "--base-path",
        type=Path,
        default=None,
        help="Well base path (default: the run's, else $WELL_BASE_PATH or ./datasets)",
    )
    parser.add_argument("--split", default="valid", choices=["train", "valid", "test"])
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
    parser.add_argument("--max-trajectories", type=int, default=None)
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
    parser.add_argument("--out", type=Path, default=Path("evaluation"), help="folder for JSON and PNG (./evaluation)")
    parser.add_argument(
        "--device",
        default="auto",
        help="where the model rows run: auto (CUDA when present, else the CPU), cpu, cuda or cuda:N; the classical "
        "rows, the solver and the scores stay on the CPU (default auto)",
    )
    parser.add_argument("--quiet", action="store_true")
    parser.set_defaults(handler=_run_evaluate)


def _run_evaluate(args: argparse.Namespace) -> int:
    from well_upao.data.source import default_base_path
    from well_upao.evaluate.pipeline import EvaluationRequest, run_evaluation
    from well_upao.evaluate.plan import EvaluationError
    from well_upao.evaluate.protocol import ProtocolError
    from well_upao.harness.runs import RunCheckpoint, labelled_checkpoints
    from well_upao.models.checkpoint import CheckpointError

    # reading a checkpoint imports the modules its run named in data.imports (a user's datasets)
    checkpoints = [RunCheckpoint.read(label, path) for label, path in labelled_checkpoints(args.checkpoints)]
    run = checkpoints[0].settings if checkpoints else {}
    dataset = args.data or run.get("dataset")
    if dataset is None:
        raise CommandError("--data is required when no run (or checkpoint that names its dataset) is given")
    request = EvaluationRequest(
        base=args.base_path or (run.get("base") if dataset == run.get("dataset") else None) or default_base_path(),
        dataset=dataset,
        split=args.split,
        history=args.history,
        stride=args.stride or run.get("stride") or 1,
        rollout_steps=args.rollout_steps,
        rollout_starts=args.rollout_starts,
        max_trajectories=args.max_trajectories,
        solver=not args.no_solver,
        match_solver=args.match_solver,
        out=args.out,
        progress=not args.quiet,
        device=args.device,
    )
    transfers = []
    for spec in args.zero_shot_from:
        label, separator, path = spec.partition("=")
        if not (separator and label and path):
            raise CommandError(f"--zero-shot-from takes LABEL=PATH, got {spec!r}")
        transfers.append((label, Path(path)))
    try:
        report = run_evaluation(request, checkpoints, transfers=transfers)
    except (EvaluationError, ProtocolError, CheckpointError, FileNotFoundError, KeyError) as error:
        raise CommandError(str(error).strip("'\"")) from error
    print(report.table)
    print(f"\nwrote {report.json_path} and {len(report.figures)} figures to {args.out}/")
    return 0


# --------------------------------------------------------------------------- leaderboard
def _leaderboard_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "leaderboard",
        help="the Well's published VRMSE and the paper's numbers beside ours for the Well's four datasets",
        description="Print the Well's leaderboard (FNO, TFNO, U-Net, CNextU-Net) and the paper's main-table rows "
        "for active_matter, gray_scott_reaction_diffusion, rayleigh_benard and shear_flow, with ours from "
        "`well-upao evaluate` JSON files (both VRMSE definitions, labelled).",
    )
    parser.add_argument("evaluations", nargs="*", type=Path, help="evaluation_*.json files from well-upao evaluate")
    parser.set_defaults(handler=_run_leaderboard)


def _run_leaderboard(args: argparse.Namespace) -> int:
    from well_upao.evaluate.leaderboard import leaderboard_markdown

    missing = [str(p) for p in args.evaluations if not p.is_file()]
    if missing:
        raise CommandError(f"no such evaluation file: {', '.join(missing)}")
    print(leaderboard_markdown(args.evaluations))
    return 0


# --------------------------------------------------------------------------- quickstart
def _quickstart_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "quickstart",
        help="the main job: generate data, adapt the shipped backbone with UPAO + NSLoRA, compare (~10 min)",
        description="Generate a small wave2d dataset at time stride 5, adapt the shipped pretrained backbone with "
        "NSLoRA under UPAO (no interior labels) through The Well's harness, train a supervised-LoRA reference, "
        "and print the evaluation table beside the classical baselines and the zero-shot backbone; PNG figures "
        "and JSON go to OUT/results.",
    )
    parser.add_argument("--out", type=Path, default=Path("quickstart"))
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
    parser.set_defaults(handler=_run_quickstart)


def _run_quickstart(args: argparse.Namespace) -> int:
    from well_upao.harness.install import harness_config_missing
    from well_upao.quickstart import QuickstartConfig, run_quickstart

    if args.stride < 1 or args.epochs < 1 or args.n_traj < 2:
        raise CommandError("--stride and --epochs must be >= 1 and --n-traj >= 2")
    missing = harness_config_missing()
    if missing:
        raise CommandError(missing)
    n_steps = max(51, (8 + 1) * args.stride + 2)
    config = QuickstartConfig(
        out=args.out,
        pde=args.pde,
        stride=args.stride,
        epochs=args.epochs,
        n_traj=args.n_traj,
        resolution=args.resolution,
        n_steps=n_steps,
        lr=args.lr,
        seed=args.seed,
        backbone=args.backbone,
        **({"base": args.base} if args.base else {}),
    )
    try:
        print(run_quickstart(config))
    except RuntimeError as error:
        raise CommandError(str(error)) from error
    return 0


# --------------------------------------------------------------------------- export-backbone
def _export_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "export-backbone",
        help="write a compact backbone checkpoint (no optimizer state) for sharing or shipping",
    )
    parser.add_argument("source", type=Path)
    parser.add_argument("destination", type=Path)
    parser.add_argument(
        "--merge",
        action="store_true",
        help="fold the checkpoint's LoRA/NSLoRA adapters into the weights: a plain backbone for model.pretrained=",
    )
    parser.set_defaults(handler=_run_export)


def _run_export(args: argparse.Namespace) -> int:
    from well_upao.models.assembly import export_merged_backbone
    from well_upao.models.checkpoint import CheckpointError, export_backbone

    try:
        export = export_merged_backbone if args.merge else export_backbone
        size = export(args.source, args.destination)
    except CheckpointError as error:
        raise CommandError(str(error)) from error
    print(f"wrote {args.destination} ({size / 2**20:.1f} MiB)")
    return 0


# --------------------------------------------------------------------------- adapters-report
def _adapters_report_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "adapters-report",
        help="stable rank, participation ratio and entropy rank of every LoRA/NSLoRA update in a checkpoint",
        description="Spectral diagnostics of DeltaW per adapter module and averaged (the paper's spectral table). "
        "Prints a markdown table; --json writes the numbers.",
    )
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("--json", type=Path, help="also write the report as JSON to this path")
    parser.set_defaults(handler=_run_adapters_report)


def _run_adapters_report(args: argparse.Namespace) -> int:
    from well_upao.evaluate.spectral import adapters_report, report_markdown, write_report
    from well_upao.models.checkpoint import CheckpointError

    try:
        report = adapters_report(args.checkpoint)
    except (CheckpointError, ValueError) as error:
        raise CommandError(str(error)) from error
    print(report_markdown(report))
    if args.json:
        write_report(report, args.json)
    return 0


# --------------------------------------------------------------------------- fix-harness
def _fix_harness_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "fix-harness",
        help="write the file the_well's harness asserts (needed once after an editable install)",
        description="the_well/benchmark/train.py asserts that the_well/benchmark/configs/config.yaml exists; a "
        "regular install of well-upao writes it, an editable one (pip install -e .) cannot. This writes it.",
    )
    parser.set_defaults(handler=_run_fix_harness)


def _run_fix_harness(args: argparse.Namespace) -> int:
    from well_upao.harness.install import harness_config_missing, write_harness_config

    missing = harness_config_missing()
    path = write_harness_config()
    print(f"{'wrote' if missing else 'already present:'} {path}")
    return 0


# --------------------------------------------------------------------------- residual-floor
def _residual_floor_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "residual-floor",
        help="how far the observed frames are from making the PDE residual vanish, per derivative and time scheme",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=textwrap.dedent(
            """\
            For each stride, derivative (fd; fd4 and spectral on periodic axes) and time scheme (explicit,
            implicit, crank_nicolson, central), the relative residual ||R_k|| / ||scale_k|| of every sub-equation
            over the interior, computed from the observed frames of a split only (what a UPAO run may read). UPAO
            cannot push a prediction closer to the truth than this floor; the lowest combination is marked (it is
            what trainer.derivative=auto and trainer.time_scheme=auto choose).

            examples:
              well-upao residual-floor --data wave2d --stride 1 5
              well-upao residual-floor --data gray_scott_reaction_diffusion --json floor.json
            """
        ),
    )
    parser.add_argument("--data", required=True, help="dataset name")
    parser.add_argument("--base-path", type=Path, help="Well base path (default $WELL_BASE_PATH or ./datasets)")
    parser.add_argument("--split", default="train", choices=["train", "valid", "test"])
    parser.add_argument("--stride", type=int, nargs="+", default=[1], help="time strides between frames (1)")
    parser.add_argument("--max-trajectories", type=int, default=4)
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
    parser.set_defaults(handler=_run_residual_floor)


def _run_residual_floor(args: argparse.Namespace) -> int:
    import json
    from dataclasses import asdict

    from well_upao.data.source import WellSource, default_base_path
    from well_upao.physics.floor import fit_discretised, floor_markdown, floor_rows
    from well_upao.physics.pdes import pde_for_dataset

    source = WellSource(args.base_path or default_base_path(), args.data, args.split)
    _ = source.files  # a clear error when the split is missing
    try:
        pde = pde_for_dataset(args.data)
    except KeyError as error:
        raise CommandError(
            f"no PDE registered for {args.data!r} (register one with its dataset, and name its module with --imports)"
        ) from error
    if min(args.stride) < 1 or args.max_frames < 3 or args.max_trajectories < 1:
        raise CommandError("--stride must be >= 1, --max-frames >= 3 and --max-trajectories >= 1")
    try:
        observed = {s: source.observed(s, args.max_trajectories, args.max_frames) for s in args.stride}
        rows = [row for stride, frames in observed.items() for row in floor_rows(frames, stride, pde)]
    except (ValueError, KeyError) as error:
        raise CommandError(str(error).strip("'\"")) from error
    print(floor_markdown(rows, args.data))
    fits = []
    for stride in args.stride if args.fit else []:
        try:
            (derivative, scheme), fitted, _ = fit_discretised(observed[stride], pde, args.fit)
        except ValueError as error:
            raise CommandError(str(error)) from error
        fits.append({"stride": stride, "derivative": derivative, "scheme": scheme, **asdict(fitted)})
        values = ", ".join(f"{k} = {v:.5g} (documented {fitted.initial[k]:.5g})" for k, v in fitted.values.items())
        floors = ", ".join(
            f"{k} {fitted.floor_initial[k]:.2e} -> {fitted.floor_fitted[k]:.2e}" for k in fitted.floor_fitted
        )
        print(f"\nstride {stride}, {derivative}/{scheme}: {values}; floor {floors}")
    if args.json:
        from well_upao.data.atomic import atomic_write_text

        payload = {"rows": [asdict(r) | {"mean": r.mean} for r in rows], "fits": fits}
        atomic_write_text(args.json, json.dumps(payload, indent=2))
    return 0


# --------------------------------------------------------------------------- entry point
#: commands that take a dataset or a run, hence a user's modules registering them
TAKES_IMPORTS = ("generate-exact", "validate", "evaluate", "adapters-report", "export-backbone", "residual-floor")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="well-upao",
        description="Unsupervised PDE-based adaptation (UPAO) of PDE foundation models, for The Well.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _generate_exact_parser(sub)
    _generate_pretrain_parser(sub)
    _generate_replica_parser(sub)
    _convert_parser(sub)
    _validate_parser(sub)
    _evaluate_parser(sub)
    _residual_floor_parser(sub)
    _leaderboard_parser(sub)
    _adapters_report_parser(sub)
    _quickstart_parser(sub)
    _export_parser(sub)
    _fix_harness_parser(sub)
    for name, command in sub.choices.items():
        command.add_argument("--debug", action="store_true", help="show the traceback of an error")
        if name in TAKES_IMPORTS:
            command.add_argument(
                "--imports",
                nargs="+",
                default=[],
                metavar="MODULE",
                help="modules to import first, where your own datasets and PDEs are registered (a run's "
                "checkpoint remembers its data.imports, so runs need none)",
            )
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)  # --help ends here, before anything imports torch (tests/test_cli.py)
    # the error classes of the package's modules, imported once a command runs (these modules import torch)
    from well_upao.data.atomic import OutputExistsError
    from well_upao.data.datasets import UserModuleError, import_modules
    from well_upao.data.generate import GenerationError
    from well_upao.data.source import DatasetNotFoundError
    from well_upao.data.specification import SpecificationError
    from well_upao.models.checkpoint import CheckpointError

    def fail(message: str, code: int) -> int:
        print(f"well-upao {args.command}: error: {' '.join(str(message).split())}", file=sys.stderr)
        return code

    try:
        import_modules(getattr(args, "imports", []), "--imports")
        return args.handler(args)
    except KeyboardInterrupt:
        print(f"well-upao {args.command}: interrupted, partial output removed", file=sys.stderr)
        return 130
    except Exception as error:
        if args.debug:
            raise
        bad_input = (CommandError, GenerationError, OutputExistsError, UserModuleError, CheckpointError)
        bad_input += (SpecificationError,)
        if isinstance(error, (*bad_input, DatasetNotFoundError)):
            return fail(str(error), EXIT_BAD_INPUT)
        if isinstance(error, OSError) and error.strerror:
            return fail(f"{error.strerror}{f' ({error.filename})' if error.filename else ''}", EXIT_FAILED)
        return fail(f"{type(error).__name__}: {error} (--debug shows the traceback)", EXIT_FAILED)


if __name__ == "__main__":
    sys.exit(main())
