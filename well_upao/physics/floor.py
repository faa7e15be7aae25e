"""The residual floor: how far observed frames are from making a PDE's discrete residual vanish.

For sub-equation ``k`` between frames ``u_n`` and ``u_{n+1}`` a time ``dt`` apart, with a time scheme and a
derivative (``well_upao.physics.residual`` and ``well_upao.physics.stencils``), the relative residual over the
interior ``S_p`` is

    rho_k = || R_k ||_{S_p} / || scale_k ||_{S_p},     scale_k = |d_t Q_k| + sum_i |N_k,i|   (pointwise)

zero for data that satisfies the discrete equations exactly; for data from an exact solution or a finer solver it
measures the discretisation's own error, the floor below which UPAO cannot push a prediction towards the truth.
Everything here works on frames already in memory (``well_upao.data.source.ObservedFrames``, read by
``WellSource.observed``); no file is opened. The PDE is the caller's, resolved once (``pde_for_dataset`` for a
registered dataset, a user's included, or a run's ``trainer.pde``) and passed in.

The discretisations a run may use are the derivative choices of its grid (``derivatives_for``) times the time
schemes (the names of the table ``SCHEMES``, ``well_upao.physics.residual``: a scheme added there is a candidate
here) that its settings permit (``permitted``, the one filter: a fixed part as given, an ``auto``
part any); ``choose_discretisation`` picks among them the lowest floor, for the UPAO trainer's ``auto`` and for
``well-upao evaluate`` alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import product
from typing import TypeVar

import numpy as np
import torch

from well_upao.axes import uniform_step
from well_upao.data.source import ObservedFrames
from well_upao.physics.bound import BoundResidual
from well_upao.physics.pdes import PDE
from well_upao.physics.residual import SCHEMES
from well_upao.physics.stencils import Grid, interior


def derivatives_for(periodic: Sequence[bool]) -> tuple[str, ...]:
    """The derivative choices that differ on this grid (``fd4`` and ``spectral`` need a periodic axis)."""
    return ("fd", "fd4", "spectral") if any(periodic) else ("fd",)


Candidate = TypeVar("Candidate")


def permitted(
    candidates: Iterable[Candidate],
    derivative: str,
    scheme: str,
    key: Callable[[Candidate], tuple[str, str]] = lambda pair: pair,
) -> list[Candidate]:
    """The candidates whose ``(derivative, time scheme)`` (``key``) settings ``derivative`` / ``scheme`` permit: a
    fixed setting its own value only, ``auto`` any (the one filter of the discretisation's candidates)."""
    return [c for c in candidates if derivative in ("auto", key(c)[0]) and scheme in ("auto", key(c)[1])]


def discretisations(periodic: Sequence[bool], derivative: str = "auto", scheme: str = "auto") -> list[tuple[str, str]]:
    """``(derivative, time scheme)`` pairs on a grid (``derivatives_for`` x the names in ``SCHEMES``, in the
    table's order) that the settings permit (``permitted``)."""
    return permitted(product(derivatives_for(periodic), SCHEMES), derivative, scheme)


def refuse_time_varying_parameters(pde: PDE, varying: Iterable[str], where: str, overrides: Iterable[str] = ()) -> None:
    """Refuse (``ValueError`` naming the attribute) a PDE parameter the files store as a time-varying ``/scalars``
    entry (``varying``): parameters are read per trajectory, constant in time; ``overrides``: parameters set
    otherwise (constants of the PDE or of the run)."""
    given = set(pde.constants) | set(overrides)
    for name in pde.parameters:
        if name in given:
            continue
        candidates = (name, *pde.aliases.get(name, ()))
        stored = next((c for c in candidates if c in set(varying)), None)
        if stored is not None:
            raise ValueError(
                f"{where}: PDE {pde.name!r} needs parameter {name!r}, which /scalars/{stored} stores with attribute "
                "time_varying = true; PDE parameters are read as constants per trajectory: store it with "
                "time_varying = false, or set it with trainer.pde_constants"
            )


def relative_residuals(
    observed: ObservedFrames, pde: PDE, derivative: str = "fd", scheme: str = "crank_nicolson"
) -> dict[str, float]:
    """``rho_k`` (see the module docstring) of ``pde`` over the observed frames: every run of the scheme's
    consecutive frames (``TimeScheme.frame_sets``: pairs for the two-frame schemes, triples, the middle frame's
    spatial terms, for ``central``). A parameter stored as a time-varying scalar
    is refused (``refuse_time_varying_parameters``)."""
    refuse_time_varying_parameters(pde, observed.varying_scalars, observed.dataset)
    return _relative(observed, observed_residual(observed, pde, derivative, scheme))


@dataclass
class FloorRow:
    stride: int
    derivative: str
    scheme: str
    residuals: dict[str, float]

    @property
    def mean(self) -> float:
        """Mean of ``rho_k`` over the sub-equations: the number ``auto`` choices minimise."""
        return float(np.mean(list(self.residuals.values())))

    @property
    def discretisation(self) -> tuple[str, str]:
        return self.derivative, self.scheme


def floor_rows(
    observed: ObservedFrames, stride: int, pde: PDE, derivative: str = "auto", scheme: str = "auto"
) -> list[FloorRow]:
    """The floor of ``pde`` on frames ``stride`` apart under every discretisation of their grid that the settings
    permit (``discretisations``; ``auto``, the default: every derivative x time scheme)."""
    return [
        FloorRow(stride, d, t, relative_residuals(observed, pde, d, t))
        for d, t in discretisations(observed.periodic, derivative, scheme)
    ]


def best_row(rows: Iterable[FloorRow], stride: int) -> FloorRow:
    return min((r for r in rows if r.stride == stride), key=lambda r: r.mean)


def choose_discretisation(rows: Iterable[FloorRow], derivative: str, scheme: str) -> FloorRow | None:
    """The row a UPAO run with these settings uses (the UPAO trainer's ``auto`` and ``well-upao evaluate``): the
    fixed parts as given, an ``auto`` part the lowest floor among the rows the settings permit (``permitted``;
    ``None`` when none is)."""
    matching = permitted(rows, derivative, scheme, key=lambda r: r.discretisation)
    return min(matching, key=lambda r: r.mean, default=None)


def floor_markdown(rows: list[FloorRow], dataset: str) -> str:
    names = list(rows[0].residuals)
    lines = [
        f"Residual floor of {dataset}: relative residual ||R_k|| / ||scale_k|| of the observed frames over the "
        "interior (0 = the data satisfies the discrete equations exactly)",
        "",
        "| stride | derivative | time scheme | " + " | ".join(names) + " | mean |",
        "|---|---|---|" + "---|" * (len(names) + 1),
    ]
    for row in rows:
        mark = " **(lowest)**" if row is best_row(rows, row.stride) else ""
        lines.append(
            f"| {row.stride} | {row.derivative} | {row.scheme} | "
            + " | ".join(f"{row.residuals[k]:.2e}" for k in names)
            + f" | {row.mean:.2e}{mark} |"
        )
    return "\n".join(lines)


@dataclass
class FittedConstants:
    values: dict[str, float]
    initial: dict[str, float]
    floor_initial: dict[str, float]
    floor_fitted: dict[str, float]
    iterations: int


def fit_constants(
    observed: ObservedFrames,
    pde: PDE,
    names: list[str],
    derivative: str = "fd",
    scheme: str = "crank_nicolson",
    max_iterations: int = 20,
) -> FittedConstants:
    """Least-squares values of a PDE's coefficients ``names`` (constants like Gray-Scott's ``delta_A``, or
    parameters shared by the observed trajectories) from the observed frames:

        min_theta  sum_k || R_k(theta) ||^2_{S_p} / || scale_k(theta_0) ||^2_{S_p}

    by Gauss-Newton with a forward-difference Jacobian (one step is exact when the residual is linear in
    ``theta``, as it is for diffusivities, viscosities and reaction rates), starting from the documented values."""
    refuse_time_varying_parameters(pde, observed.varying_scalars, observed.dataset, names)
    base = observed_residual(observed, pde, derivative, scheme).params
    unknown = [n for n in names if n not in base]
    if unknown:
        raise ValueError(f"{pde.name} has no coefficient {unknown}; it has {sorted(base)}")
    theta = np.array(
        [float(base[n]) if isinstance(base[n], int | float) else float(base[n].double().mean()) for n in names]
    )
    initial = dict(zip(names, theta.tolist(), strict=True))
    weights = None

    def residual_vector(values: np.ndarray) -> torch.Tensor:
        nonlocal weights
        overrides = dict(zip(names, values.tolist(), strict=True))
        residuals, scales = _residuals(observed, observed_residual(observed, pde, derivative, scheme, overrides))
        dims = len(observed.spacing)
        if weights is None:
            weights = {k: 1.0 / float(interior(scales[k], dims).norm()) for k in residuals}
        return torch.cat([interior(residuals[k], dims).flatten() * weights[k] for k in residuals])

    iterations = 0
    while iterations < max_iterations:
        iterations += 1
        current = residual_vector(theta)
        steps = 1e-4 * np.maximum(np.abs(theta), 1e-12)
        jacobian = torch.stack(
            [(residual_vector(theta + step * np.eye(len(theta))[j]) - current) / step for j, step in enumerate(steps)],
            dim=1,
        )
        update = torch.linalg.lstsq(jacobian, -current[:, None]).solution[:, 0].numpy()
        theta = theta + update
        if np.all(np.abs(update) <= 1e-10 * np.maximum(np.abs(theta), 1e-30)):
            break
    values = dict(zip(names, theta.tolist(), strict=True))
    before = relative_residuals(observed, pde, derivative, scheme)
    after = _relative(observed, observed_residual(observed, pde, derivative, scheme, values))
    return FittedConstants(values, initial, before, after, iterations)


def fit_discretised(
    observed: ObservedFrames,
    pde: PDE,
    names: list[str],
    derivative: str = "auto",
    scheme: str = "auto",
) -> tuple[tuple[str, str], FittedConstants, dict[str, float]]:
    """Constants fitted (``fit_constants``) under every discretisation the settings permit
    (``discretisations``; ``auto``: any), the one whose floor *after* the fit is lowest kept: ``((derivative,
    scheme), its fit, {"d/s": mean fitted floor})``. A floor at the documented constants would pick the
    discretisation whose error best hides a wrong constant."""
    candidates = discretisations(observed.periodic, derivative, scheme)
    if not candidates:
        raise ValueError(f"derivative {derivative!r} is not available on this grid")
    fits = {key: fit_constants(observed, pde, names, *key) for key in candidates}
    floors = {f"{d}/{t}": float(np.mean(list(f.floor_fitted.values()))) for (d, t), f in fits.items()}
    best = min(fits, key=lambda key: floors[f"{key[0]}/{key[1]}"])
    return best, fits[best], floors


def observed_residual(
    observed: ObservedFrames, pde: PDE, derivative: str, scheme: str, constants: Mapping[str, float] = ()
) -> BoundResidual:
    """``pde`` bound to the observed frames' scalars and grid (``constants``: coefficients set over the PDE's)."""
    grid = Grid(observed.spacing, observed.periodic)
    return BoundResidual.of(pde, grid, derivative, scheme, observed.scalars, constants)


def _residuals(observed: ObservedFrames, bound: BoundResidual):
    """Residuals and term sizes of every sub-equation over the observed frames (equally spaced; the scheme's
    ``frames`` at least, no fallback: a floor row is the scheme's own)."""
    fields, scheme = observed.fields, bound.scheme
    if len(observed.times) < scheme.frames:
        raise ValueError(f"the {scheme.name} residual needs at least {scheme.frames} frames, got {len(observed.times)}")
    # the frames' step from the file's whole time axis, else fitted to their times at their stored precision
    # (``well_upao.axes``: refuses, with its numbers, frames that are not equally spaced)
    step = observed.step
    if step is None:
        step = uniform_step(observed.times, observed.time_dtype, "time", observed.dataset)
    dt = torch.tensor(float(step), dtype=torch.float64)
    old, new, older = scheme.frame_sets(fields)
    return bound.residuals_and_scales(old, new, dt, older)


def _relative(observed: ObservedFrames, bound: BoundResidual) -> dict[str, float]:
    residuals, scales = _residuals(observed, bound)
    dims = len(observed.spacing)
    return {k: float(interior(residuals[k], dims).norm() / interior(scales[k], dims).norm()) for k in residuals}
