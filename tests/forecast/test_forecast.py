"""``well-upao forecast`` (``well_upao.forecast``): each step is its picked candidate's own rollout from the history,
a history-only file forecasts as the full file with ``--start``, the file round-trips through ``validate`` and the
Well's reader, every bad input is refused with nothing written, and the expected error is the closed form on a field
whose predictors' errors are known (``tests/growth_dataset.py``)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import growth_dataset  # registers ``growth`` (tests/ is on sys.path)
import h5py
import numpy as np
import pytest
import torch

from well_upao.cli import main
from well_upao.data.generate import GenerationRequest, generate_dataset
from well_upao.data.trajectories import TrajectoryFile
from well_upao.forecast import ForecastError, ForecastRequest, forecast
from well_upao.forecast.candidates import candidates
from well_upao.forecast.core import roll_trajectory
from well_upao.forecast.inputs import ForecastInput
from well_upao.forecast.results import WindowPick
from well_upao.predict.predictors import classical_row
from well_upao.predict.rollout import rollout

START = 20


@pytest.fixture(scope="module")
def growth(tmp_path_factory) -> Path:
    """``growth``: 10 trajectories of 40 frames (9 train, 1 valid; valid and test hold the same one)."""
    base = tmp_path_factory.mktemp("growth")
    generate_dataset(GenerationRequest(pde="growth", out=base, n_traj=10), progress=False)
    return base / "growth"


def valid_file(folder: Path) -> Path:
    return next((folder / "data" / "valid").glob("*.hdf5"))


def request(folder: Path, out: Path, **given) -> ForecastRequest:
    defaults = dict(history=16, steps=14, start=START, solver=False, progress=False, figures=False)
    return ForecastRequest("classical", folder, out, **(defaults | given))


def stored_frames(path: Path) -> np.ndarray:
    """Trajectory 0 of a file's ``u`` field, ``(T, N)``."""
    with h5py.File(path, "r") as f:
        return np.asarray(f["t0_fields"]["u"][0])


def test_each_window_takes_its_picks_own_rollout_from_the_history(growth):
    """Picks written by hand, one candidate per window: step 1 is persistence's first frame, steps 2-12
    extrap1's rollout at those steps, 13 on extrap2's, each rolled out from the history alone (not from the frames
    of another candidate). Negative control: extrap1 continued from persistence's first frame is another frame."""
    given = ForecastInput(growth, "valid", 8, 1, START)
    rows = candidates("classical", given, solver=False)
    picks = [WindowPick("one_step", "persistence", 1, 1, {}, {}, ""), WindowPick("6:12", "extrap1", 2, 12, {}, {}, ""),
             WindowPick("13:30", "extrap2", 13, 16, {}, {}, "")]  # fmt: skip
    history = next(given.histories())
    made = ForecastRequest("classical", growth, steps=16)
    frames = torch.cat(list(roll_trajectory(rows, picks, history, given, made)))
    for name, first, last in (("persistence", 1, 1), ("extrap1", 2, 12), ("extrap2", 13, 16)):
        own = rollout(classical_row(name), history.frames, 8, last, None)[0]
        torch.testing.assert_close(frames[first - 1 : last], own[first - 1 : last], rtol=0, atol=0)
    stitched = torch.cat([history.frames[1:], frames[:1]])  # extrap1 fed persistence's frame: not what is written
    wrong = rollout(classical_row("extrap1"), stitched, 8, 1, None)[0, 0]
    assert (wrong - frames[1]).abs().max() > 1e-3


