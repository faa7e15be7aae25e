"""The UPAO objective on exact trajectories: zero band loss for the truth, residual ratios, the strategies."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from well_upao.data.datasets import DATASET_SLOTS
from well_upao.data.slots import N_SLOTS, SLOT_INDEX
from well_upao.datasets_exact import EXACT_PDES
from well_upao.physics import Grid, Stencils, UpaoObjective, band_values, get_pde
from well_upao.physics.residual import pde_residuals, residuals_and_scales, slot_fields
from well_upao.physics.stencils import interior


def exact_window(name="burgers2d", resolution=32, steps=9, index=0):
    """18-slot frames (1, steps, *S, 18) of an exact trajectory and its scalars."""
    pde = EXACT_PDES[name]
    params = pde.sample_parameters(np.random.default_rng([2, index]), index)
    times = 0.2 + np.arange(steps) * pde.default_dt
    fields = pde.evaluate(params, pde.grid_axes(resolution), times)
    frames = torch.zeros(1, steps, *([resolution] * pde.n_spatial_dims), N_SLOTS, dtype=torch.float64)
    for channel, slot in DATASET_SLOTS[name].items():
        field, _, component = channel.rpartition("_")
        array = fields[field][..., "xyz".index(component)] if field in fields else fields[channel]
        frames[0, ..., SLOT_INDEX[slot]] = torch.as_tensor(array)
    mask = torch.zeros(N_SLOTS, dtype=torch.float64)
    mask[[SLOT_INDEX[s] for s in DATASET_SLOTS[name].values()]] = 1
    scalars = {k: torch.tensor([v], dtype=torch.float64) for k, v in params.scalars.items()}
    grid = Grid((2 * math.pi / resolution,) * pde.n_spatial_dims, (True,) * pde.n_spatial_dims)
    return frames, scalars, grid, mask, torch.tensor([pde.default_dt], dtype=torch.float64)


def evaluate(objective, frames, scalars, grid, mask, dt, prediction=None):
    inputs, truth = frames[:, :-1], frames[:, 1:]
    prediction = truth if prediction is None else prediction
    next_band = band_values(frames[:, -1], grid.dims)
    return objective(prediction, inputs, next_band, dt, objective.bind(grid, scalars), mask)


def paper_terms(name, inputs, prediction, scalars, grid, dt, floor_rel=1e-4):
    """The paper's definitions computed here from ``pde_residuals`` and the term sizes (not the objective):
    ``ms_k(t)`` = mean over ``S_p`` of ``R_k(inputs_t, prediction_t)^2`` for each of the T predicted frames;
    ``s_k^2`` = the same mean over the T - 1 pairs of consecutive inputs, floored at ``floor_rel^2`` times their mean
    square of the terms' size; ``L_PDE`` = mean over t of ``sqrt(mean_k ms_k(t) / s_k^2)`` (``norm``) or of
    ``sqrt(mean_k ms_k(t))`` (``no_norm``). Returns ``(ms, s2, floors, L_PDE norm, L_PDE no_norm)``."""
    pde = get_pde(name)
    dims = grid.dims
    params = pde.resolve_parameters(scalars)
    ops = Stencils(grid)
    space = tuple(range(2, 2 + dims))
    old, new = slot_fields(inputs, pde.variables), slot_fields(prediction, pde.variables)
    ms = {
        k: interior(r, dims).square().mean(space)[0] for k, r in pde_residuals(pde, old, new, dt, params, ops).items()
    }
    window_old = {k: v[:, :-1] for k, v in old.items()}
    window_new = {k: v[:, 1:] for k, v in old.items()}
    window = pde_residuals(pde, window_old, window_new, dt, params, ops)
    scales = residuals_and_scales(pde, window_old, window_new, dt, params, ops, "crank_nicolson")[1]
    s2, floors = {}, {}
    for k, r in window.items():
        floors[k] = floor_rel**2 * interior(scales[k], dims).square().mean(space)[0].mean()
        s2[k] = torch.maximum(interior(r, dims).square().mean(space)[0].mean(), floors[k])
    normalised = torch.stack([ms[k] / s2[k] for k in ms]).mean(0)
    raw = torch.stack(list(ms.values())).mean(0)
    return ms, s2, floors, normalised.sqrt().mean(), raw.sqrt().mean()


@pytest.mark.parametrize("name", ["burgers2d", "tg2d", "wave2d", "adv1d", "adv3d"])
def test_the_true_next_frames_have_zero_band_loss_and_the_papers_normalised_residual(name):
    """On the truth the band loss vanishes and L_PDE, s_k^2 are the paper's definitions to round-off (for the
    pairs inside the observed window, ms_k / s_k^2 averages to exactly 1 when the floor does not bind)."""
    resolution = {1: 128, 2: 32, 3: 16}[EXACT_PDES[name].n_spatial_dims]
    frames, scalars, grid, mask, dt = exact_window(name, resolution)
    terms = evaluate(UpaoObjective(get_pde(name), normalization="norm"), frames, scalars, grid, mask, dt)
    assert terms.boundary < 1e-12
    ms, s2, floors, l_pde, _ = paper_terms(name, frames[:, :-1], frames[:, 1:], scalars, grid, dt)
    for k in ms:
        torch.testing.assert_close(terms.s2[k][0], s2[k], rtol=1e-10, atol=0)
    torch.testing.assert_close(terms.residual, l_pde, rtol=1e-10, atol=0)
    unfloored = [k for k in ms if s2[k] > floors[k]]  # constraints are round-off there, hence floored
    assert unfloored
    for k in unfloored:  # the first 7 predicted pairs are the window's own pairs
        torch.testing.assert_close((ms[k][:7] / terms.s2[k][0]).mean(), torch.tensor(1.0, dtype=torch.float64))


def test_the_band_loss_of_a_planted_error_by_hand():
    """burgers2d at 8^2: the band S_b holds 8^2 - 6^2 = 28 cells. In the last predicted frame, plant +0.3 on V_x at
    band cell (0, 3) and -0.4 on V_y at band cell (7, 5), plus 5.0 on an inactive slot (masked out). By the paper's
    L_BC (sum over channels, mean over band cells, square root): L_BC = sqrt((0.3^2 + 0.4^2) / 28) = 0.5 / sqrt(28)
    in that frame and 0 in the others; the frame's total adds lambda_BC = 1e4 times it to L_PDE."""
    frames, scalars, grid, mask, dt = exact_window("burgers2d", resolution=8, steps=4)
    prediction = frames[:, 1:].clone()
    prediction[0, -1, 0, 3, SLOT_INDEX["Vx"]] += 0.3
    prediction[0, -1, 7, 5, SLOT_INDEX["Vy"]] -= 0.4
    prediction[0, -1, 0, 0, SLOT_INDEX["density"]] += 5.0  # an inactive slot: not in the loss
    objective = UpaoObjective(get_pde("burgers2d"), normalization="norm", lambda_bc=1e4)
    clean = evaluate(objective, frames, scalars, grid, mask, dt)
    planted = evaluate(objective, frames, scalars, grid, mask, dt, prediction)
    hand = 0.5 / math.sqrt(28)
    steps = prediction.shape[1]
    assert planted.boundary.item() == pytest.approx(hand / steps, rel=1e-9)  # mean over the 3 predicted frames
    residual_only = UpaoObjective(get_pde("burgers2d"), normalization="norm", lambda_bc=0.0)
    no_band = evaluate(residual_only, frames, scalars, grid, mask, dt, prediction)
    band_part = planted.per_frame[0, -1] - no_band.per_frame[0, -1]  # lambda_BC L_BC of the last frame
    assert band_part.item() == pytest.approx(1e4 * hand, rel=1e-9)
    # the planted cells are band cells: the interior, hence the residual of the other frames, is untouched
    torch.testing.assert_close(planted.per_frame[0, :-1], clean.per_frame[0, :-1], rtol=1e-12, atol=1e-12)


