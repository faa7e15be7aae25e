"""Classical baselines: extrapolation orders, and the solver step against the closed forms."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from well_upao.data.datasets import DATASET_SLOTS, slot_indices
from well_upao.datasets_exact import EXACT_PDES
from well_upao.harness.samples import Context
from well_upao.physics import Grid, get_pde
from well_upao.predict.predictors import SolverStep, classical_row
from well_upao.predict.solver import supports


def polynomial_window(degree, steps=5):
    t = torch.arange(steps + 1, dtype=torch.float64)[:, None, None]
    values = (1 + 0.3 * t + 0.05 * t**2 * (degree >= 2))[None] * torch.ones(1, steps + 1, 4, 2)
    return values[:, :steps], values[:, steps]


@pytest.mark.parametrize("order, exact_for", [(1, 1), (2, 2)])
def test_extrapolation_is_exact_for_polynomials_of_its_degree(order, exact_for):
    window, nxt = polynomial_window(exact_for)
    torch.testing.assert_close(classical_row(f"extrap{order}").predict(window, None), nxt)
    if order == 1:
        quad_window, quad_next = polynomial_window(2)
        assert (classical_row("extrap1").predict(quad_window, None) - quad_next).abs().max() > 1e-3


def test_persistence_repeats_the_last_frame():
    window = torch.randn(2, 3, 4, 1)
    assert torch.equal(classical_row("persistence").predict(window, None), window[:, -1])


def exact_context(name, resolution, dt, index=0, t0=0.3):
    pde = EXACT_PDES[name]
    params = pde.sample_parameters(np.random.default_rng([9, index]), index)
    fields = pde.evaluate(params, pde.grid_axes(resolution), np.array([t0, t0 + dt]))
    channels = list(DATASET_SLOTS[name])
    frames = []
    for channel in channels:
        field, _, component = channel.rpartition("_")
        array = fields[field][..., "xyz".index(component)] if field in fields else fields[channel]
        frames.append(torch.as_tensor(array))
    frames = torch.stack(frames, -1).float()  # (2, *S, C)
    grid = Grid((2 * math.pi / resolution,) * pde.n_spatial_dims, (True,) * pde.n_spatial_dims)
    scalars = {k: torch.tensor([v], dtype=torch.float64) for k, v in params.scalars.items()}
    return frames, Context(torch.tensor([dt]), grid, scalars, slot_indices(name, channels))


@pytest.mark.parametrize("name", ["tg2d", "wave2d", "advdiff2d", "burgers2d", "burgers1d", "adv1d", "adv3d"])
def test_solver_step_reproduces_the_exact_solution(name):
    resolution = {1: 256, 2: 64, 3: 16}[EXACT_PDES[name].n_spatial_dims]
    frames, context = exact_context(name, resolution, 5 * EXACT_PDES[name].default_dt)  # a stride-5 step
    pde = get_pde(name)
    assert supports(pde, context.grid)
    predicted = SolverStep(pde).predict(frames[None, :1], context)[0]
    error = (predicted - frames[1]).abs().max() / frames[1].abs().max()
    persistence = (frames[0] - frames[1]).abs().max() / frames[1].abs().max()
    assert error < 1e-3 * persistence + 1e-5, (name, float(error), float(persistence))


def test_solver_is_not_offered_where_it_cannot_run():
    assert not supports(get_pde("rayleigh_benard"), Grid((0.1, 0.1), (True, False)))  # walls + pressure
    assert not supports(get_pde("shallow_water_2d"), Grid((0.1, 0.1), (True, True)))  # conservative variables
    assert not supports(get_pde("active_matter"), Grid((0.1, 0.1), (True, True)))  # velocity has no equation


def test_fixed_step_solver_converges_at_fourth_order_and_coarsening_keeps_band_limited_fields():
    """The cost-matched ladder's solvers: RK4 with s sub-steps has error ~ s^-4 (ratio 16 per doubling); on the
    grid coarsened by 2 (Fourier truncation) a band-limited solution is stepped as accurately as on the full
    grid, where float32 noise in the highest modes destabilises explicit steps."""
    frames, context = exact_context("advdiff2d", 64, 20 * EXACT_PDES["advdiff2d"].default_dt)
    pde = get_pde("advdiff2d")

    def error(substeps, coarsen):
        predicted = SolverStep(pde, substeps, coarsen).predict(frames[None, :1], context)[0]
        return float((predicted - frames[1]).abs().max() / frames[1].abs().max())

    coarse = [error(s, 2) for s in (1, 2, 4, 8)]
    ratios = [a / b for a, b in itertools.pairwise(coarse)]
    assert all(12 < r < 22 for r in ratios), ratios
    assert error(16, 2) == pytest.approx(error(16, 1), rel=0.05)


def test_rows_are_labelled_by_the_weights_their_run_started_from(tmp_path):
    from well_upao.harness.runs import initial_weights

    released = tmp_path / "sc-b"
    released.mkdir()
    assert initial_weights({"model": {"config": {}, "hydra": {"weights": None}}}) == "random"
    assert initial_weights({"model": {"config": {}, "hydra": {"weights": str(released)}}}) == f"released {released}"
    assert initial_weights({"model": {"config": {"pretrained": "/x/na_tiny.pt"}}}) == "pretrained na_tiny.pt"
    assert initial_weights({"model": {"config": {}}, "train": {"init_from": "/r/best.pt"}}) == "pretrained best.pt"


class LastFramePlus(torch.nn.Module):
    """A one-frame model (the Well's channels-last layout) that predicts its last input frame plus 0.1, and a backbone
    (``forward_sequence`` on the 18 slots) that does the same: the step in model units is known."""

    def __init__(self, channels: int, slots: list[int]):
        super().__init__()
        self.channels, self.slots = channels, slots

    def forward(self, x):  # (B, *space, history * C)
        return x[..., -self.channels :] + 0.1

    def to_slots(self, frames):
        out = frames.new_zeros(*frames.shape[:-1], 18)
        out[..., self.slots] = frames
        return out

    def from_slots(self, slotted):
        return slotted[..., self.slots]

    def forward_sequence(self, slotted):
        return slotted + 0.1


def test_a_model_in_normalised_units_predicts_in_physical_units(tmp_path):
    """A run trained with ``data.use_normalization=true`` (``stats.yaml``: mean 0.25, std 1.5,
    ``tests/advected_mode.py``): its step of 0.1 in model units is 0.1 * 1.5 in physical units, for a harness model
    and a backbone alike; the prediction in model units (negative control) is not."""
    import advected_mode

    from well_upao.data.source import WellSource
    from well_upao.harness.normalization import model_space_for
    from well_upao.predict.predictors import BackboneModel, HarnessModel

    advected_mode.write(tmp_path)
    source = WellSource(tmp_path, advected_mode.NAME)
    space = model_space_for(source, {"use_normalization": True})
    window = torch.linspace(-2, 3, 2 * 3 * 24 * 40).reshape(2, 3, 24, 40, 1)
    expected = window[:, -1] + 0.1 * 1.5
    model = LastFramePlus(1, source.channel_slots)
    rows = [HarnessModel("h", model, "channels_last_default", 2, space), BackboneModel("b", model, space)]
    for row in rows:
        torch.testing.assert_close(row.predict(window, None), expected, rtol=1e-6, atol=1e-6)
    in_model_units = (window[:, -1] - 0.25) / 1.5 + 0.1
    assert not torch.allclose(in_model_units, expected, atol=1e-2)
