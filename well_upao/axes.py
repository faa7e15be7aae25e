"""Steps of coordinate axes as the Well's file specification stores them: the one place ``dt`` and ``dx`` come from.

The specification stores ``dimensions/time`` and every coordinate array in float32. A spacing float32 cannot hold
exactly (0.05, the Well's shear flow's 0.1) then differs from frame to frame by rounding: each stored value is within
half a unit in the last place of the exact one, ``|t_i - (t_0 + i h)| <= eps / 2 * |t_i|`` (``eps`` = 2^-23 for
float32), so one difference ``t_1 - t_0`` can be off by ``eps * max|t|``: 1.4e-6 relative for 0.05 near t = 1, 6e-4
relative for 0.1 near t = 1000. Here an axis ``t_0 .. t_{n-1}`` is

* fitted in float64 by least squares to a uniform axis ``t_i ~ a + h i`` (``fit_uniform``), whose step ``h``
  averages the rounding out over the whole axis;
* accepted as equally spaced when no point lies further from the fitted line than
  ``MARGIN * eps(stored dtype) * max|t|`` (the rounding explains up to half of ``eps * max|t|``) or than
  ``STEP_TOLERANCE`` of a step (axes built by adding the step frame after frame drift by more than one rounding,
  harmlessly for finite differences), and refused with its largest and smallest step and where they are otherwise
  (``UnevenAxisError``); integer axes are exact;
* refused too when the stored precision cannot resolve the step (the tolerance reaches half a step).

Windows of frames as the Well's loader hands them (``input_time_grid`` / ``output_time_grid``: a few frames,
min-subtracted in float32) carry the rounding of the original values but not their magnitude:
``window_steps`` snaps each window's fitted step to a whole number of the file's step when that is known
(``UniformAxis`` of the file, from ``well_upao.data.source``), which gives the window's ``dt`` to float64
precision whatever the stride.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

#: tolerance in units of ``eps(stored dtype) * max|t|``; float32 rounding alone stays below 0.5 of it
MARGIN = 4.0
#: deviations from a uniform axis below this fraction of a step are accepted whatever the stored precision (a time
#: axis summed step by step in float32 drifts ~1e-4 of a step over 200 frames)
STEP_TOLERANCE = 1e-3


class UnevenAxisError(ValueError):
    """An axis whose points are not equally spaced at the precision the file stores them in."""


@dataclass(frozen=True)
class UniformAxis:
    """An equally spaced axis ``start + step * i``, ``i < count`` (float64), fitted to stored points; ``tolerance``
    is the largest distance from the line the stored precision explains, ``deviation`` the largest found."""

    start: float
    step: float
    count: int
    tolerance: float
    deviation: float
    #: the largest |value| of the stored points (every trajectory's, for sample-varying time): what the rounding
    #: of values handed on in float32 scales with
    magnitude: float = 0.0

    @property
    def stop(self) -> float:
        return self.start + self.step * (self.count - 1)


def _epsilon(stored_dtype) -> float:
    """The relative rounding of values stored as ``stored_dtype`` (0 for integers: they are exact)."""
    dtype = np.dtype(stored_dtype)
    if np.issubdtype(dtype, np.integer):
        return 0.0
    if not np.issubdtype(dtype, np.floating):
        raise UnevenAxisError(f"an axis is stored as numbers, not {dtype}")
    return float(np.finfo(dtype).eps)


def fit_uniform(values, stored_dtype=np.float32, name: str = "time", where: str = "") -> UniformAxis:
    """The uniform axis that fits ``values`` (1-D) by least squares in float64, checked at the precision of
    ``stored_dtype`` (see the module docstring). Raises ``UnevenAxisError`` with the largest and smallest
    step, the frames where they are and what to do."""
    points = np.asarray(values, dtype=np.float64).reshape(-1)
    place = f" of {where}" if where else ""
    if points.size < 2:
        raise UnevenAxisError(f"the {name} axis{place} has {points.size} point(s): no step to take")
    if not np.isfinite(points).all():
        raise UnevenAxisError(f"the {name} axis{place} holds non-finite values")
    index = np.arange(points.size, dtype=np.float64)
    centred = index - index.mean()
    step = float(centred @ (points - points.mean()) / (centred @ centred))
    start = float(points.mean() - step * index.mean())
    deviation = float(np.abs(points - (start + step * index)).max())
    rounding = MARGIN * _epsilon(stored_dtype) * float(np.abs(points).max())
    tolerance = max(rounding, STEP_TOLERANCE * abs(step))
    steps = np.diff(points)
    if step > 0 and rounding >= 0.5 * step:
        raise UnevenAxisError(
            f"the {name} axis{place} cannot resolve its step: {np.dtype(stored_dtype).name} values up to "
            f"{np.abs(points).max():.6g} are only exact to about {rounding:.3g}, against a step of {step:.6g}; "
            f"store the {name} in float64 or shift it to start near 0"
        )
    if step <= 0 or (steps <= 0).any():
        raise UnevenAxisError(f"the {name} axis{place} does not increase (steps from {steps.min():.6g})")
    if deviation > tolerance:
        small, large = int(steps.argmin()), int(steps.argmax())
        raise UnevenAxisError(
            f"the {name} axis{place} is not equally spaced: steps range from {steps[small]:.12g} (points {small}-"
            f"{small + 1}) to {steps[large]:.12g} (points {large}-{large + 1}); {np.dtype(stored_dtype).name} "
            f"storage and {STEP_TOLERANCE:g} of a step allow deviations from a uniform axis up to {tolerance:.3g}, "
            f"found {deviation:.3g}. "
            "Finite-difference residuals need equally spaced points: resample the data onto a uniform axis "
            "(or keep an equally spaced stretch of it)"
        )
    return UniformAxis(start, step, int(points.size), tolerance, deviation, float(np.abs(points).max()))


def uniform_step(values, stored_dtype=np.float32, name: str = "time", where: str = "") -> float:
    """The float64 step of an equally spaced axis (``fit_uniform``)."""
    return fit_uniform(values, stored_dtype, name, where).step


def window_steps(times: torch.Tensor, axis: UniformAxis | None = None) -> torch.Tensor:
    """The step of each window of frame times ``(B, T)`` (or one ``(T,)``), float64 ``(B,)``: a least-squares fit
    per window; with the file's time ``axis`` it is snapped to the nearest whole number of ``axis.step`` (the
    window's stride), refused when the window is not on that grid."""
    grid = times.detach().to(torch.float64)
    grid = grid[None] if grid.ndim == 1 else grid
    if grid.shape[-1] < 2:
        raise UnevenAxisError("a window of one frame has no time step")
    index = torch.arange(grid.shape[-1], dtype=torch.float64, device=grid.device)
    centred = index - index.mean()
    steps = ((grid - grid.mean(-1, keepdim=True)) * centred).sum(-1) / (centred @ centred)
    if axis is None:
        return steps
    strides = torch.round(steps / axis.step)
    # each window value carries the rounding of the file (axis.tolerance) and of the loader's float32 tensors
    # (float32's, at the axis's magnitude); a fitted step is off by at most twice that
    loader = MARGIN * _epsilon(np.float32) * max(axis.magnitude, abs(axis.start), abs(axis.stop))
    off = (steps - strides * axis.step).abs()
    if (strides < 1).any() or (off > 2 * max(axis.tolerance, loader)).any():
        worst = int(off.argmax())
        raise UnevenAxisError(
            f"a window's time step {float(steps[worst]):.9g} is not a whole number of the file's step "
            f"{axis.step:.9g}: its frames are not on the file's time axis"
        )
    return strides * axis.step
