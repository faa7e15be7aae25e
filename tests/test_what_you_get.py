"""The README's "What you get" table is what ``benchmarks/what_you_get.py`` makes from the reports now: editing a
report it reads without regenerating the table fails here."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import readings  # noqa: E402  (benchmarks/ is a folder of scripts, not a package)
import what_you_get  # noqa: E402

SOURCES = ("quickstart", "reproduction", "well_protocols")


def test_the_readme_table_is_what_the_reports_give_now():
    readme = (ROOT / "README.md").read_text()
    assert what_you_get.block_of(readme) == what_you_get.render()
    assert what_you_get.main(["--check"]) == 0
    assert readme.index(readings.WHAT_YOU_GET[0]) < readme.index("## Set-up")  # at the top


def copy_of_the_repository(tmp_path: Path, monkeypatch) -> Path:
    (tmp_path / "reports").mkdir()
    for name in SOURCES:
        shutil.copy(ROOT / "reports" / f"{name}.md", tmp_path / "reports" / f"{name}.md")
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    monkeypatch.setattr(what_you_get, "ROOT", tmp_path)
    return tmp_path


def test_a_report_edited_without_regenerating_fails_the_check_and_one_command_fixes_it(tmp_path, monkeypatch, capsys):
    root = copy_of_the_repository(tmp_path, monkeypatch)
    readme = root / "README.md"
    assert what_you_get.main(["--readme", str(readme), "--check"]) == 0
    report = root / "reports" / "well_protocols.md"
    old = "| extrap2 | | | | | | | | | 0.08522 | 0.1604 | 1.5 | |"  # shear flow's extrap2 row
    assert old in report.read_text()
    report.write_text(report.read_text().replace(old, old.replace("0.1604", "0.1702")))
    assert what_you_get.main(["--readme", str(readme), "--check"]) == 1
    assert "stale" in capsys.readouterr().err
    before = readme.read_text()
    assert what_you_get.main(["--readme", str(readme)]) == 0
    after = readme.read_text()
    assert "0.1702 / 1.5" in after and "0.1702 / 1.5" not in before
    outside = [text.replace(what_you_get.block_of(text), "") for text in (before, after)]
    assert outside[0] == outside[1]  # only the block changed
    assert what_you_get.main(["--readme", str(readme), "--check"]) == 0


def test_the_best_network_row_and_the_cells_come_from_the_report_tables(tmp_path, monkeypatch):
    root = copy_of_the_repository(tmp_path, monkeypatch)
    report = root / "reports" / "reproduction.md"
    text = report.read_text()
    row = "| NA supervised LoRA | 0.1509 | 0.1035 | 0.0097 | 0.432 | 91.6 |"  # wave2d's best network row
    assert row in text
    report.write_text(text.replace(row, row.replace("0.1509", "0.9509")))
    wave = next(r for r in what_you_get.reproduction_rows() if r.setting.startswith("wave2d"))
    assert wave.network == "NA UPAO + LoRA" and wave.cells["network"].one_step == 0.1753
    assert wave.cells["extrap2"].one_step == 0.02954 and wave.cells["extrap2"].rollout == 0.6876
    assert "the solver is the lowest of the four (4.212e-07)" in what_you_get.sentence(wave)


def test_the_quickstart_row_reads_the_seeds_at_the_current_defaults_when_the_report_has_them(tmp_path, monkeypatch):
    """A seeds section (``benchmarks/quickstart_seeds.py``'s markers) replaces the older three-seed table: means over
    its seeds, and the rollout at the last step its tables name (2 here), averaged by hand: (0.1 + 0.3) / 2."""
    root = copy_of_the_repository(tmp_path, monkeypatch)
    report = root / "reports" / "quickstart.md"
    seed_table = (
        "### Seed {seed}\n\n3 validation trajectories, stride 5, history 8.\n\n"
        "| row | paper VRMSE | rollout step 2 |\n|---|---|---|\n"
        "| solver | 1e-06 | {solver} |\n| UPAO + NSLoRA (no labels) | 0.16 | {upao} |\n"
        "| extrap2 | 0.23 | 0.15 |\n| persistence | 2 | 0.6 |\n\n"
    )
    section = (
        f"{what_you_get.QUICKSTART_SEEDS[0]}\n## 2026-11-26: 2 seeds at the current defaults\n\n"
        + seed_table.format(seed=42, solver="2e-07", upao="0.1")
        + seed_table.format(seed=43, solver="4e-07", upao="0.3")
        + "### Over the seeds\n\n| row | mean over seeds | seed 42 | seed 43 |\n|---|---|---|---|\n"
        "| solver | 1e-06 | 1e-06 | 1e-06 |\n| UPAO + NSLoRA (no labels) | 0.17 | 0.16 | 0.18 |\n"
        "| extrap2 | 0.23 | 0.23 | 0.23 |\n| persistence | 2 | 2 | 2 |\n\n"
        f"{what_you_get.QUICKSTART_SEEDS[1]}\n"
    )
    text = report.read_text()
    report.write_text(text.replace("\n## ", "\n" + section + "\n## ", 1))
    row = what_you_get.quickstart_row()
    assert (row.seeds, row.trajectories, row.rollout_steps) == (2, 3, 2)
    assert row.standing == "2026-11-26, current defaults" and row.network == "UPAO + NSLoRA (no labels)"
    assert row.cells["network"].one_step == 0.17 and abs(row.cells["network"].rollout - 0.2) < 1e-12
    assert abs(row.cells["solver"].rollout - 3e-07) < 1e-15
    assert "Over the 2-step rollout" in what_you_get.sentence(row)
