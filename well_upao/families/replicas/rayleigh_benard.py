"""Rayleigh-Bénard convection as The Well describes it: 2D Boussinesq flow between rigid walls,

    d_t b + u.grad b = kappa Lap b,
    d_t u + u.grad u + grad p = nu Lap u + b e_z,   div u = 0,
    kappa = (Rayleigh Prandtl)^(-1/2),   nu = (Rayleigh / Prandtl)^(-1/2),
    b(z = 0) = L_z,  b(z = L_z) = 0,  u = 0 on both walls,  integral of p = 0,

periodic in ``x in [0, L_x)`` (the Well: ``L_x = 4``, ``L_z = 1``, frames every 0.25 for t in [0, 50)).

Method: Fourier in ``x`` (2/3 de-aliasing of products), Chebyshev collocation in ``z``
(``chebyshev``), stream function ``psi`` (``u_x = d_z psi``, ``u_z = -d_x psi``) for the non-zero horizontal
wavenumbers and the mean flow ``U(z)`` for ``k = 0``, and the buoyancy deviation ``theta = b - (L_z - z)`` from
the conduction profile. Per wavenumber ``k``, with ``M = D^2 - k^2``:

    M d_t psi = nu M^2 psi - i k theta + (u.grad w)^     (vorticity, w = -Lap psi)
    d_t theta = kappa M theta - (u.grad theta)^ + u_z^
    d_t U = nu D^2 U - (u.grad u_x)^_{k=0}

stepped by SBDF2 (second-order backward differentiation; diffusion implicit, the rest extrapolated), the first
step and every change of step size by SBDF1. Walls: ``psi = d_z psi = 0`` (rows of the implicit systems replaced),
``theta = 0``, ``U = 0``. The step is set per frame by a CFL number (horizontal spacing, local vertical
spacing) and capped for the explicitly treated buoyancy oscillation. The pressure is the solution of
``Lap p = d_z b - d_i d_j (u_i u_j)`` with ``d_z p = b + nu d_zz u_z`` on the walls and zero mean. Fields are
interpolated from the Chebyshev points to ``n_z`` uniform points including both walls.

Initial condition (the Well's README): ``b = (L_z - z) delta_b0 + z (L_z - z) eps`` with ``eps`` Gaussian white
noise of scale 1e-3, ``u = 0``, ``p = 0``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from well_upao.families.replicas import chebyshev

CFL = 0.4
#: cap of the step (free-fall time units): the buoyancy frequency is at most about 1, treated explicitly
MAX_STEP = 0.05
#: CFL sub-steps per frame beyond which a run is declared unstable (resolved runs need about 20 per 0.25 frame)
MAX_SUBSTEPS_PER_FRAME = 2000


@dataclass(frozen=True)
class ChannelGrid:
    """``n_x`` Fourier points on ``[0, L_x)`` and ``n_z + 1`` Chebyshev points on ``[0, L_z]``."""

    n_x: int
    n_z: int
    length_x: float = 4.0
    length_z: float = 1.0

    def x(self) -> torch.Tensor:
        return torch.arange(self.n_x, dtype=torch.float64) * (self.length_x / self.n_x)

    def z(self) -> torch.Tensor:
        return chebyshev.points(self.n_z, self.length_z)


class RayleighBenardSolver:
    def __init__(self, grid: ChannelGrid, rayleigh: float, prandtl: float):
        self.grid = grid
        self.nu = (rayleigh / prandtl) ** -0.5
        self.kappa = (rayleigh * prandtl) ** -0.5
        n = grid.n_z
        self.D = chebyshev.differentiation_matrix(n, grid.length_z)
        self.D2 = self.D @ self.D
        self.Dc, self.D2c = self.D.to(torch.complex128), self.D2.to(torch.complex128)
        self.k = 2 * math.pi * torch.fft.rfftfreq(grid.n_x, d=grid.length_x / grid.n_x, dtype=torch.float64)
        self.ik = (1j * self.k)[:, None]
        self.dealias = (torch.arange(self.k.numel()) < grid.n_x / 3).double()[:, None]
        self.weights = chebyshev.quadrature_weights(n, grid.length_z)
        self.conduction = grid.length_z - grid.z()  # b = L_z - z
        self._factors: dict[float, dict[str, tuple]] = {}

    # ------------------------------------------------------------------ transforms
    def to_mixed(self, field: torch.Tensor) -> torch.Tensor:
        return torch.fft.rfft(field, dim=0)

    def to_physical(self, spectrum: torch.Tensor) -> torch.Tensor:
        return torch.fft.irfft(spectrum, n=self.grid.n_x, dim=0)

    def dz(self, spectrum: torch.Tensor) -> torch.Tensor:
        return spectrum @ self.Dc.T

    # ------------------------------------------------------------------ state
    def velocity(self, psi: torch.Tensor, mean_flow: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        ux = self.to_physical(self.dz(psi)) + mean_flow[None, :]
        uz = self.to_physical(-self.ik * psi)
        return ux, uz

    def explicit_terms(self, psi, theta, mean_flow) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(G_psi, G_theta, G_U)``: every term of the three equations that is not implicit diffusion."""
        ux, uz = self.velocity(psi, mean_flow)
        vorticity = -(self.dz(self.dz(psi)) - self.k[:, None] ** 2 * psi)
        vorticity[0] = -self.grid.n_x * (mean_flow @ self.D.T).to(torch.complex128)  # rfft's k = 0 is a sum
        w_phys = self.to_physical(vorticity)
        t_phys = self.to_physical(theta)

        def advect(field_phys: torch.Tensor, field_hat: torch.Tensor) -> torch.Tensor:
            fx = self.to_physical(self.ik * field_hat)
            fz = self.to_physical(self.dz(field_hat))
            return self.dealias * self.to_mixed(ux * fx + uz * fz)

        advect_w = advect(w_phys, vorticity)
        g_psi = -self.ik * theta + advect_w  # M d_t psi = nu M^2 psi - (d_x b)^ + (u.grad w)^
        g_theta = -advect(t_phys, theta) + self.dealias * self.to_mixed(uz)
        ux_hat = self.to_mixed(ux)
        g_mean = -advect(ux, ux_hat)[0].real / self.grid.n_x
        return g_psi, g_theta, g_mean

    # ------------------------------------------------------------------ implicit systems
    def _factor(self, dt: float, order: int) -> dict[str, tuple]:
        key = (round(dt, 15), order)
        if key in self._factors:
            return self._factors[key]
        n = self.grid.n_z + 1
        eye = torch.eye(n, dtype=torch.float64)
        a0 = 1.5 / dt if order == 2 else 1.0 / dt
        k2 = (self.k**2)[:, None, None]
        m = self.D2[None] - k2 * eye[None]  # (K, n, n)
        psi_matrix = a0 * m - self.nu * (m @ m)
        psi_matrix[:, 0] = eye[0]
        psi_matrix[:, -1] = eye[-1]
        psi_matrix[:, 1] = self.D[0]
        psi_matrix[:, -2] = self.D[-1]
        psi_matrix[0] = eye  # k = 0 is the mean flow, not psi
        theta_matrix = a0 * eye[None] - self.kappa * m
        theta_matrix[:, 0] = eye[0]
        theta_matrix[:, -1] = eye[-1]
        mean_matrix = a0 * eye - self.nu * self.D2
        mean_matrix[0] = eye[0]
        mean_matrix[-1] = eye[-1]
        factors = {
            "psi": torch.linalg.lu_factor(psi_matrix),
            "theta": torch.linalg.lu_factor(theta_matrix),
            "mean": torch.linalg.lu_factor(mean_matrix),
            "m": m.to(torch.complex128),
            "a0": a0,
        }
        self._factors[key] = factors
        return factors

    @staticmethod
    def _solve(factor: tuple, rhs: torch.Tensor) -> torch.Tensor:
        lu, pivots = factor
        if rhs.is_complex():
            real = torch.linalg.lu_solve(lu, pivots, rhs.real.unsqueeze(-1)).squeeze(-1)
            imag = torch.linalg.lu_solve(lu, pivots, rhs.imag.unsqueeze(-1)).squeeze(-1)
            return torch.complex(real, imag)
        return torch.linalg.lu_solve(lu, pivots, rhs.unsqueeze(-1)).squeeze(-1)

    def step(self, state: dict, dt: float) -> dict:
        """One SBDF2 step (SBDF1 when ``state`` has no previous step of the same size)."""
        g = self.explicit_terms(state["psi"], state["theta"], state["mean"])
        previous = state.get("previous")
        order = 2 if previous is not None and previous["dt"] == dt else 1
        f = self._factor(dt, order)
        m = f["m"]
        if order == 2:
            p = previous
            combine = {name: (4 * state[name] - p[name]) / (2 * dt) for name in ("psi", "theta", "mean")}
            explicit = [2 * a - b for a, b in zip(g, p["g"], strict=True)]
        else:
            combine = {name: state[name] / dt for name in ("psi", "theta", "mean")}
            explicit = list(g)
        rhs_psi = (m @ combine["psi"].unsqueeze(-1)).squeeze(-1) + explicit[0]
        rhs_psi[:, [0, 1, -2, -1]] = 0
        rhs_psi[0] = 0
        rhs_theta = combine["theta"] + explicit[1]
        rhs_theta[:, [0, -1]] = 0
        rhs_mean = combine["mean"] + explicit[2]
        rhs_mean[[0, -1]] = 0
        new = {
            "psi": self._solve(f["psi"], rhs_psi),
            "theta": self._solve(f["theta"], rhs_theta),
            "mean": self._solve(f["mean"], rhs_mean),
        }
        new["previous"] = {"psi": state["psi"], "theta": state["theta"], "mean": state["mean"], "g": g, "dt": dt}
        return new

    # ------------------------------------------------------------------ diagnostics and output
    def stable_step(self, state: dict) -> float:
        ux, uz = self.velocity(state["psi"], state["mean"])
        dx = self.grid.length_x / self.grid.n_x
        z = self.grid.z()
        spacing = torch.empty_like(z)
        spacing[1:-1] = (z[2:] - z[:-2]) / 2
        spacing[0], spacing[-1] = z[1] - z[0], z[-1] - z[-2]
        rate = (ux.abs().max() / dx).item() + (uz.abs() / spacing[None, :]).max().item()
        return min(MAX_STEP, CFL / rate) if rate > 0 else MAX_STEP

    def buoyancy(self, state: dict) -> torch.Tensor:
        return self.to_physical(state["theta"]) + self.conduction[None, :]

    def pressure(self, state: dict) -> torch.Tensor:
        """Zero-mean pressure of the state (see the module docstring)."""
        psi, theta, mean_flow = state["psi"], state["theta"], state["mean"]
        ux, uz = self.velocity(psi, mean_flow)
        uu, uw, ww = (self.dealias * self.to_mixed(a * b) for a, b in ((ux, ux), (ux, uz), (uz, uz)))
        k2 = (self.k**2)[:, None]
        source = self.dz(theta) - (-k2 * uu + 2 * self.ik * self.dz(uw) + self.dz(self.dz(ww)))
        n = self.grid.n_z + 1
        eye = torch.eye(n, dtype=torch.float64)
        matrix = (self.D2[None] - (self.k**2)[:, None, None] * eye[None]).clone()
        matrix[:, 0] = self.D[0]
        matrix[:, -1] = self.D[-1]
        wall_curvature = -self.ik * (psi @ self.D2c.T)  # d_zz u_z
        source[:, 0] = theta[:, 0] + self.nu * wall_curvature[:, 0]
        source[:, -1] = theta[:, -1] + self.nu * wall_curvature[:, -1]
        # k = 0: d_z p0 = b0 - d_z <u_z^2>, integrated from the bottom wall, then the mean removed
        n_x = self.grid.n_x  # rfft's k = 0 coefficient is n_x times the horizontal mean
        b0 = theta[0].real / n_x + self.conduction
        integrand = b0 - ((ww[0].real / n_x) @ self.D.T)
        cumulative = self.D.clone()
        cumulative[0] = eye[0]
        rhs0 = integrand.clone()
        rhs0[0] = 0.0
        p0 = torch.linalg.solve(cumulative, rhs0)
        p_hat = torch.zeros_like(theta)
        if matrix.shape[0] > 1:
            lu = torch.linalg.lu_factor(matrix[1:])
            p_hat[1:] = self._solve(lu, source[1:])
        p_hat[0] = n_x * p0.to(torch.complex128)
        p = self.to_physical(p_hat)
        return p - (self.weights @ p.mean(dim=0)) / self.grid.length_z


