"""2D viscous Burgers system, separable Cole-Hopf exact solution (irrotational, compressible).

    d_t u + u d_x u + v d_y u = nu Lap u
    d_t v + u d_x v + v d_y v = nu Lap v,    on [0, 2 pi)^2, periodic.

With (u, v) = -2 nu grad ln theta and theta = f(x, t) g(y, t) solving the heat equation,

    f = 1 + eps_x exp(-nu k_x^2 t) cos(k_x x),
    g = 1 + eps_y exp(-nu k_y^2 t) cos(k_y y),
    u = -2 nu d_x f / f = 2 nu eps_x k_x exp(-nu k_x^2 t) sin(k_x x) / f,
    v likewise in y.

theta >= (1 - eps_x)(1 - eps_y) > 0, so the logarithm is defined everywhere.
Parameters (paper appendix; its "(k_x, k_y) grid times six samples" gives 54, its table 200: we take 200):
nu ~ U(0.01, 0.1), eps_x, eps_y ~ U(0.1, 0.5),
(k_x, k_y) cycling through {1,2,3}^2 with the trajectory index; 256^2, t in [0, 1], dt = 0.01, 200 trajectories.
"""

from __future__ import annotations

import numpy as np

from well_upao.families.portable import exp, sincos

from .base import ExactSolution, FieldSpec, TrajectoryParameters

K_PAIRS = [(kx, ky) for kx in (1, 2, 3) for ky in (1, 2, 3)]


def cole_hopf_factor(coordinate: np.ndarray, times: np.ndarray, nu: float, eps: float, k: float):
    """Return (theta_1d, velocity_1d) of shape (T, N) for one separable factor 1 + eps e^{-nu k^2 t} cos(k x), in
    float64 with portable arithmetic."""
    decay = eps * exp(-nu * k**2 * times)[:, None]
    sin_kx, cos_kx = sincos(k * coordinate)
    theta = 1.0 + decay * cos_kx[None, :]
    velocity = 2.0 * nu * k * decay * sin_kx[None, :] / theta
    return theta, velocity


class Burgers2D(ExactSolution):
    name = "burgers2d"
    equation = "d_t v + (v.grad) v = nu Lap v, v = -2 nu grad ln(theta), d_t theta = nu Lap theta"
    n_spatial_dims = 2
    fields = (FieldSpec("velocity", 1),)
    scalar_names = ("nu", "eps_x", "eps_y", "k_x", "k_y")
    default_resolution = 256
    default_n_steps = 101
    default_dt = 0.01
    default_n_traj = 200

    def sample_parameters(self, rng: np.random.Generator, index: int) -> TrajectoryParameters:
        kx, ky = K_PAIRS[index % len(K_PAIRS)]
        return TrajectoryParameters(
            scalars={
                "nu": float(rng.uniform(0.01, 0.1)),
                "eps_x": float(rng.uniform(0.1, 0.5)),
                "eps_y": float(rng.uniform(0.1, 0.5)),
                "k_x": float(kx),
                "k_y": float(ky),
            }
        )

    def evaluate(self, params, axes, times, dtype=np.float64):
        x, y = axes
        s = params.scalars
        _, u_1d = cole_hopf_factor(x, times, s["nu"], s["eps_x"], s["k_x"])
        _, v_1d = cole_hopf_factor(y, times, s["nu"], s["eps_y"], s["k_y"])
        velocity = np.empty((len(times), len(x), len(y), 2), dtype=dtype)  # separable: a broadcast copy
        velocity[..., 0] = u_1d.astype(dtype)[:, :, None]  # cast the 1-D factors, not the grid (2x cheaper)
        velocity[..., 1] = v_1d.astype(dtype)[:, None, :]
        return {"velocity": velocity}

    def theta(self, params: TrajectoryParameters, axes, times) -> np.ndarray:
        """The Cole-Hopf potential theta = f g, shape (T, Nx, Ny) (for positivity checks)."""
        x, y = axes
        s = params.scalars
        f, _ = cole_hopf_factor(x, times, s["nu"], s["eps_x"], s["k_x"])
        g, _ = cole_hopf_factor(y, times, s["nu"], s["eps_y"], s["k_y"])
        return f[:, :, None] * g[:, None, :]
