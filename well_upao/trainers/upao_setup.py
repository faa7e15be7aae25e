"""The UPAO loss on a run: one frozen setup that the objective and the validation read.

[`UpaoSetup.of`][well_upao.trainers.upao_setup.UpaoSetup.of] holds, decided once from the run (its data, model and
settings, ``trainers.run_context.RunContext``), the physics of the training frames
(``well_upao.physics.discretisation.physics_of``, which the UPAO trainer asks when it composes the run) and what the
user asked of the objective (``ObjectiveRequest``): the objective on that physics, the model's slots and whether it
predicts one frame, the history, the rollout, the units the model works in and the training files' time axis. The
setup then turns a batch into what the objective reads
([`prepared`][well_upao.trainers.upao_setup.UpaoSetup.prepared]: the model's predictions, the history, the *bands*
only of the frames after it, the batch's bound residual) and into the objective's terms
([`terms_of`][well_upao.trainers.upao_setup.UpaoSetup.terms_of]); nothing in it changes after.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from well_upao.axes import UniformAxis
from well_upao.harness.normalization import ModelSpace, model_space_of
from well_upao.harness.samples import batch_dt, batch_grid, into_slots, named_scalars, one_frame_prediction, slots_mask
from well_upao.models.kinds import is_sequence_model
from well_upao.physics.bound import BoundResidual
from well_upao.physics.discretisation import Physics
from well_upao.physics.objective import UpaoObjective, UpaoTerms, band_values
from well_upao.trainers.rollout import RolloutSettings, roll_out, weighted_steps
from well_upao.trainers.run_context import RunContext

#: the objective's settings where neither the run's config nor the dataset's registry entry gives one
OBJECTIVE_DEFAULTS: dict[str, Any] = dict(lambda_bc=1e4, normalization="norm")


@dataclass(frozen=True)
class ObjectiveRequest:
    """What the user asked of the UPAO objective beside its physics (``trainer.*``; ``None``: the dataset's default,
    its registry entry, else ``OBJECTIVE_DEFAULTS``): ``lambda_bc``, ``normalization``, ``floor_rel``."""

    lambda_bc: float | None = None
    normalization: str | None = None
    floor_rel: float = 1e-4


@dataclass
class PreparedBatch:
    """A batch as the objective and the scorecard read it (physical units, 18 slots)."""

    prediction: torch.Tensor  # (B, T, *space, 18): shifted predictions (one-frame models: (B, 1, ...))
    inputs: torch.Tensor  # what the residual pairs the predictions with
    history: torch.Tensor  # (B, T, *space, 18): the observed window
    window: torch.Tensor | None  # the window s_k is computed on when it is not ``inputs``
    next_band: torch.Tensor
    dt: torch.Tensor
    #: the run's residual on the batch's grid with its parameters (``Physics.bind``, built once per batch)
    bound: BoundResidual


@dataclass(frozen=True)
class UpaoSetup:
    """The UPAO loss attached to a run (see the module docstring). ``physics``: the run's physics (its checkpoints
    store it, evaluate reuses it); ``objective``: the UPAO objective on it; ``channel_slots``: the slots of the
    model's channels (a harness model's are the dataset's, in the Well's layout; a backbone says which it fills);
    ``one_frame``: a one-frame model of the Well's harness (its residual joins the last input frame and its
    prediction); ``history``: the frames before each target; ``rollout``: the rollout the objective, the validation
    and the scorecard follow; ``space``: the units the model works in; ``time_axis``: the training files' (each
    batch's dt is a whole number of its float64 step, ``well_upao.axes``); ``scalar_names``: the names of a batch's
    constant scalars; ``device``, ``dims`` (spatial axes) and ``formatter`` (how a one-frame model reads its
    inputs); ``lambda_bc`` and ``normalization``: the objective's settings as resolved, as given."""

    physics: Physics
    objective: UpaoObjective
    channel_slots: tuple[int, ...]
    one_frame: bool
    history: int
    rollout: RolloutSettings
    space: ModelSpace
    time_axis: UniformAxis | None
    scalar_names: tuple[str, ...]
    device: torch.device
    dims: int
    formatter: str
    lambda_bc: Any
    normalization: str

    @classmethod
    def of(cls, run: RunContext, physics: Physics, request: ObjectiveRequest) -> UpaoSetup:
        """The setup on ``run`` of its ``physics`` (on its training frames, ``physics_of``) and the objective
        ``request`` asks for (the slots the PDE needs checked)."""
        source = run.datamodule.source
        defaults = {key: source.defaults.get(key, value) for key, value in OBJECTIVE_DEFAULTS.items()}
        lambda_bc = request.lambda_bc if request.lambda_bc is not None else defaults["lambda_bc"]
        normalization = request.normalization if request.normalization is not None else defaults["normalization"]
        objective = UpaoObjective.of(
            physics, lambda_bc=float(lambda_bc), normalization=normalization, floor_rel=float(request.floor_rel)
        )
        model = run.bare_model
        one_frame = not is_sequence_model(model)
        slots = tuple(source.channel_slots if one_frame else model.channel_slots)
        objective.check_slots(slots)
        return cls(
            physics,
            objective,
            slots,
            one_frame,
            run.history,
            run.rollout,
            model_space_of(run.datamodule.train_dataset),
            source.layout.time_axis,
            tuple(run.metadata.constant_scalar_names),
            run.device,
            run.metadata.n_spatial_dims,
            run.formatter_name,
            lambda_bc,
            normalization,
        )

    @property
    def settings(self) -> dict[str, Any]:
        """The run's UPAO settings as resolved (``auto`` replaced by its choice): ``lambda_bc``, ``normalization``,
        ``time_scheme``, ``derivative`` (the checkpoint's ``train.upao``, ``upao_<setting>`` in ``metrics.jsonl``)."""
        physics = self.physics
        return dict(
            lambda_bc=self.lambda_bc,
            normalization=self.normalization,
            time_scheme=physics.scheme,
            derivative=physics.derivative,
        )

    # ------------------------------------------------------------------ the objective on a batch
    def prepared(
        self,
        batch: Mapping[str, torch.Tensor],
        model: torch.nn.Module,
        normalized: bool = True,
        train: bool = False,
        bound: BoundResidual | None = None,
    ) -> PreparedBatch:
        """``model``'s predictions on a batch and what the objective reads beside them, in physical units: the
        history, the *bands* only of the frames after it, and the sample's metadata. With
        ``trainer.rollout_steps=K > 1`` the model is rolled out ``K`` steps
        ([`rolled_out`][well_upao.trainers.upao_setup.UpaoSetup.rolled_out]); ``train``: the rollout's training
        options apply (noise on fed-back frames); ``bound``: the batch's residual when it is already built.

        ``normalized``: whether the batch comes normalised (a training batch of a run with
        ``data.use_normalization=true``; validation batches are raw, as the Well serves them). The model is fed
        the units it trains in (``space``); the residual and the band loss are always in physical units."""
        device, steps = self.device, self.rollout.steps
        given = batch["input_fields"].to(device)
        physical, model_inputs = (
            (self.space.to_physical(given), given) if normalized else (given, self.space.to_model(given))
        )
        # the only access to the frames after the history: gather their boundary band by index
        after = batch["output_fields"][:, :steps].to(device)
        bands = band_values(after.flatten(0, 1), self.dims, self.objective.band_width).unflatten(0, after.shape[:2])
        bands = into_slots(self.space.to_physical(bands) if normalized else bands, self.channel_slots)
        next_band = bands[:, 0] if steps == 1 else bands
        history = into_slots(physical, self.channel_slots)
        constants = batch.get("constant_fields")  # the Well's formatters append them to the frames
        if self.one_frame and constants is not None:
            constants = constants.to(device) if normalized else self.space.constants_to_model(constants.to(device))
        prediction, window, inputs = self.predicted(model, model_inputs, history, constants, train)
        if bound is None:
            scalars = named_scalars(batch.get("constant_scalars"), list(self.scalar_names))
            scalars = {name: value.to(device, torch.float32) for name, value in scalars.items()}
            bound = self.physics.bind(batch_grid(batch), scalars, self.objective.band_width)
        dt = batch_dt(batch, self.time_axis).to(device, torch.float32)
        return PreparedBatch(prediction, inputs, history, window, next_band, dt, bound)

    def predicted(self, model, model_inputs, history, constants, train: bool):
        """``(prediction, window, inputs)`` in physical units and slots: the model's predictions, the window ``s_k``
        is computed on (``None``: ``inputs``) and the frames the residual pairs the predictions with. A rollout
        pairs the fed-back frames; a one-frame model's frame after the last input pairs with that input."""
        slots, physical = list(self.channel_slots), self.space.to_physical
        if self.rollout.steps > 1:
            prediction, fed = self.rolled_out(model, model_inputs, constants, train)
            inputs = torch.cat([history[:, -1:] if self.one_frame else history, into_slots(physical(fed), slots)], 1)
            return into_slots(physical(prediction), slots), history, inputs
        if self.one_frame:
            predicted = one_frame_prediction(model, model_inputs, self.formatter, constants)
            return into_slots(physical(predicted), slots)[:, None], history, history[:, -1:]
        predicted = physical(model(into_slots(model_inputs, slots), sequence=True)[..., slots])
        return into_slots(predicted, slots), None, history

    def rolled_out(self, model, history: torch.Tensor, constants: torch.Tensor | None, train: bool):
        """The run's ``K``-step rollout of ``model`` from ``history`` (``trainers.rollout.roll_out``)."""
        formatter = self.formatter if self.one_frame else None
        return roll_out(model, history, constants, self.rollout, list(self.channel_slots), formatter, train)

    def terms_of(self, p: PreparedBatch) -> UpaoTerms:
        """The objective on a prepared batch; over a rollout, ``total`` weights its steps
        (``well_upao.trainers.rollout.weighted_steps``): step 1 holds every term of the true window (a backbone's
        shifted predictions), each later step its new frame's."""
        mask = slots_mask(list(self.channel_slots), self.device)
        terms = self.objective(p.prediction, p.inputs, p.next_band, p.dt, p.bound, mask, window=p.window)
        if not self.rollout.one_step:
            first = p.prediction.shape[1] - (self.rollout.steps - 1)
            per_frame = terms.per_frame
            step_terms = [per_frame[:, :first]] + [per_frame[:, k : k + 1] for k in range(first, per_frame.shape[1])]
            terms.total = weighted_steps(step_terms, self.rollout)
        return terms
