"""``trainer=upao``: unsupervised adaptation from the PDE residual and the boundary band (paper section 3.3).

Training never reads interior ground truth: the loss sees the observed history (the "windows" regime of
INTERFACES.md section 5), the model's shifted predictions, and only the boundary band of the next frame,
gathered by index before any other use of it. Model selection (``best.pt``), early stopping and the LoRA ->
NSLoRA switch use the validation UPAO loss (label-free) unless ``paper_protocol=true`` (then the paper's
VRMSE). VRMSE under both definitions is still computed on the validation split and logged, labelled.

``lambda_bc``, ``normalization``, ``time_scheme`` and ``derivative`` left ``null`` take the dataset's defaults
(its registry entry, ``well_upao.data.datasets``), else :data:`UPAO_DEFAULTS`.
"""

from __future__ import annotations

import copy
import inspect
import logging
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from well_upao.axes import UniformAxis
from well_upao.distributed import is_main_process
from well_upao.evaluate.metrics import vrmse_paper, vrmse_well
from well_upao.evaluate.predictors import BackboneModel, HarnessModel
from well_upao.evaluate.protocol import one_step_all, rollout
from well_upao.evaluate.windows import window_means
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
from well_upao.models.na_transformer import BASES
from well_upao.physics.bound import BoundResidual
from well_upao.physics.discretisation import Requested, resolve
from well_upao.physics.floor import refuse_time_varying_parameters
from well_upao.physics.objective import (
    DEFAULT_DERIVATIVE,
    DEFAULT_SCHEME,
    UpaoObjective,
    UpaoTerms,
    band_values,
)
from well_upao.physics.pdes import pde_for_dataset
from well_upao.physics.scores import SCORE_NAMES, Scorecard, mean_card
from well_upao.trainers.guard import Guard, GuardSettings
from well_upao.trainers.loop import Trainer, TrainingLoss, correction_off
from well_upao.trainers.rollout import RolloutSettings, fed_back_frame, feed_back, noise_scale, weighted_steps
from well_upao.trainers.sharding import is_sharded

logger = logging.getLogger(__name__)

#: settings used where neither the run's config nor the dataset's registry entry gives one
UPAO_DEFAULTS: dict[str, Any] = dict(
    lambda_bc=1e4, normalization="norm", time_scheme=DEFAULT_SCHEME, derivative=DEFAULT_DERIVATIVE
)


