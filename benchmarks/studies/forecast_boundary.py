"""What observed boundary bands change in a forecast on a set with walls (``well-upao forecast --boundary``).

The paper's user observes the boundary band of the frames to come. On a dataset whose axes are not all periodic,
the forecast is made twice from the same histories (the rollout starts evaluate uses, ``studies/forecast_column.py``):
without boundary observations, and with the band of every forecast frame (one grid point wide, the UPAO loss's) taken
from the stored frames (``--boundary`` = the input itself: only the band is gathered, by index). Each is scored against
the stored frames it did not otherwise read: the Well's VRMSE per window, over the whole field and over the interior
(the band left out, where the observations cannot help by being copied), for the forecast's own picks.

    python benchmarks/studies/forecast_boundary.py --base outputs/wyg/replicas --dataset rayleigh_benard \\
        --source classical --out RUNS/forecast_boundary

Writes ``reports/forecast_boundary.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.jobs import WELL_UPAO, run_logged, thread_env

from studies.forecast_column import WINDOW_SLICES
from well_upao.data.source import WellSource
from well_upao.data.trajectories import TrajectoryFile
from well_upao.physics.objective import band_index
from well_upao.predict.windows import LONGEST_WINDOW_END, rollout_starts

ROOT = Path(__file__).resolve().parents[2]


def interior_vrmse(predicted: torch.Tensor, stored: torch.Tensor, index: torch.Tensor) -> list[float]:
    """Per step the Well's VRMSE (mean over channels) over the points outside the band ``index``: ``(K,)``."""
    flat_p = predicted.reshape(predicted.shape[0], -1, predicted.shape[-1])
    flat_s = stored.reshape(stored.shape[0], -1, stored.shape[-1])
    keep = torch.ones(flat_p.shape[1], dtype=torch.bool)
    keep[index] = False
    error = ((flat_p[:, keep] - flat_s[:, keep]) ** 2).mean(1)
    spread = flat_s[:, keep].var(1, unbiased=True) + 1e-7
    return (error / spread).sqrt().mean(-1).tolist()


def whole_vrmse(predicted: torch.Tensor, stored: torch.Tensor) -> list[float]:
    flat_p = predicted.reshape(predicted.shape[0], -1, predicted.shape[-1])
    flat_s = stored.reshape(stored.shape[0], -1, stored.shape[-1])
    error = ((flat_p - flat_s) ** 2).mean(1)
    return (error / (flat_s.var(1, unbiased=True) + 1e-7)).sqrt().mean(-1).tolist()


def windows(per_step: list[float]) -> dict[str, float]:
    return {name: sum(per_step[a:b]) / (b - a) for name, (a, b) in WINDOW_SLICES.items() if len(per_step) >= b}


def measured(args, source: WellSource) -> dict[str, dict[str, list[float]]]:
    """Per forecast (without and with the observed band) and part (whole field, interior), per window the VRMSE of
    every start and trajectory."""
    files = [TrajectoryFile(p, source.kept_fields) for p in source.files]
    stored = [f[i].frames for f in files[:1] for i in range(len(f))]  # the first file's: the forecast's input
    held = (min(s.shape[0] for s in stored) - 1) // args.stride + 1
    steps = min(LONGEST_WINDOW_END, held - args.history)
    index = band_index(tuple(stored[0].shape[1:-1]), 1)
    rows: dict[str, dict[str, list[float]]] = {}
    env = thread_env(dict(os.environ, WANDB_MODE="disabled"), 1)
    imports = ["--imports", *args.imports] if args.imports else []
    for start in rollout_starts(held, args.history, steps, 3):
        first = (start + args.history) * args.stride
        for label, extra in (("without", []), ("with the observed band", ["--boundary", str(source.files[0])])):
            out = args.out / f"start{start}-{'band' if extra else 'plain'}"
            command = [*WELL_UPAO, "forecast", args.source, "--input", str(source.files[0]), "--history",
                       str(args.history), "--stride", str(args.stride), "--start", str(first), "--steps", str(steps),
                       "--out", str(out), "--quiet", *extra, *imports]  # fmt: skip
            if run_logged(command, args.out / f"{out.name}.log", env).returncode != 0:
                raise SystemExit(f"{' '.join(command)} failed; see {args.out / (out.name + '.log')}")
            predicted = TrajectoryFile(out / "forecast.hdf5")
            for i, truth in enumerate(stored):
                target = truth[first : first + steps * args.stride : args.stride]
                frames = predicted[i].frames[: len(target)]
                curves = {"whole": whole_vrmse(frames, target), "interior": interior_vrmse(frames, target, index)}
                for part, curve in curves.items():
                    for window, value in windows(curve).items():
                        rows.setdefault(f"{label}, {part}", {}).setdefault(window, []).append(value)
    return rows


def report(args, source: WellSource, rows: dict, argv: list[str]) -> str:
    commit = subprocess.run(
        ["git", "rev-parse", "--short=10", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    names = list(WINDOW_SLICES)
    lines = [
        "# What observed boundary bands change in a forecast",
        "",
        f"> `python benchmarks/studies/forecast_boundary.py {' '.join(argv)}` at commit {commit}: {args.dataset} (axes "
        f"periodic: {list(source.layout.periodic)}), the trajectories of its first validation file, history "
        f"{args.history}, stride {args.stride}, SOURCE `{args.source}`; the band one grid point wide at every edge. "
        "The Well's VRMSE (mean over channels), mean over the rollout starts evaluate uses and the trajectories; "
        "*interior* leaves the band's points out.",
        "",
        "| forecast | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for label, by_window in rows.items():
        cells = [f"{sum(v) / len(v):.3g}" if (v := by_window.get(w)) else "—" for w in names]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", type=Path, required=True)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--source", default="classical", help="the forecast's SOURCE (a run, a backbone, classical)")
    parser.add_argument("--history", type=int, default=8)
    parser.add_argument("--stride", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("RUNS/forecast_boundary"))
    parser.add_argument("--report", type=Path, default=ROOT / "reports" / "forecast_boundary.md")
    parser.add_argument("--imports", nargs="*", default=[], help="modules registering a user's dataset (on PYTHONPATH)")
    args = parser.parse_args(argv)
    source = WellSource(args.base, args.dataset, "valid")
    if all(source.layout.periodic):
        raise SystemExit(f"{args.dataset} is periodic on every axis: the band is no boundary there")
    rows = measured(args, source)
    text = report(args, source, rows, argv if argv is not None else sys.argv[1:])
    args.report.write_text(text)
    print(text)
    (args.out / "rows.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
