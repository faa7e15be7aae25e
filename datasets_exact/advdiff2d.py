"""2D linear advection-diffusion with constant velocity, Fourier-mode exact solution.

    d_t u + a d_x u + b d_y u = nu Lap u,    on [0, 2 pi)^2, periodic,

    u(x, y, t) = sum_{m,n} A_mn exp(-nu (m^2 + n^2) t)
                           cos(m (x - a t) + n (y - b t) + phi_mn)

Parameters (paper appendix): nu ~ U(0.01, 0.1); (a, b) = (1.0, 0.5) fixed (stored per trajectory anyway);
N ~ U{8..15} modes drawn without replacement from |m|, |n| <= 3, (m, n) != 0; A ~ U(0.1, 1); phi ~ U(0, 2 pi).
256^2, t in [0, 1], dt = 0.01, 150 trajectories.
"""

from __future__ import annotations

import numpy as np

from well_upao.families.portable import exp, sincos

from .base import (
    TWO_PI,
    ExactSolution,
    FieldSpec,
    TrajectoryParameters,
    integer_lattice,
    plane_wave_sum_2d,
    sample_distinct_modes,
)

MODES = integer_lattice(3, 2)


class AdvectionDiffusion2D(ExactSolution):
    name = "advdiff2d"
    equation = "d_t u + a d_x u + b d_y u = nu Lap u"
    n_spatial_dims = 2
    fields = (FieldSpec("u", 0),)
    scalar_names = ("nu", "a", "b")
    mode_columns = ("m", "n", "amplitude", "phase")
    default_resolution = 256
    default_n_steps = 101
    default_dt = 0.01
    default_n_traj = 150

    def sample_parameters(self, rng: np.random.Generator, index: int) -> TrajectoryParameters:
        nu = float(rng.uniform(0.01, 0.1))
        modes = sample_distinct_modes(rng, MODES, 8, 15).astype(np.float64)
        count = len(modes)
        return TrajectoryParameters(
            scalars={"nu": nu, "a": 1.0, "b": 0.5},
            modes={
                "m": modes[:, 0],
                "n": modes[:, 1],
                "amplitude": rng.uniform(0.1, 1.0, size=count),
                "phase": rng.uniform(0.0, TWO_PI, size=count),
            },
        )

    def evaluate(self, params, axes, times, dtype=np.float64):
        x, y = axes
        s, md = params.scalars, params.modes
        k2 = md["m"] ** 2 + md["n"] ** 2
        # exp(i(m(x - a t) + n(y - b t) + phi)) = exp(i(m x + n y)) * exp(i psi), psi = phi - (m a + n b) t
        psi = md["phase"] - np.outer(times, md["m"] * s["a"] + md["n"] * s["b"])  # (T, J)
        weight = md["amplitude"] * exp(-s["nu"] * np.outer(times, k2))
        sin_psi, cos_psi = sincos(psi)
        return {"u": plane_wave_sum_2d(weight * cos_psi, weight * sin_psi, md["m"], md["n"], x, y, dtype)}
