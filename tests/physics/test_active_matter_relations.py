"""The relations of The Well's active-matter fields (``well_upao.physics.active_matter``) on frames of our kinetic
solver: exact ones to round-off, the ones needing the fourth moment with the simulation's own ``S``, the floors the
closures leave, and negative controls (mixed-up fields, a wrong alpha or zeta)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from well_upao.families.replicas.active_matter import (
    ActiveMatterParameters,
    KineticGrid,
    initial_distribution,
    simulate_active_matter,
)
from well_upao.physics.active_matter import (
    ActiveMatterFrames,
    closure_fourth_moment,
    kinematic_residuals,
    orientation_terms,
    stokes_residual,
)

ALPHA, ZETA, SPACING = -3.0, 1.0, 0.01


def quadrature_fourth_moment(psi: torch.Tensor, grid: KineticGrid) -> torch.Tensor:
    theta = grid.theta()
    p = torch.stack([torch.cos(theta), torch.sin(theta)])
    return torch.einsum("...q,iq,jq,kq,lq->...ijkl", psi * grid.dtheta, p, p, p, p)


@pytest.fixture(scope="module")
def developed():
    """Frames 0.01 apart of a 16^2 x 16 run after t = 4 (nematic order and flow developed), its S, and its grid."""
    grid = KineticGrid(16, 16)
    parameters = ActiveMatterParameters(ALPHA, ZETA)
    start = simulate_active_matter(grid, parameters, initial_distribution(grid, 3), np.array([0.0, 4.0]), 5e-3, True)
    out = simulate_active_matter(grid, parameters, start["psi"][-1], np.arange(3) * SPACING, SPACING / 4, True)
    frames = ActiveMatterFrames(out["concentration"], out["velocity"], out["D"], out["E"], (grid.dx, grid.dx))
    return frames, quadrature_fourth_moment(out["psi"], grid), grid


def test_kinematics_and_the_trace_hold_to_round_off_and_fail_on_mixed_up_fields(developed):
    frames, _, _ = developed
    exact = kinematic_residuals(frames)
    assert max(exact.values()) < 1e-13, exact
    assert float(frames.velocity.abs().max()) > 0.05  # a real flow
    swapped = ActiveMatterFrames(frames.concentration, frames.velocity, frames.E, frames.D, frames.spacing)
    wrong = kinematic_residuals(swapped)  # D and E exchanged
    assert wrong["strain"] > 0.5 and wrong["trace"] > 0.5, wrong
    stale = ActiveMatterFrames(frames.concentration, frames.velocity.flip(0), frames.D, frames.E, frames.spacing)
    assert kinematic_residuals(stale)["strain"] > 1e-3  # E of other frames than u


def test_the_stokes_balance_holds_with_the_exact_fourth_moment_and_closures_leave_a_floor(developed):
    frames, S, _ = developed
    exact = stokes_residual(frames, ALPHA, ZETA, "exact", S)
    assert exact < 1e-10, exact
    floors = {kind: stokes_residual(frames, ALPHA, ZETA, kind) for kind in ("bingham", "linear")}
    assert all(value > 1e-3 for value in floors.values()), floors
    assert stokes_residual(frames, ALPHA - 0.5, ZETA, "exact", S) > 1e-2  # negative controls
    assert stokes_residual(frames, ALPHA, ZETA + 0.5, "exact", S) > 1e-2


def test_the_orientation_equation_holds_with_the_solvers_de_aliasing(developed):
    """Relation 5 with the exact S, its nonlinear terms filtered by the solver's 2/3 rule (the simulation evolves
    the filtered equation), between frames 0.01 apart (Crank-Nicolson); the unfiltered residual is the grid's
    de-aliasing floor; a wrong zeta moves it far."""
    frames, S, grid = developed
    n = grid.n
    index = torch.fft.fftfreq(n, 1 / n)
    keep = ((index.abs() < n / 3)[:, None] & (index.abs() < n / 3)[None, :]).double()

    def dealiased(term: torch.Tensor) -> torch.Tensor:  # (..., X, Y, 2, 2)
        spectrum = torch.fft.fft2(term.movedim((-2, -1), (0, 1)), dim=(-2, -1)) * keep
        return torch.fft.ifft2(spectrum, dim=(-2, -1)).real.movedim((0, 1), (-2, -1))

    def residual(zeta: float, filtered: bool) -> float:
        mid = ActiveMatterFrames(
            0.5 * (frames.concentration[1:] + frames.concentration[:-1]),
            0.5 * (frames.velocity[1:] + frames.velocity[:-1]),
            0.5 * (frames.D[1:] + frames.D[:-1]),
            0.5 * (frames.E[1:] + frames.E[:-1]),
            frames.spacing,
        )
        terms = orientation_terms(mid, 0.5 * (S[1:] + S[:-1]), zeta)
        if filtered:
            terms = [dealiased(t) for t in terms[:4]] + terms[4:]  # transport, rotation, S:E, alignment
        rate = (frames.D[1:] - frames.D[:-1]) / SPACING
        # the second pair only: the first one holds the simulation's single first-order (SBDF1) start step
        value = (rate + sum(terms))[1:]
        scale = (rate.abs() + sum(t.abs() for t in terms))[1:]
        return float(value.norm() / scale.norm())

    assert residual(ZETA, True) < 2e-4
    assert residual(ZETA, False) > 10 * residual(ZETA, True)  # what 16^2 points leave without the filter
    assert residual(ZETA + 0.5, True) > 100 * residual(ZETA, True)


@pytest.mark.parametrize("kappa, theta0", [(0.3, 0.2), (4.0, -1.1), (40.0, 2.5)])
def test_the_bingham_closure_is_exact_for_its_own_family(kappa, theta0):
    """psi = c exp(kappa cos 2 (theta - theta_0)) / Z: the closure's S from (c, D) equals S by quadrature; the
    linear closure (fourth mode dropped) does not."""
    grid = KineticGrid(8, 256)
    theta = grid.theta()
    psi = torch.exp(kappa * torch.cos(2 * (theta - theta0)))
    psi = 1.7 * psi / (psi.sum() * grid.dtheta)
    S = quadrature_fourth_moment(psi, grid)
    p = torch.stack([torch.cos(theta), torch.sin(theta)])
    D = torch.einsum("q,iq,jq->ij", psi * grid.dtheta, p, p)
    c = torch.tensor(1.7, dtype=torch.float64)
    torch.testing.assert_close(closure_fourth_moment(c, D, "bingham"), S, rtol=0, atol=1e-10)
    # the fourth theta mode C_4 + i S_4 = c I_2(kappa) / I_0(kappa) e^{4 i theta_0}, which the linear closure drops
    c4 = float(S[0, 0, 0, 0] * 8 - 3 * c - 4 * (D[0, 0] - D[1, 1]))
    s4 = float(S[0, 0, 0, 1] * 8 - 4 * D[0, 1])
    assert math.hypot(c4, s4) > 1e-3 * math.tanh(kappa)
    error = float((closure_fourth_moment(c, D, "linear") - S).abs().max())
    assert error == pytest.approx(max(abs(c4), abs(s4)) / 8, rel=1e-9)
