"""What the generating commands share: a request from the size options, and the summary they print."""

from __future__ import annotations

import argparse

from well_upao.data.datasets import DATASET_SLOTS, generators
from well_upao.data.generate import GenerationRequest, GenerationSummary, generate_dataset


def generate_and_report(names: list[str], args: argparse.Namespace) -> int:
    """Generate each named family with the size options of ``args`` and print its summary."""
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


def format_generation_summary(summary: GenerationSummary, family=None) -> str:
    """The lines a generator prints: dataset and equation, path, grid, splits and files, slots, parameter ranges,
    bytes and speed."""
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
