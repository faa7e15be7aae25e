"""``trainers/selection.py``: which candidate best.pt holds, from the criterion, the guard and the prior check.
The judge below is written by hand; the expected decisions follow from the rules in the module's docstring."""

from __future__ import annotations

from well_upao.physics.scores import Scorecard
from well_upao.trainers.guard import Candidate
from well_upao.trainers.selection import Selection, restored_candidate


class Judge:
    """A guard that refuses the epochs in ``refuse`` (a candidate's epoch is its card's ``floor`` here); a prior check
    that prefers the prior for the candidates whose backtest exceeds ``prior_backtest``."""

    def __init__(self, refuse=(), prior_backtest: float | None = None):
        self.refuse, self.prior_backtest = set(refuse), prior_backtest

    def check(self, candidate):
        return "worse than the start" if candidate.card.floor in self.refuse else None

    def unchecked(self, candidate):
        return None

    def prior_choice(self):
        return "extrap2"

    def prior_check(self, best):
        if self.prior_backtest is None or best.card.backtest <= self.prior_backtest:
            return None
        return f"backtest {best.card.backtest} vs {self.prior_backtest}"


def logs(epoch: int, backtest: float = 1.0) -> Candidate:
    """A validated candidate: its epoch (as its floor, for the judge above) and its backtest."""
    return Candidate(Scorecard(floor=epoch, backtest=backtest), window=backtest)


def test_the_criterion_selects_and_early_stopping_counts_validations_without_improvement():
    selection, judge = Selection(patience=2), Judge()
    assert selection.start(5.0, logs(0), judge).save == "candidate"
    assert selection.consider(1, 4.0, logs(1), judge).save == "candidate"
    assert selection.best_epoch == 1 and selection.best_value == 4.0
    assert selection.consider(2, 4.5, logs(2), judge).save is None  # worse: best.pt keeps epoch 1
    assert not selection.should_stop
    selection.consider(3, 4.0, logs(3), judge)  # equal is not better
    assert selection.should_stop and selection.best_epoch == 1
    assert selection.facts()["kept_start"] is False


def test_a_guard_refusal_keeps_the_start_and_says_why():
    selection, judge = Selection(), Judge(refuse={1})
    selection.start(5.0, logs(0), judge)
    decision = selection.consider(1, 1.0, logs(1), judge)
    assert not decision.improved and decision.save is None and decision.guard_reason == "worse than the start"
    facts = selection.facts()
    assert facts["best_epoch"] == 0 and facts["kept_start"] and facts["guard_rejections"] == 1
    assert facts["kept_start_reason"] == "guard: worse than the start"
    # the next candidate the guard accepts is selected (negative control: without the guard epoch 1 would be)
    assert selection.consider(2, 2.0, logs(2), judge).save == "candidate" and selection.best_epoch == 2
    assert Selection().consider(1, 1.0, logs(1), Judge()).save == "candidate"


def test_the_prior_is_kept_until_a_better_candidate_replaces_it():
    selection, judge = Selection(), Judge(prior_backtest=0.5)
    first = selection.start(5.0, logs(0, backtest=2.0), judge)
    assert first.save == "prior" and "backtest 2.0" in first.prior_reason
    # a selected candidate still worse than the prior: best.pt holds the prior again, with the new reason
    second = selection.consider(1, 4.0, logs(1, backtest=1.0), judge)
    assert second.improved and second.save == "prior" and "backtest 1.0" in selection.kept_prior_reason
    # not selected: the file is left as it is, still the prior
    assert selection.consider(2, 4.5, logs(2, backtest=0.1), judge).save is None
    assert selection.facts()["kept_prior"]
    # a selected candidate the prior check accepts replaces the prior
    third = selection.consider(3, 3.0, logs(3, backtest=0.4), judge)
    assert third.save == "candidate" and selection.kept_prior_reason is None and not selection.facts()["kept_prior"]


def test_the_state_survives_a_resume():
    selection, judge = Selection(patience=3), Judge(refuse={2}, prior_backtest=0.5)
    selection.start(5.0, logs(0, backtest=2.0), judge)
    selection.consider(1, 4.0, logs(1, backtest=0.2), judge)
    selection.consider(2, 1.0, logs(2), judge)
    resumed = Selection(patience=3)
    resumed.restore(selection.state(), selection.best_value)
    assert resumed == selection


def test_a_checkpoint_written_before_candidates_were_typed_restores_no_candidate():
    """Such a checkpoint kept the selected candidate's validation scores by their ``metrics.jsonl`` keys: not read
    back (the prior check waits for the next selected candidate); a typed one round-trips."""
    assert restored_candidate({"best_scores": {"valid_score_backtest": 0.3}}) is None
    assert restored_candidate({}) is None
    candidate = Candidate(Scorecard(0.1, 1.5, 0.2, 0.3), Scorecard(0.1, 1.2, 0.2, 0.3), 0.7)
    assert restored_candidate({"best_candidate": candidate.record()}) == candidate
