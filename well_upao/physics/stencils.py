"""Finite-difference stencils for PDE residuals (1D/2D/3D, batched, differentiable, torch-only).

Fields are tensors whose *last* ``d`` dimensions are the spatial axes ``(x_1, ..., x_d)``; any leading
dimensions (batch, time) broadcast. Every operator returns a tensor of the input's shape. Boundary handling per
axis (paper appendix "PDE residual Implementation"):

* periodic axis: wrap-around neighbours (``f_{-1} = f_{N-1}``);
* non-periodic axis: one ghost layer on each side by second-order one-sided (quadratic) extrapolation of the
  three nearest interior values, ``f_{-1} = 3 f_0 - 3 f_1 + f_2`` and ``f_N = 3 f_{N-1} - 3 f_{N-2} + f_{N-3}``
  (exact for quadratics).

The residual is only ever *read* on the interior ``S_p`` (``interior``): the boundary band ``S_b`` of width 1 is
excluded, so the ghost layer only supports the stencils of operators internal to ``N``. On periodic axes two
more accurate derivatives are options (non-periodic axes keep the second-order stencils):

* ``Stencils(grid, derivative="fd4")``: fourth-order central differences,
  ``f' = (-f_{i+2} + 8 f_{i+1} - 8 f_{i-1} + f_{i-2}) / (12 dx)``,
  ``f'' = (-f_{i+2} + 16 f_{i+1} - 30 f_i + 16 f_{i-1} - f_{i-2}) / (12 dx^2)``;
* ``Stencils(grid, derivative="spectral")``: the exact derivative of the trigonometric interpolant.

The derivative is a choice of the discretisation (it travels with the objective or solver that uses it), not a
property of the grid. With either, the conservative upwind derivative of a flux becomes the same central
derivative of the flux.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch


def pad_axis(f: torch.Tensor, axis: int, periodic: bool) -> torch.Tensor:
    """Add one neighbour layer on both sides of ``axis`` (negative index into the tensor)."""
    n = f.shape[axis]
    if periodic:
        return torch.cat([f.narrow(axis, n - 1, 1), f, f.narrow(axis, 0, 1)], dim=axis)
    if n < 3:
        raise ValueError(f"a non-periodic axis needs at least 3 points for ghost extrapolation, got {n}")
    first = 3 * f.narrow(axis, 0, 1) - 3 * f.narrow(axis, 1, 1) + f.narrow(axis, 2, 1)
    last = 3 * f.narrow(axis, n - 1, 1) - 3 * f.narrow(axis, n - 2, 1) + f.narrow(axis, n - 3, 1)
    return torch.cat([first, f, last], dim=axis)


def neighbours(f: torch.Tensor, axis: int, periodic: bool, offsets: Sequence[int]) -> dict[int, torch.Tensor]:
    """``{o: f_{i+o}}`` for i = 0..n-1 along ``axis``: ``torch.roll`` on periodic axes (cheap in autograd),
    repeated quadratic ghost extrapolation on non-periodic ones."""
    if periodic:
        return {o: torch.roll(f, -o, dims=axis) if o else f for o in offsets}
    width = max(abs(o) for o in offsets)
    padded = f
    for _ in range(width):
        padded = pad_axis(padded, axis, periodic=False)
    n = f.shape[axis]
    return {o: padded.narrow(axis, width + o, n) for o in offsets}


DERIVATIVES = ("fd", "fd4", "spectral")


@dataclass(frozen=True)
class Grid:
    """Spacing and boundary type of each spatial axis."""

    spacing: tuple[float, ...]
    periodic: tuple[bool, ...]

    def __post_init__(self) -> None:
        if len(self.spacing) != len(self.periodic):
            raise ValueError("spacing and periodic must have one entry per spatial axis")

    @property
    def dims(self) -> int:
        return len(self.spacing)


class Stencils:
    """Differential operators on a ``Grid`` with the ``derivative`` scheme on periodic axes (``fd``:
    second-order central, ``fd4``: fourth-order central, ``spectral``; non-periodic axes always use ``fd``);
    ``axis`` counts spatial axes from 0 (= ``x_1``)."""

    def __init__(self, grid: Grid, derivative: str = "fd"):
        if derivative not in DERIVATIVES:
            raise ValueError(f"derivative must be one of {DERIVATIVES}, got {derivative!r}")
        self.grid, self.derivative = grid, derivative

    def _tensor_axis(self, f: torch.Tensor, axis: int) -> int:
        if not 0 <= axis < self.grid.dims:
            raise ValueError(f"spatial axis {axis} out of range for a {self.grid.dims}D grid")
        return f.ndim - self.grid.dims + axis

    def _spectral(self, f: torch.Tensor, axis: int, order: int) -> torch.Tensor:
        ax = self._tensor_axis(f, axis)
        n = f.shape[ax]
        length = n * self.grid.spacing[axis]
        # angular wavenumbers in the field's precision (torch's default float32 erred by 3e-8 on float64 data)
        real = torch.float64 if f.dtype == torch.float64 else torch.float32
        k = torch.fft.fftfreq(n, d=length / (2 * math.pi * n), device=f.device, dtype=real)
        multiplier = (1j * k) ** order
        if order % 2 == 1 and n % 2 == 0:
            multiplier[n // 2] = 0  # the Nyquist mode has no odd derivative on a real grid
        shape = [1] * f.ndim
        shape[ax] = n
        spectrum = torch.fft.fft(f.to(torch.complex128 if f.dtype == torch.float64 else torch.complex64), dim=ax)
        return torch.fft.ifft(spectrum * multiplier.reshape(shape), dim=ax).real.to(f.dtype)

    def _use_spectral(self, axis: int) -> bool:
        return self.derivative == "spectral" and self.grid.periodic[axis]

    def _use_fourth_order(self, axis: int) -> bool:
        return self.derivative == "fd4" and self.grid.periodic[axis]

    def _fourth_order(self, f: torch.Tensor, axis: int, order: int) -> torch.Tensor:
        ax = self._tensor_axis(f, axis)
        near = neighbours(f, ax, True, (-2, -1, 1, 2))
        h = self.grid.spacing[axis]
        if order == 1:
            return (-near[2] + 8 * near[1] - 8 * near[-1] + near[-2]) / (12 * h)
        return (-near[2] + 16 * near[1] - 30 * f + 16 * near[-1] - near[-2]) / (12 * h**2)

    def d(self, f: torch.Tensor, axis: int) -> torch.Tensor:
        """First derivative, central: ``(f_{i+1} - f_{i-1}) / (2 dx)`` (see the module docstring for the others)."""
        if self._use_spectral(axis):
            return self._spectral(f, axis, 1)
        if self._use_fourth_order(axis):
            return self._fourth_order(f, axis, 1)
        ax = self._tensor_axis(f, axis)
        near = neighbours(f, ax, self.grid.periodic[axis], (-1, 1))
        return (near[1] - near[-1]) / (2 * self.grid.spacing[axis])

    def d2(self, f: torch.Tensor, axis: int) -> torch.Tensor:
        """Second derivative, central: ``(f_{i+1} - 2 f_i + f_{i-1}) / dx^2``."""
        if self._use_spectral(axis):
            return self._spectral(f, axis, 2)
        if self._use_fourth_order(axis):
            return self._fourth_order(f, axis, 2)
        ax = self._tensor_axis(f, axis)
        near = neighbours(f, ax, self.grid.periodic[axis], (-1, 1))
        return (near[1] - 2 * f + near[-1]) / self.grid.spacing[axis] ** 2

    def gradient(self, f: torch.Tensor) -> list[torch.Tensor]:
        """``[d f / d x_a for each axis]``."""
        return [self.d(f, a) for a in range(self.grid.dims)]

    def divergence(self, components: Sequence[torch.Tensor]) -> torch.Tensor:
        """``sum_a d v_a / d x_a`` (central differences)."""
        return sum(self.d(v, a) for a, v in enumerate(components))

    def laplacian(self, f: torch.Tensor) -> torch.Tensor:
        """``sum_a d^2 f / d x_a^2`` (the (2d+1)-point central stencil)."""
        return sum(self.d2(f, a) for a in range(self.grid.dims))

    def upwind_derivative(self, flux: torch.Tensor, velocity: torch.Tensor, axis: int) -> torch.Tensor:
        """Conservative second-order upwind ``d(flux)/dx`` (paper eq. for the face values, after CAN-PINN).

        Face ``i + 1/2`` takes the left-biased value ``3/2 F_i - 1/2 F_{i-1}`` when the face velocity
        ``(v_i + v_{i+1}) / 2`` is >= 0, else the right-biased ``3/2 F_{i+1} - 1/2 F_{i+2}``; the derivative is
        ``(F_{i+1/2} - F_{i-1/2}) / dx``. Stencil width 2 on each side: non-periodic axes extrapolate a second
        ghost layer from the first (both quadratic), which only matters next to the excluded band. With
        ``derivative="spectral"`` on a periodic axis this is the spectral derivative of the flux.
        """
        if self._use_spectral(axis) or self._use_fourth_order(axis):
            return self.d(flux, axis)  # smooth periodic data: the accurate central derivative, no upwinding
        ax = self._tensor_axis(flux, axis)
        periodic = self.grid.periodic[axis]
        f = neighbours(flux, ax, periodic, (-2, -1, 0, 1, 2))
        v = neighbours(velocity, ax, periodic, (-1, 0, 1))

        def face(o: int) -> torch.Tensor:  # value at face i + o + 1/2
            left_biased = 1.5 * f[o] - 0.5 * f[o - 1]  # F^+
            right_biased = 1.5 * f[o + 1] - 0.5 * f[o + 2]  # F^-
            upwind_from_left = (v[o] + v[o + 1] >= 0).to(flux.dtype)  # a product: cheaper in autograd than where
            return right_biased + (left_biased - right_biased) * upwind_from_left

        return (face(0) - face(-1)) / self.grid.spacing[axis]


def interior(f: torch.Tensor, dims: int, width: int = 1) -> torch.Tensor:
    """The residual region ``S_p``: drop the boundary band of ``width`` points on every spatial axis."""
    for ax in range(f.ndim - dims, f.ndim):
        f = f.narrow(ax, width, f.shape[ax] - 2 * width)
    return f


def interior_mean_square(f: torch.Tensor, dims: int, width: int = 1) -> torch.Tensor:
    """Mean of ``f^2`` over ``S_p`` for each leading index: ``(*lead, *space) -> (*lead,)``.

    A multiplication by the interior mask rather than slicing: slicing's backward zero-fills a full tensor."""
    space = tuple(f.shape[f.ndim - dims :])
    mask = (~boundary_band_mask(space, width, device=f.device)).to(f.dtype)
    return (f.square() * mask).flatten(f.ndim - dims).sum(-1) / mask.sum()


def boundary_band_mask(shape: Sequence[int], width: int = 1, device=None) -> torch.Tensor:
    """Boolean mask of the band ``S_b``: points within ``width`` of any face of the spatial grid ``shape``."""
    mask = torch.zeros(tuple(shape), dtype=torch.bool, device=device)
    for ax, n in enumerate(shape):
        index = [slice(None)] * len(shape)
        index[ax] = slice(0, width)
        mask[tuple(index)] = True
        index[ax] = slice(n - width, n)
        mask[tuple(index)] = True
    return mask
