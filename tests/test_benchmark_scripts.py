"""Every script in ``benchmarks/`` imports and builds its command line: a script whose import broke (a name moved
inside the package) fails here rather than hours into a study. Each is loaded under its own module name with
``benchmarks/`` on the path, as ``python benchmarks/<name>.py`` runs it, and those with an argument parser are asked
for ``--help`` (``readings.py`` reads paths and ``reliability_battery.py`` takes no arguments: imported only)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
#: the scripts run from the command line (``jobs`` and ``timing`` are helpers they import)
SCRIPTS = sorted(p.stem for p in BENCHMARKS.glob("*.py") if 'if __name__ == "__main__":' in p.read_text())
WITH_PARSER = {name for name in SCRIPTS if "ArgumentParser(" in (BENCHMARKS / f"{name}.py").read_text()}


def test_the_scripts_are_found():
    assert {"reproduce", "rollout_study", "gray_scott_fit", "gpu_check"} <= WITH_PARSER
    assert {"readings", "reliability_battery"} <= set(SCRIPTS) - WITH_PARSER


@pytest.mark.parametrize("name", SCRIPTS)
def test_a_benchmark_script_imports_and_answers_help(name, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    module = importlib.import_module(name)
    assert callable(getattr(module, "main", None)), f"benchmarks/{name}.py has no main()"
    if name not in WITH_PARSER:
        return
    monkeypatch.setattr(sys, "argv", [f"{name}.py", "--help"])
    with pytest.raises(SystemExit) as stopped:
        module.main()
    assert stopped.value.code == 0
    assert "usage:" in capsys.readouterr().out
