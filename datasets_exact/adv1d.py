"""1D linear advection, multi-mode sinusoidal exact solution.

    d_t u + a d_x u = 0,    on [0, 2 pi), periodic,

    u(x, t) = sum_j A_j sin(k_j (x - a t) + phi_j)

Parameters (paper appendix): a ~ U(0.5, 3.0); N ~ U{5..12} modes with k_j ~ U{1..8} drawn independently
(N can exceed the 8 distinct wavenumbers, so repeats are allowed); A_j ~ U(0.3, 1.5); phi_j ~ U(0, 2 pi).
1024 points, t in [0, 1], dt = 0.01, 1000 trajectories.
"""

from __future__ import annotations

import numpy as np

from well_upao.families.portable import exact_matmul, sincos

from .base import TWO_PI, FieldSpec, FixedWavenumbers, TrajectoryParameters


class Advection1D(FixedWavenumbers):
    name = "adv1d"
    equation = "d_t u + a d_x u = 0"
    n_spatial_dims = 1
    fields = (FieldSpec("u", 0),)
    scalar_names = ("a",)
    mode_columns = ("k", "amplitude", "phase")
    default_resolution = 1024
    default_n_steps = 101
    default_dt = 0.01
    default_n_traj = 1000
    wavenumbers = np.arange(1.0, 9.0)  # k ~ U{1..8}

    def sample_parameters(self, rng: np.random.Generator, index: int) -> TrajectoryParameters:
        a = float(rng.uniform(0.5, 3.0))
        count = int(rng.integers(5, 13))
        return TrajectoryParameters(
            scalars={"a": a},
            modes={
                "k": rng.integers(1, 9, size=count).astype(np.float64),
                "amplitude": rng.uniform(0.3, 1.5, size=count),
                "phase": rng.uniform(0.0, TWO_PI, size=count),
            },
        )

    def evaluate(self, params, axes, times, dtype=np.float64):
        return {name: value[0] for name, value in self.evaluate_many([params], axes, times, dtype).items()}

    def evaluate_many(self, params, axes, times, dtype=np.float64):
        """sin(k(x - a t) + phi) = sin(k x) cos(psi) + cos(k x) sin(psi) with psi = phi - (k a) t. The modes'
        coefficients are summed per wavenumber kappa in 1..8 (``sum_by_wavenumber``), so that
        u = [sum A sin psi, sum A cos psi] @ [cos(kappa x); sin(kappa x)]: one exact (B, T, 16) @ (16, N) product
        with a fixed table, rounded to ``dtype`` once."""
        (x,) = axes
        a = np.array([p.scalars["a"] for p in params])[:, None]
        k, amplitude, phase = self.modes(params, "amplitude", "phase")  # (B, J)
        psi = phase[:, None, :] - (k * a)[:, None, :] * times[:, None]  # (B, T, J)
        sin_psi, cos_psi = sincos(psi)
        amplitude = amplitude[:, None, :]
        cos_coefficients = self.per_wavenumber(amplitude * sin_psi, k)  # (B, T, K)
        sin_coefficients = self.per_wavenumber(amplitude * cos_psi, k)
        left = np.concatenate([cos_coefficients, sin_coefficients], axis=2)
        return {"u": exact_matmul(left, self.table(x), dtype)}
