"""Every script in ``benchmarks/<group>/`` imports and builds its command line: a script whose import broke (a name
moved inside the package) fails here rather than hours into a study. Each is imported as ``<group>.<name>`` with
``benchmarks/`` on the path, as the first line of ``python benchmarks/<group>/<name>.py`` sets it, and those with an
argument parser are asked for ``--help`` (``readings.py`` reads paths and ``reliability_battery.py`` takes no
arguments: imported only). The same scripts are also started as a user starts them, from the repository root, so
that the path each sets for itself is checked too."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
GROUPS = ("harness", "studies", "physics", "performance", "device", "quality")
#: the scripts run from the command line, as ``group/name`` (the harness's other modules are helpers they import)
SCRIPTS = sorted(
    f"{p.parent.name}/{p.stem}" for p in BENCHMARKS.glob("*/*.py") if 'if __name__ == "__main__":' in p.read_text()
)
WITH_PARSER = {name for name in SCRIPTS if "ArgumentParser(" in (BENCHMARKS / f"{name}.py").read_text()}


def test_the_scripts_are_found_in_their_groups():
    assert {p.name for p in BENCHMARKS.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))} == set(GROUPS)
    assert not list(BENCHMARKS.glob("*.py")), "a script sits outside the groups: move it into one"
    assert {"studies/reproduce", "studies/rollout_study", "physics/gray_scott_fit", "device/gpu_check"} <= WITH_PARSER
    assert {"harness/readings", "quality/reliability_battery"} <= set(SCRIPTS) - WITH_PARSER


@pytest.mark.parametrize("name", SCRIPTS)
def test_a_benchmark_script_imports_and_answers_help(name, monkeypatch, capsys):
    module = importlib.import_module(name.replace("/", "."))
    assert callable(getattr(module, "main", None)), f"benchmarks/{name}.py has no main()"
    if name not in WITH_PARSER:
        return
    monkeypatch.setattr(sys, "argv", [f"{name}.py", "--help"])
    with pytest.raises(SystemExit) as stopped:
        module.main()
    assert stopped.value.code == 0
    assert "usage:" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["studies/horizon_study", "device/gpu_check", "performance/scaling"])
def test_a_script_started_from_the_repository_root_finds_its_groups(name):
    """``python benchmarks/<group>/<name>.py --help`` from the repository root, in a fresh interpreter: only the
    script's own first line puts ``benchmarks/`` on the path (a study importing the harness, a device script
    importing its group's modules, a performance script importing another)."""
    done = subprocess.run(
        [sys.executable, f"benchmarks/{name}.py", "--help"],
        cwd=BENCHMARKS.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout
