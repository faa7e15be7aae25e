"""Active matter (The Well's ``active_matter``): the relations its stored fields satisfy, and what a closure leaves.

The files store ``c`` (``concentration``), ``u`` (``velocity``), ``D = int p p psi dtheta`` and ``E = (grad u +
grad u^T) / 2`` of the kinetic theory of Maddu, Weady & Shelley, J. Comput. Phys. 504 (2024) 112869, eqs (1)-(5)
(``well_upao/families/replicas/active_matter.py`` states it). With no swimming (``V0 = 0``) four relations hold
exactly on the stored fields:

1. concentration transport ``d_t c + div(u c) = d_T Lap c``, ``d_T = 0.05`` (the theta-integral of the Smoluchowski
   equation: the rotational terms integrate to zero and there is no self-propulsion flux);
2. incompressibility ``div u = 0``;
3. kinematics ``E = (grad u + grad u^T) / 2``;
4. ``tr D = c``.

The first two are the sub-equations of the registry entry ``active_matter`` (``well_upao.physics.pdes``), the ones
UPAO can use with the paper's fields (concentration and velocity); 3 and 4 need the ``D`` and ``E`` fields the paper
drops and are measured here (``kinematic_residuals``). Two more relations need the fourth moment ``S = int p p p p
psi dtheta``, which the files do not store:

5. the orientation equation (the ``p p`` moment of the Smoluchowski equation, ``(grad u)_ij = d_j u_i``):

       d_t D + div(u D) = grad u . D + D . grad u^T - 2 S:E + 4 zeta (D . D - S:D) + d_T Lap D - 4 d_R (D - c I / 2)

6. the Stokes balance ``-Lap u + grad q = div sigma`` with ``sigma = alpha (D - c I / 2) + beta S:E - 2 zeta beta
   (D . D - S:D)``, here in its curl form ``-Lap omega = curl div sigma`` (``omega = d_x u_y - d_y u_x``; the
   curl removes the pressure, which is not stored either).

A model of ``S`` from ``c`` and ``D`` (a closure) leaves a floor in 5 and 6 even on exact data. In 2D the moments are
the theta-Fourier modes of ``psi``: ``c`` and ``D`` fix modes 0 and 2 (``C_2 + i S_2 = (D_11 - D_22) + 2 i D_12``),
``S`` adds mode 4 (``C_4 + i S_4``) through ``S_1111 = (3 c + 4 C_2 + C_4) / 8``, ``S_1112 = (2 S_2 + S_4) / 8`` and
``sum_k S_ijkk = D_ij``. ``closure_fourth_moment`` offers

* ``linear``: mode 4 set to zero (the isotropic-linear closure);
* ``bingham``: mode 4 of the distribution ``psi ~ exp(kappa cos 2 (theta - theta_0))`` with the same modes 0 and 2
  (in 2D the Bingham closure): ``r = |C_2 + i S_2| / c = I_1(kappa) / I_0(kappa)``, ``C_4 + i S_4 = c (1 - 2 r /
  kappa) ((C_2 + i S_2) / |C_2 + i S_2|)^2`` (``I_2 / I_0 = 1 - 2 I_1 / (kappa I_0)``);
* ``exact``: ``S`` given (e.g. from the simulation's ``psi``), to separate the closure's floor from the
  discretisation's.

Derivatives are spectral (the data are periodic); frames are tensors with the two spatial axes before the tensor
axes: ``c (..., X, Y)``, ``u (..., X, Y, 2)``, ``D``, ``E (..., X, Y, 2, 2)``, ``S (..., X, Y, 2, 2, 2, 2)``. Nothing
here reads files.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from well_upao.physics.stencils import Grid, Stencils

D_T = 0.05
D_R = 0.05
BETA = 0.8
CLOSURES = ("exact", "linear", "bingham")


@dataclass
class ActiveMatterFrames:
    """Stored fields of one or more trajectories and frames (see the module docstring for the shapes)."""

    concentration: torch.Tensor
    velocity: torch.Tensor
    D: torch.Tensor
    E: torch.Tensor
    spacing: tuple[float, float]

    def ops(self) -> Stencils:
        return Stencils(Grid(self.spacing, (True, True)), "spectral")


def _norm(value: torch.Tensor) -> float:
    return float(value.double().square().sum().sqrt())


def velocity_gradient(u: torch.Tensor, ops: Stencils) -> torch.Tensor:
    """``(grad u)_ij = d_j u_i``, ``(..., X, Y, 2, 2)``."""
    rows = [torch.stack([ops.d(u[..., i], j) for j in range(2)], -1) for i in range(2)]
    return torch.stack(rows, -2)


def kinematic_residuals(frames: ActiveMatterFrames) -> dict[str, float]:
    """Relative residuals of relations 2-4 (module docstring): ``strain`` ``|E - sym grad u| / |E|``, ``trace``
    ``|tr D - c| / |c|``, ``incompressibility`` ``|div u| / |grad u|``."""
    ops = frames.ops()
    gradient = velocity_gradient(frames.velocity.double(), ops)
    strain = 0.5 * (gradient + gradient.transpose(-1, -2))
    trace = frames.D[..., 0, 0] + frames.D[..., 1, 1]
    return {
        "strain": _norm(frames.E - strain) / _norm(frames.E),
        "trace": _norm(trace - frames.concentration) / _norm(frames.concentration),
        "incompressibility": _norm(gradient[..., 0, 0] + gradient[..., 1, 1]) / _norm(gradient),
    }


# ---------------------------------------------------------------------------- fourth moment and closures
def fourth_moment_from_modes(c: torch.Tensor, D: torch.Tensor, c4: torch.Tensor, s4: torch.Tensor) -> torch.Tensor:
    """The full ``S (..., 2, 2, 2, 2)`` from ``c``, ``D`` and the fourth theta mode ``C_4 + i S_4``."""
    c2, s2 = D[..., 0, 0] - D[..., 1, 1], 2 * D[..., 0, 1]
    s1111 = (3 * c + 4 * c2 + c4) / 8
    s1112 = (2 * s2 + s4) / 8
    s1122 = D[..., 0, 0] - s1111
    s1222 = D[..., 0, 1] - s1112
    s2222 = D[..., 1, 1] - s1122
    by_count = [s1111, s1112, s1122, s1222, s2222]  # indexed by the number of 2s among (i, j, k, l)
    out = torch.empty((*c.shape, 2, 2, 2, 2), dtype=c.dtype, device=c.device)
    for i in range(2):
        for j in range(2):
            for k in range(2):
                for m in range(2):
                    out[..., i, j, k, m] = by_count[i + j + k + m]
    return out


def bingham_kappa(r: torch.Tensor, iterations: int = 30) -> torch.Tensor:
    """``kappa`` with ``I_1(kappa) / I_0(kappa) = r`` (``0 <= r < 1``), by Newton's method from ``r (2 - r^2) /
    (1 - r^2)``; ``d/dkappa (I_1 / I_0) = 1 - A / kappa - A^2``."""
    r = r.clamp(0.0, 1 - 1e-12)
    kappa = r * (2 - r * r) / (1 - r * r)
    for _ in range(iterations):
        ratio = torch.special.i1e(kappa) / torch.special.i0e(kappa)
        slope = torch.where(kappa > 1e-8, 1 - ratio / kappa.clamp_min(1e-300) - ratio * ratio, torch.full_like(r, 0.5))
        kappa = (kappa - (ratio - r) / slope).clamp_min(0.0)
    return kappa


def closure_fourth_moment(c: torch.Tensor, D: torch.Tensor, kind: str) -> torch.Tensor:
    """``S`` from ``c`` and ``D`` by the ``linear`` or ``bingham`` closure (module docstring)."""
    if kind == "linear":
        zero = torch.zeros_like(c)
        return fourth_moment_from_modes(c, D, zero, zero)
    if kind != "bingham":
        raise ValueError(f"closure must be 'linear' or 'bingham' (or 'exact' with S given), got {kind!r}")
    c2, s2 = D[..., 0, 0] - D[..., 1, 1], 2 * D[..., 0, 1]
    modulus = torch.sqrt(c2 * c2 + s2 * s2)
    r = modulus / c
    kappa = bingham_kappa(r)
    ratio = torch.special.i1e(kappa) / torch.special.i0e(kappa)
    small = kappa < 1e-4
    fourth = torch.where(small, kappa * kappa / 8, 1 - 2 * ratio / torch.where(small, 1.0, kappa))  # I_2 / I_0
    safe = torch.where(modulus > 0, modulus, 1.0)
    cos2, sin2 = c2 / safe, s2 / safe  # e^{2 i theta_0}
    c4 = c * fourth * (cos2 * cos2 - sin2 * sin2)
    s4 = c * fourth * (2 * cos2 * sin2)
    return fourth_moment_from_modes(c, D, c4, s4)


def _fourth_moment(frames: ActiveMatterFrames, closure: str, S: torch.Tensor | None) -> torch.Tensor:
    if closure == "exact":
        if S is None:
            raise ValueError("closure 'exact' needs the fourth moment S")
        return S
    return closure_fourth_moment(frames.concentration, frames.D, closure)


def contract(S: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
    """``(S:A)_ij = S_ijkl A_kl``."""
    return torch.einsum("...ijkl,...kl->...ij", S, A)


# ---------------------------------------------------------------------------- relations 5 and 6
def orientation_terms(frames: ActiveMatterFrames, S: torch.Tensor, zeta: torch.Tensor | float) -> list[torch.Tensor]:
    """The terms of ``N(D)`` with ``d_t D + N = 0`` (relation 5), each ``(..., X, Y, 2, 2)``: transport, the
    Jeffery rotation, the constraint term ``2 S:E``, alignment, translational and rotational diffusion."""
    ops = frames.ops()
    c, u, D, E = frames.concentration, frames.velocity, frames.D, frames.E
    zeta = _broadcast(zeta, c)[..., None, None]
    gradient = velocity_gradient(u, ops)
    flux = u[..., :, None, None] * D[..., None, :, :]  # (u_k D_ij) with k first
    transport = torch.stack(
        [
            torch.stack([ops.d(flux[..., 0, i, j], 0) + ops.d(flux[..., 1, i, j], 1) for j in range(2)], -1)
            for i in range(2)
        ],
        -2,
    )
    rotation = gradient @ D + D @ gradient.transpose(-1, -2)
    identity = torch.eye(2, dtype=c.dtype, device=c.device)
    laplacian = torch.stack([torch.stack([ops.laplacian(D[..., i, j]) for j in range(2)], -1) for i in range(2)], -2)
    return [
        transport,
        -rotation,
        2 * contract(S, E),
        -4 * zeta * (D @ D - contract(S, D)),
        -D_T * laplacian,
        4 * D_R * (D - c[..., None, None] * identity / 2),
    ]


def orientation_residual(
    frames: ActiveMatterFrames,
    dt: float,
    zeta: torch.Tensor | float,
    closure: str = "bingham",
    S: torch.Tensor | None = None,
) -> float:
    """Relative residual of relation 5 between consecutive frames (time axis -3 of ``c``; Crank-Nicolson, the
    terms at the mean of the two frames): ``|R| / | |d_t D| + sum |terms| |`` over every pair."""
    S = _fourth_moment(frames, closure, S)
    mid = _midpoint(frames)
    terms = orientation_terms(mid, 0.5 * (S[..., 1:, :, :, :, :, :, :] + S[..., :-1, :, :, :, :, :, :]), zeta)
    rate = (frames.D[..., 1:, :, :, :, :] - frames.D[..., :-1, :, :, :, :]) / dt
    residual = rate + sum(terms)
    scale = rate.abs() + sum(t.abs() for t in terms)
    return _norm(residual) / _norm(scale)


def stokes_residual(
    frames: ActiveMatterFrames,
    alpha: torch.Tensor | float,
    zeta: torch.Tensor | float,
    closure: str = "bingham",
    S: torch.Tensor | None = None,
) -> float:
    """Relative residual of relation 6 in curl form, ``-Lap omega - curl div sigma``, over every frame: ``|R| / |
    |Lap omega| + |curl div sigma| |``."""
    S = _fourth_moment(frames, closure, S)
    ops = frames.ops()
    c, u, D, E = frames.concentration, frames.velocity, frames.D, frames.E
    alpha = _broadcast(alpha, c)[..., None, None]
    zeta = _broadcast(zeta, c)[..., None, None]
    identity = torch.eye(2, dtype=c.dtype, device=c.device)
    sigma = (
        alpha * (D - c[..., None, None] * identity / 2)
        + BETA * contract(S, E)
        - 2 * zeta * BETA * (D @ D - contract(S, D))
    )
    force = [ops.d(sigma[..., i, 0], 0) + ops.d(sigma[..., i, 1], 1) for i in range(2)]
    curl_force = ops.d(force[1], 0) - ops.d(force[0], 1)
    omega = ops.d(u[..., 1], 0) - ops.d(u[..., 0], 1)
    viscous = -ops.laplacian(omega)
    return _norm(viscous - curl_force) / _norm(viscous.abs() + curl_force.abs())


def _midpoint(frames: ActiveMatterFrames) -> ActiveMatterFrames:
    def mean(value: torch.Tensor, tensor_axes: int) -> torch.Tensor:
        axis = value.ndim - 3 - tensor_axes
        n = value.shape[axis]
        return 0.5 * (value.narrow(axis, 1, n - 1) + value.narrow(axis, 0, n - 1))

    return ActiveMatterFrames(
        mean(frames.concentration, 0),
        mean(frames.velocity, 1),
        mean(frames.D, 2),
        mean(frames.E, 2),
        frames.spacing,
    )


def _broadcast(value: torch.Tensor | float, like: torch.Tensor) -> torch.Tensor:
    """A per-sample parameter ``(B,)`` (or a number) broadcast against ``(B, ..., X, Y)``."""
    value = torch.as_tensor(value, dtype=like.dtype, device=like.device)
    if value.ndim == 1:
        value = value.reshape(-1, *([1] * (like.ndim - 1)))
    return value
