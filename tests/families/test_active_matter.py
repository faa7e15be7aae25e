"""The kinetic active-matter solver (``well_upao.families.replicas.active_matter``) against the linearised kinetic
theory, closed-form Stokes flows, its invariants and its time order; every figure has a negative control.

Expected values come from the formulas in the tests (the dispersion relation derived in the module docstring, the
Stokes flow of a single Fourier mode, moments by direct quadrature in theta), not from the solver's own
functions."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from well_upao.families.replicas.active_matter import (
    ActiveMatterParameters,
    KineticGrid,
    KineticOperators,
    KineticSolver,
    initial_distribution,
    simulate_active_matter,
)

BETA, D_T, D_R = 0.8, 0.05, 0.05


def theory_rates(k: float, alpha: float, zeta: float) -> tuple[float, float]:
    """(shear, splay) growth rates of Q_12 and Q_11 for a plane wave e^{ikx} about the isotropic state, written
    out independently of the module: lambda = zeta - 4 d_R - d_T k^2 [- (alpha - zeta beta / 2) / (4 + beta / 2)]."""
    splay = zeta - 4 * D_R - D_T * k * k
    return splay - (alpha - zeta * BETA / 2) / (4 + BETA / 2), splay


def measured_rates(
    alpha: float, zeta: float, wavenumber: int = 1, n: int = 12, step: float = 2.5e-3
) -> tuple[float, float]:
    """Growth of the Q_12 and Q_11 amplitudes of a 1e-7 plane wave between t = 0.25 and t = 0.5, SBDF2 at ``step``
    (its relative error on a rate lambda is about (step lambda)^2 / 3: 5e-6 at 2.5e-3 for lambda <= 1.6, the
    default cases; 6e-5 at 5e-4 for the slow case's lambda = 18.6)."""
    grid = KineticGrid(n, n)
    x = grid.x()
    xx, _, theta = torch.meshgrid(x, x, grid.theta(), indexing="ij")
    k = 2 * math.pi * wavenumber / grid.length
    psi0 = (1 + 1e-7 * torch.cos(k * xx) * (torch.sin(2 * theta) + torch.cos(2 * theta))) / (2 * math.pi)
    out = simulate_active_matter(grid, ActiveMatterParameters(alpha, zeta), psi0, np.array([0, 0.25, 0.5]), step)
    d = out["D"]
    probe = torch.cos(k * x)[:, None]

    def amplitude(field: torch.Tensor) -> float:
        return float((field * probe).sum())

    q12, q11 = d[..., 0, 1], (d[..., 0, 0] - d[..., 1, 1]) / 2
    return (
        math.log(amplitude(q12[2]) / amplitude(q12[1])) / 0.25,
        math.log(amplitude(q11[2]) / amplitude(q11[1])) / 0.25,
    )


@pytest.mark.parametrize(
    "alpha, zeta, wavenumber, step",
    [
        (-3.0, 1.0, 1, 2.5e-3),
        pytest.param(-1.0, 17.0, 1, 5e-4, marks=pytest.mark.slow),  # the slowest case (minutes)
        (2.0, 1.0, 2, 2.5e-3),
        (-5.0, 0.0, 1, 2.5e-3),
    ],
)
def test_plane_wave_growth_rates_follow_the_linearised_kinetic_theory(alpha, zeta, wavenumber, step):
    k = 2 * math.pi * wavenumber / 10.0
    shear, splay = measured_rates(alpha, zeta, wavenumber, step=step)
    expected_shear, expected_splay = theory_rates(k, alpha, zeta)
    # SBDF2 errs by about (step lambda)^2 / 3 relative (measured_rates); measured at 2.5e-3: at most 1.9e-5 absolute
    assert shear == pytest.approx(expected_shear, rel=1e-4, abs=2e-5)
    assert splay == pytest.approx(expected_splay, rel=1e-4, abs=2e-5)
    # negative controls: the theory at a wrong alpha or zeta is far outside the agreement
    assert abs(shear - theory_rates(k, alpha + 0.5, zeta)[0]) > 0.1
    assert abs(splay - theory_rates(k, alpha, zeta + 0.5)[1]) > 0.4


def test_the_shear_mode_changes_sign_where_the_theory_says():
    """Without alignment (zeta = 0) the shear mode grows only for alpha < -(4 d_R + d_T k^2)(4 + beta / 2) =
    -0.967 at k = 2 pi / 10: just above it decays, just below it grows, at the predicted small rates."""
    k = 2 * math.pi / 10.0
    critical = -(4 * D_R + D_T * k * k) * (4 + BETA / 2)
    above, _ = measured_rates(critical + 0.1, 0.0)
    below, _ = measured_rates(critical - 0.1, 0.0)
    assert above < 0 < below
    assert above == pytest.approx(-0.1 / 4.4, abs=2e-5) and below == pytest.approx(0.1 / 4.4, abs=2e-5)


def test_the_isotropic_state_is_stationary():
    grid = KineticGrid(16, 16)
    psi = torch.full((16, 16, 16), 1 / (2 * math.pi), dtype=torch.float64)
    out = simulate_active_matter(grid, ActiveMatterParameters(-5.0, 17.0), psi, np.array([0.0, 0.25]))
    assert float(out["velocity"].abs().max()) < 1e-14
    torch.testing.assert_close(out["D"][-1], 0.5 * torch.eye(2, dtype=torch.float64).expand(16, 16, 2, 2))


def quadrature_moments(psi: torch.Tensor, grid: KineticGrid) -> dict[str, torch.Tensor]:
    """c, D and S by the rectangle rule in theta (exact for trigonometric polynomials of low degree)."""
    theta = grid.theta()
    p = torch.stack([torch.cos(theta), torch.sin(theta)])  # (2, n_theta)
    w = psi * grid.dtheta
    c = w.sum(-1)
    d = torch.einsum("xyt,it,jt->xyij", w, p, p)
    s = torch.einsum("xyt,it,jt,kt,lt->xyijkl", w, p, p, p, p)
    return {"c": c, "D": d, "S": s}


def test_moments_trace_and_the_stokes_solve_against_a_manufactured_flow():
    """For a positive psi and a chosen divergence-free u_m, the stress sigma_e = -2 E(u_m) - beta S:E(u_m) makes
    u_m the solution of -Lap u + grad q = div(sigma_e + beta S:E(u)) (div 2E = Lap u): the solver must return u_m.
    The moments are compared with direct quadrature, and tr D = c."""
    n = 16
    grid = KineticGrid(n, n)
    x = grid.x()
    xx, yy, theta = torch.meshgrid(x, x, grid.theta(), indexing="ij")
    kk = 2 * math.pi / grid.length
    psi = (
        1 + 0.4 * torch.cos(kk * xx) * torch.cos(2 * theta - 0.3) + 0.3 * torch.sin(2 * kk * yy) * torch.sin(4 * theta)
    ) / (2 * math.pi)
    ops = KineticOperators(grid)
    m = ops.moments(ops.fft3(psi))
    exact = quadrature_moments(psi, grid)
    torch.testing.assert_close(m["c"], exact["c"])
    torch.testing.assert_close(
        torch.stack([m["d11"], m["d12"], m["d22"]]), exact["D"][..., [0, 0, 1], [0, 1, 1]].movedim(-1, 0)
    )
    s = exact["S"]
    for name, index in {"s1111": (0, 0, 0, 0), "s1112": (0, 0, 0, 1), "s1122": (0, 0, 1, 1), "s1222": (0, 1, 1, 1),
                        "s2222": (1, 1, 1, 1)}.items():  # fmt: skip
        torch.testing.assert_close(m[name], s[(..., *index)])
    torch.testing.assert_close(m["d11"] + m["d22"], m["c"])  # tr D = c

    # u_m from the stream function phi = sin(kk x) cos(2 kk y) / kk: u = d_y phi, v = -d_x phi
    x2, y2 = xx[..., 0], yy[..., 0]
    u = -2 * torch.sin(kk * x2) * torch.sin(2 * kk * y2)
    v = -torch.cos(kk * x2) * torch.cos(2 * kk * y2)
    ux, uy = (
        -2 * kk * torch.cos(kk * x2) * torch.sin(2 * kk * y2),
        -4 * kk * torch.sin(kk * x2) * torch.cos(2 * kk * y2),
    )
    vx, vy = kk * torch.sin(kk * x2) * torch.cos(2 * kk * y2), 2 * kk * torch.cos(kk * x2) * torch.sin(2 * kk * y2)
    e = torch.stack([torch.stack([ux, (uy + vx) / 2], -1), torch.stack([(uy + vx) / 2, vy], -1)], -2)
    se = torch.einsum("xyijkl,xykl->xyij", s, e)
    sigma = -2 * e - BETA * se
    solver = KineticSolver(grid, ActiveMatterParameters(-3.0, 5.0))
    u_hat = solver.velocity(m, stress=(sigma[..., 0, 0], sigma[..., 0, 1], sigma[..., 1, 1]))
    got = torch.stack([ops.ifft2(u_hat[0]), ops.ifft2(u_hat[1])])
    torch.testing.assert_close(got, torch.stack([u, v]), rtol=0, atol=1e-11)
    assert solver.cg_iterations[-1] > 1  # the constraint stress made it a real (non-diagonal) solve
    # negative control: a wrong beta in the manufactured stress gives a different flow
    solver_wrong = KineticSolver(grid, ActiveMatterParameters(-3.0, 5.0, beta=0.4))
    wrong = solver_wrong.velocity(m, stress=(sigma[..., 0, 0], sigma[..., 0, 1], sigma[..., 1, 1]))
    assert float((ops.ifft2(wrong[0]) - u).abs().max()) > 1e-3


def test_a_single_stress_mode_gives_the_closed_form_stokes_flow():
    """sigma_12 = cos(k x): -v'' = d_x sigma_12 = -k sin(k x), so v = -sin(k x) / k, u = 0 (beta = 0)."""
    grid = KineticGrid(16, 16)
    x = grid.x()
    k = 2 * math.pi / grid.length
    xx = x[:, None].expand(16, 16)
    zero = torch.zeros_like(xx)
    solver = KineticSolver(grid, ActiveMatterParameters(-1.0, 1.0, beta=0.0))
    m = solver.ops.moments(solver.ops.fft3(torch.full((16, 16, 16), 1 / (2 * math.pi), dtype=torch.float64)))
    u_hat = solver.velocity(m, stress=(zero, torch.cos(k * xx), zero))
    torch.testing.assert_close(solver.ops.ifft2(u_hat[1]), -torch.sin(k * xx) / k, rtol=0, atol=1e-13)
    assert float(solver.ops.ifft2(u_hat[0]).abs().max()) < 1e-13


def test_concentration_and_the_normalisation_of_psi_are_conserved_to_round_off():
    grid = KineticGrid(16, 16)
    psi0 = initial_distribution(grid, seed=5)
    out = simulate_active_matter(grid, ActiveMatterParameters(-5.0, 3.0), psi0, np.arange(5) * 0.25, return_psi=True)
    totals = out["concentration"].sum((1, 2)) * grid.dx**2
    mass = out["psi"].sum((1, 2, 3)) * grid.dx**2 * grid.dtheta
    assert float((totals - grid.length**2).abs().max()) < 1e-12 * grid.length**2
    assert float((mass - grid.length**2).abs().max()) < 1e-12 * grid.length**2
    assert float((out["concentration"][-1] - out["concentration"][0]).abs().max()) > 1e-4  # c itself moved
    # the stored tensors' invariants: tr D = c, E symmetric and traceless (incompressible)
    d, e = out["D"], out["E"]
    torch.testing.assert_close(d[..., 0, 0] + d[..., 1, 1], out["concentration"], rtol=0, atol=1e-14)
    assert (
        float((e[..., 0, 1] - e[..., 1, 0]).abs().max()) == 0 and float((e[..., 0, 0] + e[..., 1, 1]).abs().max()) == 0
    )


def test_sbdf2_is_second_order_in_time():
    """The differences of solutions at t = 0.5 at successive halvings of the step fall four-fold per halving: for a
    scheme of order p, u(h) - u(h/2) = C h^p (1 - 2^-p) + O(h^(p+1)), so their ratio is 2^p without a costly
    reference solution (an extrapolated constraint velocity, as in the generating script, would make it first
    order)."""
    grid = KineticGrid(16, 16)
    psi0 = initial_distribution(grid, seed=2)
    parameters = ActiveMatterParameters(-3.0, 3.0)
    times = np.array([0.0, 0.5])

    def final(step: float) -> torch.Tensor:
        return simulate_active_matter(grid, parameters, psi0, times, step)["velocity"][-1]

    solutions = [final(0.5 / n) for n in (16, 32, 64, 128)]
    differences = [float((coarse - fine).abs().max()) for coarse, fine in itertools.pairwise(solutions)]
    orders = [math.log2(differences[i] / differences[i + 1]) for i in range(2)]
    assert all(abs(order - 2) < 0.15 for order in orders), (differences, orders)
