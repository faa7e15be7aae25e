"""``well-upao residual-floor``: the relative residual of observed frames per stride, derivative and time scheme."""

from __future__ import annotations

import dataclasses
import json
import math

import advected_mode
import pytest

from well_upao.cli import main
from well_upao.data.source import WellSource
from well_upao.physics.floor import best_row, floor_rows, relative_residuals
from well_upao.physics.pdes import get_pde


def test_spectral_derivatives_lower_the_floor_of_periodic_exact_data(small_datasets):
    observed = WellSource(small_datasets, "tg2d").observed(1, max_trajectories=2, max_frames=8)
    rows = floor_rows(observed, 1, get_pde("tg2d"))
    by_key = {(r.derivative, r.scheme): r for r in rows}
    assert {d for d, _ in by_key} == {"fd", "fd4", "spectral"}
    assert {s for _, s in by_key} == {"explicit", "implicit", "crank_nicolson", "central"}
    # Taylor-Green on 16^2: second-order differences leave a percent-level floor, the exact derivative ~none
    assert by_key[("spectral", "crank_nicolson")].mean < 0.1 * by_key[("fd", "crank_nicolson")].mean
    assert by_key[("fd4", "crank_nicolson")].mean < by_key[("fd", "crank_nicolson")].mean
    assert best_row(rows, 1).derivative == "spectral"


