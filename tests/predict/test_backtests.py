"""The backtests a row's evidence rests on (``well_upao.predict.backtests``): a backbone whose run kept a classical
prior (``NATransformer.set_prior``) predicts with that prior's extrapolation, so its evidence is the prior's own
(every start of the window), the same as the prior's row; a network (the negative control) keeps its two backtests.

The window is a field quadratic in time, ``u = 1 + sin(x) + c t^2 cos(y)``, on which extrap2 is exact and extrap1
misses by ``2 c`` per step: the prior's every-start matrix is then finite off its first row and column, where a
network's matrix (its rollout from the first start and its one-step errors) is ``nan``."""

from __future__ import annotations

import math

import torch

from well_upao.harness.samples import Context
from well_upao.models.na_transformer import NATransformer
from well_upao.physics import Grid
from well_upao.predict.backtests import window_evidence
from well_upao.predict.predictors import BackboneModel, classical_row, kept_prior

SLOTS = [0]  # one channel in slot 0


def window(frames: int = 12, n: int = 16) -> torch.Tensor:
    """``(T, n, n, 1)``: ``1 + sin(x) + 0.01 t^2 cos(y)``."""
    x = torch.arange(n, dtype=torch.float64) * 2 * math.pi / n
    t = torch.arange(frames, dtype=torch.float64)[:, None, None]
    field = 1 + torch.sin(x)[:, None] + 0.01 * t**2 * torch.cos(x)[None, :]
    return field[..., None].float()


def context(n: int = 16) -> Context:
    spacing = 2 * math.pi / n
    return Context(dt=torch.tensor([0.1]), scalars={}, grid=Grid((spacing, spacing), (True, True)), channel_slots=SLOTS)


def backbone(prior: int, history: int = 8) -> BackboneModel:
    torch.manual_seed(0)
    model = NATransformer(preset="tiny", layers=1, dims=(2,), channel_slots=SLOTS)
    model.set_prior(prior)
    return BackboneModel("UPAO", model.eval(), history=history)


def test_a_kept_prior_is_read_from_the_model_and_a_network_or_classical_row_has_none():
    assert kept_prior(backbone(2)).name == "extrap2"
    assert kept_prior(backbone(0)).name == "persistence"
    assert kept_prior(backbone(-1)) is None
    assert kept_prior(classical_row("extrap1")) is None


def test_a_row_served_two_frames_extrapolates_linearly_whatever_prior_it_kept():
    """Two frames allow degree 1 at most: the row's predictions are extrap1's (not extrap2's, which are exact on
    this field), and so is its prior."""
    frames, ctx = window(), context()
    row = backbone(2, history=2)
    assert kept_prior(row).name == "extrap1"
    predicted = row.predict(frames[None], ctx)
    torch.testing.assert_close(predicted, classical_row("extrap1").predict(frames[None], ctx), rtol=1e-5, atol=1e-6)
    assert not torch.allclose(predicted, classical_row("extrap2").predict(frames[None], ctx), rtol=1e-5, atol=1e-6)


def test_a_row_that_kept_extrap2_carries_extrap2s_evidence_from_every_start():
    frames, ctx = window(), context()
    row, prior_row = backbone(2), classical_row("extrap2")
    # the premise: the kept prior's predictions are the classical row's (float32 arithmetic against double)
    torch.testing.assert_close(
        row.predict(frames[None], ctx), prior_row.predict(frames[None], ctx), rtol=1e-5, atol=1e-6
    )
    curves, expected, starts = window_evidence([prior_row, row], frames, ctx)
    for evidence in (curves, expected, starts):
        torch.testing.assert_close(evidence["UPAO"], evidence["extrap2"], rtol=0, atol=0, equal_nan=True)
    assert torch.isfinite(starts["UPAO"][1:, 1:]).any()  # later starts read: not a network's two backtests


def test_a_network_keeps_its_own_two_backtests():
    frames, ctx = window(), context()
    _, _, starts = window_evidence([classical_row("extrap2"), backbone(-1)], frames, ctx)
    assert torch.isnan(starts["UPAO"][1:, 1:]).all()
    assert torch.isfinite(starts["UPAO"][0, 0])
