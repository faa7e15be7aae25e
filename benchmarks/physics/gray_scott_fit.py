"""reports/gray_scott_fit.md: Gray-Scott's diffusivities fitted by ``well-upao residual-floor --fit delta_A delta_B``
from frames 10 s apart (the Well's spacing), and the residual floor before and after the fit.

    python benchmarks/physics/gray_scott_fit.py [--work gray_scott_fit_data] [--out reports] [--resolutions 32 128]

For every resolution, each of the Well's six (F, k) sets and each of four kinds of data, a dataset is simulated by
our Gray-Scott replica solver (Fourier pseudo-spectral, ETDRK4 with 1 s steps, frames every 10 s:
``well_upao/families/replicas/gray_scott.py``) with the replica's initial conditions and written in the Well's
layout by ``generate-replica``'s writer, 6 trajectories per set (4 of them in ``train``). The kinds of data:

* diffusivities 3e-5 / 1.5e-5 (1.5x the documented ones: a fit has something to find) or the documented 2e-5 / 1e-5;
* frames from the initial condition on (what ``generate-replica`` stores; the floor reads t = 10 s to 120 s, the
  transient that follows the initial condition), or from t = 100 s on (t = 110 s to 220 s).

Then ``well-upao residual-floor --data gray_scott_reaction_diffusion --stride 1 --fit delta_A delta_B --json``
(4 training trajectories, 12 frames from the second, under the discretisation whose floor after the fit is
lowest) on each dataset. The report lists
the fitted values, their error against the values the data was made with, and the floor (the relative residual
``||R_k|| / ||scale_k||`` of each sub-equation) at the documented and at the fitted values; its summary and
reading are written by this script from those numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from unittest import mock

import numpy as np

from well_upao.data.replicas import ReplicaRequest, generate_replica
from well_upao.families.replicas.families import REPLICAS, GrayScottReplica
from well_upao.families.replicas.gray_scott import DELTA_A, DELTA_B
from well_upao.families.replicas.parameters import PATTERNS

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.jobs import WELL_UPAO
from harness.readings import portable_paths

NAME = "gray_scott_reaction_diffusion"
#: (label, delta_A, delta_B) the data is made with
DIFFUSIVITIES = (("3e-5 / 1.5e-5", 3e-5, 1.5e-5), ("documented 2e-5 / 1e-5", DELTA_A, DELTA_B))
#: (label, seconds simulated before the first stored frame)
WINDOWS = (("t = 10-120 s", 0.0), ("t = 110-220 s", 100.0))
#: stored frames: the floor reads frames 1..12 of each trajectory
N_STEPS = 13
N_TRAJ_PER_SET = 6


class GrayScottWithDiffusivities(GrayScottReplica):
    """The Gray-Scott replica with other diffusivities, storing its frames from ``skip`` seconds after the initial
    condition on (the stored time axis still starts at 0; only the spacing enters the residual)."""

    def __init__(self, delta_a: float, delta_b: float, skip: float):
        self.delta_a, self.delta_b, self.skip = delta_a, delta_b, skip
        self.method = (
            f"{GrayScottReplica.method}; delta_A = {delta_a:g}, delta_B = {delta_b:g}, frames from {skip:g} s after "
            "the initial condition (benchmarks/physics/gray_scott_fit.py)"
        )

    def simulate(self, scalars, initial, shape, times):
        import torch

        from well_upao.families.replicas import gray_scott

        grid = gray_scott.square_grid(shape[0])
        rng = np.random.default_rng(int(initial["seed"]))
        make = gray_scott.random_fourier_state if initial["kind"] == 0 else gray_scott.gaussian_cluster_state
        a0, b0 = make(rng, grid)
        spacing = float(times[1] - times[0])
        simulated = np.arange(round(self.skip / spacing) + len(times)) * spacing
        a, b = gray_scott.simulate_gray_scott(
            torch.as_tensor(a0), torch.as_tensor(b0), scalars["F"], scalars["k"], simulated, grid,
            delta_a=self.delta_a, delta_b=self.delta_b,
        )  # fmt: skip
        return {"A": a[-len(times) :].numpy(), "B": b[-len(times) :].numpy()}


def fit_one(work: Path, resolution: int, set_index: int, delta: tuple, window: tuple) -> dict:
    """Simulate one dataset and fit it with the CLI; the CLI's JSON fit, with what the data was made with."""
    (delta_label, delta_a, delta_b), (window_label, skip) = delta, window
    base = work / f"{resolution}" / f"{delta_a:g}_{delta_b:g}" / f"skip{skip:g}" / f"set{set_index}"
    if not (base / NAME).exists():
        family = GrayScottWithDiffusivities(delta_a, delta_b, skip)
        request = ReplicaRequest(NAME, base, shape=(resolution, resolution), n_steps=N_STEPS,
                                 n_traj_per_set=N_TRAJ_PER_SET, sets=[set_index], seed=1)  # fmt: skip
        with mock.patch.dict(REPLICAS, {NAME: family}):
            generate_replica(request, progress=False)
    out = base / "fit.json"
    command = [*WELL_UPAO, "residual-floor", "--data", NAME, "--base-path", str(base), "--stride", "1"]
    command += ["--fit", "delta_A", "delta_B", "--json", str(out)]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=dict(os.environ, OMP_NUM_THREADS="1"))
    fit = json.loads(out.read_text())["fits"][0]
    truth = {"delta_A": delta_a, "delta_B": delta_b}
    return {
        "resolution": resolution,
        "set": list(PATTERNS)[set_index],
        "delta": delta_label,
        "window": window_label,
        "discretisation": f"{fit['derivative']} / {fit['scheme']}",
        "fitted": fit["values"],
        "error": {k: 100 * (fit["values"][k] / truth[k] - 1) for k in truth},
        "floor_initial": fit["floor_initial"],
        "floor_fitted": fit["floor_fitted"],
    }


