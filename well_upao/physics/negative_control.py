"""Negative controls of a PDE entry: mutate one term or one coefficient and see the residual on data rise.

Data that solve a PDE leave its discrete residual at a *floor* (the discretisation error of the residual, see
``well_upao.physics.residual``). An entry of the registry (``well_upao.physics.pdes``) is only checked by such data
if every wrong entry nearby leaves it well above that floor. The mutations, one at a time:

* ``flip`` (factor -1) or ``remove`` (factor 0) one term of sub-equation ``k``: its time derivative ``d_t Q_k``
  (not for a constraint), or one of the terms its ``flux`` returns (``SubEquation.flux`` returns one tensor, a
  single term, or a tuple of the operator's separate terms);
* ``scale`` one coefficient (a parameter the PDE reads from the sample, or one of its ``constants``) by a factor
  (2, or 1.1 on frames at the generating solver's own step, where time discretisation does not hide it); a
  ``swap`` of two coefficients can be added by the caller as parameter overrides.

The detection ratio of a mutation is ``max_k ||R_k^mutated||_{S_p} / ||R_k||_{S_p}`` over the sub-equations, the
norms taken over the interior ``S_p`` of every frame pair (or triple for the ``central`` scheme,
``TimeScheme.frame_sets``): how far the most affected sub-equation moves above its own floor (the tests ask for at
least 3 from every mutation).

Check a new PDE the same way (tests/physics/test_negative_controls.py does it for every registered PDE with data):

    from well_upao.physics import Grid
    from well_upao.physics.negative_control import ObservedWindow, negative_controls

    window = ObservedWindow(fields={"temperature": frames}, dt=0.01, grid=Grid((dx,), (True,)),
                            scalars={"kappa": torch.tensor([0.1])})   # frames: (trajectories, time, *space)
    for control in negative_controls(window.bound(my_pde, "central"), window, factor=2.0):
        assert control.ratio >= 3, control
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

import torch

from well_upao.physics.bound import BoundResidual
from well_upao.physics.pdes import PDE, SubEquation
from well_upao.physics.residual import TimeScheme, broadcast_parameters, time_scheme
from well_upao.physics.stencils import Grid, interior

#: the time derivative's place in a mutation's ``term``
RATE = "d_t"


@dataclass
class ObservedWindow:
    """Equally spaced frames of one or more trajectories: ``fields`` maps slot names to ``(n_traj, T, *space)``
    tensors, ``dt`` is the frame spacing, ``scalars`` the per-trajectory parameters (``(n_traj,)`` or floats),
    ``derivative`` the residual's derivative on periodic axes (default ``spectral``, the lowest floor on smooth
    periodic data; walls always take second-order differences)."""

    fields: Mapping[str, torch.Tensor]
    dt: float
    grid: Grid
    scalars: Mapping[str, torch.Tensor | float] = dataclasses.field(default_factory=dict)
    derivative: str = "spectral"

    def bound(self, pde: PDE, scheme: TimeScheme | str) -> BoundResidual:
        """``pde`` bound to this window (its grid, derivative and scalars) with the time ``scheme``."""
        return BoundResidual.of(pde, self.grid, self.derivative, scheme, self.scalars)

    def frame_sets(self, scheme: TimeScheme | str) -> tuple[dict, dict, dict | None]:
        """``(old, new, older)`` of the window under ``scheme`` (``TimeScheme.frame_sets``): consecutive pairs for
        the two-frame schemes, triples for ``central``."""
        return time_scheme(scheme).frame_sets(self.fields)


@dataclass(frozen=True)
class Mutation:
    """One wrong PDE entry: the bound residual with its ``pde`` (terms mutated) or its ``params`` (coefficients
    mutated)."""

    name: str
    bound: BoundResidual


@dataclass(frozen=True)
class ControlResult:
    """A mutation's residual norms per sub-equation beside the floor's, and the detection ratio."""

    name: str
    floor: Mapping[str, float]
    mutated: Mapping[str, float]

    @property
    def ratio(self) -> float:
        return max(self.mutated[k] / max(self.floor[k], 1e-300) for k in self.floor)

    def __str__(self) -> str:
        return f"{self.name}: ratio {self.ratio:.3g}"


def residual_norms(bound: BoundResidual, window: ObservedWindow, relative: bool = False) -> dict[str, float]:
    """``||R_k||`` over the interior of every frame pair (triple for ``central``) of the window, per sub-equation;
    ``relative``: divided by the norm of the equation's term sizes ``|d_t Q_k| + sum_i |N_k,i|`` (the floor as a
    fraction of the equation, ``well_upao.physics.residual.residuals_and_scales``)."""
    old, new, older = window.frame_sets(bound.scheme)
    dt = torch.tensor(float(window.dt), dtype=next(iter(old.values())).dtype)
    residuals, scales = bound.residuals_and_scales(old, new, dt, older, with_scales=relative)
    dims = window.grid.dims
    norms = {k: float(interior(r, dims).norm()) for k, r in residuals.items()}
    if relative:
        norms = {k: v / float(interior(scales[k], dims).norm()) for k, v in norms.items()}
    return norms


def term_counts(bound: BoundResidual, window: ObservedWindow) -> dict[str, int]:
    """How many terms each sub-equation's ``flux`` returns on the window's first frame."""
    state = {k: v[:, :1] for k, v in window.fields.items()}
    params = broadcast_parameters(bound.params, next(iter(state.values())).ndim)
    counts = {}
    for equation in bound.pde.equations:
        terms = equation.flux(state, params, bound.ops)
        counts[equation.name] = 1 if isinstance(terms, torch.Tensor) else len(tuple(terms))
    return counts


def with_term_scaled(pde: PDE, equation_name: str, term: int | str, factor: float) -> PDE:
    """``pde`` with one term of one sub-equation multiplied by ``factor``: the time derivative (``term=RATE``) or
    the ``term``-th term the flux returns."""
    names = [e.name for e in pde.equations]
    if equation_name not in names:
        raise KeyError(f"{pde.name} has no sub-equation {equation_name!r}; it has {names}")
    original = pde.equations[names.index(equation_name)]
    if term == RATE:
        if original.rate is None:
            raise ValueError(f"{pde.name}/{equation_name} is a constraint: it has no time derivative")
        changed = dataclasses.replace(
            original, rate=lambda f, p, ops: factor * original.conserved(f, p, ops), flux=original.flux
        )
    else:

        def flux(f, p, ops):
            terms = original.flux(f, p, ops)
            terms = (terms,) if isinstance(terms, torch.Tensor) else tuple(terms)
            if not 0 <= term < len(terms):
                raise IndexError(f"{pde.name}/{equation_name} has {len(terms)} terms, no term {term}")
            return tuple(factor * t if i == term else t for i, t in enumerate(terms))

        changed = SubEquation(original.name, original.rate, flux)
    equations = tuple(changed if e.name == equation_name else e for e in pde.equations)
    return dataclasses.replace(pde, name=f"{pde.name} (mutated)", equations=equations)


def mutations(
    bound: BoundResidual, window: ObservedWindow, factor: float = 2.0, swaps: Mapping[str, Mapping] = ()
) -> list[Mutation]:
    """Every term flipped and removed, every coefficient of ``bound.params`` scaled by ``factor``, and the named
    ``swaps`` (``{name: parameter overrides}``, e.g. two diffusivities exchanged)."""
    out = []
    pde, params = bound.pde, dict(bound.params)
    counts = term_counts(bound, window)
    for equation in pde.equations:
        terms = ([RATE] if equation.rate is not None else []) + list(range(counts[equation.name]))
        for term in terms:
            label = "d_t Q" if term == RATE else f"term {term + 1} of {counts[equation.name]}"
            for verb, value in (("flipped", -1.0), ("removed", 0.0)):
                mutated = dataclasses.replace(bound, pde=with_term_scaled(pde, equation.name, term, value))
                out.append(Mutation(f"{equation.name}: {label} {verb}", mutated))
    for name, value in params.items():
        out.append(
            Mutation(f"{name} x {factor:g}", dataclasses.replace(bound, params={**params, name: value * factor}))
        )
    for name, overrides in dict(swaps).items():
        out.append(Mutation(name, dataclasses.replace(bound, params={**params, **overrides})))
    return out


def negative_controls(
    bound: BoundResidual, window: ObservedWindow, factor: float = 2.0, swaps: Mapping[str, Mapping] = ()
) -> list[ControlResult]:
    """The floor of the bound PDE on ``window`` (``ObservedWindow.bound``) and every mutation's residual (see
    the module docstring)."""
    floor = residual_norms(bound, window)
    return [
        ControlResult(m.name, floor, residual_norms(m.bound, window)) for m in mutations(bound, window, factor, swaps)
    ]
