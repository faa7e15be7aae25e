"""``trainer=upao``: unsupervised adaptation from the PDE residual and the boundary band (paper section 3.3).

Training never reads interior ground truth: the loss sees the observed history (the "windows" regime of
INTERFACES.md section 5), the model's shifted predictions, and only the boundary band of the next frame,
gathered by index before any other use of it. Model selection (``best.pt``), early stopping and the LoRA ->
NSLoRA switch use the validation UPAO loss (label-free) unless ``paper_protocol=true`` (then the paper's
VRMSE). VRMSE under both definitions is still computed on the validation split and logged, labelled.

``lambda_bc``, ``normalization``, ``time_scheme`` and ``derivative`` left ``null`` take the dataset's defaults
(its registry entry, ``well_upao.data.datasets``), else ``UPAO_DEFAULTS``.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from well_upao.axes import UniformAxis
from well_upao.harness.normalization import trainer_model_space
from well_upao.harness.samples import (
    batch_dt,
    batch_grid,
    into_slots,
    named_scalars,
    one_frame_prediction,
    slots_mask,
)
from well_upao.harness.well_trainer import trainer_argument
from well_upao.models.kinds import is_sequence_model
from well_upao.physics.bound import BoundResidual
from well_upao.physics.discretisation import (
    DEFAULT_DERIVATIVE,
    DEFAULT_SCHEME,
    FIT_ALL,
    TRAINING_SAMPLE,
    PhysicsRequest,
    physics_of,
)
from well_upao.physics.objective import UpaoObjective, UpaoTerms, band_values
from well_upao.physics.scores import Scorecard
from well_upao.trainers.guard import Guard, GuardSettings
from well_upao.trainers.loop import Trainer
from well_upao.trainers.rollout import RolloutSettings, roll_out, weighted_steps
from well_upao.trainers.training_loss import TrainingLoss
from well_upao.trainers.upao_validation import UpaoValidation

logger = logging.getLogger(__name__)

#: settings used where neither the run's config nor the dataset's registry entry gives one
UPAO_DEFAULTS: dict[str, Any] = dict(
    lambda_bc=1e4, normalization="norm", time_scheme=DEFAULT_SCHEME, derivative=DEFAULT_DERIVATIVE
)


#: why a run records no floors (``upao_floors_reason``): its discretisation needed no choice
FIXED_DISCRETISATION = "derivative and time_scheme are fixed (not auto): no floor table was needed to choose"


@dataclass
class PreparedBatch:
    """A batch as the objective and the scorecard read it (physical units, 18 slots)."""

    prediction: torch.Tensor  # (B, T, *space, 18): shifted predictions (one-frame models: (B, 1, ...))
    inputs: torch.Tensor  # what the residual pairs the predictions with
    history: torch.Tensor  # (B, T, *space, 18): the observed window
    window: torch.Tensor | None  # the window s_k is computed on when it is not ``inputs``
    next_band: torch.Tensor
    dt: torch.Tensor
    #: the objective's residual on the batch's grid with its parameters (built once per batch)
    bound: BoundResidual


class UpaoLoss(TrainingLoss):
    """The UPAO objective on a batch, and the label-free validation criterion.

    Arguments: ``pde`` (registry name; default: the dataset's), ``lambda_bc``, ``normalization``
    (``rescaled_norm`` | ``norm`` | ``no_norm``), ``time_scheme`` (``crank_nicolson`` | ``explicit`` |
    ``implicit`` | ``central`` | ``auto``), ``derivative`` (``fd`` | ``fd4`` | ``spectral`` | ``auto``; ``auto``:
    the lowest residual floor of the training frames; ``well_upao.physics.discretisation.resolve`` decides, and the
    run's checkpoints store its answer), ``floor_rel``, ``pde_constants`` (fixed coefficients, or ``fitted``: the
    PDE's constants fitted by least squares to the training frames, jointly with an ``auto`` discretisation),
    ``paper_protocol`` (select by VRMSE), ``vrmse_trajectories`` (the first trajectories of the validation split,
    the paper's VRMSE of every validation is over them), ``rollout_vrmse_steps`` (each of them is also rolled out that
    many steps, as far as it holds, for the Well's windows ``valid_rollout_VRMSE_6:12`` / ``_13:30``; 0: off). User
    PDEs come from the modules in the data config's ``imports``. The selection scores every candidate on the same
    validation batches and trajectories: the last validation is short like the others
    (``selects_on_the_same_batches``).

    Every validation also logs the label-free scorecard (``well_upao.physics.scores``) as ``valid_score_floor``,
    ``valid_score_residual_ratio``, ``valid_score_departure`` (from the starting model's predictions) and
    ``valid_score_backtest``. ``guard`` (default on): the selection refuses a candidate the scorecard finds worse
    than the start ([`well_upao.trainers.guard.guard_decision`][well_upao.trainers.guard.guard_decision], thresholds
    ``guard_floor_tolerance``, ``guard_departure_limit``, ``guard_backtest_tolerance``); it needs
    ``trainer.validate_start`` (the start's card).
    """

    selects_on_the_same_batches = True

    def __init__(
        self,
        pde: str | None = None,
        lambda_bc: float | None = None,
        normalization: str | None = None,
        time_scheme: str | None = None,
        derivative: str | None = None,
        floor_rel: float = 1e-4,
        pde_constants: Mapping[str, float] | str | None = None,
        paper_protocol: bool = False,
        vrmse_trajectories: int = 2,
        rollout_vrmse_steps: int = 30,
        guard: bool = True,
        guard_floor_tolerance: float = GuardSettings.floor_tolerance,
        guard_departure_limit: float = GuardSettings.departure_limit,
        guard_backtest_tolerance: float = GuardSettings.backtest_tolerance,
        prior_candidate: bool = True,
        trust_window: str = "one_step",
    ):
        self.pde_name = pde
        self.requested = dict(
            lambda_bc=lambda_bc, normalization=normalization, time_scheme=time_scheme, derivative=derivative
        )
        self.floor_rel = float(floor_rel)
        if isinstance(pde_constants, str) and pde_constants != "fitted":
            raise ValueError(f"pde_constants must be a mapping or 'fitted', got {pde_constants!r}")
        self.pde_constants = pde_constants if pde_constants == "fitted" else dict(pde_constants or {})
        self.paper_protocol = bool(paper_protocol)
        if int(rollout_vrmse_steps) < 0:
            raise ValueError(f"trainer.rollout_vrmse_steps must be >= 0, got {rollout_vrmse_steps}")
        #: what ``bind`` gives the validation (``trainers/upao_validation.py``): the prior candidate (score the
        #: classical priors, keep the best for the trust window when the selected candidate backtests worse than
        #: it) and the labelled record's trajectories and rollout length
        self.validation_settings = (bool(prior_candidate), int(vrmse_trajectories), int(rollout_vrmse_steps))
        #: the training files' time axis (``bind``): batches' dt are whole numbers of its step
        self.time_axis: UniformAxis | None = None
        #: the label-free judge of the selection: the guard (``trainer.guard``) and the prior rule
        self.judge = Guard(
            bool(guard),
            GuardSettings(float(guard_floor_tolerance), float(guard_departure_limit), float(guard_backtest_tolerance)),
            trust_window=trust_window,
        )
        #: the rollout the objective, the validation loss and the scorecard follow (the trainer's, from ``bind``)
        self.rollout = RolloutSettings()

    def bind(self, trainer: Trainer) -> None:
        super().bind(trainer)
        source = trainer.datamodule.source
        self.settings = {
            key: value if value is not None else source.defaults.get(key, UPAO_DEFAULTS[key])
            for key, value in self.requested.items()
        }
        fitted = self.pde_constants == "fitted"
        request = PhysicsRequest(
            self.pde_name,
            self.requested["derivative"],
            self.requested["time_scheme"],
            {} if fitted else self.pde_constants,
            fit=FIT_ALL if fitted else (),
            sample=TRAINING_SAMPLE,
        )
        #: the run's physics (``well_upao.physics.discretisation``): stored in its checkpoints, reused by evaluate
        self.physics = physics_of(source, request, int(trainer.datamodule.settings["min_dt_stride"]))
        pde = self.physics.pde
        self.settings.update(derivative=self.physics.derivative, time_scheme=self.physics.scheme)
        if self.physics.floors:
            table = ", ".join(f"{key} {value:.2e}" for key, value in self.physics.floors.items())
            logger.info(f"UPAO on the training frames: {self.physics.reason}; floors {table}")
        self.objective = UpaoObjective.of(
            self.physics,
            lambda_bc=float(self.settings["lambda_bc"]),
            normalization=self.settings["normalization"],
            floor_rel=self.floor_rel,
        )
        model = trainer.bare_model
        self.one_frame = not is_sequence_model(model)
        # a harness model's channels are the dataset's, in the Well's layout; a backbone says which slots it fills
        self.channel_slots = source.channel_slots if self.one_frame else list(model.channel_slots)
        # the file's time axis: each batch's dt is a whole number of its float64 step (well_upao.axes)
        self.time_axis = source.layout.time_axis
        self.objective.check_slots(self.channel_slots)
        self.scalar_names = list(trainer.dset_metadata.constant_scalar_names)
        self.history = trainer.datamodule.train_dataset.n_steps_input
        self.rollout = trainer.rollout
        self.space = trainer_model_space(trainer)
        self.validation = UpaoValidation(self, *self.validation_settings)
        self.judge.priors = self.validation.can_keep_prior()
        resumed = getattr(trainer, "resumed_train", None) or {}
        if resumed.get("guard_start"):
            self.judge.start_card = Scorecard(**resumed["guard_start"])
        if self.judge.enabled and not trainer.validate_start:
            logger.warning("trainer.guard needs trainer.validate_start=true (the start's scorecard): the guard is off")
            self.judge.enabled = False
        s = self.settings
        logger.info(
            f"UPAO on {source.name}: PDE {pde.name} ({len(pde.equations)} sub-equations), "
            f"{s['normalization']}, lambda_BC={s['lambda_bc']:g}, {s['time_scheme']}, {s['derivative']} derivatives; "
            f"{self.rollout.describe()}; "
            f"selection by "
            f"{'validation VRMSE (paper protocol)' if self.paper_protocol else 'validation UPAO loss (label-free)'}"
            + (f"; the model works in normalised units ({self.space.describe()})" if self.space.normalized else "")
        )

    # ------------------------------------------------------------------ the objective on a batch
    def prepared(
        self,
        batch: Mapping[str, torch.Tensor],
        normalized: bool = True,
        model=None,
        train: bool = False,
        bound: BoundResidual | None = None,
    ) -> PreparedBatch:
        """The model's predictions on a batch and what the objective reads beside them, in physical units: the
        history, the *bands* only of the frames after it, and the sample's metadata. ``model``: another model to
        predict with (the guard's starting model). With ``trainer.rollout_steps=K > 1`` the model is rolled out
        ``K`` steps ([`rolled_out`][well_upao.trainers.upao.UpaoLoss.rolled_out]); ``train``: the rollout's training
        options apply (noise on fed-back frames).

        ``normalized``: whether the batch comes normalised (a training batch of a run with
        ``data.use_normalization=true``; validation batches are raw, as the Well serves them). The model is fed
        the units it trains in (``self.space``); the residual and the band loss are always in physical units."""
        trainer = self.trainer
        model = trainer.model if model is None else model
        device = trainer.device
        dims = trainer.dset_metadata.n_spatial_dims
        steps = self.rollout.steps
        given = batch["input_fields"].to(device)
        physical, model_inputs = (
            (self.space.to_physical(given), given) if normalized else (given, self.space.to_model(given))
        )
        # the only access to the frames after the history: gather their boundary band by index
        after = batch["output_fields"][:, :steps].to(device)
        bands = band_values(after.flatten(0, 1), dims, self.objective.band_width).unflatten(0, after.shape[:2])
        bands = into_slots(self.space.to_physical(bands) if normalized else bands, self.channel_slots)
        next_band = bands[:, 0] if steps == 1 else bands
        history = into_slots(physical, self.channel_slots)
        constants = batch.get("constant_fields")  # the Well's formatters append them to the frames
        if self.one_frame and constants is not None:
            constants = constants.to(device) if normalized else self.space.constants_to_model(constants.to(device))
        prediction, window, inputs = self.predicted(model, model_inputs, history, constants, train)
        if bound is None:
            scalars = named_scalars(batch.get("constant_scalars"), self.scalar_names)
            scalars = {name: value.to(device, torch.float32) for name, value in scalars.items()}
            bound = self.objective.bind(batch_grid(batch), scalars)
        return PreparedBatch(
            prediction=prediction,
            inputs=inputs,
            history=history,
            window=window,
            next_band=next_band,
            dt=batch_dt(batch, self.time_axis).to(device, torch.float32),
            bound=bound,
        )

    def predicted(self, model, model_inputs, history, constants, train: bool):
        """``(prediction, window, inputs)`` in physical units and slots: the model's predictions, the window ``s_k``
        is computed on (``None``: ``inputs``) and the frames the residual pairs the predictions with. A rollout
        pairs the fed-back frames; a one-frame model's frame after the last input pairs with that input."""
        slots, physical = self.channel_slots, self.space.to_physical
        if self.rollout.steps > 1:
            prediction, fed = self.rolled_out(model, model_inputs, constants, train)
            inputs = torch.cat([history[:, -1:] if self.one_frame else history, into_slots(physical(fed), slots)], 1)
            return into_slots(physical(prediction), slots), history, inputs
        if self.one_frame:
            predicted = one_frame_prediction(model, model_inputs, self.trainer.formatter_name, constants)
            return into_slots(physical(predicted), slots)[:, None], history, history[:, -1:]
        predicted = physical(model(into_slots(model_inputs, slots), sequence=True)[..., slots])
        return into_slots(predicted, slots), None, history

    def rolled_out(self, model, history: torch.Tensor, constants: torch.Tensor | None, train: bool):
        """The run's ``K``-step rollout of ``model`` from ``history`` (``trainers.rollout.roll_out``)."""
        formatter = self.trainer.formatter_name if self.one_frame else None
        return roll_out(model, history, constants, self.rollout, self.channel_slots, formatter, train)

    def upao_terms(self, batch: Mapping[str, torch.Tensor], normalized: bool = True) -> UpaoTerms:
        """UPAO loss of a training batch ([`prepared`][well_upao.trainers.upao.UpaoLoss.prepared]: reads the history,
        the *bands* only of the frames after it, and the sample's metadata)."""
        return self.terms_of(self.prepared(batch, normalized, train=True))

    def terms_of(self, p: PreparedBatch) -> UpaoTerms:
        """The objective on a prepared batch; over a rollout, ``total`` weights its steps
        (``well_upao.trainers.rollout.weighted_steps``): step 1 holds every term of the true window (a backbone's
        shifted predictions), each later step its new frame's."""
        mask = slots_mask(self.channel_slots, self.trainer.device)
        terms = self.objective(p.prediction, p.inputs, p.next_band, p.dt, p.bound, mask, window=p.window)
        if not self.rollout.one_step:
            first = p.prediction.shape[1] - (self.rollout.steps - 1)
            per_frame = terms.per_frame
            step_terms = [per_frame[:, :first]] + [per_frame[:, k : k + 1] for k in range(first, per_frame.shape[1])]
            terms.total = weighted_steps(step_terms, self.rollout)
        return terms

    def __call__(self, batch):
        terms = self.upao_terms(batch)
        logs = {
            "L_BC": terms.boundary.item(),
            "L_PDE": terms.residual.item(),
            "lambda_BC": terms.lambda_bc.mean().item(),
        }
        logs |= {f"residual_mse_{k}": v.item() for k, v in terms.residual_mse.items()}
        return terms.total, logs

    def validate(self, dataloader, full: bool) -> tuple[float, dict[str, float]]:
        upao = self.validation.run(dataloader, full)
        logs = {f"valid_{k}": v for k, v in upao.items()} | self.validation.paper_vrmse(full, upao["trust_prior"])
        return (logs["valid_paper_VRMSE"] if self.paper_protocol else upao["upao_loss"]), logs

    def run_facts(self) -> dict[str, Any]:
        """The discretisation, PDE and constants this run uses, for the first ``metrics.jsonl`` line: ``pde``,
        ``pde_constants``, ``upao_<setting>`` (``auto`` replaced by its choice) and ``upao_floors``."""
        info = self.checkpoint_info()
        facts = {
            "pde": info["pde"],
            "pde_constants": info["pde_constants"],
            "upao_floors": info["floors"],
            "guard": self.judge.enabled,
        }
        if not info["floors"]:
            facts["upao_floors_reason"] = FIXED_DISCRETISATION
        return facts | {f"upao_{key}": value for key, value in info["upao"].items()}

    def checkpoint_info(self) -> dict[str, Any]:
        """The run's UPAO settings as resolved (``auto`` replaced by its choice), the PDE's constants it used
        (fitted ones included) and, for ``auto``, the floors the choice was made from."""
        return {
            "selection": "paper_vrmse" if self.paper_protocol else "upao_loss",
            "regime": "windows",
            "physics": self.physics.record(),
            "upao": dict(self.settings),
            "pde": self.objective.pde.name,
            "pde_constants": dict(self.objective.pde.constants) | dict(self.objective.constants),
            "floors": dict(self.physics.floors),
            "guard": self.judge.enabled,
            "guard_start": None if self.judge.start_card is None else vars(self.judge.start_card),
            "prior_candidate": self.judge.priors,
            "trust_window": self.judge.trust_window,
        }


class UpaoTrainer(Trainer):
    """``trainer=upao``: the loop with [`UpaoLoss`][well_upao.trainers.upao.UpaoLoss]; the arguments named like
    [`UpaoLoss`][well_upao.trainers.upao.UpaoLoss]'s go to it. The Well's one-frame models (``experiment=fno`` /
    ``tfno`` / ``unet_classic`` / ``unet_convnext``) train with the residual between the last input frame and their
    prediction and the band loss on the predicted frame, in the channels-first layout they take."""

    def __init__(self, *args, **kwargs):
        settings = {name: kwargs.pop(name) for name in inspect.signature(UpaoLoss).parameters if name in kwargs}
        one_frame = not is_sequence_model(trainer_argument("model", args, kwargs))
        super().__init__(*args, loss=UpaoLoss(**settings), **kwargs)
        if one_frame:
            self.use_formatter("channels_first_default")
            logger.info(
                f"trainer=upao got {type(self.bare_model).__name__}, a one-frame model: its residual joins the last "
                "input frame and its prediction; channels-first inputs"
            )
