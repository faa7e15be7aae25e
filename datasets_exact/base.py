"""The closed-form families of the exact-solution datasets, on the family base of ``well_upao.families``.

Each PDE module defines one ``ExactSolution`` subclass with the paper's parameter distributions (appendix
"Exact-Solution Finetuning Datasets") and sizes (table "Overview of pretraining and downstream datasets"), and
evaluates its closed form on the periodic, boundary-exclusive grid ``x_i = i L / N``. This module holds what they
share.

Evaluation is vectorised and uses separability (products of 1D factors, small dense matrix products over
mode indices) instead of a per-point sum over modes, so that generation runs near the I/O limit. It is also
reproducible bit for bit: every value is computed in float64 from IEEE-754 basic operations, the portable
elementary functions and exact matrix products of ``well_upao.families.portable`` (never numpy's ``exp``,
``sin``, ``cos``, complex arithmetic or a plain BLAS product, whose last bits depend on the CPU), and rounded to
the stored precision once. Sums over a trajectory's modes run in the trajectory's own mode order, and a contraction's
operands are scaled per trajectory (rows) or fixed (tables), so a trajectory's values do not depend on which
others share an evaluation call.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from well_upao.families.base import TWO_PI, FieldSpec, TrajectoryFamily, TrajectoryParameters
from well_upao.families.portable import exact_matmul, sincos

__all__ = ["TWO_PI", "ExactSolution", "FieldSpec", "FixedWavenumbers", "TrajectoryFamily", "TrajectoryParameters"]


class ExactSolution(TrajectoryFamily):
    """A PDE with a closed-form solution family and the paper's parameter distributions."""

    kind = "closed_form"


class FixedWavenumbers(ExactSolution):
    """A 1D closed form summed per wavenumber against a fixed table ``[cos(k x); sin(k x)]`` of every wavenumber
    its sampler draws (``wavenumbers``), so the spatial factor of a product does not depend on the batch."""

    wavenumbers: np.ndarray

    def modes(self, params: Sequence[TrajectoryParameters], *columns: str) -> tuple[np.ndarray, ...]:
        """``(k, *columns)`` of a batch's mode tables, each ``(B, max modes)``; wavenumbers outside the table are
        refused."""
        check_wavenumbers(params, "k", self.wavenumbers)
        return tuple(mode_table(params, column) for column in ("k", *columns))

    def per_wavenumber(self, values: np.ndarray, k: np.ndarray) -> np.ndarray:
        """Per-mode values ``(B, ..., J)`` summed per table wavenumber: ``(B, ..., K)``."""
        return sum_by_wavenumber(values, k, self.wavenumbers)

    def table(self, x: np.ndarray) -> np.ndarray:
        return harmonic_table(self.wavenumbers, x)