def test_the_forecast_file_holds_each_steps_pick_and_its_expected_error_is_the_closed_form(growth, tmp_path):
    """Forced persistence on the growing mode, history 16 (backtests reach 13 steps): every frame is the history's
    last, the 6:12 expected VRMSE is the mean of the closed form over steps 7-12, each step's expected value the
    closed form at that step, and the true VRMSE of the file's frames against the stored ones the same closed form."""
    result = forecast(request(growth, tmp_path / "fc", predictor="persistence"))
    assert [p.predictor for p in result.picks] == ["persistence"] * 3 and all(p.forced for p in result.picks)
    document = json.loads(result.json.read_text())
    window = next(w for w in document["windows"] if w["window"] == "6:12")
    closed = sum(growth_dataset.persistence_vrmse(k) for k in range(7, 13)) / 6
    assert window["expected_vrmse"]["value"] == pytest.approx(closed, rel=1e-5)
    assert window["expected_vrmse"]["continued_share"] == 0  # read within reach, not continued
    for entry in document["per_step"][:13]:
        assert entry["expected_vrmse"] == pytest.approx(growth_dataset.persistence_vrmse(entry["step"]), rel=1e-5)
    stored, forecast_frames = stored_frames(valid_file(growth)), stored_frames(result.hdf5)
    np.testing.assert_array_equal(forecast_frames, np.repeat(stored[START - 1][None], 14, 0))
    for step in (1, 7, 14):
        truth, predicted = stored[START + step - 1], forecast_frames[step - 1]
        vrmse = np.sqrt(np.mean((predicted - truth) ** 2) / (truth.var(ddof=1) + 1e-7))
        assert vrmse == pytest.approx(growth_dataset.persistence_vrmse(step), rel=1e-4)


def test_the_pick_follows_the_evidence_and_a_history_only_file_gives_the_same_forecast(growth, tmp_path):
    """Unforced: on a smooth growing mode extrap2's backtests are lowest one step ahead, so it is picked there. A file
    holding only the 16 history frames forecasts exactly as the full file with ``--start``."""
    full = forecast(request(growth, tmp_path / "full"))
    assert full.pick_of("one_step").predictor == "extrap2"
    evidence = full.pick_of("one_step").evidence
    assert evidence["extrap2"] < evidence["extrap1"] < evidence["persistence"]
    history_only = tmp_path / "history.hdf5"
    slice_in_time(valid_file(growth), history_only, START - 16, START)
    alone = forecast(request(history_only, tmp_path / "alone", start=None))
    np.testing.assert_array_equal(stored_frames(alone.hdf5), stored_frames(full.hdf5))
    assert [p.predictor for p in alone.picks] == [p.predictor for p in full.picks]
    with h5py.File(full.hdf5) as a, h5py.File(alone.hdf5) as b:
        np.testing.assert_array_equal(a["dimensions"]["time"][:], b["dimensions"]["time"][:])


def slice_in_time(source: Path, target: Path, first: int, stop: int) -> None:
    """A copy of a Well file holding only its frames ``first:stop`` (fields, time, time-varying scalars)."""
    with h5py.File(source) as src, h5py.File(target, "w") as dst:
        for key, value in src.attrs.items():
            dst.attrs[key] = value
        for name in src:
            if name not in ("t0_fields", "t1_fields", "t2_fields", "dimensions"):
                src.copy(src[name], dst, name=name)
        dims = dst.create_group("dimensions")
        for key, value in src["dimensions"].attrs.items():
            dims.attrs[key] = value
        for name, ds in src["dimensions"].items():
            data = ds[first:stop] if name == "time" else ds[:]
            dims.create_dataset(name, data=data)
            for key, value in ds.attrs.items():
                dims[name].attrs[key] = value
        for group in ("t0_fields", "t1_fields", "t2_fields"):
            out = dst.create_group(group)
            for key, value in src[group].attrs.items():
                out.attrs[key] = value
            for name, ds in src[group].items():
                out.create_dataset(name, data=ds[:, first:stop])
                for key, value in ds.attrs.items():
                    out[name].attrs[key] = value


