"""Every number a report's reading states is backed by its tables (``benchmarks/harness/readings.py``), and a
regenerated table that no longer holds a reading's number marks the reading stale instead of keeping it silently."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from harness import readings

ROOT = Path(__file__).resolve().parent.parent


REPORTS = sorted((ROOT / "reports").glob("*.md"))

TABLE = """# A study

Command: `python benchmarks/study.py --seeds 0 1`

| row | wave2d | advdiff2d |
|---|---|---|
| extrap2 | 0.07126 | 0.005867 |
| UPAO | 0.06549 | 0.003472 |
"""


def check(tmp_path: Path, reading: str, table: str = TABLE, name: str = "study.md") -> list[str]:
    report = tmp_path / "reports" / name
    report.parent.mkdir(exist_ok=True)
    report.write_text(table + "\n" + readings.READING_HEADING + "\n\n" + reading + "\n")
    return [f.number for f in readings.check_report(report, root=tmp_path)]


@pytest.mark.parametrize("report", REPORTS, ids=[r.name for r in REPORTS])
def test_every_committed_reading_states_only_numbers_its_tables_hold(report):
    failures = readings.check_report(report, root=ROOT)
    assert not failures, "\n".join(map(str, failures))


README = ROOT / "README.md"
DOCS = readings.documentation_pages(ROOT)


def test_the_readme_states_only_numbers_of_the_reports_it_cites():
    """Every README paragraph that names a report: its numbers are in that report's tables, its ratios follow from
    two numbers of their sentence, and a report older than the guard is said to be."""
    failures = readings.check_report(README, root=ROOT)
    assert not failures, "\n".join(map(str, failures))
    assert readings.main([str(README)]) == 0


@pytest.mark.parametrize("page", DOCS, ids=[str(p.relative_to(ROOT)) for p in DOCS])
def test_every_documentation_page_states_only_numbers_of_the_reports_it_cites(page):
    """The documentation's pages are held to the README's rule (they quote the reports' numbers too)."""
    failures = readings.check_report(page, root=ROOT)
    assert not failures, "\n".join(map(str, failures))


def test_the_documentation_pages_are_found_and_checked_by_default():
    assert {"index.md", "label-free.md", "training.md"} <= {p.name for p in DOCS}
    assert all(readings.is_prose_page(p) for p in DOCS)
    assert not any("reports" in p.relative_to(ROOT / "docs").parts[:1] for p in DOCS)


def test_a_planted_wrong_number_on_a_documentation_page_fails():
    home = ROOT / "docs" / "what-you-get.md"  # the home page states no numbers; this page quotes regimes.md
    text = home.read_text()
    planted = text.replace("(1.49e-06 vs 8.62e-06)", "(1.49e-06 vs 8.72e-06)", 1)  # regimes.md holds 8.62e-06
    assert planted != text
    assert [f.number for f in readings.check_readme_text(home, planted, root=ROOT)] == ["8.72e-06"]
    ratio = text.replace("by 9.2x at stride 5", "by 19.2x at stride 5", 1)  # 2.09e-05 / 2.27e-06 is 9.2
    assert ratio != text
    assert [f.number for f in readings.check_readme_text(home, ratio, root=ROOT)] == ["19.2x"]
    # a paragraph that cites a report made before the guard says so
    page = ROOT / "docs" / "label-free.md"
    text = page.read_text()
    unsaid = text.replace("(made before the guard: burgers2d,", "(burgers2d,", 1)
    assert unsaid != text
    assert [f.number for f in readings.check_readme_text(page, unsaid, root=ROOT)] == ["reports/regimes.md"]


def test_a_planted_wrong_number_in_the_readme_fails():
    """The reading's first "(UPAO against extrap2's X" with X's last digit moved by one: a number of no table."""
    text = README.read_text()
    found = re.search(r"\(\d[\d.e-]* against extrap2's (\d[\d.e-]*\d)", text)
    assert found, "the README's reading compares UPAO with extrap2"
    number = found.group(1)
    wrong = number[:-1] + str((int(number[-1]) + 1) % 10)
    planted = text[: found.start(1)] + wrong + text[found.end(1) :]
    assert [f.number for f in readings.check_readme_text(README, planted, root=ROOT)] == [wrong]


def test_readme_paragraphs_naming_no_report_are_not_checked(tmp_path):
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "study.md").write_text(TABLE)
    readme = tmp_path / "README.md"
    text = "# Tool\n\nThe default tolerance is 0.125.\n\nMeasured (`reports/study.md`): UPAO reached {}.\n"
    assert readings.check_readme_text(readme, text.format("0.0655"), root=tmp_path) == []
    assert [f.number for f in readings.check_readme_text(readme, text.format("0.0656"), root=tmp_path)] == ["0.0656"]


def test_cited_numbers_must_round_from_a_table_value(tmp_path):
    assert check(tmp_path, "- UPAO reached 0.0655 on wave2d and 0.0035 on advdiff2d (extrap2 0.0059).") == []
    # 0.06549 is 0.065 at two digits, not 0.066; a value from no table at all fails too
    assert check(tmp_path, "- UPAO reached 0.066 on wave2d, 0.0031 on advdiff2d.") == ["0.066", "0.0031"]
    assert check(tmp_path, "- The floor is 6.5e-2 here.") == []
    assert check(tmp_path, "- The floor is 6.6e-2 here.") == ["6.6e-2"]


