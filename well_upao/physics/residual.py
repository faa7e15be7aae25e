"""Time discretisation of the PDE residual: every time scheme is a theta-scheme over a span of frame steps.

With ``Q_k`` the conserved quantity and ``N_k`` the spatial operator of sub-equation ``k``, frames ``u_n`` a time
``dt`` apart, and a scheme of weight ``theta`` over ``s`` steps (its ``span``):

    R_k = (Q_k(u_{t+1}) - Q_k(u_{t+1-s})) / (s dt) + N_k((1 - theta) u_t + theta u_{t+1})

In the code ``old`` is ``u_t``, ``new`` is ``u_{t+1}`` and ``older`` is ``u_{t+1-s}`` (only for ``s > 1``; for
``s = 1`` the time derivative starts from ``old``). The schemes of the table (``SCHEMES``):

* explicit (theta 0, span 1):        ``R_k = (Q_k(u_new) - Q_k(u_old)) / dt + N_k(u_old)``
* implicit (theta 1, span 1):        ``R_k = (Q_k(u_new) - Q_k(u_old)) / dt + N_k(u_new)``
* Crank-Nicolson (theta 1/2, span 1): ``R_k = (Q_k(u_new) - Q_k(u_old)) / dt + N_k((u_old + u_new) / 2)``
  (default, 2nd order)
* central (theta 0, span 2):         ``R_k = (Q_k(u_new) - Q_k(u_older)) / (2 dt) + N_k(u_old)`` (three frames
  ``u_older, u_old, u_new`` a ``dt`` apart; 2nd order, the spatial terms at the observed middle frame); where a
  window holds fewer than three frames it falls back to Crank-Nicolson.

Constraints (no ``Q_k``) are ``N_k`` at the same state. For the shifted prediction, ``u_old`` is input frame
``tau`` and ``u_new`` the prediction of frame ``tau + 1`` (the paper gives spatial schemes only; Crank-Nicolson
is our default, see docs/training.md, UPAO).

A scheme is a [`TimeScheme`][well_upao.physics.residual.TimeScheme] value: what one residual reads of the frames
(``frames``), how a window of consecutive frames is cut into its ``(old, new, older)`` frame sets (``frame_sets``,
``step_sets``, ``shifted_sets``), its state and time derivative (``state``, ``rate``), and what it falls back to
where a window holds too few frames (``within``). Configs, checkpoints, ``metrics.jsonl`` and reports name a scheme
by its string; [`time_scheme`][well_upao.physics.residual.time_scheme] resolves the name once, where a residual is
bound (``well_upao.physics.bound.BoundResidual``). A new scheme of this form is one entry of ``SCHEMES`` (or
[`register_time_scheme`][well_upao.physics.residual.register_time_scheme] from a user's module): the residual, the
floor table and the ``auto`` choice, which iterate ``SCHEMES``, use it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

from well_upao.data.slot_inventory import SLOT_INDEX
from well_upao.physics.pdes import PDE, Fields
from well_upao.physics.stencils import Stencils

FrameSets = tuple[dict[str, torch.Tensor], dict[str, torch.Tensor], dict[str, torch.Tensor] | None]


def frames(fields: Mapping[str, torch.Tensor], start: int, stop: int | None) -> dict[str, torch.Tensor]:
    """The time slice ``start:stop`` (axis 1) of every field."""
    return {k: v[:, start:stop] for k, v in fields.items()}


@dataclass(frozen=True)
class TimeScheme:
    """A theta-scheme over ``span`` frame steps (see the module docstring): the spatial operator at
    ``(1 - theta) u_old + theta u_new``, the time derivative ``(Q(u_new) - Q(u_{new - span})) / (span dt)``;
    ``fallback``: the name of the scheme used where a window holds fewer than ``frames`` frames (``None``: such a
    window is refused)."""

    name: str
    theta: float
    span: int = 1
    fallback: str | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.theta <= 1.0 or self.span < 1:
            raise ValueError(f"time scheme {self.name!r}: theta must lie in [0, 1] and span be >= 1")
        if self.fallback == self.name:
            raise ValueError(f"time scheme {self.name!r} cannot fall back to itself")

    def __str__(self) -> str:
        return self.name

    @property
    def frames(self) -> int:
        """How many consecutive frames one residual reads: ``span + 1``."""
        return self.span + 1

    def within(self, available: int) -> TimeScheme:
        """The scheme a residual on ``available`` consecutive frames uses: this one where they are enough, else its
        ``fallback`` (in turn); a ``ValueError`` where none fits."""
        if available >= self.frames:
            return self
        if self.fallback is None:
            raise ValueError(f"the {self.name} residual needs at least {self.frames} frames, got {available}")
        return time_scheme(self.fallback).within(available)

    # ------------------------------------------------------------------ the residual's parts
    def state(self, old: Fields, new: Fields) -> Fields:
        """The state ``N_k`` is evaluated at: ``(1 - theta) u_old + theta u_new`` (``old`` itself for theta 0,
        ``new`` for 1, the midpoint as one halving ``(u_old + u_new) / 2``)."""
        if self.theta == 0.0:
            return old
        if self.theta == 1.0:
            return new
        if self.theta == 0.5:
            return {k: 0.5 * (old[k] + new[k]) for k in old}
        return {k: (1.0 - self.theta) * old[k] + self.theta * new[k] for k in old}

    def start(self, old: Fields, older: Fields | None) -> Fields:
        """The frames the time derivative starts from: ``old`` for span 1, ``older`` (required) for a longer span."""
        if self.span == 1:
            return old
        if older is None:
            raise ValueError(f"the {self.name} time scheme needs the frames before `old` (older=...)")
        return older

    def rate(self, conserved_new: torch.Tensor, conserved_start: torch.Tensor, dt) -> torch.Tensor:
        """``(Q(u_new) - Q(u_{new - span})) / (span dt)``."""
        return (conserved_new - conserved_start) / (self.span * dt)

    # ------------------------------------------------------------------ cutting frames into residuals
    def frame_sets(self, window: Mapping[str, torch.Tensor]) -> FrameSets:
        """``(old, new, older)`` of every run of ``frames`` consecutive frames of an observed ``window`` (fields
        ``(B, T, *space)``, ``T >= frames``): ``old = u_{s-1} .. u_{T-2}``, ``new = u_s .. u_{T-1}``, ``older =
        u_0 .. u_{T-1-s}`` (``None`` for span 1): consecutive pairs for span 1, triples for span 2."""
        s = self.span
        return frames(window, s - 1, -1), frames(window, s, None), frames(window, 0, -s) if s > 1 else None

    def step_sets(self, history: Mapping[str, torch.Tensor], new: Fields) -> FrameSets:
        """``(old, new, older)`` of one step from the end of ``history`` (fields ``(B, T, *space)``, ``T >= span``)
        onto ``new`` (``(B, 1, *space)``): ``old = u_{T-1}``, ``older = u_{T-s}``."""
        s = self.span
        return frames(history, -1, None), dict(new), frames(history, -s, 1 - s) if s > 1 else None

    def shifted_sets(self, inputs: Mapping[str, torch.Tensor], predictions: Mapping[str, torch.Tensor]) -> FrameSets:
        """``(old, new, older)`` of the shifted prediction (``inputs`` ``u_0 .. u_{T-1}``, ``predictions``
        ``u^_1 .. u^_T``) from the first predicted frame with ``span`` observed frames before it on: frame
        ``tau >= span - 1`` (the ones before are the fallback's, ``within``)."""
        s = self.span
        if s == 1:
            return dict(inputs), dict(predictions), None
        return frames(inputs, s - 1, None), frames(predictions, s - 1, None), frames(inputs, 0, 1 - s)


#: the time schemes, by the name configs, checkpoints and reports give (the floor table's and ``auto``'s candidates)
SCHEMES: dict[str, TimeScheme] = {
    scheme.name: scheme
    for scheme in (
        TimeScheme("explicit", theta=0.0),
        TimeScheme("implicit", theta=1.0),
        TimeScheme("crank_nicolson", theta=0.5),
        TimeScheme("central", theta=0.0, span=2, fallback="crank_nicolson"),
    )
}


def time_scheme(scheme: TimeScheme | str) -> TimeScheme:
    """The scheme called ``scheme`` in ``SCHEMES`` (a ``TimeScheme`` is returned as it is); a ``ValueError`` naming
    the known ones otherwise."""
    if isinstance(scheme, TimeScheme):
        return scheme
    if scheme not in SCHEMES:
        raise ValueError(f"unknown time scheme {scheme!r}; the time scheme must be one of {', '.join(SCHEMES)}")
    return SCHEMES[scheme]


def register_time_scheme(scheme: TimeScheme, overwrite: bool = False) -> TimeScheme:
    """Add ``scheme`` to ``SCHEMES`` (a user's module, e.g. one a run's ``data.imports`` names): configs and
    checkpoints then name it, and the floor table and ``auto`` weigh it."""
    if scheme.name in SCHEMES and not overwrite and SCHEMES[scheme.name] != scheme:
        raise ValueError(f"a time scheme named {scheme.name!r} is already registered (pass overwrite=True)")
    SCHEMES[scheme.name] = scheme
    return scheme


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


def pde_residuals(
    pde: PDE,
    old: Fields,
    new: Fields,
    dt: torch.Tensor,
    params: Mapping,
    ops: Stencils,
    scheme: TimeScheme | str = "crank_nicolson",
    older: Fields | None = None,
) -> dict[str, torch.Tensor]:
    """``R_k`` for every sub-equation, each ``(B, T, *space)``; ``dt`` is ``(B,)`` or a float; ``older``: the
    frames ``span`` steps before ``new`` (a scheme over more than one step only, e.g. central)."""
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
    scheme: TimeScheme | str = "crank_nicolson",
    with_scales: bool = True,
    older: Fields | None = None,
) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """Residuals ``R_k`` and, from the same evaluation of the terms, their sizes ``|d_t Q_k| + sum |N_k,i|``."""
    scheme = time_scheme(scheme)
    start = scheme.start(old, older)
    reference = next(iter(old.values()))
    dt = broadcast_parameters({"dt": dt}, reference.ndim)["dt"]
    params = broadcast_parameters(params, reference.ndim)
    state = scheme.state(old, new)
    residuals, scales = {}, {}
    for equation in pde.equations:
        terms = equation.flux(state, params, ops)
        terms = (terms,) if isinstance(terms, torch.Tensor) else tuple(terms)
        value = sum(terms)
        size = sum(t.abs() if isinstance(t, torch.Tensor) else abs(t) for t in terms) if with_scales else None
        if equation.rate is not None:
            rate = scheme.rate(equation.conserved(new, params, ops), equation.conserved(start, params, ops), dt)
            value = rate + value
            if with_scales:
                size = size + rate.abs()
        residuals[equation.name] = value
        if with_scales:
            scales[equation.name] = size * torch.ones_like(reference)
    return residuals, scales
