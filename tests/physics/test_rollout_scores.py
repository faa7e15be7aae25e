"""The rollout's residual (``trainer.rollout_steps=K``): on an exact solution rolled out by a numerical solver it sits
at the floor of the observed frames at every step, in the scorecard and in the UPAO objective alike; a perturbed
frame or a doubled coefficient lifts it past 3x (negative controls). Plus the closed forms of the rollout card's
departure, and its reduction to the one-step card.

The data: ``advdiff2d``'s Fourier-mode exact solution (``datasets_exact/advdiff2d.py``) at 32^2, six observed frames
``dt = 0.01`` apart; the rollout: four steps of ``well_upao.predict.solver.PDESolver`` (RK4, step doubling to
1e-8) from the last observed frame. Spectral derivatives and Crank-Nicolson in time (the periodic grid's choice):
the floor is the time discretisation's own error, about 6e-5 of the terms."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from well_upao.data.slots import N_SLOTS, SLOT_INDEX
from well_upao.datasets_exact.advdiff2d import AdvectionDiffusion2D
from well_upao.physics import pde_for_dataset
from well_upao.physics.bound import BoundResidual
from well_upao.physics.objective import UpaoObjective, band_values
from well_upao.physics.stencils import Grid, Stencils
from well_upao.predict.solver import PDESolver

N, T, K, DT = 32, 6, 4, 0.01
PDE_ = pde_for_dataset("advdiff2d")
VARIABLE = PDE_.variables[0]
GRID = Grid((2 * math.pi / N,) * 2, (True, True))


def slotted(field) -> torch.Tensor:
    field = torch.as_tensor(field, dtype=torch.float64)
    out = torch.zeros(*field.shape, N_SLOTS, dtype=torch.float64)
    out[..., SLOT_INDEX[VARIABLE]] = field
    return out


@pytest.fixture(scope="module")
def case():
    family = AdvectionDiffusion2D()
    params = family.sample_parameters(np.random.default_rng(0), 0)
    x = np.arange(N) * 2 * math.pi / N
    frames = family.evaluate(params, (x, x), np.arange(T) * DT)["u"]
    scalars = {k: torch.tensor([v], dtype=torch.float64) for k, v in params.scalars.items()}
    return slotted(frames)[None], scalars


def solver_rollout(window: torch.Tensor, scalars, perturb_step: int | None = None) -> torch.Tensor:
    """``K`` solver steps from the last observed frame; ``perturb_step``: that frame gets 1% noise (of its spread),
    and the solver goes on from the perturbed frame."""
    solver = PDESolver(PDE_, GRID, tolerance=1e-8)
    state = {VARIABLE: window[:, -1, ..., SLOT_INDEX[VARIABLE]]}
    frames = []
    generator = torch.Generator().manual_seed(0)
    for k in range(K):
        state, _ = solver.step(state, scalars, torch.tensor([DT], dtype=torch.float64))
        if k == perturb_step:
            field = state[VARIABLE]
            state = {VARIABLE: field + 0.01 * field.std() * torch.randn(field.shape, generator=generator).double()}
        frames.append(state[VARIABLE])
    return slotted(torch.stack(frames, 1))


def card(window, rollout, scalars):
    dt = torch.tensor([DT], dtype=torch.float64)
    return BoundResidual(PDE_, scalars, Stencils(GRID, "spectral"), "crank_nicolson").rollout_scorecard(
        window, rollout, dt
    )


def step_ratios(out) -> list[float]:
    return [float(out[f"residual_ratio_step{k + 1}"]) for k in range(K)]


def test_a_solver_rollout_of_the_exact_solution_sits_at_the_floor_at_every_step(case):
    window, scalars = case
    out = card(window, solver_rollout(window, scalars), scalars)
    assert 1e-5 < float(out["floor"]) < 1e-3
    assert step_ratios(out) == pytest.approx([1.0] * K, abs=0.05)


def test_negative_controls_a_perturbed_frame_or_a_doubled_coefficient_lift_it_past_3x(case):
    window, scalars = case
    perturbed = step_ratios(card(window, solver_rollout(window, scalars, perturb_step=1), scalars))
    assert perturbed[0] == pytest.approx(1.0, abs=0.05) and perturbed[1] > 3  # the step that made the bad frame
    doubled = dict(scalars, nu=2 * scalars["nu"])
    wrong = step_ratios(card(window, solver_rollout(window, doubled), scalars))
    assert min(wrong) > 3


def objective_residual(window, rollout, scalars) -> float:
    """The UPAO objective's L_PDE (normalised by the observed window's s_k) over a rollout, as UpaoLoss assembles a
    one-frame model's rollout: pairs (u_{T-1}, p_1), (p_1, p_2), ...; band references the true frames' bands."""
    # floor_rel below the data's floor (6e-5 of the terms), so s_k is the observed pairs' residual itself
    objective = UpaoObjective(pde=PDE_, lambda_bc=0.0, scheme="crank_nicolson", derivative="spectral", floor_rel=1e-7)
    inputs = torch.cat([window[:, -1:], rollout[:, :-1]], 1)
    bands = band_values(rollout.flatten(0, 1), 2).unflatten(0, (1, K))
    mask = torch.zeros(N_SLOTS, dtype=torch.float64)
    mask[SLOT_INDEX[VARIABLE]] = 1
    dt = torch.tensor([DT], dtype=torch.float64)
    terms = objective(rollout, inputs, bands, dt, objective.bind(GRID, scalars), mask, window=window)
    return float(terms.residual)


def test_the_objectives_rollout_residual_is_at_the_floor_and_a_doubled_coefficient_is_not(case):
    window, scalars = case
    assert objective_residual(window, solver_rollout(window, scalars), scalars) == pytest.approx(1.0, abs=0.05)
    doubled = solver_rollout(window, dict(scalars, nu=2 * scalars["nu"]))
    assert objective_residual(window, doubled, scalars) > 3


# ---------------------------------------------------------------- the rollout card's other scores
def test_one_step_rollout_card_is_the_one_step_card(case):
    """K = 1: the rollout card equals the one-step ``scorecard`` (same floor, ratio, departure, backtest; the one-step
    card is checked against closed forms in tests/physics/test_scores.py) and the one-step card has no per-step key."""
    window, scalars = case
    rollout = solver_rollout(window, scalars)[:, :1]
    reference = 1.01 * rollout
    backtest = 0.99 * window[:, -1]
    bound, dt = BoundResidual(PDE_, scalars, Stencils(GRID, "spectral"), "crank_nicolson"), torch.tensor([DT]).double()
    one = bound.scorecard(window, rollout[:, 0], dt, reference[:, 0], backtest)
    many = bound.rollout_scorecard(window, rollout, dt, reference, backtest)
    for name in ("floor", "residual_ratio", "departure", "backtest"):
        assert float(many[name]) == pytest.approx(float(one[name]), rel=1e-12), name
    assert set(one) == {"floor", "residual_ratio", "departure", "backtest"}


def test_rollout_departure_is_measured_in_the_references_last_step(case):
    """``||p_K - r_K|| / ||r_K - r_{K-1}||``: a rollout equal to the reference but its last frame moved by half the
    reference's last step has departure 0.5 exactly."""
    window, scalars = case
    reference = solver_rollout(window, scalars)
    rollout = reference.clone()
    rollout[:, -1] = reference[:, -1] + 0.5 * (reference[:, -1] - reference[:, -2])
    bound, dt = BoundResidual(PDE_, scalars, Stencils(GRID, "spectral"), "crank_nicolson"), torch.tensor([DT]).double()
    out = bound.rollout_scorecard(window, rollout, dt, reference=reference)
    assert float(out["departure"]) == pytest.approx(0.5, rel=1e-9)
