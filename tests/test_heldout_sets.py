"""The held-out study's solvers and registrations (``benchmarks/studies/heldout_pdes.py``, ``heldout_solvers.py``).

Each solver is checked against values it does not produce: the growth rate of a small Fourier mode, which the
linearised equation gives in closed form (``sigma(k)`` written here from the equation, not from the solver); the
uniform solution of the reaction ODE in closed form (Allen-Cahn, Swift-Hohenberg at g = 0); the frames' time
derivative (fourth-order differences of the stored frames) against the equation's right-hand side evaluated here by
an independent spectral implementation; the temporal convergence order of each scheme on a short nonlinear run. Each
has a negative control: a coefficient 10% off, a sign flipped, or a scheme with one stage broken must fail it. The
registered PDEs (the project's residual) are checked with ``well_upao.physics.negative_control`` on solver frames.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "studies"))  # the user module is imported by name, as --imports does

import heldout_pdes as hp  # noqa: E402
import heldout_solvers as hs  # noqa: E402

from well_upao.families.base import TrajectoryParameters  # noqa: E402
from well_upao.physics import Grid  # noqa: E402
from well_upao.physics.negative_control import ObservedWindow, negative_controls, residual_norms  # noqa: E402

NAMES = list(hp.FAMILIES)
#: resolved parameters and test-sized solver grids (the stored sets use the families' defaults)
PARAMS = {
    "heldout_allen_cahn": {"epsilon": 0.25},
    "heldout_kuramoto_sivashinsky": {"nu": 0.8},
    "heldout_swift_hohenberg": {"r": 0.3, "g": 0.6},
}
SIZE = {"heldout_allen_cahn": 32, "heldout_kuramoto_sivashinsky": 32, "heldout_swift_hohenberg": 64}
#: an initial amplitude in the nonlinear regime, so that no spin-up is needed to make every term matter
RMS = {"heldout_allen_cahn": 0.5, "heldout_kuramoto_sivashinsky": 1.0, "heldout_swift_hohenberg": 0.5}


def family(name: str, stepper=None, **mutation):
    """The family of ``name`` without spin-up, at the test's amplitude; ``mutation``: ``scale={param: factor}``
    (the solver is given the wrong coefficient) or ``flip_nonlinear=True`` (the sign of ``N`` flipped)."""
    base = type(hp.FAMILIES[name])
    scale = mutation.get("scale", {})
    sign = -1.0 if mutation.get("flip_nonlinear") else 1.0

    class Tested(base):
        rms = RMS[name]

        def make_stepper(self, grid, scalars, h):
            wrong = {k: v * scale.get(k, 1.0) for k, v in scalars.items()}
            inner = self.nonlinear(grid, wrong)
            kind = stepper or self.stepper
            return kind(self.linear(grid, wrong), lambda v: sign * inner(v), h)

    return Tested(spin_up=0.0)


def parameters(name: str, **scalars: float) -> TrajectoryParameters:
    return TrajectoryParameters({**PARAMS[name], **scalars}, {"seed": np.array([3.0])})


# ------------------------------------------------------------------ an independent right-hand side
def right_hand_side(name: str, u: np.ndarray, p: dict[str, float], length: float) -> np.ndarray:
    """``d_t u`` of each equation as written in ``heldout_pdes``' docstring, by full complex FFTs of ``u``
    ``(..., n, n)``."""
    n = u.shape[-1]
    k = 2 * math.pi * np.fft.fftfreq(n, d=length / n)
    kx, ky = np.meshgrid(k, k, indexing="ij")
    k2 = kx**2 + ky**2
    spectrum = np.fft.fft2(u)
    lap = np.fft.ifft2(-k2 * spectrum).real
    bilap = np.fft.ifft2(k2**2 * spectrum).real
    if name == "heldout_allen_cahn":
        return p["epsilon"] ** 2 * lap + u - u**3
    if name == "heldout_kuramoto_sivashinsky":
        grad2 = np.fft.ifft2(1j * kx * spectrum).real ** 2 + np.fft.ifft2(1j * ky * spectrum).real ** 2
        return -lap - p["nu"] * bilap - 0.5 * (grad2 - grad2.mean(axis=(-2, -1), keepdims=True))
    return p["r"] * u - (u + 2 * lap + bilap) + p["g"] * u**2 - u**3


def resolved(f: np.ndarray) -> np.ndarray:
    """``f`` ``(..., n, n)`` with its Fourier modes ``|m_i| > n/3`` removed: the modes a 2/3-rule solver evolves
    (the others stay zero in its state, while a product on the grid fills them)."""
    n = f.shape[-1]
    keep = np.abs(np.fft.fftfreq(n, d=1.0 / n)) <= n / 3
    return np.fft.ifft2(np.fft.fft2(f) * np.outer(keep, keep)).real


def equation_mismatch(name: str, fam, p: TrajectoryParameters) -> float:
    """``||d_t u - F(u)|| / ||d_t u||`` on the resolved modes over 8 frames 0.002 apart, ``d_t u`` by fourth-order
    central differences of the solver's frames (its own grid, 8 steps a frame)."""
    dt = 0.002
    frames = fam.solve(p, SIZE[name], 0.05 + np.arange(8) * dt, steps_per_frame=8)
    rate = (-frames[4:] + 8 * frames[3:-1] - 8 * frames[1:-3] + frames[:-4]) / (12 * dt)
    residual = resolved(rate - right_hand_side(name, frames[2:-2], p.scalars, fam.domain_length))
    return float(np.linalg.norm(residual) / np.linalg.norm(rate))


