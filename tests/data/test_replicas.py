"""``generate-replica``: The Well's layout field for field, the Well's file names, our PDE entries on the data."""

from __future__ import annotations

import json
import math
import re

import h5py
import numpy as np
import pytest
import torch
import yaml

from well_upao.axes import uniform_step
from well_upao.cli import main
from well_upao.data import stats as stats_module
from well_upao.data.generate import GenerationError
from well_upao.data.replicas import ReplicaRequest, generate_replica
from well_upao.data.source import REPLICA_ATTRIBUTE, WellSource, read_layout
from well_upao.data.validate import validate_dataset
from well_upao.families.replicas.families import REPLICAS, exponent_tag, prandtl_tag
from well_upao.families.replicas.rayleigh_benard import ChannelGrid, simulate_rayleigh_benard
from well_upao.physics import Grid, Stencils, get_pde
from well_upao.physics.floor import relative_residuals
from well_upao.physics.negative_control import ObservedWindow, negative_controls
from well_upao.physics.residual import residuals_and_scales
from well_upao.physics.stencils import interior

#: tiny replicas: (grid, frames, parameter sets)
TINY = {
    "gray_scott_reaction_diffusion": ((32, 32), 12, [0, 2]),
    "shear_flow": ((64, 128), 12, [0]),  # the layers of the Well's code are thin: 32 x 64 under-resolves them
    "rayleigh_benard": ((32, 16), 12, [0]),
    "active_matter": ((16, 16), 12, [2]),  # 16 orientations too
}


@pytest.fixture(scope="module")
def replicas(tmp_path_factory):
    """The tiny replicas, their statistics reduced two frames at a time (as a CPU-size replica's 64 x 64 frames are
    reduced 16 at a time), so the increments across chunk boundaries are exercised."""
    base = tmp_path_factory.mktemp("replicas")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stats_module, "CHUNK_BYTES", 1)
        for name, (shape, n_steps, sets) in TINY.items():
            request = ReplicaRequest(name, base, shape=shape, n_steps=n_steps, n_traj_per_set=3, sets=sets, seed=3)
            generate_replica(request, progress=False)
    return base


def test_parameter_sets_and_file_names_are_the_wells():
    assert [exponent_tag(v) for v in (1e4, 5e4, 5e5, 0.1, 0.2, 1.0, 2.0, 10.0)] == [
        "1e4", "5e4", "5e5", "1e-1", "2e-1", "1e0", "2e0", "1e1",
    ]  # fmt: skip
    assert [prandtl_tag(v) for v in (0.1, 0.5, 1.0, 2.0, 10.0)] == ["1e-1", "5e-1", "1", "2", "10"]
    counts = {name: len(family.parameter_sets(True)) for name, family in REPLICAS.items()}
    assert counts == {"gray_scott_reaction_diffusion": 6, "shear_flow": 28, "rayleigh_benard": 35, "active_matter": 45}
    stems = {name: family.file_stem(family.parameter_sets(True)[0]) for name, family in REPLICAS.items()}
    assert stems == {
        "gray_scott_reaction_diffusion": "gray_scott_reaction_diffusion_gliders_F_0.014_k_0.054",
        "shear_flow": "shear_flow_Reynolds_1e4_Schmidt_1e-1",
        "rayleigh_benard": "rayleigh_benard_Rayleigh_1e6_Prandtl_1e-1",
        "active_matter": "active_matter_L_10.0_zeta_1.0_alpha_-1.0",  # the Well's names, e.g. its notebook's
    }
    active = REPLICAS["active_matter"]
    assert active.file_stem({"L": 10.0, "zeta": 17.0, "alpha": -4.0}) == "active_matter_L_10.0_zeta_17.0_alpha_-4.0"
    assert {(s["zeta"], s["alpha"]) for s in active.parameter_sets(True)} == {
        (z, a) for z in (1, 3, 5, 7, 9, 11, 13, 15, 17) for a in (-1, -2, -3, -4, -5)
    }