def test_the_cli_prints_marks_and_writes_json(small_datasets, tmp_path, capsys):
    out = tmp_path / "floor.json"
    args = ["residual-floor", "--data", "advdiff2d", "--base-path", str(small_datasets), "--max-trajectories", "2"]
    assert main([*args, "--max-frames", "6", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.count("**(lowest)**") == 1 and "| 1 | spectral | central |" in text
    rows = json.loads(out.read_text())["rows"]
    assert len(rows) == 3 * 4 and {"stride", "derivative", "scheme", "residuals", "mean"} <= set(rows[0])
    assert main([*args, "--stride", "20"]) == 2
    assert "fewer than 3" in capsys.readouterr().err
    assert main(["residual-floor", "--data", "nosuch", "--base-path", str(small_datasets)]) == 2


def gray_scott_frames(delta_a: float, delta_b: float, dt: float = 2.0, resolution: int = 32):
    """Gray-Scott frames from our ETDRK4 solver with the given diffusivities, after 100 s of pattern growth."""
    import numpy as np
    import torch

    from well_upao.data.source import ObservedFrames
    from well_upao.families.replicas import gray_scott

    grid = gray_scott.square_grid(resolution)
    a0, b0 = gray_scott.gaussian_cluster_state(np.random.default_rng(0), grid)
    skip = int(100 / dt)
    times = np.arange(skip + 6) * dt
    a, b = gray_scott.simulate_gray_scott(
        torch.as_tensor(a0), torch.as_tensor(b0), 0.029, 0.057, times, grid, step=1.0, delta_a=delta_a, delta_b=delta_b
    )
    fields = {"concentration_u": a[skip:][None], "concentration_v": b[skip:][None]}
    scalars = {"F": torch.tensor([0.029], dtype=torch.float64), "k": torch.tensor([0.057], dtype=torch.float64)}
    return ObservedFrames("gray_scott_reaction_diffusion", fields, scalars, (2 / resolution,) * 2, (True, True),
                          times[skip:])  # fmt: skip


def test_fitting_recovers_diffusivities_the_documentation_does_not_state():
    from well_upao.physics.floor import fit_constants

    observed = gray_scott_frames(3e-5, 1.5e-5)
    pde = get_pde("gray_scott_reaction_diffusion")
    fitted = fit_constants(observed, pde, ["delta_A", "delta_B"], "spectral", "crank_nicolson")
    assert fitted.initial == {"delta_A": 2e-5, "delta_B": 1e-5}  # the Well's documented values
    assert abs(fitted.values["delta_A"] / 3e-5 - 1) < 0.01 and abs(fitted.values["delta_B"] / 1.5e-5 - 1) < 0.01
    assert all(fitted.floor_fitted[k] < 0.05 * fitted.floor_initial[k] for k in fitted.floor_fitted)


def test_fitting_a_per_trajectory_parameter_recovers_it(small_datasets):
    from well_upao.physics.floor import fit_constants

    observed = WellSource(small_datasets, "advdiff2d").observed(1, max_trajectories=1, max_frames=10)
    truth = float(observed.scalars["nu"][0])
    observed.scalars["nu"] = observed.scalars["nu"] * 3  # start far from it
    fitted = fit_constants(observed, get_pde("advdiff2d"), ["nu"], "spectral", "crank_nicolson")
    assert abs(fitted.values["nu"] / truth - 1) < 1e-3, (fitted.values, truth)


def test_the_cli_fits_and_reports_the_floor_before_and_after(tmp_path, capsys):
    from well_upao.data.replicas import ReplicaRequest, generate_replica

    generate_replica(
        ReplicaRequest("gray_scott_reaction_diffusion", tmp_path, shape=(32, 32), n_steps=14, n_traj_per_set=3,
                       sets=[2]),
        progress=False,
    )  # fmt: skip
    args = ["residual-floor", "--data", "gray_scott_reaction_diffusion", "--base-path", str(tmp_path)]
    assert main([*args, "--fit", "delta_A", "delta_B", "--json", str(tmp_path / "fit.json")]) == 0
    text = capsys.readouterr().out
    assert "delta_A = " in text and "(documented 2e-05)" in text and " -> " in text
    fit = json.loads((tmp_path / "fit.json").read_text())["fits"][0]
    assert all(fit["floor_fitted"][k] <= fit["floor_initial"][k] * 1.0001 for k in fit["floor_fitted"])
    assert main([*args, "--fit", "viscosity"]) == 2
    assert "has no coefficient" in capsys.readouterr().err


def test_evaluate_reports_the_floor_of_the_evaluated_frames(small_datasets, tmp_path, capsys):
    out = tmp_path / "evaluation"
    args = [
        "evaluate",
        "--no-figures",
        "--data",
        "tg2d",
        "--base-path",
        str(small_datasets),
        "--rollout-steps",
        "0",
        "--quiet",
    ]
    assert main([*args, "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "- UPAO default fd/crank_nicolson:" in text and "- lowest spectral/" in text
    floor = json.loads(next(out.glob("*.json")).read_text())["residual_floor"]
    assert set(floor) == {"default", "lowest"} and floor["lowest"]["derivative"] == "spectral"


def test_the_settings_permit_the_discretisations_that_auto_chooses_from():
    """One filter (``permitted``) for the trainer's ``auto``, evaluate's default and the constants' fit: a fixed part
    keeps its value, ``auto`` any; the grid's derivatives bound both (no spectral without a periodic axis)."""
    from well_upao.physics.floor import FloorRow, choose_discretisation, discretisations
    from well_upao.physics.residual import SCHEMES

    assert discretisations((False, False)) == [("fd", s) for s in SCHEMES]
    assert discretisations((True, False), "spectral") == [("spectral", s) for s in SCHEMES]
    assert discretisations((True,), "auto", "central") == [(d, "central") for d in ("fd", "fd4", "spectral")]
    assert discretisations((True,), "fd4", "implicit") == [("fd4", "implicit")]
    assert discretisations((False,), "spectral", "auto") == []
    means = {("fd", "explicit"): 3.0, ("fd", "central"): 2.0, ("spectral", "explicit"): 1.0}
    rows = [FloorRow(1, d, s, {"k": m}) for (d, s), m in means.items()]
    assert choose_discretisation(rows, "auto", "auto").discretisation == ("spectral", "explicit")
    assert choose_discretisation(rows, "fd", "auto").discretisation == ("fd", "central")  # not the lowest overall
    assert choose_discretisation(rows, "auto", "explicit").discretisation == ("spectral", "explicit")
    assert choose_discretisation(rows, "fd4", "auto") is None


# ---------------------------------------------------------------------------- at the settings users run
@pytest.fixture(scope="module")
def advected(tmp_path_factory):
    """``tests/advected_mode.py``: exact advection-diffusion on a 24 x 40 grid (x periodic, y walls, dx != dy),
    float32 time from t = 1000 every 0.04, 32 frames."""
    base = tmp_path_factory.mktemp("advected")
    advected_mode.write(base)
    return base


def test_the_floor_at_a_stride_is_the_time_schemes_error_in_the_strided_step(advected):
    """Frames read at strides 1, 5 and 10 (``WellSource.observed``): with spectral derivatives the residual of the
    exact mode has no spatial error on this grid, so its Crank-Nicolson floor is the closed form of
    ``advected_mode.crank_nicolson_floor`` in the step ``s * dt`` and falls at second order in it. Negative controls:
    the same frames with the stored frame spacing instead of ``s`` times it, and with nu doubled."""
    pde = get_pde(advected_mode.NAME)
    source = WellSource(advected, advected_mode.NAME)
    floors = {}
    for stride in (1, 5, 10):
        observed = source.observed(stride, max_trajectories=2)
        floors[stride] = relative_residuals(observed, pde, "spectral", "crank_nicolson")["advection"]
        expected = advected_mode.crank_nicolson_floor(stride, len(observed.times))
        # stride 1: the float32 fields' rounding (~1e-6 of the rate) is 0.3% of a floor of 2.7e-4
        assert floors[stride] == pytest.approx(expected, rel=1e-2 if stride == 1 else 1e-3), stride
        if stride > 1:  # read with the file's frame spacing, the floor is the closed form at the wrong step
            stored = dataclasses.replace(observed, step=observed.step / stride)
            wrong = relative_residuals(stored, pde, "spectral", "crank_nicolson")["advection"]
            assert wrong == pytest.approx(
                advected_mode.crank_nicolson_floor(stride, len(observed.times), step=advected_mode.DT), 1e-3
            )
            assert wrong > 20 * floors[stride]
    assert 1.95 < math.log(floors[5] / floors[1]) / math.log(5) < 2.05  # 2.02
    assert 1.9 < math.log2(floors[10] / floors[5]) < 2.1  # 2.04
    observed = source.observed(1, max_trajectories=2)
    doubled = dataclasses.replace(observed, scalars=observed.scalars | {"nu": 2 * observed.scalars["nu"]})
    assert relative_residuals(doubled, pde, "spectral", "crank_nicolson")["advection"] > 20 * floors[1]


def test_the_cli_reads_each_stride_at_its_own_step(advected, tmp_path, capsys):
    """``well-upao residual-floor --stride 1 5 10``: each stride's spectral / Crank-Nicolson row is that stride's
    closed form (``--max-frames 4``: at stride 10 the 32 frames hold 4 from frame 1)."""
    out = tmp_path / "floor.json"
    args = ["residual-floor", "--data", advected_mode.NAME, "--base-path", str(advected), "--max-frames", "4"]
    assert main([*args, "--stride", "1", "5", "10", "--json", str(out)]) == 0
    capsys.readouterr()
    rows = {(r["stride"], r["derivative"], r["scheme"]): r["residuals"] for r in json.loads(out.read_text())["rows"]}
    for stride in (1, 5, 10):
        expected = advected_mode.crank_nicolson_floor(stride, 4)
        assert rows[(stride, "spectral", "crank_nicolson")]["advection"] == pytest.approx(expected, rel=1e-2), stride
