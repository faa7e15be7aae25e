"""The UPAO run's label-free judge: what the selection (``trainers/selection.py``) asks of a candidate, from the
scorecards its validation logged (``valid_score_*``, ``well_upao.physics.scores``), never from labels.

* the guard (``trainer.guard``): a candidate the scorecard finds worse than the start is refused
  (:func:`guard_decision`, against the start's card on the same batches, else the card of
  the start's own validation);
* the prior (``trainer.prior_candidate``): the selected candidate is set aside for the model's prior, its
  extrapolation base with the correction switched off, when it predicts the observed last frame of the history
  worse than the prior does by more than the guard's backtest tolerance:
  ``candidate.backtest > (1 + guard_backtest_tolerance) * prior.backtest`` (the rule fixed before it was measured);
* the verdict of the first validation: the start against its prior, by the same rule.

The guard's rules (:func:`guard_decision`): why its ``floor`` rule compares the departure with the start's backtest:
when the start's residual is at the floor, the residual cannot tell predictions apart within about ``rho_obs`` of a
step, so it gives no reason for any move; and if the start's error on the target is about its backtest ``e`` (both
in step units), a candidate that moved by ``m`` has an error of at least ``m - e`` (triangle inequality), worse than
the start's once ``m > 2 e``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from well_upao.physics.scores import Scorecard


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
    """What :func:`guard_decision` could not check, one line per rule with the scores it lacked (an empty list when
    both rules were checked): a rule whose scores are ``nan`` never triggers, so a guard that found nothing wrong
    says here what it did not look at."""
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


@dataclass
class Guard:
    """``enabled``: ``trainer.guard``; ``settings``: its thresholds; ``start_card``: the start's scorecard (its first
    validation, or a resumed run's checkpoint), the reference when a validation did not score the start; ``prior``:
    the name of the model's prior (its extrapolation base, e.g. ``extrap2``), ``None`` when it has none."""

    enabled: bool = True
    settings: GuardSettings = field(default_factory=GuardSettings)
    start_card: Scorecard | None = None
    prior: str | None = None

    def reference(self, logs: Mapping[str, Any]) -> Scorecard | None:
        """The start's card the guard compares with: the one measured on the candidate's batches, else
        :attr:`start_card`."""
        start = Scorecard.from_logs(logs, prefix="valid_score_start_")
        return self.start_card if math.isnan(start.residual_ratio) else start

    def check(self, logs: Mapping[str, Any]) -> str | None:
        """Why a candidate (its validation ``logs``) is worse than the start by the scorecard, or ``None``."""
        start = self.reference(logs) if self.enabled else None
        if start is None:
            return None
        return guard_decision(start, Scorecard.from_logs(logs), self.settings)

    def unchecked(self, logs: Mapping[str, Any]) -> str | None:
        """What the guard could not check on a candidate and why (:func:`guard_unchecked`),
        or ``None`` (everything checked, or the guard is off: ``guard`` in the run's facts)."""
        if not self.enabled:
            return None
        return "; ".join(guard_unchecked(self.reference(logs), Scorecard.from_logs(logs))) or None

    def worse_than_prior(self, candidate: float, prior: float) -> bool:
        return candidate > (1 + self.settings.backtest_tolerance) * prior

    def prior_check(self, best_logs: Mapping[str, Any], logs: Mapping[str, Any]) -> str | None:
        """Why the prior should be kept instead of the selected candidate (its validation ``best_logs``; the prior's
        card from ``logs``, scored on the same batches), or ``None`` (also without a prior)."""
        base = self.prior or "its base"
        candidate, prior = backtests(best_logs, logs)
        if candidate is None or not self.worse_than_prior(candidate, prior):
            return None
        return (
            f"the selected model predicts the observed last history frame worse than {base}, the prior it corrects "
            f"(backtest {candidate:.3g} vs {prior:.3g} of its step)"
        )

    def prior_verdict(self, logs: Mapping[str, Any]) -> str | None:
        """The first validation's comparison of the start with its prior, one line (``None`` without a prior)."""
        base = self.prior or "its base"
        start, prior = backtests(logs, logs)
        if start is None:
            return None
        if self.worse_than_prior(start, prior):
            return (
                f"the pretrained correction is worse than the {base} it corrects: backtest {start:.3g} vs "
                f"{prior:.3g} of a step"
            )
        return f"the start is not worse than its prior {base}: backtest {start:.3g} vs {prior:.3g}"


def backtests(model_logs: Mapping[str, Any], logs: Mapping[str, Any]) -> tuple[float | None, float]:
    """``(model's backtest, the prior's)`` from validation logs (the model's ``valid_score_backtest`` in
    ``model_logs``, the prior's ``valid_score_prior_backtest`` in ``logs``); ``(None, nan)`` if either is missing."""
    prior = Scorecard.from_logs(logs, prefix="valid_score_prior_").backtest
    model = Scorecard.from_logs(model_logs).backtest
    if math.isnan(prior) or math.isnan(model):
        return None, math.nan
    return model, prior
