"""Fourier pseudo-spectral grids and the ETDRK4 time stepper (Cox & Matthews 2002; coefficients by the contour
integrals of Kassam & Trefethen 2005), in PyTorch float64.

For ``d_t v^ = L v^ + N(v)^`` with ``L`` diagonal in Fourier space (diffusion), one step of size ``h``:

    a = E2 v + Q N(v),   b = E2 v + Q N(a),   c = E2 a + Q (2 N(b) - N(v))
    v <- E v + f1 N(v) + 2 f2 (N(a) + N(b)) + f3 N(c)

with ``E = exp(hL)``, ``E2 = exp(hL/2)`` and, for ``z = hL``,
``Q = h (e^{z/2} - 1)/z``, ``f1 = h (-4 - z + e^z (4 - 3z + z^2)) / z^3``, ``f2 = h (2 + z + e^z (z - 2)) / z^3``,
``f3 = h (-4 - 3z - z^2 + e^z (4 - z)) / z^3``, each evaluated as the mean over ``M`` points of a circle of radius
1 around ``z`` (the formulas cancel catastrophically for small ``|z|``; the contour mean does not). The scheme is
fourth order in time and exact for the linear part (a single decaying mode decays by exactly ``exp(hL)``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

#: points on the contour around each z = hL (Kassam & Trefethen use 32 for double precision)
CONTOUR_POINTS = 32


@dataclass(frozen=True)
class PeriodicGrid:
    """A periodic box ``[start_i, start_i + length_i)`` with ``shape[i]`` points per axis (``x_j = start + j L/N``)."""

    shape: tuple[int, ...]
    length: tuple[float, ...]
    start: tuple[float, ...]

    def axes(self) -> tuple[torch.Tensor, ...]:
        return tuple(
            s + torch.arange(n, dtype=torch.float64) * (length / n)
            for n, length, s in zip(self.shape, self.length, self.start, strict=True)
        )

    def mesh(self) -> tuple[torch.Tensor, ...]:
        return torch.meshgrid(*self.axes(), indexing="ij")

    def wavenumbers(self) -> tuple[torch.Tensor, ...]:
        """Angular wavenumbers ``2 pi k / L`` of ``rfftn`` (last axis halved), broadcastable to the spectrum."""
        dims = len(self.shape)
        out = []
        for axis, (n, length) in enumerate(zip(self.shape, self.length, strict=True)):
            if axis == dims - 1:
                k = torch.fft.rfftfreq(n, d=length / n, dtype=torch.float64)
            else:
                k = torch.fft.fftfreq(n, d=length / n, dtype=torch.float64)
            view = [1] * dims
            view[axis] = k.numel()
            out.append((2 * math.pi * k).view(view))
        return tuple(out)

    def laplacian_symbol(self) -> torch.Tensor:
        return -sum(k**2 for k in self.wavenumbers())

    def dealias_mask(self) -> torch.Tensor:
        """The 2/3 rule: keep modes with ``|k_i| < N_i / 3`` on every axis (1.0 kept, 0.0 dropped)."""
        mask = torch.ones(())
        for k, n, length in zip(self.wavenumbers(), self.shape, self.length, strict=True):
            index = (k.abs() * length / (2 * math.pi)).round()
            mask = mask * (index < n / 3).double()
        return mask

    def fft(self, field: torch.Tensor) -> torch.Tensor:
        return torch.fft.rfftn(field, dim=tuple(range(-len(self.shape), 0)))

    def ifft(self, spectrum: torch.Tensor) -> torch.Tensor:
        return torch.fft.irfftn(spectrum, s=self.shape, dim=tuple(range(-len(self.shape), 0)))


class ETDRK4:
    """Exponential time differencing RK4 for stiff diagonal linear parts (see the module docstring).

    ``linear``: one symbol per field (``L`` as a tensor broadcastable to the field's spectrum); ``nonlinear``:
    maps the list of spectra to the list of ``N(v)^`` spectra.
    """

    def __init__(
        self,
        linear: Sequence[torch.Tensor],
        h: float,
        nonlinear: Callable[[list[torch.Tensor]], list[torch.Tensor]],
    ):
        self.h = float(h)
        self.nonlinear = nonlinear
        self.coefficients = [self._coefficients(symbol) for symbol in linear]

    def _coefficients(self, symbol: torch.Tensor) -> dict[str, torch.Tensor]:
        h = self.h
        z = (h * symbol).to(torch.complex128)
        angles = torch.arange(1, CONTOUR_POINTS + 1, dtype=torch.float64) - 0.5
        roots = torch.exp(1j * math.pi * angles / CONTOUR_POINTS).to(torch.complex128)
        r = z.unsqueeze(-1) + roots  # (..., M)

        def mean(values: torch.Tensor) -> torch.Tensor:
            return values.mean(-1).real

        e = torch.exp(r)
        return {
            "E": torch.exp(h * symbol),
            "E2": torch.exp(h * symbol / 2),
            "Q": h * mean((torch.exp(r / 2) - 1) / r),
            "f1": h * mean((-4 - r + e * (4 - 3 * r + r**2)) / r**3),
            "f2": h * mean((2 + r + e * (r - 2)) / r**3),
            "f3": h * mean((-4 - 3 * r - r**2 + e * (4 - r)) / r**3),
        }

    def step(self, spectra: list[torch.Tensor]) -> list[torch.Tensor]:
        c = self.coefficients
        n_v = self.nonlinear(spectra)
        a = [k["E2"] * v + k["Q"] * n for k, v, n in zip(c, spectra, n_v, strict=True)]
        n_a = self.nonlinear(a)
        b = [k["E2"] * v + k["Q"] * n for k, v, n in zip(c, spectra, n_a, strict=True)]
        n_b = self.nonlinear(b)
        cc = [k["E2"] * x + k["Q"] * (2 * nb - nv) for k, x, nb, nv in zip(c, a, n_b, n_v, strict=True)]
        n_c = self.nonlinear(cc)
        return [
            k["E"] * v + k["f1"] * nv + 2 * k["f2"] * (na + nb) + k["f3"] * nc
            for k, v, nv, na, nb, nc in zip(c, spectra, n_v, n_a, n_b, n_c, strict=True)
        ]


def steps_between_frames(frame_dt: float, max_step: float) -> int:
    """The smallest number of equal sub-steps of a frame interval that are no longer than ``max_step``."""
    if frame_dt <= 0 or max_step <= 0:
        raise ValueError("frame spacing and step must be positive")
    return max(1, math.ceil(frame_dt / max_step - 1e-9))