def test_every_parameter_set_is_a_file_of_the_wells_registry():
    """Every full parameter set's file name is one the Well ships (its installed ``the_well/utils/registry.yaml``
    lists every file of every split): the parameter tables (Gray-Scott's F and k per pattern, shear flow's Reynolds
    and Schmidt, Rayleigh-Benard's Rayleigh and Prandtl, active matter's zeta and alpha) are checked against the
    Well's own names, not against themselves."""
    import importlib.resources

    import yaml

    registry = yaml.safe_load((importlib.resources.files("the_well") / "utils" / "registry.yaml").read_text())
    for name, family in REPLICAS.items():
        urls = [url for split in ("train", "valid", "test") for url in registry[name][split]]
        shipped = {url.rsplit("/", 1)[-1].removesuffix(".hdf5") for url in urls}
        stems = {family.file_stem(s) for s in family.parameter_sets(True)}
        assert stems == shipped, (name, sorted(stems ^ shipped)[:6])


@pytest.mark.parametrize("name", sorted(TINY))
def test_replica_files_have_the_wells_layout_and_validate(replicas, name):
    family = REPLICAS[name]
    shape, n_steps, sets = TINY[name]
    assert validate_dataset(replicas / name) == []
    stems = sorted(family.file_stem(family.parameter_sets(False)[i]) + ".hdf5" for i in sets)
    for split in ("train", "valid", "test"):
        assert sorted(p.name for p in (replicas / name / "data" / split).glob("*.hdf5")) == stems
    path = replicas / name / "data" / "train" / stems[0]
    with h5py.File(path, "r") as f:
        assert f.attrs["dataset_name"] == name and f.attrs["n_trajectories"] == 1  # 3 per set: 1 / 1 / 1
        assert list(f.attrs["simulation_parameters"]) == list(family.scalar_names)
        for scalar in family.scalar_names:
            assert f["scalars"][scalar].shape == () and f["scalars"][scalar].dtype == np.float32
            assert not f["scalars"][scalar].attrs["sample_varying"]
            assert isinstance(f.attrs[scalar], float | np.floating)
        assert f["dimensions"]["time"].dtype == np.float32  # as the Well stores it (replica version 3)
        step = uniform_step(f["dimensions"]["time"][()], np.float32)
        assert abs(step / family.frame_dt - 1) < 1e-6
        assert sorted(f["boundary_conditions"]) == sorted(
            f"{axis}_{kind.lower()}" for axis, kind in zip("xy", family.boundary_types, strict=True)
        )
        names = {g: sorted(f[g].attrs["field_names"]) for g in ("t0_fields", "t1_fields", "t2_fields")}
        assert names == {
            "t0_fields": sorted(s.name for s in family.fields if s.order == 0),
            "t1_fields": sorted(s.name for s in family.fields if s.order == 1),
            "t2_fields": ["D", "E"] if name == "active_matter" else [],
        }
        first = family.fields[0].name
        assert f["t0_fields"][first].shape == (1, n_steps, *shape) and f["t0_fields"][first].dtype == np.float32
        if name == "active_matter":  # tensors as the Well's (n, T, x, y, 2, 2), coordinates i L / N
            assert f["t2_fields"]["D"].shape == (1, n_steps, *shape, 2, 2)
            assert np.allclose(f["dimensions"]["x"][:], np.arange(shape[0]) * 10 / shape[0])
            assert list(f["scalars"].attrs["field_names"]) == ["L", "zeta", "alpha"]
    info = read_layout(path).replica
    expected_resolution = [*shape, shape[0]] if name == "active_matter" else list(shape)  # + orientations
    assert info["resolution"] == expected_resolution and info["version"] >= 1 and len(info["initial_conditions"]) == 1
    assert "generate-replica" in info["generator"] and REPLICA_ATTRIBUTE == "well_upao_replica"
    stats = yaml.safe_load((replicas / name / "stats.yaml").read_text())
    assert set(stats) == {"mean", "std", "rms", "mean_delta", "std_delta", "rms_delta"}
    assert set(stats["mean"]) == {s.name for s in family.fields}
    if name == "active_matter":  # the Well's shapes: nested 2 x 2 for tensors; tr D = c holds for the means
        assert np.shape(stats["std"]["E"]) == (2, 2) and np.shape(stats["mean"]["velocity"]) == (2,)
        assert np.trace(stats["mean"]["D"]) == pytest.approx(stats["mean"]["concentration"], rel=1e-6)
    # every scalar field's statistics against numpy over the train files (float32 as stored; the generator reduces
    # the float64 simulation, hence the tolerance), the increments' included
    train = sorted((replicas / name / "data" / "train").glob("*.hdf5"))
    for spec in (s for s in family.fields if s.order == 0):
        frames = []
        for train_file in train:
            with h5py.File(train_file) as f:
                frames.append(f["t0_fields"][spec.name][:].astype(np.float64))
        values = np.concatenate(frames)
        deltas = np.diff(values, axis=1)
        for key, expected in (("mean", values.mean()), ("std", values.std()), ("std_delta", deltas.std())):
            scale = values.std() if key != "std_delta" else deltas.std()
            assert stats[key][spec.name] == pytest.approx(expected, abs=1e-3 * scale), (spec.name, key)