def harmonic_table(wavenumbers: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Rows ``cos(k_i x)`` then ``sin(k_i x)``: shape ``(2K, N)`` for ``K`` wavenumbers and ``N`` points."""
    sin_kx, cos_kx = sincos(np.outer(wavenumbers, x))
    return np.concatenate([cos_kx, sin_kx])


def plane_wave_sum_2d(
    re: np.ndarray,
    im: np.ndarray,
    m: np.ndarray,
    n: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    dtype: type = np.float64,
) -> np.ndarray:
    """``Re sum_j C_j(t) exp(i (m_j x + n_j y))`` for every time, with ``C = re + i im`` of shape ``(T, J)``.

    By separability: the modes are gathered (in mode order) into coefficient matrices ``M(t)`` over the distinct
    wavenumbers (``K_m x K_n``); then ``H = E_x M`` with ``E_x = exp(i m x)`` (``(N_x, K_m)`` per time), and the
    field is ``Re[H E_y] = sum_k cos(k y) sum_{|n|=k} Re H_n - sin(k y) sum_{|n|=k} sign(n) Im H_n`` over the
    distinct ``k = |n|`` (``cos`` and ``sin`` being even and odd): one product of the ``T N_x`` rows of those
    coefficients with a fixed table of at most ``2 K_n`` rows, cost ``O(T N^2 K_n)`` instead of ``O(T N^2 J)``.
    Both products are ``exact_matmul`` calls; the result is rounded to ``dtype`` once.
    """
    m_values, m_index = np.unique(m, return_inverse=True)
    n_values, n_index = np.unique(n, return_inverse=True)
    n_times, k_m, k_n = re.shape[0], len(m_values), len(n_values)
    matrix_re, matrix_im = np.zeros((n_times, k_m, k_n)), np.zeros((n_times, k_m, k_n))
    for j in range(len(m)):
        matrix_re[:, m_index[j], n_index[j]] += re[:, j]
        matrix_im[:, m_index[j], n_index[j]] += im[:, j]
    # [cos(m x), sin(m x)] @ [[Re M, Im M], [-Im M, Re M]] = [Re H, Im H]
    rotation = np.concatenate(
        [np.concatenate([matrix_re, matrix_im], axis=2), np.concatenate([-matrix_im, matrix_re], axis=2)], axis=1
    )  # (T, 2 K_m, 2 K_n)
    h = exact_matmul(harmonic_table(m_values, x).T, rotation)  # (T, N_x, 2 K_n)
    h_re, h_im = h[..., :k_n], h[..., k_n:]
    k_values = np.unique(np.abs(n_values))
    cos_coefficients = np.zeros((*h.shape[:2], len(k_values)))
    sin_coefficients = np.zeros_like(cos_coefficients)
    for i, n_value in enumerate(n_values):  # ascending n: a fixed order of the folding sums
        k = np.searchsorted(k_values, abs(n_value))
        cos_coefficients[..., k] += h_re[..., i]
        sin_coefficients[..., k] -= np.sign(n_value) * h_im[..., i]
    has_sine = k_values > 0  # sin(0 y) = 0: no row for it
    left = np.concatenate([cos_coefficients, sin_coefficients[..., has_sine]], axis=-1)
    cos_ky, sin_ky = np.split(harmonic_table(k_values, y), 2)
    return exact_matmul(left, np.concatenate([cos_ky, sin_ky[has_sine]]), dtype)  # (T, N_x, N_y)


def sample_distinct_modes(rng: np.random.Generator, candidates: np.ndarray, low: int, high: int) -> np.ndarray:
    """Draw ``N ~ UniformInt{low..high}`` rows of ``candidates`` without replacement."""
    count = int(rng.integers(low, high + 1))
    chosen = rng.choice(len(candidates), size=count, replace=False)
    return candidates[np.sort(chosen)]


def integer_lattice(max_abs: int, dims: int) -> np.ndarray:
    """All integer vectors with ``|k_i| <= max_abs`` except the zero vector, shape ``(K, dims)``."""
    ranges = [np.arange(-max_abs, max_abs + 1)] * dims
    grid = np.stack(np.meshgrid(*ranges, indexing="ij"), axis=-1).reshape(-1, dims)
    return grid[np.any(grid != 0, axis=1)]


def mode_table(params: Sequence[TrajectoryParameters], column: str) -> np.ndarray:
    """Column ``column`` of several trajectories' mode tables, zero-padded to ``(B, max modes)``."""
    table = np.zeros((len(params), max(p.n_modes for p in params)))
    for row, p in zip(table, params, strict=True):
        row[: p.n_modes] = p.modes[column]
    return table


def sum_by_wavenumber(values: np.ndarray, k: np.ndarray, wavenumbers: np.ndarray) -> np.ndarray:
    """Per-wavenumber sums ``(B, ..., K)`` of per-mode values ``(B, ..., J)``: entry ``i`` adds, in mode order, the
    values of the modes ``j`` of each trajectory with ``k[b, j] == wavenumbers[i]`` (zero-padded modes match none).

    The one-hot weights are exactly 0 or 1, so each sum is the trajectory's own ordered sum of its modes whatever
    else shares the batch (a BLAS product with the one-hot matrix would add in an order of the CPU's choosing).
    """
    selection = (k[:, :, None] == wavenumbers).astype(np.float64)  # (B, J, K)
    extra_axes = values.ndim - 2
    out = np.zeros((*values.shape[:-1], len(wavenumbers)))
    for j in range(values.shape[-1]):
        out += values[..., j, None] * selection[(slice(None),) + (None,) * extra_axes + (j,)]
    return out


def check_wavenumbers(params: Sequence[TrajectoryParameters], column: str, wavenumbers: np.ndarray) -> None:
    """Raise if a trajectory has a mode whose wavenumber is not in the family's fixed table ``wavenumbers``."""
    for p in params:
        unknown = np.setdiff1d(p.modes[column], wavenumbers)
        if unknown.size:
            raise ValueError(f"wavenumbers {unknown.tolist()} outside this family's table {wavenumbers.tolist()}")
