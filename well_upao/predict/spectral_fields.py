"""The solver's spectral derivatives with each field transformed once (``well_upao.predict.solver``).

On a fully periodic grid every derivative of the solver's right-hand side is spectral: with ``F`` the discrete
Fourier transform over all spatial axes (real-to-complex on the last, ``torch.fft.rfftn``),

    d^p f / d x_a^p = F^-1[(i k_a)^p F[f]],    Lap f = F^-1[-(k_1^2 + ... + k_d^2) F[f]],

the Nyquist mode of an even axis getting no odd derivative: the values of ``Stencils(grid, "spectral")``
(``well_upao.physics.stencils``), to round-off. ``SpectralFields`` is that ``Stencils`` with the transforms the
right-hand side repeats taken once: ``Stencils`` transforms a field again for every derivative, along one axis at a
time and as complex numbers; here a field's spectrum is kept while the right-hand side is evaluated (``forget``
drops them), each derivative is one inverse transform and the Laplacian one, not one per axis.

The de-aliasing grid's state comes with its spectrum (``interpolated``): Fourier interpolation onto the finer grid
pads the coarse spectrum with zeros, so the fine fields are never transformed again; ``truncated`` takes a fine
field's kept modes back. Both follow ``well_upao.physics.resample`` (the modes ``|k| < min(n, m) / 2`` of each axis
kept, values scaled by ``m / n``), to round-off.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from well_upao.physics.stencils import Grid, Stencils


def spatial_axes(f: torch.Tensor, dims: int) -> tuple[int, ...]:
    """The tensor axes of the last ``dims`` (spatial) dimensions of ``f``."""
    return tuple(range(f.ndim - dims, f.ndim))


def resized_spectrum(spectrum: torch.Tensor, shape_in: Sequence[int], shape_out: Sequence[int]) -> torch.Tensor:
    """The ``rfftn`` spectrum over the last ``len(shape_in)`` axes of a field on ``shape_in`` moved to ``shape_out``:
    along each axis the modes ``|k| < min(n, m) / 2`` kept (``kept = (min(n, m) + 1) // 2``: ``0 .. kept - 1`` and
    ``-(kept - 1) .. -1``; the last axis stores only ``0 .. kept - 1``), the rest zero, scaled by ``prod(m / n)`` so
    the inverse transform on ``shape_out`` keeps the values' size (``well_upao.physics.resample``)."""
    dims = len(shape_in)
    out = spectrum
    for offset, (n_in, n_out) in enumerate(zip(shape_in, shape_out, strict=True)):
        axis = spectrum.ndim - dims + offset
        if n_in == n_out:
            continue
        kept = (min(n_in, n_out) + 1) // 2
        if offset == dims - 1:  # the real-to-complex axis: 0 .. n // 2
            size = n_out // 2 + 1
            positive = out.narrow(axis, 0, kept)
            gap = list(out.shape)
            gap[axis] = size - kept
            out = torch.cat([positive, out.new_zeros(gap)], dim=axis)
        else:
            positive = out.narrow(axis, 0, kept)
            negative = out.narrow(axis, n_in - (kept - 1), kept - 1)
            gap = list(out.shape)
            gap[axis] = n_out - 2 * kept + 1
            out = torch.cat([positive, out.new_zeros(gap), negative], dim=axis)
    return out * math.prod(m / n for n, m in zip(shape_in, shape_out, strict=True))


def wavenumbers(shape: Sequence[int], spacing: Sequence[float], dtype: torch.dtype, device) -> list[torch.Tensor]:
    """Each axis's angular wavenumbers ``2 pi j / (n h)`` in the ``rfftn`` layout (the last axis ``0 .. n // 2``),
    shaped to broadcast over a spectrum of ``shape``; the same values as ``Stencils``'s (``fftfreq`` with
    ``d = h / (2 pi)``)."""
    dims, out = len(shape), []
    for axis, (n, h) in enumerate(zip(shape, spacing, strict=True)):
        length = n * h
        d = length / (2 * math.pi * n)
        last = axis == dims - 1
        k = (torch.fft.rfftfreq if last else torch.fft.fftfreq)(n, d=d, dtype=dtype, device=device)
        view = [1] * dims
        view[axis] = k.numel()
        out.append(k.reshape(view))
    return out


