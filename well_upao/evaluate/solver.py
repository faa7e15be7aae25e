"""The ``solver`` baseline: one step of a numerical solver of the dataset's own PDE from the last input frame.

Method of lines with classical RK4, spatial operators from the PDE registry (spectral derivatives on periodic
axes, our finite differences otherwise), sub-stepped until halving the step changes the result by less than
``tolerance`` (step doubling), so no CFL constant has to be guessed per PDE. Two families:

* every sub-equation steps a field directly (``rate`` is a slot name): ``d_t u_k = -N_k(u)``;
* incompressible flow (a ``pressure`` variable and a ``continuity`` constraint, periodic grid): the momentum
  update is projected onto divergence-free fields (``d_t v = -P N(v, p = 0)``, P the Leray projection) and the
  pressure follows from ``Lap p = -div N(v, p = 0)``.

Other PDEs (conservative or derived quantities, walls with pressure) have no solver baseline (``supports``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

from well_upao.physics.pdes import PDE, Fields
from well_upao.physics.residual import broadcast_parameters, sum_terms
from well_upao.physics.stencils import Grid, Stencils


def _is_incompressible(pde: PDE) -> bool:
    names = {e.name for e in pde.equations}
    return "pressure" in pde.variables and "continuity" in names


def supports(pde: PDE, grid: Grid) -> bool:
    evolving = [e for e in pde.equations if e.name != "continuity"]
    if any(e.evolves is None for e in evolving):
        return False
    if _is_incompressible(pde):
        return all(grid.periodic)
    return all(e.evolves is not None for e in pde.equations)


class PDESolver:
    def __init__(self, pde: PDE, grid: Grid, tolerance: float = 1e-6, max_substeps: int = 2048):
        if not supports(pde, grid):
            raise ValueError(f"no solver baseline for PDE {pde.name!r} on this grid")
        derivative = "spectral" if all(grid.periodic) else "fd"
        self.grid = grid
        self.ops = Stencils(grid, derivative)
        self.pde = pde
        self.incompressible = _is_incompressible(pde)
        self.tolerance = tolerance
        self.max_substeps = max_substeps

    # ------------------------------------------------------------------ right-hand side
    def _rhs(self, state: Fields, params: Mapping) -> dict[str, torch.Tensor]:
        if self.incompressible:
            state = dict(state, pressure=torch.zeros_like(state["pressure"]))
        out = {}
        for equation in self.pde.equations:
            if equation.evolves is None:
                continue
            out[equation.evolves] = -sum_terms(equation.flux(state, params, self.ops))
        if self.incompressible:
            velocity = [name for name in ("Vx", "Vy", "Vz") if name in out]
            projected = self._project([out[v] for v in velocity])
            out.update(dict(zip(velocity, projected, strict=True)))
        return out

    def _wavenumbers(self, shape, device) -> list[torch.Tensor]:
        ks = []
        dims = self.grid.dims
        for axis, (n, dx) in enumerate(zip(shape[-dims:], self.grid.spacing, strict=True)):
            k = torch.fft.fftfreq(n, d=dx, device=device) * 2 * math.pi
            view = [1] * dims
            view[axis] = n
            ks.append(k.view(view))
        return ks

    def _project(self, components: list[torch.Tensor]) -> list[torch.Tensor]:
        """Leray projection ``v - grad Lap^-1 div v`` in Fourier space."""
        dims = self.grid.dims
        axes = tuple(range(-dims, 0))
        ks = self._wavenumbers(components[0].shape, components[0].device)
        k2 = sum(k**2 for k in ks)
        k2 = torch.where(k2 == 0, torch.ones_like(k2), k2)
        hats = [torch.fft.fftn(c, dim=axes) for c in components]
        divergence = sum(k * h for k, h in zip(ks, hats, strict=True))
        return [torch.fft.ifftn(h - k * divergence / k2, dim=axes).real for k, h in zip(ks, hats, strict=True)]

    def _pressure(self, state: Fields, params: Mapping) -> torch.Tensor:
        """``Lap p = -div N(v, p = 0)`` (zero mean)."""
        dims = self.grid.dims
        axes = tuple(range(-dims, 0))
        zero_pressure = dict(state, pressure=torch.zeros_like(state["pressure"]))
        terms = {e.evolves: sum_terms(e.flux(zero_pressure, params, self.ops)) for e in self.pde.equations if e.evolves}
        velocity = [name for name in ("Vx", "Vy", "Vz") if name in terms]
        ks = self._wavenumbers(state["pressure"].shape, state["pressure"].device)
        k2 = sum(k**2 for k in ks)
        divergence = sum(1j * k * torch.fft.fftn(terms[v], dim=axes) for k, v in zip(ks, velocity, strict=True))
        p_hat = divergence / torch.where(k2 == 0, torch.ones_like(k2), k2)  # -k^2 p = -div N
        p_hat = torch.where(k2 == 0, torch.zeros_like(p_hat), p_hat)
        return torch.fft.ifftn(p_hat, dim=axes).real

    # ------------------------------------------------------------------ time stepping
    def _rk4(self, state: Fields, params: Mapping, dt: torch.Tensor, substeps: int) -> dict[str, torch.Tensor]:
        h = dt / substeps
        state = dict(state)
        for _ in range(substeps):
            k1 = self._rhs(state, params)
            k2 = self._rhs({**state, **{v: state[v] + 0.5 * h * k1[v] for v in k1}}, params)
            k3 = self._rhs({**state, **{v: state[v] + 0.5 * h * k2[v] for v in k2}}, params)
            k4 = self._rhs({**state, **{v: state[v] + h * k3[v] for v in k3}}, params)
            state = {**state, **{v: state[v] + h / 6 * (k1[v] + 2 * k2[v] + 2 * k3[v] + k4[v]) for v in k1}}
        if self.incompressible:
            state["pressure"] = self._pressure(state, params)
        return state

    @torch.no_grad()
    def advance(self, state: Fields, params: Mapping, dt: torch.Tensor, substeps: int) -> dict[str, torch.Tensor]:
        """Advance every field by ``dt`` with ``substeps`` RK4 steps (no error control: the cost-matched ladder)."""
        ndim = next(iter(state.values())).ndim
        params = broadcast_parameters(params, ndim)
        dt = broadcast_parameters({"dt": dt}, ndim)["dt"]
        return self._rk4(state, params, dt, int(substeps))

    @torch.no_grad()
    def step(self, state: Fields, params: Mapping, dt: torch.Tensor) -> tuple[dict[str, torch.Tensor], int]:
        """Advance every field by ``dt`` (``(B,)``); returns the new state and the number of sub-steps used."""
        ndim = next(iter(state.values())).ndim
        params = broadcast_parameters(params, ndim)
        dt = broadcast_parameters({"dt": dt}, ndim)["dt"]
        substeps = 1
        coarse = self._rk4(state, params, dt, substeps)
        while substeps < self.max_substeps:
            fine = self._rk4(state, params, dt, 2 * substeps)
            change = max(float((fine[k] - coarse[k]).abs().max() / (fine[k].abs().max() + 1e-12)) for k in fine)
            substeps *= 2
            coarse = fine
            if math.isfinite(change) and change < self.tolerance:
                break
        return coarse, substeps
