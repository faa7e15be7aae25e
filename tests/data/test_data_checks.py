"""The Well's data checks (``well_upao.data.data_checks``, run by ``well-upao validate``): what they flag, that every
exact set and every replica passes them, and that Gray-Scott's replica keeps no trajectory that dies."""

from __future__ import annotations

import shutil

import h5py
import numpy as np
import pytest
import torch

from well_upao.cli import main
from well_upao.data.data_checks import check_file, check_trajectory
from well_upao.data.replicas import ReplicaRequest, generate_replica, plan_trajectories
from well_upao.data.validate import validate_dataset
from well_upao.datasets_exact import EXACT_PDES
from well_upao.families.replicas import gray_scott
from well_upao.families.replicas.families import REPLICAS


def frames_with(kind: str) -> np.ndarray:
    """40 frames of a moving wave ``(T, points, 1)`` (a single frame can lie 5 standard deviations out only among
    27 or more) with frames spoiled as ``kind`` says."""
    x = np.linspace(0, 2 * np.pi, 64, endpoint=False)
    frames = np.stack([np.sin(x - 0.3 * t) + 0.01 * t for t in range(40)])[..., None].astype(np.float32)
    if kind == "constant":
        frames[35:] = 1.0 + np.float32(1e-9) * frames[35:]  # 1 + 1e-9 sin(...) is exactly 1 in float32
    elif kind == "near_constant":
        frames[35:] = 1.0 + np.float32(1e-6) * frames[35:]  # uniform to allclose's tolerance, not exactly
    elif kind == "nan":
        frames[5, 3] = np.nan
    elif kind == "close":
        frames[6] = frames[5] * (1 + 1e-7)
    elif kind == "outliers":
        frames[9] += 5.0
    return frames


@pytest.mark.parametrize(
    "kind, flagged",
    [
        ("constant", [35, 36, 37, 38, 39]),
        ("near_constant", [35, 36, 37, 38, 39]),
        ("nan", [5]),
        ("close", [6]),
        ("outliers", [9]),
    ],
)
def test_each_check_flags_its_frames_and_nothing_else(kind, flagged):
    found = check_trajectory(frames_with(kind))
    assert found[kind] == flagged
    assert all(found[other] == [] for other in found if other not in (kind, "close")), found
    clean = check_trajectory(frames_with("none"))
    assert clean == {"nan": [], "constant": [], "near_constant": [], "close": [], "outliers": []}


def test_near_constant_frames_are_notes_unless_strict(small_datasets, tmp_path, capsys):
    """The Well's script flags only exactly constant frames; ours also finds frames uniform to 1e-5 (a note, a
    problem with ``--strict``)."""
    target = tmp_path / "advdiff2d"
    shutil.copytree(small_datasets / "advdiff2d", target)
    path = sorted((target / "data" / "train").glob("*.hdf5"))[0]
    with h5py.File(path, "r+") as f:
        data = f["t0_fields"]["u"]
        data[1, 6:] = 0.25 * (1 + 1e-6 * np.sin(np.arange(data.shape[-1])))  # uniform to 1e-5, not exactly
    notes: list[str] = []
    assert validate_dataset(target, notes=notes) == []
    expected = "trajectory 1: 6 near-constant frames (allclose to the first value) (steps 6-11)"
    assert any(expected in n for n in notes), notes
    strict = validate_dataset(target, strict=True)
    assert len(strict) == 1 and "near-constant frames" in strict[0]
    assert main(["validate", str(target)]) == 0 and main(["validate", "--strict", str(target)]) == 1


def test_a_uniform_first_frame_is_not_flagged_and_equal_means_are_no_outliers():
    """The Well's script skips t = 0 (many files start uniform); a conserved mean is no outlier."""
    frames = frames_with("none")
    frames[0] = 0.0
    frames -= frames.mean(axis=1, keepdims=True)  # every frame's mean 0 to rounding
    found = check_trajectory(frames)
    assert found["constant"] == [] and found["outliers"] == []


def test_every_exact_set_passes(small_datasets):
    for name in EXACT_PDES:
        notes: list[str] = []
        assert validate_dataset(small_datasets / name, notes=notes) == [], name


def test_validate_reports_a_dead_trajectory_and_fails(small_datasets, tmp_path, capsys):
    target = tmp_path / "advdiff2d"
    shutil.copytree(small_datasets / "advdiff2d", target)
    path = sorted((target / "data" / "train").glob("*.hdf5"))[0]
    with h5py.File(path, "r+") as f:
        data = f["t0_fields"]["u"]
        data[1, 6:] = 0.25  # trajectory 1 frozen in a uniform state from frame 6 on
    problems = validate_dataset(target)
    assert len(problems) == 1 and "field 'u' trajectory 1: 6 constant frames (steps 6-11)" in problems[0]
    assert main(["validate", str(target)]) == 1
    out = capsys.readouterr().out
    assert "constant frames" in out and "note:" in out  # the frozen frames are also close to each other
    report = check_file(path)
    assert list(report.close) == [("u", 1)] and report.close[("u", 1)] == [7, 8, 9, 10, 11]


