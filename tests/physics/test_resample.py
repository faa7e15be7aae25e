"""Fourier resampling between periodic grids: exact for band-limited fields, mean and size preserved."""

from __future__ import annotations

import math

import pytest
import torch

from well_upao.physics.resample import fourier_resample


def field_on(n: int, m: int | None = None) -> torch.Tensor:
    """A field band-limited to |k| <= 7 sampled on an ``n x m`` periodic grid of [0, 2 pi)^2."""
    m = m or n
    x = torch.arange(n, dtype=torch.float64) * 2 * math.pi / n
    y = torch.arange(m, dtype=torch.float64) * 2 * math.pi / m
    X, Y = torch.meshgrid(x, y, indexing="ij")
    return 1.0 + torch.sin(3 * X) * torch.cos(5 * Y) + 0.3 * torch.cos(7 * X + 2 * Y)


@pytest.mark.parametrize("coarse", [(32, 32), (16, 32), (16, 16)])
def test_band_limited_fields_are_sampled_exactly_and_round_trip(coarse):
    fine = field_on(64)
    restricted = fourier_resample(fine, coarse)
    torch.testing.assert_close(restricted, field_on(*coarse), rtol=0, atol=1e-12)
    torch.testing.assert_close(fourier_resample(restricted, (64, 64)), fine, rtol=0, atol=1e-12)


def test_modes_above_the_coarse_nyquist_are_removed_and_batches_are_independent():
    n = 32
    x = torch.arange(n, dtype=torch.float64) * 2 * math.pi / n
    high = torch.cos(12 * x)  # above the Nyquist frequency 8 of 16 points
    batch = torch.stack([high, torch.sin(2 * x) + 0.5])
    coarse = fourier_resample(batch, (16,))
    torch.testing.assert_close(coarse[0], torch.zeros(16, dtype=torch.float64), rtol=0, atol=1e-12)
    assert coarse[1].mean() == pytest.approx(0.5, abs=1e-12)
    torch.testing.assert_close(fourier_resample(batch, (32,)), batch)


def test_impossible_shapes_are_refused():
    with pytest.raises(ValueError, match="cannot resample"):
        fourier_resample(torch.zeros(8), (4, 4))


@pytest.mark.parametrize("n, m", [(33, 50), (33, 64), (15, 23)])
def test_an_odd_grid_keeps_its_highest_mode_both_ways(n, m):
    """An odd size ``2j + 1`` has no Nyquist mode: its highest mode ``j`` is a real mode, sampled exactly on any
    larger grid and recovered from it (it was dropped once)."""
    j = n // 2

    def wave(points: int) -> torch.Tensor:
        x = torch.arange(points, dtype=torch.float64) * 2 * math.pi / points
        return torch.sin(j * x) + 0.5 * torch.cos(j * x + 0.3)

    torch.testing.assert_close(fourier_resample(wave(n), (m,)), wave(m), rtol=0, atol=1e-12)
    torch.testing.assert_close(fourier_resample(wave(m), (n,)), wave(n), rtol=0, atol=1e-12)
