"""A user's dataset with an open boundary that brings new information in: a signal advected through an interval.

    u(x, t) = f(x - c t)   on [0, 1], open at both ends;   d_t u + c d_x u = 0

with ``f`` a sum of 12 Gaussian bumps of random centres, widths and signs spread over ``[-c T, 1]`` (``T`` the
trajectory's duration), so that bumps keep entering at ``x = 0`` during the trajectory: what enters was never in the
domain, and only the boundary band observes it first (``benchmarks/studies/forecast_boundary.py``). Registered as a
user registers a system; import it with ``--imports open_advection`` (``PYTHONPATH=benchmarks/studies``).
"""

from __future__ import annotations

import numpy as np

from well_upao.data.datasets import DatasetSpec, register_dataset
from well_upao.families.base import FieldSpec, TrajectoryFamily, TrajectoryParameters
from well_upao.physics import PDE, SubEquation

ADVECTION = PDE(
    name="open_advection",
    variables=("passive_tracer",),
    parameters=("c",),
    equations=(
        SubEquation("advection", rate="passive_tracer", flux=lambda f, p, ops: p["c"] * ops.d(f["passive_tracer"], 0)),
    ),
)
BUMPS = 12


class OpenAdvectionFamily(TrajectoryFamily):
    """Bumps carried at speed ``c`` through ``[0, 1]`` (open at both ends)."""

    name = "open_advection"
    equation = "d_t u + c d_x u = 0 on [0, 1], open"
    n_spatial_dims = 1
    fields = (FieldSpec("u", 0),)
    scalar_names = ("c",)
    mode_columns = ("centre", "width", "height")
    default_resolution, default_n_steps, default_dt, default_n_traj = 128, 61, 0.01, 12

    @property
    def boundary_types(self) -> tuple[str, ...]:
        return ("OPEN",)

    def grid_axes(self, resolution: int) -> tuple[np.ndarray, ...]:
        return (np.linspace(0.0, 1.0, resolution),)

    def sample_parameters(self, rng: np.random.Generator, index: int) -> TrajectoryParameters:
        c = float(rng.uniform(0.8, 1.2))
        reach = c * self.default_n_steps * self.default_dt
        modes = {
            "centre": rng.uniform(-reach, 1.0, BUMPS),
            "width": rng.uniform(0.04, 0.1, BUMPS),
            "height": rng.choice([-1.0, 1.0], BUMPS) * rng.uniform(0.5, 1.0, BUMPS),
        }
        return TrajectoryParameters(scalars={"c": c}, modes=modes)

    def evaluate(self, params, axes, times, dtype=np.float64):
        (x,) = axes
        m, c = params.modes, params.scalars["c"]
        shifted = x[None, :, None] - c * times[:, None, None] - m["centre"][None, None]  # (T, N, bumps)
        u = (m["height"] * np.exp(-0.5 * (shifted / m["width"]) ** 2)).sum(-1)
        return {"u": u.astype(dtype)}


register_dataset(
    DatasetSpec("open_advection", slots={"u": "passive_tracer"}, pde=ADVECTION, family=OpenAdvectionFamily())
)
