"""``benchmarks/studies/prior_study.py`` (issue 42's evidence, a section of reports/trust.md): what a run kept, what an
oracle with labels would have kept, and the section written into the report without touching the rest of it. The
expected values are worked out by hand from the lines below."""

from __future__ import annotations

from pathlib import Path

import pytest
from studies import prior_study

ROOT = Path(__file__).resolve().parent.parent


def lines(truths: list[float], prior: float, best_epoch: int, kept: bool) -> list[dict]:
    out = [
        {"epoch": epoch, "valid": 1.0, "valid_paper_VRMSE": truth, "valid_prior_paper_VRMSE": prior}
        for epoch, truth in enumerate(truths)
    ]
    out[-1] |= {"best_epoch": best_epoch, "kept_prior": kept}
    return out


def test_the_rule_matches_the_oracle_when_both_keep_the_prior():
    # the selection picked epoch 2 (0.5); the prior (0.01) is better: the oracle keeps it, as the run did
    facts = prior_study.outcome(lines([2.0, 0.9, 0.5, 0.7], prior=0.01, best_epoch=2, kept=True))
    assert facts["picked"] == 0.5 and facts["final"] == 0.01
    assert facts["oracle_keeps_prior"] and facts["matched"]


def test_a_prior_kept_against_a_better_candidate_is_a_mismatch_and_costs():
    facts = prior_study.outcome(lines([0.3, 0.05, 0.2], prior=0.1, best_epoch=1, kept=True))
    assert not facts["oracle_keeps_prior"] and not facts["matched"]
    assert facts["final"] / facts["prior"] == 1.0 and facts["picked"] / facts["prior"] == pytest.approx(0.5)
    # negative control: the same run not keeping the prior matched the oracle and ends at the candidate's 0.05
    facts = prior_study.outcome(lines([0.3, 0.05, 0.2], prior=0.1, best_epoch=1, kept=False))
    assert facts["matched"] and facts["final"] == 0.05


def test_the_section_replaces_its_earlier_self_and_keeps_the_report(tmp_path):
    report = tmp_path / "trust.md"
    report.write_text("# Trust\n\n| a |\n|---|\n| 1 |\n\n## Reading\n\nThe reading.\n")
    prior_study.write_section(report, [prior_study.BEGIN, "## Prior", "first", prior_study.END])
    prior_study.write_section(report, [prior_study.BEGIN, "## Prior", "second", prior_study.END])
    text = report.read_text()
    assert text.count(prior_study.BEGIN) == 1 and "second" in text and "first" not in text
    assert text.index("| 1 |") < text.index("## Prior") < text.index("## Reading")
    assert text.endswith("## Reading\n\nThe reading.\n")
