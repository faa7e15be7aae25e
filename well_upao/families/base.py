"""What every trajectory family is: the dataset's shape, a parameter sampler and a way to produce the fields.

A family (closed form in ``well_upao.datasets_exact``, simulation in ``simulated``, a converted PDEBench
file in ``pdebench``) knows

* the dataset's shape (spatial dimension, fields and their tensor order, default sizes),
* how to draw one trajectory's parameters (``TrajectoryFamily.sample_parameters``), and
* how to produce its fields at given times on a grid (``TrajectoryFamily.evaluate``).

Parameters come in two kinds (INTERFACES.md, section 1): per-trajectory *scalars* (``nu``, ``c``, ...), written
to the Well's ``/scalars`` group, and *mode tables* (amplitudes, phases, wavenumbers of a multi-mode initial
condition, or a simulation's seed), written to a group of our own so the trajectory can be re-made from the file.
The Well-format writer (``well_upao.data``) takes any family.
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

        Values are computed in float64 (portable arithmetic, see the module docstring) and rounded to ``dtype``
        once, so the same parameters give the same bits on every x86 machine (the tested ones; see
        ``well_upao.families.portable``).

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

        This default calls ``evaluate`` per trajectory and stacks (a view for a single trajectory). Families
        whose trajectories are so small that per-call overhead dominates (1D) override it; an override must give
        every trajectory the same bits as ``evaluate`` alone.
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
