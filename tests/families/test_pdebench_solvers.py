"""The pretraining solvers against what they must conserve or reproduce exactly."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from well_upao.families import pdebench_solvers as solvers
from well_upao.families.simulated import SIMULATED_FAMILIES, smooth_random_field


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_compressible_ns_conserves_mass_momentum_and_energy(dims):
    n = {1: 64, 2: 32, 3: 12}[dims]
    rng = np.random.default_rng(0)
    shape = (n,) * dims

    def field(scale, offset=0.0):
        return torch.as_tensor(offset + scale * smooth_random_field(rng, shape, 3, 1.0))

    rho0, p0, velocity0 = field(0.2, 1.0), field(0.2, 1.0), [field(0.3) for _ in range(dims)]
    times = np.linspace(0, 0.1, 3)
    rho, velocity, p = solvers.compressible_ns(rho0, velocity0, p0, 0.01, 0.01, 1.0 / n, times)
    mass = rho.flatten(1).sum(-1)
    momentum = [(rho * v).flatten(1).sum(-1) for v in velocity]
    energy = (1.5 * p + 0.5 * rho * sum(v**2 for v in velocity)).flatten(1).sum(-1)  # p / (gamma - 1), gamma 5/3
    torch.testing.assert_close(mass, mass[:1].expand_as(mass), rtol=1e-12, atol=0)
    for m in momentum:
        torch.testing.assert_close(m, m[:1].expand_as(m), rtol=0, atol=1e-10 * float(mass[0]))
    torch.testing.assert_close(energy, energy[:1].expand_as(energy), rtol=1e-11, atol=0)
    assert (rho[-1] - rho[0]).abs().max() > 1e-3  # and the flow did move


def acoustic_wave_error(n: int, gamma_in_solver: float | None = None, monkeypatch=None) -> float:
    """L1 error of the density (relative to the amplitude) of a right-going acoustic wave after t = 0.5 on the periodic
    unit interval with ``n`` cells, against linear acoustics: ``rho = 1 + eps s(x - c t)``, ``v = c eps s``,
    ``p = 1 + gamma eps s`` with ``c = sqrt(gamma p0 / rho0)``, gamma = 5/3 (PDEBench's CFD), ``eps = 1e-4`` (the
    nonlinear correction stays below the discretisation error at these grids), inviscid; ``s`` the cell average of
    ``sin 2 pi x``. ``gamma_in_solver``: run the solver with another gamma (the negative control)."""
    gamma, eps, end = 5.0 / 3.0, 1e-4, 0.5
    if gamma_in_solver is not None:
        monkeypatch.setattr(solvers, "GAMMA", gamma_in_solver)
    speed = math.sqrt(gamma)
    x = (torch.arange(n, dtype=torch.float64) + 0.5) / n
    cell_average = math.sin(math.pi / n) / (math.pi / n)  # of sin(2 pi x) over a cell of width 1/n

    def wave(t):
        return eps * cell_average * torch.sin(2 * math.pi * (x - speed * t))

    rho, _, _ = solvers.compressible_ns(
        1 + wave(0), [speed * wave(0)], 1 + gamma * wave(0), 0.0, 0.0, 1.0 / n, np.array([0.0, end])
    )
    return float((rho[-1] - 1 - wave(end)).abs().mean()) / eps


def test_compressible_ns_converges_on_a_smooth_acoustic_wave(monkeypatch):
    """MUSCL-minmod + Rusanov + SSP-RK2: second order away from extrema, the limiter clipping at them; measured
    orders 1.76 and 1.82 from 32 to 64 to 128 cells (1.87 to 256). A solver with the wrong gamma (1.4) sends the
    wave at the wrong speed: its error does not fall with the grid."""
    errors = [acoustic_wave_error(n) for n in (32, 64, 128)]
    orders = [math.log2(errors[i] / errors[i + 1]) for i in range(2)]
    assert all(1.6 < order < 2.2 for order in orders), (errors, orders)
    assert errors[-1] < 5e-3
    wrong = [acoustic_wave_error(n, 1.4, monkeypatch) for n in (64, 128)]
    assert wrong[1] > 0.3 and wrong[1] > 0.9 * wrong[0], wrong


def test_compressible_ns_keeps_a_uniform_state():
    one = torch.ones(16, 16, dtype=torch.float64)
    rho, velocity, _ = solvers.compressible_ns(
        one, [0.3 * one, -0.2 * one], one, 0.01, 0.01, 1 / 16, np.array([0, 0.05])
    )
    torch.testing.assert_close(rho[-1], one)
    torch.testing.assert_close(velocity[0][-1], 0.3 * one)


def test_shallow_water_dam_break_conserves_mass_and_symmetry():
    n = 48
    dx = 5.0 / n
    x = -2.5 + (np.arange(n) + 0.5) * dx
    X, Y = np.meshgrid(x, x, indexing="ij")
    h0 = torch.as_tensor(np.where(np.hypot(X, Y) < 0.5, 2.0, 1.0))
    h, u, _ = solvers.shallow_water(h0, dx, np.array([0.0, 0.3, 0.6]))
    mass = h.flatten(1).sum(-1)
    torch.testing.assert_close(mass, mass[:1].expand_as(mass), rtol=1e-11, atol=0)  # waves stay inside
    torch.testing.assert_close(h[-1], h[-1].flip(0), atol=1e-10, rtol=0)
    torch.testing.assert_close(h[-1], h[-1].T, atol=1e-10, rtol=0)
    torch.testing.assert_close(u[-1], -u[-1].flip(0), atol=1e-10, rtol=0)
    assert h[-1].max() < 2.0 and u[-1].abs().max() > 0.1
    still = solvers.shallow_water(torch.ones(8, 8, dtype=torch.float64), 0.1, np.array([0, 0.5]))
    assert still[1].abs().max() < 1e-14  # a lake at rest stays at rest


def test_vorticity_solver_reproduces_the_decay_of_taylor_green():
    n, nu = 32, 0.05
    x = np.arange(n) / n
    X, Y = np.meshgrid(x, x, indexing="ij")
    k = 2 * math.pi
    w0 = torch.as_tensor(-2 * k * np.cos(k * X) * np.cos(k * Y))  # vorticity of u = cos kx sin ky, v = -sin kx cos ky
    times = np.array([0.0, 0.2])
    u, v = solvers.vorticity_ns(w0, torch.zeros_like(w0), nu, 1.0, times)
    decay = math.exp(-2 * nu * k**2 * times[-1])
    torch.testing.assert_close(u[-1], torch.as_tensor(np.cos(k * X) * np.sin(k * Y)) * decay, atol=1e-6, rtol=0)
    torch.testing.assert_close(v[-1], -torch.as_tensor(np.sin(k * X) * np.cos(k * Y)) * decay, atol=1e-6, rtol=0)


def test_fitzhugh_nagumo_uniform_state_follows_the_ode_at_fourth_order():
    def ode(max_dt):
        u0 = torch.full((8, 8), 0.4, dtype=torch.float64)
        v0 = torch.full((8, 8), 0.1, dtype=torch.float64)
        u, v = solvers.fitzhugh_nagumo(u0, v0, 1e-3, 5e-3, 5e-3, 0.25, np.array([0.0, 1.0]), max_dt=max_dt)
        assert (u[-1] - u[-1][0, 0]).abs().max() < 1e-14  # uniform stays uniform under no-flux walls
        return float(u[-1][0, 0]), float(v[-1][0, 0])

    reference = ode(1e-3)
    errors = [abs(ode(dt)[0] - reference[0]) for dt in (0.2, 0.1)]
    assert 3.5 < math.log2(errors[0] / errors[1]) < 4.5


def test_fitzhugh_nagumo_walls_conserve_diffused_mass():
    """Without reaction the mirrored ghosts give no flux: pure diffusion keeps the total."""
    rng = np.random.default_rng(1)
    u0 = torch.as_tensor(rng.normal(size=(16, 16)))
    zero = torch.zeros_like(u0)
    # u_t = Du Lap u + (u - u^3 - k - v): compare with the same run at Du = 0 to isolate diffusion's effect
    with_diffusion, _ = solvers.fitzhugh_nagumo(u0, zero, 0.01, 0.0, 0.0, 0.125, np.array([0.0, 0.05]))
    without, _ = solvers.fitzhugh_nagumo(u0, zero, 0.0, 0.0, 0.0, 0.125, np.array([0.0, 0.05]))
    assert abs(float(with_diffusion[-1].sum() - without[-1].sum())) < 0.05 * float(
        (with_diffusion[-1] - without[-1]).abs().sum()
    )


@pytest.mark.parametrize("name", list(SIMULATED_FAMILIES))
def test_every_family_produces_finite_fields_of_the_declared_shape(name):
    family = SIMULATED_FAMILIES[name]
    resolution = 32 if family.n_spatial_dims == 1 else 16
    params = family.sample_parameters(np.random.default_rng(3), 0)
    fields = family.evaluate(params, family.grid_axes(resolution), np.arange(3) * family.default_dt, np.float32)
    for spec in family.fields:
        assert fields[spec.name].shape == (3, *family.field_shape(spec, resolution))
        assert np.isfinite(fields[spec.name]).all()


def test_the_families_draw_pdebenchs_fixed_constants():
    """Constants the PDE residuals assume and the families must simulate with (PDEBench's values): shallow water's
    g = 1 (the PDE's constant, not read from the files), FitzHugh-Nagumo's D_u, D_v, k."""
    rng = np.random.default_rng(0)
    assert SIMULATED_FAMILIES["shallow_water_2d"].sample_parameters(rng, 0).scalars["g"] == 1.0
    reaction = SIMULATED_FAMILIES["diffusion_reaction_2d"].sample_parameters(rng, 0).scalars
    assert reaction == {"D_u": 1e-3, "D_v": 5e-3, "k": 5e-3}
