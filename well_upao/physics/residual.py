"""Time discretisation of the PDE residual on pairs of frames ``(u_old, u_new)`` a time ``dt`` apart.

With ``Q_k`` the conserved quantity and ``N_k`` the spatial operator of sub-equation ``k``:

* explicit:        ``R_k = (Q_k(u_new) - Q_k(u_old)) / dt + N_k(u_old)``
* implicit:        ``R_k = (Q_k(u_new) - Q_k(u_old)) / dt + N_k(u_new)``
* Crank-Nicolson:  ``R_k = (Q_k(u_new) - Q_k(u_old)) / dt + N_k((u_old + u_new) / 2)``  (default, 2nd order)

Constraints (no ``Q_k``) are ``N_k`` at the same state. For the shifted prediction, ``u_old`` is input frame
``tau`` and ``u_new`` the prediction of frame ``tau + 1`` (paper-decisions.md, point 1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from well_upao.data.slots import SLOT_INDEX
from well_upao.physics.pdes import PDE, Fields
from well_upao.physics.stencils import Stencils

SCHEMES = ("explicit", "implicit", "crank_nicolson")


def slot_fields(slotted: torch.Tensor, names: Sequence[str]) -> dict[str, torch.Tensor]:
    """``{slot name: (..., *space)}`` views of an 18-slot tensor ``(..., *space, 18)``."""
    return {name: slotted[..., SLOT_INDEX[name]] for name in names}


def broadcast_parameters(params: Mapping[str, torch.Tensor | float], field_ndim: int) -> dict:
    """Per-sample parameters ``(B,)`` -> ``(B, 1, ..., 1)`` so they broadcast over ``(B, T, *space)``."""
    out = {}
    for name, value in params.items():
        if isinstance(value, torch.Tensor) and value.ndim == 1:
            value = value.reshape(-1, *([1] * (field_ndim - 1)))
        out[name] = value
    return out


def theta_state(old: Fields, new: Fields, scheme: str) -> Fields:
    if scheme == "explicit":
        return old
    if scheme == "implicit":
        return new
    if scheme == "crank_nicolson":
        return {k: 0.5 * (old[k] + new[k]) for k in old}
    raise ValueError(f"unknown time scheme {scheme!r}; choose from {SCHEMES}")


def pde_residuals(
    pde: PDE, old: Fields, new: Fields, dt: torch.Tensor, params: Mapping, ops: Stencils, scheme: str = "crank_nicolson"
) -> dict[str, torch.Tensor]:
    """``R_k`` for every sub-equation, each ``(B, T, *space)``; ``dt`` is ``(B,)`` or a float."""
    ndim = next(iter(old.values())).ndim
    dt = broadcast_parameters({"dt": dt}, ndim)["dt"]
    params = broadcast_parameters(params, ndim)
    state = theta_state(old, new, scheme)
    residuals = {}
    for equation in pde.equations:
        value = sum_terms(equation.flux(state, params, ops))
        if equation.rate is not None:
            value = (equation.rate(new, params, ops) - equation.rate(old, params, ops)) / dt + value
        residuals[equation.name] = value
    return residuals


def sum_terms(terms: torch.Tensor | Sequence[torch.Tensor]) -> torch.Tensor:
    return terms if isinstance(terms, torch.Tensor) else sum(terms)


def equation_scales(
    pde: PDE, old: Fields, new: Fields, dt: torch.Tensor, params: Mapping, ops: Stencils
) -> dict[str, torch.Tensor]:
    """Pointwise size of each sub-equation's terms, ``|d_t Q_k| + sum_i |N_k,i|`` at the midpoint state."""
    ndim = next(iter(old.values())).ndim
    dt = broadcast_parameters({"dt": dt}, ndim)["dt"]
    params = broadcast_parameters(params, ndim)
    state = theta_state(old, new, "crank_nicolson")
    out = {}
    for equation in pde.equations:
        terms = equation.flux(state, params, ops)
        terms = (terms,) if isinstance(terms, torch.Tensor) else tuple(terms)
        size = sum(t.abs() if isinstance(t, torch.Tensor) else abs(t) for t in terms)
        if equation.rate is not None:
            size = size + ((equation.rate(new, params, ops) - equation.rate(old, params, ops)) / dt).abs()
        out[equation.name] = size * torch.ones_like(next(iter(old.values())))
    return out
