"""Band-limited resampling of periodic fields between grids (Fourier truncation / zero-padding).

Along each resampled axis with ``n`` points in and ``m`` out, the discrete Fourier coefficients ``u^_k`` with
``|k| < min(n, m) / 2`` are kept, the rest (and the Nyquist mode of the smaller grid) set to zero, and the result
is scaled by ``m / n`` so values keep their size:

    u_out(x_j) = sum_{|k| < min(n, m)/2} u^_k exp(2 pi i k x_j / L) / n,   x_j = j L / m.

A field band-limited below the smaller grid's Nyquist frequency is reproduced exactly at the new points, so
coarsening and prolonging it back is the identity (tested).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


def _resample_axis(field: torch.Tensor, axis: int, n_out: int) -> torch.Tensor:
    n_in = field.shape[axis]
    if n_in == n_out:
        return field
    # the modes |k| < min(n_in, n_out) / 2 are 0..kept-1 and -(kept-1)..-1: for an even size 2m kept = m (its Nyquist
    # mode m dropped), for an odd size 2m + 1 kept = m + 1 (every mode: an odd size has no Nyquist mode)
    kept = (min(n_in, n_out) + 1) // 2
    spectrum = torch.fft.fft(field, dim=axis)
    positive = spectrum.narrow(axis, 0, kept)
    negative = spectrum.narrow(axis, n_in - (kept - 1), kept - 1)
    gap = list(spectrum.shape)
    gap[axis] = n_out - 2 * kept + 1
    resized = torch.cat([positive, spectrum.new_zeros(gap), negative], dim=axis)
    return torch.fft.ifft(resized, dim=axis).real * (n_out / n_in)


def fourier_resample(field: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
    """Resample the last ``len(shape)`` (periodic) axes of a real ``field`` to ``shape`` (see the module docstring)."""
    dims = len(shape)
    if dims > field.ndim or any(int(n) < 2 for n in shape):
        raise ValueError(f"cannot resample a field of shape {tuple(field.shape)} to {tuple(shape)}")
    for offset, n_out in enumerate(shape):
        field = _resample_axis(field, field.ndim - dims + offset, int(n_out))
    return field
