"""One answer to "which physics, which discretisation": the resolver every part calls.

``resolve(observed, pde, requested) -> Physics`` decides, for a source of observed frames, the PDE's constants, the
derivative and the time scheme of every residual computed on it, with the floors the choice was made from and a
reason (or, with no PDE, a ``Physics`` that says so and why). It is the only caller of the residual-floor table and
of the constant fit (``well_upao.physics.floor``):

* fixed settings are taken as given (no frame is read, unless ``survey`` asks for the whole floor table);
* an ``auto`` derivative or time scheme is the lowest residual floor of the observed frames among the candidates the
  fixed part permits (label-free: the frames a UPAO run trains on);
* fitted constants (``fit``: the coefficients to fit) are least-squares values on the observed frames, jointly with
  an ``auto`` discretisation (the one whose floor *after* the fit is lowest).

Training (``trainer=upao``), ``well-upao evaluate`` (the dataset's default for rows without a run of their own) and
``well-upao residual-floor`` all call it; a UPAO run stores its ``Physics`` in its checkpoint
([`Physics.record`][well_upao.physics.discretisation.Physics.record]), and evaluate scores the run's row with it
([`Physics.from_record`][well_upao.physics.discretisation.Physics.from_record]), so training and evaluation use one
discretisation. [`Physics.bind`][well_upao.physics.discretisation.Physics.bind] gives the residual on a batch or
trajectory (``well_upao.physics.bound.BoundResidual``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from well_upao.data.datasets import DATASETS
from well_upao.data.source import ObservedFrames
from well_upao.physics.bound import BoundResidual
from well_upao.physics.floor import (
    FittedConstants,
    FloorRow,
    choose_discretisation,
    fit_discretised,
    floor_rows,
    permitted,
)
from well_upao.physics.pdes import PDE, PDE_REGISTRY, get_pde, pde_for_dataset
from well_upao.physics.stencils import Grid

#: the residual's discretisation where neither a run nor its dataset chooses one
DEFAULT_SCHEME, DEFAULT_DERIVATIVE = "crank_nicolson", "fd"


@dataclass(frozen=True)
class Requested:
    """What a run or a dataset asks for: ``derivative`` (``fd`` | ``fd4`` | ``spectral`` | ``auto``), ``scheme``
    (``explicit`` | ``implicit`` | ``crank_nicolson`` | ``central`` | ``auto``), ``constants`` (fixed coefficients
    over the PDE's own), ``fit`` (coefficients to fit to the observed frames), ``survey`` (compute every row of the
    floor table, for a report, even where the choice needs none)."""

    derivative: str = DEFAULT_DERIVATIVE
    scheme: str = DEFAULT_SCHEME
    constants: Mapping[str, float] = field(default_factory=dict)
    fit: tuple[str, ...] = ()
    survey: bool = False

    @classmethod
    def of(
        cls, defaults: Mapping[str, Any], derivative: str | None = None, scheme: str | None = None, **kwargs
    ) -> Requested:
        """The settings given, else a dataset's ``defaults`` (its registry entry's ``derivative`` /
        ``time_scheme``), else the global defaults."""
        return cls(
            derivative or defaults.get("derivative", DEFAULT_DERIVATIVE),
            scheme or defaults.get("time_scheme", DEFAULT_SCHEME),
            **kwargs,
        )

    @property
    def automatic(self) -> bool:
        return "auto" in (self.derivative, self.scheme)


@dataclass(frozen=True)
class Physics:
    """The resolved physics of a source (see the module docstring). ``floors``: ``{"derivative/scheme": mean relative
    floor}`` of the candidates an ``auto`` choice or a fit was made from (empty for fixed settings); ``rows``: the
    floor table the choice read (every row with ``survey``); ``fit``: the constant fit, when one was asked."""

    pde: PDE | None
    derivative: str | None
    scheme: str | None
    constants: Mapping[str, float] = field(default_factory=dict)
    floors: Mapping[str, float] = field(default_factory=dict)
    reason: str = ""
    rows: tuple[FloorRow, ...] = ()
    fit: FittedConstants | None = None

    @property
    def available(self) -> bool:
        return self.pde is not None

    @property
    def discretisation(self) -> str:
        return f"{self.derivative}/{self.scheme}"

    def bind(self, grid: Grid, scalars: Mapping[str, torch.Tensor], band_width: int = 1) -> BoundResidual | None:
        """The residual on a batch or trajectory (its ``grid`` and ``scalars``); ``None`` without a PDE."""
        if self.pde is None:
            return None
        return BoundResidual.of(self.pde, grid, self.derivative, self.scheme, scalars, self.constants, band_width)

    def same_choice(self, other: Physics) -> bool:
        """Whether two resolutions score residuals alike (PDE, constants, derivative, scheme)."""
        mine = (None if self.pde is None else self.pde.name, self.derivative, self.scheme, dict(self.constants))
        theirs = (None if other.pde is None else other.pde.name, other.derivative, other.scheme, dict(other.constants))
        return mine == theirs

    def record(self) -> dict[str, Any]:
        """What a checkpoint stores (``train.physics``): JSON-like, the PDE by its registry name."""
        return {
            "pde": None if self.pde is None else self.pde.name,
            "derivative": self.derivative,
            "scheme": self.scheme,
            "constants": dict(self.constants),
            "floors": dict(self.floors),
            "reason": self.reason,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Physics:
        """A stored [`record`][well_upao.physics.discretisation.Physics.record] (its PDE looked up by name,
        ``pde_named``: a run's ``data.imports`` registered a user's)."""
        name = record.get("pde")
        pde = pde_named(name) if name is not None else None
        return cls(
            pde,
            record.get("derivative"),
            record.get("scheme"),
            dict(record.get("constants") or {}),
            dict(record.get("floors") or {}),
            record.get("reason", ""),
        )


def no_physics(reason: str) -> Physics:
    """The physics of a source whose dataset names no PDE: nothing to compute a residual with, and why."""
    return Physics(None, None, None, reason=reason)


def resolve(
    observed: Callable[[], ObservedFrames] | ObservedFrames | None,
    pde: PDE | None,
    requested: Requested,
    stride: int = 1,
    no_pde: str = "no PDE is registered for this dataset",
) -> Physics:
    """The physics of the frames ``observed`` (read only when a choice, a fit or a survey needs them: a callable is
    called then) under ``requested``, at time ``stride`` (see the module docstring). ``no_pde``: the reason a
    source without a PDE gives."""
    if pde is None:
        return no_physics(no_pde)
    derivative, scheme, constants = requested.derivative, requested.scheme, dict(requested.constants)
    if not (requested.automatic or requested.fit or requested.survey):
        return Physics(pde, derivative, scheme, constants, reason=f"{derivative}/{scheme} as set")
    frames = observed() if callable(observed) else observed
    if requested.fit:
        (derivative, scheme), fitted, floors = fit_discretised(frames, pde, list(requested.fit), derivative, scheme)
        reason = f"constants {', '.join(requested.fit)} fitted to the observed frames under {derivative}/{scheme}"
        if requested.automatic:
            reason += " (the lowest floor after the fit)"
        return Physics(pde, derivative, scheme, constants | fitted.values, floors, reason, fit=fitted)
    rows = floor_rows(frames, stride, pde, *(("auto", "auto") if requested.survey else (derivative, scheme)))
    candidates = permitted(rows, derivative, scheme, key=lambda row: row.discretisation)
    chosen = choose_discretisation(candidates, derivative, scheme)
    if chosen is None:
        raise ValueError(f"no residual-floor candidate matches {derivative!r} derivatives and a {scheme!r} scheme")
    floors = {f"{r.derivative}/{r.scheme}": r.mean for r in candidates} if requested.automatic else {}
    reason = (
        f"{chosen.derivative}/{chosen.scheme}: the lowest residual floor of the observed frames"
        if requested.automatic
        else f"{derivative}/{scheme} as set"
    )
    return Physics(pde, chosen.derivative, chosen.scheme, constants, floors, reason, tuple(rows))


def pde_named(name: str) -> PDE:
    """The PDE called ``name``: registered, or the PDE object a registered dataset names (a user module may give its
    ``DatasetSpec`` a PDE without registering it)."""
    if name in PDE_REGISTRY:
        return PDE_REGISTRY[name]
    for spec in DATASETS.values():
        if isinstance(spec.pde, PDE) and spec.pde.name == name:
            return spec.pde
    return get_pde(name)  # the registry's error, with the names it knows


def find_pde_for_dataset(dataset_name: str) -> PDE | None:
    """``pde_for_dataset``, or ``None`` where the dataset names no PDE and no PDE carries its name (supervised
    training and the classical rows need none; a PDE the registry entry names but nobody registered is an error)."""
    spec = DATASETS.get(dataset_name)
    if (spec is None or spec.pde is None) and dataset_name not in PDE_REGISTRY:
        return None
    return pde_for_dataset(dataset_name)
