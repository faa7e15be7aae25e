"""The solver's spectral derivatives with each field transformed once (``well_upao.predict.spectral_fields``) against
the reference implementations they replace: ``Stencils(grid, "spectral")`` (one complex transform per derivative,
along one axis) and ``fourier_resample`` (one axis at a time), on random fields with content at every mode (the
Nyquist modes of even axes included), in 1D, 2D and 3D, even and odd sizes, unequal spacings."""

from __future__ import annotations

import pytest
import torch

from well_upao.physics.resample import fourier_resample
from well_upao.physics.stencils import Grid, Stencils
from well_upao.predict.spectral_fields import SpectralFields, interpolated, truncated_spectrum

SHAPES = [(16,), (15,), (8, 12), (9, 10), (6, 5, 8)]


def grid_of(shape) -> Grid:
    return Grid(tuple(0.1 * (axis + 1) for axis in range(len(shape))), (True,) * len(shape))


@pytest.mark.parametrize("shape", SHAPES)
def test_every_derivative_and_the_laplacian_are_the_one_axis_complex_transforms(shape):
    grid = grid_of(shape)
    field = torch.randn(3, *shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    reference, fast = Stencils(grid, "spectral"), SpectralFields(grid)
    for axis in range(len(shape)):
        torch.testing.assert_close(fast.d(field, axis), reference.d(field, axis), rtol=0, atol=1e-9)
        torch.testing.assert_close(fast.d2(field, axis), reference.d2(field, axis), rtol=0, atol=1e-9)
    torch.testing.assert_close(fast.laplacian(field), reference.laplacian(field), rtol=0, atol=1e-9)


def test_a_remembered_spectrum_is_used_and_a_zero_field_has_zero_derivatives():
    """The cache is read (a spectrum given for a field is what its derivative uses) and dropped by ``forget``."""
    grid = grid_of((16,))
    fast = SpectralFields(grid)
    field = torch.randn(2, 16, dtype=torch.float64)
    fast.remember(field, torch.fft.rfft(2 * field))
    torch.testing.assert_close(fast.d(field, 0), 2 * Stencils(grid, "spectral").d(field, 0))
    fast.forget()
    torch.testing.assert_close(fast.d(field, 0), Stencils(grid, "spectral").d(field, 0))
    zero = torch.zeros(2, 16, dtype=torch.float64)
    fast.remember(zero, None)
    assert torch.equal(fast.laplacian(zero), zero)


@pytest.mark.parametrize(("shape", "fine"), [((16,), (24,)), ((15,), (23,)), ((8, 12), (12, 18)), ((9, 10), (14, 15))])
def test_interpolation_and_truncation_are_fourier_resample(shape, fine):
    field = torch.randn(2, *shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    values, spectrum = interpolated(field, fine)
    torch.testing.assert_close(values, fourier_resample(field, fine), rtol=0, atol=1e-12)
    axes = tuple(range(1, 1 + len(shape)))
    torch.testing.assert_close(spectrum, torch.fft.rfftn(values, dim=axes), rtol=0, atol=1e-9)
    rough = torch.randn(2, *fine, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    back = torch.fft.irfftn(truncated_spectrum(rough, shape), s=shape, dim=axes)
    torch.testing.assert_close(back, fourier_resample(rough, shape), rtol=0, atol=1e-12)
