"""One answer to "which physics, which discretisation": the resolver every part calls.

``resolve(observed, pde, request) -> Physics`` decides, for a source of observed frames, the PDE's constants, the
derivative and the time scheme of every residual computed on it, with the floors the choice was made from and a
reason (or, with no PDE, a ``Physics`` that says so and why). It is the only caller of the residual-floor table and
of the constant fit (``well_upao.physics.floor``):

* fixed settings are taken as given (no frame is read, unless ``survey`` asks for the whole floor table);
* an ``auto`` derivative or time scheme is the lowest residual floor of the observed frames among the candidates the
  fixed part permits (label-free: the frames a UPAO run trains on);
* fitted constants (``fit``: the coefficients to fit) are least-squares values on the observed frames, jointly with
  an ``auto`` discretisation (the one whose floor *after* the fit is lowest).

What is asked is one type, [`PhysicsRequest`][well_upao.physics.discretisation.PhysicsRequest]: which PDE, which
derivative, time scheme and constants (fixed or fitted), the survey, the frames read and the fallback. Training
(``trainer=upao``), ``well-upao evaluate`` (the dataset's default for rows without a run of their own) and
``well-upao residual-floor`` each make one call, [`physics_of`][well_upao.physics.discretisation.physics_of]: a
source, the request and a stride in, the physics out; the PDE lookup
([`pde_for_dataset`][well_upao.physics.discretisation.pde_for_dataset], the only one), the default chain, the
fixed-or-fitted checks, the refusal of time-varying parameters, the sample of frames read and the fallback from
``auto`` are decided there. A UPAO run stores its ``Physics`` in its checkpoint
([`Physics.record`][well_upao.physics.discretisation.Physics.record]), and evaluate scores the run's row with it
([`Physics.from_record`][well_upao.physics.discretisation.Physics.from_record]), so training and evaluation use one
discretisation. [`Physics.bind`][well_upao.physics.discretisation.Physics.bind] gives the residual on a batch or
trajectory (``well_upao.physics.bound.BoundResidual``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import torch

from well_upao.data.datasets import DATASETS
from well_upao.data.source import ObservedFrames, WellSource
from well_upao.physics.bound import BoundResidual
from well_upao.physics.floor import (
    FittedConstants,
    FloorRow,
    choose_discretisation,
    fit_discretised,
    floor_rows,
    permitted,
    refuse_time_varying_parameters,
)
from well_upao.physics.pdes import PDE, PDE_REGISTRY, get_pde
from well_upao.physics.stencils import Grid

#: the residual's discretisation where neither a run nor its dataset chooses one
DEFAULT_SCHEME, DEFAULT_DERIVATIVE = "crank_nicolson", "fd"
#: the observed frames a decision reads, ``(trajectories, frames per trajectory)``: a UPAO run's (its training
#: frames) and evaluate's (the evaluated frames)
TRAINING_SAMPLE, EVALUATION_SAMPLE = (4, 12), (2, 8)
#: ``PhysicsRequest.fit`` for every constant of the PDE (``trainer.pde_constants=fitted``)
FIT_ALL = "all"


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
    #: why the observed frames decided nothing: a source without a PDE, or frames that could not decide
    #: (``PhysicsRequest.fallback``); ``None`` when they decided (or were not needed)
    note: str | None = None

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
        [`pde_for_dataset`][well_upao.physics.discretisation.pde_for_dataset]: a run's ``data.imports`` registered a
        user's)."""
        name = record.get("pde")
        pde = pde_for_dataset(name) if name is not None else None
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
    return Physics(None, None, None, reason=reason, note=reason)