class SpectralFields(Stencils):
    """``Stencils(grid, "spectral")`` on a fully periodic grid that keeps each field's spectrum (see the module
    docstring): ``remember`` a field with the spectrum it is known to have (``None``: the field is zero),
    ``forget`` them all once the right-hand side is evaluated."""

    def __init__(self, grid: Grid):
        if not all(grid.periodic):
            raise ValueError("SpectralFields needs a fully periodic grid")
        super().__init__(grid, "spectral")
        #: ``id(field) -> (field, its spectrum or None for a zero field)``; the field is held so its id stays its own
        self._spectra: dict[int, tuple[torch.Tensor, torch.Tensor | None]] = {}
        self._multipliers: dict[tuple, torch.Tensor] = {}

    def remember(self, field: torch.Tensor, spectrum: torch.Tensor | None) -> None:
        self._spectra[id(field)] = (field, spectrum)

    def forget(self) -> None:
        self._spectra.clear()

    def spectrum(self, field: torch.Tensor) -> torch.Tensor | None:
        """``rfftn`` of ``field`` over its spatial axes, taken once while remembered (``None``: a zero field)."""
        known = self._spectra.get(id(field))
        if known is not None and known[0] is field:
            return known[1]
        spectrum = torch.fft.rfftn(field, dim=spatial_axes(field, self.grid.dims))
        self.remember(field, spectrum)
        return spectrum

    def multiplier(self, shape: tuple[int, ...], axis: int | None, order: int, spectrum: torch.Tensor) -> torch.Tensor:
        """``(i k_axis)^order`` (the Nyquist mode of an even axis zero for odd orders); ``axis=None``, ``order=2``:
        the Laplacian's ``-|k|^2``."""
        key = (shape, axis, order, spectrum.dtype, spectrum.device)
        if key not in self._multipliers:
            real = torch.float64 if spectrum.dtype == torch.complex128 else torch.float32
            ks = wavenumbers(shape, self.grid.spacing, real, spectrum.device)
            if axis is None:
                value = -sum(k**2 for k in ks)
            else:
                value = (1j * ks[axis]) ** order
                n = shape[axis]
                if order % 2 == 1 and n % 2 == 0:
                    index = [0] * len(shape)
                    index[axis] = n // 2
                    value = value.clone()
                    value[tuple(index)] = 0
            self._multipliers[key] = value.to(spectrum.dtype)
        return self._multipliers[key]

    def _inverse(self, field: torch.Tensor, axis: int | None, order: int) -> torch.Tensor:
        spectrum = self.spectrum(field)
        if spectrum is None:
            return torch.zeros_like(field)
        axes = spatial_axes(field, self.grid.dims)
        shape = tuple(field.shape[a] for a in axes)
        derivative = spectrum * self.multiplier(shape, axis, order, spectrum)
        return torch.fft.irfftn(derivative, s=shape, dim=axes).to(field.dtype)

    def _spectral(self, f: torch.Tensor, axis: int, order: int) -> torch.Tensor:
        self._tensor_axis(f, axis)  # checks the axis
        return self._inverse(f, axis, order)

    def laplacian(self, f: torch.Tensor) -> torch.Tensor:
        """``F^-1[-|k|^2 F[f]]``: one inverse transform."""
        return self._inverse(f, None, 2)


def interpolated(field: torch.Tensor, shape: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """``field`` Fourier-interpolated onto ``shape`` (its last ``len(shape)`` axes, ``fourier_resample``'s values to
    round-off) and the ``rfftn`` spectrum of the result."""
    dims = len(shape)
    shape_in = tuple(field.shape[-dims:])
    spectrum = resized_spectrum(torch.fft.rfftn(field, dim=spatial_axes(field, dims)), shape_in, shape)
    return torch.fft.irfftn(spectrum, s=tuple(shape), dim=spatial_axes(field, dims)), spectrum


def truncated_spectrum(field: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
    """The ``rfftn`` spectrum on ``shape`` of ``field`` resampled there (the kept modes of its spectrum)."""
    dims = len(shape)
    shape_in = tuple(field.shape[-dims:])
    return resized_spectrum(torch.fft.rfftn(field, dim=spatial_axes(field, dims)), shape_in, shape)