def test_perturbed_predictions_are_penalised_by_both_terms():
    frames, scalars, grid, mask, dt = exact_window()
    objective = UpaoObjective(get_pde("burgers2d"), normalization="norm")
    clean = evaluate(objective, frames, scalars, grid, mask, dt)
    noisy_prediction = frames[:, 1:] * (1 + 1e-3 * torch.randn_like(frames[:, 1:]))
    noisy = evaluate(objective, frames, scalars, grid, mask, dt, noisy_prediction)
    assert noisy.residual > 20 * clean.residual
    assert noisy.boundary > 1e-6 and noisy.total > clean.total


def test_strategies_follow_the_paper_definitions():
    frames, scalars, grid, mask, dt = exact_window()
    prediction = frames[:, 1:] * 1.01
    terms = {
        s: evaluate(UpaoObjective(get_pde("burgers2d"), normalization=s), frames, scalars, grid, mask, dt, prediction)
        for s in ("norm", "rescaled_norm", "no_norm")
    }
    s2 = terms["norm"].s2
    assert terms["norm"].lambda_bc.item() == 1e4 and terms["no_norm"].lambda_bc.item() == 1e4
    assert terms["rescaled_norm"].lambda_bc.item() == pytest.approx(1e4 / min(v.item() for v in s2.values()))
    assert all(v.item() == 1.0 for v in terms["no_norm"].s2.values())
    # no_norm's L_PDE is the raw rms residual per frame, averaged; norm divides each sub-equation by its own s_k^2
    *_, raw = paper_terms("burgers2d", frames[:, :-1], prediction, scalars, grid, dt)
    torch.testing.assert_close(terms["no_norm"].residual, raw, rtol=1e-10, atol=0)
    assert terms["norm"].residual.item() > 10 * terms["no_norm"].residual.item()


