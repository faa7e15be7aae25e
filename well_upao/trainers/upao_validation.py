"""A UPAO run's validation, beside its judge (``trainers/guard.py``): the label-free criterion and the scorecards the
guard and the prior rule read, plus the labelled numbers kept for the record. The loop composes it with the run
(``trainers.run_context.RunContext``) and hands what it measures to the judge.

At every validation ([`UpaoValidation.validate`][well_upao.trainers.upao_validation.UpaoValidation.validate]):

* the mean UPAO loss and its parts on the validation batches (no labels beyond the band);
* the mean scorecard of the model (``valid_score_<name>``, ``well_upao.physics.scores``) and of the starting model
  on the same batches (``valid_score_start_<name>``, the guard's reference; ``trainers/start_model.py``);
* the evidence per horizon (``well_upao.predict.evidence``): the backtest curves of the model and of the classical
  predictors on the observed history (``valid_backtest_curves``), each one's evidence for the trust window
  (``valid_score_window_<name>``), the prior it picks (``valid_trust_prior``) and how far the evidence reaches
  (``valid_trust_reach``): the prior rule's evidence (``trainers/guard.py``); and, from the same backtests in VRMSE
  units, the expected VRMSE of the model and of that prior for the trust window with a nominal 80% interval
  (``valid_expected_vrmse``), under rule 3 as ``evaluate`` and ``forecast`` state it
  (``well_upao.predict.expected_starts``: the classical predictors' rollouts from every start of each window, the
  model's own two backtests): what the kept prediction is expected to be off by;
* why a score is ``nan`` (``valid_unavailable_scores``);
* the paper's VRMSE of whole validation trajectories and the Well's rollout windows, the model's and the picked
  prior's: labels for the record (a study's oracle), never read by the selection.

What the trained weights do not change (the starting model's predictions and scores, the classical predictors'
backtests and residual ratios) is computed at the first validation that sees a batch and kept
([`UpaoValidation.fixed_parts`][well_upao.trainers.upao_validation.UpaoValidation.fixed_parts]): the same numbers, one
forward pass of the start per batch per run.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from well_upao.evaluate.metrics import vrmse_paper, vrmse_well
from well_upao.harness.samples import into_slots, slots_mask
from well_upao.physics.scores import SCORE_NAMES, Scorecard, mean_card
from well_upao.predict.classical import CLASSICAL_PRIORS, classical_prior
from well_upao.predict.evidence import (
    START,
    backtest_curve,
    classical_curves,
    median_curves,
    pick,
    with_one_step,
)
from well_upao.predict.expected import step_over_spread
from well_upao.predict.expected_starts import batch_start_matrices, expected_starts_per_window, own_start_matrices
from well_upao.predict.predictors import BackboneModel, HarnessModel
from well_upao.predict.rollout import autoregress, one_step_all, rollout
from well_upao.predict.windows import window_means
from well_upao.trainers.guard import Candidate, TrustEvidence, Validated, choose_prior
from well_upao.trainers.run_context import RunContext
from well_upao.trainers.start_model import START_WEIGHTS, StartModel
from well_upao.trainers.training_loss import kept_prior
from well_upao.trainers.upao_setup import PreparedBatch, UpaoSetup

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class FixedParts:
    """What a validation batch yields whatever the weights being trained (all on the CPU): its
    [`batch_fingerprint`][well_upao.trainers.upao_validation.batch_fingerprint]; the starting model's prediction the
    departure compares with
    ([`UpaoValidation.departure_reference`][well_upao.trainers.upao_validation.UpaoValidation.departure_reference],
    ``None`` without a start) and its per-sample scores (``None`` without a copy of the start); the classical
    predictors' backtest curves and residual ratios (closed forms of the observed frames)."""

    fingerprint: str
    departure: torch.Tensor | None
    start_scores: dict[str, torch.Tensor] | None
    classical_curves: dict[str, torch.Tensor]
    classical_residuals: dict[str, torch.Tensor]
    #: the classical predictors' start matrices per sample, ``(B, A, A)`` (``predict.expected_starts``): the evidence
    #: of their expected error
    classical_starts: dict[str, torch.Tensor]