def test_gray_scott_and_shear_flow_satisfy_our_pde_entries(replicas):
    """Relative residuals (spectral derivatives, Crank-Nicolson between the Well's frames) of our registry's
    equations on the replicas. Measured on these sizes: Gray-Scott 0.4-0.8% at the Well's 10 s frames (the time
    scheme's error), shear flow 2-5e-3 on momentum and tracer and ~1e-6 on continuity (float32 storage).
    Negative controls on the same frames: every Gray-Scott term flipped or removed, each coefficient doubled and the
    two diffusivities exchanged raise the residual at least 3x (measured: 4.0x at the least, delta_B doubled)."""
    gray_scott = WellSource(replicas, "gray_scott_reaction_diffusion")
    pde = get_pde("gray_scott_reaction_diffusion")
    swap = {"delta_A <-> delta_B": {"delta_A": 1e-5, "delta_B": 2e-5}}
    for path in gray_scott.files:
        observed = gray_scott.read_frames(path, range(4, 12))
        floors = relative_residuals(observed, pde, "spectral")
        assert max(floors.values()) < 0.02, (path.name, floors)
        window = ObservedWindow(
            observed.fields, float(observed.times[1] - observed.times[0]),
            Grid(observed.spacing, observed.periodic), observed.scalars,
        )  # fmt: skip
        controls = negative_controls(window.bound(pde, "crank_nicolson"), window, 2.0, swap)
        assert all(c.ratio >= 3 for c in controls), (path.name, [str(c) for c in controls if c.ratio < 3])
    shear = WellSource(replicas, "shear_flow")
    shear_pde = get_pde("shear_flow")
    floors = relative_residuals(shear.read_frames(shear.files[0], range(1, 12)), shear_pde, "spectral")
    assert floors["continuity"] < 1e-5 and max(floors.values()) < 0.02, floors
    observed = shear.read_frames(shear.files[0], range(1, 12))
    observed.scalars["Reynolds"] = observed.scalars["Reynolds"] / 100  # a viscosity the data does not have
    wrong = relative_residuals(observed, shear_pde, "spectral")
    assert wrong["momentum_x"] > 5 * floors["momentum_x"] and wrong["tracer"] > 5 * floors["tracer"], wrong


