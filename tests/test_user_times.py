"""``benchmarks/performance/user_times.py``: a child's wall and CPU seconds and peak memory measured on a fake command
whose sleep, busy loop and allocation are known; the median, the per-step cost, resuming and the report from its
records; and every place that states the quickstart's time states the report's."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from harness import readings
from performance import user_times, user_times_report

ROOT = Path(__file__).resolve().parents[1]

#: a process that sleeps 0.5 s, holds 200 MB it has written, and has a child that busy-loops 0.4 CPU seconds
FAKE = textwrap.dedent(
    """
    import subprocess, sys, time
    block = b"x" * (200 * 2**20)
    loop = "import time\\nt = time.process_time()\\nwhile time.process_time() - t < 0.4: pass"
    subprocess.run([sys.executable, "-c", loop])
    time.sleep(0.5)
    """
)


def fake(name: str = "fake", code: str = FAKE) -> user_times.UserCommand:
    return user_times.UserCommand(name, "tests", ("python", "-c", code))


def test_a_childs_wall_cpu_and_peak_memory_are_measured_with_its_own_children(tmp_path):
    runs = user_times.measure(fake(), tmp_path, user_times.environment())
    assert len(runs) == 3  # under a minute: three runs
    for run in runs:
        assert run["returncode"] == 0
        assert run["wall_seconds"] >= 0.9  # the sleep and the grandchild's busy loop, one after the other
        assert run["cpu_seconds"] >= 0.4  # the grandchild's loop counts (the quickstart's harness runs are children)
        assert run["cpu_seconds"] <= run["wall_seconds"] - 0.45  # the sleep does not
        assert run["peak_rss_mb"] >= 200
        assert run["load_before"] >= 0 and run["load_after"] >= 0 and run["load_mean"] >= 0
    once = user_times.measure(fake(), tmp_path, user_times.environment(), repeat_under=0.5)
    assert len(once) == 1  # over the repeat limit: once


def test_a_failing_command_raises_naming_its_log(tmp_path):
    with pytest.raises(user_times.CommandFailed, match=r"exited 3; see .*broken-r0\.log"):
        user_times.measure(fake("broken", "raise SystemExit(3)"), tmp_path, user_times.environment())


def run(wall: float, cpu: float, rss: float, load: tuple[float, float]) -> dict:
    return {"wall_seconds": wall, "cpu_seconds": cpu, "peak_rss_mb": rss, "load_before": load[0], "load_after": load[1]}


def test_the_summary_is_the_median_of_each_count_the_highest_peak_and_the_loads_range():
    runs = [run(4.0, 1.0, 500, (2.0, 2.5)), run(1.0, 5.0, 700, (2.5, 1.5)), run(2.0, 2.0, 600, (1.5, 4.0))]
    assert user_times.summary(runs) == {
        "wall_seconds": 2.0,
        "cpu_seconds": 2.0,
        "peak_rss_mb": 700,
        "load": [1.5, 4.0],
        "load_mean": None,  # not sampled in these runs
        "repeats": 3,
    }
    sampled = [r | {"load_mean": mean} for r, mean in zip(runs, (2.0, 3.0, 7.0), strict=True)]
    assert user_times.summary(sampled)["load_mean"] == 4.0


def test_one_optimizer_step_is_the_difference_of_the_two_step_counts_over_their_steps():
    found = {"harness-upao-4": {"wall_seconds": 40.0}, "harness-upao-24": {"wall_seconds": 90.0}}
    assert user_times_report.per_step(found, "upao") == pytest.approx(50.0 / 20)
    assert user_times_report.per_step(found, "supervised") is None


def with_fake_commands(monkeypatch, *commands: user_times.UserCommand) -> None:
    monkeypatch.setattr(user_times, "COMMANDS", commands)
    monkeypatch.setattr(user_times, "BY_NAME", {c.name: c for c in commands})


def test_a_recorded_command_is_not_run_again_and_force_reruns_it(tmp_path, monkeypatch):
    counter = tmp_path / "count.txt"
    code = f"open({str(counter)!r}, 'a').write('x')"
    with_fake_commands(monkeypatch, fake("counted", code), fake("other", "pass"))
    arguments = ["--out", str(tmp_path / "out"), "--records", str(tmp_path / "records"), "--report",
                 str(tmp_path / "report.md"), "--only", "counted"]  # fmt: skip
    user_times.main(arguments)
    assert counter.read_text() == "xxx"
    record = json.loads((tmp_path / "records" / "counted.json").read_text())
    assert record["repeats"] == 3 and record["command"].startswith("python -c ")
    assert "--only counted" in record["made_by"] and readings.machine_paths(record["made_by"]) == []
    user_times.main(arguments)
    assert counter.read_text() == "xxx"  # resumed: recorded, not run
    user_times.main([*arguments, "--force"])
    assert counter.read_text() == "xxxxxx"
    report = (tmp_path / "report.md").read_text()
    assert "| `counted` | tests |" in report
    assert "| `other` | tests | `python benchmarks/performance/user_times.py --out RUNS/user_times --only other` |" in (
        report
    )


def record(name: str, wall: float, cpu: float) -> dict:
    return {
        "name": name,
        "page": "README.md",
        "command": f"well-upao {name}",
        "note": "",
        "wall_seconds": wall,
        "cpu_seconds": cpu,
        "peak_rss_mb": 812.0,
        "repeats": 1,
        "load": [2.1, 3.4],
        "machine": {"cpu": "AMD EPYC", "cores": 2},
        "made": {"commit": "0123456789", "dirty": False, "date": "2026-11-28"},
        "made_by": "python benchmarks/performance/user_times.py --out RUNS/user_times --only quickstart",
    }


def test_the_report_states_the_records_times_and_names_what_is_not_measured():
    found = {"quickstart": record("quickstart", 366.0, 420.0)}
    text = "\n".join(user_times_report.report_lines(found))
    assert "| `quickstart` | README.md | 366.0 | 6.1 | 420.0 | 7.0 | 1.15 | 812 | 1 | 2.10-3.40 | 0123456 |" in text
    assert user_times_report.quickstart_minutes(text) == "6.1"
    assert "took 6.1 minutes wall" in text
    assert "`python benchmarks/performance/user_times.py --out RUNS/user_times --only evaluate-shear_flow`" in text
    assert readings.machine_paths(text) == []
    assert user_times_report.quickstart_minutes(text.replace("| `quickstart` |", "| `other` |")) is None


def test_a_profile_names_the_function_that_spends_the_time(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "busy.py").write_text(
        "import time\n\n\ndef spin():\n    total = 0\n    for i in range(10**7):\n        total += i\n\n\n"
        "def idle():\n    time.sleep(0.1)\n\n\nspin()\nidle()\n"
    )
    command = user_times.UserCommand("busy", "tests", ("python", "-m", "busy"), links=("busy.py",))
    found = user_times.profile(command, tmp_path, user_times.environment())
    top = found["own"][0]
    assert top["function"].endswith("busy.py:4(spin)") and top["own_seconds"] >= 0.2  # ten million additions
    own = [entry["own_seconds"] for entry in found["own"]]
    assert own == sorted(own, reverse=True) and found["wall_seconds"] >= top["own_seconds"] + 0.1


# ---------------------------------------------------------------------------------------------------- the docs

#: a time stated in minutes: "6.1 minutes", "4-10 min", "4 to 10 minutes", "~10 min"
STATED = re.compile(r"(\d+(?:\.\d+)?(?:\s*(?:-|to)\s*\d+(?:\.\d+)?)?)\s*min(?:utes?)?\b")
#: the pages and texts that state the quickstart's time
QUICKSTART_PAGES = ("README.md", "docs/index.md", "docs/getting-started.md", "docs/commands.md")


def units(text: str) -> list[str]:
    """A page's sentences (a paragraph's lines joined) and, in a table, its rows."""
    found = []
    for paragraph in re.split(r"\n\s*\n", text):
        if paragraph.lstrip().startswith("|"):
            found += paragraph.splitlines()
        else:
            found += re.split(r"(?<=[.!?])\s+(?=[A-Z`(\[])", " ".join(paragraph.split()))
    return found


def quickstart_time_problems(text: str, minutes: str) -> list[str]:
    """Each sentence or table row that names the quickstart and states a time in minutes other than ``minutes``;
    and a note when none states it."""
    stated = [(unit, STATED.findall(unit)) for unit in units(text) if "quickstart" in unit.lower()]
    stated = [(unit, times) for unit, times in stated if times]
    problems = [
        f"states {times} instead of {minutes}: {unit[:160]}" for unit, times in stated if set(times) != {minutes}
    ]
    return problems if stated else ["states no quickstart time"]


def test_the_time_check_sees_a_stale_or_missing_statement():
    assert quickstart_time_problems("Run the quickstart (6.1 minutes on two cores).", "6.1") == []
    assert quickstart_time_problems("Run `well-upao quickstart` (4-10 minutes on two cores).", "6.1") != []
    assert quickstart_time_problems("| `well-upao quickstart` | the main job (~10 min) |", "6.1") != []
    assert quickstart_time_problems("The quickstart takes a while.", "6.1") == ["states no quickstart time"]
    two = "The quickstart took 6.1 minutes. In older runs the quickstart took 9.2-10.2 minutes."
    assert len(quickstart_time_problems(two, "6.1")) == 1


def reported_quickstart_minutes() -> str:
    minutes = user_times_report.quickstart_minutes((ROOT / "reports" / "user_times.md").read_text())
    assert minutes is not None, "reports/user_times.md has no quickstart row: measure it (--only quickstart)"
    return minutes


@pytest.mark.parametrize("page", QUICKSTART_PAGES)
def test_each_page_states_the_quickstart_time_of_the_report(page):
    problems = quickstart_time_problems((ROOT / page).read_text(), reported_quickstart_minutes())
    assert not problems, "\n".join(problems)


def test_the_quickstarts_help_and_docstring_state_the_time_of_the_report():
    import argparse

    import well_upao.quickstart
    from well_upao.cli import build_parser

    minutes = reported_quickstart_minutes()
    (commands,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    (listed,) = [a.help for a in commands._choices_actions if a.dest == "quickstart"]  # `well-upao --help`'s line
    own = commands.choices["quickstart"].description  # `well-upao quickstart --help`
    for text in (f"quickstart: {listed}", own, well_upao.quickstart.__doc__.split("\n\n")[0]):
        assert not quickstart_time_problems(text, minutes), text


def test_the_scripts_own_records_do_not_make_the_checkout_dirty(committed_folder, monkeypatch):
    """``made_at``'s ``dirty``: a changed tracked file of the code is; a record or the report this script wrote
    (an earlier command of the same invocation) is not."""
    files = {"reports/user_times/evaluate.json": "{}\n", "reports/user_times.md": "# times\n", "code.py": "x = 1\n"}
    tmp_path = committed_folder(files)
    records, report = tmp_path / "reports" / "user_times", tmp_path / "reports" / "user_times.md"
    monkeypatch.setattr(user_times, "ROOT", tmp_path)
    monkeypatch.setattr(user_times, "RECORDS", records)
    monkeypatch.setattr(user_times, "REPORT", report)
    assert user_times.made_at()["dirty"] is False
    (records / "evaluate.json").write_text('{"wall_seconds": 1}\n')
    report.write_text("# times, again\n")
    assert user_times.made_at()["dirty"] is False
    (tmp_path / "code.py").write_text("x = 2\n")
    assert user_times.made_at()["dirty"] is True
