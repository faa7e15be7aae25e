"""The README's "What you get" table and its full page are what ``benchmarks/studies/what_you_get.py`` makes from the
study's records (``reports/what_you_get/*.json``) now: a record removed or changed without regenerating fails the
check."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from harness import readings
from studies import what_you_get

ROOT = Path(__file__).resolve().parent.parent


RECORDS = ROOT / "reports" / "what_you_get"


def test_the_readme_and_the_full_page_are_what_the_records_give_now():
    readme, page = (ROOT / "README.md").read_text(), (ROOT / "reports" / "what_you_get.md").read_text()
    compact, full = what_you_get.render()
    assert what_you_get.block_of(readme, readings.WHAT_YOU_GET) == compact
    assert what_you_get.block_of(page, what_you_get.FULL) == full
    assert what_you_get.main(["--check"]) == 0
    assert readme.index(readings.WHAT_YOU_GET[0]) < readme.index("## Set-up")  # at the top
    assert not what_you_get.missing_records(readme, RECORDS)


def record(setting: str, seed: int, rows: dict[str, tuple[float, float | None]], kept: str = "network") -> dict:
    """A record as the study writes it: ``rows`` maps a row to its (one step, 6:12) Well VRMSE."""
    cells = {
        name: {"kind": "classical", "one_step_well": one, "one_step_paper": 2 * one,
               "windows": {"6:12": window, "13:30": None}, "rollout_last": window}
        for name, (one, window) in rows.items()
    }  # fmt: skip
    return {
        "setting": setting, "label": f"{setting} (test)", "dataset": setting, "stride": 1, "seed": seed,
        "made": {"commit": "abc", "dirty": False, "date": "2026-11-28"}, "validation_trajectories": 3,
        "history": 8, "rollout_steps_run": 12,
        "rows": cells,
        "trust": {"one_step": {"pick": "extrap2", "reach": "backtest at step 1"}},
        "runs": {"upao": {"kept": kept, "optimizer_steps": 144, "cpu_seconds": 100.0},
                 "supervised": {"kept": "network", "optimizer_steps": 144, "cpu_seconds": 90.0}},
        "cost": {"evaluate": {"cpu_seconds": 30.0}}, "commands": {"upao": "python -m the_well.benchmark.train ..."},
    }  # fmt: skip


ROWS = {
    what_you_get.UPAO: (0.02, 0.5),
    what_you_get.SUPERVISED: (0.01, 0.4),
    "persistence": (0.3, 0.9),
    "extrap1": (0.05, 0.6),
    "extrap2": (0.025, 0.45),
    "solver": (1e-7, 2e-7),
}


@pytest.fixture
def copy(tmp_path, monkeypatch) -> Path:
    """A repository with two settings of synthetic records, its README and page blocks generated."""
    records = tmp_path / "reports" / "what_you_get"
    records.mkdir(parents=True)
    for seed in (1, 2):
        (records / f"wave2d-seed{seed}.json").write_text(json.dumps(record("wave2d", seed, ROWS)))
    rows = dict(ROWS) | {what_you_get.UPAO: (0.04, None), "extrap2": (0.03, None)}
    (records / "adv1d-seed1.json").write_text(json.dumps(record("adv1d", 1, rows, kept="prior (extrap2)")))
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    shutil.copy(ROOT / "reports" / "what_you_get.md", tmp_path / "reports" / "what_you_get.md")
    monkeypatch.setattr(what_you_get, "ROOT", tmp_path)
    assert what_you_get.main([]) == 0
    return tmp_path


def test_the_cells_are_means_over_the_seeds_and_the_goals_count_settings(copy):
    wave, adv = what_you_get.settings_of(what_you_get.load_records(copy / "reports" / "what_you_get"))
    assert (wave.key, adv.key) == ("wave2d", "adv1d") and wave.seeds == [1, 2]
    assert wave.best_extrapolation("one_step_well") == "extrap2"
    assert what_you_get.ratio(wave, "one_step_well") == pytest.approx(0.02 / 0.025)  # 0.8: below
    assert what_you_get.ratio(wave, "6:12") == pytest.approx(0.5 / 0.45)  # 1.11: above the guard's 1.1
    assert what_you_get.ratio(adv, "6:12") is None
    readme = (copy / "README.md").read_text()
    row = "| wave2d (test) | 2 x 3 | 0.02 / 0.5 | not made yet | extrap2: 0.025 / 0.45 | 0.01 / 0.4 | 1e-07 / 2e-07 |"
    assert row in readme
    assert "one step UPAO is 0.8x the best extrapolation (extrap2, below)" in readme
    assert "best.pt kept: prior (extrap2) x 1." in readme
    page = (copy / "reports" / "what_you_get.md").read_text()
    assert "at most 1.1x the best extrapolation one step ahead and over 6:12 (where reached): 0 of 2 settings" in page
    assert "below extrap2 one step ahead or over 6:12: 1 of 2 settings (wave2d)" in page
    assert "made 2026-11-28 at abc" in page


def test_the_forecast_column_is_the_mean_of_the_seeds_that_have_it_and_its_cells_are_counted(copy):
    """One seed of wave2d with a forecast record (one step 0.03, 6:12 0.4; two cells, one interval holding the truth):
    the column shows it with its seed count, the sentence its ratio to the best extrapolation in that seed, one step
    ahead against the extrapolations' first rollout step from the same starts (0.03 / 0.025 = 1.2; persistence 0.1,
    extrap1 0.05: not their every-frame one-step values) and over 6:12 (0.4 / 0.45 = 0.889), the goals count the
    setting above 1.1x and the cells."""
    records = copy / "reports" / "what_you_get"
    path = records / "wave2d-seed1.json"
    data = json.loads(path.read_text())
    for name, first in (("persistence", 0.1), ("extrap1", 0.05), ("extrap2", 0.025)):
        data["rows"][name]["rollout_first"] = first
    data["forecast"] = {
        "windows": {"one_step": 0.03, "6:12": 0.4},
        "cells": [
            {"start": 0, "window": "one_step", "predictor": "extrap2", "low": 0.01, "high": 0.02, "true": 0.03,
             "covered": False},
            {"start": 0, "window": "6:12", "predictor": "persistence", "low": 0.1, "high": 0.9, "true": 0.4,
             "covered": True},
        ],
        "steps": 12,
    }  # fmt: skip
    path.write_text(json.dumps(data))
    assert what_you_get.main([]) == 0
    readme = (copy / "README.md").read_text()
    assert "| 0.02 / 0.5 | 0.03 / 0.4 (1 seed) | extrap2:" in readme
    assert "the forecast (no labels) is 1.2x the best extrapolation one step ahead and 0.889x over 6:12" in readme
    page = (copy / "reports" / "what_you_get.md").read_text()
    assert "the forecast (no labels) at most 1.1x the best extrapolation one step ahead and over 6:12: 0 of 1" in page
    assert "held the true VRMSE in 1 of 2 cells" in page
    assert "candidates used: one_step extrap2; 6:12 persistence" in page
    # without the extrapolations' first rollout step, no one-step comparison (their every-frame mean is other frames)
    for name in ("persistence", "extrap1", "extrap2"):
        del data["rows"][name]["rollout_first"]
    path.write_text(json.dumps(data))
    assert what_you_get.main([]) == 0
    readme = (copy / "README.md").read_text()
    assert "the forecast (no labels) is 0.889x the best extrapolation over 6:12" in readme
    assert "one step ahead judged on 0 of them" in (copy / "reports" / "what_you_get.md").read_text()


def test_a_record_changed_or_removed_without_regenerating_fails_the_check(copy, capsys):
    records = copy / "reports" / "what_you_get"
    assert what_you_get.main(["--check"]) == 0
    changed = json.loads((records / "wave2d-seed2.json").read_text())
    changed["rows"]["extrap2"]["one_step_well"] = 0.035
    (records / "wave2d-seed2.json").write_text(json.dumps(changed))
    assert what_you_get.main(["--check"]) == 1
    assert "stale" in capsys.readouterr().err
    before = (copy / "README.md").read_text()
    assert what_you_get.main([]) == 0
    after = (copy / "README.md").read_text()
    assert "extrap2: 0.03 / 0.45" in after and "extrap2: 0.03 / 0.45" not in before  # (0.025 + 0.035) / 2
    outside = [text.replace(what_you_get.block_of(text, readings.WHAT_YOU_GET), "") for text in (before, after)]
    assert outside[0] == outside[1]  # only the block changed
    (records / "adv1d-seed1.json").unlink()
    assert what_you_get.main(["--check"]) == 1
    assert "missing: adv1d-seed1.json" in capsys.readouterr().err


def test_the_figure_compares_each_seed_with_its_own_extrapolation(copy):
    """Seed 3's data extrapolate twice as badly (extrap2 0.05) and UPAO is 0.04 there: its ratio is 0.8, as in seeds
    1 and 2 (0.02 / 0.025), not 0.04 over the seeds' mean extrap2; the figure is written (a PNG)."""
    records = copy / "reports" / "what_you_get"
    rows = dict(ROWS) | {what_you_get.UPAO: (0.04, 1.0), "extrap2": (0.05, 0.9)}
    (records / "wave2d-seed3.json").write_text(json.dumps(record("wave2d", 3, rows)))
    wave = what_you_get.settings_of(what_you_get.load_records(records))[0]
    assert what_you_get.seed_ratios(wave, what_you_get.UPAO, "one_step_well") == pytest.approx([0.8, 0.8, 0.8])
    assert what_you_get.main([]) == 0
    assert (copy / "reports" / "figures" / "what_you_get.png").read_bytes()[:4] == b"\x89PNG"