@pytest.mark.parametrize("name", NAMES)
def test_the_frames_solve_the_equation_as_written_and_a_wrong_coefficient_or_sign_does_not(name):
    p = parameters(name)
    right = equation_mismatch(name, family(name), p)
    assert right < 1e-5, right
    for mutation in [{"scale": {key: 1.1}} for key in PARAMS[name]] + [{"flip_nonlinear": True}]:
        wrong = equation_mismatch(name, family(name, **mutation), p)
        assert wrong > 100 * right, (mutation, wrong, right)


# ------------------------------------------------------------------ closed forms
def growth_rate(name: str, k2: float, p: dict[str, float]) -> float:
    """``sigma`` of a small mode ``e^{sigma t} cos(k x)`` of the linearised equation (about u = 0)."""
    if name == "heldout_allen_cahn":
        return 1.0 - p["epsilon"] ** 2 * k2
    if name == "heldout_kuramoto_sivashinsky":
        return k2 - p["nu"] * k2**2
    return p["r"] - (1.0 - k2) ** 2


def small_mode_growth(name: str, fam, p: dict[str, float], m: tuple[int, int], t: float) -> float:
    """The measured growth rate of ``1e-9 cos(k . x)`` (wave vector ``2 pi m / L``) over ``t``, at steps of 0.01
    (ETDRK4: exact on a linear equation) or 0.001 (SBDF2: second order in the step)."""
    n = SIZE[name]
    grid = hs.SpectralGrid(n, fam.domain_length)
    x = np.arange(n) * fam.domain_length / n
    X, Y = np.meshgrid(x, x, indexing="ij")
    unit = 2 * math.pi / fam.domain_length
    u0 = 1e-9 * np.cos(unit * (m[0] * X + m[1] * Y))
    h = 0.001 if fam.stepper is hs.Sbdf2 else 0.01
    stepper = fam.make_stepper(grid, p, h)
    u = grid.to_grid(hs.integrate(stepper, grid.to_spectral(u0)[None], np.array([0.0, t]), round(t / h))[-1][0])
    return math.log(np.sum(u * u0) / np.sum(u0 * u0)) / t


@pytest.mark.parametrize("name", NAMES)
def test_a_small_mode_grows_at_the_linearised_rate_and_a_wrong_coefficient_misses_it(name):
    p = PARAMS[name]
    unit = 2 * math.pi / hp.FAMILIES[name].domain_length
    for m in [(1, 0), (2, 1), (3, 2)]:
        expected = growth_rate(name, unit**2 * (m[0] ** 2 + m[1] ** 2), p)
        measured = small_mode_growth(name, family(name), p, m, 1.0)
        assert abs(measured - expected) < 1e-5 * max(1.0, abs(expected)), (m, measured, expected)
    linear_keys = {"heldout_allen_cahn": "epsilon", "heldout_kuramoto_sivashinsky": "nu"}.get(name, "r")
    m = (2, 1)
    expected = growth_rate(name, unit**2 * 5, p)
    wrong = small_mode_growth(name, family(name, scale={linear_keys: 1.1}), p, m, 1.0)
    assert abs(wrong - expected) > 1e-3, (wrong, expected)