def test_the_file_validates_and_the_wells_reader_cuts_windows_from_it(growth, tmp_path, capsys):
    """With ``--with-history`` the history comes first and time continues the input's: ``well-upao validate`` passes
    and the Well's ``WellDataset`` reads the folder, its windows' frames those of the file."""
    from the_well.data import WellDataset

    out = tmp_path / "fc"
    assert main(["forecast", "classical", "--input", str(growth), "--history", "8", "--steps", "6", "--start",
                 str(START), "--with-history", "--no-solver", "--out", str(out), "--quiet",
                 "--imports", "growth_dataset"]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    assert "steps 1-1 (one_step)" in printed and "steps 2-6 (6:12)" in printed
    assert main(["validate", str(out / "forecast.hdf5"), "--imports", "growth_dataset"]) == 0
    with h5py.File(out / "forecast.hdf5") as f, h5py.File(valid_file(growth)) as g:
        times, stored = f["dimensions"]["time"][:], g["dimensions"]["time"][:]
        np.testing.assert_allclose(times, stored[START - 8 : START + 6], rtol=1e-6)
        np.testing.assert_array_equal(f["t0_fields"]["u"][0, :8], g["t0_fields"]["u"][0, START - 8 : START])
        u = f["t0_fields"]["u"][0]
    dataset = WellDataset(path=str(out), n_steps_input=4, n_steps_output=2, use_normalization=False)
    sample = dataset[0]
    np.testing.assert_allclose(sample["input_fields"][..., 0].numpy(), u[:4], rtol=0, atol=0)
    np.testing.assert_allclose(sample["output_fields"][..., 0].numpy(), u[4:6], rtol=0, atol=0)


def test_every_bad_input_is_refused_in_one_line_and_nothing_is_written(growth, tmp_path, capsys):
    out = tmp_path / "fc"
    common = ["--no-solver", "--out", str(out), "--quiet", "--imports", "growth_dataset"]
    nan_file = tmp_path / "nan.hdf5"
    slice_in_time(valid_file(growth), nan_file, 0, 12)
    with h5py.File(nan_file, "a") as f:
        u = f["t0_fields"]["u"]
        frame = u[0, 10]
        frame[3] = np.nan
        u[0, 10] = frame
    cases = {
        "holds 12 frames; a history of 16": ["classical", "--input", str(nan_file), "--history", "16"],
        "NaN or infinite values in stored frames [10]": ["classical", "--input", str(nan_file), "--history", "8"],
        "--predictor 'extrap7' is not a candidate": ["classical", "--input", str(growth), "--predictor", "extrap7"],
        "is neither a run folder": ["no/such/run", "--input", str(growth)],
        "--input nothing.hdf5 does not exist": ["classical", "--input", "nothing.hdf5"],
        "--start 99 is not a frame": ["classical", "--input", str(growth), "--start", "99"],
    }
    for message, args in cases.items():
        assert main(["forecast", *args, *common]) == 2, message
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err
        assert not out.exists() and not list(tmp_path.glob(".fc.*"))


def test_a_runs_model_is_refused_on_other_channels_or_another_grid(growth, tmp_path):
    """A run trained on another dataset (two channels) or on this one at another resolution is refused by name."""
    from well_upao.harness.model_factory import na_transformer
    from well_upao.models.checkpoint import build_payload, save_checkpoint

    other = tmp_path / "data"
    generate_dataset(GenerationRequest(pde="growth", out=other, n_traj=4, resolution=16, n_steps=20), progress=False)
    for name, resolution in (("wave2d", 8), ("growth", 16)):
        if name == "wave2d":
            generate_dataset(GenerationRequest(pde=name, out=other, n_traj=4, resolution=resolution, n_steps=12),
                             progress=False)  # fmt: skip
        model = na_transformer(preset="tiny", layers=1, dims=(1, 2), dataset_name=name, well_base_path=str(other),
                               history=4)  # fmt: skip
        data = {"well_base_path": str(other), "well_dataset_name": name, "n_steps_input": 4}
        path = tmp_path / f"{name}.pt"
        save_checkpoint(path, build_payload(model, extra_train={"data": data}))
        with pytest.raises(ForecastError, match="channels" if name == "wave2d" else "grid"):
            forecast(ForecastRequest(str(path), growth, tmp_path / "fc", start=START, progress=False, figures=False))
        assert not (tmp_path / "fc").exists()


def test_boundary_observations_set_the_band_and_leave_the_interior_to_the_predictor(growth, tmp_path):
    """``--boundary`` (here the input file itself, read at the forecast's frames): every written frame carries the
    stored frame's band (1 point at each end of the periodic axis) and persistence's interior; the band of the
    forecast without it is persistence's (negative control)."""
    source = valid_file(growth)
    plain = forecast(request(growth, tmp_path / "plain", predictor="persistence"))
    banded = forecast(request(growth, tmp_path / "band", predictor="persistence", boundary=source))
    stored, a, b = stored_frames(source), stored_frames(plain.hdf5), stored_frames(banded.hdf5)
    truth = stored[START : START + 14]
    np.testing.assert_array_equal(b[:, [0, -1]], truth[:, [0, -1]])
    np.testing.assert_array_equal(b[:, 1:-1], a[:, 1:-1])
    assert np.abs(a[:, [0, -1]] - truth[:, [0, -1]]).max() > 1e-3
    with pytest.raises(ForecastError, match="forecast step 21 needs its frame 40"):
        forecast(request(growth, tmp_path / "long", predictor="persistence", boundary=source, steps=25))


def test_a_trajectory_file_serves_what_the_wells_reader_serves(growth):
    """``data.trajectories.TrajectoryFile`` against the Well's own ``WellDataset`` on the same file (whole
    trajectories): the same frames, channel for channel."""
    from the_well.data import WellDataset

    ours = TrajectoryFile(valid_file(growth))[0]
    theirs = WellDataset(path=str(growth / "data" / "valid"), n_steps_input=1, n_steps_output=39,
                         use_normalization=False)[0]  # fmt: skip
    frames = torch.cat([theirs["input_fields"], theirs["output_fields"]])
    torch.testing.assert_close(ours.frames, frames.float(), rtol=0, atol=0)
    assert math.isclose(float(ours.scalars["r"]), growth_dataset.RATE)


def test_a_channel_without_spatial_spread_is_left_out_of_the_expected_error(growth):
    """A uniform channel's VRMSE divides by the Well's epsilon alone: the expected error's curve averages the other
    channels only (here the growing mode's, equal to the one-channel curve), and the channel is named; a channel
    with spread is not (negative control)."""
    from well_upao.forecast.inputs import uniform_channels
    from well_upao.predict.backtests import window_curves

    frames = TrajectoryFile(valid_file(growth))[0].frames[:16]
    with_flat = torch.cat([frames, torch.full_like(frames, 3.0)], -1)
    assert uniform_channels(with_flat[-1]) == [1] and uniform_channels(frames[-1]) == []
    rows = [classical_row("persistence")]
    _, alone = window_curves(rows, frames, None)
    mask = torch.tensor([1.0, 0.0])
    _, masked = window_curves(rows, with_flat, None, mask=mask)
    torch.testing.assert_close(masked["persistence"], alone["persistence"])
    _, unmasked = window_curves(rows, with_flat, None)
    assert not torch.allclose(unmasked["persistence"], alone["persistence"])


def test_a_solver_over_its_budget_is_left_out_and_said_so(growth, tmp_path, monkeypatch):
    """The growing mode's PDE has a solver step: a candidate within the budget of RK4 sub-steps, with the count it
    needed in the notes; with a budget of one sub-step step doubling cannot converge, and the notes say why the
    solver is not a candidate (negative control: no budget keeps it). The budget is a count: a clock that makes
    every call take an hour changes nothing."""
    kept = forecast(request(growth, tmp_path / "kept", solver=True, solver_budget=None, steps=2))
    assert "solver" in kept.candidates
    ticks = iter(range(0, 10**9, 3600))
    monkeypatch.setattr("time.perf_counter", lambda: float(next(ticks)))
    within = forecast(request(growth, tmp_path / "within", solver=True, solver_budget=128, steps=2))
    assert "solver" in within.candidates
    assert any("converged in" in note and "--solver-budget 128" in note for note in within.notes)
    dropped = forecast(request(growth, tmp_path / "dropped", solver=True, solver_budget=1, steps=2))
    assert "solver" not in dropped.candidates
    assert any("needs more than 1 RK4 sub-steps" in note for note in dropped.notes)
