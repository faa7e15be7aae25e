"""2D Taylor-Green vortex: decaying exact solution of the incompressible Navier-Stokes equations.

    d_t v + (v . grad) v = -grad p + nu Lap v,    div v = 0,
    on [0, 2 pi)^2, periodic,

    u(x, y, t) = -cos(x) sin(y) exp(-2 nu t)
    v(x, y, t) =  sin(x) cos(y) exp(-2 nu t)
    p(x, y, t) = -(cos(2x) + cos(2y)) exp(-4 nu t) / 4

Parameters (paper appendix): nu ~ U(0.01, 0.1) per trajectory. 256^2, t in [0, 1], dt = 0.01, 100 trajectories.
"""

from __future__ import annotations

import numpy as np

from well_upao.families.portable import exp, sincos

from .base import ExactSolution, FieldSpec, TrajectoryParameters


class TaylorGreen2D(ExactSolution):
    name = "tg2d"
    equation = "d_t v + (v.grad) v = -grad p + nu Lap v, div v = 0"
    n_spatial_dims = 2
    fields = (FieldSpec("pressure", 0), FieldSpec("velocity", 1))
    scalar_names = ("nu",)
    default_resolution = 256
    default_n_steps = 101
    default_dt = 0.01
    default_n_traj = 100

    def sample_parameters(self, rng: np.random.Generator, index: int) -> TrajectoryParameters:
        return TrajectoryParameters(scalars={"nu": float(rng.uniform(0.01, 0.1))})

    def evaluate(self, params, axes, times, dtype=np.float64):
        """Separable: float64 factors (portable sin, cos, exp), one float64 broadcast product per field written
        straight into the ``dtype`` output (numpy rounds each product once)."""
        x, y = axes
        nu = params.scalars["nu"]
        sin_x, cos_x = sincos(x)
        sin_y, cos_y = sincos(y)
        _, cos_2x = sincos(2.0 * x)
        _, cos_2y = sincos(2.0 * y)
        decay_v = exp(-2.0 * nu * times)[:, None, None]
        decay_p = exp(-4.0 * nu * times)[:, None, None]
        velocity = np.empty((len(times), len(x), len(y), 2), dtype=dtype)
        np.multiply(np.outer(-cos_x, sin_y), decay_v, out=velocity[..., 0])
        np.multiply(np.outer(sin_x, cos_y), decay_v, out=velocity[..., 1])
        pressure = np.empty((len(times), len(x), len(y)), dtype=dtype)
        np.multiply(-0.25 * np.add.outer(cos_2x, cos_2y), decay_p, out=pressure)
        return {"pressure": pressure, "velocity": velocity}
