"""An ``advdiff2d`` dataset at the settings users run rather than the defaults, with its residual in closed form.

Each trajectory is one exact solution of ``d_t u + a d_x u + b d_y u = nu Lap u``,

    u(x, y, t) = exp(-nu k^2 s) cos(k (x - a s) + phi) (y - b s + c),      s = t - T0,

on a non-square grid: ``x`` periodic on ``[0, 2 pi)`` (24 points), ``y`` between walls on ``[0, 3]`` with both ends
(40 points), so ``dx = 2 pi / 24 != dy = 3 / 39``. It is a Fourier mode along the periodic axis (exact under the
spectral derivative) and linear along the wall axis (exact under second-order differences, their ghost cells and
the upwind faces), so a residual with ``derivative="spectral"`` has no spatial error: what remains is the time
scheme's, in closed form here (``crank_nicolson_floor``).

Files are written to the Well's specification as its own files are: ``dimensions/time`` and the coordinates in
float32, time from ``T0 = 1000`` every ``DT = 0.04`` (float32 holds such a time only to ~3e-5, 0.08% of a step:
single differences of the stored times are off by up to 0.1% of a step), fields in float32. Expected values come
from these formulas in numpy float64, not from the package.
"""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import yaml

NAME = "advdiff2d"
T0, DT, FRAMES = 1000.0, 0.04, 32
NX, NY, LX, LY = 24, 40, 2 * np.pi, 3.0
DX, DY = LX / NX, LY / (NY - 1)
K, A, B = 2.0, 1.0, 0.5
#: per trajectory: (nu, phi, c); two per split
TRAJECTORIES = ((0.05, 0.3, 0.7), (0.03, 1.9, -0.4))


def axes() -> tuple[np.ndarray, np.ndarray]:
    """The exact coordinates (float64): ``x`` without its periodic end, ``y`` with both walls."""
    return np.arange(NX) * DX, np.linspace(0.0, LY, NY)


def elapsed() -> np.ndarray:
    """``t - T0`` of every stored frame, exact (float64)."""
    return np.arange(FRAMES) * DT


def parts(nu: float, phi: float, c: float, s: np.ndarray):
    """``(E, cos, sin, eta)`` on the grid at times ``s`` (``(T, NX, NY)`` each): ``u = E cos eta``."""
    x, y = axes()
    s = np.asarray(s, dtype=np.float64)[:, None, None]
    theta = K * (x[None, :, None] - A * s) + phi
    decay = np.exp(-nu * K**2 * s)
    eta = y[None, None, :] - B * s + c
    return decay, np.cos(theta), np.sin(theta), eta


def field(nu: float, phi: float, c: float, s: np.ndarray) -> np.ndarray:
    decay, cos, _, eta = parts(nu, phi, c, s)
    return decay * cos * eta


def terms(nu: float, phi: float, c: float, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The spatial terms ``(a u_x, b u_y, -nu Lap u)`` at times ``s``, differentiated by hand."""
    decay, cos, sin, eta = parts(nu, phi, c, s)
    u_x = -K * decay * sin * eta
    u_y = decay * cos * np.ones_like(eta)
    laplacian = -(K**2) * decay * cos * eta
    return A * u_x, B * u_y, -nu * laplacian


def crank_nicolson_floor(stride: int, frames: int, step: float | None = None, start: int = 1) -> float:
    """``||R|| / ||scale||`` over the interior of every trajectory of a split (the module docstring's frames
    ``start, start + stride, ...``, at most ``frames``), for Crank-Nicolson with exact spatial terms:

        R = (u_{n+1} - u_n) / h + N((u_n + u_{n+1}) / 2),    scale = |(u_{n+1} - u_n) / h| + sum_i |N_i(...)|

    ``h = stride * DT`` unless ``step`` says otherwise (a negative control: the wrong step)."""
    h = stride * DT if step is None else step
    s = elapsed()[start::stride][:frames]
    residual, scale = 0.0, 0.0
    for nu, phi, c in TRAJECTORIES:
        u = field(nu, phi, c, s)
        rate = (u[1:] - u[:-1]) / h
        # the spatial terms are linear in u: N of the mean is the mean of N
        now, then = terms(nu, phi, c, s[:-1]), terms(nu, phi, c, s[1:])
        middle = [(p + q) / 2 for p, q in zip(now, then, strict=True)]
        r = rate + sum(middle)
        size = np.abs(rate) + sum(np.abs(t) for t in middle)
        residual += float((r[:, 1:-1, 1:-1] ** 2).sum())
        scale += float((size[:, 1:-1, 1:-1] ** 2).sum())
    return float(np.sqrt(residual / scale))


def write(base: Path, trajectories=TRAJECTORIES) -> Path:
    """The dataset under ``base`` (train, valid, test: the same trajectories) with its ``stats.yaml``."""
    x, y = axes()
    values = np.stack([field(nu, phi, c, elapsed()) for nu, phi, c in trajectories])
    for split in ("train", "valid", "test"):
        directory = base / NAME / "data" / split
        directory.mkdir(parents=True)
        with h5py.File(directory / f"{NAME}_{split}.hdf5", "w") as f:
            f.attrs.update(dataset_name=NAME, grid_type="cartesian", n_spatial_dims=2,
                           n_trajectories=len(trajectories), simulation_parameters=["nu", "a", "b"])  # fmt: skip
            dims = f.create_group("dimensions")
            dims.attrs["spatial_dims"] = ["x", "y"]
            time = dims.create_dataset("time", data=(T0 + elapsed()).astype(np.float32))
            time.attrs.update(sample_varying=False, time_varying=True)
            for axis, coordinate in (("x", x), ("y", y)):
                dims.create_dataset(axis, data=coordinate.astype(np.float32)).attrs.update(
                    sample_varying=False, time_varying=False
                )
            group = f.create_group("boundary_conditions")
            for axis, n, kind in (("x", NX, "PERIODIC"), ("y", NY, "WALL")):
                bc = group.create_group(f"{axis}_{kind.lower()}")
                bc.attrs.update(bc_type=kind, associated_dims=[axis], associated_fields=[], sample_varying=False,
                                time_varying=False)  # fmt: skip
                mask = np.zeros(n, dtype=bool)
                mask[[0, -1]] = True
                bc.create_dataset("mask", data=mask)
            group = f.create_group("scalars")
            group.attrs["field_names"] = ["nu", "a", "b"]
            for name, value in (("nu", [t[0] for t in trajectories]), ("a", [A] * len(trajectories)),
                                ("b", [B] * len(trajectories))):  # fmt: skip
                stored = group.create_dataset(name, data=np.asarray(value, dtype=np.float32))
                stored.attrs.update(sample_varying=True, time_varying=False)
            for order, names in enumerate((["u"], [], [])):
                group = f.create_group(f"t{order}_fields")
                group.attrs["field_names"] = names
            stored = f["t0_fields"].create_dataset("u", data=values.astype(np.float32))
            stored.attrs.update(dim_varying=[True, True], sample_varying=True, time_varying=True)
    stats = {key: {"u": value} for key, value in (("mean", 0.25), ("std", 1.5), ("rms", 1.6), ("mean_delta", 0.0),
                                                   ("std_delta", 0.1), ("rms_delta", 0.1))}  # fmt: skip
    (base / NAME / "stats.yaml").write_text(yaml.safe_dump(stats))
    return base / NAME