def initial_state(grid: ChannelGrid, delta_b0: float, noise_seed: int, solver: RayleighBenardSolver) -> dict:
    """The README's initial buoyancy (linear profile ``delta_b0 (L_z - z)`` plus wall-damped noise), no flow."""
    z = grid.z()
    noise = torch.as_tensor(np.random.default_rng(noise_seed).normal(scale=1e-3, size=(grid.n_x, grid.n_z + 1)))
    b = (grid.length_z - z)[None, :] * delta_b0 + z * (grid.length_z - z) * noise
    theta = solver.to_mixed(b - solver.conduction[None, :])
    psi = torch.zeros_like(theta)
    return {"psi": psi, "theta": theta, "mean": torch.zeros(grid.n_z + 1, dtype=torch.float64)}


def simulate_rayleigh_benard(
    grid: ChannelGrid,
    rayleigh: float,
    prandtl: float,
    times: np.ndarray,
    n_z_out: int,
    delta_b0: float = 1.0,
    noise_seed: int = 40,
    max_step: float | None = None,
    state: dict | None = None,
) -> dict[str, torch.Tensor]:
    """``buoyancy, pressure, u_x, u_z`` at ``times`` on ``n_x x n_z_out`` points (uniform in ``z``, walls
    included), each ``(len(times), n_x, n_z_out)``. ``max_step`` fixes the largest step (convergence tests)."""
    solver = RayleighBenardSolver(grid, rayleigh, prandtl)
    state = state if state is not None else initial_state(grid, delta_b0, noise_seed, solver)
    uniform = torch.linspace(0, grid.length_z, n_z_out, dtype=torch.float64)
    to_uniform = chebyshev.interpolation_matrix(grid.n_z, uniform, grid.length_z).T
    times = np.asarray(times, dtype=np.float64)

    def frame(current: dict, first: bool) -> dict[str, torch.Tensor]:
        ux, uz = solver.velocity(current["psi"], current["mean"])
        pressure = torch.zeros_like(ux) if first else solver.pressure(current)
        fields = {"buoyancy": solver.buoyancy(current), "pressure": pressure, "u_x": ux, "u_z": uz}
        return {name: value @ to_uniform for name, value in fields.items()}

    frames = [frame(state, True)]
    for index in range(1, len(times)):
        interval = float(times[index] - times[index - 1])
        limit = max_step if max_step is not None else solver.stable_step(state)
        substeps = max(1, math.ceil(interval / limit - 1e-9))
        if substeps > MAX_SUBSTEPS_PER_FRAME:  # the CFL step collapses as an under-resolved run blows up
            raise FloatingPointError(
                f"Rayleigh-Benard is blowing up before t = {times[index]:g} (Ra = {rayleigh:g}, Pr = {prandtl:g}): "
                f"the CFL step fell to {limit:.2e}; the grid {grid.n_x} x {grid.n_z} is too coarse for it"
            )
        for _ in range(substeps):
            state = solver.step(state, interval / substeps)
        if not torch.isfinite(state["theta"]).all():
            raise FloatingPointError(
                f"Rayleigh-Benard blew up before t = {times[index]:g} (Ra = {rayleigh:g}, Pr = {prandtl:g})"
            )
        frames.append(frame(state, False))
    return {name: torch.stack([f[name] for f in frames]) for name in frames[0]}
