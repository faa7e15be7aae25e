"""The residual floor: how far observed frames are from making a PDE's discrete residual vanish.

For sub-equation ``k`` between frames ``u_n`` and ``u_{n+1}`` a time ``dt`` apart, with the time scheme and the
derivative of a :class:`~well_upao.physics.stencils.Grid`, the relative residual over the interior ``S_p`` is

    rho_k = || R_k ||_{S_p} / || scale_k ||_{S_p},     scale_k = |d_t Q_k| + sum_i |N_k,i|   (pointwise)

(``well_upao.physics.residual``): zero for data that satisfies the discrete equations exactly; for data from an
exact solution or a finer solver it measures the discretisation's own error, the floor below which UPAO cannot
push a prediction towards the truth.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np
import torch

from well_upao.data.datasets import DATASET_SLOTS
from well_upao.data.well_format import FIELD_GROUPS
from well_upao.physics import Grid, Stencils, get_pde
from well_upao.physics.residual import SCHEMES, residuals_and_scales
from well_upao.physics.stencils import interior


@dataclass
class ObservedFrames:
    """Frames of one Well file as slot fields ``(n_traj, T, *space)`` (float64) and what the residual needs."""

    dataset: str
    fields: dict[str, torch.Tensor]
    scalars: dict[str, torch.Tensor]
    spacing: tuple[float, ...]
    periodic: tuple[bool, ...]
    times: np.ndarray


def read_frames(path: str | Path, frames: list[int] | slice) -> ObservedFrames:
    """The given time indices of every trajectory of a Well file, keyed by slot name."""
    with h5py.File(path, "r") as f:
        dataset = str(f.attrs["dataset_name"])
        spatial = [str(d) for d in f["dimensions"].attrs["spatial_dims"]]
        coords = [np.asarray(f["dimensions"][d], dtype=np.float64) for d in spatial]
        periodic = []
        for axis in spatial:
            types = [
                str(group.attrs["bc_type"]).upper()
                for group in f["boundary_conditions"].values()
                if axis in [str(d) for d in group.attrs["associated_dims"]]
            ]
            periodic.append(bool(types) and all(t == "PERIODIC" for t in types))
        slots = DATASET_SLOTS[dataset]
        fields: dict[str, torch.Tensor] = {}
        for order, group in enumerate(FIELD_GROUPS[:2]):
            for name in f[group].attrs["field_names"]:
                data = torch.as_tensor(np.asarray(f[group][str(name)][:, frames]), dtype=torch.float64)
                if order == 0:
                    fields[slots[str(name)]] = data
                else:
                    for i, axis in enumerate(spatial):
                        fields[slots[f"{name}_{axis}"]] = data[..., i]
        n_traj = next(iter(fields.values())).shape[0]
        scalars = {}
        for name in f["scalars"].attrs["field_names"]:
            value = np.asarray(f["scalars"][str(name)], dtype=np.float64)
            scalars[str(name)] = torch.as_tensor(np.broadcast_to(value, (n_traj,)).copy())
        times = np.asarray(f["dimensions"]["time"], dtype=np.float64)[frames]
    spacing = tuple(float(c[1] - c[0]) for c in coords)
    return ObservedFrames(dataset, fields, scalars, spacing, tuple(periodic), times)


def relative_residuals(
    observed: ObservedFrames, derivative: str = "fd", scheme: str = "crank_nicolson", pde_name: str | None = None
) -> dict[str, float]:
    """``rho_k`` (see the module docstring) over the observed frames: consecutive pairs for the two-frame schemes,
    triples (the middle frame's spatial terms) for ``central``."""
    pde = get_pde(pde_name or observed.dataset)
    return _relative(observed, pde, pde.resolve_parameters(observed.scalars), derivative, scheme)


def derivatives_for(periodic: tuple[bool, ...]) -> tuple[str, ...]:
    """The derivative choices that differ on this grid (``fd4`` and ``spectral`` need a periodic axis)."""
    return ("fd", "fd4", "spectral") if any(periodic) else ("fd",)


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


def observed_window(
    files: list[Path], stride: int, max_trajectories: int = 4, max_frames: int = 12, start: int = 1
) -> ObservedFrames:
    """Up to ``max_frames`` frames ``start, start + stride, ...`` of the first ``max_trajectories`` trajectories
    (the first stored frame is skipped by default: the Well's files store a zero pressure there)."""
    parts, taken = [], 0
    for path in files:
        with h5py.File(path, "r") as f:
            n_traj, n_steps = _file_sizes(f)
        indices = list(range(start, n_steps, stride))[:max_frames]
        if len(indices) < 3:
            raise ValueError(f"{path.name}: {n_steps} frames hold fewer than 3 at stride {stride} from frame {start}")
        observed = read_frames(path, indices)
        keep = min(n_traj, max_trajectories - taken)
        parts.append(observed)
        observed.fields = {k: v[:keep] for k, v in observed.fields.items()}
        observed.scalars = {k: v[:keep] for k, v in observed.scalars.items()}
        taken += keep
        if taken >= max_trajectories:
            break
    if not parts:
        raise ValueError("no files to read")
    first = parts[0]
    fields = {k: torch.cat([p.fields[k] for p in parts]) for k in first.fields}
    scalars = {k: torch.cat([p.scalars[k] for p in parts]) for k in first.scalars}
    return ObservedFrames(first.dataset, fields, scalars, first.spacing, first.periodic, first.times)


def _file_sizes(f: h5py.File) -> tuple[int, int]:
    return int(f.attrs["n_trajectories"]), int(f["dimensions"]["time"].shape[-1])


def floor_table(
    files: list[Path], strides: list[int], max_trajectories: int = 4, max_frames: int = 12, pde_name: str | None = None
) -> list[FloorRow]:
    """Every stride x derivative x time scheme (see :func:`derivatives_for` and ``SCHEMES``)."""
    rows = []
    for stride in strides:
        observed = observed_window(files, stride, max_trajectories, max_frames)
        for derivative in derivatives_for(observed.periodic):
            for scheme in SCHEMES:
                rows.append(
                    FloorRow(stride, derivative, scheme, relative_residuals(observed, derivative, scheme, pde_name))
                )
    return rows


def best_row(rows: list[FloorRow], stride: int) -> FloorRow:
    return min((r for r in rows if r.stride == stride), key=lambda r: r.mean)


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
        best = row is best_row(rows, row.stride)
        mark = " **(lowest)**" if best else ""
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
    pde_name: str | None = None,
    max_iterations: int = 20,
) -> FittedConstants:
    """Least-squares values of a PDE's coefficients ``names`` (constants like Gray-Scott's ``delta_A``, or
    parameters shared by the observed trajectories) from the observed frames:

        min_theta  sum_k || R_k(theta) ||^2_{S_p} / || scale_k(theta_0) ||^2_{S_p}

    by Gauss-Newton with a forward-difference Jacobian (one step is exact when the residual is linear in
    ``theta``, as it is for diffusivities, viscosities and reaction rates), starting from the documented values."""
    pde = get_pde(pde_name or observed.dataset)
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
    before = relative_residuals(observed, derivative, scheme, pde_name)
    after = _relative(observed, pde, pde.resolve_parameters(observed.scalars, values), derivative, scheme)
    return FittedConstants(values, initial, before, after, iterations)


