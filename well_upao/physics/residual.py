"""Time discretisation of the PDE residual on pairs of frames ``(u_old, u_new)`` a time ``dt`` apart.

With ``Q_k`` the conserved quantity and ``N_k`` the spatial operator of sub-equation ``k``:

* explicit:        ``R_k = (Q_k(u_new) - Q_k(u_old)) / dt + N_k(u_old)``
* implicit:        ``R_k = (Q_k(u_new) - Q_k(u_old)) / dt + N_k(u_new)``
* Crank-Nicolson:  ``R_k = (Q_k(u_new) - Q_k(u_old)) / dt + N_k((u_old + u_new) / 2)``  (default, 2nd order)
* central:         ``R_k = (Q_k(u_new) - Q_k(u_older)) / (2 dt) + N_k(u_old)``  (three frames ``u_older, u_old,
  u_new`` a ``dt`` apart; 2nd order, the spatial terms at the observed middle frame)

Constraints (no ``Q_k``) are ``N_k`` at the same state. For the shifted prediction, ``u_old`` is input frame
``tau`` and ``u_new`` the prediction of frame ``tau + 1`` (the paper gives spatial schemes only; Crank-Nicolson
is our default, see docs/training.md, UPAO).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from well_upao.data.slot_inventory import SLOT_INDEX
from well_upao.physics.pdes import PDE, Fields
from well_upao.physics.stencils import Stencils

SCHEMES = ("explicit", "implicit", "crank_nicolson", "central")


def slot_fields(slotted: torch.Tensor, names: Sequence[str]) -> dict[str, torch.Tensor]:
    """``{slot name: (..., *space)}`` from an 18-slot tensor ``(..., *space, 18)`` (one gather for all names,
    so autograd zero-fills the 18-slot gradient once, not once per field)."""
    picked = slotted[..., [SLOT_INDEX[name] for name in names]]
    return dict(zip(names, picked.unbind(-1), strict=True))


def broadcast_parameters(params: Mapping[str, torch.Tensor | float], field_ndim: int) -> dict:
    """Per-sample parameters ``(B,)`` -> ``(B, 1, ..., 1)`` so they broadcast over ``(B, T, *space)``."""
    out = {}
    for name, value in params.items():
        if isinstance(value, torch.Tensor) and value.ndim == 1:
            value = value.reshape(-1, *([1] * (field_ndim - 1)))
        out[name] = value
    return out


def theta_state(old: Fields, new: Fields, scheme: str) -> Fields:
    if scheme in ("explicit", "central"):
        return old
    if scheme == "implicit":
        return new
    if scheme == "crank_nicolson":
        return {k: 0.5 * (old[k] + new[k]) for k in old}
    raise ValueError(f"unknown time scheme {scheme!r}; choose from {SCHEMES}")


def pde_residuals(
    pde: PDE,
    old: Fields,
    new: Fields,
    dt: torch.Tensor,
    params: Mapping,
    ops: Stencils,
    scheme: str = "crank_nicolson",
    older: Fields | None = None,
) -> dict[str, torch.Tensor]:
    """``R_k`` for every sub-equation, each ``(B, T, *space)``; ``dt`` is ``(B,)`` or a float; ``older``: the
    frames before ``old`` (the central scheme only)."""
    return residuals_and_scales(pde, old, new, dt, params, ops, scheme, with_scales=False, older=older)[0]


def sum_terms(terms: torch.Tensor | Sequence[torch.Tensor]) -> torch.Tensor:
    """``N`` from a flux that returned one tensor or a tuple of its terms."""
    return terms if isinstance(terms, torch.Tensor) else sum(terms)


def residuals_and_scales(
    pde: PDE,
    old: Fields,
    new: Fields,
    dt: torch.Tensor,
    params: Mapping,
    ops: Stencils,
    scheme: str = "crank_nicolson",
    with_scales: bool = True,
    older: Fields | None = None,
) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """Residuals ``R_k`` and, from the same evaluation of the terms, their sizes ``|d_t Q_k| + sum |N_k,i|``."""
    if scheme == "central" and older is None:
        raise ValueError("the central time scheme needs the frames before `old` (older=...)")
    reference = next(iter(old.values()))
    dt = broadcast_parameters({"dt": dt}, reference.ndim)["dt"]
    params = broadcast_parameters(params, reference.ndim)
    state = theta_state(old, new, scheme)
    residuals, scales = {}, {}
    for equation in pde.equations:
        terms = equation.flux(state, params, ops)
        terms = (terms,) if isinstance(terms, torch.Tensor) else tuple(terms)
        value = sum(terms)
        size = sum(t.abs() if isinstance(t, torch.Tensor) else abs(t) for t in terms) if with_scales else None
        if equation.rate is not None:
            if scheme == "central":
                rate = (equation.conserved(new, params, ops) - equation.conserved(older, params, ops)) / (2 * dt)
            else:
                rate = (equation.conserved(new, params, ops) - equation.conserved(old, params, ops)) / dt
            value = rate + value
            if with_scales:
                size = size + rate.abs()
        residuals[equation.name] = value
        if with_scales:
            scales[equation.name] = size * torch.ones_like(reference)
    return residuals, scales
