"""The GPU check's record (``benchmarks/device/gpu_check.py``): :class:`Results`, the type every stage is handed
(``gpu_stages.py``, ``gpu_product.py``) and the check writes after each stage. It lives apart from the check so that
the stages and the check import it, and nothing imports the check back (no import circle)."""

from __future__ import annotations

import datetime
import json
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from device.gpu_check_report import report
from device.gpu_common import atomic_write


class Results:
    """The check's results: ``gpu_check.json`` and ``gpu.md`` in ``folder``, rewritten (atomically) after each
    stage."""

    def __init__(self, folder: Path, command: str, dry_run: bool, budget_s: float):
        self.folder = folder
        self.started = time.time()
        self.budget_s = budget_s
        self.data: dict = {
            "command": command,
            "dry_run": dry_run,
            "started": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "budget_s": budget_s,
            "stages": {},
        }
        folder.mkdir(parents=True, exist_ok=True)

    def elapsed(self) -> float:
        return time.time() - self.started

    def left(self) -> float:
        return self.budget_s - self.elapsed()

    def stage(self, name: str, function: Callable[[Results], dict]) -> None:
        start = time.time()
        if self.left() <= 0:
            entry = {"status": "skipped", "reason": f"the budget of {self.budget_s:.0f} s was spent"}
        else:
            print(f"[{self.elapsed():6.1f} s] stage {name}", flush=True)
            try:
                entry = {"status": "ok", **function(self)}
            except Exception as error:  # a stage's failure is a result: record it, run the next
                entry = {"status": "error", "error": f"{type(error).__name__}: {error}"}
                entry["traceback"] = traceback.format_exc()[-4000:]
                print(entry["traceback"], flush=True)
        entry["seconds"] = round(time.time() - start, 2)
        self.data["stages"][name] = entry
        self.write()

    def write(self) -> None:
        self.data["elapsed_s"] = round(self.elapsed(), 1)
        atomic_write(self.folder / "gpu_check.json", json.dumps(self.data, indent=2, default=str))
        atomic_write(self.folder / "gpu.md", report(self.data))
