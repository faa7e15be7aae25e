"""A user's dataset whose predictors' errors are known in closed form: one growing Fourier mode per trajectory,

    u(x, t) = a exp(r t) sin(x + phi)   on [0, 2 pi), periodic, 32 points;   d_t u = r u

with ``r`` = ``RATE`` in every trajectory (``a`` and ``phi`` drawn per trajectory). Persistence's VRMSE ``K`` steps of
``H`` ahead is ``sqrt((N - 1) / N) (1 - exp(-r H K))`` whatever the frame (the Well's VRMSE divides by the unbiased
spatial spread). Import it (``--imports growth_dataset``) to generate ``growth``."""

from __future__ import annotations

import math

import numpy as np

from well_upao.data.datasets import DatasetSpec, register_dataset
from well_upao.families.base import FieldSpec, TrajectoryFamily, TrajectoryParameters
from well_upao.physics import PDE, SubEquation

RATE, STEP, POINTS = 0.7, 0.1, 32
GROWTH = PDE(
    name="growth",
    variables=("temperature",),
    parameters=("r",),
    equations=(SubEquation("growth", rate="temperature", flux=lambda f, p, ops: -p["r"] * f["temperature"]),),
)


class GrowthFamily(TrajectoryFamily):
    name = "growth"
    equation = "d_t u = r u"
    n_spatial_dims = 1
    fields = (FieldSpec("u", 0),)
    scalar_names = ("r",)
    mode_columns = ("amplitude", "phase")
    default_resolution, default_n_steps, default_dt, default_n_traj = POINTS, 40, STEP, 8

    def sample_parameters(self, rng: np.random.Generator, index: int) -> TrajectoryParameters:
        return TrajectoryParameters(
            scalars={"r": RATE},
            modes={"amplitude": rng.uniform(0.5, 1.0, 1), "phase": rng.uniform(0, 2 * math.pi, 1)},
        )

    def evaluate(self, params, axes, times, dtype=np.float64):
        (x,) = axes
        growth = params.modes["amplitude"][0] * np.exp(params.scalars["r"] * times)
        return {"u": (growth[:, None] * np.sin(x[None] + params.modes["phase"][0])).astype(dtype)}


register_dataset(DatasetSpec("growth", slots={"u": "temperature"}, pde=GROWTH, family=GrowthFamily()))


def persistence_vrmse(horizon: int) -> float:
    """Persistence's VRMSE ``horizon`` steps ahead (see the module docstring)."""
    return math.sqrt((POINTS - 1) / POINTS) * (1 - math.exp(-RATE * STEP * horizon))
