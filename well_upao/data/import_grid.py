"""The time axis and the spatial grid of an import: each axis's values, equally spaced, and each boundary's type.

* **Time.** ``times`` (a coordinate, numbers or numpy datetimes with ``time_unit``), else the time coordinate a named
  array carries, else ``dt``: frame ``k`` at ``k * dt``. The step must be uniform (``well_upao.axes.fit_uniform``,
  the readers' own test); ``dt`` and a coordinate must agree (to a relative 1e-6); dates and durations become
  numbers of ``time_unit`` since the first frame; a coordinate's ``units`` attribute is the unit where none is given.
* **Grid.** ``coordinates`` or ``spacing`` per axis (axis ``a`` at ``i * spacing[a]``), else the coordinate a named
  array carries; equally spaced, one value per point. ``boundaries`` per axis (``periodic``, ``wall``, ``open``;
  ``periodic`` where not given).

Each refusal is an ``ImportInputError`` naming the fix.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from well_upao.axes import UnevenAxisError, UniformAxis, fit_uniform
from well_upao.data.import_arrays import TIME, FieldSource, ImportInputError, coordinate_of
from well_upao.data.well_format import BC_TYPES

#: units a datetime or timedelta time axis can be converted to (``time_unit``), as numpy names them
TIME_UNITS = {"ns": "ns", "us": "us", "ms": "ms", "s": "s", "min": "m", "h": "h", "day": "D", "D": "D"}


def time_axis(
    times: Any,
    dt: float | None,
    time_unit: str | None,
    stored: int,
    frames: slice,
    sources: Sequence[FieldSource],
    dim_names: Mapping[str, str],
    notes: list[str],
) -> tuple[np.ndarray, float, str | None]:
    """The kept frames' float64 times, their uniform step and unit (see the module docstring); what was read is
    appended to ``notes``."""
    origin = "the given times"
    if times is None:
        times = coordinate_of(sources, TIME, dim_names)
        origin = "the time coordinate"
    if times is not None:
        values, step, time_unit = _times_from_values(times, dt, time_unit, stored, frames, origin, notes)
    else:
        values, step, origin = _times_from_step(dt, frames), float(dt), "the given step"
    unit = f" {time_unit}" if time_unit else ""
    notes.append(f"time: {len(values)} frames, dt = {step:.9g}{unit} (from {origin})")
    return values, step, time_unit


def _times_from_values(
    times: Any, dt: float | None, time_unit: str | None, stored: int, frames: slice, origin: str, notes: list[str]
) -> tuple[np.ndarray, float, str | None]:
    """The kept frames' times from one time per stored frame (numbers, or dates turned into ``time_unit``), their
    step (checked against ``dt``) and unit (the coordinate's ``units`` where ``time_unit`` is not given)."""
    unit_attr = getattr(times, "attrs", {}).get("units") if time_unit is None else None
    values = np.asarray(times)
    if values.shape != (stored,):
        raise ImportInputError(
            f"the time axis has {values.shape} values for {stored} stored frames: give one time per frame"
        )
    if values.dtype.kind in "Mm":
        values = _dates_as_numbers(values, time_unit)
        notes.append(f"time: dates turned into {time_unit} since the first frame")
    elif unit_attr and time_unit is None:
        time_unit = str(unit_attr)
    values = np.asarray(values, dtype=np.float64)[frames]
    axis = uniform(values, "time")
    if dt is not None and not math.isclose(axis.step, dt, rel_tol=1e-6):
        raise ImportInputError(
            f"--dt {dt:g} disagrees with the step {axis.step:.9g} of the time axis ({origin}): drop --dt "
            "(Python: dt=) or correct it"
        )
    return values, axis.step, time_unit


def _dates_as_numbers(values: np.ndarray, time_unit: str | None) -> np.ndarray:
    """Dates or durations as numbers of ``time_unit`` since the first."""
    if time_unit is None:
        raise ImportInputError(
            "the time axis holds dates or durations: pass --time-unit (s, min, h, day, ...; the unit of the "
            "PDE's coefficients) to turn them into numbers (Python: time_unit=)"
        )
    if time_unit not in TIME_UNITS:
        raise ImportInputError(f"--time-unit {time_unit!r} is none of {', '.join(TIME_UNITS)}")
    return (values - values[0]) / np.timedelta64(1, TIME_UNITS[time_unit])


def _times_from_step(dt: float | None, frames: slice) -> np.ndarray:
    """The kept frames' times from the step: stored frame ``k`` at ``k * dt``."""
    if dt is None:
        raise ImportInputError(
            "no time step: pass --dt DT (the time between stored frames, in the unit of the PDE's coefficients; "
            "Python: dt=) or a time coordinate"
        )
    if not (dt > 0 and math.isfinite(dt)):
        raise ImportInputError(f"--dt must be a positive number (got {dt})")
    return np.arange(frames.start, frames.stop, dtype=np.float64) * dt


def uniform(values: np.ndarray, name: str) -> UniformAxis:
    """``values`` fitted as a uniform axis (``well_upao.axes.fit_uniform``), refused with the fix where uneven."""
    try:
        return fit_uniform(values, np.float64, name, "the imported data")
    except UnevenAxisError as error:
        fix = " (keep an equally spaced stretch with --frames START:STOP)" if name == "time" else " (or resample it)"
        raise ImportInputError(str(error) + fix) from error


def grid(
    axes: tuple[str, ...],
    sizes: Mapping[str, int],
    coordinates: Mapping[str, Any] | None,
    spacing: Mapping[str, float] | None,
    boundaries: str | Mapping[str, str],
    sources: Sequence[FieldSource],
    dim_names: Mapping[str, str],
) -> tuple[tuple[np.ndarray, ...], tuple[str, ...]]:
    """Each axis's coordinates (float64, equally spaced) and boundary type (see the module docstring)."""
    coordinates, spacing = dict(coordinates or {}), dict(spacing or {})
    unknown = sorted((set(coordinates) | set(spacing)) - set(axes))
    if unknown:
        raise ImportInputError(f"coordinates or spacing for axis {unknown[0]!r}, which the fields lack ({axes})")
    coords = []
    for axis in axes:
        values = _axis_values(axis, sizes[axis], coordinates, spacing, sources, dim_names)
        if values.shape != (sizes[axis],):
            raise ImportInputError(
                f"axis {axis!r} has {values.shape} coordinates for {sizes[axis]} grid points: give one per point"
            )
        uniform(values, axis)
        coords.append(values)
    return tuple(coords), _boundary_types(axes, boundaries)


def _axis_values(
    axis: str,
    size: int,
    coordinates: Mapping[str, Any],
    spacing: Mapping[str, float],
    sources: Sequence[FieldSource],
    dim_names: Mapping[str, str],
) -> np.ndarray:
    """One axis's coordinates, float64: given, from its spacing, or carried by a named array."""
    if axis in coordinates:
        return np.asarray(coordinates[axis], dtype=np.float64)
    if axis in spacing:
        step = float(spacing[axis])
        if not (step > 0 and math.isfinite(step)):
            raise ImportInputError(f"spacing {axis}={step}: must be a positive number")
        return np.arange(size, dtype=np.float64) * step
    found = coordinate_of(sources, axis, dim_names)
    if found is None:
        raise ImportInputError(
            f"no coordinates for axis {axis!r}: pass --spacing {axis}=D{axis.upper()} (the distance between "
            f"grid points; Python: spacing={{{axis!r}: ...}} or coordinates=)"
        )
    return np.asarray(found, dtype=np.float64)


def _boundary_types(axes: tuple[str, ...], boundaries: str | Mapping[str, str]) -> tuple[str, ...]:
    """Each axis's boundary type as the Well writes it (``PERIODIC``, ``WALL``, ``OPEN``)."""
    if isinstance(boundaries, str):
        boundaries = dict.fromkeys(axes, boundaries)
    extra = sorted(set(boundaries) - set(axes))
    if extra:
        raise ImportInputError(f"a boundary for axis {extra[0]!r}, which the fields lack ({axes})")
    bcs = []
    for axis in axes:
        kind = str(boundaries.get(axis, "periodic")).upper()
        if kind not in BC_TYPES:
            raise ImportInputError(
                f"boundary {axis}={kind.lower()}: choose periodic, wall or open (--boundary {axis}=wall)"
            )
        bcs.append(kind)
    return tuple(bcs)
