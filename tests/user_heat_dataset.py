"""A user's dataset in one module: its PDE, its generator and its registry entry (docs/your-data.md).

    d_t T = kappa d_xx T  on [0, 2 pi), periodic;  T(x, t) = sum_k a_k exp(-kappa k^2 t) sin(k x + phi_k), k = 1..3

Import it (``data.imports=[user_heat_dataset]`` in the harness) and ``user_heat`` can be generated, trained on and
evaluated like a built-in dataset. ``user_heat_walls`` is the same equation between walls (not periodic), with a
diffusivity its PDE documents wrongly (a constant to fit from the data).
"""

from __future__ import annotations

import numpy as np

from well_upao.data.datasets import DatasetSpec, register_dataset
from well_upao.families.base import FieldSpec, TrajectoryFamily, TrajectoryParameters
from well_upao.physics import PDE, SubEquation

HEAT = PDE(
    name="user_heat",
    variables=("temperature",),
    parameters=("kappa",),  # read from the files' /scalars
    equations=(
        SubEquation(
            "heat",
            rate="temperature",  # d_t T ...
            flux=lambda f, p, ops: -p["kappa"] * ops.laplacian(f["temperature"]),  # ... - kappa d_xx T = 0
        ),
    ),
)


class HeatFamily(TrajectoryFamily):
    """Three decaying Fourier modes with random amplitudes and phases."""

    name = "user_heat"
    equation = "d_t T = kappa d_xx T"
    n_spatial_dims = 1
    fields = (FieldSpec("temperature", 0),)
    scalar_names = ("kappa",)
    mode_columns = ("k", "amplitude", "phase")
    default_resolution, default_n_steps, default_dt, default_n_traj = 64, 21, 0.05, 8

    def sample_parameters(self, rng: np.random.Generator, index: int) -> TrajectoryParameters:
        return TrajectoryParameters(
            scalars={"kappa": float(rng.uniform(0.05, 0.2))},
            modes={"k": np.arange(1.0, 4.0), "amplitude": rng.uniform(0.5, 1.0, 3), "phase": rng.uniform(0, 6.28, 3)},
        )

    def evaluate(self, params, axes, times, dtype=np.float64):
        (x,) = axes
        m = params.modes
        decay = m["amplitude"] * np.exp(-params.scalars["kappa"] * np.outer(times, m["k"] ** 2))  # (T, 3)
        return {"temperature": (decay @ np.sin(np.outer(m["k"], x) + m["phase"][:, None])).astype(dtype)}


register_dataset(DatasetSpec("user_heat", slots={"temperature": "temperature"}, pde=HEAT, family=HeatFamily()))


#: the walls dataset's true diffusivity; its PDE documents another (a user who knows the equation, not the constant)
WALLS_KAPPA, DOCUMENTED_KAPPA = 0.13, 0.1

HEAT_WALLS = PDE(
    name="user_heat_walls",
    variables=("temperature",),
    parameters=("kappa",),
    constants={"kappa": DOCUMENTED_KAPPA},  # not in the files: a constant trainer.pde_constants=fitted can fit
    equations=(
        SubEquation("heat", rate="temperature", flux=lambda f, p, ops: -p["kappa"] * ops.laplacian(f["temperature"])),
    ),
)


class HeatWallsFamily(TrajectoryFamily):
    """Heat between walls held at zero on [0, pi] (grid points on both walls): decaying sine modes k = 1..3,
    ``T(x, t) = sum_k a_k exp(-kappa k^2 t) sin(k x)``, with ``kappa`` = :data:`WALLS_KAPPA` in every trajectory."""

    name = "user_heat_walls"
    equation = "d_t T = kappa d_xx T, T = 0 on the walls"
    n_spatial_dims = 1
    fields = (FieldSpec("temperature", 0),)
    scalar_names = ("amplitude",)
    mode_columns = ("k", "amplitude")
    domain_length = np.pi
    default_resolution, default_n_steps, default_dt, default_n_traj = 64, 21, 0.05, 8

    @property
    def boundary_types(self) -> tuple[str, ...]:
        return ("WALL",)

    def grid_axes(self, resolution: int) -> tuple[np.ndarray, ...]:
        return (np.linspace(0.0, self.domain_length, resolution),)

    def sample_parameters(self, rng: np.random.Generator, index: int) -> TrajectoryParameters:
        amplitudes = rng.uniform(0.5, 1.0, 3)
        return TrajectoryParameters(
            scalars={"amplitude": float(amplitudes.sum())}, modes={"k": np.arange(1.0, 4.0), "amplitude": amplitudes}
        )

    def evaluate(self, params, axes, times, dtype=np.float64):
        (x,) = axes
        m = params.modes
        decay = m["amplitude"] * np.exp(-WALLS_KAPPA * np.outer(times, m["k"] ** 2))  # (T, 3)
        return {"temperature": (decay @ np.sin(np.outer(m["k"], x))).astype(dtype)}


register_dataset(
    DatasetSpec("user_heat_walls", slots={"temperature": "temperature"}, pde=HEAT_WALLS, family=HeatWallsFamily())
)
