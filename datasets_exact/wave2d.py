"""2D linear wave equation as a first-order system, standing-wave Fourier series.

    d_t u = w,    d_t w = c^2 Lap u,    on [0, 2 pi)^2, periodic,

    u(x, y, t) =  sum_{m,n} A_mn cos(m x + n y + phi_mn) cos(omega_mn t)
    w(x, y, t) = -sum_{m,n} A_mn omega_mn cos(m x + n y + phi_mn) sin(omega_mn t),
    omega_mn   = c sqrt(m^2 + n^2)

Parameters (paper appendix, whose parameter paragraph says *every* mode): c ~ U(1, 3); all 48 modes with
|m|, |n| <= 3, (m, n) != (0, 0); A_mn = A_raw / sqrt(m^2 + n^2), A_raw ~ U(0.1, 1); phi_mn ~ U(0, 2 pi).
256^2, t in [0, 1], dt = 0.01, 100 trajectories.
"""

from __future__ import annotations

import numpy as np

from well_upao.families.portable import sincos

from .base import (
    TWO_PI,
    ExactSolution,
    FieldSpec,
    TrajectoryParameters,
    integer_lattice,
    plane_wave_sum_2d,
)

MODES = integer_lattice(3, 2)  # (48, 2)


class Wave2D(ExactSolution):
    name = "wave2d"
    equation = "d_t u = w, d_t w = c^2 Lap u"
    n_spatial_dims = 2
    fields = (FieldSpec("u", 0), FieldSpec("w", 0))
    scalar_names = ("c",)
    mode_columns = ("m", "n", "amplitude", "phase")
    default_resolution = 256
    default_n_steps = 101
    default_dt = 0.01
    default_n_traj = 100

    def sample_parameters(self, rng: np.random.Generator, index: int) -> TrajectoryParameters:
        c = float(rng.uniform(1.0, 3.0))
        m, n = MODES[:, 0].astype(np.float64), MODES[:, 1].astype(np.float64)
        raw = rng.uniform(0.1, 1.0, size=len(MODES))
        phase = rng.uniform(0.0, TWO_PI, size=len(MODES))
        amplitude = raw / np.sqrt(m**2 + n**2)
        return TrajectoryParameters(scalars={"c": c}, modes={"m": m, "n": n, "amplitude": amplitude, "phase": phase})

    def evaluate(self, params, axes, times, dtype=np.float64):
        """u and w: plane-wave sums with coefficients A e^{i phi} cos(omega t) and -A omega e^{i phi} sin(omega t)."""
        x, y = axes
        md = params.modes
        omega = params.scalars["c"] * np.sqrt(md["m"] ** 2 + md["n"] ** 2)
        sin_phase, cos_phase = sincos(md["phase"])
        sin_t, cos_t = sincos(np.outer(times, omega))  # (T, J)
        u_weight, w_weight = md["amplitude"] * cos_t, -(md["amplitude"] * omega) * sin_t
        u = plane_wave_sum_2d(u_weight * cos_phase, u_weight * sin_phase, md["m"], md["n"], x, y, dtype)
        w = plane_wave_sum_2d(w_weight * cos_phase, w_weight * sin_phase, md["m"], md["n"], x, y, dtype)
        return {"u": u, "w": w}