def uniform_solution(a: float, u0: float, t: float) -> float:
    """``u' = a u - u^3``, ``u(0) = u0``: ``u = u0 e^{a t} / sqrt(1 + u0^2 (e^{2 a t} - 1) / a)``."""
    return u0 * math.exp(a * t) / math.sqrt(1.0 + u0**2 * math.expm1(2 * a * t) / a)


@pytest.mark.parametrize(
    ("name", "a", "u0", "t"), [("heldout_allen_cahn", 1.0, 0.3, 1.0), ("heldout_swift_hohenberg", 0.3 - 1.0, 0.8, 2.0)]
)
@pytest.mark.parametrize("mutation", [{}, {"flip_nonlinear": True}])
def test_a_uniform_state_follows_the_reaction_ode_in_closed_form(name, a, u0, t, mutation):
    """A uniform state solves ``u' = a u - u^3`` (``a = 1`` for Allen-Cahn, ``r - 1`` for Swift-Hohenberg at
    ``g = 0``); with ``N`` flipped (``a u + u^3``) it does not."""
    p = dict(PARAMS[name], **({"g": 0.0} if "g" in PARAMS[name] else {}))
    fam = family(name, **mutation)
    grid = hs.SpectralGrid(8, fam.domain_length)
    h = 0.001 if fam.stepper is hs.Sbdf2 else 0.01
    stepper = fam.make_stepper(grid, p, h)
    v = hs.integrate(stepper, grid.to_spectral(np.full((8, 8), u0))[None], np.array([0.0, t]), round(t / h))[-1]
    error = abs(grid.to_grid(v[0]).mean() - uniform_solution(a, u0, t))
    if mutation:
        assert error > 1e-2, error
    else:
        assert error < 1e-5 if fam.stepper is hs.Sbdf2 else error < 1e-9, error


# ------------------------------------------------------------------ temporal order
class BrokenEtdrk4(hs.Etdrk4):
    """ETDRK4 with its third stage ``c = E2 a + Q (2 N(b) - N(v))`` made ``E2 a + Q N(b)``."""

    def stages(self, v):
        nv = self.nonlinear(v)
        a = self.E2 * v + self.Q * nv
        na = self.nonlinear(a)
        nb = self.nonlinear(self.E2 * v + self.Q * na)
        return nv, na, nb, self.nonlinear(self.E2 * a + self.Q * nb)


class FirstOrderSbdf2(hs.Sbdf2):
    """SBDF2 with ``N(v)`` in place of its extrapolation ``2 N(v) - N(v_prev)``."""

    def extrapolated(self, n_now, n_before):
        return n_now


def observed_orders(name: str, stepper=None) -> np.ndarray:
    """``log2(e(h) / e(h/2))`` at ``h = 1/8, 1/16, 1/32`` over ``t = 1`` against ``h = 1/512``, on a 32-point grid
    (Swift-Hohenberg on 64 points has modes with ``h |L|`` of 1 to 4 at these steps, where ETDRK4's error is of
    stiff order about 3: measured 3.2 and 3.3 from h = 1/32 to 1/128, then 4 again as ``h |L|`` falls)."""
    fam = family(name, stepper=stepper)
    p = parameters(name)
    n = 32
    reference = fam.solve(p, n, np.array([0.0, 1.0]), steps_per_frame=512)[-1]
    errors = [
        np.abs(fam.solve(p, n, np.array([0.0, 1.0]), steps_per_frame=m)[-1] - reference).max() for m in (8, 16, 32, 64)
    ]
    return np.log2(np.array(errors[:-1]) / np.array(errors[1:]))


@pytest.mark.parametrize("name", NAMES)
def test_each_scheme_converges_at_its_order_and_a_broken_stage_does_not(name):
    order = hp.FAMILIES[name].stepper.order
    assert np.all(observed_orders(name)[-2:] > order - 0.4), observed_orders(name)
    broken = FirstOrderSbdf2 if order == 2 else BrokenEtdrk4
    assert np.all(observed_orders(name, broken)[-2:] < order - 0.9)


