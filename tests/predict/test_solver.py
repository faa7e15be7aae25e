"""The solver baseline's de-aliasing (``well_upao.predict.solver``, the 3/2 rule) against closed forms.

Viscous Burgers ``d_t u = -d_x(u^2 / 2) + nu d_xx u`` at ``u = sin(k x)`` on ``N`` points of ``[0, 2 pi)``:

    d_t u = -(k / 2) sin(2 k x) - nu k^2 sin(k x).

For ``N / 2 <= 2 k < N`` the mode ``2 k`` is beyond the grid: the de-aliased tendency, the true one truncated to the
kept modes, is ``-nu k^2 sin(k x)`` alone. On the ``N``-point grid the product ``u^2 / 2 = (1 - cos(2 k x)) / 4`` takes
``cos(2 k x)`` for ``cos((N - 2 k) x)`` (the same grid values), whose derivative adds the spurious mode
``-((N - 2 k) / 4) sin((N - 2 k) x)`` to the tendency."""

from __future__ import annotations

import math

import pytest
import torch

from well_upao.physics.pdes import get_pde
from well_upao.physics.stencils import Grid
from well_upao.predict.solver import PDESolver

N, K, NU = 32, 10, 0.01  # 2K = 20 > N/2 = 16: the product folds onto mode N - 2K = 12


def burgers_tendency(dealias: float) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.arange(N, dtype=torch.float64) * 2 * math.pi / N
    solver = PDESolver(get_pde("burgers1d"), Grid((2 * math.pi / N,), (True,)), dealias=dealias)
    rate = solver.tendency({"Vx": torch.sin(K * x)[None]}, {"nu": torch.tensor([NU], dtype=torch.float64)})
    return x, rate["Vx"][0]


def test_the_dealiased_burgers_tendency_is_the_true_one_truncated_to_the_kept_modes():
    x, rate = burgers_tendency(dealias=1.5)
    torch.testing.assert_close(rate, -NU * K**2 * torch.sin(K * x), atol=1e-10, rtol=0)


def test_on_the_data_grid_the_product_folds_onto_mode_n_minus_2k():
    """Negative control: without de-aliasing the tendency has the folded mode (the module docstring)."""
    x, rate = burgers_tendency(dealias=1)
    folded = N - 2 * K
    torch.testing.assert_close(
        rate, -NU * K**2 * torch.sin(K * x) - folded / 4 * torch.sin(folded * x), atol=1e-10, rtol=0
    )


def test_a_resolved_product_is_the_same_either_way():
    """With ``2 k < N / 2`` nothing folds: both give the closed form, de-aliasing changes nothing."""
    x = torch.arange(N, dtype=torch.float64) * 2 * math.pi / N
    k = 3
    expected = -(k / 2) * torch.sin(2 * k * x) - NU * k**2 * torch.sin(k * x)
    for dealias in (1, 1.5, 2):
        solver = PDESolver(get_pde("burgers1d"), Grid((2 * math.pi / N,), (True,)), dealias=dealias)
        rate = solver.tendency({"Vx": torch.sin(k * x)[None]}, {"nu": torch.tensor([NU], dtype=torch.float64)})
        torch.testing.assert_close(rate["Vx"][0], expected, atol=1e-10, rtol=0)


def test_taylor_green_decays_at_its_viscous_rate_with_its_pressure_per_sample():
    """2D incompressible Navier-Stokes at the Taylor-Green vortex ``u = sin x cos y``, ``v = -cos x sin y``: the
    advection is the gradient of ``-p`` with ``p = (cos 2x + cos 2y) / 4``, so the projected tendency is
    ``nu Lap v = -2 nu v`` (each sample its own ``nu``), and the pressure is ``p``, on the de-aliasing grid."""
    n = 8
    x = torch.arange(n, dtype=torch.float64) * 2 * math.pi / n
    X, Y = torch.meshgrid(x, x, indexing="ij")
    u, v = torch.sin(X) * torch.cos(Y), -torch.cos(X) * torch.sin(Y)
    state = {
        "Vx": torch.stack([u, u]),
        "Vy": torch.stack([v, v]),
        "pressure": torch.zeros(2, n, n, dtype=torch.float64),
    }
    nu = torch.tensor([0.1, 0.02], dtype=torch.float64)
    solver = PDESolver(get_pde("tg2d"), Grid((2 * math.pi / n,) * 2, (True, True)))
    assert solver.dealias == 1.5
    rate = solver.tendency(state, {"nu": nu})
    torch.testing.assert_close(rate["Vx"], -2 * nu[:, None, None] * state["Vx"], atol=1e-12, rtol=0)
    torch.testing.assert_close(rate["Vy"], -2 * nu[:, None, None] * state["Vy"], atol=1e-12, rtol=0)
    pressure = (torch.cos(2 * X) + torch.cos(2 * Y)) / 4
    torch.testing.assert_close(
        solver.pressure(state, {"nu": nu}), torch.stack([pressure, pressure]), atol=1e-12, rtol=0
    )


