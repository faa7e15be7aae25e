"""``trainer=upao``: unsupervised adaptation from the PDE residual and the boundary band (paper section 3.3).

Training never reads interior ground truth: the loss sees the observed history (the "windows" regime of
INTERFACES.md section 5), the model's shifted predictions, and only the boundary band of the next frame,
gathered by index before any other use of it. Model selection (``best.pt``), early stopping and the LoRA ->
NSLoRA switch use the validation UPAO loss (label-free) unless ``paper_protocol=true`` (then the paper's
VRMSE). VRMSE under both definitions is still computed on the validation split and logged, labelled.

``lambda_bc``, ``normalization``, ``time_scheme`` and ``derivative`` left ``null`` take the dataset's defaults
(its registry entry, ``well_upao.data.datasets``), else ``OBJECTIVE_DEFAULTS`` and the physics' defaults
(``well_upao.physics.discretisation``: ``DEFAULT_DERIVATIVE``, ``DEFAULT_SCHEME``). The UPAO trainer composes the
run (``UpaoTrainer.compose``): the physics of its training frames, one frozen setup
([`UpaoSetup`][well_upao.trainers.upao_setup.UpaoSetup]) that the objective and the validation read, the objective
(``UpaoLoss``), the label-free validation (``trainers/upao_validation.py``) and the judge (``trainers/guard.py``), each
handed what it needs; the loop holds all three.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from well_upao.harness.well_trainer import trainer_argument, with_argument
from well_upao.models.kinds import is_sequence_model
from well_upao.physics.discretisation import PhysicsRequest, physics_of
from well_upao.physics.objective import UpaoTerms
from well_upao.physics.scores import Scorecard
from well_upao.trainers.guard import Guard, GuardSettings
from well_upao.trainers.loop import Trainer
from well_upao.trainers.run_context import RunContext
from well_upao.trainers.training_loss import TrainingLoss
from well_upao.trainers.upao_setup import ObjectiveRequest, UpaoSetup
from well_upao.trainers.upao_validation import UpaoValidation, ValidationSettings

logger = logging.getLogger(__name__)

#: why a run records no floors (``upao_floors_reason``): its discretisation needed no choice
FIXED_DISCRETISATION = "derivative and time_scheme are fixed (not auto): no floor table was needed to choose"


class UpaoLoss(TrainingLoss):
    """The UPAO objective on a training batch, on the run's frozen setup (``UpaoSetup``: physics, objective, slots,
    history, rollout, units), which the UPAO trainer builds and hands it (``UpaoTrainer.compose``)."""

    def __init__(self, setup: UpaoSetup):
        self.setup = setup

    def upao_terms(self, batch: Mapping[str, torch.Tensor], normalized: bool = True) -> UpaoTerms:
        """UPAO loss of a training batch ([`prepared`][well_upao.trainers.upao_setup.UpaoSetup.prepared]: reads the
        history, the *bands* only of the frames after it, and the sample's metadata)."""
        return self.setup.terms_of(self.setup.prepared(batch, self.run.model, normalized, train=True))

    def __call__(self, batch):
        terms = self.upao_terms(batch)
        logs = {
            "L_BC": terms.boundary.item(),
            "L_PDE": terms.residual.item(),
            "lambda_BC": terms.lambda_bc.mean().item(),
        }
        logs |= {f"residual_mse_{k}": v.item() for k, v in terms.residual_mse.items()}
        return terms.total, logs

    def run_facts(self) -> dict[str, Any]:
        """The discretisation, PDE and constants this run uses, for the first ``metrics.jsonl`` line: ``pde``,
        ``pde_constants``, ``upao_<setting>`` (``auto`` replaced by its choice) and ``upao_floors``."""
        info = self.checkpoint_info()
        facts = {"pde": info["pde"], "pde_constants": info["pde_constants"], "upao_floors": info["floors"]}
        if not info["floors"]:
            facts["upao_floors_reason"] = FIXED_DISCRETISATION
        return facts | {f"upao_{key}": value for key, value in info["upao"].items()}

    def checkpoint_info(self) -> dict[str, Any]:
        """The run's UPAO settings as resolved (``auto`` replaced by its choice), the PDE's constants it used
        (fitted ones included) and, for ``auto``, the floors the choice was made from."""
        physics, objective = self.setup.physics, self.setup.objective
        return {
            "regime": "windows",
            "physics": physics.record(),
            "upao": self.setup.settings,
            "pde": objective.pde.name,
            "pde_constants": dict(objective.pde.constants) | dict(objective.constants),
            "floors": dict(physics.floors),
        }


@dataclass(frozen=True)
class UpaoSettings:
    """``trainer=upao``'s settings, sorted for the parts they make: what the user asked of the run's physics
    (``physics``) and of the objective (``objective``), what the validation scores (``validation``) and the guard's
    switch and thresholds (``guard``, ``guard_settings``). Built from the config's keys by ``of``."""

    physics: PhysicsRequest
    objective: ObjectiveRequest
    validation: ValidationSettings
    guard: bool
    guard_settings: GuardSettings

    @classmethod
    def of(
        cls,
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
    ) -> UpaoSettings:
        """``pde`` (registry name; default: the dataset's), ``lambda_bc``, ``normalization`` (``rescaled_norm`` |
        ``norm`` | ``no_norm``), ``time_scheme`` (``crank_nicolson`` | ``explicit`` | ``implicit`` | ``central`` |
        ``auto``), ``derivative`` (``fd`` | ``fd4`` | ``spectral`` | ``auto``; ``auto``: the lowest residual floor of
        the training frames; ``well_upao.physics.discretisation.physics_of`` decides, and the run's checkpoints store
        its answer), ``floor_rel``, ``pde_constants`` (fixed coefficients, or ``fitted``: the PDE's constants fitted
        by least squares to the training frames, jointly with an ``auto`` discretisation), ``paper_protocol`` (select
        by VRMSE), ``vrmse_trajectories`` (the first trajectories of the validation split, the paper's VRMSE of every
        validation is over them), ``rollout_vrmse_steps`` (each of them is also rolled out that many steps, as far as
        it holds, for the Well's windows ``valid_rollout_VRMSE_6:12`` / ``_13:30``; 0: off), ``guard`` and its
        thresholds ``guard_floor_tolerance``, ``guard_departure_limit``, ``guard_backtest_tolerance``
        ([`guard_decision`][well_upao.trainers.guard.guard_decision]), ``prior_candidate`` and ``trust_window``
        (``trainers/guard.py``)."""
        if int(rollout_vrmse_steps) < 0:
            raise ValueError(f"trainer.rollout_vrmse_steps must be >= 0, got {rollout_vrmse_steps}")
        thresholds = GuardSettings(
            float(guard_floor_tolerance), float(guard_departure_limit), float(guard_backtest_tolerance)
        )
        Guard(trust_window=trust_window)  # refuses an unknown window now, before any data is read
        return cls(
            PhysicsRequest.for_training(pde, derivative, time_scheme, pde_constants),
            ObjectiveRequest(lambda_bc, normalization, float(floor_rel)),
            ValidationSettings(
                bool(prior_candidate),
                int(vrmse_trajectories),
                int(rollout_vrmse_steps),
                trust_window,
                bool(paper_protocol),
            ),
            bool(guard),
            thresholds,
        )


class UpaoTrainer(Trainer):
    """``trainer=upao``: the loop composed with [`UpaoLoss`][well_upao.trainers.upao.UpaoLoss], its label-free
    validation and its judge (``compose``); the arguments named like ``UpaoSettings.of``'s go to them. The Well's
    one-frame models (``experiment=fno`` / ``tfno`` / ``unet_classic`` / ``unet_convnext``) train with the residual
    between the last input frame and their prediction and the band loss on the predicted frame, in the
    channels-first layout they take.

    Every validation also logs the label-free scorecard (``well_upao.physics.scores``) as ``valid_score_floor``,
    ``valid_score_residual_ratio``, ``valid_score_departure`` (from the starting model's predictions) and
    ``valid_score_backtest``. ``guard`` (default on): the selection refuses a candidate the scorecard finds worse than
    the start; it needs ``trainer.validate_start`` (the start's card). The selection scores every candidate on the
    same validation batches and trajectories: the last validation is short like the others."""

    def __init__(self, *args, **kwargs):
        names = inspect.signature(UpaoSettings.of).parameters
        #: the run's UPAO settings (``UpaoSettings``), read when the run is composed
        self.upao = UpaoSettings.of(**{name: kwargs.pop(name) for name in names if name in kwargs})
        one_frame = not is_sequence_model(trainer_argument("model", args, kwargs))
        if one_frame:  # the layout the one-frame models take, before the run is composed
            args, kwargs = with_argument("formatter", "channels_first_default", args, kwargs)
        super().__init__(*args, **kwargs)
        if one_frame:
            logger.info(
                f"trainer=upao got {type(self.bare_model).__name__}, a one-frame model: its residual joins the last "
                "input frame and its prediction; channels-first inputs"
            )

    def compose(self, run: RunContext, loss: TrainingLoss | None) -> tuple[UpaoLoss, UpaoValidation, Guard]:
        """The UPAO run: the physics of its training frames (``physics_of`` at its stride), its frozen setup
        (``UpaoSetup.of``), the objective on it, its validation and its judge (the guard, on when the start is
        validated; the prior rule where the model can keep a prior; a resumed run's start card)."""
        settings = self.upao
        stride = int(run.datamodule.settings["min_dt_stride"])
        physics = physics_of(run.datamodule.source, settings.physics, stride)
        setup = UpaoSetup.of(run, physics, settings.objective)
        if physics.floors:
            table = ", ".join(f"{key} {value:.2e}" for key, value in physics.floors.items())
            logger.info(f"UPAO on the training frames: {physics.reason}; floors {table}")
        objective = UpaoLoss(setup)
        objective.attach(run)
        validation = UpaoValidation(setup, run, settings.validation)
        enabled = settings.guard
        if enabled and not run.validate_start:
            logger.warning("trainer.guard needs trainer.validate_start=true (the start's scorecard): the guard is off")
            enabled = False
        resumed = run.resumed.get("guard_start")
        judge = Guard(
            enabled,
            settings.guard_settings,
            priors=validation.can_keep_prior(),
            trust_window=settings.validation.trust_window,
            start_card=Scorecard(**resumed) if resumed else None,
        )
        s, pde = setup.settings, physics.pde
        paper = settings.validation.paper_protocol
        logger.info(
            f"UPAO on {run.datamodule.source.name}: PDE {pde.name} ({len(pde.equations)} sub-equations), "
            f"{s['normalization']}, lambda_BC={s['lambda_bc']:g}, {s['time_scheme']}, {s['derivative']} derivatives; "
            f"{setup.rollout.describe()}; "
            f"selection by "
            f"{'validation VRMSE (paper protocol)' if paper else 'validation UPAO loss (label-free)'}"
            + (f"; the model works in normalised units ({setup.space.describe()})" if setup.space.normalized else "")
        )
        return objective, validation, judge
