"""The UPAO run's label-free judge: what the selection (``trainers/selection.py``) asks of a candidate, from the
scorecards its validation logged (``valid_score_*``, ``well_upao.physics.scores``), never from labels.

* the guard (``trainer.guard``): a candidate the scorecard finds worse than the start is refused
  (:func:`well_upao.physics.scores.guard_decision`, against the start's card on the same batches, else the card of
  the start's own validation);
* the prior (``trainer.prior_candidate``): the selected candidate is set aside for the model's prior, its
  extrapolation base with the correction switched off, when it predicts the observed last frame of the history
  worse than the prior does by more than the guard's backtest tolerance:
  ``candidate.backtest > (1 + guard_backtest_tolerance) * prior.backtest`` (the rule fixed before it was measured);
* the verdict of the first validation: the start against its prior, by the same rule.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from well_upao.physics.scores import GuardSettings, Scorecard, guard_decision, guard_unchecked


@dataclass
class Guard:
    """``enabled``: ``trainer.guard``; ``settings``: its thresholds; ``start_card``: the start's scorecard (its first
    validation, or a resumed run's checkpoint), the reference when a validation did not score the start."""

    enabled: bool = True
    settings: GuardSettings = field(default_factory=GuardSettings)
    start_card: Scorecard | None = None

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
        """What the guard could not check on a candidate and why (:func:`well_upao.physics.scores.guard_unchecked`),
        or ``None`` (everything checked, or the guard is off: ``guard`` in the run's facts)."""
        if not self.enabled:
            return None
        return "; ".join(guard_unchecked(self.reference(logs), Scorecard.from_logs(logs))) or None

    def worse_than_prior(self, candidate: float, prior: float) -> bool:
        return candidate > (1 + self.settings.backtest_tolerance) * prior

    def prior_check(self, best_logs: Mapping[str, Any], logs: Mapping[str, Any], base: str) -> str | None:
        """Why the prior ``base`` should be kept instead of the selected candidate (its validation ``best_logs``;
        the prior's card from ``logs``, scored on the same batches), or ``None``."""
        candidate, prior = backtests(best_logs, logs)
        if candidate is None or not self.worse_than_prior(candidate, prior):
            return None
        return (
            f"the selected model predicts the observed last history frame worse than {base}, the prior it corrects "
            f"(backtest {candidate:.3g} vs {prior:.3g} of its step)"
        )

    def prior_verdict(self, logs: Mapping[str, Any], base: str) -> str | None:
        """The first validation's comparison of the start with its prior, one line (``None`` without a prior)."""
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
