"""1D viscous Burgers equation, multi-mode Cole-Hopf exact solution.

    d_t u + u d_x u = nu d_xx u,    on [0, 2 pi), periodic,

    theta(x, t) = 1 + sum_j eps_j exp(-nu k_j^2 t) cos(k_j x + phi_j)     (heat eq.)
    u(x, t)     = -2 nu d_x theta / theta
                = 2 nu sum_j eps_j k_j sin(k_j x + phi_j) exp(-nu k_j^2 t) / theta

Parameters (paper appendix; wavenumbers drawn independently, so the stated mode count
holds): nu ~ U(0.005, 0.1); N ~ U{3..8} modes with
k_j ~ U{1..5} drawn independently (repeats allowed); raw eps_j ~ U(0.1, 0.5) rescaled so that
sum_j eps_j ~ U(0.3, 0.9) (hence theta >= 0.1 > 0); phi_j ~ U(0, 2 pi). 1024 points, t in [0, 1], dt = 0.01,
1000 trajectories. The velocity is stored as a vector field (t1, one component), aligned with the Vx slot.
"""

from __future__ import annotations

import numpy as np

from well_upao.families.portable import exact_matmul, exp, sincos

from .base import TWO_PI, FieldSpec, FixedWavenumbers, TrajectoryParameters


class Burgers1D(FixedWavenumbers):
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
    wavenumbers = np.arange(1.0, 6.0)  # k ~ U{1..5}

    def sample_parameters(self, rng: np.random.Generator, index: int) -> TrajectoryParameters:
        nu = float(rng.uniform(0.005, 0.1))
        count = int(rng.integers(3, 9))
        k = rng.integers(1, 6, size=count).astype(np.float64)
        raw = rng.uniform(0.1, 0.5, size=count)
        total = rng.uniform(0.3, 0.9)
        eps = raw * (total / raw.sum())
        phase = rng.uniform(0.0, TWO_PI, size=count)
        return TrajectoryParameters(scalars={"nu": nu}, modes={"k": k, "eps": eps, "phase": phase})

    def evaluate(self, params, axes, times, dtype=np.float64):
        return {name: value[0] for name, value in self.evaluate_many([params], axes, times, dtype).items()}

    def evaluate_many(self, params, axes, times, dtype=np.float64):
        """u = 2 nu F / theta per trajectory. Summing the modes per wavenumber kappa in 1..5 (``sum_by_wavenumber``),
        with E_kappa(t) = exp(-nu kappa^2 t), a_kappa = sum_j eps_j cos(phi_j), b_kappa = sum_j eps_j sin(phi_j) over
        the modes j of wavenumber kappa,

            theta - 1 = sum_kappa E_kappa a_kappa cos(kappa x) - E_kappa b_kappa sin(kappa x)
            2 nu F    = sum_kappa 2 nu kappa E_kappa (b_kappa cos(kappa x) + a_kappa sin(kappa x))

        both rows of one exact (B, 2, T, 10) @ (10, N) product with the fixed table [cos(kappa x); sin(kappa x)];
        then u = 2 nu F / (1 + (theta - 1)) in float64, rounded to ``dtype`` once.
        """
        (x,) = axes
        nu = np.array([p.scalars["nu"] for p in params])[:, None]
        k, eps, phase = self.modes(params, "eps", "phase")  # (B, J)
        sin_phase, cos_phase = sincos(phase)
        a = self.per_wavenumber(eps * cos_phase, k)[:, None, :]  # (B, 1, K)
        b = self.per_wavenumber(eps * sin_phase, k)[:, None, :]
        decay = exp(-(nu * self.wavenumbers**2)[:, None, :] * times[:, None])  # (B, T, K)
        rate = (2.0 * nu * self.wavenumbers)[:, None, :] * decay
        left = np.stack(
            [np.concatenate([decay * a, -(decay * b)], axis=2), np.concatenate([rate * b, rate * a], axis=2)], axis=1
        )  # (B, 2, T, 2K): rows of theta - 1, then of 2 nu F
        theta_minus_one, flux = np.moveaxis(exact_matmul(left, self.table(x)), 1, 0)
        theta_minus_one += 1.0
        velocity = np.empty((len(params), len(times), len(x), 1), dtype=dtype)
        np.divide(flux, theta_minus_one, out=velocity[..., 0])
        return {"velocity": velocity}

    def theta(self, params: TrajectoryParameters, x: np.ndarray, times: np.ndarray) -> np.ndarray:
        """The Cole-Hopf potential theta (T, N) of one trajectory, mode by mode (for positivity checks)."""
        nu, md = params.scalars["nu"], params.modes
        decay = md["eps"] * np.exp(-nu * np.outer(times, md["k"] ** 2))  # (T, J)
        return 1.0 + decay @ np.cos(np.outer(md["k"], x) + md["phase"][:, None])
