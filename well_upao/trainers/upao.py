"""``trainer=upao``: unsupervised adaptation from the PDE residual and the boundary band (paper section 3.3).

Training never reads interior ground truth: the loss sees the observed history (the "windows" regime of
INTERFACES.md section 5), the model's shifted predictions, and only the boundary band of the next frame,
gathered by index before any other use of it. Model selection (``best.pt``), early stopping and the LoRA ->
NSLoRA switch use the validation UPAO loss (label-free) unless ``paper_protocol=true`` (then the paper's
VRMSE). VRMSE under both definitions is still computed on the validation split and logged, labelled.

``lambda_bc``, ``normalization``, ``time_scheme`` and ``derivative`` left ``null`` take the dataset's defaults
(its registry entry, ``well_upao.data.datasets``), else ``OBJECTIVE_DEFAULTS`` and the physics' defaults
(``well_upao.physics.discretisation``: ``DEFAULT_DERIVATIVE``, ``DEFAULT_SCHEME``). Attaching the loss to its run
builds one frozen setup ([`UpaoSetup`][well_upao.trainers.upao_setup.UpaoSetup]) that the objective, the validation
and the judge read.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping
from typing import Any

import torch

from well_upao.harness.well_trainer import trainer_argument, with_argument
from well_upao.models.kinds import is_sequence_model
from well_upao.physics.discretisation import PhysicsRequest, physics_of
from well_upao.physics.objective import UpaoTerms
from well_upao.physics.scores import Scorecard
from well_upao.trainers.guard import Guard, GuardSettings
from well_upao.trainers.loop import Trainer
from well_upao.trainers.training_loss import TrainingLoss
from well_upao.trainers.upao_setup import ObjectiveRequest, UpaoSetup
from well_upao.trainers.upao_validation import UpaoValidation, ValidationSettings

logger = logging.getLogger(__name__)

#: why a run records no floors (``upao_floors_reason``): its discretisation needed no choice
FIXED_DISCRETISATION = "derivative and time_scheme are fixed (not auto): no floor table was needed to choose"


class UpaoLoss(TrainingLoss):
    """The UPAO objective on a batch, and the label-free validation criterion.

    Arguments: ``pde`` (registry name; default: the dataset's), ``lambda_bc``, ``normalization``
    (``rescaled_norm`` | ``norm`` | ``no_norm``), ``time_scheme`` (``crank_nicolson`` | ``explicit`` |
    ``implicit`` | ``central`` | ``auto``), ``derivative`` (``fd`` | ``fd4`` | ``spectral`` | ``auto``; ``auto``:
    the lowest residual floor of the training frames; ``well_upao.physics.discretisation.physics_of`` decides, and
    the run's checkpoints store its answer), ``floor_rel``, ``pde_constants`` (fixed coefficients, or ``fitted``: the
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
        #: what the user asked of the run's physics and of the objective (decided when the loss is attached)
        self.physics_request = PhysicsRequest.for_training(pde, derivative, time_scheme, pde_constants)
        self.request = ObjectiveRequest(lambda_bc, normalization, float(floor_rel))
        self.paper_protocol = bool(paper_protocol)
        if int(rollout_vrmse_steps) < 0:
            raise ValueError(f"trainer.rollout_vrmse_steps must be >= 0, got {rollout_vrmse_steps}")
        #: what the validation scores (``trainers/upao_validation.py``)
        self.validation_settings = ValidationSettings(
            bool(prior_candidate), int(vrmse_trajectories), int(rollout_vrmse_steps)
        )
        #: the label-free judge of the selection: the guard (``trainer.guard``) and the prior rule
        self.judge = Guard(
            bool(guard),
            GuardSettings(float(guard_floor_tolerance), float(guard_departure_limit), float(guard_backtest_tolerance)),
            trust_window=trust_window,
        )

    def attach(self, trainer: Trainer) -> None:
        """Attach to the run ``trainer`` trains: its physics (``physics_of`` on its training frames at its stride), its
        frozen setup (``UpaoSetup.of``), its validation, and what the judge needs of the run (whether the model can
        keep a prior, a resumed run's start card, the start's validation)."""
        super().attach(trainer)
        stride = int(trainer.datamodule.settings["min_dt_stride"])
        physics = physics_of(trainer.datamodule.source, self.physics_request, stride)
        #: the UPAO loss on this run: physics, objective, slots, history, rollout, units, time axis
        self.setup = setup = UpaoSetup.of(trainer, physics, self.request)
        if physics.floors:
            table = ", ".join(f"{key} {value:.2e}" for key, value in physics.floors.items())
            logger.info(f"UPAO on the training frames: {physics.reason}; floors {table}")
        self.validation = UpaoValidation(setup, trainer, self.judge, self.validation_settings)
        self.judge.priors = self.validation.can_keep_prior()
        resumed = getattr(trainer, "resumed_train", None) or {}
        if resumed.get("guard_start"):
            self.judge.start_card = Scorecard(**resumed["guard_start"])
        if self.judge.enabled and not trainer.settings.start.validate_start:
            logger.warning("trainer.guard needs trainer.validate_start=true (the start's scorecard): the guard is off")
            self.judge.enabled = False
        s, pde = setup.settings, physics.pde
        logger.info(
            f"UPAO on {trainer.datamodule.source.name}: PDE {pde.name} ({len(pde.equations)} sub-equations), "
            f"{s['normalization']}, lambda_BC={s['lambda_bc']:g}, {s['time_scheme']}, {s['derivative']} derivatives; "
            f"{setup.rollout.describe()}; "
            f"selection by "
            f"{'validation VRMSE (paper protocol)' if self.paper_protocol else 'validation UPAO loss (label-free)'}"
            + (f"; the model works in normalised units ({setup.space.describe()})" if setup.space.normalized else "")
        )

    def upao_terms(self, batch: Mapping[str, torch.Tensor], normalized: bool = True) -> UpaoTerms:
        """UPAO loss of a training batch ([`prepared`][well_upao.trainers.upao_setup.UpaoSetup.prepared]: reads the
        history, the *bands* only of the frames after it, and the sample's metadata)."""
        return self.setup.terms_of(self.setup.prepared(batch, self.trainer.model, normalized, train=True))

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
        physics, objective = self.setup.physics, self.setup.objective
        return {
            "selection": "paper_vrmse" if self.paper_protocol else "upao_loss",
            "regime": "windows",
            "physics": physics.record(),
            "upao": self.setup.settings,
            "pde": objective.pde.name,
            "pde_constants": dict(objective.pde.constants) | dict(objective.constants),
            "floors": dict(physics.floors),
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
        if one_frame:  # the layout the one-frame models take, before the loss is attached
            args, kwargs = with_argument("formatter", "channels_first_default", args, kwargs)
        super().__init__(*args, loss=UpaoLoss(**settings), **kwargs)
        if one_frame:
            logger.info(
                f"trainer=upao got {type(self.bare_model).__name__}, a one-frame model: its residual joins the last "
                "input frame and its prediction; channels-first inputs"
            )
