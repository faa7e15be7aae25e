"""The selection: which validated candidate ``best.pt`` holds, and why.

Each validation gives a candidate (the model at that epoch; epoch 0 is the model as training started) with its
criterion value (lower is better) and, in a UPAO run, what its validation measured of it label-free
(``trainers.guard.Candidate``: its scorecard, the start's on the same batches, its evidence for the trust window).
``Selection`` decides, from those alone:

* *improved*: the criterion is below the best so far, and the run's judge (``Judge.check``, the UPAO
  scorecard against the start; ``trainers/guard.py``) does not refuse the candidate; a refusal is counted, and while
  the start is still the best its reason is kept (``kept_start_reason``);
* *early stopping*: ``patience`` validations in a row without improvement (``0``: never);
* *the prior*: the judge's prior check (``Judge.prior_check``, the selected candidate's backtest for the trust
  window against the prior the last validation chose, on the same batches) may prefer that prior
  (``Judge.prior_choice``); ``best.pt`` then predicts with it until a later candidate is selected.

What to write is returned as a ``Decision``; the training loop saves the file. The state goes into every
checkpoint (``Selection.state``) and comes back on resume (``Selection.restore``); its facts are the
selection keys of every ``metrics.jsonl`` validation line (``Selection.facts``, ``trainers/records.py``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from well_upao.trainers.guard import Candidate

logger = logging.getLogger(__name__)


class Judge(Protocol):
    """What the selection asks the run's label-free judge (``trainers.guard.Guard``; a run without one passes
    ``None``: nothing is refused, no prior is kept)."""

    def check(self, candidate: Candidate) -> str | None: ...

    def unchecked(self, candidate: Candidate) -> str | None: ...

    def prior_check(self, best: Candidate) -> str | None: ...

    def prior_choice(self) -> str | None: ...


@dataclass(frozen=True)
class Decision:
    """The outcome of one validation: whether the candidate was selected, why the guard refused it (or
    ``None``), what ``best.pt`` must now hold: ``"candidate"`` (the model as it is), ``"prior"`` (the model
    predicting with the prior named ``prior``) or ``None`` (keep the file), and what the guard could not check on it
    (or ``None``)."""

    improved: bool
    guard_reason: str | None
    save: str | None
    prior_reason: str | None
    guard_unchecked: str | None = None
    prior: str | None = None


@dataclass
class Selection:
    """The selection's state (see the module's docstring)."""

    patience: int = 0
    #: the selected candidate's criterion value (``None`` before any validation)
    best_value: float | None = None
    #: the epoch whose model best.pt holds (0: the model as training started); ``None`` before any validation
    best_epoch: int | None = None
    #: why the selection kept the starting model when something other than its criterion decided
    kept_start_reason: str | None = None
    #: how many candidates the guard refused
    guard_rejections: int = 0
    #: why best.pt holds a prior instead of the selected candidate, and which prior (a classical predictor's name)
    kept_prior_reason: str | None = None
    kept_prior_name: str | None = None
    #: what the selected candidate's validation measured of it (``None`` without a judge), for the prior check
    best: Candidate | None = None
    #: validations since the last improvement (early stopping; the adapter switch restarts it)
    without_improvement: int = 0
    #: the last thing the guard said it could not check (logged once per new gap; not part of the state)
    unchecked_said: str | None = field(default=None, compare=False)

    def start(self, value: float, candidate: Candidate | None, judge: Judge | None) -> Decision:
        """The model as training started: the first candidate, selected whatever its value."""
        self.best_value, self.best_epoch = value, 0
        return self._place(0, candidate, judge, improved=True, guard_reason=None)

    def consider(self, epoch: int, value: float, candidate: Candidate | None, judge: Judge | None) -> Decision:
        """A validated candidate (``value``: its criterion; ``candidate``: what its validation measured of it,
        ``None`` without a judge)."""
        improved = self.best_value is None or value < self.best_value
        checked = judge is not None and candidate is not None and improved and self.best_epoch is not None
        guard_reason = judge.check(candidate) if checked else None
        if guard_reason:  # the criterion prefers the candidate; the scorecard says it is worse than the start
            improved = False
            self.guard_rejections += 1
            if self.best_epoch == 0:
                self.kept_start_reason = f"guard: {guard_reason}"
            logger.info(f"epoch {epoch}: the guard refused the candidate ({guard_reason})")
        unchecked = judge.unchecked(candidate) if judge is not None and candidate is not None else None
        if unchecked and unchecked != self.unchecked_said:  # each new gap once in the log
            logger.info(f"epoch {epoch}: the guard could not check everything: {unchecked}")
        self.unchecked_said = unchecked or self.unchecked_said
        if improved:
            self.best_value, self.best_epoch = value, epoch
            self.without_improvement = 0
        else:
            self.without_improvement += 1
        return replace(self._place(epoch, candidate, judge, improved, guard_reason), guard_unchecked=unchecked)

    def _place(
        self, epoch: int, candidate: Candidate | None, judge: Judge | None, improved: bool, guard_reason
    ) -> Decision:
        """What best.pt holds after this validation: the selected candidate, unless the prior check prefers the
        prior (a prior kept earlier stays until a new candidate is selected)."""
        if improved:
            self.best = candidate
        reason = judge.prior_check(self.best) if judge is not None and self.best is not None else None
        kept_before, self.kept_prior_reason = self.kept_prior_reason, reason
        if reason is None:
            if not improved:  # best.pt still holds what it held (the prior too: only a new candidate replaces it)
                self.kept_prior_reason = kept_before
            return Decision(improved, guard_reason, "candidate" if improved else None, None)
        if kept_before is None or improved:
            logger.info(f"epoch {epoch}: best.pt keeps the prior: {reason}")
            self.kept_prior_name = judge.prior_choice()
            return Decision(improved, guard_reason, "prior", reason, prior=self.kept_prior_name)
        return Decision(improved, guard_reason, None, reason)

    @property
    def should_stop(self) -> bool:
        """Early stopping: ``patience`` validations without improvement."""
        return 0 < self.patience <= self.without_improvement

    def facts(self) -> dict[str, Any]:
        """The selection keys of a ``metrics.jsonl`` validation line."""
        kept = self.best_epoch == 0
        return {
            "best_epoch": self.best_epoch,
            "kept_start": kept,
            "kept_start_reason": self.kept_start_reason if kept else None,
            "guard_rejections": self.guard_rejections,
            "kept_prior": self.kept_prior_reason is not None,
            "kept_prior_reason": self.kept_prior_reason,
            "kept_prior_name": self.kept_prior_name if self.kept_prior_reason is not None else None,
        }

    def state(self) -> dict[str, Any]:
        """What a checkpoint's ``train`` section keeps of the selection (its keys are the checkpoint schema's)."""
        return {
            "epochs_without_improvement": self.without_improvement,
            "best_epoch": self.best_epoch,
            "kept_start_reason": self.kept_start_reason,
            "kept_prior_reason": self.kept_prior_reason,
            "kept_prior_name": self.kept_prior_name,
            "best_candidate": None if self.best is None else self.best.record(),
            "guard_rejections": self.guard_rejections,
        }

    def restore(self, train: dict[str, Any], best_value: float | None) -> None:
        """The state of a resumed run (its checkpoint's ``train`` section and ``best_validation_loss``)."""
        self.best_value = best_value
        self.best_epoch = train.get("best_epoch")
        self.kept_start_reason = train.get("kept_start_reason")
        self.kept_prior_reason = train.get("kept_prior_reason")
        self.kept_prior_name = train.get("kept_prior_name")
        self.best = restored_candidate(train)
        self.guard_rejections = int(train.get("guard_rejections", 0))
        self.without_improvement = int(train.get("epochs_without_improvement", 0))


def restored_candidate(train: dict[str, Any]) -> Candidate | None:
    """The selected candidate a checkpoint's ``train`` section keeps (``best_candidate``); ``None`` for a checkpoint
    written before the selection kept it typed (its prior check then waits for the next selected candidate)."""
    record = train.get("best_candidate")
    return Candidate.from_record(record) if record else None
