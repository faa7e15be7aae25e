"""Common interface of the exact-solution datasets.

Each PDE module defines one :class:`ExactSolution` subclass that knows

* the dataset's shape (spatial dimension, fields and their tensor order, default sizes from the paper's
  table "Overview of pretraining and downstream datasets"),
* how to draw one trajectory's parameters (:meth:`ExactSolution.sample_parameters`), with the paper's
  distributions (appendix "Exact-Solution Finetuning Datasets"), and
* how to evaluate the closed-form solution on a periodic, boundary-exclusive grid
  ``x_i = i L / N`` (:meth:`ExactSolution.evaluate`).

Parameters come in two kinds (see INTERFACES.md, section 1): per-trajectory *scalars* (``nu``, ``c``, ...),
written to the Well's ``/scalars`` group, and *mode tables* (amplitudes, phases, wavenumbers of a multi-mode
initial condition), written to a group of our own so the solution can be re-evaluated from the file.

Evaluation is vectorised and uses separability (products of 1D factors, small dense matrix products over
mode indices) instead of a per-point sum over modes, so that generation runs near the I/O limit.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

TWO_PI = 2.0 * math.pi


@dataclass(frozen=True)
class FieldSpec:
    """One stored field: its name in the file and its tensor order (0 scalar, 1 vector)."""

    name: str
    order: int


@dataclass
class TrajectoryParameters:
    """Everything needed to evaluate one trajectory in closed form.

    Attributes:
        scalars: per-trajectory physical parameters, stored in ``/scalars``.
        modes: columns of the multi-mode table, each a 1-D array with one entry per mode (all the same length).
    """

    scalars: dict[str, float]
    modes: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def n_modes(self) -> int:
        if not self.modes:
            return 0
        return len(next(iter(self.modes.values())))


class TrajectoryFamily(ABC):
    """A family of trajectories of one PDE: a parameter sampler and a way to produce the fields.

    ``kind`` says how the fields are produced (``"closed_form"`` here, ``"simulation"`` for the numerical
    solvers of the pretraining corpus); ``streams_in_time`` whether any time window can be produced alone
    (closed forms) or the whole trajectory at once (time integration); ``boundary_types`` gives the Well's
    boundary type per axis.
    """

    kind: str = "closed_form"
    streams_in_time: bool = True

    #: dataset name, also the ``--pde`` key and the Well ``dataset_name``
    name: str
    #: governing equation(s), for humans and the file's metadata
    equation: str
    n_spatial_dims: int
    fields: tuple[FieldSpec, ...]
    scalar_names: tuple[str, ...]
    #: column names of the multi-mode table (empty when the solution has no mode table)
    mode_columns: tuple[str, ...] = ()
    #: periodic domain side length L (the grid is x_i = i L / N)
    domain_length: float = TWO_PI
    default_resolution: int
    default_n_steps: int
    default_dt: float
    default_n_traj: int

    @abstractmethod
    def sample_parameters(self, rng: np.random.Generator, index: int) -> TrajectoryParameters:
        """Draw the parameters of trajectory ``index`` (the index matters only for deterministic cycles)."""

    @abstractmethod
    def evaluate(
        self,
        params: TrajectoryParameters,
        axes: tuple[np.ndarray, ...],
        times: np.ndarray,
        dtype: type = np.float64,
    ) -> dict[str, np.ndarray]:
        """Evaluate every field at ``times`` on the tensor grid spanned by ``axes``, as ``dtype`` arrays.

        Transcendental factors are always computed in float64; with ``dtype=float32`` separable solutions form
        their final broadcast product directly in float32 (a few ulps from the rounded closed form).

        Returns a dict ``field name -> array (len(times), *grid shape)`` for scalar fields and
        ``(len(times), *grid shape, n_spatial_dims)`` for vector fields.
        """

    def evaluate_many(
        self,
        params: Sequence[TrajectoryParameters],
        axes: tuple[np.ndarray, ...],
        times: np.ndarray,
        dtype: type = np.float64,
    ) -> dict[str, np.ndarray]:
        """Evaluate several trajectories at the same ``times``: ``field name -> (len(params), len(times), ...)``.

        This default calls :meth:`evaluate` per trajectory and stacks (a view for a single trajectory). Families
        whose trajectories are so small that per-call overhead dominates (1D) override it.
        """
        if len(params) == 1:
            return {name: value[None] for name, value in self.evaluate(params[0], axes, times, dtype).items()}
        per_trajectory = [self.evaluate(p, axes, times, dtype) for p in params]
        return {name: np.stack([fields[name] for fields in per_trajectory]) for name in per_trajectory[0]}

    # ------------------------------------------------------------------ helpers
    @property
    def boundary_types(self) -> tuple[str, ...]:
        return ("PERIODIC",) * self.n_spatial_dims

    def grid_axes(self, resolution: int) -> tuple[np.ndarray, ...]:
        """Periodic, boundary-exclusive coordinates ``x_i = i L / N``, one array per axis."""
        x = np.arange(resolution, dtype=np.float64) * (self.domain_length / resolution)
        return tuple(x for _ in range(self.n_spatial_dims))

    def field_shape(self, spec: FieldSpec, resolution: int) -> tuple[int, ...]:
        """Shape of one time step of ``spec`` on an isotropic grid."""
        spatial = (resolution,) * self.n_spatial_dims
        return spatial + (self.n_spatial_dims,) * spec.order


class ExactSolution(TrajectoryFamily):
    """A PDE with a closed-form solution family and the paper's parameter distributions."""

    kind = "closed_form"


