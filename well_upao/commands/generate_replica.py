"""``well-upao generate-replica``: one of the Well's simulated datasets re-made with our solvers."""

from __future__ import annotations

import argparse

from well_upao.data.replicas import ReplicaRequest, generate_replica
from well_upao.families.replicas.families import REPLICAS


def run(args: argparse.Namespace) -> int:
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