def batch_fingerprint(batch: Mapping[str, torch.Tensor]) -> str:
    """A digest of a batch's tensors (names, shapes, dtypes and bytes): equal for the same batch served again."""
    digest = hashlib.blake2b(digest_size=16)
    for name in sorted(batch):
        value = batch[name]
        if isinstance(value, torch.Tensor):
            value = value.detach().cpu().contiguous()
            digest.update(f"{name}{tuple(value.shape)}{value.dtype}".encode())
            digest.update(value.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


@dataclass(frozen=True)
class ValidationSettings:
    """``trainer.prior_candidate``: score the classical priors and keep the best for the trust window when the
    selected candidate backtests worse than it; ``vrmse_trajectories`` and ``rollout_vrmse_steps``: the labelled
    record's trajectories and rollout length; ``trust_window``: the horizons the prior is chosen for
    (``trainer.trust_window``; beyond one step the model's own rollout is scored too); ``paper_protocol``: select by
    the paper's validation VRMSE instead of the UPAO loss."""

    prior_candidate: bool = True
    vrmse_trajectories: int = 2
    rollout_vrmse_steps: int = 30
    trust_window: str = "one_step"
    paper_protocol: bool = False


@dataclass(frozen=True)
class Measured:
    """What one pass over the validation batches measured, label-free: ``logs`` (keys without the ``valid_``
    prefix), the model's ``card``, the start's on the same batches (``start_card``, ``None`` where it was not scored)
    and the trust window's ``evidence``; ``upao_loss``: the mean validation UPAO loss, the label-free criterion."""

    logs: dict[str, Any]
    card: Scorecard
    start_card: Scorecard | None
    evidence: TrustEvidence
    upao_loss: float


class UpaoValidation:
    """The validation of a UPAO run: ``setup``, the UPAO loss on the run (its batches, objective, rollout, units);
    ``run``, the run (its model, data and settings: ``trainers.run_context.RunContext``); ``settings``, what it
    scores. It hands what it measured back to the loop
    ([`validate`][well_upao.trainers.upao_validation.UpaoValidation.validate]), which gives it to the judge."""

    def __init__(self, setup: UpaoSetup, run: RunContext, settings: ValidationSettings):
        self.setup, self.run, self.settings = setup, run, settings
        self.start = StartModel(run)
        #: the last reason ``unavailable_scores`` logged (each new one is logged once)
        self._unavailable_said: str | None = None
        #: per validation batch index, what it yields whatever the trained weights (``fixed_parts``)
        self.fixed: dict[int, FixedParts] = {}

    def validate(self, dataloader, full: bool, step: int, first: bool) -> Validated:
        """One validation (``step``: the optimizer steps done; ``first``: the run's first validation, before any
        step): the criterion (the validation UPAO loss, or the paper's VRMSE under ``paper_protocol``), the logs with
        their ``valid_`` prefix (the label-free measurements and the labelled record), the model as a candidate and
        the trust window's evidence."""
        measured = self.run_batches(dataloader, full, step, first)
        paper, record = self.labelled_record(full, measured.evidence.prior)
        logs = {f"valid_{k}": v for k, v in measured.logs.items()} | record
        value = paper if self.settings.paper_protocol else measured.upao_loss
        window = measured.evidence.values.get("model", math.nan)
        return Validated(value, logs, Candidate(measured.card, measured.start_card, window), measured.evidence)

    def checkpoint_info(self) -> dict[str, Any]:
        """What checkpoints record of the selection's criterion."""
        return {"selection": "paper_vrmse" if self.settings.paper_protocol else "upao_loss"}

    # ------------------------------------------------------------------ the label-free criterion and cards
    @torch.no_grad()
    def run_batches(self, dataloader, full: bool, step: int, first: bool) -> Measured:
        """Mean UPAO loss and its parts, the model's, the start's and the prior's cards and the evidence per horizon
        (see the module docstring)."""
        setup, run = self.setup, self.run
        run.model.eval()
        reference = self.start.reference(step)
        totals = {"upao_loss": 0.0, "L_BC": 0.0, "L_PDE": 0.0}
        cards: dict[str, dict[str, list[torch.Tensor]]] = {"": {}, "start_": {}, "classical_": {}}
        curves: dict[str, list[torch.Tensor]] = {}
        starts: dict[str, list[torch.Tensor]] = {}
        count = 0
        for i, batch in enumerate(dataloader):
            if not full and i >= run.short_validation_length:
                break
            prepared = setup.prepared(batch, run.model, normalized=False)
            terms = setup.terms_of(prepared)
            for key, value in (("upao_loss", terms.total), ("L_BC", terms.boundary), ("L_PDE", terms.residual)):
                totals[key] += value.item()
            fixed = self.fixed_parts(i, batch, prepared, reference, first)
            departure = None if fixed.departure is None else fixed.departure.to(prepared.prediction.device)
            collect(cards[""], self.batch_scores(prepared, departure, self.rollout_backtest(batch)))
            if fixed.start_scores is not None:
                collect(cards["start_"], fixed.start_scores)
            shifted = prepared.prediction[:, :-1] if setup.rollout.one_step else None  # frames 1..T-1, one step each
            model_curve, model_starts = self.model_curves(batch, prepared.history, shifted)
            collect(curves, fixed.classical_curves | model_curve)
            collect(starts, fixed.classical_starts | model_starts)
            collect(cards["classical_"], fixed.classical_residuals)
            count += 1
        card = mean_card(cards[""])
        start_card = mean_card(cards["start_"]) if cards["start_"] else None
        logs = {k: v / max(count, 1) for k, v in totals.items()} | card.logs(prefix="score_")
        logs |= {
            f"score_{k}": float(torch.cat(v).mean()) for k, v in cards[""].items() if k.startswith("residual_ratio_")
        }
        logs["unavailable_scores"] = self.unavailable_scores(card, self.start.available)
        if start_card is not None:
            logs |= start_card.logs(prefix="score_start_")
        horizons, evidence = self.horizon_logs(curves, starts)
        logs |= horizons | classical_residual_logs(cards["classical_"])
        return Measured(logs, card, start_card, evidence, totals["upao_loss"] / max(count, 1))

    def unavailable_scores(self, card: Scorecard, has_reference: bool) -> str | None:
        """Why scores of the validation card are ``nan`` (``valid_unavailable_scores`` in ``metrics.jsonl``; logged
        once per distinct reason), ``None`` when every score was computed."""
        setup = self.setup
        known = {}
        if not has_reference:
            known["departure"] = (
                "no starting model to compare with (a run resumed without "
                f"checkpoints/{START_WEIGHTS}, or a sharded run resumed: its start's predictions are kept in memory)"
            )
        rolled = setup.rollout
        if setup.one_frame:
            known["backtest"] = "a one-frame model predicts no observed frame of the history"
        elif not rolled.one_step and setup.history < rolled.steps + 2:
            known["backtest"] = (
                f"a {rolled.steps}-step rollout ending on the last observed frame needs a history of "
                f"{rolled.steps + 2} frames, the run has {setup.history} (lower trainer.rollout_steps or raise "
                "data.n_steps_input)"
            )
        elif setup.history < 2:
            known["backtest"] = "a history of 1 frame has no earlier frame to predict the last one from"
        reasons = [
            f"{name}: {known.get(name, 'not finite on the validation batches')}"
            for name in SCORE_NAMES
            if not math.isfinite(getattr(card, name))
        ]
        text = "; ".join(reasons) or None
        if text and text != self._unavailable_said:
            logger.info(f"UPAO validation: label-free scores not computed: {text}")
        self._unavailable_said = text or self._unavailable_said
        return text

    def fixed_parts(
        self, index: int, batch: Mapping[str, torch.Tensor], prepared: PreparedBatch, reference, first: bool
    ) -> FixedParts:
        """What validation batch ``index`` yields whatever the trained weights
        ([`FixedParts`][well_upao.trainers.upao_validation.FixedParts]): computed at the first validation that sees the
        batch and kept (on the CPU) for the batches of a short validation (``trainer.short_validation_length``, the
        batches every validation sees), as long as the batch comes back the same
        ([`batch_fingerprint`][well_upao.trainers.upao_validation.batch_fingerprint]); the batches only a full
        validation sees are computed each time."""
        fingerprint = batch_fingerprint(batch)
        kept = self.fixed.get(index)
        if kept is not None and kept.fingerprint == fingerprint:
            return kept
        setup = self.setup
        start = None if reference is None else setup.prepared(batch, reference, False, bound=prepared.bound)
        if start is None:
            start_prediction = self.start.kept_prediction(index, prepared.prediction, first)
            start_scores = None
        else:
            start_prediction = start.prediction
            start_scores = self.batch_scores(start, None, self.rollout_backtest(batch, reference))
        mask = slots_mask(setup.channel_slots, prepared.history.device)
        parts = FixedParts(
            fingerprint,
            None if start_prediction is None else self.departure_reference(start_prediction).cpu(),
            None if start_scores is None else {name: value.cpu() for name, value in start_scores.items()},
            {name: curve.cpu() for name, curve in classical_curves(prepared.history, mask).items()},
            {name: value.cpu() for name, value in self.classical_residuals(prepared).items()},
            {name: matrices.cpu() for name, matrices in batch_start_matrices(prepared.history, mask).items()},
        )
        if index < self.run.short_validation_length:
            self.fixed[index] = parts
        return parts

    def departure_reference(self, start: torch.Tensor) -> torch.Tensor:
        """The frames of the starting model's shifted prediction ``start`` of a batch that the departure compares
        with: the next frame, or the last ``K`` of a ``K``-step rollout."""
        rolled = self.setup.rollout
        return start[:, -1] if rolled.one_step else start[:, -rolled.steps :]

    def batch_scores(
        self, prepared: PreparedBatch, departure: torch.Tensor | None, backtest: torch.Tensor | None = None
    ):
        """Per-sample scores of a validation batch (``BoundResidual.scorecard``): the prediction of the next frame
        against the observed window; the backbone's shifted prediction of the last observed frame (the backtest);
        ``departure``: the starting model's prediction of the same frames
        ([`departure_reference`][well_upao.trainers.upao_validation.UpaoValidation.departure_reference], the departure's
        reference). Over a ``K``-step rollout (``trainer.rollout_steps``), the rollout's card with ``backtest`` the last
        frame of the rollout that ends on the last observed frame
        ([`rollout_backtest`][well_upao.trainers.upao_validation.UpaoValidation.rollout_backtest])."""
        p, rolled = prepared, self.setup.rollout
        bound = p.bound.in_double()
        if not rolled.one_step:
            steps = rolled.steps
            return bound.rollout_scorecard(p.history, p.prediction[:, -steps:], p.dt.double(), departure, backtest)
        backtest = p.prediction[:, -2] if not self.setup.one_frame and p.prediction.shape[1] >= 2 else None
        return bound.scorecard(p.history, p.prediction[:, -1], p.dt.double(), departure, backtest)

    @torch.no_grad()
    def rollout_backtest(self, batch: Mapping[str, torch.Tensor], model=None) -> torch.Tensor | None:
        """With ``trainer.rollout_steps=K > 1``: the last frame ``(B, *space, 18)`` (physical units) of the
        ``K``-step rollout that ends on the last observed frame of a raw (validation) batch, started from the
        window's first ``T - K`` frames, each prediction appended (the backbone is causal: a window shorter than its
        history is served as such). ``None`` for one step (the backtest is the shifted prediction), a one-frame
        model, or a history shorter than ``K + 2`` frames."""
        setup = self.setup
        steps = setup.rollout.steps
        if setup.rollout.one_step or setup.one_frame or setup.history < steps + 2:
            return None
        model = self.run.model if model is None else model
        slots = list(setup.channel_slots)
        given = setup.space.to_model(batch["input_fields"].to(setup.device))
        window = into_slots(given[:, : setup.history - steps], slots)
        rolled = autoregress(
            lambda w: model(w, sequence=True)[:, -1][..., slots],
            window,
            steps,
            slide=False,
            feed=lambda frame: into_slots(frame, slots),
        )
        return into_slots(setup.space.to_physical(rolled[:, -1]), slots)

    # ------------------------------------------------------------------ the evidence per horizon
    def can_keep_prior(self) -> bool:
        """Whether ``best.pt`` can predict with a prior: a backbone (``NATransformer.set_prior``) and
        ``trainer.prior_candidate``; a one-frame model of the Well's harness cannot (it is scored, not replaced)."""
        return self.settings.prior_candidate and hasattr(self.run.bare_model, "set_prior")

    @torch.no_grad()
    def model_backtest_curve(
        self, batch: Mapping[str, torch.Tensor], history: torch.Tensor, shifted: torch.Tensor | None = None
    ) -> dict[str, torch.Tensor]:
        """``{"model": curve}`` for a backbone, per sample on the observed window ``history`` (physical, 18 slots;
        ``predict.evidence``): one step ahead, the mean over every frame after the first ``START``, each predicted
        from the true frames before it (``shifted``: the batch's shifted predictions of frames ``1 .. T-1`` where the
        objective already made them, else one causal pass); beyond one step, only when the trust window lies beyond
        it, its rollout from the first ``START`` frames, each prediction fed back (``T - START`` passes: the default
        window, one step, does not pay them). Empty for a one-frame model or a history of ``START`` frames or less."""
        return self.model_curves(batch, history, shifted)[0]

    @torch.no_grad()
    def model_curves(
        self, batch: Mapping[str, torch.Tensor], history: torch.Tensor, shifted: torch.Tensor | None = None
    ) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        """[`model_backtest_curve`][well_upao.trainers.upao_validation.UpaoValidation.model_backtest_curve] and, from
        the same predictions, the model's start matrix per sample ``(B, A, A)`` (``expected_starts.own_start_matrix``:
        its one-step errors of every frame, and its rollout from the first ``START`` frames where one was run)."""
        setup = self.setup
        mask = slots_mask(setup.channel_slots, history.device)
        start = START
        if setup.one_frame or history.shape[1] <= start:
            return {}, {}
        slots = list(setup.channel_slots)
        observed = into_slots(setup.space.to_model(batch["input_fields"].to(history.device)), slots)
        if shifted is None:
            predicted = self.run.model(observed[:, :-1], sequence=True)[..., slots]
            shifted = into_slots(setup.space.to_physical(predicted), slots)
        one_step_channels = backtest_curve(shifted[:, start - 1 :], history, start, mask, per_channel=True)
        one_step = one_step_channels.mean(-1)
        rho = step_over_spread(history, mask)
        if self.settings.trust_window == "one_step":
            return {"model": one_step.mean(1, keepdim=True)}, {
                "model": own_start_matrices(one_step_channels[:, :0], one_step_channels, rho)
            }
        model = self.run.model
        rolled_frames = autoregress(
            lambda w: model(w, sequence=True)[:, -1][..., slots],
            observed[:, :start],
            history.shape[1] - start,
            slide=False,
            feed=lambda frame: into_slots(frame, slots),
        )
        predicted = into_slots(setup.space.to_physical(rolled_frames), slots)
        rolled = backtest_curve(predicted, history, start, mask, per_channel=True)
        return {"model": with_one_step(rolled.mean(-1), one_step)}, {
            "model": own_start_matrices(rolled, one_step_channels, rho)
        }

    @torch.no_grad()
    def classical_residuals(self, prepared: PreparedBatch) -> dict[str, torch.Tensor]:
        """Per sample, each classical predictor's one-step residual ratio (its extrapolation of the next frame from
        the observed window, ``BoundResidual.scorecard``) and whether it moved at all (``moved_<name>``: a
        prediction equal to the last frame has no rate term, so the residual cannot rank it: persistence)."""
        if self.setup.one_frame or not self.setup.rollout.one_step:
            return {}
        bound, history = prepared.bound.in_double(), prepared.history.double()
        frames = list(history.unbind(1))
        out = {}
        for name, prior in CLASSICAL_PRIORS.items():
            if len(frames) <= prior.order:
                continue
            prediction = prior.next_frame(history)
            out[f"residual_ratio_{name}"] = bound.scorecard(history, prediction, prepared.dt.double())["residual_ratio"]
            out[f"moved_{name}"] = (prediction - frames[-1]).flatten(1).abs().amax(1).gt(0).double()
        return out

    def horizon_logs(
        self, curves: Mapping[str, list[torch.Tensor]], starts: Mapping[str, list[torch.Tensor]] | None = None
    ) -> tuple[dict[str, Any], TrustEvidence]:
        """The median curves, the trust window's evidence and the prior it picks (for the judge, ``TrustEvidence``),
        and the expected VRMSE without labels of the model and of the prior for that window (rule 3 from each
        sample's start matrix, ``starts``: ``{name: [(B, A, A), ...]}``, every sample a history window; keys
        without the ``valid_`` prefix)."""
        medians = median_curves(curves)
        window = self.settings.trust_window
        _, evidence = pick(medians, window)  # every curve read to the same horizons
        values = {name: e.value for name, e in evidence.items()}
        prior = choose_prior(values)
        logs: dict[str, Any] = {"backtest_curves": medians, "trust_window": window, "trust_prior": prior}
        logs |= {f"score_window_{name}": value for name, value in values.items()}
        reach = evidence.get("model", evidence.get(prior)) if prior else None
        logs["trust_reach"] = reach.describe() if reach is not None else None
        per_window = {name: [m for part in parts for m in part.unbind(0)] for name, parts in (starts or {}).items()}
        estimates = expected_starts_per_window(per_window, window)
        logs["expected_vrmse"] = {n: e.as_dict() for n, e in estimates.items() if n in ("model", prior)} or None
        return logs, TrustEvidence(values, prior, logs["trust_reach"])

    # ------------------------------------------------------------------ the labelled record
    @torch.no_grad()
    def paper_vrmse(self, full: bool, prior: str | None = None) -> dict[str, float]:
        """The labelled record's logs (``labelled_record``)."""
        return self.labelled_record(full, prior)[1]

    @torch.no_grad()
    def labelled_record(self, full: bool, prior: str | None = None) -> tuple[float, dict[str, float]]:
        """The paper's VRMSE (one-step predictions over whole validation trajectories), per channel and mean, and the
        Well's rollout windows ([`rollout_curve`][well_upao.trainers.upao_validation.UpaoValidation.rollout_curve]);
        with a ``prior`` (the picked classical predictor, for a model that can keep one) also the prior's,
        ``valid_prior_paper_VRMSE`` and ``valid_prior_rollout_VRMSE_<a:b>``: labels for the record (a study's oracle),
        never read by the selection, which scores the prior label-free."""
        setup, run = self.setup, self.run
        run.model.eval()
        dataset = run.datamodule.rollout_val_dataset
        count = len(dataset) if full else min(self.settings.vrmse_trajectories, len(dataset))
        if setup.one_frame:
            predictor = HarnessModel("model", run.bare_model, setup.formatter, setup.history, setup.space)
        else:
            predictor = BackboneModel("model", run.bare_model, setup.space)
        per_channel, prior_per_channel = [], []
        curves: dict[str, list[list[float]]] = {"model": [], "prior": []}
        for index in range(count):
            sample = dataset[index]
            if setup.one_frame:  # a one-frame model reads the sample's constant fields after its frames
                predictor.constant_fields = sample.get("constant_fields")
            trajectory = torch.cat([sample["input_fields"], sample["output_fields"]]).to(run.device)
            prediction = one_step_all(predictor, trajectory, setup.history, None)
            per_channel.append(vrmse_paper(prediction, trajectory[setup.history :]))
            curves["model"].append(self.rollout_curve(predictor, trajectory))
            if prior is not None and self.can_keep_prior():
                with kept_prior(run.bare_model, classical_prior(prior)):
                    predicted = one_step_all(predictor, trajectory, setup.history, None)
                    curves["prior"].append(self.rollout_curve(predictor, trajectory))
                prior_per_channel.append(vrmse_paper(predicted, trajectory[setup.history :]))
        values = torch.stack(per_channel).mean(0)
        names = run.field_names
        logs = {f"valid_paper_VRMSE_{name}": v.item() for name, v in zip(names, values, strict=True)}
        paper = values.mean().item()
        logs["valid_paper_VRMSE"] = paper
        logs |= rollout_window_logs(curves["model"], "valid_rollout_VRMSE")
        if prior_per_channel:
            logs["valid_prior_paper_VRMSE"] = torch.stack(prior_per_channel).mean().item()
            logs |= rollout_window_logs(curves["prior"], "valid_prior_rollout_VRMSE")
        return paper, logs

    def rollout_curve(self, predictor, trajectory: torch.Tensor) -> list[float]:
        """The Well's VRMSE (mean over channels) at each step of a rollout of up to ``trainer.rollout_vrmse_steps``
        from the trajectory's first window (as long as the trajectory holds); empty when it is 0."""
        history = self.setup.history
        steps = min(self.settings.rollout_vrmse_steps, trajectory.shape[0] - history)
        if steps < 1:
            return []
        predicted = rollout(predictor, trajectory, history, steps, None)[0]
        target = trajectory[history : history + steps]
        return vrmse_well(predicted, target, self.run.metadata.n_spatial_dims).mean(-1).tolist()


def classical_residual_logs(scores: Mapping[str, list[torch.Tensor]]) -> dict[str, Any]:
    """``score_residual_ratio_<name>`` per classical predictor (mean over the validation samples) and
    ``residual_blind``: the predictors the residual cannot rank (no sample moved: their rate term is zero)."""
    logs: dict[str, Any] = {}
    blind = []
    for name in CLASSICAL_PRIORS:
        if f"residual_ratio_{name}" not in scores:
            continue
        logs[f"score_residual_ratio_{name}"] = float(torch.cat(scores[f"residual_ratio_{name}"]).mean())
        if not torch.cat(scores[f"moved_{name}"]).any():
            blind.append(name)
    return logs | ({"residual_blind": blind} if logs else {})


def collect(into: dict[str, list[torch.Tensor]], scores: Mapping[str, torch.Tensor]) -> None:
    """Add one batch's per-sample scores (moved to the CPU) to the lists of ``into``."""
    for name, value in scores.items():
        into.setdefault(name, []).append(value.cpu())


def rollout_window_logs(curves: list[list[float]], prefix: str) -> dict[str, Any]:
    """The Well's windows (``well_upao.predict.windows``) of the mean per-step curve of several rollouts (each step
    averaged over the rollouts that reached it): ``<prefix>_<a:b>`` for the windows held, ``<prefix>_steps`` (the
    steps every rollout ran) and ``<prefix>_last`` (the VRMSE at that step); nothing without rollouts."""
    steps = min((len(c) for c in curves), default=0)
    if steps == 0:
        return {}
    mean = [sum(c[k] for c in curves) / len(curves) for k in range(steps)]
    logs = {f"{prefix}_{label}": value for label, value in window_means(mean).items() if value is not None}
    return logs | {f"{prefix}_steps": steps, f"{prefix}_last": mean[-1]}
