"""The ``solver`` baseline: one step of a numerical solver of the dataset's own PDE from the last input frame.

Method of lines with classical RK4, spatial operators from the PDE registry (spectral derivatives on periodic
axes, our finite differences otherwise), sub-stepped until halving the step changes the result by less than
``tolerance`` (step doubling), so no CFL constant has to be guessed per PDE.

On a fully periodic grid the right-hand side is de-aliased by the 3/2 rule, as pseudo-spectral codes commonly do
(Dedalus's Fourier bases pad by a ``dealias`` factor, 3/2 in its examples; our shear-flow replica truncates by the
equivalent 2/3 rule): the state is Fourier-interpolated onto a grid ``dealias = 3/2`` times finer, the tendency
evaluated there, and its spectrum truncated back to the kept modes (``well_upao.physics.resample``). The
tendency's kept modes are then exact for quadratic terms (``u d_x u``, ``d_x(u^2 / 2)``): a product of two fields
with modes ``|k| < N/2`` reaches ``|k| < N``, which the finer grid resolves for every kept mode, where on the
``N``-point grid the modes ``N/2 <= |k| < N`` fold back onto ``N - |k|``. The Nyquist mode of an even axis is not
a kept mode (a product with it would fold onto it again): its tendency is zero, so a state's Nyquist content is
carried over unchanged. Without the rule the folded energy piles up at the highest kept modes and an
autoregressive rollout of an under-resolved flow can blow up (the shear-flow study replica, 64x128 at Reynolds 1e4
and 5e4: non-finite from step 28 of 30). A PDE whose data were made with the nonlinear terms evaluated on the grid
says so (``PDE.solver_dealias = 1``: Gray-Scott, whose cubic ``A B^2`` the Well's generator and our replica evaluate
on the grid), and the baseline then steps that discretisation. ``dealias=1`` evaluates on the data's grid. Two
families:

* every sub-equation steps a field directly (``rate`` is a slot name): ``d_t u_k = -N_k(u)``;
* incompressible flow (a ``pressure`` variable and a ``continuity`` constraint, periodic grid): the momentum
  update is projected onto divergence-free fields (``d_t v = -P N(v, p = 0)``, P the Leray projection) and the
  pressure follows from ``Lap p = -div N(v, p = 0)``.

Other PDEs (conservative or derived quantities, walls with pressure) have no solver baseline (``supports``).

Cost: on a periodic grid the derivatives read each field's spectrum, taken once per right-hand side, and the finer
grid's state comes with its spectrum from the interpolation (``well_upao.predict.spectral_fields``); there the
terms are summed in Fourier space (``SpectralFields.deferring``: a derivative is transformed back only where the
right-hand side reads its values), and the tendency is projected on the kept modes; step doubling evaluates the
tendency at the start once for all the sub-step counts it tries. The values are those of one complex transform per
derivative, to round-off.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

from well_upao.physics.pdes import PDE, Fields
from well_upao.physics.resample import fourier_resample
from well_upao.physics.residual import broadcast_parameters, sum_terms
from well_upao.physics.stencils import Grid, Stencils
from well_upao.predict.spectral_fields import (
    SpectralFields,
    SpectralTerm,
    interpolated,
    truncated_spectrum,
    wavenumbers,
)


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
    """RK4 with step doubling on ``grid`` (see the module docstring); ``dealias``: the refinement of the grid on
    which a fully periodic solver evaluates its right-hand side (1: none; default the PDE's ``solver_dealias``)."""

    def __init__(
        self, pde: PDE, grid: Grid, tolerance: float = 1e-6, max_substeps: int = 2048, dealias: float | None = None
    ):
        dealias = pde.solver_dealias if dealias is None else dealias
        if not supports(pde, grid):
            raise ValueError(f"no solver baseline for PDE {pde.name!r} on this grid")
        if dealias < 1:
            raise ValueError(f"dealias must be >= 1 (a finer grid), got {dealias}")
        derivative = "spectral" if all(grid.periodic) else "fd"
        self.grid = grid
        # spectral: each field transformed once per right-hand side (``predict.spectral_fields``)
        self.ops = SpectralFields(grid) if derivative == "spectral" else Stencils(grid, derivative)
        self.pde = pde
        self.incompressible = _is_incompressible(pde)
        self.tolerance = tolerance
        self.max_substeps = max_substeps
        self.dealias = dealias if derivative == "spectral" else 1.0
        self._fine: dict[tuple[int, ...], PDESolver] = {}

    # ------------------------------------------------------------------ right-hand side
    def tendency(self, state: Fields, params: Mapping) -> dict[str, torch.Tensor]:
        """``d_t u`` of every evolved field: ``-N(u)`` (projected for incompressible flow), de-aliased on a periodic
        grid (the module docstring): evaluated on the grid ``dealias`` times finer and truncated back."""
        params = broadcast_parameters(params, next(iter(state.values())).ndim)  # (B,) -> (B, 1, ...); idempotent
        if self.dealias == 1:
            try:
                return self._rhs(state, params)
            finally:
                self._forget()
        shape, solver, fine = self._finer(state)
        try:  # the fine tendency's kept modes, projected there (the same modes: projection and truncation commute)
            with solver.ops.deferring():  # its terms summed in Fourier space (``predict.spectral_fields``)
                rates = solver._rhs(fine, params, False)
            spectra = {name: truncated_spectrum(rate, shape) for name, rate in rates.items()}
        finally:
            solver._forget()
        if self.incompressible:
            velocity = [name for name in ("Vx", "Vy", "Vz") if name in spectra]
            projected = self._project_spectra([spectra[v] for v in velocity], shape)
            spectra.update(dict(zip(velocity, projected, strict=True)))
        axes = tuple(range(-self.grid.dims, 0))
        return {name: torch.fft.irfftn(spectrum, s=shape, dim=axes) for name, spectrum in spectra.items()}

    def pressure(self, state: Fields, params: Mapping) -> torch.Tensor:
        """The pressure of an incompressible state, ``Lap p = -div N(v, p = 0)`` (zero mean), de-aliased as
        ``tendency``."""
        params = broadcast_parameters(params, next(iter(state.values())).ndim)
        if self.dealias == 1:
            try:
                return self._pressure(state, params)
            finally:
                self._forget()
        shape, solver, fine = self._finer(state)
        try:
            return fourier_resample(solver._pressure(fine, params), shape)
        finally:
            solver._forget()

    def _forget(self) -> None:
        """Drop the spectra kept while one right-hand side was evaluated (``predict.spectral_fields``)."""
        if isinstance(self.ops, SpectralFields):
            self.ops.forget()

    def _finer(self, state: Fields) -> tuple[tuple[int, ...], PDESolver, dict[str, torch.Tensor]]:
        """The state's grid shape, the solver on the grid ``dealias`` times finer, and the state interpolated there,
        each field with its spectrum (``predict.spectral_fields.interpolated``); an incompressible state's pressure
        is not interpolated (the right-hand side reads ``p = 0``: the module docstring)."""
        dims = self.grid.dims
        shape = tuple(next(iter(state.values())).shape[-dims:])
        fine_shape = tuple(math.ceil(n * self.dealias) for n in shape)
        if fine_shape not in self._fine:
            spacing = tuple(h * n / m for h, n, m in zip(self.grid.spacing, shape, fine_shape, strict=True))
            self._fine[fine_shape] = PDESolver(self.pde, Grid(spacing, self.grid.periodic), dealias=1)
        solver, fine = self._fine[fine_shape], {}
        for name, field in state.items():
            if self.incompressible and name == "pressure":
                fine[name] = field.new_zeros((*field.shape[:-dims], *fine_shape))
                continue
            fine[name], spectrum = interpolated(field, fine_shape)
            solver.ops.remember(fine[name], spectrum)
        return shape, solver, fine

    def _rhs(self, state: Fields, params: Mapping, project: bool = True) -> dict[str, torch.Tensor]:
        """``-N(u)`` on this grid (projected for incompressible flow unless ``project`` is false)."""
        if self.incompressible:
            zero = torch.zeros_like(state["pressure"])
            if isinstance(self.ops, SpectralFields):
                self.ops.remember(zero, None)
            state = dict(state, pressure=zero)
        out = {}
        for equation in self.pde.equations:
            if equation.evolves is None:
                continue
            terms = equation.flux(state, params, self.ops)
            out[equation.evolves] = -(terms if isinstance(terms, SpectralTerm) else sum_terms(terms))
        if self.incompressible and project:
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

    def _project_spectra(self, spectra: list[torch.Tensor], shape: tuple[int, ...]) -> list[torch.Tensor]:
        """``_project`` on ``rfftn`` spectra of fields on ``shape``: ``h - k (k . h) / |k|^2``."""
        real = torch.float64 if spectra[0].dtype == torch.complex128 else torch.float32
        ks = wavenumbers(shape, self.grid.spacing, real, spectra[0].device)
        k2 = sum(k**2 for k in ks)
        k2 = torch.where(k2 == 0, torch.ones_like(k2), k2)
        divergence = sum(k * h for k, h in zip(ks, spectra, strict=True))
        return [h - k * divergence / k2 for k, h in zip(ks, spectra, strict=True)]

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
    def _rk4(
        self, state: Fields, params: Mapping, dt: torch.Tensor, substeps: int, first: dict | None = None
    ) -> dict[str, torch.Tensor]:
        """``substeps`` classical RK4 steps over ``dt``; ``first``: the tendency at ``state`` when already known (step
        doubling evaluates it once for every number of sub-steps it tries)."""
        h = dt / substeps
        state = dict(state)
        for substep in range(substeps):
            k1 = first if substep == 0 and first is not None else self.tendency(state, params)
            k2 = self.tendency({**state, **{v: state[v] + 0.5 * h * k1[v] for v in k1}}, params)
            k3 = self.tendency({**state, **{v: state[v] + 0.5 * h * k2[v] for v in k2}}, params)
            k4 = self.tendency({**state, **{v: state[v] + h * k3[v] for v in k3}}, params)
            state = {**state, **{v: state[v] + h / 6 * (k1[v] + 2 * k2[v] + 2 * k3[v] + k4[v]) for v in k1}}
        if self.incompressible:
            state["pressure"] = self.pressure(state, params)
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
        new, substeps, _ = self._doubled(state, params, dt, self.max_substeps)
        return new, substeps

    @torch.no_grad()
    def substeps_needed(self, state: Fields, params: Mapping, dt: torch.Tensor, cap: int) -> int | None:
        """The sub-step count at which step doubling converges over ``dt`` (what ``step`` would use), or ``None``
        where it needs more than ``cap``: found with at most about ``2 cap`` RK4 steps, whatever the PDE's
        stiffness. It depends on the state, the PDE and the grid alone, not on the machine or its load."""
        _, substeps, converged = self._doubled(state, params, dt, min(int(cap), self.max_substeps))
        return substeps if converged else None

    def _doubled(
        self, state: Fields, params: Mapping, dt: torch.Tensor, cap: int
    ) -> tuple[dict[str, torch.Tensor], int, bool]:
        """Step doubling: ``s = 1, 2, 4, ...`` RK4 steps over ``dt`` until doubling ``s`` changes the result by less
        than ``tolerance`` (relative max norm, every field) or ``s`` reaches ``cap``; the finer result, its ``s``
        and whether it converged."""
        ndim = next(iter(state.values())).ndim
        params = broadcast_parameters(params, ndim)
        dt = broadcast_parameters({"dt": dt}, ndim)["dt"]
        first = self.tendency(state, params)  # every try starts with it
        substeps, converged = 1, False
        coarse = self._rk4(state, params, dt, substeps, first)
        while substeps < cap:
            fine = self._rk4(state, params, dt, 2 * substeps, first)
            change = max(float((fine[k] - coarse[k]).abs().max() / (fine[k].abs().max() + 1e-12)) for k in fine)
            substeps *= 2
            coarse = fine
            if math.isfinite(change) and change < self.tolerance:
                converged = True
                break
        return coarse, substeps, converged
