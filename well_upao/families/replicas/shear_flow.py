"""Periodic shear flow as The Well describes it: 2D incompressible Navier-Stokes with a passive tracer,

    d_t u + u.grad u + grad p = nu Lap u,   div u = 0,   d_t s + u.grad s = D Lap s,
    nu = 1 / Reynolds,   D = nu / Schmidt,   integral of p = 0,

on ``x in [0, 1)``, ``y in [-1, 1)`` (periodic). Solved in vorticity form ``w = d_x u_y - d_y u_x``:
``d_t w + u.grad w = nu Lap w`` with ``u = (d_y psi, -d_x psi)``, ``Lap psi = -w``, Fourier pseudo-spectral with
the 2/3 de-aliasing rule and ETDRK4 (diffusion exact, advection explicit), the step set by a CFL number on the
initial velocity. The pressure is the zero-mean solution of ``Lap p = -d_i d_j (u_i u_j)``.

Initial condition (the Well's generating code, RudyMorel/the-well-rbc-sf ``src/generate_sf.py``
``init_standard_shear``, which the Well's README links): ``n_shear`` tanh shear layers ``s_k tanh(5 n_shear (y -
y_k) / w) / 2`` of alternating sign ``s_k = -1, +1, ..`` at ``y_k = -1 + (2k + 1) / n_shear``, plus 1/2, make ``u_x``;
``u_y`` is ``0.1 s_k sin(n_blobs pi x) exp(-25 n_shear^2 (y - y_k)^2 / w^2)`` at each layer. The README writes the
layers as ``tanh(5 (y - y_k) / (n_shear w))`` and the blobs' envelope as ``exp(-25 (y - y_k)^2 / w^2)``: layers
``n_shear^2`` times thicker than the code's, which at Reynolds 1e4 are Kelvin-Helmholtz stable at every wavelength the
unit-length box holds (``k delta < 1`` with ``delta = n_shear w / 5``): the blobs decay, the flow relaxes to a parallel
shear ``u = (U(y), 0)``, whose pressure vanishes (``Lap p = -d_i d_j (u_i u_j) = 0``), and The Well's data checker
flags every late pressure frame as constant. We follow the code, including ``sin(n_blobs pi x)``: for odd
``n_blobs`` it is not periodic on ``[0, 1)`` (a kink at ``x = 0``), and like the code we evolve the Fourier
interpolant of its grid values, whose broad spectrum seeds every horizontal mode (with ``sin(2 pi n_blobs x)``, an
earlier choice of ours, only multiples of ``2 pi n_blobs`` were seeded, all Kelvin-Helmholtz stable in some of the
Well's layer widths, and those flows relaxed to parallel shear too). One deviation: each layer is summed over its
periodic images in ``y`` (wide layers would otherwise have a kink at ``y = +-1``). The tracer starts equal to
``u_x``. The velocity is made divergence-free (the solver evolves its vorticity); like the Well's files, the
stored pressure of the first frame is zero (Dedalus initialises it so).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from well_upao.families.replicas.etdrk4 import ETDRK4, PeriodicGrid, steps_between_frames

#: CFL number of the advective step (ETDRK4's explicit stability limit on the imaginary axis is about 2.8)
CFL = 0.5


def shear_grid(nx: int, ny: int | None = None) -> PeriodicGrid:
    """``nx x ny`` points on ``[0, 1) x [-1, 1)`` (default ``ny = 2 nx``: square cells)."""
    return PeriodicGrid((nx, ny or 2 * nx), (1.0, 2.0), (0.0, -1.0))


#: periodic images summed on each side, so wide layers (large width) stay smooth across y = +-1
IMAGES = 4


def initial_state(grid: PeriodicGrid, n_shear: int, n_blobs: int, width: float) -> dict[str, torch.Tensor]:
    """The generating code's shear layers and blobs (see the module docstring): ``u_x, u_y, tracer``.

    Each layer and blob is summed over its periodic images ``y + 2m``, ``|m| <= IMAGES`` (the alternating signs
    make the tanh images cancel far away): identical to the README's profile to round-off for narrow layers, and
    smooth across ``y = +-1`` for the wide ones, where the plain profile has a kink."""
    x, y = grid.mesh()
    centres = [-1 + (k + 0.5) * 2 / n_shear for k in range(n_shear)]
    ux = torch.full_like(x, 0.5)
    uy = torch.zeros_like(x)
    for k, centre in enumerate(centres):
        for image in range(-IMAGES, IMAGES + 1):
            offset = y - centre - 2.0 * image
            sign = (-1) ** (k + 1)
            ux = ux + 0.5 * sign * torch.tanh(5 * n_shear * offset / width)
            blob = torch.exp(-25 * (n_shear * offset / width) ** 2)
            uy = uy + 0.1 * sign * torch.sin(n_blobs * math.pi * x) * blob
    return {"u_x": ux, "u_y": uy, "tracer": ux.clone()}


class ShearFlowOperators:
    """Spectral velocity, pressure and advection on one grid."""

    def __init__(self, grid: PeriodicGrid):
        self.grid = grid
        self.kx, self.ky = grid.wavenumbers()
        self.k2 = self.kx**2 + self.ky**2
        self.k2_safe = torch.where(self.k2 == 0, torch.ones_like(self.k2), self.k2)
        self.dealias = grid.dealias_mask()

    def velocity(self, vorticity_hat: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        psi_hat = vorticity_hat / self.k2_safe  # Lap psi = -w  ->  -k^2 psi^ = -w^
        psi_hat = torch.where(self.k2 == 0, torch.zeros_like(psi_hat), psi_hat)
        return self.grid.ifft(1j * self.ky * psi_hat), self.grid.ifft(-1j * self.kx * psi_hat)

    def vorticity_hat(self, ux: torch.Tensor, uy: torch.Tensor) -> torch.Tensor:
        return 1j * self.kx * self.grid.fft(uy) - 1j * self.ky * self.grid.fft(ux)

    def advection_hat(self, ux: torch.Tensor, uy: torch.Tensor, field_hat: torch.Tensor) -> torch.Tensor:
        """``-(u.grad f)^``, de-aliased."""
        fx, fy = self.grid.ifft(1j * self.kx * field_hat), self.grid.ifft(1j * self.ky * field_hat)
        return -self.dealias * self.grid.fft(ux * fx + uy * fy)

    def pressure(self, ux: torch.Tensor, uy: torch.Tensor) -> torch.Tensor:
        """Zero-mean ``p`` with ``Lap p = -d_i d_j (u_i u_j)``: ``p^ = -k_i k_j (u_i u_j)^ / k^2``."""
        fft = self.grid.fft
        source = (
            self.kx**2 * fft(ux * ux) + 2 * self.kx * self.ky * fft(ux * uy) + self.ky**2 * fft(uy * uy)
        ) * self.dealias
        p_hat = -source / self.k2_safe
        return self.grid.ifft(torch.where(self.k2 == 0, torch.zeros_like(p_hat), p_hat))


def simulate_shear_flow(
    state: dict[str, torch.Tensor],
    reynolds: float,
    schmidt: float,
    times: np.ndarray,
    grid: PeriodicGrid,
    max_step: float | None = None,
) -> dict[str, torch.Tensor]:
    """``u_x, u_y, pressure, tracer`` at ``times`` (equal spacing; ``times[0]`` the initial state). The step is
    the CFL step of the initial velocity unless ``max_step`` fixes it (convergence tests)."""
    ops = ShearFlowOperators(grid)
    nu = 1.0 / reynolds
    diffusivity = nu / schmidt
    w_hat = ops.vorticity_hat(state["u_x"].double(), state["u_y"].double())
    s_hat = grid.fft(state["tracer"].double())
    ux, uy = ops.velocity(w_hat)
    times = np.asarray(times, dtype=np.float64)
    frame_dt = float(times[1] - times[0]) if len(times) > 1 else 1.0
    spacing = min(length / n for length, n in zip(grid.length, grid.shape, strict=True))
    speed = float(torch.sqrt(ux**2 + uy**2).max()) + 1e-12
    substeps = steps_between_frames(frame_dt, max_step or CFL * spacing / speed)

    def nonlinear(spectra: list[torch.Tensor]) -> list[torch.Tensor]:
        vx, vy = ops.velocity(spectra[0])
        return [ops.advection_hat(vx, vy, spectra[0]), ops.advection_hat(vx, vy, spectra[1])]

    laplacian = grid.laplacian_symbol()
    stepper = ETDRK4([nu * laplacian, diffusivity * laplacian], frame_dt / substeps, nonlinear)
    out = {"u_x": [ux], "u_y": [uy], "pressure": [torch.zeros_like(ux)], "tracer": [grid.ifft(s_hat)]}
    spectra = [w_hat, s_hat]
    for index in range(1, len(times)):
        for _ in range(substeps):
            spectra = stepper.step(spectra)
        vx, vy = ops.velocity(spectra[0])
        if not torch.isfinite(vx).all():
            raise FloatingPointError(f"shear flow blew up before t = {times[index]:g} (Re = {reynolds:g})")
        out["u_x"].append(vx)
        out["u_y"].append(vy)
        out["pressure"].append(ops.pressure(vx, vy))
        out["tracer"].append(grid.ifft(spectra[1]))
    return {name: torch.stack(frames) for name, frames in out.items()}
