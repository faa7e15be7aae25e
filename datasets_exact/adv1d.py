"""1D linear advection, multi-mode sinusoidal exact solution.

    d_t u + a d_x u = 0,    on [0, 2 pi), periodic,    u(x, t) = sum_j A_j sin(k_j (x - a t) + phi_j)

Parameters (paper appendix): a ~ U(0.5, 3.0); N ~ U{5..12} modes with k_j ~ U{1..8} drawn independently
(N can exceed the 8 distinct wavenumbers, so repeats are allowed); A_j ~ U(0.3, 1.5); phi_j ~ U(0, 2 pi).
1024 points, t in [0, 1], dt = 0.01, 1000 trajectories.
"""

from __future__ import annotations

import numpy as np

from .base import TWO_PI, ExactSolution, FieldSpec, TrajectoryParameters


class Advection1D(ExactSolution):
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
        (x,) = axes
        md = params.modes
        # sin(k(x - a t) + phi) = Im[C(t) E(x)], C = A exp(i(phi - k a t)), E = exp(i k x):
        # Im[C E] = [Re C, Im C] @ [Im E; Re E], one real (T, 2J) @ (2J, N) product in the output precision.
        c = md["amplitude"] * np.exp(1j * (md["phase"] - np.outer(times, md["k"] * params.scalars["a"])))
        e = np.exp(1j * np.outer(md["k"], x))
        left = np.concatenate([c.real, c.imag], axis=1).astype(dtype)
        right = np.concatenate([e.imag, e.real], axis=0).astype(dtype)
        return {"u": left @ right}