# ------------------------------------------------------------------ grids and restriction
def test_restriction_keeps_the_coarse_grids_modes_exactly_and_drops_the_rest():
    x = np.arange(64) * 2 * math.pi / 64
    X, Y = np.meshgrid(x, x, indexing="ij")
    kept = np.cos(3 * X) * np.sin(2 * Y) + 0.5 * np.cos(7 * X + 5 * Y)
    dropped = np.cos(16 * X) + np.sin(20 * Y)  # at or beyond the 32-point grid's Nyquist mode
    coarse = hs.restrict(kept + dropped, 32)
    np.testing.assert_allclose(coarse, (kept)[::2, ::2], atol=1e-13)
    assert np.abs(hs.restrict(kept + dropped, 32) - (kept + dropped)[::2, ::2]).max() > 0.5
    with pytest.raises(ValueError, match="coarser grid"):
        hs.restrict(coarse, 64)


def test_a_seed_gives_the_same_initial_field_on_every_grid_that_resolves_it():
    fine = hs.SpectralGrid(64, 2 * math.pi)
    coarse = hs.SpectralGrid(32, 2 * math.pi)
    a = hp.smooth_random_state(np.random.default_rng(5), fine, 6.0, 0.2)
    b = hp.smooth_random_state(np.random.default_rng(5), coarse, 6.0, 0.2)
    np.testing.assert_allclose(a[::2, ::2], b, atol=1e-12)
    assert abs(np.sqrt(np.mean(a**2)) - 0.2) < 1e-12 and abs(a.mean()) < 1e-12
    other = hp.smooth_random_state(np.random.default_rng(6), coarse, 6.0, 0.2)
    assert np.abs(other - b).max() > 0.1
    with pytest.raises(ValueError, match="cannot hold the modes up to"):  # m = 6 does not fit 12 points
        hp.smooth_random_state(np.random.default_rng(5), hs.SpectralGrid(12, 2 * math.pi), 6.0, 0.2)


# ------------------------------------------------------------------ the registered PDEs (the project's residual)
@pytest.mark.parametrize("name", NAMES)
def test_the_registered_pde_has_a_low_floor_on_solver_frames_and_every_mutation_lifts_it(name):
    """Stored frames (solver grid twice as fine, Fourier-truncated) 0.01 apart: the registered PDE's relative
    residual (spectral, central) is small, and every flipped or removed term and every coefficient x 1.1 raises it
    at least 30x (the project asks 3x)."""
    fam = family(name)
    fam.spin_up = 2.0
    n = SIZE[name]
    frames = fam.evaluate(parameters(name), fam.grid_axes(n), np.arange(8) * 0.01)["u"]
    slot = hp.SLOTS[name]["u"]
    dx = fam.domain_length / n
    scalars = {k: torch.tensor([v]) for k, v in PARAMS[name].items()}
    window = ObservedWindow({slot: torch.tensor(frames[None])}, 0.01, Grid((dx, dx), (True, True)), scalars)
    bound = window.bound(hp.PDES[name], "central")
    floor = residual_norms(bound, window, relative=True)["u"]
    assert floor < 1e-3, floor
    weak = [str(c) for c in negative_controls(bound, window, factor=1.1) if c.ratio < 30]
    assert not weak, weak


def test_the_datasets_are_registered_with_their_pde_family_and_slots():
    from well_upao.data.datasets import get_dataset
    from well_upao.physics import pde_for_dataset

    for name in NAMES:
        spec = get_dataset(name)
        assert spec.family is hp.FAMILIES[name] and pde_for_dataset(name) is hp.PDES[name]
        assert spec.origin == "user" and set(spec.family.scalar_names) == set(hp.PDES[name].parameters)


