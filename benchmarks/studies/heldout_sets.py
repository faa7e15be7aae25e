"""Generate the held-out sets of issue 75 (``heldout_pdes``) into one Well base path; their floors and a smoke test.

No rule, threshold or default of the project was tuned on these sets: they exist so that a rule fixed on the tuned
sets can be read on data it has never seen. Each set is one dataset in the Well's layout (``generate_dataset``,
the project's writer, with the study's family): 24 trajectories split 12 / 6 / 6 (train / valid / test, the test
split its own trajectories), 128 frames, so that at both strides a history of 32 frames and a 30-step rollout fit
(``(32 + 30 - 1) x 2 + 1 = 123``). Stages, each resumable (a stage whose record exists is skipped) and each printing
the exact command it runs:

    python benchmarks/studies/heldout_sets.py --out RUNS/data-heldout                 # generate every set
    python benchmarks/studies/heldout_sets.py --out RUNS/data-heldout --floors        # + well-upao residual-floor
    python benchmarks/studies/heldout_sets.py --out RUNS/data-heldout --smoke heldout_allen_cahn
                                                  # + well-upao evaluate at histories 8, 16, 32 x both strides
    python benchmarks/studies/heldout_sets.py --out RUNS/data-heldout --smoke heldout_kuramoto_sivashinsky --no-solver
                                                  # the same without the solver row (see reports/heldout_sets.md)
    python benchmarks/studies/heldout_sets.py --out RUNS/data-heldout --tables   # the report's tables from the records
    python benchmarks/studies/heldout_sets.py --out RUNS/data-heldout --figure reports/figures/heldout_sets.png
    python benchmarks/studies/heldout_sets.py --out RUNS/data-heldout --verify       # re-make a trajectory of each set

Records go to ``<out>/heldout_records/`` (JSON, written to a temporary name and renamed). The smoke test keeps
the rows' true errors and timings only: the evaluations' label-free expected errors and picks (``expected``,
``trust``, the ``expected_*.png`` figure) are removed from what it keeps, so that no one reads the project's
current rule on held-out data before the rule is fixed on the tuned sets.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.jobs import WELL_UPAO, run_logged, thread_env

from studies.heldout_tables import print_tables

BENCHMARKS = Path(__file__).resolve().parent
RECORDS = "heldout_records"
HISTORIES = (8, 16, 32)


@dataclass(frozen=True)
class HeldoutSet:
    """One held-out dataset's sizes, seed and the two strides it is read at."""

    name: str
    resolution: int
    n_steps: int
    dt: float
    seed: int
    strides: tuple[int, int] = (1, 2)
    n_traj: int = 24
    valid_fraction: float = 0.25
    test_fraction: float = 0.25


SETS = {
    s.name: s
    for s in (
        HeldoutSet("heldout_allen_cahn", resolution=64, n_steps=128, dt=0.5, seed=751),
        HeldoutSet("heldout_kuramoto_sivashinsky", resolution=48, n_steps=128, dt=0.05, seed=752),
        HeldoutSet("heldout_swift_hohenberg", resolution=48, n_steps=128, dt=1.0, seed=753),
    )
}
#: ``--quick``: the same sets at a size that only checks the script (16^2, 8 frames, 6 trajectories)
QUICK = {"resolution": 16, "n_steps": 8, "n_traj": 6, "valid_fraction": 1 / 3, "test_fraction": 1 / 6}


def write_json(path: Path, record: dict) -> None:
    """``record`` to ``path`` through a temporary name (a record that exists is complete)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    partial.replace(path)


@functools.cache
def commit() -> str:
    """The repository's commit when the script started (``+dirty`` with uncommitted changes), or ``unknown``."""

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=BENCHMARKS, capture_output=True, text=True).stdout.strip()

    head = git("rev-parse", "HEAD") or "unknown"
    return head + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def study_env() -> dict:
    """The environment of the commands: ``benchmarks/`` importable (``--imports heldout_pdes``), one thread."""
    path = os.pathsep.join(p for p in (str(BENCHMARKS), os.environ.get("PYTHONPATH", "")) if p)
    return thread_env(dict(os.environ, PYTHONPATH=path), 1)


def step_check(spec: HeldoutSet) -> dict:
    """The solver's temporal error at the set's step on its trajectory 0: the first 10 stored frames at the step
    and at half the step, their largest difference over the largest change between consecutive frames."""
    from heldout_pdes import FAMILIES

    from well_upao.data.generate import trajectory_rng

    family = FAMILIES[spec.name]
    params = family.sample_parameters(trajectory_rng(spec.seed, 0), 0)
    times = np.arange(10) * spec.dt
    n = family.refine * spec.resolution
    steps = family.steps_per_frame(spec.dt)
    coarse = family.solve(params, n, times, steps)
    fine = family.solve(params, n, times, 2 * steps)
    change = np.abs(np.diff(fine, axis=0)).max()
    return {
        "steps_per_frame": steps,
        "step": spec.dt / steps,
        "difference_over_frame_change": float(np.abs(coarse - fine).max() / change),
    }


