"""Numerical solvers of the paper's pretraining families (PDEBench's equations), in PyTorch float64.

Why our own: the maintained solvers that fit (PyClaw, Dedalus, Exponax) need compilers, MPI or JAX that this
project does not install; these are short, run on CPU or CUDA, and each is validated in
``tests/pretrain/test_solvers.py`` (conservation to round-off, convergence order, exact decay rates).

* ``fitzhugh_nagumo``: 2D diffusion-reaction ``u_t = Du Lap u + u - u^3 - k - v``, ``v_t = Dv Lap v + u - v`` on
  ``[-1, 1]^2`` with no-flux (Neumann) walls: cell-centred 5-point Laplacian with mirrored ghosts, RK4.
* ``shallow_water``: 2D ``h_t + div(h v) = 0``, ``(h v)_t + div(h v v + g h^2/2 I) = 0`` (flat bottom): finite
  volumes, MUSCL (minmod) reconstruction, Rusanov fluxes, SSP-RK2, zero-gradient (open) borders.
* ``vorticity_ns``: 2D incompressible NS with forcing in vorticity form ``w_t + v.grad w = nu Lap w + f`` on the
  periodic unit square: pseudo-spectral with 2/3 de-aliasing, RK4; velocity from the stream function.
* ``compressible_ns``: 1D/2D/3D ``rho, rho v, E = p/(gamma-1) + rho|v|^2/2`` (gamma = 5/3) with shear and bulk
  viscosity (PDEBench's CFD): finite volumes, MUSCL + Rusanov, central viscous stresses, SSP-RK2, periodic.
"""

from __future__ import annotations

import math

import torch

GAMMA = 5.0 / 3.0