def test_scale_floor_binds_when_the_window_residual_is_tiny():
    frames, scalars, grid, mask, dt = exact_window()
    raw = evaluate(UpaoObjective(get_pde("burgers2d"), normalization="norm"), frames, scalars, grid, mask, dt).s2
    floored = evaluate(
        UpaoObjective(get_pde("burgers2d"), normalization="norm", floor_rel=1.0), frames, scalars, grid, mask, dt
    ).s2
    for k in raw:  # exact data: residual << terms, so a floor of 100% of the terms' size binds
        assert floored[k] > 1e3 * raw[k]
    zero = evaluate(UpaoObjective(get_pde("burgers2d"), normalization="norm"), frames * 0, scalars, grid, mask, dt)
    assert all(torch.isfinite(v).all() and (v > 0).all() for v in zero.s2.values())
    assert torch.isfinite(zero.total)


def test_single_frame_history_needs_no_norm():
    frames, scalars, grid, mask, dt = exact_window(steps=2)
    with pytest.raises(ValueError, match="at least 2 history frames"):
        evaluate(UpaoObjective(get_pde("burgers2d")), frames, scalars, grid, mask, dt)
    terms = evaluate(UpaoObjective(get_pde("burgers2d"), normalization="no_norm"), frames, scalars, grid, mask, dt)
    assert torch.isfinite(terms.total)


def test_the_central_scheme_uses_the_observed_frame_before_and_crank_nicolson_first():
    """tg2d with spectral derivatives: the central residual of the truth is smaller than Crank-Nicolson's on the
    frames that have an observed frame before them, and the first frame's term is Crank-Nicolson's exactly."""
    frames, scalars, grid, mask, dt = exact_window("tg2d", 32)
    pde = get_pde("tg2d")
    inputs, truth = frames[:, :-1], frames[:, 1:]
    old, new = slot_fields(inputs, pde.variables), slot_fields(truth, pde.variables)
    mean_squares = {}
    for scheme in ("central", "crank_nicolson"):
        objective = UpaoObjective(pde, scheme=scheme, derivative="spectral")
        mean_squares[scheme] = objective.residual_mean_squares(old, new, dt, objective.bind(grid, scalars))
    central, crank = mean_squares["central"], mean_squares["crank_nicolson"]
    for equation in pde.equations:
        name = equation.name
        torch.testing.assert_close(central[name][:, 0], crank[name][:, 0])
        if equation.rate is not None:  # constraints have no time derivative: both are round-off there
            assert (central[name][:, 1:] < 0.1 * crank[name][:, 1:]).all()
    terms = evaluate(UpaoObjective(pde, scheme="central", derivative="spectral"), frames, scalars, grid, mask, dt)
    assert torch.isfinite(terms.total) and terms.boundary < 1e-12