@dataclass(frozen=True)
class PhysicsRequest:
    """What a run, an evaluation or ``residual-floor`` asks of a source's physics
    ([`physics_of`][well_upao.physics.discretisation.physics_of]). ``pde``: a registry or dataset name (``None``: the
    source's); ``derivative`` and ``scheme`` (``None``: the dataset's defaults, its registry entry's ``derivative``
    and ``time_scheme``, else ``DEFAULT_DERIVATIVE`` and ``DEFAULT_SCHEME``); ``constants``: fixed coefficients
    over the PDE's own; ``fit``: the coefficients to fit to the observed frames (``FIT_ALL``: every constant of the
    PDE); ``survey``: the whole floor table, for a report; ``sample``: the observed frames read when a choice, a
    fit or a survey needs them, ``(trajectories, frames per trajectory)``; ``fallback``: frames that cannot decide
    (too few at the stride, a parameter the files lack or store as time-varying) give the requested settings with an
    ``auto`` part replaced by the global default and the reason in ``Physics.note``, instead of the error (not with
    ``fit``: a fit that cannot be made would be dropped, so the pair is refused);
    ``no_pde``: the reason a dataset without a PDE gives (``None``: a PDE is required, the lookup's ``KeyError``).
    The one request type: ``physics_of`` reads all of it, and hands ``resolve`` the request with the dataset's
    defaults filled in (``settled``), of which ``resolve`` reads the derivative, scheme, constants, fit and survey."""

    pde: str | None = None
    derivative: str | None = None
    scheme: str | None = None
    constants: Mapping[str, float] = field(default_factory=dict)
    fit: tuple[str, ...] | str = ()
    survey: bool = False
    sample: tuple[int, int] = TRAINING_SAMPLE
    fallback: bool = False
    no_pde: str | None = None

    def __post_init__(self) -> None:
        if self.fallback and self.fit:
            raise ValueError(
                f"a physics request cannot both fit constants ({self.fit!r}) and fall back: frames that cannot decide "
                "would drop the fit and return the PDE's own constants; ask for the fit without fallback"
            )

    @classmethod
    def for_training(
        cls,
        pde: str | None,
        derivative: str | None,
        scheme: str | None,
        constants: Mapping[str, float] | str | None = None,
    ) -> PhysicsRequest:
        """A UPAO run's request on its training frames (``TRAINING_SAMPLE``): ``constants`` fixed coefficients, or
        ``fitted`` (every constant of the PDE fitted, ``trainer.pde_constants=fitted``)."""
        if isinstance(constants, str) and constants != "fitted":
            raise ValueError(f"pde_constants must be a mapping or 'fitted', got {constants!r}")
        fitted = constants == "fitted"
        fixed = {} if fitted else dict(constants or {})
        return cls(pde, derivative, scheme, fixed, FIT_ALL if fitted else (), sample=TRAINING_SAMPLE)

    def settled(self, defaults: Mapping[str, Any] = MappingProxyType({})) -> PhysicsRequest:
        """The request with its derivative and scheme set: the ones given, else a dataset's ``defaults`` (its
        registry entry's ``derivative`` / ``time_scheme``), else ``DEFAULT_DERIVATIVE`` / ``DEFAULT_SCHEME``."""
        return dataclasses.replace(
            self,
            derivative=self.derivative or defaults.get("derivative", DEFAULT_DERIVATIVE),
            scheme=self.scheme or defaults.get("time_scheme", DEFAULT_SCHEME),
        )

    @property
    def automatic(self) -> bool:
        """Whether the derivative or the scheme is chosen from the observed frames (``auto``)."""
        return "auto" in (self.derivative, self.scheme)

    def fitted_names(self, pde: PDE) -> tuple[str, ...]:
        """The coefficients to fit: every constant of ``pde`` for ``FIT_ALL`` (a PDE without constants refused),
        else the names given."""
        if self.fit != FIT_ALL:
            return tuple(self.fit)
        if not pde.constants:
            raise ValueError(f"PDE {pde.name!r} has no constants to fit (pde_constants=fitted)")
        return tuple(pde.constants)

    def as_set(self) -> PhysicsRequest:
        """The fallback's request: its settings with an ``auto`` part replaced by the global default, nothing to
        fit, survey or fall back from (decided without reading a frame)."""
        derivative = DEFAULT_DERIVATIVE if self.derivative == "auto" else self.derivative
        scheme = DEFAULT_SCHEME if self.scheme == "auto" else self.scheme
        return dataclasses.replace(self, derivative=derivative, scheme=scheme, fit=(), survey=False, fallback=False)


