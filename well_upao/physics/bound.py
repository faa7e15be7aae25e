"""A bound residual: one PDE with its resolved parameters, its stencils and its time scheme, built once per batch or
trajectory, with the residual, the floor and the scorecard as its methods.

The pieces a residual needs used to travel as separate arguments (``pde, params, ops, scheme, dims``) through every
function that evaluates one; they belong together and are decided together (``well_upao.physics.discretisation``
chooses the derivative and the scheme, the sample's scalars and the run's constants give the parameters, the grid
the stencils, the scheme's name its ``TimeScheme``, ``well_upao.physics.residual``). Build it with
[`BoundResidual.of`][well_upao.physics.bound.BoundResidual.of] (the only place that constructs its ``Stencils`` and
resolves its parameters), evaluate with its methods:

* ``residuals`` / ``residuals_and_scales``: ``R_k`` and the term sizes ``|d_t Q_k| + sum_i |N_k,i|``
  between frame sets (``well_upao.physics.residual``);
* ``relative``: ``rho = mean_k ||R_k|| / ||scale_k||`` over the interior, per sample;
* ``floor``: ``rho_obs`` of an observed window (every run of the scheme's ``frames`` consecutive frames: pairs,
  triples for ``central``; ``TimeScheme.within`` where the window is shorter);
* ``prediction_residual``: ``rho(u_{T-1} -> p)``;
* ``scorecard`` / ``rollout_scorecard``: the label-free scorecard (its scores are defined in
  ``well_upao.physics.scores``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

import torch

from well_upao.physics.pdes import PDE, Fields
from well_upao.physics.residual import TimeScheme, frames, residuals_and_scales, slot_fields, time_scheme
from well_upao.physics.scores import relative_change
from well_upao.physics.stencils import Grid, Stencils, interior_mean_square


@dataclass(frozen=True)
class BoundResidual:
    """``pde`` with ``params`` (resolved: per-sample ``(B,)`` tensors or floats), ``ops`` (the grid's stencils with
    the chosen derivative) and the time ``scheme`` (given by name or as a ``TimeScheme``, held as the
    ``TimeScheme``: the one place a scheme's name is resolved, ``time_scheme``); ``band_width``: the band ``S_b``
    every interior norm leaves out."""

    pde: PDE
    params: Mapping[str, torch.Tensor | float]
    ops: Stencils
    scheme: TimeScheme
    band_width: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "scheme", time_scheme(self.scheme))

    @classmethod
    def of(
        cls,
        pde: PDE,
        grid: Grid,
        derivative: str,
        scheme: TimeScheme | str,
        scalars: Mapping[str, torch.Tensor],
        constants: Mapping[str, float] = (),
        band_width: int = 1,
    ) -> BoundResidual:
        """Bind ``pde`` to a sample's ``scalars`` (its ``/scalars``, ``(B,)`` each) and ``constants`` (fixed or fitted
        coefficients over the PDE's own), on ``grid`` with ``derivative`` and ``scheme``."""
        params = pde.resolve_parameters(scalars, constants)
        return cls(pde, params, Stencils(grid, derivative), scheme, band_width)

    @property
    def dims(self) -> int:
        return self.ops.grid.dims

    @property
    def derivative(self) -> str:
        return self.ops.derivative

    def with_scheme(self, scheme: TimeScheme | str) -> BoundResidual:
        scheme = time_scheme(scheme)
        return self if scheme == self.scheme else dataclasses.replace(self, scheme=scheme)

    def in_double(self) -> BoundResidual:
        """The same residual with floating-point parameters in float64 (the scorecard's precision)."""
        params = {k: v.double() if isinstance(v, torch.Tensor) else v for k, v in self.params.items()}
        return dataclasses.replace(self, params=params)

    # ------------------------------------------------------------------ residuals
    def residuals_and_scales(
        self, old: Fields, new: Fields, dt, older: Fields | None = None, with_scales: bool = True
    ) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        """``R_k`` and (``with_scales``) the term sizes between ``old`` and ``new`` (fields ``(B, T, *space)``) a ``dt``
        apart; ``older``: the frames ``span`` steps before ``new`` (a scheme over more than one step, e.g. central)."""
        return residuals_and_scales(self.pde, old, new, dt, self.params, self.ops, self.scheme, with_scales, older)

    def residuals(self, old: Fields, new: Fields, dt, older: Fields | None = None) -> dict[str, torch.Tensor]:
        return self.residuals_and_scales(old, new, dt, older, with_scales=False)[0]

    def relative(self, old: Fields, new: Fields, dt, older: Fields | None = None) -> torch.Tensor:
        """``rho`` per sample: ``mean_k ||R_k|| / ||scale_k||`` over the interior of all the frame pairs given;
        ``(B,)``."""
        residuals, scales = self.residuals_and_scales(old, new, dt, older)
        ratios = []
        for k in residuals:
            top = interior_mean_square(residuals[k].double(), self.dims, self.band_width).sum(1)
            bottom = interior_mean_square(scales[k].double(), self.dims, self.band_width).sum(1)
            ratios.append(torch.sqrt(top / bottom.clamp_min(1e-300)))
        return torch.stack(ratios).mean(0)

    def floor(self, window: Fields, dt) -> torch.Tensor:
        """``rho_obs`` per sample from an observed window (``TimeScheme.frame_sets``: pairs; triples for
        ``central``, which needs 3 frames and otherwise falls back to Crank-Nicolson, ``TimeScheme.within``);
        ``(B,)``."""
        steps = next(iter(window.values())).shape[1]
        if steps < 2:
            raise ValueError("the residual floor of a window needs at least 2 observed frames")
        bound = self.with_scheme(self.scheme.within(steps))
        old, new, older = bound.scheme.frame_sets(window)
        return bound.relative(old, new, dt, older)

    def prediction_residual(self, window: Fields, prediction: Fields, dt) -> torch.Tensor:
        """``rho(u_{T-1} -> p)`` per sample (``prediction``: fields ``(B, *space)``; ``TimeScheme.step_sets``, the
        central scheme reading ``u_{T-2}`` too where the window has it, else its fallback); ``(B,)``."""
        new = {k: v[:, None] for k, v in prediction.items()}
        bound = self.with_scheme(self.scheme.within(next(iter(window.values())).shape[1] + 1))
        old, new, older = bound.scheme.step_sets(window, new)
        return bound.relative(old, new, dt, older)

    # ------------------------------------------------------------------ the scorecard
    def scorecard(self, window, prediction, dt, reference=None, backtest=None) -> dict[str, torch.Tensor]:
        """Per-sample scores (``well_upao.physics.scores``) from 18-slot tensors in physical units: ``window``
        ``(B, T, *space, 18)`` the observed history, ``prediction`` ``(B, *space, 18)`` the predicted next frame,
        ``reference`` the reference prediction of the same frame (departure), ``backtest`` the prediction of the last
        observed frame from the frames before it. Returns ``{name: (B,)}`` for the scores that could be computed: the
        one-step rollout's card ([`rollout_scorecard`][well_upao.physics.bound.BoundResidual.rollout_scorecard],
        ``K = 1``)."""
        reference = None if reference is None else reference[:, None]
        out = self.rollout_scorecard(window, prediction[:, None], dt, reference, backtest)
        del out["residual_ratio_step1"]  # the one step's ratio is residual_ratio itself
        return out

    def rollout_scorecard(self, window, rollout, dt, reference=None, backtest=None) -> dict[str, torch.Tensor]:
        """The scorecard of a ``K``-step rollout ``p_1 .. p_K`` (``rollout`` ``(B, K, *space, 18)``) from the observed
        ``window`` ``u_0 .. u_{T-1}``, in the units of [`scorecard`][well_upao.physics.bound.BoundResidual.scorecard]
        (which it equals for ``K = 1``):

        * ``residual_ratio = mean_k rho(p_{k-1} -> p_k) / rho_obs`` with ``p_0 = u_{T-1}`` (the central scheme reads
          the frame before each pair from the rollout too); ``residual_ratio_step<k>``: each step's ratio;
        * ``departure = mean_v ||p_K - r_K|| / ||r_K - r_{K-1}||`` with ``reference`` ``r_1 .. r_K`` the reference's
          rollout of the same window and ``r_0 = u_{T-1}``: how far the last frame moved from the reference's, in
          units of the reference's last step;
        * ``backtest = mean_v ||q - u_{T-1}|| / ||u_{T-1} - u_{T-2}||`` with ``backtest`` ``q`` the last frame of a
          ``K``-step rollout that ends on the observed ``u_{T-1}`` (started from ``u_0 .. u_{T-1-K}``)."""
        variables = self.pde.variables
        fields = slot_fields(window.double(), variables)
        series = slot_fields(torch.cat([window, rollout], 1).double(), variables)
        steps, observed = rollout.shape[1], window.shape[1]
        floor = self.floor(fields, dt)
        out: dict[str, torch.Tensor] = {"floor": floor}
        ratios = []
        for k in range(steps):
            new = {name: v[:, observed + k] for name, v in series.items()}
            ratios.append(self.prediction_residual(frames(series, 0, observed + k), new, dt) / floor.clamp_min(1e-300))
            out[f"residual_ratio_step{k + 1}"] = ratios[-1]
        out["residual_ratio"] = torch.stack(ratios).mean(0)
        last = {k: v[:, -1] for k, v in fields.items()}
        final = {k: v[:, -1] for k, v in series.items()}
        if reference is not None:
            ref = slot_fields(reference.double(), variables)
            ref_last = {k: v[:, -1] for k, v in ref.items()}
            ref_before = last if steps == 1 else {k: v[:, -2] for k, v in ref.items()}
            out["departure"] = relative_change(final, ref_last, ref_before)
        if backtest is not None and observed >= 2:
            guess = slot_fields(backtest.double(), variables)
            out["backtest"] = relative_change(guess, last, {k: v[:, -2] for k, v in fields.items()})
        return out
