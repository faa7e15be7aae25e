"""The UPAO run's label-free judge: what the selection (``trainers/selection.py``) asks of a candidate, from what its
validation measured of it ([`Candidate`][well_upao.trainers.guard.Candidate]: its scorecard, the start's,
its evidence for the trust window; ``well_upao.physics.scores``), never from labels. The loop composes the judge and
hands it each validation ([`Guard.observe`][well_upao.trainers.guard.Guard.observe], the one place its state changes).

* the guard (``trainer.guard``): a candidate the scorecard finds worse than the start is refused
  ([`guard_decision`][well_upao.trainers.guard.guard_decision], against the start's card on the same batches, else the
  card of the start's own validation);
* the prior (``trainer.prior_candidate``), per horizon (``trainer.trust_window``: ``one_step``, ``6:12`` or
  ``13:30``): the classical predictor (persistence, linear or quadratic extrapolation of the window) whose backtest
  on the observed history is lowest for that window (``well_upao.predict.evidence``; the classical predictors are the
  entries of ``well_upao.predict.classical``; ``valid_score_window_<name>`` in ``metrics.jsonl``)
  is the prior, chosen once per validation ([`choose_prior`][well_upao.trainers.guard.choose_prior]) and observed by
  the judge with its evidence ([`TrustEvidence`][well_upao.trainers.guard.TrustEvidence]); the selected candidate is
  set aside for it when the candidate's own backtest for the window is worse by more than the guard's backtest
  tolerance: ``candidate > (1 + guard_backtest_tolerance) * prior`` (the rule fixed before it was measured).
  ``best.pt`` then predicts with that prior (``NATransformer.set_prior``);
* the verdict of the first validation: the start against that prior, by the same rule.

The guard's rules ([`guard_decision`][well_upao.trainers.guard.guard_decision]): why its ``floor`` rule compares the
departure with the start's backtest: when the start's residual is at the floor, the residual cannot tell predictions
apart within about ``rho_obs`` of a step, so it gives no reason for any move; and if the start's error on the target is
about its backtest ``e`` (both in step units), a candidate that moved by ``m`` has an error of at least ``m - e``
(triangle inequality), worse than the start's once ``m > 2 e``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from well_upao.physics.scores import Scorecard
from well_upao.predict.classical import is_classical
from well_upao.predict.windows import WINDOWS


@dataclass
class GuardSettings:
    """``trainer.guard_*``: ``floor_tolerance``: the start's residual ratio at or below which its residual counts as
    *at the floor*; ``departure_limit``: the departure from the start, in multiples of the start's backtest error,
    beyond which a candidate moved further than anything the floor can justify (2: provably worse than the start
    when the backtest estimates the start's error); ``backtest_tolerance``: the relative increase of the backtest
    error over the start's that makes a candidate worse on the observed history."""

    floor_tolerance: float = 2.0
    departure_limit: float = 2.0
    backtest_tolerance: float = 0.1


def guard_decision(start: Scorecard, candidate: Scorecard, settings: GuardSettings | None = None) -> str | None:
    """Why the candidate is worse than the start by the scorecard, or ``None`` when nothing says so. Two rules,
    each on label-free scores only:

    * ``floor``: the start's residual is already at the floor (``start.residual_ratio <= floor_tolerance``), so
      the residual cannot resolve any move, and the candidate moved further from the start than the start's own
      estimated error allows (``candidate.departure > departure_limit * start.backtest``; see the module
      docstring);
    * ``backtest``: the candidate predicts the observed last frame of the history worse than the start did
      (``candidate.backtest > (1 + backtest_tolerance) * start.backtest``).

    A ``nan`` score never triggers its rule."""
    s = settings or GuardSettings()
    reasons = []
    if start.residual_ratio <= s.floor_tolerance and candidate.departure > s.departure_limit * start.backtest:
        reasons.append(
            f"floor: the start's residual is at the floor ({start.residual_ratio:.3g}x it, <= {s.floor_tolerance:g}) "
            f"and the candidate moved {candidate.departure:.3g} of a step from the start, more than "
            f"{s.departure_limit:g}x the start's backtest error {start.backtest:.3g}"
        )
    if candidate.backtest > (1 + s.backtest_tolerance) * start.backtest:
        reasons.append(
            f"backtest: the candidate predicts the observed last history frame worse than the start "
            f"({candidate.backtest:.3g} vs {start.backtest:.3g} of its step)"
        )
    return "; ".join(reasons) or None


def guard_unchecked(start: Scorecard | None, candidate: Scorecard) -> list[str]:
    """What [`guard_decision`][well_upao.trainers.guard.guard_decision] could not check, one line per rule with the
    scores it lacked (an empty list when both rules were checked): a rule whose scores are ``nan`` never triggers, so a
    guard that found nothing wrong says here what it did not look at."""
    if start is None:
        return ["floor and backtest rules: no scorecard of the start (the start was not validated)"]
    needs = {
        "floor": (("start", "residual_ratio"), ("candidate", "departure"), ("start", "backtest")),
        "backtest": (("candidate", "backtest"), ("start", "backtest")),
    }
    cards = {"start": start, "candidate": candidate}
    out = []
    for rule, scores in needs.items():
        lacking = [f"{who}'s {name}" for who, name in scores if not math.isfinite(getattr(cards[who], name))]
        if lacking:
            out.append(f"{rule} rule not checked: {', '.join(lacking)} n/a")
    return out


def choose_prior(values: Mapping[str, float]) -> str | None:
    """The prior rule's choice: the classical predictor whose evidence for the trust window (``values``, by
    predictor) is lowest, ``None`` where none has finite evidence."""
    classical = {name: value for name, value in values.items() if is_classical(name) and math.isfinite(value)}
    return min(classical, key=classical.get) if classical else None


@dataclass(frozen=True)
class TrustEvidence:
    """What a validation measured of the trust window, for the judge: every predictor's evidence for it
    (``values``, logged as ``valid_score_window_<name>``; the validated model's under ``model``), the prior it
    chose (``prior``, [`choose_prior`][well_upao.trainers.guard.choose_prior]) and how far the evidence reaches
    (``reach``, ``valid_trust_reach``)."""

    values: Mapping[str, float]
    prior: str | None
    reach: str | None = None


@dataclass(frozen=True)
class Candidate:
    """What a validation measured, label-free, of the model it validated: its scorecard (``card``), the starting
    model's on the same batches (``start_card``; ``None`` where the start was not scored there) and its evidence
    for the trust window (``window``; ``nan`` without)."""

    card: Scorecard
    start_card: Scorecard | None = None
    window: float = math.nan

    def record(self) -> dict[str, Any]:
        """The candidate as a checkpoint keeps it (plain numbers)."""
        return {
            "card": asdict(self.card),
            "start_card": None if self.start_card is None else asdict(self.start_card),
            "window": self.window,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Candidate:
        start = record.get("start_card")
        return cls(Scorecard(**record["card"]), None if start is None else Scorecard(**start), record["window"])


@dataclass(frozen=True)
class Validated:
    """One validation of a UPAO run, as the loop hands it to the judge and the selection: the criterion ``value``
    (lower is better), the ``logs`` it writes to ``metrics.jsonl`` (keys with their ``valid_`` prefix), the model it
    validated as a ``candidate`` and the trust window's ``evidence``."""

    value: float
    logs: Mapping[str, Any]
    candidate: Candidate
    evidence: TrustEvidence


@dataclass
class Guard:
    """The run's judge. Set when the run is composed: ``enabled`` (``trainer.guard``, and the start validated),
    ``settings`` (its thresholds), ``priors`` (whether the prior rule applies: ``trainer.prior_candidate`` and a
    model that can predict with a prior), ``trust_window`` (``trainer.trust_window``); ``start_card``: a resumed
    run's start card (its checkpoint's). Changed only by [`observe`][well_upao.trainers.guard.Guard.observe]:
    ``start_card`` (the start's card, from the first validation, the reference when a validation did not score the
    start) and ``evidence`` (the last validation's evidence for the trust window and the prior it chose; ``None``
    before any validation)."""

    enabled: bool = True
    settings: GuardSettings = field(default_factory=GuardSettings)
    priors: bool = False
    trust_window: str = "one_step"
    start_card: Scorecard | None = None
    evidence: TrustEvidence | None = None

    def __post_init__(self) -> None:
        if self.trust_window not in WINDOWS:
            raise ValueError(f"trainer.trust_window must be one of {sorted(WINDOWS)}, got {self.trust_window!r}")

    def observe(self, validated: Validated, first: bool) -> None:
        """What a validation tells the judge, the one place its state changes: the trust window's evidence and, at
        the run's first validation (``first``: before any step, no start card yet), the start's card."""
        self.evidence = validated.evidence
        if first:
            self.start_card = validated.candidate.card

    def reference(self, candidate: Candidate) -> Scorecard | None:
        """The start's card the guard compares with: the one measured on the candidate's batches, else
        ``start_card``."""
        start = candidate.start_card
        return self.start_card if start is None or math.isnan(start.residual_ratio) else start

    def check(self, candidate: Candidate) -> str | None:
        """Why a candidate is worse than the start by the scorecard, or ``None``."""
        start = self.reference(candidate) if self.enabled else None
        if start is None:
            return None
        return guard_decision(start, candidate.card, self.settings)

    def unchecked(self, candidate: Candidate) -> str | None:
        """What the guard could not check on a candidate and why
        ([`guard_unchecked`][well_upao.trainers.guard.guard_unchecked]), or ``None`` (everything checked, or the guard
        is off: ``guard`` in the run's facts)."""
        if not self.enabled:
            return None
        return "; ".join(guard_unchecked(self.reference(candidate), candidate.card)) or None

    def worse_than_prior(self, candidate: float, prior: float) -> bool:
        return candidate > (1 + self.settings.backtest_tolerance) * prior

    def prior_choice(self) -> str | None:
        """The prior the last validation chose (``None`` without evidence, or without priors)."""
        return self.evidence.prior if self.evidence is not None and self.priors else None

    def prior_check(self, best: Candidate) -> str | None:
        """Why the prior should be kept instead of the selected candidate ``best`` (the prior and its evidence from
        the last validation, scored on the same batches), or ``None`` (also without priors)."""
        compared = self.compared(best)
        if compared is None or not self.worse_than_prior(compared[1], compared[2]):
            return None
        choice, candidate, prior = compared
        return (
            f"the selected model's backtest for {self.trust_window} is worse than {choice}'s "
            f"({candidate:.3g} vs {prior:.3g} of a step; {self.evidence.reach})"
        )

    def prior_verdict(self, start: Candidate) -> str | None:
        """The first validation's comparison of the start with the prior, one line (``None`` without priors)."""
        compared = self.compared(start)
        if compared is None:
            return None
        choice, value, prior = compared
        reach = self.evidence.reach
        if self.worse_than_prior(value, prior):
            return f"the start is worse than {choice} for {self.trust_window}: {value:.3g} vs {prior:.3g} ({reach})"
        return f"the start is not worse than {choice} for {self.trust_window}: {value:.3g} vs {prior:.3g} ({reach})"

    def compared(self, candidate: Candidate) -> tuple[str, float, float] | None:
        """``(prior, the candidate's evidence, the prior's)`` for the trust window (the prior's from the last
        validation), ``None`` without priors or evidence."""
        choice = self.prior_choice()
        if choice is None or not math.isfinite(candidate.window):
            return None
        return choice, float(candidate.window), float(self.evidence.values[choice])

    def facts(self) -> dict[str, Any]:
        """What checkpoints and the first ``metrics.jsonl`` line record of the judge."""
        return {
            "guard": self.enabled,
            "guard_start": None if self.start_card is None else asdict(self.start_card),
            "prior_candidate": self.priors,
            "trust_window": self.trust_window,
        }
