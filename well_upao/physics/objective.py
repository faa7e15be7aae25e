"""The UPAO objective: boundary-band loss plus normalised PDE residual (paper eqs. for L_BC, L_PDE, L).

For each sample and each predicted frame (the model's shifted prediction ``u^_{tau+1}``, tau = 0..T-1):

    L_BC  = sqrt( 1/|S_b| sum_{x in S_b} sum_c (u^_{tau+1} - u*_{tau+1})^2 )          (active channels c)
    L_PDE = sqrt( 1/K sum_k 1/(s_k^2 |S_p|) sum_{x in S_p} R_k(u_tau, u^_{tau+1})^2 )
    L     = lambda_BC * L_BC + L_PDE

averaged over frames and samples. ``S_b`` is the band of width 1 on every face of the grid, ``S_p`` the rest.
A time scheme over ``s`` steps (``well_upao.physics.residual.TimeScheme``) reads the observed frame ``u_{tau+1-s}``
too: with the ``central`` scheme (``s = 2``), ``R_k(u_{tau-1}, u_tau, u^_{tau+1})`` for tau >= 1 and, where no
observed frame lies that far back, the scheme's fallback (Crank-Nicolson for tau = 0). ``s_k^2`` is the mean
square of ``R_k`` over the input window (every run of the scheme's consecutive observed frames: pairs, or triples
for ``central``), floored at ``(floor_rel * scale_k)^2`` where ``scale_k`` is the rms size of the equation's terms:
on exact data ``s_k`` is only the discretisation error and could be ~0.
Strategies (paper table "normalization strategy"):

* ``norm``: as above, ``lambda_BC = 1e4``;
* ``rescaled_norm``: as above, ``lambda_BC = 1e4 / min_k s_k^2`` (per sample);
* ``no_norm``: ``s_k = 1``, ``lambda_BC = 1e4``.

The band references ``u*_{tau+1}`` come from the observed inputs for ``tau < T-1`` and, for the last frame,
from the *band only* of the next frame (``band_values``): interior ground truth never enters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import torch

from well_upao.data.slot_inventory import N_SLOTS, SLOT_INDEX
from well_upao.physics.bound import BoundResidual
from well_upao.physics.discretisation import DEFAULT_DERIVATIVE, DEFAULT_SCHEME, Physics
from well_upao.physics.pdes import PDE
from well_upao.physics.residual import frames, slot_fields, time_scheme
from well_upao.physics.stencils import Grid, boundary_band_mask, interior_mean_square
from well_upao.tensor_cache import cached_tensors

STRATEGIES = ("norm", "rescaled_norm", "no_norm")


@cached_tensors(maxsize=32)
def band_index(shape: tuple[int, ...], width: int = 1) -> torch.Tensor:
    """Flat indices of the band ``S_b`` in a C-ordered grid of ``shape``."""
    return torch.nonzero(boundary_band_mask(shape, width).flatten()).flatten()


def band_values(frame: torch.Tensor, dims: int, width: int = 1) -> torch.Tensor:
    """Only the band of ``frame`` ``(B, *space, C)`` -> ``(B, n_band, C)`` (a gather: interior never read)."""
    space = tuple(frame.shape[1 : 1 + dims])
    flat = frame.reshape(frame.shape[0], -1, frame.shape[-1])
    return flat[:, band_index(space, width).to(frame.device)]


@dataclass
class UpaoTerms:
    total: torch.Tensor
    boundary: torch.Tensor  # L_BC, mean over samples and frames
    residual: torch.Tensor  # L_PDE, mean over samples and frames
    lambda_bc: torch.Tensor  # effective weight per sample
    per_frame: torch.Tensor | None = None  # lambda_BC L_BC + L_PDE per sample and predicted frame (B, T)
    s2: dict[str, torch.Tensor] = field(default_factory=dict)  # per sub-equation, per sample
    residual_mse: dict[str, torch.Tensor] = field(default_factory=dict)  # un-normalised, mean


@dataclass
class UpaoObjective:
    pde: PDE
    lambda_bc: float = 1e4
    normalization: str = "norm"
    scheme: str = DEFAULT_SCHEME
    derivative: str = DEFAULT_DERIVATIVE
    floor_rel: float = 1e-4
    floor_abs: float = 1e-30
    band_width: int = 1
    constants: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.normalization not in STRATEGIES:
            raise ValueError(f"normalization must be one of {STRATEGIES}, got {self.normalization!r}")
        time_scheme(self.scheme)  # a name the table knows (the error names the known ones)

    @classmethod
    def of(cls, physics: Physics, **settings) -> UpaoObjective:
        """The objective on a resolved ``physics`` (its PDE, constants, derivative and scheme; ``settings``: the
        weights and the normalisation)."""
        return cls(
            physics.pde,
            scheme=physics.scheme,
            derivative=physics.derivative,
            constants=dict(physics.constants),
            **settings,
        )

    def check_slots(self, active_slots: Sequence[int]) -> None:
        missing = [v for v in self.pde.variables if SLOT_INDEX[v] not in set(active_slots)]
        if missing:
            raise ValueError(f"PDE {self.pde.name!r} needs slots {missing} that the dataset does not provide")

    def bind(self, grid: Grid, scalars: Mapping[str, torch.Tensor]) -> BoundResidual:
        """The objective's residual on a batch's ``grid`` with its ``scalars`` (built once per batch)."""
        return BoundResidual.of(self.pde, grid, self.derivative, self.scheme, scalars, self.constants, self.band_width)

    def residual_mean_squares(self, old, new, dt, bound: BoundResidual) -> dict[str, torch.Tensor]:
        """Mean over S_p of R_k^2 per sample and frame: ``{k: (B, T)}``. A scheme over ``s`` steps (central:
        2) needs the ``s - 1`` observed frames before ``old``: the first ``s - 1`` predicted frames, which lack them,
        use the scheme it falls back to (``TimeScheme.within``; central: Crank-Nicolson for the first)."""
        dims, width, scheme = bound.dims, self.band_width, bound.scheme
        steps = next(iter(old.values())).shape[1]
        parts = []
        for tau in range(min(scheme.span - 1, steps)):  # too few observed frames before: the fallback
            early = bound.with_scheme(scheme.within(tau + 2))
            step = early.scheme.step_sets(frames(old, 0, tau + 1), frames(new, tau, tau + 1))
            parts.append(early.residuals(step[0], step[1], dt, step[2]))
        if steps >= scheme.span:
            later_old, later_new, older = scheme.shifted_sets(old, new)
            parts.append(bound.residuals(later_old, later_new, dt, older))
        squares = [{k: interior_mean_square(r, dims, width) for k, r in part.items()} for part in parts]
        if len(squares) == 1:
            return squares[0]
        return {k: torch.cat([part[k] for part in squares], 1) for k in squares[0]}

    def __call__(
        self,
        prediction: torch.Tensor,
        inputs: torch.Tensor,
        next_band: torch.Tensor,
        dt: torch.Tensor,
        bound: BoundResidual,
        mask: torch.Tensor,
        window: torch.Tensor | None = None,
    ) -> UpaoTerms:
        """``prediction``/``inputs``: ``(B, T, *space, 18)`` physical; ``next_band``: ``(B, n_band, 18)``;
        ``dt``: ``(B,)``; ``bound``: the residual on the batch's grid with its parameters (``bind``);
        ``mask``: ``(18,)`` active slots.
        ``next_band`` may also be ``(B, K, n_band, 18)``, the bands of the ``K`` frames after the history (a
        rollout, ``trainers/rollout.py``): they are the band references of the last ``K`` predicted frames, the
        observed inputs those of the frames before.
        ``window``: the observed history ``s_k`` is computed on (default ``inputs``; a one-frame model predicts only
        the frame after the last input, so it passes ``inputs = history[:, -1:]`` and ``window = history``)."""
        dims = bound.dims
        batch, steps = inputs.shape[:2]
        channel_mask = mask.to(prediction.dtype).view(*([1] * 3), N_SLOTS)

        # boundary band: references are the observed later inputs and the bands of the frames after the history
        predicted_band = band_values(prediction.flatten(0, 1), dims, self.band_width).unflatten(0, (batch, steps))
        reference_band = next_band[:, None] if next_band.dim() == 3 else next_band
        observed_steps = steps - reference_band.shape[1]
        if observed_steps > 0:
            observed = band_values(inputs[:, 1 : 1 + observed_steps].flatten(0, 1), dims, self.band_width)
            reference_band = torch.cat([observed.unflatten(0, (batch, observed_steps)), reference_band], 1)
        band_error = ((predicted_band - reference_band) ** 2 * channel_mask).sum(-1).mean(-1)  # (B, T)
        l_bc = torch.sqrt(band_error + 1e-30)

        old = slot_fields(inputs, self.pde.variables)
        new = slot_fields(prediction, self.pde.variables)
        mean_squares = self.residual_mean_squares(old, new, dt, bound)

        s2 = self.input_window_scales(inputs if window is None else window, dt, bound)
        normalized = torch.stack([mean_squares[k] / s2[k][:, None] for k in mean_squares]).mean(0)
        l_pde = torch.sqrt(normalized + 1e-30)  # (B, T)
        if self.normalization == "rescaled_norm":
            lambda_bc = self.lambda_bc / torch.stack(list(s2.values())).min(0).values
        else:
            lambda_bc = torch.full((batch,), float(self.lambda_bc), device=inputs.device, dtype=inputs.dtype)
        per_frame = lambda_bc[:, None] * l_bc + l_pde
        return UpaoTerms(
            total=per_frame.mean(),
            per_frame=per_frame,
            boundary=l_bc.mean(),
            residual=l_pde.mean(),
            lambda_bc=lambda_bc,
            s2=s2,
            residual_mse={k: v.mean() for k, v in mean_squares.items()},
        )

    @torch.no_grad()
    def input_window_scales(self, inputs, dt, bound: BoundResidual) -> dict[str, torch.Tensor]:
        """``s_k^2`` per sample from the observed window (floored), or ones for ``no_norm``."""
        batch, dims = inputs.shape[0], bound.dims
        names = [e.name for e in self.pde.equations]
        if self.normalization == "no_norm":
            return {k: torch.ones(batch, device=inputs.device, dtype=inputs.dtype) for k in names}
        if inputs.shape[1] < 2:
            raise ValueError(f"{self.normalization!r} needs at least 2 history frames to compute s_k")
        fields = slot_fields(inputs, self.pde.variables)
        window = bound.with_scheme(bound.scheme.within(inputs.shape[1]))  # central: triples, pairs from 2 frames
        old, new, older = window.scheme.frame_sets(fields)
        residuals, scales = window.residuals_and_scales(old, new, dt, older)
        out = {}
        for k in names:
            mean_square = interior_mean_square(residuals[k], dims, self.band_width).mean(-1)
            scale2 = interior_mean_square(scales[k], dims, self.band_width).mean(-1)
            floor = torch.clamp(self.floor_rel**2 * scale2, min=self.floor_abs)
            out[k] = torch.maximum(mean_square, floor)
        return out