def span(values: list[float], form: str) -> str:
    low, high = min(values), max(values)
    return f"{low:{form}}" if f"{low:{form}}" == f"{high:{form}}" else f"{low:{form}} to {high:{form}}"


def sets_argument(sets: list[int]) -> str:
    """``--sets`` as the command line gave it, or nothing for the default (all six)."""
    return "" if sets == list(range(len(PATTERNS))) else " --sets " + " ".join(map(str, sets))


def report_lines(results: list[dict], args: argparse.Namespace, seconds: float) -> list[str]:
    lines = [
        "# Gray-Scott's diffusivities fitted at the Well's frame spacing",
        "",
        f"Command: `python benchmarks/physics/gray_scott_fit.py --work {args.work} --resolutions "
        f"{' '.join(map(str, args.resolutions))}{sets_argument(args.sets)}` (each fit: `well-upao residual-floor "
        f"--data {NAME} --stride 1 --fit delta_A delta_B --json`).",
        "",
        "Data: our Gray-Scott replica solver (ETDRK4, 1 s steps), frames 10 s apart, the Well's six (F, k) sets, "
        f"{N_TRAJ_PER_SET} trajectories per set from the replica's initial conditions (random Fourier series and "
        "Gaussian clusters), made with the diffusivities in the first column; each row fits one set on its first 4 "
        "training trajectories, 12 frames (the times in the second column), under the discretisation whose floor "
        "after the fit is lowest. Error: fitted / true - 1. Floor: the relative residual "
        "`||R_k|| / ||scale_k||` of the A and B equations at the documented 2e-5 / 1e-5 and at the fitted values.",
        "",
        "## Summary",
        "",
        "Ranges over the six (F, k) sets.",
        "",
        "| made with | frames | grid | delta_A error (size) | delta_B error (size) | floor at documented (A, B) "
        "| floor at fitted (A, B) |",
        "|---|---|---|---|---|---|---|",
    ]
    for delta, _, _ in DIFFUSIVITIES:
        for window, _ in WINDOWS:
            for resolution in args.resolutions:
                rows = [r for r in results if (r["delta"], r["window"], r["resolution"]) == (delta, window, resolution)]
                if not rows:
                    continue
                cells = [delta, window, f"{resolution}^2"]
                cells += [span([abs(r["error"][k]) for r in rows], ".2f") + " %" for k in ("delta_A", "delta_B")]
                cells += [
                    span([v for r in rows for v in r[f].values()], ".2e") for f in ("floor_initial", "floor_fitted")
                ]
                lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Every fit",
        "",
        "| made with | frames | grid | set (F, k) | discretisation | delta_A (error) | delta_B (error) "
        "| floor at documented: A, B | floor at fitted: A, B |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        fk = ", ".join(f"{v:g}" for v in PATTERNS[r["set"]])
        cells = [r["delta"], r["window"], f"{r['resolution']}^2", f"{r['set']} ({fk})", r["discretisation"]]
        cells += [f"{r['fitted'][k]:.4g} ({r['error'][k]:+.2f} %)" for k in ("delta_A", "delta_B")]
        cells += [", ".join(f"{v:.2e}" for v in r[field].values()) for field in ("floor_initial", "floor_fitted")]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"Total time: {seconds:.0f} s (this call; datasets already in the work folder are reused).", ""]
    lines += reading_lines(results, args)
    return lines