# ---------------------------------------------------------------------------- helpers
def minmod(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.where(a * b > 0, torch.sign(a) * torch.minimum(a.abs(), b.abs()), torch.zeros_like(a))


def pad(q: torch.Tensor, axis: int, width: int, mode: str) -> torch.Tensor:
    """Ghost cells along ``axis``: ``periodic`` wrap, ``open`` (zero-gradient copy) or ``mirror``."""
    n = q.shape[axis]
    if mode == "periodic":
        left, right = q.narrow(axis, n - width, width), q.narrow(axis, 0, width)
    else:
        left = (
            q.narrow(axis, 0, 1).expand_as(q.narrow(axis, 0, width))
            if mode == "open"
            else q.narrow(axis, 0, width).flip(axis)
        )
        right = (
            q.narrow(axis, n - 1, 1).expand_as(q.narrow(axis, 0, width))
            if mode == "open"
            else q.narrow(axis, n - width, width).flip(axis)
        )
    return torch.cat([left, q, right], dim=axis)


def muscl_faces(q: torch.Tensor, axis: int, mode: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Left and right states at the ``n + 1`` faces along ``axis`` (minmod-limited linear reconstruction)."""
    padded = pad(q, axis, 2, mode)
    n = q.shape[axis] + 2  # cells -1 .. n
    centre = padded.narrow(axis, 1, n)
    slope = minmod(centre - padded.narrow(axis, 0, n), padded.narrow(axis, 2, n) - centre)
    left = (centre + 0.5 * slope).narrow(axis, 0, n - 1)  # right edge of cell i -> left state of face i+1/2
    right = (centre - 0.5 * slope).narrow(axis, 1, n - 1)
    return left, right


# ---------------------------------------------------------------------------- FitzHugh-Nagumo
def fitzhugh_nagumo(u0, v0, du, dv, k, dx, times, max_dt=0.01):
    """Fields ``(len(times), N, N)`` for u and v from ``u0, v0`` (``N x N``) at ``times`` (``times[0] = 0``)."""

    def laplacian(f):
        g = pad(pad(f, 0, 1, "mirror"), 1, 1, "mirror")  # mirrored ghosts: zero normal flux
        return (g[2:, 1:-1] + g[:-2, 1:-1] + g[1:-1, 2:] + g[1:-1, :-2] - 4 * f) / dx**2

    def rhs(u, v):
        return du * laplacian(u) + u - u**3 - k - v, dv * laplacian(v) + u - v

    dt_stable = 0.5 * dx**2 / (4 * max(du, dv, 1e-30))
    return _integrate(rhs, (u0, v0), times, min(max_dt, dt_stable), _rk4)


def _rk4(rhs, state, h):
    k1 = rhs(*state)
    k2 = rhs(*(s + 0.5 * h * k for s, k in zip(state, k1, strict=True)))
    k3 = rhs(*(s + 0.5 * h * k for s, k in zip(state, k2, strict=True)))
    k4 = rhs(*(s + h * k for s, k in zip(state, k3, strict=True)))
    return tuple(s + h / 6 * (a + 2 * b + 2 * c + d) for s, a, b, c, d in zip(state, k1, k2, k3, k4, strict=True))


def _ssp_rk2(rhs, state, h):
    k1 = rhs(*state)
    stage = tuple(s + h * k for s, k in zip(state, k1, strict=True))
    k2 = rhs(*stage)
    return tuple(0.5 * (s + t + h * k) for s, t, k in zip(state, stage, k2, strict=True))


def _integrate(rhs, state, times, max_dt, stepper, step_size=None):
    """Integrate to every time in ``times``; ``step_size(state)`` bounds the step (CFL) when given."""
    outputs = [tuple(s.clone() for s in state)]
    t = float(times[0])
    for target in times[1:]:
        target = float(target)
        while t < target - 1e-12:
            h = min(max_dt, target - t)
            if step_size is not None:
                h = min(h, step_size(state))
            state = stepper(rhs, state, h)
            t += h
        outputs.append(tuple(s.clone() for s in state))
    return [torch.stack(parts) for parts in zip(*outputs, strict=True)]


# ---------------------------------------------------------------------------- shallow water
def shallow_water(h0, dx, times, g=1.0, cfl=0.4):
    """2D shallow water from rest; returns ``h, u, v`` of shape ``(len(times), N, N)``."""

    def fluxes(h, hu, hv, axis):
        u, v = hu / h, hv / h
        normal = u if axis == 0 else v
        flux_h = h * normal
        flux_hu = hu * normal + (0.5 * g * h**2 if axis == 0 else 0)
        flux_hv = hv * normal + (0.5 * g * h**2 if axis == 1 else 0)
        return flux_h, flux_hu, flux_hv, normal.abs() + torch.sqrt(g * h)

    def rhs(h, hu, hv):
        out = [torch.zeros_like(h) for _ in range(3)]
        for axis in (0, 1):
            faces = [muscl_faces(q, axis, "open") for q in (h, hu, hv)]
            left = [f[0] for f in faces]
            right = [f[1] for f in faces]
            fl, fr = fluxes(*left, axis), fluxes(*right, axis)
            speed = torch.maximum(fl[3], fr[3])
            n = h.shape[axis]
            for i in range(3):
                face = 0.5 * (fl[i] + fr[i]) - 0.5 * speed * (right[i] - left[i])
                out[i] = out[i] - (face.narrow(axis, 1, n) - face.narrow(axis, 0, n)) / dx
        return tuple(out)

    def step_size(state):
        h, hu, hv = state
        speed = (torch.maximum((hu / h).abs(), (hv / h).abs()) + torch.sqrt(g * h)).max()
        return cfl * dx / float(speed)

    zeros = torch.zeros_like(h0)
    h, hu, hv = _integrate(rhs, (h0, zeros, zeros.clone()), times, math.inf, _ssp_rk2, step_size)
    return h, hu / h, hv / h


# ---------------------------------------------------------------------------- incompressible vorticity NS
def vorticity_ns(w0, forcing, nu, length, times, cfl=0.5):
    """Periodic 2D incompressible NS in vorticity form; returns ``u, v`` of shape ``(len(times), N, N)``."""
    n = w0.shape[0]
    k = torch.fft.fftfreq(n, d=length / n, dtype=w0.dtype) * 2 * math.pi
    kx, ky = torch.meshgrid(k, k, indexing="ij")
    k2 = kx**2 + ky**2
    inverse_k2 = torch.where(k2 == 0, torch.zeros_like(k2), 1 / torch.where(k2 == 0, torch.ones_like(k2), k2))
    cutoff = (2.0 / 3.0) * k.abs().max()
    dealias = ((kx.abs() <= cutoff) & (ky.abs() <= cutoff)).to(w0.dtype)
    forcing_hat = torch.fft.fft2(forcing)

    def velocity(w_hat):
        psi_hat = w_hat * inverse_k2  # -Lap psi = w
        return torch.fft.ifft2(1j * ky * psi_hat).real, torch.fft.ifft2(-1j * kx * psi_hat).real

    def rhs(w_hat):
        u, v = velocity(w_hat)
        wx, wy = torch.fft.ifft2(1j * kx * w_hat).real, torch.fft.ifft2(1j * ky * w_hat).real
        advection = torch.fft.fft2(u * wx + v * wy) * dealias
        return (-advection - nu * k2 * w_hat + forcing_hat,)

    viscous_limit = 2.0 / (nu * float(k2.max()) + 1e-30)  # RK4 is stable for |lambda dt| < 2.78

    def step_size(state):
        u, v = velocity(state[0])
        return min(cfl * (length / n) / max(float(torch.sqrt(u**2 + v**2).max()), 1e-6), viscous_limit)

    (w_hat,) = _integrate(lambda w: rhs(w), (torch.fft.fft2(w0).to(torch.complex128),), times, 0.05, _rk4, step_size)
    velocities = [velocity(w) for w in w_hat]
    return torch.stack([u for u, _ in velocities]), torch.stack([v for _, v in velocities])


# ---------------------------------------------------------------------------- compressible NS
def compressible_ns(rho0, velocity0, p0, eta, zeta, dx, times, cfl=0.4):
    """Periodic compressible NS in 1D/2D/3D; ``velocity0`` is a list of d fields. Returns ``rho, [v_a], p``."""
    dims = rho0.ndim

    def primitive(rho, momentum, energy):
        velocity = [m / rho for m in momentum]
        pressure = (GAMMA - 1) * (energy - 0.5 * rho * sum(v**2 for v in velocity))
        return velocity, pressure

    def central(f, axis):
        return (torch.roll(f, -1, axis) - torch.roll(f, 1, axis)) / (2 * dx)

    def rhs(rho, energy, *momentum):
        conserved = [rho, energy, *momentum]
        out = [torch.zeros_like(rho) for _ in conserved]
        for axis in range(dims):
            faces = [muscl_faces(q, axis, "periodic") for q in conserved]
            states = []
            for side in (0, 1):
                r, e, *m = (f[side] for f in faces)
                vel, p = primitive(r, m, e)
                normal = vel[axis]
                flux = [
                    r * normal,
                    (e + p) * normal,
                    *(mb * normal + (p if b == axis else 0) for b, mb in enumerate(m)),
                ]
                speed = normal.abs() + torch.sqrt(GAMMA * p.clamp(min=1e-12) / r)
                states.append(([r, e, *m], flux, speed))
            (ql, fl, sl), (qr, fr, sr) = states
            speed = torch.maximum(sl, sr)
            n = rho.shape[axis]
            for i in range(len(conserved)):
                face = 0.5 * (fl[i] + fr[i]) - 0.5 * speed * (qr[i] - ql[i])
                out[i] = out[i] - (face.narrow(axis, 1, n) - face.narrow(axis, 0, n)) / dx
        # viscous stresses sigma'_ab = eta (d_a v_b + d_b v_a - 2/3 delta div v) + zeta delta div v
        vel, _ = primitive(rho, list(momentum), energy)
        divergence = sum(central(v, a) for a, v in enumerate(vel))
        for b in range(dims):
            for a in range(dims):
                stress = eta * (central(vel[b], a) + central(vel[a], b))
                if a == b:
                    stress = stress + (zeta - 2.0 / 3.0 * eta) * divergence
                out[2 + b] = out[2 + b] + central(stress, a)
                out[1] = out[1] + central(vel[b] * stress, a)
        return tuple(out)

    def step_size(state):
        rho, energy, *momentum = state
        vel, p = primitive(rho, momentum, energy)
        speed = max(float(v.abs().max()) for v in vel) + float(torch.sqrt(GAMMA * p / rho).max())
        viscous = (4.0 / 3.0 * eta + zeta) / float(rho.min())
        return min(cfl * dx / speed, 0.4 * dx**2 / (2 * dims * viscous + 1e-30))

    momentum0 = [rho0 * v for v in velocity0]
    energy0 = p0 / (GAMMA - 1) + 0.5 * rho0 * sum(v**2 for v in velocity0)
    rho, energy, *momentum = _integrate(rhs, (rho0, energy0, *momentum0), times, math.inf, _ssp_rk2, step_size)
    velocity, pressure = primitive(rho, momentum, energy)
    return rho, velocity, pressure
