"""The scalars of an import, checked: per-trajectory constants (the PDE's parameters, by its names) and scalars given
per frame, as float64 arrays over the source's trajectories (and the kept frames).

A constant is one value for every trajectory or one per trajectory; a scalar per frame is ``(T,)`` (the same in every
trajectory) or ``(trajectory, T)`` over the stored frames. NaN or inf, a wrong shape, or a constant named as a field
is refused (``ImportInputError``, naming the fix).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from well_upao.data.import_arrays import ImportInputError


def per_trajectory_scalars(scalars: Mapping[str, Any], n_traj: int, field_names: list[str]) -> dict[str, np.ndarray]:
    """Per-trajectory constants (the PDE's parameters): one value for all, or one per trajectory."""
    out = {}
    for name, value in scalars.items():
        if name in field_names:
            raise ImportInputError(f"{name!r} is both a field and a scalar: rename one (--rename)")
        values = np.asarray(value, dtype=np.float64)
        if values.ndim == 0:
            values = np.full(n_traj, float(values))
        if values.shape != (n_traj,):
            raise ImportInputError(
                f"scalar {name!r} has shape {values.shape}: give one value, or one per trajectory ({n_traj},); a value "
                "per frame is a time-varying scalar (--varying-scalar)"
            )
        if not np.isfinite(values).all():
            raise ImportInputError(f"scalar {name!r} holds NaN or inf: give a finite value per trajectory")
        out[str(name)] = values
    return out


def per_frame_scalars(scalars: Mapping[str, Any], n_traj: int, stored: int, frames: slice) -> dict[str, np.ndarray]:
    """Scalars given per frame (``(T,)``, the same in every trajectory, or ``(n_traj, T)``), over the kept frames."""
    out = {}
    for name, value in scalars.items():
        values = np.asarray(value, dtype=np.float64)
        if values.shape == (stored,):
            values = np.broadcast_to(values, (n_traj, stored))
        if values.shape != (n_traj, stored):
            raise ImportInputError(
                f"time-varying scalar {name!r} has shape {values.shape}: give one value per frame ({stored},) or "
                f"per trajectory and frame ({n_traj}, {stored})"
            )
        values = np.ascontiguousarray(values[:, frames])
        if not np.isfinite(values).all():
            raise ImportInputError(f"time-varying scalar {name!r} holds NaN or inf: give finite values")
        out[str(name)] = values
    return out
