"""``benchmarks/studies/forecast_column.py``: the forecast column of What you get scores ``well-upao forecast``'s file
against the stored frames it never read, per window as evaluate averages a row's rollouts."""

from __future__ import annotations

import math
import os

import growth_dataset  # registers ``growth`` (tests/ is on sys.path)
import h5py
import numpy as np
import pytest
import torch
from harness.jobs import run_logged
from studies.forecast_column import coverage, forecast_case, true_windows

from well_upao.data.generate import GenerationRequest, generate_dataset


def test_the_windows_are_the_closed_form_of_persistence_on_a_growing_mode():
    """Persistence of ``exp(r t) sin x`` ``K`` steps ahead: VRMSE ``sqrt((N-1)/N) (1 - exp(-r h K))``; one step and the
    mean over steps 7-12 (the Well's 6:12); 13:30 is not held by 12 steps."""
    x = torch.arange(32, dtype=torch.float64) * 2 * math.pi / 32
    frames = torch.stack([torch.exp(torch.tensor(0.7 * 0.1 * k)) * torch.sin(x) for k in range(13)])[..., None]
    predicted = frames[:1].expand(12, -1, -1)
    windows = true_windows(predicted, frames[1:], dims=1)
    assert set(windows) == {"one_step", "6:12"}
    assert windows["one_step"] == pytest.approx(growth_dataset.persistence_vrmse(1), rel=1e-6)
    closed = sum(growth_dataset.persistence_vrmse(k) for k in range(7, 13)) / 6
    assert windows["6:12"] == pytest.approx(closed, rel=1e-6)


def test_a_case_scores_each_starts_forecast_against_the_stored_frames(tmp_path):
    """The classical forecast of the growing mode from evaluate's starts: each window's value is the mean over starts
    of the trajectories' VRMSE computed here from the files with numpy; every cell names its pick and interval."""
    base = tmp_path / "data"
    generate_dataset(GenerationRequest(pde="growth", out=base, n_traj=10), progress=False)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(growth_dataset.__file__), WANDB_MODE="disabled")

    def logged(command, log):
        finished = run_logged([*command, "--imports", "growth_dataset"], log, env, cwd=tmp_path)
        assert finished.returncode == 0, log.read_text()
        return finished

    record = forecast_case("classical", base, "growth", 1, 8, tmp_path / "case", logged)
    assert record["steps"] == 30 and record["trajectories"] == 1
    starts = sorted({cell["start"] for cell in record["cells"]})
    assert starts == [0, 1, 2]  # 40 frames, history 8, 30 steps: starts 0 to 2
    with h5py.File(next((base / "growth" / "data" / "valid").glob("*.hdf5"))) as f:
        stored = np.asarray(f["t0_fields"]["u"][0], dtype=np.float64)
    by_hand = []
    for start in starts:
        with h5py.File(tmp_path / "case" / "forecast" / f"start{start}" / "forecast.hdf5") as f:
            predicted = np.asarray(f["t0_fields"]["u"][0], dtype=np.float64)
        truth = stored[start + 8 : start + 8 + 30]
        errors = np.sqrt(((predicted - truth) ** 2).mean(-1) / (truth.var(-1, ddof=1) + 1e-7))
        by_hand.append(errors[6:12].mean())
    assert record["windows"]["6:12"] == pytest.approx(float(np.mean(by_hand)), rel=1e-4)
    for cell in record["cells"]:
        assert cell["predictor"] in ("persistence", "extrap1", "extrap2", "solver")
        assert cell["low"] <= cell["expected"] <= cell["high"] and cell["covered"] == (
            cell["low"] <= cell["true"] <= cell["high"]
        )
    assert 0 <= coverage(record["cells"]) <= 1
