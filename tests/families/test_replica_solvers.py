"""The replica solvers against closed forms, their schemes' convergence orders and the physics they must keep:
Gray-Scott (ETDRK4), periodic shear flow (pseudo-spectral NS + tracer), Rayleigh-Bénard (Fourier x Chebyshev)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from well_upao.families.replicas import chebyshev
from well_upao.families.replicas.gray_scott import (
    gaussian_cluster_state,
    random_fourier_state,
    simulate_gray_scott,
    square_grid,
)
from well_upao.families.replicas.rayleigh_benard import (
    ChannelGrid,
    RayleighBenardSolver,
    simulate_rayleigh_benard,
)
from well_upao.families.replicas.shear_flow import (
    ShearFlowOperators,
    initial_state,
    shear_grid,
    simulate_shear_flow,
)


def observed_order(errors: list[float], ratio: float = 2.0) -> float:
    """Order from the last two errors of a sequence of step sizes shrinking by ``ratio``."""
    return math.log(errors[-2] / errors[-1]) / math.log(ratio)


# ---------------------------------------------------------------------------- Chebyshev helpers
def test_chebyshev_operators_are_exact_on_polynomials():
    n = 12
    z = chebyshev.points(n, 2.0)
    f = 1 + z - 3 * z**4 + z**n
    derivative = 1 - 12 * z**3 + n * z ** (n - 1)
    torch.testing.assert_close(chebyshev.differentiation_matrix(n, 2.0) @ f, derivative, rtol=1e-11, atol=1e-9)
    integral = 2 + 2**2 / 2 - 3 * 2**5 / 5 + 2 ** (n + 1) / (n + 1)
    assert float(chebyshev.quadrature_weights(n, 2.0) @ f) == pytest.approx(integral, rel=1e-13)
    targets = torch.tensor([0.0, 0.37, 1.5, 2.0], dtype=torch.float64)
    torch.testing.assert_close(
        chebyshev.interpolation_matrix(n, targets, 2.0) @ f, 1 + targets - 3 * targets**4 + targets**n
    )


# ---------------------------------------------------------------------------- Gray-Scott
def test_gray_scott_uniform_state_stays_put():
    grid = square_grid(16)
    # a fixed point of the scheme at any step: 3 steps of 10, not the default step's hundreds
    a, b = simulate_gray_scott(
        torch.ones(16, 16), torch.zeros(16, 16), 0.029, 0.057, np.arange(4) * 10.0, grid, step=10.0
    )
    assert torch.equal(a, torch.ones_like(a)) and torch.equal(b, torch.zeros_like(b))


def test_gray_scott_diffusive_mode_decays_exactly():
    """Without feed, kill and B, A - 1 diffuses: a Fourier mode decays by exp(-delta_A |k|^2 t) at any step."""
    grid = square_grid(16)
    x, y = grid.mesh()
    mode = torch.cos(math.pi * x) * torch.sin(2 * math.pi * y)
    a, _ = simulate_gray_scott(1 + 0.1 * mode, torch.zeros(16, 16), 0.0, 0.0, np.array([0.0, 500.0]), grid, step=250)
    rate = 2e-5 * 5 * math.pi**2
    torch.testing.assert_close(a[-1], 1 + 0.1 * math.exp(-rate * 500) * mode, rtol=0, atol=1e-14)


def test_gray_scott_etdrk4_is_fourth_order_in_time():
    """The differences of solutions at successive halvings of the step fall 2^4-fold (for a scheme of order p,
    u(h) - u(h/2) = C h^p (1 - 2^-p) + O(h^(p+1))): no costly reference solution."""
    grid = square_grid(32)
    a0, b0 = (torch.as_tensor(v) for v in gaussian_cluster_state(np.random.default_rng(0), grid))
    times = np.array([0.0, 20.0])
    solutions = [simulate_gray_scott(a0, b0, 0.029, 0.057, times, grid, step=step) for step in (0.25, 0.125, 0.0625)]
    differences = [
        max(float((a[-1] - fa[-1]).abs().max()), float((b[-1] - fb[-1]).abs().max()))
        for (a, b), (fa, fb) in itertools.pairwise(solutions)
    ]
    assert abs(observed_order(differences) - 4) < 0.2, differences


def test_gray_scott_converges_spectrally_in_space():
    """A smooth state on 24^2 and on 48^2 points agrees to 1e-9 after 50 s (an algebraic scheme of order p would
    need errors falling 2^p per doubling; here they fall to round-off). Diffusivities 500x the Well's keep the
    solution resolved on 24^2 (the Well's own patterns have scales near its 128^2 grid spacing)."""
    fine_grid, coarse_grid = square_grid(48), square_grid(24)
    a0, b0 = random_fourier_state(np.random.default_rng(1), fine_grid, max_k=3)
    a0, b0 = torch.as_tensor(a0), torch.as_tensor(b0)
    times = np.array([0.0, 50.0])
    diffusivities = dict(delta_a=1e-2, delta_b=5e-3)
    fine = simulate_gray_scott(a0, b0, 0.029, 0.057, times, fine_grid, **diffusivities)
    coarse = simulate_gray_scott(a0[::2, ::2], b0[::2, ::2], 0.029, 0.057, times, coarse_grid, **diffusivities)
    assert float((fine[1][-1, ::2, ::2] - coarse[1][-1]).abs().max()) < 1e-9
    assert float((fine[1][-1] - fine[1][0]).abs().max()) > 1e-3  # and the state did change


# ---------------------------------------------------------------------------- shear flow
def test_a_single_shear_mode_decays_exactly_and_the_tracer_keeps_its_mass():
    """u_x = A sin(k y) is a steady Euler flow: Navier-Stokes only damps it, by exp(-nu k^2 t)."""
    grid = shear_grid(16)
    x, y = grid.mesh()
    k = 2 * math.pi  # one period on [-1, 1)
    state = {"u_x": 0.3 * torch.sin(k * y), "u_y": torch.zeros_like(x), "tracer": torch.cos(math.pi * y) + x}
    out = simulate_shear_flow(state, 100.0, 1.0, np.array([0.0, 0.5, 1.0]), grid)
    torch.testing.assert_close(out["u_x"][-1], 0.3 * math.exp(-(k**2) / 100.0) * torch.sin(k * y), rtol=0, atol=1e-14)
    assert float(out["u_y"].abs().max()) < 1e-14
    mass = out["tracer"].mean(dim=(1, 2))
    torch.testing.assert_close(mass, mass[:1].expand(3), rtol=0, atol=1e-14)


def test_shear_flow_stays_divergence_free_and_its_pressure_is_taylor_greens():
    grid = shear_grid(32)
    ops = ShearFlowOperators(grid)
    out = simulate_shear_flow(initial_state(grid, 2, 3, 0.5), 1e4, 1.0, np.array([0.0, 0.5]), grid)
    divergence = grid.ifft(1j * ops.kx * grid.fft(out["u_x"][-1]) + 1j * ops.ky * grid.fft(out["u_y"][-1]))
    assert float(divergence.abs().max()) < 1e-12
    assert torch.equal(out["pressure"][0], torch.zeros_like(out["pressure"][0]))  # like the Well's first frames
    # Taylor-Green cells u = cos(ax) sin(by), v = -(a/b) sin(ax) cos(by): p = -(cos 2ax + (a/b)^2 cos 2by) / 4
    x, y = grid.mesh()
    a, b = 2 * math.pi, math.pi
    ux, uy = torch.cos(a * x) * torch.sin(b * y), -(a / b) * torch.sin(a * x) * torch.cos(b * y)
    expected = -(torch.cos(2 * a * x) + (a / b) ** 2 * torch.cos(2 * b * y)) / 4
    torch.testing.assert_close(ops.pressure(ux, uy), expected - expected.mean(), rtol=0, atol=1e-12)


def test_shear_flow_is_fourth_order_in_time():
    grid = shear_grid(32)
    state = initial_state(grid, 2, 2, 1.0)
    times = np.array([0.0, 0.4])
    # the differences of successive halvings fall as the errors do (test_gray_scott_etdrk4_is_fourth_order_in_time)
    tracers = [
        simulate_shear_flow(state, 1e3, 1.0, times, grid, max_step=0.4 / substeps)["tracer"][-1]
        for substeps in (8, 16, 32)
    ]
    differences = [float((coarse - fine).abs().max()) for coarse, fine in itertools.pairwise(tracers)]
    assert abs(observed_order(differences) - 4) < 0.2, differences


# ---------------------------------------------------------------------------- Rayleigh-Benard
def test_rayleigh_benard_conduction_modes_decay_exactly_and_walls_hold():
    """x-independent buoyancy and mean-flow modes sin(pi z) decay as exp(-kappa pi^2 t), exp(-nu pi^2 t), with the
    Well's definitions kappa = (Ra Pr)^-1/2, nu = (Ra / Pr)^-1/2 (at Pr = 2 they differ by 2x)."""
    rayleigh, prandtl = 1e4, 2.0
    kappa, nu = (rayleigh * prandtl) ** -0.5, (rayleigh / prandtl) ** -0.5
    grid = ChannelGrid(8, 24)
    solver = RayleighBenardSolver(grid, rayleigh, prandtl)
    z = grid.z()
    theta = solver.to_mixed((0.1 * torch.sin(math.pi * z))[None, :].expand(8, -1).clone())
    state = {"psi": torch.zeros_like(theta), "theta": theta, "mean": 0.05 * torch.sin(math.pi * z)}
    end = 0.5  # 250 steps; swapping kappa and nu moves the fields by about 2e-3 there, against atol 1e-8
    out = simulate_rayleigh_benard(grid, rayleigh, prandtl, np.array([0.0, end]), 17, state=state, max_step=0.002)
    uniform = torch.linspace(0, 1, 17, dtype=torch.float64)
    buoyancy = (1 - uniform) + 0.1 * math.exp(-kappa * math.pi**2 * end) * torch.sin(math.pi * uniform)
    mean_flow = 0.05 * math.exp(-nu * math.pi**2 * end) * torch.sin(math.pi * uniform)
    torch.testing.assert_close(out["buoyancy"][-1], buoyancy.expand(8, -1), rtol=0, atol=1e-8)
    torch.testing.assert_close(out["u_x"][-1], mean_flow.expand(8, -1), rtol=0, atol=1e-8)


def test_rayleigh_benard_conduction_pressure_is_hydrostatic():
    grid = ChannelGrid(8, 16)
    solver = RayleighBenardSolver(grid, 1e6, 1.0)
    z = grid.z()
    state = {
        "psi": torch.zeros(5, 17, dtype=torch.complex128),
        "theta": torch.zeros(5, 17, dtype=torch.complex128),
        "mean": torch.zeros(17, dtype=torch.float64),
    }
    hydrostatic = z - z**2 / 2  # d_z p = b = 1 - z
    torch.testing.assert_close(solver.pressure(state), (hydrostatic - 1 / 3).expand(8, -1))


@pytest.mark.parametrize("factor, grows", [(0.98, False), (1.02, True)])
def test_convection_sets_in_at_the_rigid_wall_critical_rayleigh_number(factor, grows):
    """Linear theory between rigid walls: Ra_c = 1707.76 at k_c = 3.117. 2% below it a small roll decays, 2%
    above it grows."""
    k_c = 3.117
    grid = ChannelGrid(8, 24, length_x=2 * math.pi / k_c)
    rayleigh = 1707.76 * factor
    solver = RayleighBenardSolver(grid, rayleigh, 1.0)
    roll = 1e-6 * torch.sin(math.pi * grid.z())[None, :] * torch.cos(k_c * grid.x())[:, None]
    state = {
        "psi": torch.zeros(5, 25, dtype=torch.complex128),
        "theta": solver.to_mixed(roll),
        "mean": torch.zeros(25, dtype=torch.float64),
    }
    out = simulate_rayleigh_benard(grid, rayleigh, 1.0, np.array([0.0, 150.0, 300.0]), 25, state=state, max_step=0.1)
    energy = (out["u_x"] ** 2 + out["u_z"] ** 2).mean(dim=(1, 2))
    assert (energy[2] > energy[1]) == grows, energy.tolist()


def test_rayleigh_benard_is_second_order_in_time_and_no_slip():
    grid = ChannelGrid(16, 16)
    solver = RayleighBenardSolver(grid, 1e5, 1.0)
    z, x = grid.z(), grid.x()
    perturbation = 0.1 * torch.sin(math.pi * z)[None, :] * torch.cos(2 * math.pi * x / grid.length_x)[:, None]
    state = {
        "psi": torch.zeros(9, 17, dtype=torch.complex128),
        "theta": solver.to_mixed(perturbation),
        "mean": torch.zeros(17, dtype=torch.float64),
    }
    times = np.array([0.0, 2.0])
    # the differences of successive halvings fall as the errors do (test_gray_scott_etdrk4_is_fourth_order_in_time)
    runs = [simulate_rayleigh_benard(grid, 1e5, 1.0, times, 17, state=state, max_step=2 / n) for n in (32, 64, 128)]
    finest = runs[-1]
    assert float(finest["u_z"][-1].abs().max()) > 1e-3  # the roll is moving
    differences = [
        float((coarse["buoyancy"][-1] - fine["buoyancy"][-1]).abs().max()) for coarse, fine in itertools.pairwise(runs)
    ]
    assert abs(observed_order(differences) - 2) < 0.2, differences
    walls = finest["u_x"][-1][:, [0, -1]], finest["u_z"][-1][:, [0, -1]]
    assert max(float(w.abs().max()) for w in walls) < 1e-12


def test_shear_flow_converges_spectrally_in_space():
    """A flow of wide layers (Re 100) on 16x32, 32x64 and 64x128 points: the error against the finest falls from
    ~1e-8 to round-off in one doubling (an algebraic scheme of order p would gain only 2^p)."""
    times = np.array([0.0, 0.5])
    fine_grid = shear_grid(64)
    state = initial_state(fine_grid, 2, 2, 2.0)
    fine = simulate_shear_flow(state, 100.0, 1.0, times, fine_grid, max_step=0.01)
    errors = []
    for n in (16, 32):
        step = 64 // n
        coarse = simulate_shear_flow(
            {k: v[::step, ::step] for k, v in state.items()}, 100.0, 1.0, times, shear_grid(n), max_step=0.01
        )
        errors.append(float((fine["u_x"][-1, ::step, ::step] - coarse["u_x"][-1]).abs().max()))
    assert errors[1] < 1e-11 and errors[0] / errors[1] > 1e3, errors
    assert float((fine["u_x"][-1] - fine["u_x"][0]).abs().max()) > 1e-3


def test_rayleigh_benard_converges_spectrally_in_the_vertical():
    """Chebyshev in z: 16 and 32 points give the same roll to 1e-7 (a second-order scheme would differ by ~1e-3)."""
    runs = []
    for n_z in (16, 32):
        grid = ChannelGrid(16, n_z)
        solver = RayleighBenardSolver(grid, 1e4, 1.0)
        z, x = grid.z(), grid.x()
        roll = 0.05 * torch.sin(math.pi * z)[None, :] * torch.cos(2 * math.pi * x / grid.length_x)[:, None]
        state = {
            "psi": torch.zeros(9, n_z + 1, dtype=torch.complex128),
            "theta": solver.to_mixed(roll),
            "mean": torch.zeros(n_z + 1, dtype=torch.float64),
        }
        runs.append(simulate_rayleigh_benard(grid, 1e4, 1.0, np.array([0.0, 2.0]), 9, state=state, max_step=0.01))
    difference = float((runs[0]["buoyancy"][-1] - runs[1]["buoyancy"][-1]).abs().max())
    assert difference < 1e-7, difference
    assert float(runs[1]["u_z"][-1].abs().max()) > 1e-4