def test_ratios_and_percentages_must_follow_from_numbers_of_their_sentence(tmp_path):
    # 1 - 0.003472 / 0.005867 = 40.8 %; 0.005867 / 0.003472 = 1.69
    assert check(tmp_path, "- On advdiff2d UPAO beat extrap2 (0.0035 vs 0.0059, 41%), 1.7x lower.") == []
    assert check(tmp_path, "- On advdiff2d UPAO beat extrap2 (0.0035 vs 0.0059, 12%).") == ["12%"]
    assert check(tmp_path, "- On advdiff2d UPAO beat extrap2 by 41%.") == ["41%"]  # no inputs in its sentence
    assert check(tmp_path, "- UPAO beat it (0.0035 vs 0.0059). It was 41% better.") == ["41%"]  # another sentence
    # each end of a range is checked: 0.07126 / 0.06549 = 1.09, 0.005867 / 0.003472 = 1.69
    assert check(tmp_path, "- UPAO: 0.0655 vs 0.0713 and 0.0035 vs 0.0059, 1.1-1.7x better.") == []
    assert check(tmp_path, "- UPAO: 0.0655 vs 0.0713 and 0.0035 vs 0.0059, 1.1-2.5x better.") == ["2.5x"]
    assert check(tmp_path, "- 2 trajectories (10% of 20) validate.") == []


def test_integers_code_and_declared_numbers_are_not_checked(tmp_path):
    reading = "- At stride 5 with 12 trajectories on 64^2 (`lambda_bc=1e4`, 2D, 1.9M parameters) it ran.\n"
    assert check(tmp_path, reading) == []
    assert check(tmp_path, "- The paper reports 0.0218 at stride 1.") == ["0.0218"]
    declared = "- The paper reports 0.0218 at stride 1.\n\n<!-- not from a table: 0.0218 (the paper's Table 2) -->"
    assert check(tmp_path, declared) == []


def test_pasted_output_in_a_fenced_block_is_a_source_not_prose(tmp_path):
    pasted = "## Output\n\n```\n| model | VRMSE |\n|---|---|\n| UPAO | 0.1907 |\nfinished in 9.4 min\n```\n"
    assert check(tmp_path, "- UPAO reached 0.191 on seed 42.\n\n" + pasted) == []
    assert check(tmp_path, "- UPAO reached 0.192 on seed 42.\n\n" + pasted) == ["0.192"]


def test_numbers_may_come_from_a_report_the_paragraph_names(tmp_path):
    floor = "# Floors\n\n| dataset | floor |\n|---|---|\n| wave2d | 1.70e-03 |\n"
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "residual_floor.md").write_text(floor)
    assert check(tmp_path, "- Its floor is 1.7e-3 (reports/residual_floor.md).") == []
    assert check(tmp_path, "- Its floor is 1.7e-3.") == ["1.7e-3"]


def test_a_regenerated_table_marks_the_kept_reading_stale_and_the_script_exits_1(tmp_path, capsys):
    report = tmp_path / "reports" / "study.md"
    report.parent.mkdir()
    reading = "- On wave2d UPAO reached 0.0655, extrap2 0.0713."
    report.write_text(TABLE + "\n" + readings.READING_HEADING + "\n\n" + reading + "\n")
    lines = TABLE.replace("0.06549", "0.05012").splitlines()  # the rerun's new number
    failures = readings.write_keeping_reading(report, lines)
    text = report.read_text()
    assert [f.number for f in failures] == ["0.0655"]
    assert "0.05012" in text and reading in text  # the new tables are written, the reading kept
    assert readings.STALE_MARK in text.split(readings.READING_HEADING, 1)[1]
    assert "stale reading" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        readings.exit_if_stale(report)
    assert exit_info.value.code == 1

    # the reading rewritten to the new numbers: the next regeneration removes the mark and leaves it as written
    report.write_text(text.replace("0.0655", "0.0501"))
    assert readings.write_keeping_reading(report, lines) == []
    assert (
        report.read_text()
        == "\n".join(lines) + "\n\n" + readings.READING_HEADING + "\n\n" + reading.replace("0.0655", "0.0501") + "\n"
    )
    readings.exit_if_stale(report)


def test_no_report_names_an_absolute_path_of_the_machine_that_made_it(tmp_path):
    for report in REPORTS:
        assert readings.machine_paths(report.read_text()) == [], report.name
    planted = TABLE.replace("--seeds 0 1", "--out /work/runs/study --report /tmp/study.md --seeds 0 1")
    assert check(tmp_path, "- UPAO reached 0.0655 on wave2d.", table=planted) == ["/work/runs/study", "/tmp/study.md"]
    # a script's generated lines are written with paths relative to the repository or as RUNS/...
    inside = f"{readings.REPOSITORY}/reports/regimes.md"
    report = tmp_path / "reports" / "written.md"
    readings.write_keeping_reading(report, [*planted.splitlines(), f"From `{inside}`."])
    text = report.read_text()
    assert "--out RUNS/runs/study --report RUNS/study.md" in text and "From `reports/regimes.md`." in text
    assert readings.machine_paths(text) == []


OLDER = [r for r in REPORTS if r.stem in ("regimes", "reproduction", "ablations", "transfer_exact", "upao_auto")]
OLDER += [r for r in REPORTS if r.stem in ("upao_normalization",)]


@pytest.mark.parametrize("report", OLDER, ids=[r.name for r in OLDER])
def test_a_report_older_than_the_guard_says_so_in_its_first_line(report):
    title, blank, first = report.read_text().splitlines()[:3]
    assert title.startswith("# ") and blank == "" and first.startswith(readings.OLDER_MARK)
    assert re.search(r"\b[0-9a-f]{7}\b", first) and "guard" in first  # which commit made it, what changed since
