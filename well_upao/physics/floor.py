"""The residual floor: how far observed frames are from making a PDE's discrete residual vanish.

For sub-equation ``k`` between frames ``u_n`` and ``u_{n+1}`` a time ``dt`` apart, with a time scheme and a
derivative (``well_upao.physics.residual`` and ``well_upao.physics.stencils``), the relative residual over the
interior ``S_p`` is

    rho_k = || R_k ||_{S_p} / || scale_k ||_{S_p},     scale_k = |d_t Q_k| + sum_i |N_k,i|   (pointwise)

zero for data that satisfies the discrete equations exactly; for data from an exact solution or a finer solver it
measures the discretisation's own error, the floor below which UPAO cannot push a prediction towards the truth.
Everything here works on frames already in memory (:class:`well_upao.data.source.ObservedFrames`, read by
``WellSource.observed``); no file is opened. The PDE defaults to the dataset's (``pde_for_dataset``), so a
user's dataset registered with its PDE gets its floor like ours.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from well_upao.axes import uniform_step
from well_upao.data.source import ObservedFrames
from well_upao.physics.pdes import PDE, pde_for_dataset
from well_upao.physics.residual import SCHEMES, residuals_and_scales
from well_upao.physics.stencils import Grid, Stencils, interior


def derivatives_for(periodic: Sequence[bool]) -> tuple[str, ...]:
    """The derivative choices that differ on this grid (``fd4`` and ``spectral`` need a periodic axis)."""
    return ("fd", "fd4", "spectral") if any(periodic) else ("fd",)


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
    observed: ObservedFrames, derivative: str = "fd", scheme: str = "crank_nicolson", pde: PDE | None = None
) -> dict[str, float]:
    """``rho_k`` (see the module docstring) over the observed frames: consecutive pairs for the two-frame schemes,
    triples (the middle frame's spatial terms) for ``central``. A parameter stored as a time-varying scalar is
    refused (:func:`refuse_time_varying_parameters`)."""
    pde = pde or pde_for_dataset(observed.dataset)
    refuse_time_varying_parameters(pde, observed.varying_scalars, observed.dataset)
    return _relative(observed, pde, pde.resolve_parameters(observed.scalars), derivative, scheme)


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


def floor_rows(observed: ObservedFrames, stride: int, pde: PDE | None = None) -> list[FloorRow]:
    """Every derivative (:func:`derivatives_for`) x time scheme (``SCHEMES``) on frames ``stride`` apart."""
    pde = pde or pde_for_dataset(observed.dataset)
    return [
        FloorRow(stride, derivative, scheme, relative_residuals(observed, derivative, scheme, pde))
        for derivative in derivatives_for(observed.periodic)
        for scheme in SCHEMES
    ]


def best_row(rows: Iterable[FloorRow], stride: int) -> FloorRow:
    return min((r for r in rows if r.stride == stride), key=lambda r: r.mean)


def choose_discretisation(rows: Iterable[FloorRow], derivative: str, scheme: str) -> FloorRow | None:
    """The row a UPAO run with these settings uses: the fixed parts as given, an ``auto`` part the lowest floor
    among the rows the other part allows (``None`` when no row matches)."""
    matching = [r for r in rows if derivative in ("auto", r.derivative) and scheme in ("auto", r.scheme)]
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
    names: list[str],
    derivative: str = "fd",
    scheme: str = "crank_nicolson",
    pde: PDE | None = None,
    max_iterations: int = 20,
) -> FittedConstants:
    """Least-squares values of a PDE's coefficients ``names`` (constants like Gray-Scott's ``delta_A``, or
    parameters shared by the observed trajectories) from the observed frames:

        min_theta  sum_k || R_k(theta) ||^2_{S_p} / || scale_k(theta_0) ||^2_{S_p}

    by Gauss-Newton with a forward-difference Jacobian (one step is exact when the residual is linear in
    ``theta``, as it is for diffusivities, viscosities and reaction rates), starting from the documented values."""
    pde = pde or pde_for_dataset(observed.dataset)
    refuse_time_varying_parameters(pde, observed.varying_scalars, observed.dataset, names)
    base = pde.resolve_parameters(observed.scalars)
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
        params = pde.resolve_parameters(observed.scalars, overrides)
        residuals, scales = _residuals(observed, pde, params, derivative, scheme)
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
    before = relative_residuals(observed, derivative, scheme, pde)
    after = _relative(observed, pde, pde.resolve_parameters(observed.scalars, values), derivative, scheme)
    return FittedConstants(values, initial, before, after, iterations)


def fit_discretised(
    observed: ObservedFrames,
    names: list[str],
    derivative: str = "auto",
    scheme: str = "auto",
    pde: PDE | None = None,
) -> tuple[tuple[str, str], FittedConstants, dict[str, float]]:
    """Constants fitted (:func:`fit_constants`) under every derivative / time scheme the settings allow (``auto``:
    any), the one whose floor *after* the fit is lowest kept: ``((derivative, scheme), its fit, {"d/s": mean
    fitted floor})``. A floor at the documented constants would pick the discretisation whose error best hides
    a wrong constant."""
    pde = pde or pde_for_dataset(observed.dataset)
    candidates = [
        (d, t)
        for d in derivatives_for(observed.periodic)
        for t in SCHEMES
        if derivative in ("auto", d) and scheme in ("auto", t)
    ]
    if not candidates:
        raise ValueError(f"derivative {derivative!r} is not available on this grid")
    fits = {key: fit_constants(observed, names, *key, pde) for key in candidates}
    floors = {f"{d}/{t}": float(np.mean(list(f.floor_fitted.values()))) for (d, t), f in fits.items()}
    best = min(fits, key=lambda key: floors[f"{key[0]}/{key[1]}"])
    return best, fits[best], floors


def _residuals(observed: ObservedFrames, pde: PDE, params, derivative: str, scheme: str):
    """Residuals and term sizes of every sub-equation over the observed frames (equally spaced)."""
    fields = observed.fields
    needed = 2 if scheme == "central" else 1
    if len(observed.times) < needed + 1:
        raise ValueError(f"the {scheme} residual needs at least {needed + 1} frames, got {len(observed.times)}")
    # the frames' step from the file's whole time axis, else fitted to their times at their stored precision
    # (``well_upao.axes``: refuses, with its numbers, frames that are not equally spaced)
    step = observed.step
    if step is None:
        step = uniform_step(observed.times, observed.time_dtype, "time", observed.dataset)
    dt = torch.tensor(float(step), dtype=torch.float64)
    ops = Stencils(Grid(observed.spacing, observed.periodic), derivative)
    if scheme == "central":
        older = {k: v[:, :-2] for k, v in fields.items()}
        old = {k: v[:, 1:-1] for k, v in fields.items()}
        new = {k: v[:, 2:] for k, v in fields.items()}
        return residuals_and_scales(pde, old, new, dt, params, ops, "central", older=older)
    old = {k: v[:, :-1] for k, v in fields.items()}
    new = {k: v[:, 1:] for k, v in fields.items()}
    return residuals_and_scales(pde, old, new, dt, params, ops, scheme)


def _relative(observed: ObservedFrames, pde: PDE, params, derivative: str, scheme: str) -> dict[str, float]:
    residuals, scales = _residuals(observed, pde, params, derivative, scheme)
    dims = len(observed.spacing)
    return {k: float(interior(residuals[k], dims).norm() / interior(scales[k], dims).norm()) for k in residuals}
