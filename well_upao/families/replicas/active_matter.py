"""Active matter as The Well made it: the kinetic theory of rod-like active particles in Stokes flow.

Equations (1)-(5) of Maddu, Weady & Shelley, J. Comput. Phys. 504 (2024) 112869 (arXiv:2308.06675), with the
parameters and conventions of its public generating script (SuryanarayanaMK/Learning_closures,
``Kinetic_simulations.py``), which The Well's ``datasets/active_matter/README.md`` links. For the orientation
distribution ``psi(x, theta, t)`` on ``[0, L)^2 x [0, 2 pi)``, ``p = (cos theta, sin theta)``,
``p_perp = (-sin theta, cos theta)``:

    d_t psi + div_x(u psi) + d_theta(theta_dot psi) = d_T Lap psi + d_R d_theta^2 psi
                                                              (V0 = 0: no swimming)
    theta_dot = p_perp . (grad u + 2 zeta D) . p,     (grad u)_ij = d_j u_i
    c = int psi dtheta,   D = int p p psi dtheta,   S = int p p p p psi dtheta
    -Lap u + grad q = div sigma,   div u = 0,   E = (grad u + grad u^T) / 2
    sigma = alpha (D - c I / 2) + beta S:E - 2 zeta beta (D.D - S:D)

with ``d_T = d_R = 0.05``, ``beta = 0.8``, ``L = 10``; the Well varies ``alpha`` (dipole strength, ``-1 .. -5``)
and ``zeta`` (alignment strength, ``1, 3, .., 17``). Written out with ``Q = D - c I / 2`` (``Q_11 = (D_11 -
D_22) / 2``, ``Q_12 = D_12``) and the vorticity ``omega = d_x u_y - d_y u_x``, the rotation rate is
``theta_dot = omega / 2 + (E_12 + 2 zeta Q_12) cos 2 theta - (E_11 + 2 zeta Q_11) sin 2 theta``. In 2D the
moments are the theta-Fourier modes 0, 2 and 4 of ``psi``: with ``C_m + i S_m = int psi e^{i m theta}``,
``D_11 = (c + C_2) / 2``, ``D_12 = S_2 / 2``, ``S_1111 = (3 c + 4 C_2 + C_4) / 8``, ``S_1112 = (2 S_2 + S_4) / 8``,
and the others from ``sum_k S_ijkk = D_ij``.

Method (the script's): Fourier pseudo-spectral in ``x``, ``y`` and ``theta``; products in physical space and the
transport term ``B = -div_x(u psi) - d_theta(theta_dot psi)`` filtered by the 2/3 rule on all three axes; SBDF2
(second-order backward differentiation, diffusion implicit, ``B`` extrapolated):

    (3 psi^{n+1} - 4 psi^n + psi^{n-1}) / (2 dt)
        = (d_T Lap + d_R d_theta^2) psi^{n+1} + 2 B^n - B^{n-1}

with one SBDF1 step to start. The Stokes problem is solved in Fourier space,
``u^ = (I - k k / |k|^2) (i k . sigma^) / |k|^2`` (zero mean velocity); odd derivatives drop the Nyquist mode.

One deliberate difference: the script evaluates the constraint stress ``beta S:E`` with the previous step's
velocity, which makes the scheme first order in time. We solve for the velocity of the current ``psi``
self-consistently: ``u = u_e + beta G u`` with ``u_e`` the Stokes velocity of the other stresses and ``G u`` that
of ``S:E(u)``. ``-G`` is symmetric and positive semi-definite in the energy inner product ``<a, b> = int grad a :
grad b`` (``<G a, b> = -int E(b) : S : E(a)``, and ``S`` is a positive tensor), so ``I - beta G`` is symmetric
positive definite there and conjugate gradients converge (condition number at most ``1 + beta max(c) / 4``); the
step stays second order (tests/families/test_active_matter.py).

Initial condition (the script's ``initialize2_pytorch``, with our own random numbers): ``psi = 1 + sum_{i=1..8}
0.1 (r_0 - 1/2) cos(2 pi k_1 x / L + r_1) cos(2 pi k_2 y / L + r_2) cos(2 theta + r_3)^i``, ``k_1, k_2`` uniform in
``1..8`` and ``r_j`` uniform in ``[0, 1)`` for each term, then scaled so that ``int psi dx dtheta = L^2`` (mean
concentration 1): a perturbation of the isotropic state ``psi = 1 / (2 pi)``. The velocity starts as the Stokes
flow of that state.

Linear theory (the growth rates the tests check): about ``psi_0 = 1 / (2 pi)`` (``c = 1``, ``D = I / 2``, ``u = 0``),
``sigma_1 = (alpha - zeta beta / 2) Q_1 + beta E_1 / 4`` and ``d_t Q_1 = E_1 / 2 + (zeta - 4 d_R + d_T Lap) Q_1``,
``d_t c_1 = d_T Lap c_1``. For a plane wave ``e^{i k x}`` the Stokes flow is ``u = (0, v)`` with
``(1 + beta / 8) k^2 v = (alpha - zeta beta / 2) i k Q_12``, so ``E_12 = -(alpha - zeta beta / 2) Q_12 / (2 (1 + beta
/ 8))`` and the two orientation modes, ``Q_12`` (shear) and ``Q_11`` (splay) with ``k`` along ``x``, grow at

    lambda_shear(k) = zeta - 4 d_R - d_T k^2 - (alpha - zeta beta/2) / (4 + beta/2)
    lambda_splay(k) = zeta - 4 d_R - d_T k^2

(see ``linear_growth_rates``). Extensile stress (``alpha < 0``) destabilises the shear mode; with
``zeta = 0`` it grows only for ``alpha < -(4 d_R + d_T k^2)(4 + beta / 2)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from well_upao.families.replicas.parameters import LENGTH

#: the Well's constants and parameter sets (README and generating script)
D_T = 0.05
D_R = 0.05
BETA = 0.8
#: the script's simulation step at 256^2 x 256 (the README's 3.90625e-4: 640 steps per 0.25 frame)
WELL_STEP = 3.90625e-4
#: the initial condition's terms, their amplitude and highest wavenumber
INITIAL_TERMS = 8
INITIAL_AMPLITUDE = 0.1
INITIAL_MAX_WAVENUMBER = 8
#: conjugate-gradient tolerance (energy norm, relative to the right-hand side) and iteration cap of the Stokes solve
STOKES_TOLERANCE = 1e-12
STOKES_MAX_ITERATIONS = 100


def default_step(n: int) -> float:
    """The Well's step scaled with the grid spacing: ``3.90625e-4 * 256 / n`` (``6.25e-3 / 4`` at 64 points)."""
    return WELL_STEP * 256 / n


