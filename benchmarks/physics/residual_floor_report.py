"""reports/residual_floor.md: the residual floor of the seven exact sets and of every Well replica.

    python benchmarks/physics/residual_floor_report.py [--out reports] [--work residual_floor_data]

Generates small copies of each dataset (exact sets at 64^2 / 256 / 32^3 with 60 frames; replicas at their CPU grids, two
parameter sets, three trajectories each), then for strides 1 and 5 prints the mean over sub-equations of the relative
residual ||R_k|| / ||scale_k|| of the observed training frames (``well-upao residual-floor``) for every derivative and
time scheme, marking the lowest; and, for Gray-Scott, the diffusivities fitted to the frames. The report's reading (from
``## Reading`` on) is kept and checked against the new tables (``benchmarks/harness/readings.py``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from well_upao.data.generate import GenerationRequest, generate_dataset
from well_upao.data.replicas import ReplicaRequest, generate_replica
from well_upao.data.source import WellSource
from well_upao.datasets_exact import EXACT_PDES
from well_upao.physics import pde_for_dataset
from well_upao.physics.floor import best_row, fit_constants, floor_rows
from well_upao.physics.residual import SCHEMES

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.readings import exit_if_stale, write_keeping_reading

STRIDES = (1, 5)
DERIVATIVES = ("fd", "fd4", "spectral")
REPLICA_SETS = {"gray_scott_reaction_diffusion": [2, 5], "shear_flow": [0, 4], "rayleigh_benard": [0, 1]}


def make_datasets(work: Path, chosen: list[str]) -> list[str]:
    """Generate the ``chosen`` datasets under ``work`` unless they are there; their names, exact sets first."""
    names = []
    for name, family in EXACT_PDES.items():
        if name not in chosen:
            continue
        if not (work / name).exists():
            resolution = {1: 256, 2: 64, 3: 32}[family.n_spatial_dims]
            request = GenerationRequest(pde=name, out=work, n_traj=4, resolution=resolution, n_steps=60, seed=5)
            generate_dataset(request, progress=False)
        names.append(name)
    for name, sets in REPLICA_SETS.items():
        if name not in chosen:
            continue
        if not (work / name).exists():
            generate_replica(ReplicaRequest(name, work, n_traj_per_set=3, sets=sets, seed=5), progress=False)
        names.append(name)
    return names


def floor_line(source: WellSource, stride: int, columns: list[tuple[str, str]]) -> tuple[str, tuple | None]:
    """A dataset's table line at ``stride`` (the lowest floor in bold; the error where the frames give none) and, for
    Gray-Scott, ``(stride, best row, fitted diffusivities)``."""
    name = source.name
    try:
        observed = source.observed(stride, max_trajectories=4, max_frames=12)
        rows = floor_rows(observed, stride, pde_for_dataset(name))
    except ValueError as error:
        return f"| {name} | {stride} | {error} |" + " |" * (len(columns) - 1), None
    best = best_row(rows, stride)
    by_key = {(r.derivative, r.scheme): r for r in rows}
    cells = []
    for key in columns:
        row = by_key.get(key)
        text = "" if row is None else f"{row.mean:.2e}"
        cells.append(f"**{text}**" if row is best else text)
    fit = None
    if name == "gray_scott_reaction_diffusion":
        constants = ["delta_A", "delta_B"]
        fit = (stride, best, fit_constants(observed, pde_for_dataset(name), constants, best.derivative, best.scheme))
    return f"| {name} | {stride} | " + " | ".join(cells) + " |", fit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("reports"))
    parser.add_argument("--work", type=Path, default=Path("residual_floor_data"))
    every = [*EXACT_PDES, *REPLICA_SETS]
    parser.add_argument("--datasets", nargs="+", default=every, choices=every, help="default: every one")
    args = parser.parse_args()
    torch.set_num_threads(1)
    started = time.perf_counter()
    names = make_datasets(args.work, args.datasets)
    chosen = "" if args.datasets == every else " --datasets " + " ".join(args.datasets)
    columns = [(d, s) for d in DERIVATIVES for s in SCHEMES]
    lines = [
        "# Residual floors of the exact sets and the Well replicas",
        "",
        f"Command: `python benchmarks/physics/residual_floor_report.py --work {args.work}{chosen}` (one torch thread).",
        "",
        "Mean over sub-equations of the relative residual `||R_k|| / ||scale_k||` of observed training frames (4",
        "trajectories, 12 frames from the second, interior points), for each derivative and time scheme: the floor",
        "below which UPAO cannot push a prediction towards the truth. `fd4` and `spectral` differ from `fd` only on",
        "periodic axes (Rayleigh-Bénard's walls keep second-order stencils). Lowest per row in bold; that is what",
        "`trainer.derivative=auto trainer.time_scheme=auto` picks. Data: exact sets at 64^2 (1D 256, 3D 32^3), 60",
        "frames at the paper's dt; replicas at their CPU grids and the Well's frame spacing, two parameter sets.",
        "",
        "| dataset | stride | " + " | ".join(f"{d} / {s}" for d, s in columns) + " |",
        "|---|---|" + "---|" * len(columns),
    ]
    fits = []
    for name in names:
        source = WellSource(args.work, name)
        for stride in STRIDES:
            line, fit = floor_line(source, stride, columns)
            lines.append(line)
            fits += [fit] if fit is not None else []
    lines += [
        "",
        "Gray-Scott's diffusivities fitted to the replica's frames (`residual-floor --fit delta_A delta_B`, with the",
        "lowest discretisation). The replica was made with the documented 2e-5 / 1e-5, so the fit measures how much",
        "the discretisation alone biases the estimate:",
        "",
        "| stride | discretisation | delta_A | delta_B | floor at documented -> fitted |",
        "|---|---|---|---|---|",
    ]
    for stride, best, fitted in fits:
        floors = ", ".join(
            f"{k} {fitted.floor_initial[k]:.2e} -> {fitted.floor_fitted[k]:.2e}" for k in fitted.floor_fitted
        )
        lines.append(
            f"| {stride} | {best.derivative} / {best.scheme} | {fitted.values['delta_A']:.4g} "
            f"| {fitted.values['delta_B']:.4g} | {floors} |"
        )
    lines += ["", f"Total time: {time.perf_counter() - started:.0f} s."]
    report = args.out / "residual_floor.md"
    write_keeping_reading(report, lines)  # the hand-written reading is kept and checked against the new tables
    exit_if_stale(report)


if __name__ == "__main__":
    main()
