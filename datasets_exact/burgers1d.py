"""1D viscous Burgers equation, multi-mode Cole-Hopf exact solution.

    d_t u + u d_x u = nu d_xx u,    on [0, 2 pi), periodic,

    theta(x, t) = 1 + sum_j eps_j exp(-nu k_j^2 t) cos(k_j x + phi_j)       (heat equation)
    u(x, t)     = -2 nu d_x theta / theta
                = 2 nu sum_j eps_j k_j sin(k_j x + phi_j) exp(-nu k_j^2 t) / theta

Parameters (paper appendix, ruling 14 of paper-decisions.md): nu ~ U(0.005, 0.1); N ~ U{3..8} modes with
k_j ~ U{1..5} drawn independently (repeats allowed); raw eps_j ~ U(0.1, 0.5) rescaled so that
sum_j eps_j ~ U(0.3, 0.9) (hence theta >= 0.1 > 0); phi_j ~ U(0, 2 pi). 1024 points, t in [0, 1], dt = 0.01,
1000 trajectories. The velocity is stored as a vector field (t1, one component), aligned with the Vx slot.
"""

from __future__ import annotations

import numpy as np

from .base import TWO_PI, ExactSolution, FieldSpec, TrajectoryParameters


class Burgers1D(ExactSolution):
    name = "burgers1d"
    equation = "d_t u + u d_x u = nu d_xx u, u = -2 nu d_x ln(theta), d_t theta = nu d_xx theta"
    n_spatial_dims = 1
    fields = (FieldSpec("velocity", 1),)
    scalar_names = ("nu",)
    mode_columns = ("k", "eps", "phase")
    default_resolution = 1024
    default_n_steps = 101
    default_dt = 0.01
    default_n_traj = 1000

    def sample_parameters(self, rng: np.random.Generator, index: int) -> TrajectoryParameters:
        nu = float(rng.uniform(0.005, 0.1))
        count = int(rng.integers(3, 9))
        k = rng.integers(1, 6, size=count).astype(np.float64)
        raw = rng.uniform(0.1, 0.5, size=count)
        total = rng.uniform(0.3, 0.9)
        eps = raw * (total / raw.sum())
        phase = rng.uniform(0.0, TWO_PI, size=count)
        return TrajectoryParameters(scalars={"nu": nu}, modes={"k": k, "eps": eps, "phase": phase})

    def theta_and_flux(self, params: TrajectoryParameters, x: np.ndarray, times: np.ndarray):
        """theta (T, N) and -d_x theta (T, N), each a sum over modes of separable terms."""
        nu, md = params.scalars["nu"], params.modes
        decay = md["eps"] * np.exp(-nu * np.outer(times, md["k"] ** 2))  # (T, J)
        angle = np.outer(md["k"], x) + md["phase"][:, None]  # (J, N)
        theta = 1.0 + decay @ np.cos(angle)
        minus_dx_theta = (decay * md["k"]) @ np.sin(angle)
        return theta, minus_dx_theta

    def evaluate(self, params, axes, times, dtype=np.float64):
        (x,) = axes
        theta, minus_dx_theta = self.theta_and_flux(params, x, times)
        velocity = 2.0 * params.scalars["nu"] * minus_dx_theta / theta
        return {"velocity": velocity[..., None].astype(dtype, copy=False)}