def test_a_run_reused_from_another_commit_is_named_with_the_setting(copy):
    """A record whose UPAO run was trained at another commit than the record was made at says so on the full page."""
    records = copy / "reports" / "what_you_get"
    reused = json.loads((records / "wave2d-seed2.json").read_text())
    reused["runs"]["upao"]["trained_at"] = "def"
    (records / "wave2d-seed2.json").write_text(json.dumps(reused))
    wave = what_you_get.settings_of(what_you_get.load_records(records))[0]
    assert wave.made() == "2026-11-28 at abc (runs trained at def)"
    reused["runs"]["upao"]["trained_at"] = "abc"  # trained at the record's own commit: nothing to say
    (records / "wave2d-seed2.json").write_text(json.dumps(reused))
    assert what_you_get.settings_of(what_you_get.load_records(records))[0].made() == "2026-11-28 at abc"


def test_the_page_names_the_seed_whose_run_stopped_early(copy):
    """Seed 2's supervised run early-stopped at 120 steps: the page pairs each seed with its steps (a list of distinct
    pairs would not say which seed stopped)."""
    records = copy / "reports" / "what_you_get"
    stopped = json.loads((records / "wave2d-seed2.json").read_text())
    stopped["runs"]["supervised"]["optimizer_steps"] = 120
    (records / "wave2d-seed2.json").write_text(json.dumps(stopped))
    assert what_you_get.main([]) == 0
    page = (copy / "reports" / "what_you_get.md").read_text()
    assert "optimizer steps (UPAO, supervised): seed 1 144, 144; seed 2 144, 120" in page