def test_active_matter_replica_satisfies_what_its_files_determine(replicas):
    """On the replica's files: our registry entry (incompressibility; concentration transport with d_T = 0.05,
    spectral derivatives, Crank-Nicolson between the Well's 0.25 frames) and the kinematic relations E = sym grad u,
    tr D = c (to float32 storage); a wrong d_T, or tensors of other frames, fail."""
    from well_upao.physics.active_matter import ActiveMatterFrames, kinematic_residuals

    source = WellSource(replicas, "active_matter")
    path = source.files[0]
    observed = source.read_frames(path, range(4, 12))
    pde = get_pde("active_matter")
    floors = relative_residuals(observed, pde, "spectral")
    assert floors["continuity"] < 1e-6 and floors["concentration"] < 0.05, floors
    ops = Stencils(Grid(observed.spacing, observed.periodic), "spectral")
    old = {k: v[:, :-1] for k, v in observed.fields.items()}
    new = {k: v[:, 1:] for k, v in observed.fields.items()}
    dt = torch.tensor(float(observed.times[1] - observed.times[0]))
    for d_t, at_least in ((0.05, 0.0), (0.5, 3 * floors["concentration"]), (0.0, 1.5 * floors["concentration"])):
        residuals, scales = residuals_and_scales(pde, old, new, dt, {"d_T": d_t}, ops)
        level = float(interior(residuals["concentration"], 2).norm() / interior(scales["concentration"], 2).norm())
        assert level >= at_least and (d_t != 0.05 or level == pytest.approx(floors["concentration"], rel=1e-9))
    with h5py.File(path, "r") as f:
        fields = {name: torch.as_tensor(f[group][name][:], dtype=torch.float64)
                  for group, name in [("t0_fields", "concentration"), ("t1_fields", "velocity"), ("t2_fields", "D"),
                                      ("t2_fields", "E")]}  # fmt: skip
    frames = ActiveMatterFrames(fields["concentration"], fields["velocity"], fields["D"], fields["E"], observed.spacing)
    exact = kinematic_residuals(frames)
    assert max(exact.values()) < 1e-6, exact  # float32 storage
    shifted = ActiveMatterFrames(
        frames.concentration, frames.velocity, frames.D.roll(1, 1), frames.E.roll(1, 1), observed.spacing
    )
    wrong = kinematic_residuals(shifted)
    assert wrong["strain"] > 1e-2 and wrong["trace"] > 1e-4, wrong


@pytest.mark.slow  # a minute of simulation at several resolutions
def test_rayleigh_benard_residual_vanishes_as_the_measurement_resolves_the_flow():
    """Developed convection (Ra 1e6, Pr 10, t = 12): our entry's residual falls as the stored grid is refined, to
    below 1% at 129 points and frames 0.01 apart. At Pr 10 kappa and nu differ by 10x: with the two exchanged in the
    entry the residual at 129 points is about 20% (measured), so the bound also checks which is which."""
    pde = get_pde("rayleigh_benard")
    params = pde.resolve_parameters({"Rayleigh": torch.tensor([1e6]), "Prandtl": torch.tensor([10.0])})
    floors = {}
    for n_z in (33, 129):
        out = simulate_rayleigh_benard(ChannelGrid(128, 32), 1e6, 10.0, np.array([0.0, 12.0, 12.01]), n_z)
        fields = {"buoyancy": out["buoyancy"], "pressure": out["pressure"], "Vx": out["u_x"], "Vy": out["u_z"]}
        old = {k: v[1:2][None] for k, v in fields.items()}
        new = {k: v[2:3][None] for k, v in fields.items()}
        ops = Stencils(Grid((4 / 128, 1 / (n_z - 1)), (True, False)), "spectral")
        residuals, scales = residuals_and_scales(pde, old, new, torch.tensor(0.01), params, ops)
        floors[n_z] = {k: float(interior(residuals[k], 2).norm() / interior(scales[k], 2).norm()) for k in residuals}
    assert max(floors[129].values()) < 0.01, floors
    assert floors[33]["continuity"] / floors[129]["continuity"] > 6, floors  # 16x for 2nd order, 4x per doubling


