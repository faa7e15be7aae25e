"""Per-trajectory CPU cost of generate-exact's stages, and the best generation/I-O ratio they allow on this machine.

Each stage runs alone on one thread (numpy's BLAS capped at one thread, as in the generator): drawing the
parameters, evaluating the fields (``evaluate_many`` on the generator's write units), and reducing them for
``stats.yaml``. The I/O limit is ``time_zeros`` of ``generation_throughput.py`` (h5py
writing zeros in the same layout, fsynced), which keeps a CPU busy with copying into the page cache for most of
its duration. With ``c`` cores, generation can at best take ``(stages + zeros) / c``: the printed bound is that
over the zeros time (1.0 when the stages fit beside the I/O).

    python benchmarks/performance/generation_cpu_budget.py [--pde burgers1d adv1d ...] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from well_upao.data.generate import GenerationRequest, resolve_request, trajectory_rng, write_units
from well_upao.data.stats import FieldStatistics
from well_upao.datasets_exact import EXACT_PDES

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from performance.generation_throughput import SIZES, time_zeros


def best_of(repeats: int, function) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def stage_seconds(name: str, repeats: int) -> dict[str, float]:
    """Single-thread seconds per trajectory of each stage, at the benchmark size of ``name``."""
    resolution, n_steps, n_traj = SIZES[name]
    pde, grid, _, _ = resolve_request(GenerationRequest(pde=name, resolution=resolution, n_steps=n_steps))
    axes, times = pde.grid_axes(resolution), grid.times()
    units = write_units(pde, grid, n_traj)
    params = [pde.sample_parameters(trajectory_rng(42, i), i) for i in range(n_traj)]
    fields = [pde.evaluate_many(params[a:b], axes, times[s:e], np.float32) for a, b, s, e in units]
    layout = {spec.name: (spec.order, pde.n_spatial_dims**spec.order) for spec in pde.fields}

    def reduce_all() -> None:
        stats = FieldStatistics(layout)
        for unit in fields:
            for field, block in unit.items():
                stats.update_trajectories(field, block)

    seconds = {
        "sample": best_of(repeats, lambda: [pde.sample_parameters(trajectory_rng(42, i), i) for i in range(n_traj)]),
        "evaluate": best_of(
            repeats, lambda: [pde.evaluate_many(params[a:b], axes, times[s:e], np.float32) for a, b, s, e in units]
        ),
        "statistics": best_of(repeats, reduce_all),
    }
    return {stage: value / n_traj for stage, value in seconds.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pde", nargs="*", default=[n for n in SIZES if EXACT_PDES[n].n_spatial_dims < 3])
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    print(
        "| dataset | sample ms/traj | evaluate ms/traj | statistics ms/traj | zeros ms/traj "
        f"| best ratio on {cores} cores |"
    )
    print("|---|---|---|---|---|---|")
    with threadpool_limits(limits=1, user_api="blas"), tempfile.TemporaryDirectory(dir=".") as tmp:
        for name in args.pde:
            stages = stage_seconds(name, args.repeats)
            zeros = min(time_zeros(name, Path(tmp), early) for early in (False, True)) / SIZES[name][2]
            bound = max(1.0, (sum(stages.values()) + zeros) / (cores * zeros))
            print(
                f"| {name} | {1e3 * stages['sample']:.3f} | {1e3 * stages['evaluate']:.3f} "
                f"| {1e3 * stages['statistics']:.3f} | {1e3 * zeros:.3f} | {bound:.2f} |"
            )


if __name__ == "__main__":
    main()
