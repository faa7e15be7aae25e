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


def test_on_a_near_constant_field_each_definition_has_its_own_epsilon_and_variance():
    """Two channels nearly constant in space and time (1 + 4e-4 and 1 + 5e-6 times a smooth pattern): the first's
    spatial variance (4.1e-8) is below the Well's epsilon 1e-7, the second's summed temporal deviation (5.7e-10)
    below the paper's 1e-8, so each definition's epsilon and variance decide its value (the Well's 0.133 with its
    1e-7, 0.222 with 1e-8; the paper's 0.095 with its 1e-8, 0.031 with 1e-7). Expected values from numpy in float64
    and, for the Well's, from ``the_well.benchmark.metrics.VRMSE``; with the other definition's epsilon, or a biased
    variance, each value moves by more than the tolerance (negative controls)."""
    import numpy as np

    t = np.arange(6)[:, None, None, None]
    x = np.arange(8)[None, :, None, None] * 2 * np.pi / 8
    y = np.arange(8)[None, None, :, None] * 2 * np.pi / 8
    pattern = np.sin(x + 0.3 * t) * np.cos(y)
    truth = 1 + np.array([4e-4, 5e-6]) * pattern  # (T, 8, 8, C = 2)
    prediction = truth + np.array([1e-4, 1e-6]) * np.cos(2 * x - 0.2 * t) * np.sin(y + 0.5)
    squared = (prediction - truth) ** 2

    def well(eps, ddof=1):
        return np.sqrt(squared.mean(axis=(1, 2)) / (truth.var(axis=(1, 2), ddof=ddof) + eps))

    def paper(eps):
        deviation = ((truth - truth.mean(axis=0, keepdims=True)) ** 2).sum(axis=(0, 1, 2))
        return np.sqrt(squared.sum(axis=(0, 1, 2)) / (deviation + eps))

    p, u = torch.from_numpy(prediction), torch.from_numpy(truth)
    ours = vrmse_well(p, u, 2).numpy()
    np.testing.assert_allclose(ours, well(1e-7), rtol=1e-9)
    np.testing.assert_allclose(ours, VRMSE.eval(p, u, Meta()).numpy(), rtol=1e-9)
    for other in (well(1e-8), well(1e-7, ddof=0)):
        assert np.abs(ours / other - 1).max() > 1e-3
    assert np.abs(ours[:, 0] / well(1e-8)[:, 0] - 1).min() > 0.3  # the two epsilons: visibly different
    ours = vrmse_paper(p, u).numpy()
    np.testing.assert_allclose(ours, paper(1e-8), rtol=1e-9)
    assert abs(ours[1] / paper(1e-7)[1] - 1) > 0.3