def _residuals(observed: ObservedFrames, pde, params, derivative: str, scheme: str):
    """Residuals and term sizes of every sub-equation over the observed frames (equally spaced)."""
    fields = observed.fields
    steps = np.diff(observed.times)
    needed = 2 if scheme == "central" else 1
    if len(steps) < needed or not np.allclose(steps, steps[0], rtol=1e-9):
        raise ValueError(f"the {scheme} residual needs at least {needed + 1} equally spaced frames")
    dt = torch.tensor(float(steps[0]), dtype=torch.float64)
    ops = Stencils(Grid(observed.spacing, observed.periodic, derivative))
    if scheme == "central":
        older = {k: v[:, :-2] for k, v in fields.items()}
        old = {k: v[:, 1:-1] for k, v in fields.items()}
        new = {k: v[:, 2:] for k, v in fields.items()}
        return residuals_and_scales(pde, old, new, dt, params, ops, "central", older=older)
    old = {k: v[:, :-1] for k, v in fields.items()}
    new = {k: v[:, 1:] for k, v in fields.items()}
    return residuals_and_scales(pde, old, new, dt, params, ops, scheme)


def _relative(observed: ObservedFrames, pde, params, derivative: str, scheme: str) -> dict[str, float]:
    residuals, scales = _residuals(observed, pde, params, derivative, scheme)
    dims = len(observed.spacing)
    return {k: float(interior(residuals[k], dims).norm() / interior(scales[k], dims).norm()) for k in residuals}