#: the starting model's trainable weights, kept beside the checkpoints so a resumed run still measures departures
START_WEIGHTS = "start_trainable.pt"


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
    than the start (:func:`well_upao.trainers.guard.guard_decision`, thresholds ``guard_floor_tolerance``,
    ``guard_departure_limit``, ``guard_backtest_tolerance``); it needs ``trainer.validate_start`` (the start's card).
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
        self.vrmse_trajectories = int(vrmse_trajectories)
        if int(rollout_vrmse_steps) < 0:
            raise ValueError(f"trainer.rollout_vrmse_steps must be >= 0, got {rollout_vrmse_steps}")
        self.rollout_vrmse_steps = int(rollout_vrmse_steps)
        #: the last reason :meth:`unavailable_scores` logged (each new one is logged once)
        self._unavailable_said: str | None = None
        #: the training files' time axis (``bind``): batches' dt are whole numbers of its step
        self.time_axis: UniformAxis | None = None
        #: the label-free judge of the selection: the guard (``trainer.guard``) and the prior rule
        self.judge = Guard(
            bool(guard),
            GuardSettings(float(guard_floor_tolerance), float(guard_departure_limit), float(guard_backtest_tolerance)),
        )
        #: score the model's prior (its extrapolation base, correction off) at every validation, and keep it when
        #: the selected candidate predicts the observed history worse than it (:meth:`prior_check`)
        self.prior_candidate = bool(prior_candidate)
        #: the starting model (a frozen copy: the departure's reference)
        self.start_model: torch.nn.Module | None = None
        #: the rollout the objective, the validation loss and the scorecard follow (the trainer's, from :meth:`bind`)
        self.rollout = RolloutSettings()
        #: a sharded start's predictions per validation batch (:meth:`kept_start_prediction`)
        self.start_predictions: dict[int, torch.Tensor] = {}

    def bind(self, trainer: Trainer) -> None:
        super().bind(trainer)
        source = trainer.datamodule.source
        self.settings = {
            key: value if value is not None else source.defaults.get(key, UPAO_DEFAULTS[key])
            for key, value in self.requested.items()
        }
        pde = pde_for_dataset(self.pde_name or source.name)
        fixed = self.pde_constants if isinstance(self.pde_constants, Mapping) else {}
        refuse_time_varying_parameters(pde, source.layout.varying_scalar_names, source.name, fixed)
        if self.pde_constants == "fitted" and not pde.constants:
            raise ValueError(f"PDE {pde.name!r} has no constants to fit (pde_constants=fitted)")
        fit = tuple(pde.constants) if self.pde_constants == "fitted" else ()
        requested = Requested(self.settings["derivative"], self.settings["time_scheme"], fixed, fit)
        stride = int(trainer.datamodule.settings["min_dt_stride"])
        #: the run's physics (``well_upao.physics.discretisation``): stored in its checkpoints, reused by evaluate
        self.physics = resolve(
            lambda: source.observed(stride, max_trajectories=4, max_frames=12), pde, requested, stride
        )
        self.settings.update(derivative=self.physics.derivative, time_scheme=self.physics.scheme)
        if self.physics.floors:
            table = ", ".join(f"{key} {value:.2e}" for key, value in self.physics.floors.items())
            logger.info(f"UPAO on the training frames: {self.physics.reason}; floors {table}")
        self.objective = UpaoObjective.of(
            self.physics, lambda_bc=float(self.settings["lambda_bc"]), normalization=self.settings["normalization"],
            floor_rel=self.floor_rel,
        )  # fmt: skip
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

    @property
    def floors(self) -> dict[str, float]:
        """The residual floors of the training frames the run's ``auto`` choice or fit was made from (empty when
        the discretisation was fixed)."""
        return dict(self.physics.floors)

    @property
    def floors_reason(self) -> str:
        """Why :attr:`floors` is empty (``upao_floors_reason`` in the run's facts)."""
        return "derivative and time_scheme are fixed (not auto): no floor table was needed to choose"

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
        ``K`` steps (:meth:`rolled_out`); ``train``: the rollout's training options apply (noise on fed-back frames).

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
        if steps > 1:
            prediction, fed = self.rolled_out(model, model_inputs, constants, train)
            prediction = into_slots(self.space.to_physical(prediction), self.channel_slots)
            fed = into_slots(self.space.to_physical(fed), self.channel_slots)
            inputs = torch.cat([history[:, -1:] if self.one_frame else history, fed], 1)
            window = history
        elif self.one_frame:  # the frame after the last input only: its residual against that input
            predicted = one_frame_prediction(model, model_inputs, trainer.formatter_name, constants)
            prediction = into_slots(self.space.to_physical(predicted), self.channel_slots)
            prediction, window, inputs = prediction[:, None], history, history[:, -1:]
        else:
            predicted = model(into_slots(model_inputs, self.channel_slots), sequence=True)
            predicted = self.space.to_physical(predicted[..., self.channel_slots])
            prediction, window, inputs = into_slots(predicted, self.channel_slots), None, history
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

    def rolled_out(
        self, model, history: torch.Tensor, constants: torch.Tensor | None, train: bool
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """A ``K``-step rollout from ``history`` ``(B, T, *space, C)`` in the model's units and dataset channels
        (``trainers/rollout.py``): ``(predicted, fed)``. A backbone's ``predicted`` is its ``T`` shifted predictions
        of the true window followed by the new frame of each later step, ``(B, T + K - 1, ...)``; a one-frame
        model's is its ``K`` frames. ``fed``: the ``K - 1`` frames fed back (detached under pushforward, noisy in
        training), the earlier frame of each later step's residual pair."""
        settings, slots = self.rollout, self.channel_slots
        scale = noise_scale(history, settings.noise_scale) if train and settings.noise else None
        if self.one_frame:
            formatter = self.trainer.formatter_name
            frames, fed, window = [one_frame_prediction(model, history, formatter, constants)], [], history
            for _ in range(settings.steps - 1):
                fed.append(fed_back_frame(frames[-1], settings, scale, train))
                window = feed_back(window, fed[-1])
                frames.append(one_frame_prediction(model, window, formatter, constants))
            return torch.stack(frames, 1), torch.stack(fed, 1)
        window = into_slots(history, slots)
        shifted = model(window, sequence=True)[..., slots]
        frames, fed = [shifted], []
        for _ in range(settings.steps - 1):
            fed.append(fed_back_frame(frames[-1][:, -1], settings, scale, train))
            window = feed_back(window, into_slots(fed[-1], slots))
            frames.append(model(window, sequence=True)[:, -1:][..., slots])
        return torch.cat(frames, 1), torch.stack(fed, 1)

    def upao_terms(self, batch: Mapping[str, torch.Tensor], normalized: bool = True) -> UpaoTerms:
        """UPAO loss of a training batch (:meth:`prepared`: reads the history, the *bands* only of the frames after
        it, and the sample's metadata)."""
        return self.terms_of(self.prepared(batch, normalized, train=True))

    def terms_of(self, p: PreparedBatch) -> UpaoTerms:
        """The objective on a prepared batch; over a rollout, ``total`` weights its steps
        (:func:`well_upao.trainers.rollout.weighted_steps`): step 1 holds every term of the true window (a backbone's
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

    # ------------------------------------------------------------------ validation
    @torch.no_grad()
    def upao_validation(self, dataloader, full: bool) -> dict[str, float]:
        """Mean UPAO loss and its parts on the validation split (no labels beyond the band), the mean scorecard
        (``score_<name>``, :meth:`batch_scores`) and the starting model's card on the same batches
        (``score_start_<name>``, the guard's reference)."""
        self.trainer.model.eval()
        reference = self.reference_model()
        totals = {"upao_loss": 0.0, "L_BC": 0.0, "L_PDE": 0.0}
        scores: dict[str, list[torch.Tensor]] = {}
        start_scores: dict[str, list[torch.Tensor]] = {}
        prior_scores: dict[str, list[torch.Tensor]] = {}
        count = 0
        for i, batch in enumerate(dataloader):
            if not full and i >= self.trainer.short_validation_length:
                break
            prepared = self.prepared(batch, normalized=False)
            terms = self.terms_of(prepared)
            totals["upao_loss"] += terms.total.item()
            totals["L_BC"] += terms.boundary.item()
            totals["L_PDE"] += terms.residual.item()
            start = None if reference is None else self.prepared(batch, False, reference, bound=prepared.bound)
            start_prediction = self.kept_start_prediction(i, prepared) if start is None else start.prediction
            backtest = self.rollout_backtest(batch)
            for name, value in self.batch_scores(prepared, start_prediction, backtest).items():
                scores.setdefault(name, []).append(value.cpu())
            if start is not None:
                start_backtest = self.rollout_backtest(batch, reference)
                for name, value in self.batch_scores(start, None, start_backtest).items():
                    start_scores.setdefault(name, []).append(value.cpu())
            prior = self.prior_batch(batch, prepared.bound)
            if prior is not None:
                prior_prepared, prior_backtest = prior
                for name, value in self.batch_scores(prior_prepared, start_prediction, prior_backtest).items():
                    prior_scores.setdefault(name, []).append(value.cpu())
            count += 1
        card = mean_card(scores)
        if self.trainer.global_step == 0 and self.judge.start_card is None:
            self.judge.start_card = card
        logs = {k: v / max(count, 1) for k, v in totals.items()} | card.logs(prefix="score_")
        logs |= {f"score_{k}": float(torch.cat(v).mean()) for k, v in scores.items() if k.startswith("residual_ratio_")}
        logs["unavailable_scores"] = self.unavailable_scores(
            card, reference is not None or bool(self.start_predictions)
        )
        if start_scores:
            logs |= mean_card(start_scores).logs(prefix="score_start_")
        if prior_scores:
            logs |= mean_card(prior_scores).logs(prefix="score_prior_")
        return logs

    def unavailable_scores(self, card: Scorecard, has_reference: bool) -> str | None:
        """Why scores of the validation card are ``nan`` (``valid_unavailable_scores`` in ``metrics.jsonl``; logged
        once per distinct reason), ``None`` when every score was computed."""
        known = {}
        if not has_reference:
            known["departure"] = (
                "no starting model to compare with (a run resumed without "
                f"checkpoints/{START_WEIGHTS}, or a sharded run resumed: its start's predictions are kept in memory)"
            )
        if self.one_frame:
            known["backtest"] = "a one-frame model predicts no observed frame of the history"
        elif not self.rollout.one_step and self.history < self.rollout.steps + 2:
            known["backtest"] = (
                f"a {self.rollout.steps}-step rollout ending on the last observed frame needs a history of "
                f"{self.rollout.steps + 2} frames, the run has {self.history} (lower trainer.rollout_steps or raise "
                "data.n_steps_input)"
            )
        elif self.history < 2:
            known["backtest"] = "a history of 1 frame has no earlier frame to predict the last one from"
        reasons = []
        for name in SCORE_NAMES:
            if math.isfinite(getattr(card, name)):
                continue
            reasons.append(f"{name}: {known.get(name, 'not finite on the validation batches')}")
        text = "; ".join(reasons) or None
        if text and text != self._unavailable_said:
            logger.info(f"UPAO validation: label-free scores not computed: {text}")
        self._unavailable_said = text or self._unavailable_said
        return text

    def guard_unchecked(self, logs: Mapping[str, Any]) -> str | None:
        """What the guard could not check on a candidate and why (``trainers/guard.py``), or ``None``."""
        return self.judge.unchecked(logs)

    # ------------------------------------------------------------------ the prior as a candidate
    def prior_order(self) -> int | None:
        """The polynomial order of the model's extrapolation base when its correction can be switched off exactly
        (``model.base`` ``extrap1`` / ``extrap2``: ``u = extrapolation + correction_gain * decoder``), else
        ``None`` (no prior: other bases, one-frame models, ``trainer.prior_candidate=false``)."""
        model = self.trainer.bare_model
        if not self.prior_candidate or self.one_frame or not hasattr(model, "correction_gain"):
            return None
        if is_sharded(self.trainer.model):  # switching a sharded gain off is not supported
            return None
        return BASES.get(getattr(model, "base", None))

    def prior_batch(
        self, batch: Mapping[str, torch.Tensor], bound: BoundResidual
    ) -> tuple[PreparedBatch, torch.Tensor | None] | None:
        """A validation batch as the prior predicts it: the model with its correction switched off
        (``trainers.loop.correction_off``), whose shifted predictions are the polynomial extrapolation of the
        window in the model's own arithmetic, what a checkpoint that keeps the prior predicts, with its rollout
        backtest (:meth:`rollout_backtest`); ``None`` without a prior."""
        if self.prior_order() is None:
            return None
        with correction_off(self.trainer.bare_model):
            return self.prepared(batch, normalized=False, bound=bound), self.rollout_backtest(batch)

    def prior_check(self, best_logs: Mapping[str, Any], logs: Mapping[str, Any]) -> str | None:
        """The prior rule (``trainers/guard.py``): why best.pt should hold the prior instead of the selected
        candidate, or ``None`` (also without a prior)."""
        return self.judge.prior_check(best_logs, logs, str(getattr(self.trainer.bare_model, "base", "its base")))

    def prior_verdict(self, logs: Mapping[str, Any]) -> str | None:
        """The first validation's comparison of the start with its prior (``trainers/guard.py``)."""
        return self.judge.prior_verdict(logs, str(getattr(self.trainer.bare_model, "base", "its base")))

    def batch_scores(
        self, prepared: PreparedBatch, start: torch.Tensor | None, backtest: torch.Tensor | None = None
    ) -> dict[str, torch.Tensor]:
        """Per-sample scores of a validation batch (``well_upao.physics.scores.scorecard``): the prediction of the
        next frame against the observed window; the backbone's shifted prediction of the last observed frame (the
        backtest); ``start``: the starting model's predictions of the same batch (``PreparedBatch.prediction``, the
        departure's reference).
        Over a ``K``-step rollout (``trainer.rollout_steps``), the rollout's card
        (:func:`~well_upao.physics.scores.rollout_scorecard`) with ``backtest`` the last frame of the rollout that
        ends on the last observed frame (:meth:`rollout_backtest`)."""
        p = prepared
        bound = p.bound.in_double()
        if not self.rollout.one_step:
            steps = self.rollout.steps
            reference = None if start is None else start[:, -steps:]
            return bound.rollout_scorecard(p.history, p.prediction[:, -steps:], p.dt.double(), reference, backtest)
        backtest = p.prediction[:, -2] if not self.one_frame and p.prediction.shape[1] >= 2 else None
        reference = None if start is None else start[:, -1]
        return bound.scorecard(p.history, p.prediction[:, -1], p.dt.double(), reference, backtest)

    @torch.no_grad()
    def rollout_backtest(self, batch: Mapping[str, torch.Tensor], model=None) -> torch.Tensor | None:
        """With ``trainer.rollout_steps=K > 1``: the last frame ``(B, *space, 18)`` (physical units) of the
        ``K``-step rollout that ends on the last observed frame of a raw (validation) batch, started from the
        window's first ``T - K`` frames, each prediction appended (the backbone is causal: a window shorter than its
        history is served as such). ``None`` for one step (the backtest is the shifted prediction), a one-frame
        model, or a history shorter than ``K + 2`` frames."""
        steps = self.rollout.steps
        if self.rollout.one_step or self.one_frame or self.history < steps + 2:
            return None
        model = self.trainer.model if model is None else model
        slots = self.channel_slots
        given = self.space.to_model(batch["input_fields"].to(self.trainer.device))
        window = into_slots(given[:, : self.history - steps], slots)
        for _ in range(steps):
            frame = model(window, sequence=True)[:, -1:][..., slots]
            window = torch.cat([window, into_slots(frame, slots)], 1)
        return into_slots(self.space.to_physical(frame[:, 0]), slots)

    def kept_start_prediction(self, index: int, prepared: PreparedBatch) -> torch.Tensor | None:
        """The departure's reference where no starting model can be copied (a sharded model, FSDP): the start's
        predictions of validation batch ``index``, kept (on the CPU) at the first validation before any step, when the
        model predicting ``prepared`` is the start. The validation batches come in one fixed order (each process its
        own), so later validations compare with the start's predictions of the same windows. ``None`` when not
        kept (a resumed sharded run, or a model that can be copied)."""
        if not is_sharded(self.trainer.model):
            return None
        if self.trainer.global_step == 0 and self.judge.start_card is None:
            self.start_predictions[index] = prepared.prediction.detach().cpu()
        kept = self.start_predictions.get(index)
        return None if kept is None else kept.to(prepared.prediction.device)

    def reference_model(self) -> torch.nn.Module | None:
        """The starting model, frozen: copied at the first validation before any step (its trainable weights kept
        in ``checkpoints/start_trainable.pt`` for a resumed run); ``None`` when it cannot be had (a run resumed
        without that file, a sharded model)."""
        trainer = self.trainer
        if self.start_model is not None:
            return self.start_model
        if is_sharded(trainer.model):
            return None
        path = os.path.join(trainer.checkpoint_folder, START_WEIGHTS)
        if trainer.global_step == 0:
            self.start_model = copy.deepcopy(trainer.bare_model).eval().requires_grad_(False)
            trainable = {n: p.detach().cpu() for n, p in trainer.bare_model.named_parameters() if p.requires_grad}
            if is_main_process():
                tmp = path + ".tmp"
                torch.save(trainable, tmp)
                os.replace(tmp, path)
        elif os.path.isfile(path):
            self.start_model = copy.deepcopy(trainer.bare_model).eval().requires_grad_(False)
            self.start_model.load_state_dict(torch.load(path, map_location=trainer.device), strict=False)
        return self.start_model

    def guard_check(self, logs: Mapping[str, Any]) -> str | None:
        """``trainer.guard`` (``trainers/guard.py``): why a candidate is worse than the start, or ``None``."""
        return self.judge.check(logs)

    @torch.no_grad()
    def paper_vrmse(self, full: bool) -> dict[str, float]:
        """The paper's VRMSE (one-step predictions over whole validation trajectories), per channel and mean, and the
        Well's rollout windows (:meth:`rollout_windows`); with a prior (:meth:`prior_order`) also the prior's,
        ``valid_prior_paper_VRMSE`` and ``valid_prior_rollout_VRMSE_<a:b>``: labels for the record (a study's
        oracle), never read by the selection, which scores the prior label-free."""
        trainer = self.trainer
        trainer.model.eval()
        dataset = trainer.datamodule.rollout_val_dataset
        count = len(dataset) if full else min(self.vrmse_trajectories, len(dataset))
        if self.one_frame:
            predictor = HarnessModel("model", trainer.bare_model, trainer.formatter_name, self.history, self.space)
        else:
            predictor = BackboneModel("model", trainer.bare_model, self.space)
        per_channel, prior_per_channel = [], []
        curves: dict[str, list[list[float]]] = {"model": [], "prior": []}
        for index in range(count):
            sample = dataset[index]
            if self.one_frame:  # a one-frame model reads the sample's constant fields after its frames
                predictor.constant_fields = sample.get("constant_fields")
            trajectory = torch.cat([sample["input_fields"], sample["output_fields"]]).to(trainer.device)
            prediction = one_step_all(predictor, trajectory, self.history, None)
            per_channel.append(vrmse_paper(prediction, trajectory[self.history :]))
            curves["model"].append(self.rollout_curve(predictor, trajectory))
            if self.prior_order() is not None:
                with correction_off(trainer.bare_model):
                    prior = one_step_all(predictor, trajectory, self.history, None)
                    curves["prior"].append(self.rollout_curve(predictor, trajectory))
                prior_per_channel.append(vrmse_paper(prior, trajectory[self.history :]))
        values = torch.stack(per_channel).mean(0)
        names = [n for names in trainer.dset_metadata.field_names.values() for n in names]
        logs = {f"valid_paper_VRMSE_{name}": v.item() for name, v in zip(names, values, strict=True)}
        logs["valid_paper_VRMSE"] = values.mean().item()
        logs |= rollout_window_logs(curves["model"], "valid_rollout_VRMSE")
        if prior_per_channel:
            logs["valid_prior_paper_VRMSE"] = torch.stack(prior_per_channel).mean().item()
            logs |= rollout_window_logs(curves["prior"], "valid_prior_rollout_VRMSE")
        return logs

    def rollout_curve(self, predictor, trajectory: torch.Tensor) -> list[float]:
        """The Well's VRMSE (mean over channels) at each step of a rollout of up to ``trainer.rollout_vrmse_steps``
        from the trajectory's first window (as long as the trajectory holds); empty when it is 0."""
        steps = min(self.rollout_vrmse_steps, trajectory.shape[0] - self.history)
        if steps < 1:
            return []
        predicted = rollout(predictor, trajectory, self.history, steps, None)[0]
        target = trajectory[self.history : self.history + steps]
        return vrmse_well(predicted, target, self.trainer.dset_metadata.n_spatial_dims).mean(-1).tolist()

    def validate(self, dataloader, full: bool) -> tuple[float, dict[str, float]]:
        upao = self.upao_validation(dataloader, full)
        logs = {f"valid_{k}": v for k, v in upao.items()} | self.paper_vrmse(full)
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
            facts["upao_floors_reason"] = self.floors_reason
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
            "floors": dict(self.floors),
            "guard": self.judge.enabled,
            "guard_start": None if self.judge.start_card is None else vars(self.judge.start_card),
            "prior_candidate": self.prior_order() is not None,
        }


def rollout_window_logs(curves: list[list[float]], prefix: str) -> dict[str, float]:
    """The Well's windows (``well_upao.evaluate.windows``) of the mean per-step curve of several rollouts (each step
    averaged over the rollouts that reached it): ``<prefix>_<a:b>`` for the windows held, ``<prefix>_steps`` (the
    steps every rollout ran) and ``<prefix>_last`` (the VRMSE at that step); nothing without rollouts."""
    steps = min((len(c) for c in curves), default=0)
    if steps == 0:
        return {}
    mean = [sum(c[k] for c in curves) / len(curves) for k in range(steps)]
    logs = {f"{prefix}_{label}": value for label, value in window_means(mean).items() if value is not None}
    return logs | {f"{prefix}_steps": steps, f"{prefix}_last": mean[-1]}


class UpaoTrainer(Trainer):
    """``trainer=upao``: the loop with :class:`UpaoLoss`; the arguments named like :class:`UpaoLoss`'s go to it.
    The Well's one-frame models (``experiment=fno`` / ``tfno`` / ``unet_classic`` / ``unet_convnext``) train with
    the residual between the last input frame and their prediction and the band loss on the predicted frame, in
    the channels-first layout they take."""

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
