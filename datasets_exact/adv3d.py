"""3D linear advection with constant velocity, multi-mode Fourier exact solution.

    d_t u + a d_x u + b d_y u + c d_z u = 0,    on [0, 2 pi)^3, periodic,
    u(x, t) = sum_{l,m,n} A_lmn cos(l (x - a t) + m (y - b t) + n (z - c t)
                                    + phi_lmn)

Parameters (paper appendix): (a, b, c) ~ U(0.5, 2.0)^3; N ~ U{8..15} modes drawn without replacement from
|l|, |m|, |n| <= 2, (l, m, n) != 0; A ~ U(0.1, 1); phi ~ U(0, 2 pi). 64^3, t in [0, 1], dt = 0.05, 50 trajectories.
"""

from __future__ import annotations

import numpy as np

from well_upao.families.portable import exact_matmul, sincos

from .base import TWO_PI, ExactSolution, FieldSpec, TrajectoryParameters, integer_lattice, sample_distinct_modes

MODES = integer_lattice(2, 3)  # (124, 3)


class Advection3D(ExactSolution):
    name = "adv3d"
    equation = "d_t u + a d_x u + b d_y u + c d_z u = 0"
    n_spatial_dims = 3
    fields = (FieldSpec("u", 0),)
    scalar_names = ("a", "b", "c")
    mode_columns = ("l", "m", "n", "amplitude", "phase")
    default_resolution = 64
    default_n_steps = 21
    default_dt = 0.05
    default_n_traj = 50

    def sample_parameters(self, rng: np.random.Generator, index: int) -> TrajectoryParameters:
        velocity = rng.uniform(0.5, 2.0, size=3)
        modes = sample_distinct_modes(rng, MODES, 8, 15).astype(np.float64)
        count = len(modes)
        return TrajectoryParameters(
            scalars={"a": float(velocity[0]), "b": float(velocity[1]), "c": float(velocity[2])},
            modes={
                "l": modes[:, 0],
                "m": modes[:, 1],
                "n": modes[:, 2],
                "amplitude": rng.uniform(0.1, 1.0, size=count),
                "phase": rng.uniform(0.0, TWO_PI, size=count),
            },
        )

    def evaluate(self, params, axes, times, dtype=np.float64):
        """Separable per mode: cos(l x + psi_j(t) + m y + n z) = Re[W_j(t, x) YZ_j(y, z)] with
        W_j = A_j exp(i (l_j x + psi_j(t))), psi_j = phi_j - (l a + m b + n c)_j t, YZ_j = exp(i (m_j y + n_j z));
        u = [Re W, -Im W] @ [Re YZ; Im YZ], one exact (T, N_x, 2J) @ (2J, N_y N_z) product."""
        x, y, z = axes
        s, md = params.scalars, params.modes
        psi = md["phase"] - np.outer(times, md["l"] * s["a"] + md["m"] * s["b"] + md["n"] * s["c"])  # (T, J)
        sin_w, cos_w = sincos(psi[:, None, :] + np.outer(x, md["l"])[None])  # (T, N_x, J)
        left = np.concatenate([md["amplitude"] * cos_w, -(md["amplitude"] * sin_w)], axis=2)
        yz_angle = np.outer(y, md["m"])[:, None, :] + np.outer(z, md["n"])[None, :, :]  # (N_y, N_z, J)
        sin_yz, cos_yz = sincos(yz_angle.reshape(-1, len(md["l"])).T)  # (J, N_y N_z)
        right = np.concatenate([cos_yz, sin_yz], axis=0)
        u = exact_matmul(left, right, dtype).reshape(len(times), len(x), len(y), len(z))
        return {"u": u}
