"""``well-upao residual-floor``: how far the observed frames are from making the PDE residual vanish."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, replace

from well_upao.commands.options import CommandError
from well_upao.data.atomic import atomic_write_text
from well_upao.data.source import WellSource, default_base_path
from well_upao.physics.discretisation import PhysicsRequest, physics_of
from well_upao.physics.floor import floor_markdown


def run(args: argparse.Namespace) -> int:
    source = WellSource(args.base_path or default_base_path(), args.data, args.split)
    _ = source.files  # a clear error when the split is missing
    if min(args.stride) < 1 or args.max_frames < 3 or args.max_trajectories < 1:
        raise CommandError("--stride must be >= 1, --max-frames >= 3 and --max-trajectories >= 1")
    no_pde = f"no PDE registered for {args.data!r} (register one with its dataset, and name its module with --imports)"
    asked = PhysicsRequest(None, "auto", "auto", sample=(args.max_trajectories, args.max_frames), no_pde=no_pde)
    try:
        surveys = [physics_of(source, replace(asked, survey=True), s) for s in args.stride]
    except (ValueError, KeyError) as error:
        raise CommandError(str(error).strip("'\"")) from error
    if not surveys[0].available:
        raise CommandError(no_pde)
    rows = [row for physics in surveys for row in physics.rows]
    print(floor_markdown(rows, args.data))
    fits = []
    for stride in args.stride if args.fit else []:
        try:
            physics = physics_of(source, replace(asked, fit=tuple(args.fit)), stride)
        except ValueError as error:
            raise CommandError(str(error)) from error
        derivative, scheme, fitted = physics.derivative, physics.scheme, physics.fit
        fits.append({"stride": stride, "derivative": derivative, "scheme": scheme, **asdict(fitted)})
        values = ", ".join(f"{k} = {v:.5g} (documented {fitted.initial[k]:.5g})" for k, v in fitted.values.items())
        floors = ", ".join(
            f"{k} {fitted.floor_initial[k]:.2e} -> {fitted.floor_fitted[k]:.2e}" for k in fitted.floor_fitted
        )
        print(f"\nstride {stride}, {derivative}/{scheme}: {values}; floor {floors}")
    if args.json:
        payload = {"rows": [asdict(r) | {"mean": r.mean} for r in rows], "fits": fits}
        atomic_write_text(args.json, json.dumps(payload, indent=2))
    return 0
