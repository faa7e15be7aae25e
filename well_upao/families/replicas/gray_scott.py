"""Gray-Scott reaction-diffusion as The Well generated it: Fourier pseudo-spectral in space, ETDRK4 in time.

    d_t A = delta_A Lap A - A B^2 + F (1 - A)
    d_t B = delta_B Lap B + A B^2 - (F + k) B

on the periodic square ``[-1, 1)^2`` (the Well: 128^2, simulation step 1 s, frames every 10 s, ``delta_A = 2e-5``,
``delta_B = 1e-5``, six (F, k) pattern sets, random-Fourier-series and Gaussian-cluster initial conditions).
Diffusion is the linear part ``L`` of :class:`~.etdrk4.ETDRK4`; the reaction terms are evaluated on the grid
(they are polynomials of degree 3 in smooth fields, so no de-aliasing is applied, as in Chebfun's spin2).
"""

from __future__ import annotations

import numpy as np
import torch

from well_upao.families.replicas.etdrk4 import ETDRK4, PeriodicGrid, steps_between_frames

#: the Well's diffusivities (documented; `well-upao residual-floor --fit` estimates them from frames)
DELTA_A, DELTA_B = 2e-5, 1e-5
#: the Well's six parameter sets: name -> (F, k)
PATTERNS: dict[str, tuple[float, float]] = {
    "gliders": (0.014, 0.054),
    "bubbles": (0.098, 0.057),
    "maze": (0.029, 0.057),
    "worms": (0.058, 0.065),
    "spirals": (0.018, 0.051),
    "spots": (0.03, 0.062),
}


def square_grid(resolution: int) -> PeriodicGrid:
    return PeriodicGrid((resolution, resolution), (2.0, 2.0), (-1.0, -1.0))


def simulate_gray_scott(
    a0: torch.Tensor,
    b0: torch.Tensor,
    feed: float,
    kill: float,
    times: np.ndarray,
    grid: PeriodicGrid,
    step: float = 1.0,
    delta_a: float = DELTA_A,
    delta_b: float = DELTA_B,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(A, B)`` at ``times`` (``times[0]`` is the initial state; equal spacing), each ``(len(times), *shape)``.

    Each frame interval is split into the fewest equal ETDRK4 steps no longer than ``step``."""
    times = np.asarray(times, dtype=np.float64)
    frame_dt = float(times[1] - times[0]) if len(times) > 1 else step
    substeps = steps_between_frames(frame_dt, step)
    h = frame_dt / substeps
    laplacian = grid.laplacian_symbol()

    def reaction(spectra: list[torch.Tensor]) -> list[torch.Tensor]:
        a, b = grid.ifft(spectra[0]), grid.ifft(spectra[1])
        ab2 = a * b * b
        return [grid.fft(-ab2 + feed * (1 - a)), grid.fft(ab2 - (feed + kill) * b)]

    stepper = ETDRK4([delta_a * laplacian, delta_b * laplacian], h, reaction)
    spectra = [grid.fft(a0.double()), grid.fft(b0.double())]
    frames_a, frames_b = [a0.double()], [b0.double()]
    for _ in range(len(times) - 1):
        for _ in range(substeps):
            spectra = stepper.step(spectra)
        frames_a.append(grid.ifft(spectra[0]))
        frames_b.append(grid.ifft(spectra[1]))
    return torch.stack(frames_a), torch.stack(frames_b)


def random_fourier_state(rng: np.random.Generator, grid: PeriodicGrid, max_k: int = 4) -> tuple[np.ndarray, ...]:
    """A smooth random ``B`` in ``[0, 0.5]`` from Fourier modes ``|k_i| <= max_k``; ``A = 1 - B``."""
    x, y = (axis.numpy() for axis in grid.mesh())
    field = np.zeros(grid.shape)
    for kx in range(-max_k, max_k + 1):
        for ky in range(-max_k, max_k + 1):
            if kx == ky == 0:
                continue
            amplitude = rng.normal() / np.hypot(kx, ky)
            field += amplitude * np.cos(np.pi * (kx * x + ky * y) + rng.uniform(0, 2 * np.pi))
    b = 0.25 * (1 + field / np.abs(field).max())
    return 1 - b, b


def gaussian_cluster_state(rng: np.random.Generator, grid: PeriodicGrid) -> tuple[np.ndarray, ...]:
    """``B`` a sum of 3-12 periodic Gaussian blobs of width 0.03-0.1 (clipped at 1); ``A = 1 - B / 2``."""
    x, y = (axis.numpy() for axis in grid.mesh())
    b = np.zeros(grid.shape)
    for _ in range(int(rng.integers(3, 13))):
        cx, cy = rng.uniform(-1, 1, size=2)
        width = rng.uniform(0.03, 0.1)
        dx = (x - cx + 1) % 2 - 1  # periodic distance on [-1, 1)
        dy = (y - cy + 1) % 2 - 1
        b += np.exp(-(dx**2 + dy**2) / (2 * width**2))
    b = np.minimum(b, 1.0)
    return 1 - b / 2, b
