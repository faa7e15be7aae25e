"""The studies' report tables and the evaluations they read: the part of the shared harness beside the jobs and runs
(``jobs.py``), the datasets (``study_data.py``) and the reports' readings (``readings.py``).

* ``table(header, rows)``: a markdown table's lines, every row's cells as given (a study declares its columns and
  what each row holds; nothing else formats the table);
* ``cell(value, digits)``: a value as a table shows it: ``-`` for none, ``digits`` significant digits for a float;
* ``evaluation(folder)`` and ``rows_by_name(result)``: ``well-upao evaluate``'s JSON in a folder, and its rows by name.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any


def table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    """A markdown table: the header, its rule and one line per row (each cell as ``str`` gives it)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(str(value) for value in row) + " |" for row in rows]


def cell(value: Any, digits: int = 3) -> str:
    """``-`` for ``None``, a float to ``digits`` significant digits, anything else as ``str`` gives it."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def evaluation(folder: Path, pattern: str = "evaluation_*.json") -> dict[str, Any]:
    """The one evaluation JSON (``well-upao evaluate``'s) in ``folder``."""
    return json.loads(next(Path(folder).glob(pattern)).read_text())


def rows_by_name(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """An evaluation's rows (``scores``) by their names."""
    return {row["name"]: row for row in result["scores"]}
