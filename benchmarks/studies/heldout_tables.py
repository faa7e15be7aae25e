"""The tables of reports/heldout_sets.md, read from the records ``heldout_sets.py`` writes under
``<out>/heldout_records/`` (generation, residual floors, the evaluate smoke test); nothing here computes a number.

* ``sets_table``: each set's equation, parameter draws, grid, frames, splits, solver and its step check, time;
* ``floor_table``: per set and stride, the lowest floor (derivative / time scheme) and the UPAO default's;
* ``smoke_table``: per history and stride, persistence / extrap1 / extrap2 / solver: the Well's one-step VRMSE and
  the rollout windows 6:12 and 13:30, the solver's cost, each evaluation's wall time.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.tables import cell, table

#: the classical rows of the smoke test, in the order the report lists them
ROWS = ("persistence", "extrap1", "extrap2", "solver")
#: UPAO's default discretisation where a run leaves it null (trainer.derivative / trainer.time_scheme)
DEFAULT = ("fd", "crank_nicolson")


def _read(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text()) if path.is_file() else None


def _seconds(record: dict[str, Any]) -> str:
    """A command's wall clock and CPU seconds (its child's user + system time), as ``wall / CPU``."""
    return f"{record['wall_seconds']:.0f} / {record['cpu_seconds']:.0f}"


def _ranges(draws: list[list]) -> str:
    return ", ".join(f"{name} in [{low:g}, {high:g}]" for name, low, high in draws)


def sets_table(records: Path, sets: Sequence[Any]) -> list[str]:
    header = [
        "set", "equation", "parameters (uniform draws)", "grid", "dt", "frames", "strides", "train / valid / test",
        "solver (order)", "steps / frame", "step check", "spin-up", "generation (s)",
    ]  # fmt: skip
    rows = []
    for spec in sets:
        record = _read(records / f"{spec.name}.generation.json")
        if record is None:
            rows.append([spec.name, *["not generated"] + ["-"] * (len(header) - 2)])
            continue
        sizes, check = record["sizes"], record["step_check"] or {}
        splits = record["split_sizes"]
        rows.append([
            spec.name,
            "`" + record["equation"].replace("|", "\\|") + "`",  # a pipe would end the cell
            _ranges(record["parameter_draws"]),
            f"{sizes['resolution']}^2 on [0, {record['domain_length']:.4g})^2 (solved on {record['refine']}x)",
            cell(sizes["dt"]),
            sizes["n_steps"],
            " and ".join(str(s) for s in sizes["strides"]),
            f"{splits['train']} / {splits['valid']} / {splits['test']}",
            f"{record['solver']} ({record['order']})",
            cell(check.get("steps_per_frame")),
            cell(check.get("difference_over_frame_change"), 2),
            cell(record["spin_up"]),
            f"{record['seconds']:.0f}",
        ])  # fmt: skip
    return table(header, rows)


def floor_table(records: Path, sets: Sequence[Any]) -> list[str]:
    rows = []
    for spec in sets:
        record = _read(records / f"{spec.name}.floor.json")
        if record is None:
            continue
        for stride in spec.strides:
            at = [row for row in record["rows"] if row["stride"] == stride]
            lowest = min(at, key=lambda row: row["mean"])
            (default,) = [row for row in at if (row["derivative"], row["scheme"]) == DEFAULT]
            rows.append([
                spec.name, stride, f"{lowest['derivative']} / {lowest['scheme']}", cell(lowest["mean"]),
                cell(default["mean"]), _seconds(record),
            ])  # fmt: skip
    header = [
        "set",
        "stride",
        "lowest: derivative / time scheme",
        "floor",
        "floor of fd / crank_nicolson",
        "time (s, wall / CPU)",
    ]
    return table(header, rows)


def smoke_table(records: Path, name: str) -> list[str]:
    header = [
        "stride",
        "history",
        "row",
        "one-step VRMSE",
        "6:12",
        "13:30",
        "ms / prediction",
        "evaluate (s, wall / CPU)",
    ]
    evaluations = [json.loads(p.read_text()) for p in (records / "smoke").glob(f"{name}_h*_s*.json")]
    rows = []
    for record in sorted(evaluations, key=lambda r: (r["stride"], r["history"])):
        present = [row for row in ROWS if row in record["rows"]]
        for i, row in enumerate(present):
            values = record["rows"][row]
            rows.append([
                record["stride"] if i == 0 else "", record["history"] if i == 0 else "", row,
                cell(values["one_step_well"]), cell(values["6:12"]), cell(values["13:30"]),
                cell(values["ms_per_prediction"], 2), _seconds(record) if i == 0 else "",
            ])  # fmt: skip
    return table(header, rows)


def smoke_sets(records: Path) -> list[str]:
    """The sets with smoke-test records."""
    folder = records / "smoke"
    return sorted({json.loads(p.read_text())["dataset"] for p in folder.glob("*.json")}) if folder.is_dir() else []


def print_tables(records: Path, sets: Sequence[Any]) -> None:
    """Every table of the report, as markdown, from the records under ``records``."""
    print("\n".join(["## Sets", "", *sets_table(records, sets), "", "## Residual floors", ""]))
    print("\n".join(floor_table(records, sets)))
    for name in smoke_sets(records):
        print("\n".join(["", f"## Smoke test: {name}", "", *smoke_table(records, name)]))