def test_a_finer_grid_is_required():
    with pytest.raises(ValueError, match="dealias must be >= 1"):
        PDESolver(get_pde("burgers1d"), Grid((0.1,), (True,)), dealias=0.5)


def test_walls_keep_the_data_grid():
    """Finite differences on a non-periodic grid have no spectrum to truncate: no de-aliasing there."""
    assert PDESolver(get_pde("burgers1d"), Grid((0.1,), (False,))).dealias == 1


def test_the_gray_scott_baseline_steps_the_discretisation_that_made_the_data():
    """Gray-Scott's generator (our replica's ETDRK4, independent code: exponential integrator, the reaction on the
    grid) made the frames; the baseline (RK4 on the PDE registry's terms) with the PDE's ``solver_dealias`` (1: the
    reaction on the grid) reproduces its next frame to the time integrators' tolerance. Negative control: the same
    step with the 3/2 rule is orders of magnitude further off (a different discretisation of the cubic term)."""
    import numpy as np

    from well_upao.families.replicas.gray_scott import random_fourier_state, simulate_gray_scott, square_grid

    grid, feed, kill = square_grid(32), 0.029, 0.057
    a0, b0 = random_fourier_state(np.random.default_rng(0), grid, max_k=8, feed=feed, kill=kill)
    a, b = simulate_gray_scott(torch.tensor(a0), torch.tensor(b0), feed, kill, np.arange(4) * 10.0, grid, step=0.25)
    pde = get_pde("gray_scott_reaction_diffusion")
    assert pde.solver_dealias == 1
    params = pde.resolve_parameters({"F": torch.tensor([feed]), "k": torch.tensor([kill])})
    spacing = Grid((2.0 / 32, 2.0 / 32), (True, True))
    state = {"concentration_u": a[2][None], "concentration_v": b[2][None]}

    def error(dealias):
        predicted, _ = PDESolver(pde, spacing, dealias=dealias).step(state, params, torch.tensor(10.0))
        return max(
            float((predicted[name][0] - truth).norm() / (truth - frame).norm())
            for name, truth, frame in (("concentration_u", a[3], a[2]), ("concentration_v", b[3], b[2]))
        )

    own, dealiased = error(None), error(1.5)
    assert own < 1e-4  # relative to the frame's change over the step
    assert dealiased > 100 * own


def rk4_amplification(z: float) -> float:
    """One classical RK4 step of ``du/dt = lambda u`` multiplies ``u`` by this, ``z = lambda h``."""
    return 1 + z + z**2 / 2 + z**3 / 6 + z**4 / 24


def doubling_count(z: float, tolerance: float = 1e-6) -> int:
    """The sub-step count at which step doubling stops on Taylor-Green (module docstring of the test below)."""
    substeps = 1
    while True:
        coarse = rk4_amplification(z / substeps) ** (2 * substeps)
        fine = rk4_amplification(z / (2 * substeps)) ** (4 * substeps)
        substeps *= 2
        if abs(fine - coarse) / abs(fine) < tolerance:
            return substeps


@pytest.mark.parametrize("nu", [0.1, 0.2])
def test_the_substeps_needed_are_where_step_doubling_converges_on_a_linear_decay(nu):
    """On the Taylor-Green vortex every velocity decays as ``exp(-2 nu t)``, the pressure as its square, so ``s`` RK4
    sub-steps over ``dt`` multiply the velocity by ``R(z / s)^s`` (``z = -2 nu dt``, ``R`` the RK4 amplification)
    and the pressure by its square, the larger relative change between ``s`` and ``2 s``: step doubling stops at the
    first ``2 s`` where it is under ``1e-6`` (32 at ``z = -1``, 64 at ``z = -2``: a wrong rate moves the count).
    ``substeps_needed`` gives that count, ``None`` under a cap below it, and ``step`` uses it."""
    n, dt = 8, 5.0
    x = torch.arange(n, dtype=torch.float64) * 2 * math.pi / n
    X, Y = torch.meshgrid(x, x, indexing="ij")
    state = {
        "Vx": (torch.sin(X) * torch.cos(Y))[None],
        "Vy": (-torch.cos(X) * torch.sin(Y))[None],
        "pressure": torch.zeros(1, n, n, dtype=torch.float64),
    }
    params, step = {"nu": torch.tensor([nu], dtype=torch.float64)}, torch.tensor([dt], dtype=torch.float64)
    expected = doubling_count(-2 * nu * dt)
    assert expected == {0.1: 32, 0.2: 64}[nu]
    solver = PDESolver(get_pde("tg2d"), Grid((2 * math.pi / n,) * 2, (True, True)))
    assert solver.substeps_needed(state, params, step, cap=2048) == expected
    assert solver.substeps_needed(state, params, step, cap=expected) == expected
    assert solver.substeps_needed(state, params, step, cap=expected // 2) is None
    _, used = solver.step(state, params, step)
    assert used == expected
