"""3D linear advection with constant velocity, multi-mode Fourier exact solution.

    d_t u + a d_x u + b d_y u + c d_z u = 0,    on [0, 2 pi)^3, periodic,
    u(x, t) = sum_{l,m,n} A_lmn cos(l (x - a t) + m (y - b t) + n (z - c t) + phi_lmn)

Parameters (paper appendix): (a, b, c) ~ U(0.5, 2.0)^3; N ~ U{8..15} modes drawn without replacement from
|l|, |m|, |n| <= 2, (l, m, n) != 0; A ~ U(0.1, 1); phi ~ U(0, 2 pi). 64^3, t in [0, 1], dt = 0.05, 50 trajectories.
"""

from __future__ import annotations

import numpy as np

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
        x, y, z = axes
        s, md = params.scalars, params.modes
        shift = np.outer(times, md["l"] * s["a"] + md["m"] * s["b"] + md["n"] * s["c"])
        coefficients = md["amplitude"] * np.exp(1j * (md["phase"] - shift))  # (T, J)
        # Separable per mode: exp(i l x) exp(i m y) exp(i n z); contract the mode index last.
        ex = np.exp(1j * np.outer(x, md["l"]))  # (Nx, J)
        ey = np.exp(1j * np.outer(y, md["m"]))
        ez = np.exp(1j * np.outer(z, md["n"]))
        yz = np.einsum("yj,zj->jyz", ey, ez).reshape(len(md["l"]), -1)  # (J, Ny*Nz)
        weighted = coefficients[:, None, :] * ex[None]  # (T, Nx, J)
        # Re[W @ YZ] = [Re W, -Im W] @ [Re YZ; Im YZ], one real product in the output precision
        left = np.concatenate([weighted.real, -weighted.imag], axis=2).astype(dtype)
        right = np.concatenate([yz.real, yz.imag], axis=0).astype(dtype)
        return {"u": np.matmul(left, right).reshape(len(times), len(x), len(y), len(z))}