def reading_lines(results: list[dict], args: argparse.Namespace) -> list[str]:
    """What the tables show, with every number taken from them (no hand-written part to go stale)."""
    crank_nicolson = "spectral / crank_nicolson"

    def rows(delta, window, with_cn=None):
        chosen = [r for r in results if (r["delta"], r["window"]) == (delta, window)]
        return [r for r in chosen if with_cn is None or (r["discretisation"] == crank_nicolson) == with_cn]

    def errors(selected):
        return " and ".join(f"{span([abs(r['error'][k]) for r in selected], '.2f')} %" for k in ("delta_A", "delta_B"))

    def floors(selected, field):
        return span([v for r in selected for v in r[field].values()], ".2e")

    grids = " and ".join(f"{n}^2" for n in args.resolutions)
    (made, *_), (documented, *_) = DIFFUSIVITIES
    (early, _), (late, _) = WINDOWS
    lines = ["## Reading (written by the script from the tables above)", ""]
    fitted, control = rows(made, late), rows(documented, late)
    if fitted:
        good, other = rows(made, late, True), rows(made, late, False)
        text = (
            f"- **Frames at {late}, made with {made}** ({len(fitted)} fits: six sets at {grids}). Where the fit ran "
            f"with {crank_nicolson} ({len(good)} fits) the fitted delta_A and delta_B are off by {errors(good)} from "
            f"the values the data was made with, and the floor falls from {floors(good, 'floor_initial')} at the "
            f"documented values to {floors(good, 'floor_fitted')}."
        )
        if other:
            names = ", ".join(sorted({r["discretisation"] for r in other}))
            text += (
                f" In the other {len(other)} fits the discretisation whose floor after the fit is lowest was {names}: "
                f"errors {errors(other)}, floor {floors(other, 'floor_initial')} -> {floors(other, 'floor_fitted')}."
            )
        lines.append(text)
    if control:
        lines.append(
            f"- **The same frames made with the documented values**: the fit moves them by {errors(control)} "
            f"(delta_A and delta_B), floors {floors(control, 'floor_initial')} before and "
            f"{floors(control, 'floor_fitted')} after: that move is the discretisation's bias, the resolution of the "
            "estimate on these frames."
        )
    fitted, control = rows(made, early), rows(documented, early)
    if fitted and control:
        lines.append(
            f"- **Frames at {early}** (the transient right after the initial condition, what a `generate-replica` "
            f"dataset's first frames hold): on data made with {made} the fit is off by {errors(fitted)} and the floor "
            f"stays at {floors(fitted, 'floor_fitted')}; on data made with the documented values it moves them by "
            f"{errors(control)}, floor {floors(control, 'floor_fitted')}. There the time discretisation between "
            "frames 10 s apart dominates the residual and a fitted coefficient absorbs it: not a measurement."
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=Path("gray_scott_fit_data"))
    parser.add_argument("--out", type=Path, default=Path("reports"))
    parser.add_argument("--resolutions", type=int, nargs="+", default=[32, 128])
    parser.add_argument(
        "--sets",
        type=int,
        nargs="+",
        default=list(range(len(PATTERNS))),
        choices=range(len(PATTERNS)),
        help="the Well's (F, k) sets by index (default: all six)",
    )
    args = parser.parse_args()
    started = time.perf_counter()
    results = []
    for delta in DIFFUSIVITIES:
        for window in WINDOWS:
            for resolution in args.resolutions:
                for set_index in args.sets:
                    results.append(fit_one(args.work, resolution, set_index, delta, window))
                    print(f"{delta[0]}, {window[0]}, {resolution}^2, {list(PATTERNS)[set_index]}", flush=True)
    lines = report_lines(results, args, time.perf_counter() - started)
    args.out.mkdir(parents=True, exist_ok=True)
    report = args.out / "gray_scott_fit.md"
    temporary = report.with_suffix(".md.tmp")
    temporary.write_text(portable_paths("\n".join(lines) + "\n"))  # the work folder as RUNS/...
    temporary.replace(report)
    print(f"wrote {report}")


if __name__ == "__main__":
    main()
