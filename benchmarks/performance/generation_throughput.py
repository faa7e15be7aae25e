"""Exact-dataset generation speed against the I/O limit, measured in one run on this machine.

For each PDE at a reduced size, time ``generate_dataset`` (evaluation, HDF5 writes, statistics, split,
fsync of every file, atomic rename) and the time h5py needs to write the same number of bytes of zeros in the
same layout (same files, same datasets, same write calls, created with the same writer and fsynced the same way:
durable writes are what "the I/O limit" means; without fsync it is memory bandwidth). The zeros are timed with
and without the generator's early writeback hints, and the faster counts. Each timing is the best of
``--repeats`` interleaved runs. Goal: within 1.5x of that limit for 1D/2D datasets.

    python benchmarks/performance/generation_throughput.py [--repeats 3] [--pde NAME ...]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

import well_upao.data.generate as generate_module
from well_upao.data.generate import (
    SYNC_BYTES,
    GenerationRequest,
    bytes_per_trajectory,
    generate_dataset,
    resolve_request,
    split_trajectories,
    write_units,
)
from well_upao.data.well_format import FIELD_GROUPS, WellFileWriter
from well_upao.datasets_exact import EXACT_PDES

SIZES = {  # reduced sizes: (resolution, n_steps, n_traj)
    "tg2d": (128, 101, 20),
    "wave2d": (128, 101, 20),
    "advdiff2d": (128, 101, 20),
    "burgers2d": (128, 101, 20),
    "burgers1d": (1024, 101, 1000),  # the paper's full size
    "adv1d": (1024, 101, 1000),  # the paper's full size
    "adv3d": (32, 21, 20),
}


def time_generation(name: str, out: Path) -> float:
    resolution, n_steps, n_traj = SIZES[name]
    request = GenerationRequest(pde=name, out=out, n_traj=n_traj, resolution=resolution, n_steps=n_steps)
    shutil.rmtree(out / name, ignore_errors=True)
    start = time.perf_counter()
    generate_dataset(request, progress=False)
    return time.perf_counter() - start


def time_generation_without_statistics(name: str, out: Path) -> float:
    """Same as ``time_generation`` with the stats.yaml accumulation replaced by a no-op (to attribute cost)."""
    original = generate_module._accumulate_statistics
    generate_module._accumulate_statistics = lambda *args: None
    try:
        return time_generation(name, out)
    finally:
        generate_module._accumulate_statistics = original


def time_zeros(name: str, out: Path, early_writeback: bool) -> float:
    """Same files and datasets as the generator, filled with zero blocks of the same shapes (same write calls),
    with or without the generator's early writeback (``SYNC_BYTES``); the caller keeps the faster."""
    resolution, n_steps, n_traj = SIZES[name]
    request = GenerationRequest(pde=name, out=out, n_traj=n_traj, resolution=resolution, n_steps=n_steps)
    pde, grid, n_traj, per_file = resolve_request(request)
    splits = split_trajectories(n_traj, 42)
    largest = max(write_units(pde, grid, per_file), key=lambda u: (u[1] - u[0]) * (u[3] - u[2]))
    zeros = {
        spec.name: np.zeros(
            (largest[1] - largest[0], largest[3] - largest[2], *pde.field_shape(spec, resolution)), np.float32
        )
        for spec in pde.fields
    }
    target = out / f"{name}-zeros"
    shutil.rmtree(target, ignore_errors=True)
    start = time.perf_counter()
    for split in ("train", "valid"):
        directory = target / "data" / split
        directory.mkdir(parents=True)
        indices = splits[split]
        for number, first in enumerate(range(0, len(indices), per_file)):
            chunk = indices[first : first + per_file]
            path = directory / f"{name}_{split}_{number:03d}.hdf5"
            writer = WellFileWriter(str(path), pde, grid, chunk, 42, SYNC_BYTES if early_writeback else None).open()
            for first, stop, start_t, stop_t in write_units(pde, grid, len(chunk)):
                for spec in pde.fields:
                    dataset = writer.file[FIELD_GROUPS[spec.order]][spec.name]
                    dataset[first:stop, start_t:stop_t] = zeros[spec.name][: stop - first, : stop_t - start_t]
            writer.close(durable=True)  # the generator fsyncs every file too
    return time.perf_counter() - start


def cpu_ticks() -> tuple[int, int] | None:
    """(stolen, total) CPU ticks since boot from /proc/stat (Linux), or None where unavailable."""
    try:
        values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return None
    return (values[7] if len(values) > 7 else 0), sum(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pde", nargs="*", default=list(SIZES))
    args = parser.parse_args()
    rows = []
    ticks_before = cpu_ticks()
    with tempfile.TemporaryDirectory(dir=".") as tmp:
        out = Path(tmp)
        for name in args.pde:
            pde = EXACT_PDES[name]
            resolution, n_steps, n_traj = SIZES[name]
            _, grid, _, _ = resolve_request(GenerationRequest(pde=name, resolution=resolution, n_steps=n_steps))
            megabytes = n_traj * bytes_per_trajectory(pde, grid) / 2**20
            timings = [  # interleaved, so that a slow spell of this shared machine hits all three alike
                (
                    time_generation(name, out),
                    time_generation_without_statistics(name, out),
                    min(time_zeros(name, out, early_writeback) for early_writeback in (False, True)),
                )
                for _ in range(args.repeats)
            ]
            generated, no_stats, zeros = (min(column) for column in zip(*timings, strict=True))
            shape = "x".join([str(resolution)] * pde.n_spatial_dims)
            rows.append((name, f"{shape} x {n_steps}, {n_traj} traj", megabytes, generated, no_stats, zeros))
    print(
        "| dataset | size | MiB | generate s | MiB/s | zeros s (I/O limit) | ratio | goal <= 1.5 "
        "| without stats.yaml: s | ratio |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, size, megabytes, generated, no_stats, zeros in rows:
        ratio = generated / zeros
        goal = "n/a (3D)" if EXACT_PDES[name].n_spatial_dims == 3 else ("yes" if ratio <= 1.5 else "NO")
        print(
            f"| {name} | {size} | {megabytes:.0f} | {generated:.3f} | {megabytes / generated:.0f} "
            f"| {zeros:.3f} | {ratio:.2f} | {goal} | {no_stats:.3f} | {no_stats / zeros:.2f} |"
        )
    ticks_after = cpu_ticks()
    if ticks_before and ticks_after and ticks_after[1] > ticks_before[1]:
        stolen = (ticks_after[0] - ticks_before[0]) / (ticks_after[1] - ticks_before[1])
        print(f"\nCPU time stolen by the hypervisor during this run: {100 * stolen:.0f}% of the machine's capacity")


if __name__ == "__main__":
    main()
