"""Both VRMSE definitions against hand computations and the Well's own implementation."""

from __future__ import annotations

import torch
from the_well.benchmark.metrics import VRMSE

from well_upao.evaluate.metrics import vrmse_paper, vrmse_well


class Meta:
    n_spatial_dims = 2


def test_well_definition_matches_the_wells_metric():
    generator = torch.Generator().manual_seed(0)
    truth = torch.randn(3, 5, 8, 8, 2, generator=generator)
    prediction = truth + 0.1 * torch.randn(3, 5, 8, 8, 2, generator=generator)
    torch.testing.assert_close(
        vrmse_well(prediction, truth, 2), VRMSE.eval(prediction, truth, Meta()), rtol=1e-5, atol=1e-6
    )


def test_paper_definition_uses_the_temporal_mean_at_each_location():
    t = torch.linspace(0, 1, 6)[:, None, None, None]
    x = torch.linspace(0, 1, 4)[None, :, None, None]
    truth = t + x  # (6, 4, 1, 1): the temporal mean at each x is 0.5 + x
    prediction = truth + 0.05
    expected = (0.05**2 * truth.numel() / ((t - 0.5) ** 2 * torch.ones_like(x)).sum()).sqrt()
    torch.testing.assert_close(vrmse_paper(prediction, truth), expected.reshape(1), rtol=1e-5, atol=0)
    # the Well's definition divides by the spatial variance per frame instead: a different number
    assert not torch.allclose(vrmse_well(prediction, truth, 2).mean(), expected)


def test_a_perfect_prediction_scores_zero_and_the_mean_scores_one():
    truth = torch.randn(10, 6, 6, 3, generator=torch.Generator().manual_seed(1))
    assert vrmse_paper(truth, truth).abs().max() < 1e-6
    temporal_mean = truth.mean(0, keepdim=True).expand_as(truth)
    torch.testing.assert_close(vrmse_paper(temporal_mean, truth), torch.ones(3), rtol=1e-4, atol=1e-4)