def generate(spec: HeldoutSet, out: Path, quick: bool, records: Path) -> None:
    """Write ``spec``'s dataset under ``out`` (atomically, by the project's generator) and its record."""
    from heldout_pdes import FAMILIES

    from well_upao.data.generate import GenerationRequest, generate_dataset

    record_path = records / f"{spec.name}.generation.json"
    sizes = {**asdict(spec), **(QUICK if quick else {})}
    if record_path.is_file():
        made = json.loads(record_path.read_text())
        if made["sizes"] != json.loads(json.dumps(sizes)):
            raise SystemExit(f"{spec.name}: {record_path} records other sizes; use another --out")
        print(f"{spec.name}: generated already ({made['seconds']:.0f} s), skipped")
        return
    if (out / spec.name).exists():
        raise SystemExit(
            f"{spec.name}: {out / spec.name} exists without this script's record; remove it or use another --out"
        )
    request = GenerationRequest(
        pde=spec.name,
        out=out,
        n_traj=sizes["n_traj"],
        resolution=sizes["resolution"],
        n_steps=sizes["n_steps"],
        dt=spec.dt,
        seed=spec.seed,
        valid_fraction=sizes["valid_fraction"],
        test_fraction=sizes["test_fraction"],
    )
    print(f"{spec.name}: generating {request}", flush=True)
    check = None if quick else step_check(spec)  # before the data: the record follows them at once
    summary = generate_dataset(request)
    family = FAMILIES[spec.name]
    record = {
        "sizes": sizes,
        "seconds": summary.seconds,
        "split_sizes": summary.split_sizes,
        "parameter_ranges": {k: list(v) for k, v in summary.parameter_ranges.items()},
        "parameter_draws": [[name, low, high] for name, low, high in family.ranges],
        "equation": family.equation,
        "domain_length": family.domain_length,
        "solver": family.stepper.__name__,
        "order": family.stepper.order,
        "spin_up": family.spin_up,
        "refine": family.refine,
        "step_check": check,
        "bytes": summary.bytes_written,
        "commit": commit(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }
    write_json(record_path, record)
    print(f"{spec.name}: {summary.split_sizes} in {summary.seconds:.0f} s -> {summary.path}", flush=True)


def run_command(command: list[str], log: Path) -> tuple[float, float]:
    """Run ``command`` (printed first) with its output in ``log``; its wall and CPU seconds, or exit on failure."""
    env = study_env()
    print(f"$ PYTHONPATH={env['PYTHONPATH']} OMP_NUM_THREADS=1 " + shlex.join(command), flush=True)
    finished = run_logged(command, log, env)
    if finished.returncode != 0:
        tail = "\n".join(log.read_text().splitlines()[-15:])
        raise SystemExit(f"failed (exit {finished.returncode}), log {log}:\n{tail}")
    return finished.wall_seconds, finished.cpu_seconds


def floors(spec: HeldoutSet, out: Path, records: Path) -> None:
    """``well-upao residual-floor`` of ``spec``'s train split at both strides, its rows and timings recorded."""
    path = records / f"{spec.name}.floor.json"
    if path.is_file():
        print(f"{spec.name}: floor recorded already, skipped")
        return
    rows = records / f"{spec.name}.floor_rows.json"
    strides = [str(s) for s in spec.strides]
    command = [*WELL_UPAO, "residual-floor", "--data", spec.name, "--imports", "heldout_pdes"]
    command += ["--base-path", str(out), "--stride", *strides, "--json", str(rows)]
    wall, cpu = run_command(command, records / "logs" / f"{spec.name}.floor.log")
    floor = json.loads(rows.read_text())
    write_json(path, {"command": shlex.join(command), "wall_seconds": wall, "cpu_seconds": cpu, **floor})
    rows.unlink()


def compact_evaluation(full: dict) -> dict:
    """What the smoke test keeps of an evaluation: each row's true errors and cost, the floor, the sizes; not the
    label-free expected errors or picks (the module docstring says why)."""
    rows = {
        row["name"]: {
            "one_step_well": row["mean_vrmse_well"],
            "one_step_paper": row["mean_vrmse_paper"],
            **{window: row["rollout_windows"].get(window) for window in ("6:12", "13:30")},
            "ms_per_prediction": 1e3 * row["seconds_per_prediction"],
        }
        for row in full["scores"]
    }
    keep = ("dataset", "split", "stride", "dt", "history", "n_trajectories", "rollout_steps_run", "rollout_starts")
    return {**{k: full[k] for k in keep}, "residual_floor": full["residual_floor"], "rows": rows}


def smoke(spec: HeldoutSet, out: Path, records: Path, solver: bool = True) -> None:
    """``well-upao evaluate`` (classical rows and, with ``solver``, the solver; no run) of the valid split at each
    history and stride."""
    for stride in spec.strides:
        for history in HISTORIES:
            path = records / "smoke" / f"{spec.name}_h{history}_s{stride}.json"
            if path.is_file():
                print(f"{spec.name}: history {history}, stride {stride} evaluated already, skipped")
                continue
            folder = records / "smoke" / f"{spec.name}_h{history}_s{stride}"
            command = [*WELL_UPAO, "evaluate", "--data", spec.name, "--imports", "heldout_pdes"]
            command += ["--base-path", str(out), "--history", str(history), "--stride", str(stride)]
            command += ["--out", str(folder), "--quiet", *([] if solver else ["--no-solver"])]
            log = records / "logs" / f"{spec.name}_h{history}_s{stride}.evaluate.log"
            wall, cpu = run_command(command, log)
            log.unlink()  # it prints the expected errors
            (full_path,) = folder.glob("evaluation_*.json")
            compact = compact_evaluation(json.loads(full_path.read_text()))
            for rule_output in (full_path, *folder.glob("expected_*.png")):
                rule_output.unlink()
            write_json(path, {"command": shlex.join(command), "wall_seconds": wall, "cpu_seconds": cpu, **compact})
            print(f"{spec.name}: history {history}, stride {stride}: {wall:.0f} s", flush=True)


def verify(spec: HeldoutSet, out: Path) -> None:
    """Re-make the first validation trajectory of ``spec`` from its file's parameters with this checkout's code and
    print its largest difference from the stored frames (0: the same bytes)."""
    import h5py
    from heldout_pdes import FAMILIES

    from well_upao.data.well_format import read_trajectory_parameters

    family = FAMILIES[spec.name]
    (first,) = sorted((out / spec.name / "data" / "valid").glob("*.hdf5"))[:1]
    with h5py.File(first) as f:
        stored = np.asarray(f["t0_fields"]["u"][0])
        params = read_trajectory_parameters(f, family, 0)
        time = np.asarray(f["dimensions"]["time"], dtype=np.float64)
    remade = family.evaluate(params, family.grid_axes(stored.shape[-1]), time, dtype=np.float32)["u"]
    difference = float(np.abs(remade.astype(np.float64) - stored).max())
    print(f"{spec.name}: {first.name} trajectory 0 re-made, largest difference {difference:.3g}", flush=True)


def figure(out: Path, sets: list[HeldoutSet], path: Path) -> None:
    """Four frames (first, last and two between) of each set's first validation trajectory, one row a set, to
    ``path`` (PNG)."""
    import h5py
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(sets), 4, figsize=(2.4 * 4, 2.4 * len(sets)), squeeze=False)
    for row, spec in zip(axes, sets, strict=True):
        (first,) = sorted((out / spec.name / "data" / "valid").glob("*.hdf5"))[:1]
        with h5py.File(first) as f:
            u = np.asarray(f["t0_fields"]["u"][0])
            time = np.asarray(f["dimensions"]["time"])
            scalars = ", ".join(f"{k} = {float(f['scalars'][k][0]):.3g}" for k in f["scalars"])
        for ax, index in zip(row, np.linspace(0, len(u) - 1, 4).astype(int), strict=True):
            ax.imshow(u[index].T, origin="lower", cmap="RdBu_r", vmin=u.min(), vmax=u.max())
            ax.set_xticks([]), ax.set_yticks([])
            ax.set_title(f"t = {time[index]:g}", fontsize=8)
        row[0].set_ylabel(f"{spec.name.removeprefix('heldout_')}\n{scalars}", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80)
    print(f"wrote {path}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="the Well base path to write the sets under")
    parser.add_argument("--only", nargs="+", choices=sorted(SETS), help="these sets only (default: all)")
    parser.add_argument("--floors", action="store_true", help="also run well-upao residual-floor on each set")
    parser.add_argument("--smoke", nargs="+", choices=sorted(SETS), default=[], help="also evaluate these sets")
    parser.add_argument("--no-solver", action="store_true", help="evaluate without the solver row (--smoke)")
    parser.add_argument("--tables", action="store_true", help="print the report's tables from the records")
    parser.add_argument("--figure", type=Path, help="write a PNG of four frames of each set here")
    parser.add_argument("--verify", action="store_true", help="re-make one trajectory of each set and compare")
    parser.add_argument("--quick", action="store_true", help="tiny sizes that only check the script")
    args = parser.parse_args(argv)
    command = [sys.executable, *sys.argv] if argv is None else ["heldout_sets.py", *argv]
    print("command: " + shlex.join(command), flush=True)
    import heldout_pdes  # noqa: F401  (registers the sets' datasets)

    out = args.out.resolve()
    records = out / RECORDS
    print(f"commit: {commit()}", flush=True)
    chosen = [SETS[name] for name in (args.only or SETS)]
    for spec in chosen:
        generate(spec, out, args.quick, records)
    for spec in chosen if args.verify else []:
        verify(spec, out)
    for spec in chosen if args.floors else []:
        floors(spec, out, records)
    for name in args.smoke:
        smoke(SETS[name], out, records, solver=not args.no_solver)
    if args.tables:
        print_tables(records, list(SETS.values()))
    if args.figure:
        figure(out, chosen, args.figure)


if __name__ == "__main__":
    main()
