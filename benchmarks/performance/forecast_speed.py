"""How long ``well-upao forecast`` takes: 30 steps of 4 trajectories on a 64^2 grid with a run's network and the
evidence (issue 73's goal: under 20 s on 2 cores), against the network's own 30-step rollout of the same 4 histories
(the reference: what any forecast with this network costs at least), measured in one run.

The network is the shipped extrap2 backbone attached to the dataset (the tiny preset a quickstart run adapts: the
same cost per step as a trained run's ``best.pt``), saved as a checkpoint as a run's is. Rows: the forecast without
and with the solver candidate (wave2d's PDE has one), each the median of ``--repeats`` calls of the same Python
function the command calls (``well_upao.forecast.forecast``), figures off; the whole command once (with its start-up
and figures).

    python benchmarks/performance/forecast_speed.py --out RUNS/forecast_speed [--repeats 3]

Writes ``reports/forecast_speed.md`` (the table, the machine, the commit).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

from well_upao.data.generate import GenerationRequest, generate_dataset
from well_upao.forecast import ForecastRequest, forecast
from well_upao.forecast.inputs import ForecastInput
from well_upao.harness.model_factory import na_transformer
from well_upao.models.checkpoint import build_payload, save_checkpoint
from well_upao.predict.predictors import load_predictor
from well_upao.predict.rollout import rollout

ROOT = Path(__file__).resolve().parents[2]
STEPS, TRAJECTORIES, RESOLUTION, HISTORY = 30, 4, 64, 8


def prepared(out: Path) -> tuple[Path, Path]:
    """wave2d at 64^2 (4 validation trajectories of 41 frames) and a checkpoint of the backbone on it."""
    base = out / "data"
    if not (base / "wave2d").is_dir():
        request = GenerationRequest(
            pde="wave2d", out=base, n_traj=8, resolution=RESOLUTION, n_steps=41, valid_fraction=0.5
        )
        generate_dataset(request, progress=False)
    checkpoint = out / "network.pt"
    if not checkpoint.is_file():
        model = na_transformer(
            preset="tiny", dataset_name="wave2d", well_base_path=str(base), pretrained="shipped_extrap2", base="extrap2"
        )
        save_checkpoint(
            checkpoint,
            build_payload(
                model,
                extra_train={
                    "data": {"well_base_path": str(base), "well_dataset_name": "wave2d", "n_steps_input": HISTORY}
                },
            ),
        )
    return base / "wave2d", checkpoint


def timed(function, repeats: int) -> float:
    """The median wall seconds of ``repeats`` calls (after one warm-up call)."""
    function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def network_rollouts(folder: Path, checkpoint: Path) -> None:
    """The reference: the network's own 30-step rollout of each of the 4 histories."""
    given = ForecastInput(folder, "valid", HISTORY, 1, max_trajectories=TRAJECTORIES)
    from well_upao.data.source import WellSource

    row = load_predictor(checkpoint, WellSource(folder.parent, "wave2d"))
    with torch.no_grad():
        for history in given.histories():
            rollout(row, history.frames, HISTORY, STEPS, history.context)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("RUNS/forecast_speed"))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    folder, checkpoint = prepared(args.out)

    def call(solver: bool):
        request = ForecastRequest(
            str(checkpoint),
            folder,
            args.out / "fc",
            history=HISTORY,
            steps=STEPS,
            max_trajectories=TRAJECTORIES,
            solver=solver,
            progress=False,
            figures=False,
        )
        return lambda: forecast(request)

    rows = {
        "the network's own rollouts (reference)": timed(lambda: network_rollouts(folder, checkpoint), args.repeats),
        "forecast, no solver candidate": timed(call(False), args.repeats),
        "forecast, with the solver candidate": timed(call(True), args.repeats),
    }
    command = [str(Path(sys.executable).parent / "well-upao"), "forecast", str(checkpoint), "--input", str(folder),
               "--history", str(HISTORY), "--steps", str(STEPS), "--max-trajectories", str(TRAJECTORIES), "--no-solver",
               "--out", str(args.out / "fc_cli"), "--quiet"]  # fmt: skip
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    rows["the whole command, no solver (start-up and figures included; once)"] = time.perf_counter() - start
    reference = rows["the network's own rollouts (reference)"]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    lines = [
        "# How long a forecast takes",
        "",
        f"`python benchmarks/performance/forecast_speed.py --out {args.out} --repeats {args.repeats}` at commit "
        f"{commit.strip()}, "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch threads "
        f"{torch.get_num_threads()}. {STEPS} steps of {TRAJECTORIES} wave2d trajectories at {RESOLUTION}^2, history "
        f"{HISTORY}, the tiny backbone's network (issue 73's goal: under 20 s on 2 cores, with the network and the "
        "evidence). Median of the repeats but for the whole command.",
        "",
        "| what | seconds | over the reference |",
        "|---|---|---|",
        *(f"| {name} | {value:.2f} | {value / reference:.2f}x |" for name, value in rows.items()),
        "",
    ]
    text = "\n".join(lines)
    print(text)
    (ROOT / "reports" / "forecast_speed.md").write_text(text)


if __name__ == "__main__":
    main()