@pytest.mark.slow  # minutes of simulation at the CPU size (the default suite keeps under 10 minutes)
def test_a_gray_scott_glider_that_would_die_is_redrawn():
    """Gliders (F = 0.014, k = 0.054) from the Well's random Fourier series about the trivial state: the first
    trajectory `generate-replica --seed 42` plans decays to A = 1, B = 0 (the checker flags its late frames); the
    replica family redraws it, and the trajectory it keeps passes (the CPU size, 128^2 and 101 frames; the slow test
    below covers every set)."""
    family = REPLICAS["gray_scott_reaction_diffusion"]
    gliders = family.parameter_sets(False)[0]
    initial = dict(plan_trajectories(family, [gliders], family.cpu_size.n_traj_per_set, 42)[0][1][0])
    assert initial["kind"] == 0
    times = np.arange(family.cpu_size.n_steps) * family.frame_dt
    grid = gray_scott.square_grid(128)
    a0, b0 = gray_scott.random_fourier_state(np.random.default_rng(int(initial["seed"])), grid, feed=0.014, kill=0.054)
    _, b = gray_scott.simulate_gray_scott(torch.as_tensor(a0), torch.as_tensor(b0), 0.014, 0.054, times, grid)
    dead = check_trajectory(b.numpy().astype(np.float32).reshape(len(times), -1, 1))
    assert len(dead["constant"] + dead["near_constant"]) > 10 and gray_scott.decays_to_trivial_state(b, 0.014, 0.054)
    kept = family.simulate(gliders, initial, (128, 128), times)
    assert initial["redraws"] >= 1
    for field in kept.values():
        found = check_trajectory(field.astype(np.float32).reshape(len(times), -1, 1))
        assert found["constant"] == [] and found["near_constant"] == []


@pytest.mark.slow  # minutes of simulation at the CPU size (the default suite keeps under 10 minutes)
def test_shear_flow_layers_of_the_wells_code_keep_a_pressure_at_reynolds_1e4():
    """Knobs (n_shear 2, n_blobs 4, width 0.5) at Re 1e4, Sc 1 on 64 x 128 points, 200 frames. Our first replica's
    initial state (the README's layers ``tanh(5 (y - y_k) / (n_shear w))``, blobs ``sin(2 pi n_blobs x) exp(-25 (y -
    y_k)^2 / w^2)``) relaxes to parallel shear, whose pressure vanishes, and the checker flags the late pressure
    frames as constant; the family's initial state (the Well's generating code) keeps a pressure."""
    import math

    from well_upao.families.replicas import shear_flow

    family = REPLICAS["shear_flow"]
    times = np.arange(family.cpu_size.n_steps) * family.frame_dt
    shape = (64, 128)  # cheaper than the CPU default; the relaxation does not depend on the grid
    grid = shear_flow.shear_grid(*shape)
    x, y = grid.mesh()
    n_shear, n_blobs, width = 2, 4, 0.5
    ux, uy = torch.full_like(x, 0.5), torch.zeros_like(x)
    for k, centre in enumerate([-1 + (k + 0.5) * 2 / n_shear for k in range(n_shear)]):
        for image in range(-4, 5):
            offset = y - centre - 2.0 * image
            ux = ux + 0.5 * (-1) ** (k + 1) * torch.tanh(5 * offset / (n_shear * width))
            uy = uy + 0.1 * torch.sin(2 * math.pi * n_blobs * x) * torch.exp(-25 * offset**2 / width**2)
    readme = shear_flow.simulate_shear_flow({"u_x": ux, "u_y": uy, "tracer": ux.clone()}, 1e4, 1.0, times, grid)
    pressure = readme["pressure"].numpy().astype(np.float32)
    found = check_trajectory(pressure.reshape(len(times), -1, 1))
    assert len(found["constant"] + found["near_constant"]) > 5
    knobs = {"n_shear": float(n_shear), "n_blobs": float(n_blobs), "width": width}
    ours = family.simulate({"Reynolds": 1e4, "Schmidt": 1.0}, knobs, shape, times)
    found = check_trajectory(ours["pressure"].astype(np.float32).reshape(len(times), -1, 1))
    assert found["constant"] == [] and found["near_constant"] == []


@pytest.mark.slow
def test_every_gray_scott_set_keeps_its_patterns_at_the_cpu_default(tmp_path):
    """`well-upao generate-replica --dataset gray_scott_reaction_diffusion` (seed 42, 128^2, 101 frames, 6 sets x
    10): the Well's data checks find no constant frame (measured: 5-10 minutes on one core)."""
    request = ReplicaRequest("gray_scott_reaction_diffusion", tmp_path, seed=42, workers=1)
    generate_replica(request, progress=False)
    assert validate_dataset(tmp_path / "gray_scott_reaction_diffusion", strict=True) == []


@pytest.mark.slow
@pytest.mark.parametrize("name", ["shear_flow", "rayleigh_benard"])
def test_the_other_replicas_pass_the_data_checks_at_the_cpu_default(tmp_path, name):
    """The CPU defaults of shear flow (layers as the Well's code: no relaxation to a pressure-free parallel flow at
    Reynolds 1e4) and Rayleigh-Benard pass the Well's data checks."""
    generate_replica(ReplicaRequest(name, tmp_path, seed=42, workers=1), progress=False)
    assert validate_dataset(tmp_path / name, strict=True) == []
