"""Gray-Scott reaction-diffusion as The Well generated it: Fourier pseudo-spectral in space, ETDRK4 in time.

    d_t A = delta_A Lap A - A B^2 + F (1 - A)
    d_t B = delta_B Lap B + A B^2 - (F + k) B

on the periodic square ``[-1, 1)^2`` (the Well: 128^2, simulation step 1 s, frames every 10 s, ``delta_A = 2e-5``,
``delta_B = 1e-5``, six (F, k) pattern sets, random-Fourier-series and Gaussian-cluster initial conditions, whose
ranges follow the generator the Well's README names, danfortunato/spectral-gray-scott: ``init_fourier.m``,
``random_gaussians.m`` and ``gen_gs.m``; see ``random_fourier_state`` and ``gaussian_cluster_state``).
Diffusion is the linear part ``L`` of ``ETDRK4``; the reaction terms are evaluated on the grid
(they are polynomials of degree 3 in smooth fields, so no de-aliasing is applied, as in Chebfun's spin2).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from well_upao.families.replicas.etdrk4 import ETDRK4, PeriodicGrid, steps_between_frames

#: the Well's diffusivities (documented; `well-upao residual-floor --fit` estimates them from frames)
DELTA_A, DELTA_B = 2e-5, 1e-5


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


def trigonometric_interpolant(samples: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The trigonometric interpolant of periodic ``samples`` (equispaced, even sizes) evaluated on an equispaced grid
    of ``shape`` over the same box (zero-padding of the spectrum; each Nyquist coefficient split evenly between
    ``+N/2`` and ``-N/2``, so the interpolant is real and passes through the samples when the grids nest)."""
    spectrum = np.fft.fftn(samples)
    padded = np.zeros(shape, dtype=complex)
    for index in np.ndindex(*samples.shape):
        targets = [()]
        weight = 1.0
        for i, n, big in zip(index, samples.shape, shape, strict=True):
            k = i if i < n // 2 else i - n
            if k == -(n // 2):  # the Nyquist mode: half at +n/2, half at -n/2
                targets = [(*t, j) for t in targets for j in (n // 2, big - n // 2)]
                weight /= 2
            else:
                targets = [(*t, k % big) for t in targets]
        for target in targets:
            padded[target] += weight * spectrum[index]
    return np.real(np.fft.ifftn(padded)) * (np.prod(shape) / np.prod(samples.shape))


def fourier_mean_state(feed: float, kill: float) -> tuple[float, float, float, float]:
    """``(mean A, mean B, amplitude A, amplitude B)`` of the Well's random-Fourier initial condition: the trivial
    state ``(1, 0)`` with amplitudes 1, except where the third homogeneous steady state exists and is the one
    perturbed, ``kill < (sqrt(F) - 2 F) / 2``: with ``s = sqrt(F) / (F + k)``, ``A = (s - sqrt(s^2 - 4)) / (2 s)``,
    ``B = sqrt(F) (s + sqrt(s^2 - 4)) / 2`` and amplitudes ``0.9 min(x, 1 - x)`` (spectral-gray-scott,
    ``init_fourier.m``, which The Well's README names as its generator)."""
    if kill < (math.sqrt(feed) - 2 * feed) / 2:
        s = math.sqrt(feed) / (feed + kill)
        root = math.sqrt(s * s - 4)
        mean_a, mean_b = (s - root) / (2 * s), math.sqrt(feed) * (s + root) / 2
        return mean_a, mean_b, 0.9 * min(mean_a, 1 - mean_a), 0.9 * min(mean_b, 1 - mean_b)
    return 1.0, 0.0, 1.0, 1.0


def random_fourier_state(
    rng: np.random.Generator,
    grid: PeriodicGrid,
    max_k: int = 16,
    feed: float | None = None,
    kill: float | None = None,
) -> tuple[np.ndarray, ...]:
    """The Well's random Fourier series: ``A = mean_A + amp_A / 2 * I[U - 1/2]`` and likewise ``B`` (independent),
    where ``U`` are uniform samples on a ``2 max_k x 2 max_k`` grid and ``I`` their trigonometric interpolant
    (modes ``|k_i| <= max_k``; the Well's generator uses a 32 x 32 grid), about the state
    ``fourier_mean_state`` picks for ``(feed, kill)`` (the trivial state when they are not given)."""
    mean_a, mean_b, amp_a, amp_b = (1.0, 0.0, 1.0, 1.0) if feed is None else fourier_mean_state(feed, kill)
    size = (2 * max_k, 2 * max_k)
    noise_a = trigonometric_interpolant(rng.uniform(size=size) - 0.5, grid.shape)
    noise_b = trigonometric_interpolant(rng.uniform(size=size) - 0.5, grid.shape)
    return mean_a + 0.5 * amp_a * noise_a, mean_b + 0.5 * amp_b * noise_b


#: the Well's Gaussian clusters (spectral-gray-scott ``gen_gs.m``): count, amplitude and exponent ranges
GAUSSIAN_COUNT = (10, 100)
GAUSSIAN_AMPLITUDE = (1.0, 3.0)
GAUSSIAN_EXPONENT = (150.0, 300.0)


def gaussian_sum(rng: np.random.Generator, grid: PeriodicGrid) -> np.ndarray:
    """``sum_j a_j exp(-s_j |x - c_j|^2)`` over ``m`` Gaussians and their 8 periodic neighbours, ``m`` uniform in
    ``GAUSSIAN_COUNT`` (inclusive), ``a_j``, ``s_j`` uniform in the ranges above, centres uniform in the box."""
    x, y = (axis.numpy() for axis in grid.mesh())
    (x0, y0), (lx, ly) = grid.start, grid.length
    total = np.zeros(grid.shape)
    for _ in range(int(rng.integers(GAUSSIAN_COUNT[0], GAUSSIAN_COUNT[1] + 1))):
        amplitude = rng.uniform(*GAUSSIAN_AMPLITUDE)
        exponent = rng.uniform(*GAUSSIAN_EXPONENT)
        cx, cy = x0 + lx * rng.uniform(), y0 + ly * rng.uniform()
        for shift_x in (-lx, 0.0, lx):
            for shift_y in (-ly, 0.0, ly):
                total += amplitude * np.exp(-exponent * ((x - cx - shift_x) ** 2 + (y - cy - shift_y) ** 2))
    return total


def _unit_range(field: np.ndarray) -> np.ndarray:
    return (field - field.min()) / (field.max() - field.min())


def gaussian_cluster_state(rng: np.random.Generator, grid: PeriodicGrid) -> tuple[np.ndarray, ...]:
    """The Well's random clusters of Gaussians: ``A = normalise(1 - G_1)``, ``B = normalise(G_2)`` for two
    independent ``gaussian_sum`` fields, each scaled to ``[0, 1]`` (``(f - min f) / (max f - min f)``)."""
    a = _unit_range(1 - gaussian_sum(rng, grid))
    b = _unit_range(gaussian_sum(rng, grid))
    return a, b


#: initial conditions tried per trajectory before giving up (see ``GrayScottReplica.simulate``)
MAX_DRAWS = 8
#: ``max B`` below this fraction of ``F + k`` puts a frame in the trivial state's basin
TRIVIAL_BASIN = 0.1


def decays_to_trivial_state(b: torch.Tensor, feed: float, kill: float) -> bool:
    """Whether frames ``b (T, ...)`` fall into the basin of the trivial state ``A = 1, B = 0``: some frame has
    ``max B < 0.1 (F + k)``. There the reaction gain ``A B^2 <= 0.1 A (F + k) B`` is a small part of the loss
    ``(F + k) B`` (``A`` stays near 1: at most 1.25 initially, and it relaxes towards 1 once ``B`` is small), so
    ``B`` decays to zero exponentially and the trajectory ends in a uniform state."""
    peaks = b.flatten(1).amax(1)
    return bool((peaks < TRIVIAL_BASIN * (feed + kill)).any())