def test_seeds_that_read_one_dataset_are_said_to(copy):
    """A replica made once (the same data command in every seed) is "3 x 3 (one dataset)": its seeds vary the training
    only; seeds generating their own data (the seed in the command) are not."""
    records = copy / "reports" / "what_you_get"

    def set_data(commands: dict[int, str]) -> str:
        for seed, command in commands.items():
            changed = json.loads((records / f"wave2d-seed{seed}.json").read_text())
            changed["commands"]["data"] = command
            (records / f"wave2d-seed{seed}.json").write_text(json.dumps(changed))
        assert what_you_get.main([]) == 0
        return (copy / "README.md").read_text()

    shared = set_data({1: "generate-replica --dataset wave2d", 2: "generate-replica --dataset wave2d"})
    assert "| wave2d (test) | 2 x 3 (one dataset) |" in shared and "(2 seeds x the same 3 trajectories)" in shared
    own = set_data({1: "generate-exact --seed 1", 2: "generate-exact --seed 2"})
    assert "| wave2d (test) | 2 x 3 |" in own and "(2 seeds x 3 trajectories)" in own
    assert "(one dataset)" not in own.split("| wave2d (test) |")[1].split("\n")[0]


@pytest.mark.parametrize(
    ("upao", "shown"),
    [
        (0.02004, "1.002x the best extrapolation (extrap2, above)"),  # 0.2% above: four digits, not "1x ... above"
        (0.019, "0.95x the best extrapolation (extrap2, below)"),
        (0.020005, "1x the best extrapolation (extrap2, equal)"),  # within 0.05%: equal
    ],
)
def test_a_ratio_near_one_keeps_the_digits_that_say_its_side(copy, upao, shown):
    records = copy / "reports" / "what_you_get"
    rows = dict(ROWS) | {what_you_get.UPAO: (upao, None), "extrap2": (0.02, None)}
    (records / "adv1d-seed1.json").write_text(json.dumps(record("adv1d", 1, rows)))
    adv = what_you_get.settings_of(what_you_get.load_records(records))[1]
    assert f"one step UPAO is {shown}" in what_you_get.sentence(adv)