def physics_of(source: WellSource, request: PhysicsRequest, stride: int = 1) -> Physics:
    """The physics of ``source`` at time ``stride`` under ``request``: the PDE (``pde_for_dataset``), the settings
    given else the dataset's defaults else the global ones, the fixed-or-fitted check (a fit of every constant needs a
    PDE with constants), the refusal of a PDE parameter the files store as time-varying, then ``resolve`` on the
    request's sample of the observed frames (read only when a choice, a fit or a survey needs them); with
    ``request.fallback``, frames that cannot decide give the fallback (see ``PhysicsRequest``)."""
    pde = pde_for_dataset(request.pde or source.name, required=request.no_pde is None)
    if pde is None:
        return no_physics(request.no_pde)
    wanted = request.settled(source.defaults)

    def decided() -> Physics:
        refuse_time_varying_parameters(pde, source.layout.varying_scalar_names, source.name, request.constants)
        return resolve(lambda: source.observed(stride, *request.sample), pde, wanted, stride)

    if not request.fallback:
        return decided()
    try:
        return decided()
    except (ValueError, KeyError) as error:
        return dataclasses.replace(resolve(None, pde, wanted.as_set()), note=str(error).strip("'\""))


def resolve(
    observed: Callable[[], ObservedFrames] | ObservedFrames | None,
    pde: PDE | None,
    request: PhysicsRequest,
    stride: int = 1,
    no_pde: str = "no PDE is registered for this dataset",
) -> Physics:
    """The physics of the frames ``observed`` (read only when a choice, a fit or a survey needs them: a callable is
    called then) under ``request``, at time ``stride`` (see the module docstring): its derivative and scheme (unset:
    the global defaults; ``physics_of`` sets a dataset's first), constants, fit and survey; which PDE, which frames
    and the fallback are ``physics_of``'s. ``no_pde``: the reason a source without a PDE gives."""
    if pde is None:
        return no_physics(no_pde)
    request = request.settled()
    derivative, scheme, constants = request.derivative, request.scheme, dict(request.constants)
    fit = request.fitted_names(pde)
    if not (request.automatic or fit or request.survey):
        return Physics(pde, derivative, scheme, constants, reason=f"{derivative}/{scheme} as set")
    frames = observed() if callable(observed) else observed
    if fit:
        (derivative, scheme), fitted, floors = fit_discretised(frames, pde, list(fit), derivative, scheme)
        reason = f"constants {', '.join(fit)} fitted to the observed frames under {derivative}/{scheme}"
        if request.automatic:
            reason += " (the lowest floor after the fit)"
        return Physics(pde, derivative, scheme, constants | fitted.values, floors, reason, fit=fitted)
    rows = floor_rows(frames, stride, pde, *(("auto", "auto") if request.survey else (derivative, scheme)))
    candidates = permitted(rows, derivative, scheme, key=lambda row: row.discretisation)
    chosen = choose_discretisation(candidates, derivative, scheme)
    if chosen is None:
        raise ValueError(f"no residual-floor candidate matches {derivative!r} derivatives and a {scheme!r} scheme")
    floors = {f"{r.derivative}/{r.scheme}": r.mean for r in candidates} if request.automatic else {}
    reason = (
        f"{chosen.derivative}/{chosen.scheme}: the lowest residual floor of the observed frames"
        if request.automatic
        else f"{derivative}/{scheme} as set"
    )
    return Physics(pde, chosen.derivative, chosen.scheme, constants, floors, reason, tuple(rows))


def pde_for_dataset(name: str, required: bool = True) -> PDE | None:
    """The PDE of a dataset, or the PDE called ``name`` (a run's record names its PDE): the dataset's registry entry's
    ``pde`` (a PDE, or a registered PDE's name), else the registered PDE of that name, else the PDE object a
    registered dataset names (a user module may give its ``DatasetSpec`` a PDE without registering it). Where
    nothing matches: the registry's ``KeyError``, or ``None`` when not ``required`` and the dataset names no PDE
    (supervised training and the classical rows need none; a PDE the registry entry names but nobody registered is
    an error all the same)."""
    spec = DATASETS.get(name)
    named = spec.pde if spec is not None and spec.pde is not None else name
    if isinstance(named, PDE):
        return named
    if named in PDE_REGISTRY:
        return PDE_REGISTRY[named]
    for other in DATASETS.values():
        if isinstance(other.pde, PDE) and other.pde.name == named:
            return other.pde
    if not required and named == name:
        return None
    return get_pde(named)  # the registry's error, with the names it knows