def plane_wave_sum_2d(
    coefficients: np.ndarray,
    m: np.ndarray,
    n: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    dtype: type = np.float64,
) -> np.ndarray:
    """Real part of ``sum_j C_j(t) exp(i (m_j x + n_j y))`` for every time, by separability.

    ``coefficients`` has shape ``(T, J)`` (complex). The modes are gathered into a dense coefficient matrix
    ``M(t)`` over the distinct wavenumbers (``K_m x K_n``), so that the field is ``Re[E_x M(t) E_y]`` with the
    1-D factors ``E_x = exp(i m x)``, ``E_y = exp(i n y)``: cost ``O(T N^2 K)`` instead of ``O(T N^2 J)``
    transcendental evaluations. The small products run in complex128; the final, output-sized product is one
    real matrix product ``[Re E_x, -Im E_x] @ [Re G; Im G]`` (``G = M E_y``) in the output precision.
    """
    m_values, m_index = np.unique(m, return_inverse=True)
    n_values, n_index = np.unique(n, return_inverse=True)
    n_times = coefficients.shape[0]
    matrix = np.zeros((n_times, len(m_values), len(n_values)), dtype=np.complex128)
    np.add.at(matrix, (slice(None), m_index, n_index), coefficients)
    ex = np.exp(1j * np.outer(x, m_values))  # (Nx, Km)
    g = np.matmul(matrix, np.exp(1j * np.outer(n_values, y)))  # (T, Km, Ny)
    left = np.concatenate([ex.real, -ex.imag], axis=1).astype(dtype)  # (Nx, 2 Km)
    right = np.concatenate([g.real, g.imag], axis=1).astype(dtype)  # (T, 2 Km, Ny)
    return np.matmul(left, right)


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


def wavenumber_selection(params: Sequence[TrajectoryParameters], column: str = "k") -> tuple[np.ndarray, np.ndarray]:
    """The distinct wavenumbers ``kappa (K,)`` of a batch and the one-hot matrices ``S (B, J, K)`` with
    ``S[b, j, i] = 1`` iff mode ``j`` of trajectory ``b`` has wavenumber ``kappa_i`` (all-zero rows for padding).

    A per-mode coefficient array ``c (B, T, J)`` becomes a per-wavenumber one by ``c @ S``, so a sum over modes
    costs one product with a table of ``K`` distinct grid functions instead of ``J`` evaluated ones.
    """
    kappa = np.unique(np.concatenate([p.modes[column] for p in params]))
    selection = np.zeros((len(params), max(p.n_modes for p in params), len(kappa)))
    for matrix, p in zip(selection, params, strict=True):
        matrix[np.arange(p.n_modes), np.searchsorted(kappa, p.modes[column])] = 1.0
    return kappa, selection