def test_a_generated_set_has_its_splits_and_each_trajectory_is_remade_from_its_file(tmp_path):
    from well_upao.data.generate import GenerationRequest, generate_dataset
    from well_upao.data.validate import validate_dataset
    from well_upao.data.well_format import read_trajectory_parameters

    name = "heldout_allen_cahn"
    request = GenerationRequest(
        pde=name, out=tmp_path, n_traj=6, resolution=16, n_steps=6, valid_fraction=1 / 3, test_fraction=1 / 6
    )
    summary = generate_dataset(request, progress=False)
    assert summary.split_sizes == {"train": 3, "valid": 2, "test": 1} and not summary.test_mirrors_valid
    assert validate_dataset(tmp_path / name) == []
    fam = hp.FAMILIES[name]
    (path,) = (tmp_path / name / "data" / "valid").glob("*.hdf5")
    with h5py.File(path) as f:
        stored = np.asarray(f["t0_fields"]["u"][1], dtype=np.float64)
        params = read_trajectory_parameters(f, fam, 1)
        time = np.asarray(f["dimensions"]["time"])
    ((_, low, high),) = fam.ranges
    assert low <= params.scalars["epsilon"] <= high
    remade = fam.evaluate(params, fam.grid_axes(16), time)["u"]
    np.testing.assert_allclose(stored, remade, rtol=0, atol=1e-6)


# ------------------------------------------------------------------ the generation script
def test_the_script_generates_resumes_and_refuses_a_folder_it_did_not_make(tmp_path, capsys):
    import heldout_sets

    figure = tmp_path / "frames.png"
    heldout_sets.main(
        [
            "--out",
            str(tmp_path),
            "--only",
            "heldout_allen_cahn",
            "--quick",
            "--tables",
            "--verify",
            "--figure",
            str(figure),
        ]
    )
    first = capsys.readouterr().out
    assert figure.read_bytes().startswith(b"\x89PNG")
    assert "trajectory 0 re-made, largest difference 0\n" in first
    assert first.startswith("command: heldout_sets.py --out ")
    files = sorted((tmp_path / "heldout_allen_cahn" / "data").rglob("*.hdf5"))
    assert [f.parent.name for f in files] == ["test", "train", "valid"]
    record = json.loads((tmp_path / "heldout_records" / "heldout_allen_cahn.generation.json").read_text())
    assert record["split_sizes"] == {"train": 3, "valid": 2, "test": 1} and record["solver"] == "Sbdf2"
    assert "| heldout_allen_cahn | `d_t u = epsilon^2 Lap u + u - u^3` | epsilon in [0.1, 0.15] | 16^2" in first
    stamps = [f.stat().st_mtime_ns for f in files]

    heldout_sets.main(["--out", str(tmp_path), "--only", "heldout_allen_cahn", "--quick"])
    assert "generated already" in capsys.readouterr().out
    assert [f.stat().st_mtime_ns for f in files] == stamps
    with pytest.raises(SystemExit, match="records other sizes"):
        heldout_sets.main(["--out", str(tmp_path), "--only", "heldout_allen_cahn"])

    (tmp_path / "heldout_records" / "heldout_allen_cahn.generation.json").unlink()
    with pytest.raises(SystemExit, match="exists without this script's record"):
        heldout_sets.main(["--out", str(tmp_path), "--only", "heldout_allen_cahn", "--quick"])


def test_the_smoke_test_keeps_the_rows_true_errors_and_not_the_rules_expected_errors():
    import heldout_sets

    row = {
        "name": "extrap2", "mean_vrmse_well": 0.1, "mean_vrmse_paper": 0.2, "seconds_per_prediction": 2e-5,
        "rollout_windows": {"6:12": 0.3, "13:30": 0.4},
    }  # fmt: skip
    full = {
        "dataset": "d", "split": "valid", "stride": 2, "dt": 0.5, "history": 16, "n_trajectories": 6,
        "rollout_steps_run": 30, "rollout_starts": 3, "residual_floor": {"lowest": {}}, "scores": [row],
        "expected": {"one_step": {"extrap2": {"value": 0.1, "low": 0.05, "high": 0.2}}}, "trust": {"one_step": {}},
    }  # fmt: skip
    compact = heldout_sets.compact_evaluation(full)
    kept = {"dataset", "split", "stride", "dt", "history", "n_trajectories", "rollout_steps_run", "rollout_starts"}
    assert set(compact) == kept | {"residual_floor", "rows"} and '"high"' not in json.dumps(compact)
    assert compact["rows"]["extrap2"] == {
        "one_step_well": 0.1, "one_step_paper": 0.2, "6:12": 0.3, "13:30": 0.4, "ms_per_prediction": 0.02,
    }  # fmt: skip
