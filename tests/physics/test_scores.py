"""The label-free scorecard against closed forms, with negative controls, and the guard's decisions.

The data: ``u_t + a u = 0`` (no spatial term) with frames ``u_n = u_0(x) exp(-a n dt)`` on a 2D grid. With the
explicit scheme, ``R = (u_new - u_old) / dt + a u_old`` and ``scale = |u_new - u_old| / dt + a |u_old|``, so for a
prediction ``p = q u_old`` (``u_0 > 0``) the relative residual is ``|(q - 1) / dt + a| / (|q - 1| / dt + a)``,
the same at every point and every pair."""

from __future__ import annotations

import math

import pytest
import torch

from well_upao.data.slots import N_SLOTS, SLOT_INDEX
from well_upao.physics import PDE, SubEquation
from well_upao.physics.bound import BoundResidual
from well_upao.physics.scores import Scorecard
from well_upao.physics.stencils import Grid, Stencils
from well_upao.trainers.guard import GuardSettings, guard_decision

A, DT, T = 0.7, 0.01, 6
SLOT = SLOT_INDEX["concentration_rho"]
DECAY = PDE(
    name="decay_test",
    variables=("concentration_rho",),
    parameters=("a",),
    equations=(SubEquation("decay", rate="concentration_rho", flux=lambda f, p, ops: p["a"] * f["concentration_rho"]),),
)


def rho(q: float) -> float:
    return abs((q - 1) / DT + A) / (abs(q - 1) / DT + A)


def slotted(field: torch.Tensor) -> torch.Tensor:
    out = torch.zeros(*field.shape, N_SLOTS, dtype=torch.float64)
    out[..., SLOT] = field
    return out


def window_and_frames():
    x = torch.linspace(0, 2 * math.pi, 12, dtype=torch.float64)[:-1]
    u0 = 1.0 + 0.5 * torch.sin(x)[:, None] * torch.cos(x)[None, :]
    decay = math.exp(-A * DT)
    frames = torch.stack([u0 * decay**n for n in range(T + 1)])  # (T + 1, X, Y)
    return slotted(frames[None, :T]), frames, decay


def cards(prediction_factor: float, reference_factor: float | None = None, backtest_factor: float | None = None):
    window, frames, _ = window_and_frames()
    last, before = frames[T - 1], frames[T - 2]
    grid = Grid((2 * math.pi / 11,) * 2, (True, True))
    bound = BoundResidual(DECAY, {"a": A}, Stencils(grid, "fd"), "explicit")
    return bound.scorecard(
        window,
        slotted(prediction_factor * last)[None],
        torch.tensor([DT], dtype=torch.float64),
        reference=None if reference_factor is None else slotted(reference_factor * last)[None],
        backtest=None if backtest_factor is None else slotted(backtest_factor * before)[None],
    )


def test_floor_and_residual_ratio_match_the_closed_form():
    _, _, decay = window_and_frames()
    out = cards(decay)
    assert float(out["floor"]) == pytest.approx(rho(decay), rel=1e-9)
    assert float(out["residual_ratio"]) == pytest.approx(1.0, rel=1e-9)  # the true next frame: at the floor
    explicit = 1 - A * DT  # the explicit scheme's own solution: below the floor (pulled to the discretisation)
    assert float(cards(explicit)["residual_ratio"]) == pytest.approx(0.0, abs=1e-6)
    q = 0.99
    assert float(cards(q)["residual_ratio"]) == pytest.approx(rho(q) / rho(decay), rel=1e-9)


def test_negative_control_a_prediction_of_another_equation_is_far_above_the_floor():
    wrong = math.exp(-2 * A * DT)  # the exact solution with the rate doubled
    ratio = float(cards(wrong)["residual_ratio"])
    _, _, decay = window_and_frames()
    assert ratio == pytest.approx(rho(wrong) / rho(decay), rel=1e-9)
    assert ratio > 100


def test_departure_and_backtest_match_the_closed_form():
    _, _, decay = window_and_frames()
    q, r, b = 0.995, decay, 0.9990
    out = cards(q, reference_factor=r, backtest_factor=b)
    assert float(out["departure"]) == pytest.approx(abs(q - r) / abs(r - 1), rel=1e-9)
    assert float(out["backtest"]) == pytest.approx(abs(b - decay) / abs(decay - 1), rel=1e-9)
    same = cards(decay, reference_factor=decay, backtest_factor=decay)  # control: identical -> exactly zero
    assert float(same["departure"]) == 0.0 and float(same["backtest"]) == pytest.approx(0.0, abs=1e-12)


def test_the_guard_refuses_a_move_the_floor_cannot_ask_for_and_a_worse_backtest():
    start = Scorecard(floor=1e-2, residual_ratio=1.0, departure=0.0, backtest=0.01)
    settings = GuardSettings()
    far = Scorecard(floor=1e-2, residual_ratio=0.4, departure=0.021, backtest=0.01)  # > 2x the start's backtest
    reason = guard_decision(start, far, settings)
    assert reason is not None and reason.startswith("floor:")
    worse = Scorecard(floor=1e-2, residual_ratio=1.0, departure=0.005, backtest=0.02)
    reason = guard_decision(start, worse, settings)
    assert reason is not None and reason.startswith("backtest:")
    close = Scorecard(floor=1e-2, residual_ratio=0.9, departure=0.019, backtest=0.0105)
    assert guard_decision(start, close, settings) is None
    # a start far above the floor (the residual can still tell): a large move is allowed
    above = Scorecard(floor=1e-2, residual_ratio=50.0, departure=0.0, backtest=0.5)
    assert guard_decision(above, Scorecard(1e-2, 3.0, 3.0, 0.2), settings) is None
    # missing scores never fire
    assert guard_decision(Scorecard(), Scorecard(), settings) is None
    assert guard_decision(start, Scorecard(floor=1e-2, residual_ratio=1.0), settings) is None


def test_scorecard_logs_round_trip():
    card = Scorecard(floor=1e-3, residual_ratio=2.0, departure=3.0, backtest=4.0)
    assert Scorecard.from_logs(card.logs()) == card
    assert set(card.logs(prefix="valid_score_start_")) == {
        "valid_score_start_floor",
        "valid_score_start_residual_ratio",
        "valid_score_start_departure",
        "valid_score_start_backtest",
    }