@dataclass(frozen=True)
class KineticGrid:
    """``n x n`` points on ``[0, L)^2`` and ``n_theta`` orientations on ``[0, 2 pi)``."""

    n: int
    n_theta: int
    length: float = LENGTH

    @property
    def dx(self) -> float:
        return self.length / self.n

    @property
    def dtheta(self) -> float:
        return 2 * math.pi / self.n_theta

    def x(self) -> torch.Tensor:
        return torch.arange(self.n, dtype=torch.float64) * self.dx

    def theta(self) -> torch.Tensor:
        return torch.arange(self.n_theta, dtype=torch.float64) * self.dtheta


class KineticOperators:
    """Wavenumbers, filters and the moment / Stokes maps on one ``KineticGrid``.

    Spectra of ``psi`` are ``rfftn`` over ``(x, y, theta)`` (theta halved); 2D fields use the full ``fft2``.
    """

    def __init__(self, grid: KineticGrid):
        self.grid = grid
        n, n_theta = grid.n, grid.n_theta
        index = torch.fft.fftfreq(n, d=1.0 / n, dtype=torch.float64)  # integers 0, 1, .., -1
        k = 2 * math.pi * index / grid.length
        k_odd = torch.where(index.abs() == n / 2, torch.zeros_like(k), k)  # no odd derivative of the Nyquist mode
        m = torch.fft.rfftfreq(n_theta, d=1.0 / n_theta, dtype=torch.float64)
        self.kx, self.ky = k.view(n, 1), k.view(1, n)  # 2D, for the second derivatives
        self.dx_symbol, self.dy_symbol = 1j * k_odd.view(n, 1), 1j * k_odd.view(1, n)
        self.k2 = self.kx**2 + self.ky**2
        self.inverse_k2 = torch.where(
            self.k2 == 0, torch.zeros_like(self.k2), 1 / torch.where(self.k2 == 0, 1, self.k2)
        )
        self.m = m.view(1, 1, -1)
        self.dtheta_symbol = 1j * torch.where(m == n_theta / 2, torch.zeros_like(m), m).view(1, 1, -1)
        kept = (index.abs() < n / 3).double()
        self.dealias = kept.view(n, 1, 1) * kept.view(1, n, 1) * (m < n_theta / 3).double().view(1, 1, -1)
        self.laplacian3 = -(self.k2.unsqueeze(-1))  # (n, n, 1)
        theta = grid.theta()
        self.cos2, self.sin2 = torch.cos(2 * theta), torch.sin(2 * theta)

    # ------------------------------------------------------------------ transforms
    def fft3(self, psi: torch.Tensor) -> torch.Tensor:
        return torch.fft.rfftn(psi, dim=(0, 1, 2))

    def ifft3(self, psi_hat: torch.Tensor) -> torch.Tensor:
        g = self.grid
        return torch.fft.irfftn(psi_hat, s=(g.n, g.n, g.n_theta), dim=(0, 1, 2))

    @staticmethod
    def fft2(field: torch.Tensor) -> torch.Tensor:
        return torch.fft.fft2(field, dim=(0, 1))

    @staticmethod
    def ifft2(spectrum: torch.Tensor) -> torch.Tensor:
        return torch.fft.ifft2(spectrum, dim=(0, 1)).real

    # ------------------------------------------------------------------ moments
    def moments(self, psi_hat: torch.Tensor) -> dict[str, torch.Tensor]:
        """``c``, ``D`` and ``S`` (independent components) from the theta modes 0, 2, 4 of ``psi`` (see the module
        docstring); ``C_m + i S_m = dtheta * conj(rfft_theta(psi)_m)``."""
        dtheta = self.grid.dtheta
        modes = torch.fft.ifft2(psi_hat[:, :, [0, 2, 4]], dim=(0, 1)) * dtheta  # (n, n, 3): rfft_theta coefficients
        c = modes[..., 0].real
        c2, s2 = modes[..., 1].real, -modes[..., 1].imag
        c4, s4 = modes[..., 2].real, -modes[..., 2].imag
        d11, d12, d22 = (c + c2) / 2, s2 / 2, (c - c2) / 2
        s1111 = (3 * c + 4 * c2 + c4) / 8
        s1112 = (2 * s2 + s4) / 8
        s1122 = d11 - s1111
        s1222 = d12 - s1112
        s2222 = d22 - s1122
        return {
            "c": c,
            "d11": d11,
            "d12": d12,
            "d22": d22,
            "s1111": s1111,
            "s1112": s1112,
            "s1122": s1122,
            "s1222": s1222,
            "s2222": s2222,
        }

    # ------------------------------------------------------------------ velocity
    def strain(self, u_hat: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(E_11, E_12)`` of a divergence-free velocity spectrum ``(2, n, n)`` (``E_22 = -E_11``)."""
        e11 = self.ifft2(self.dx_symbol * u_hat[0])
        e12 = self.ifft2(0.5 * (self.dy_symbol * u_hat[0] + self.dx_symbol * u_hat[1]))
        return e11, e12

    def vorticity(self, u_hat: torch.Tensor) -> torch.Tensor:
        return self.ifft2(self.dx_symbol * u_hat[1] - self.dy_symbol * u_hat[0])

    def stokes(self, s11: torch.Tensor, s12: torch.Tensor, s22: torch.Tensor) -> torch.Tensor:
        """Velocity spectrum ``(2, n, n)`` of ``-Lap u + grad q = div sigma``, ``div u = 0`` for a symmetric stress
        given in physical space: ``u^ = (I - k k / |k|^2) f^ / |k|^2`` with ``f^_i = i k_j sigma^_ij``."""
        h11, h12, h22 = self.fft2(s11), self.fft2(s12), self.fft2(s22)
        fx = self.dx_symbol * h11 + self.dy_symbol * h12
        fy = self.dx_symbol * h12 + self.dy_symbol * h22
        # projection with the derivative symbols (i k_odd): k_odd . u^ = 0 exactly
        kx, ky = self.dx_symbol.imag, self.dy_symbol.imag
        kk = kx**2 + ky**2
        inverse_kk = torch.where(kk == 0, torch.zeros_like(kk), 1 / torch.where(kk == 0, 1, kk))
        k_dot_f = (kx * fx + ky * fy) * inverse_kk
        ux = (fx - kx * k_dot_f) * self.inverse_k2
        uy = (fy - ky * k_dot_f) * self.inverse_k2
        return torch.stack([ux, uy])

    def constraint_velocity(self, moments: dict[str, torch.Tensor], u_hat: torch.Tensor) -> torch.Tensor:
        """``G u``: the Stokes velocity of the stress ``S:E(u)``."""
        m = moments
        e11, e12 = self.strain(u_hat)
        e22 = -e11
        se11 = m["s1111"] * e11 + 2 * m["s1112"] * e12 + m["s1122"] * e22
        se12 = m["s1112"] * e11 + 2 * m["s1122"] * e12 + m["s1222"] * e22
        se22 = m["s1122"] * e11 + 2 * m["s1222"] * e12 + m["s2222"] * e22
        return self.stokes(se11, se12, se22)

    def energy_inner(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """``<a, b> = sum_k |k|^2 a^ . conj(b^)`` (real part): ``int grad a : grad b`` up to a constant."""
        return (self.k2 * (a * b.conj()).real).sum()


@dataclass(frozen=True)
class ActiveMatterParameters:
    alpha: float
    zeta: float
    beta: float = BETA
    d_t: float = D_T
    d_r: float = D_R


class KineticSolver:
    """The kinetic model on one grid with one parameter set (see the module docstring)."""

    def __init__(self, grid: KineticGrid, parameters: ActiveMatterParameters):
        self.grid = grid
        self.ops = KineticOperators(grid)
        self.p = parameters
        self.linear = parameters.d_t * self.ops.laplacian3 - parameters.d_r * self.ops.m**2  # (n, n, n_theta/2 + 1)
        self.cg_iterations: list[int] = []

    # ------------------------------------------------------------------ stress and velocity
    def other_stress(self, m: dict[str, torch.Tensor]) -> tuple[torch.Tensor, ...]:
        """``alpha (D - c I / 2) - 2 zeta beta (D.D - S:D)`` (the stress that does not depend on ``u``)."""
        alpha, zeta, beta = self.p.alpha, self.p.zeta, self.p.beta
        d11, d12, d22 = m["d11"], m["d12"], m["d22"]
        dd11 = d11 * d11 + d12 * d12
        dd12 = d11 * d12 + d12 * d22
        dd22 = d12 * d12 + d22 * d22
        sd11 = m["s1111"] * d11 + 2 * m["s1112"] * d12 + m["s1122"] * d22
        sd12 = m["s1112"] * d11 + 2 * m["s1122"] * d12 + m["s1222"] * d22
        sd22 = m["s1122"] * d11 + 2 * m["s1222"] * d12 + m["s2222"] * d22
        s11 = alpha * (d11 - m["c"] / 2) - 2 * zeta * beta * (dd11 - sd11)
        s12 = alpha * d12 - 2 * zeta * beta * (dd12 - sd12)
        s22 = alpha * (d22 - m["c"] / 2) - 2 * zeta * beta * (dd22 - sd22)
        return s11, s12, s22

    def velocity(
        self,
        m: dict[str, torch.Tensor],
        guess: torch.Tensor | None = None,
        stress: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None,
    ) -> torch.Tensor:
        """The self-consistent Stokes velocity spectrum ``(2, n, n)`` of ``-Lap u + grad q = div(sigma_e + beta
        S:E(u))``: ``(I - beta G) u = u_e`` by conjugate gradients in the energy inner product (module docstring).
        ``sigma_e = (s11, s12, s22)`` is ``other_stress`` unless ``stress`` gives it."""
        ops, beta = self.ops, self.p.beta
        rhs = ops.stokes(*(self.other_stress(m) if stress is None else stress))

        def apply(v: torch.Tensor) -> torch.Tensor:
            return v - beta * ops.constraint_velocity(m, v)

        u = torch.zeros_like(rhs) if guess is None else guess.clone()
        residual = rhs - apply(u)
        direction = residual.clone()
        rr = ops.energy_inner(residual, residual)
        target = STOKES_TOLERANCE**2 * max(float(ops.energy_inner(rhs, rhs)), 1e-300)
        for iteration in range(STOKES_MAX_ITERATIONS + 1):
            if float(rr) <= target:
                self.cg_iterations.append(iteration)
                return u
            applied = apply(direction)
            step = rr / ops.energy_inner(direction, applied)
            u = u + step * direction
            residual = residual - step * applied
            rr_new = ops.energy_inner(residual, residual)
            direction = residual + (rr_new / rr) * direction
            rr = rr_new
        raise FloatingPointError(
            f"the Stokes solve did not converge in {STOKES_MAX_ITERATIONS} iterations "
            f"(alpha = {self.p.alpha:g}, zeta = {self.p.zeta:g}): the run is blowing up"
        )

    # ------------------------------------------------------------------ transport
    def transport(self, psi_hat: torch.Tensor, m: dict[str, torch.Tensor], u_hat: torch.Tensor) -> torch.Tensor:
        """``B^ = -filter (i k . (u psi)^ + i m (theta_dot psi)^)``."""
        ops, zeta = self.ops, self.p.zeta
        psi = ops.ifft3(psi_hat)
        ux, uy = ops.ifft2(u_hat[0]), ops.ifft2(u_hat[1])
        e11, e12 = ops.strain(u_hat)
        omega = ops.vorticity(u_hat)
        a = e11 + zeta * (m["d11"] - m["d22"])  # E_11 + 2 zeta Q_11
        b = e12 + 2 * zeta * m["d12"]  # E_12 + 2 zeta Q_12
        theta_dot = (omega / 2).unsqueeze(-1) + b.unsqueeze(-1) * ops.cos2 - a.unsqueeze(-1) * ops.sin2
        flux_x = ops.fft3(ux.unsqueeze(-1) * psi)
        flux_y = ops.fft3(uy.unsqueeze(-1) * psi)
        flux_theta = ops.fft3(theta_dot * psi)
        divergence = (
            ops.dx_symbol.unsqueeze(-1) * flux_x + ops.dy_symbol.unsqueeze(-1) * flux_y + ops.dtheta_symbol * flux_theta
        )
        return -ops.dealias * divergence

    def state(self, psi_hat: torch.Tensor, guess: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """Moments, velocity and transport of ``psi``."""
        m = self.ops.moments(psi_hat)
        u_hat = self.velocity(m, guess)
        return {"psi_hat": psi_hat, "moments": m, "u_hat": u_hat, "transport": self.transport(psi_hat, m, u_hat)}

    def step(self, current: dict, previous: dict | None, dt: float) -> dict:
        """One SBDF2 step (SBDF1 when ``previous`` is ``None``); returns the new state."""
        if previous is None:
            psi_hat = (current["psi_hat"] + dt * current["transport"]) / (1 - dt * self.linear)
            guess = current["u_hat"]
        else:
            explicit = 4 * current["psi_hat"] - previous["psi_hat"]
            explicit = explicit + 2 * dt * (2 * current["transport"] - previous["transport"])
            psi_hat = explicit / (3 - 2 * dt * self.linear)
            guess = 2 * current["u_hat"] - previous["u_hat"]
        return self.state(psi_hat, guess)

    def fields(self, state: dict) -> dict[str, torch.Tensor]:
        """The Well's stored fields of a state: ``concentration (n, n)``, ``velocity (n, n, 2)``, ``D`` and ``E``
        ``(n, n, 2, 2)``."""
        m, u_hat = state["moments"], state["u_hat"]
        e11, e12 = self.ops.strain(u_hat)
        d = torch.stack([torch.stack([m["d11"], m["d12"]], -1), torch.stack([m["d12"], m["d22"]], -1)], -2)
        e = torch.stack([torch.stack([e11, e12], -1), torch.stack([e12, -e11], -1)], -2)
        velocity = torch.stack([self.ops.ifft2(u_hat[0]), self.ops.ifft2(u_hat[1])], -1)
        return {"concentration": m["c"], "velocity": velocity, "D": d, "E": e}


def initial_distribution(grid: KineticGrid, seed: int) -> torch.Tensor:
    """The perturbed isotropic state of the module docstring, ``(n, n, n_theta)``, normalised to mean
    concentration 1."""
    rng = np.random.default_rng(seed)
    x = grid.x()
    xx, yy, theta = torch.meshgrid(x, x, grid.theta(), indexing="ij")
    psi = torch.ones_like(xx)
    for power in range(1, INITIAL_TERMS + 1):
        k1, k2 = rng.integers(1, INITIAL_MAX_WAVENUMBER + 1, size=2)
        r = rng.uniform(0.0, 1.0, size=4)
        psi = psi + (
            INITIAL_AMPLITUDE
            * (r[0] - 0.5)
            * torch.cos(2 * math.pi * float(k1) * xx / grid.length + r[1])
            * torch.cos(2 * math.pi * float(k2) * yy / grid.length + r[2])
            * torch.cos(2 * theta + r[3]) ** power
        )
    total = psi.sum() * grid.dx**2 * grid.dtheta
    return psi * grid.length**2 / total


def simulate_active_matter(
    grid: KineticGrid,
    parameters: ActiveMatterParameters,
    psi0: torch.Tensor,
    times: np.ndarray,
    step: float | None = None,
    return_psi: bool = False,
) -> dict[str, torch.Tensor]:
    """The Well's fields at ``times`` (equal spacing, ``times[0]`` the initial state), stacked over time:
    ``concentration (T, n, n)``, ``velocity (T, n, n, 2)``, ``D``, ``E`` ``(T, n, n, 2, 2)``; with ``return_psi``
    also ``psi (T, n, n, n_theta)``. Each frame interval is split into the fewest equal steps no longer than
    ``step`` (default ``default_step``)."""
    solver = KineticSolver(grid, parameters)
    times = np.asarray(times, dtype=np.float64)
    frame_dt = float(times[1] - times[0]) if len(times) > 1 else 1.0
    substeps = max(1, math.ceil(frame_dt / (step or default_step(grid.n)) - 1e-9))
    dt = frame_dt / substeps
    current = solver.state(solver.ops.fft3(psi0.double()))
    previous = None
    frames = [solver.fields(current)]
    psis = [solver.ops.ifft3(current["psi_hat"])] if return_psi else []
    for index in range(1, len(times)):
        for _ in range(substeps):
            current, previous = solver.step(current, previous, dt), current
        fields = solver.fields(current)
        if not all(torch.isfinite(v).all() for v in fields.values()):
            raise FloatingPointError(
                f"active matter blew up before t = {times[index]:g} (alpha = {parameters.alpha:g}, "
                f"zeta = {parameters.zeta:g}, step {dt:.3g})"
            )
        frames.append(fields)
        if return_psi:
            psis.append(solver.ops.ifft3(current["psi_hat"]))
    out = {name: torch.stack([f[name] for f in frames]) for name in frames[0]}
    if return_psi:
        out["psi"] = torch.stack(psis)
    return out


def linear_growth_rates(
    k: float, alpha: float, zeta: float, beta: float = BETA, d_t: float = D_T, d_r: float = D_R
) -> dict[str, float]:
    """Growth rates of plane-wave perturbations ``e^{i k x}`` of the isotropic state (module docstring):
    ``shear`` (``Q_12``), ``splay`` (``Q_11``) and ``concentration`` (``-d_T k^2``)."""
    base = zeta - 4 * d_r - d_t * k**2
    return {
        "shear": base - (alpha - zeta * beta / 2) / (4 + beta / 2),
        "splay": base,
        "concentration": -d_t * k**2,
    }
