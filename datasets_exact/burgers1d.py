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

from .base import TWO_PI, ExactSolution, FieldSpec, TrajectoryParameters, mode_table, wavenumber_selection


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
        return 1.0 + decay @ np.cos(angle), (decay * md["k"]) @ np.sin(angle)

    def evaluate(self, params, axes, times, dtype=np.float64):
        return {name: value[0] for name, value in self.evaluate_many([params], axes, times, dtype).items()}

    def evaluate_many(self, params, axes, times, dtype=np.float64):
        """u = 2 nu F / theta per trajectory. Summing the modes per distinct wavenumber kappa
        (``wavenumber_selection``), with E_kappa(t) = exp(-nu kappa^2 t),

            theta = 1 + sum_kappa E_kappa(t) [a_kappa cos(kappa x) + b_kappa sin(kappa x)] = [E, 1] @ [G; 1]
            2 nu F = sum_kappa 2 nu kappa E_kappa(t) [c_kappa cos(kappa x) + d_kappa sin(kappa x)] = [E, 1] @ [H; 0]

        with a = sum_j eps_j cos(phi_j), b = -sum_j eps_j sin(phi_j), c = sum_j eps_j sin(phi_j),
        d = sum_j eps_j cos(phi_j) over the modes j of wavenumber kappa, so that u = ([E, 1] @ [H; 0]) / theta.
        The grid rows G, H (K + 1, N) come from a table of cos(kappa x), sin(kappa x) computed once per batch, so
        each trajectory costs two (T, K + 1) @ (K + 1, N) products and one division, which writes ``dtype``;
        everything before it is float64 and the (T, N) buffers are reused.
        """
        (x,) = axes
        n_times = len(times)
        nu = np.array([p.scalars["nu"] for p in params])[:, None]
        eps, phase = (mode_table(params, column) for column in ("eps", "phase"))  # (B, J)
        kappa, selection = wavenumber_selection(params)
        n_k = len(kappa)
        eps_cos = ((eps * np.cos(phase))[:, None, :] @ selection)[:, 0]  # (B, K)
        eps_sin = ((eps * np.sin(phase))[:, None, :] @ selection)[:, 0]
        theta_rows = np.zeros((len(params), n_k + 1, 2 * n_k + 1))  # rows of G over the table, and the constant
        theta_rows[:, np.arange(n_k), np.arange(n_k)] = eps_cos
        theta_rows[:, np.arange(n_k), n_k + np.arange(n_k)] = -eps_sin
        theta_rows[:, n_k, 2 * n_k] = 1.0
        flux_rows = np.zeros_like(theta_rows)
        flux_rows[:, np.arange(n_k), np.arange(n_k)] = 2.0 * nu * kappa * eps_sin
        flux_rows[:, np.arange(n_k), n_k + np.arange(n_k)] = 2.0 * nu * kappa * eps_cos
        table = np.concatenate([np.cos(np.outer(kappa, x)), np.sin(np.outer(kappa, x)), np.ones((1, len(x)))])
        decay = np.ones((len(params), n_times, n_k + 1))
        decay[:, :, :n_k] = np.exp(-(nu * kappa**2)[:, None, :] * times[:, None])  # (B, T, K + 1)

        velocity = np.empty((len(params), n_times, len(x), 1), dtype=dtype)
        theta, flux = np.empty((n_times, len(x))), np.empty((n_times, len(x)))
        for b, out in enumerate(velocity):
            np.matmul(decay[b], theta_rows[b] @ table, out=theta)
            np.matmul(decay[b], flux_rows[b] @ table, out=flux)
            np.divide(flux, theta, out=out[..., 0])
        return {"velocity": velocity}
