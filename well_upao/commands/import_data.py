"""``well-upao import``: a user's arrays (``.npz``, netCDF, zarr) as a dataset in the Well's layout
(``well_upao.data.importing.write_dataset``), with what was read and changed stated, and the next step."""

from __future__ import annotations

import argparse

from well_upao.commands.options import CommandError
from well_upao.data.datasets import DATASETS
from well_upao.data.importing import write_dataset
from well_upao.physics.discretisation import pde_for_dataset


def run(args: argparse.Namespace) -> int:
    pde = _pde(args)
    summary = write_dataset(
        args.source,
        args.name,
        args.out,
        fields=args.fields,
        rename=dict(args.rename),
        vectors={name: value.split(",") for name, value in args.vector},
        time=args.time,
        dims=args.dims,
        dim_names=dict(args.dim_names),
        coordinates=dict(args.coordinates),
        spacing={axis: _number(value, f"--spacing {axis}") for axis, value in args.spacing},
        boundaries=_boundaries(args.boundary),
        dt=args.dt,
        time_unit=args.time_unit,
        components={name: value.split(",") for name, value in args.components},
        scalars={name: None if value is None else _number(value, f"--scalar {name}") for name, value in args.scalar},
        varying_scalars=dict.fromkeys(args.varying_scalar),
        slots=dict(args.slots),
        pde=pde,
        frames=args.frames,
        segments=args.segments,
        valid_fraction=args.valid_fraction,
        test_fraction=args.test_fraction,
        seed=args.seed,
        traj_per_file=args.traj_per_file,
        overwrite=args.overwrite,
        progress=not args.quiet,
    )
    print(summary.describe())
    imports = " ".join(args.imports) if args.imports else "MY_MODULE"
    if args.name in DATASETS:
        print(f"next         well-upao validate {summary.path} --imports {imports}")
    else:
        print(
            "next         register it in a module of yours (importable, e.g. my_pdes.py), with its PDE:\n"
            "               from well_upao.data.datasets import DatasetSpec, register_dataset\n"
            f"               {summary.registration()}\n"
            f"             then: well-upao validate {summary.path} --imports my_pdes"
        )
    return 0


def _pde(args: argparse.Namespace):
    """The PDE whose parameters and variables the import checks: ``--pde`` (a PDE or a dataset registered by
    ``--imports``), else the registered dataset's, else none."""
    if args.pde is None:
        spec = DATASETS.get(args.name)
        return None if spec is None or spec.pde is None else pde_for_dataset(args.name, required=False)
    try:
        return pde_for_dataset(args.pde)
    except KeyError as error:
        raise CommandError(
            f"--pde {args.pde}: no PDE or dataset of that name is registered; register it in a module and name the "
            "module with --imports MODULE"
        ) from error


def _number(text: str, option: str) -> float:
    try:
        return float(text)
    except ValueError as error:
        raise CommandError(f"{option}={text}: not a number") from error


def _boundaries(given: list[tuple[str, str | None]]) -> str | dict[str, str]:
    """``--boundary wall`` (every axis) or ``--boundary x=periodic y=wall``."""
    if not given:
        return "periodic"
    if len(given) == 1 and given[0][1] is None:
        return given[0][0]
    if any(value is None for _, value in given):
        raise CommandError("--boundary: give one type for every axis (wall) or one per axis (x=periodic y=wall)")
    return {axis: value for axis, value in given}