def test_the_cli_lists_sets_and_refuses_bad_sizes(tmp_path, capsys):
    assert main(["generate-replica", "--dataset", "shear_flow", "--list-sets"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert len(listed) == 6 and listed[0].split() == ["0", "shear_flow_Reynolds_1e4_Schmidt_1e-1"]
    code = main(["generate-replica", "--dataset", "shear_flow", "--out", str(tmp_path), "--n-traj", "2", "--quiet"])
    assert code == 2 and "too small" in capsys.readouterr().err
    code = main(["generate-replica", "--dataset", "shear_flow", "--out", str(tmp_path), "--sets", "9", "--quiet"])
    assert code == 2 and "do not exist" in capsys.readouterr().err
    for sizes in (["16", "24"], ["16", "16", "15"], ["6"]):  # not square, odd orientations, too small
        code = main(["generate-replica", "--dataset", "active_matter", "--out", str(tmp_path), "--resolution", *sizes])
        assert code == 2 and "--resolution N [N [N_theta]]" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing half-written
    family = REPLICAS["active_matter"]
    assert family.check_shape((32,)) == family.check_shape((32, 32)) == (32, 32, 32)
    assert family.check_shape((32, 32, 64)) == (32, 32, 64) and family.spatial_shape((32, 32, 64)) == (32, 32)


def test_replica_metadata_is_json_with_the_initial_conditions(replicas):
    path = next((replicas / "shear_flow" / "data" / "valid").glob("*.hdf5"))
    with h5py.File(path, "r") as f:
        info = json.loads(f.attrs[REPLICA_ATTRIBUTE])
    knobs = info["initial_conditions"][0]
    assert set(knobs) == {"n_shear", "n_blobs", "width"} and math.isfinite(knobs["width"])


#: the replica whose UPAO + NSLoRA run stays in the default suite (the newest solver); the others are slow tests
DEFAULT_SUITE_REPLICA = "active_matter"


@pytest.mark.parametrize(
    "name",
    [n if n == DEFAULT_SUITE_REPLICA else pytest.param(n, marks=pytest.mark.slow) for n in sorted(TINY)],
)
def test_upao_with_nslora_runs_on_each_replica_through_the_harness(replicas, tmp_path, name):
    """The replicas load through the existing ``data=<name>`` configs unchanged."""
    import harness_command as harness

    result = harness.run_harness(
        tmp_path, replicas, "model=na_nslora", "trainer=upao", f"data={name}", "data.n_steps_input=4",
        "model.dims=[2]", *harness.FAST,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert (harness.run_folders(tmp_path)[0] / "checkpoints" / "best.pt").is_file()
    equations = {"gray_scott_reaction_diffusion": 2, "shear_flow": 4, "rayleigh_benard": 4, "active_matter": 2}[name]
    assert f"PDE {name} ({equations} sub-equations)" in result.stderr + result.stdout  # the residual was built


def test_evaluate_and_leaderboard_label_replica_results(replicas, tmp_path, capsys):
    out = tmp_path / "evaluation"
    args = [
        "evaluate",
        "--no-figures",
        "--data",
        "gray_scott_reaction_diffusion",
        "--base-path",
        str(replicas),
        "--history",
        "4",
    ]
    # the solver row left out: the label does not depend on the rows, and it is most of the command's time
    assert main([*args, "--rollout-steps", "1", "--no-solver", "--quiet", "--out", str(out)]) == 0
    assert "data: replica (32x32, well-upao generate-replica v3)" in capsys.readouterr().out
    result = next(out.glob("evaluation_*.json"))
    assert main(["leaderboard", str(result)]) == 0
    board = capsys.readouterr().out
    assert re.search(r"ours: (persistence|extrap\d) \[data: replica \(32x32", board) and "| the Well |" in board


def test_an_unresolved_rayleigh_benard_run_fails_fast_and_leaves_nothing(tmp_path):
    """Ra = 1e10 on a 32 x 8 grid: the CFL step collapses as the run blows up; generation stops with an error that
    says what to do instead of sub-stepping for hours, and the output directory stays empty."""
    sets = REPLICAS["rayleigh_benard"].parameter_sets(True)
    request = ReplicaRequest(
        "rayleigh_benard", tmp_path, shape=(32, 8), n_steps=120, n_traj_per_set=3, full=True, sets=[len(sets) - 1]
    )
    with pytest.raises(GenerationError, match=r"(blew|blowing) up .*Ra = 1e\+10, Pr = 10.*--sets"):
        generate_replica(request, progress=False)
    assert list(tmp_path.iterdir()) == []
