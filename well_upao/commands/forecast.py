"""``well-upao forecast``: each trajectory's future from its history, without labels (``well_upao.forecast``)."""

from __future__ import annotations

import argparse

from well_upao.commands.options import CommandError
from well_upao.forecast import ForecastError, ForecastRequest, forecast
from well_upao.models.checkpoint import CheckpointError


def run(args: argparse.Namespace) -> int:
    request = ForecastRequest(
        source=args.source,
        input=args.input,
        out=args.out,
        history=args.history,
        steps=args.steps,
        split=args.split,
        start=args.start,
        stride=args.stride,
        predictor=args.predictor,
        with_history=args.with_history,
        boundary=args.boundary,
        max_trajectories=args.max_trajectories,
        solver=not args.no_solver,
        solver_budget=args.solver_budget,
        device=args.device,
        progress=not args.quiet,
    )
    try:
        result = forecast(request)
    except (ForecastError, CheckpointError, FileNotFoundError, KeyError) as error:
        raise CommandError(str(error).strip("'\"")) from error
    print(result.summary())
    for note in result.notes[1:]:  # the first says what the evidence is: the JSON keeps it
        print(f"note: {note}")
    print(f"\nwrote {result.hdf5}, {result.json} and {len(result.figures)} figures ({result.seconds:.1f} s)")
    return 0
