"""The README's "What you get" table, made from the studies' reports (issue 40).

One row per dataset family: the quickstart's setting (``reports/quickstart.md``), the exact sets at stride 5
(``reports/reproduction.md``, the paper's main table at CPU scale) and each Well study replica
(``reports/well_protocols.md``). Each row holds the best network row of its report (the lowest one-step VRMSE among
the rows that are not classical), persistence, ``extrap2`` and the solver step, each as *one-step / 5-step rollout*,
the seeds and validation trajectories behind them, and the report's date and standing (its dated first line).
Every number is read from a report's tables (pasted output in fenced blocks included), never from its prose; the
seeds and trajectories from the report's text that states them. One sentence per row, also generated, says which
row is lowest one-step and over the rollout (the solver or ``extrap2`` first when they are) and where the best
network row stands against ``extrap2`` and persistence; nothing more.

    python benchmarks/what_you_get.py            # rewrites the block between the markers in README.md
    python benchmarks/what_you_get.py --check    # exit 1 if README.md's block is not what the reports give now

``tests/test_what_you_get.py`` runs the check, so a report edited without regenerating the table fails the suite.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

from readings import WHAT_YOU_GET  # benchmarks/ is on the path of a script run from it

ROOT = Path(__file__).resolve().parent.parent
CLASSICAL = ("persistence", "extrap1", "extrap2", "solver")
COMMAND = "python benchmarks/what_you_get.py"


@dataclass
class Table:
    heading: str  # the nearest heading above the table
    header: list[str]
    rows: dict[str, list[str]]

    def value(self, row: str, column: str) -> float | None:
        cells = self.rows.get(row)
        if cells is None or column not in self.header:
            return None
        text = cells[self.header.index(column)].strip()
        try:
            return float(text)
        except ValueError:
            return None


def tables(text: str) -> list[Table]:
    """Every markdown table of ``text`` (inside fenced blocks too) with the heading above it."""
    found, heading, lines = [], "", text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        if line.startswith("|") and i + 1 < len(lines) and re.match(r"\|\s*-", lines[i + 1].strip()):
            header = [c.strip() for c in line.strip("|").split("|")]
            rows, i = {}, i + 2
            while i < len(lines) and lines[i].strip().startswith("|"):
                cells = [c.strip() for c in lines[i].strip().strip("|").split("|")]
                rows.setdefault(cells[0], cells)
                i += 1
            found.append(Table(heading, header, rows))
            continue
        i += 1
    return found


def first(pattern: str, text: str, what: str, report: str) -> re.Match:
    match = re.search(pattern, " ".join(text.split()))
    if match is None:
        raise SystemExit(f"{report}: cannot find {what} (pattern {pattern!r}); update benchmarks/what_you_get.py")
    return match


@dataclass
class Cell:
    one_step: float | None
    rollout: float | None


@dataclass
class Row:
    setting: str
    report: str
    standing: str
    seeds: int
    trajectories: int
    network: str
    cells: dict[str, Cell] = field(default_factory=dict)  # "network", "persistence", "extrap2", "solver"
    note: str = ""


def standing(report: str, text: str) -> str:
    """The report's date and standing from its dated first line (a blockquote under the title)."""
    lines = text.splitlines()
    line = lines[2] if len(lines) > 2 and lines[2].startswith(">") else ""
    date = re.search(r"\d{4}-\d{2}-\d{2}", line)
    when = date.group(0) if date else "undated"
    if "Older than the current UPAO selection" in line:
        return f"{when}, before the guard"
    return when


def best_network(table: Table, column: str) -> str:
    networks = [n for n in table.rows if n not in CLASSICAL and not n.startswith("solver") and n != "row"]
    scored = [(table.value(n, column), n) for n in networks if table.value(n, column) is not None]
    if not scored:
        raise SystemExit(f"no network row with {column!r} under {table.heading!r}")
    return min(scored)[1]


def quickstart_row() -> Row:
    report = "reports/quickstart.md"
    text = (ROOT / report).read_text()
    found = tables(text)
    backbone = next(t for t in found if t.heading.startswith("The backbone pretrained with base"))
    seeds_table = next(t for t in found if t.heading.endswith("three seeds"))
    seed_columns = [c for c in backbone.header if re.fullmatch(r"seed \d+", c)]
    trajectories = int(first(r"validation split of (\d+) trajectories", text, "the validation trajectories", report)[1])
    network = best_network(backbone, "mean")
    outputs = [t for t in found if re.fullmatch(r"seed \d+", t.heading)]
    if sorted(t.heading for t in outputs) != sorted(seed_columns):
        raise SystemExit(f"{report}: the per-seed outputs ({[t.heading for t in outputs]}) are not the table's seeds")
    rollout_column = "5-step rollout VRMSE (the Well)"

    def rollout(name: str) -> float | None:
        values = [t.value(name, rollout_column) for t in outputs]
        return statistics.fmean(values) if values and None not in values else None

    row = Row(
        "wave2d, stride 5 (the quickstart)", report, standing(report, text), len(seed_columns), trajectories, network
    )
    row.cells = {
        "network": Cell(backbone.value(network, "mean"), None),
        "persistence": Cell(seeds_table.value("persistence", "mean"), rollout("persistence")),
        "extrap2": Cell(backbone.value("extrap2", "mean"), rollout("extrap2")),
        "solver": Cell(backbone.value("solver", "mean"), rollout("solver")),
    }
    row.note = "means over the seeds; the rollouts are the classical rows' of the per-seed outputs"
    return row


def reproduction_rows() -> list[Row]:
    report = "reports/reproduction.md"
    text = (ROOT / report).read_text()
    head = text.split("## Reading", 1)[0]
    match = first(r"one training run \(one seed\) evaluated on the (\d+) validation trajectories", text, "runs", report)
    resolution = first(r"--resolution (\d+)", text, "the resolution", report)[1]
    rows = []
    for table in tables(head):
        heading = re.fullmatch(r"(\w+), stride (\d+)", table.heading)
        if heading is None:
            continue
        network = best_network(table, "paper def.")
        setting = f"{heading[1]} (exact set, {resolution}^2), stride {heading[2]}"
        row = Row(setting, report, standing(report, text), 1, int(match[1]), network)
        row.cells = {
            key: Cell(table.value(name, "paper def."), table.value(name, "5-step rollout (Well)"))
            for key, name in (("network", network), *((k, k) for k in ("persistence", "extrap2", "solver")))
        }
        rows.append(row)
    return rows


def replica_rows() -> list[Row]:
    report = "reports/well_protocols.md"
    text = (ROOT / report).read_text()
    first(r"\bOne seed\.", text.split("## Reading", 1)[0], "the seeds", report)
    rows = []
    sections = re.split(r"\n## ", text.split("## Reading", 1)[0])
    for section in sections[1:]:
        name = section.splitlines()[0].strip()
        trajectories = re.search(r"Evaluated on (\d+) validation trajectories", section)
        if trajectories is None:
            continue
        table = next(t for t in tables(section) if "evaluate VRMSE (paper def.)" in t.header)
        network = best_network(table, "evaluate VRMSE (paper def.)")
        row = Row(f"{name} (study replica), stride 1", report, standing(report, text), 1, int(trajectories[1]), network)
        one_step, rollout = "evaluate VRMSE (paper def.)", "5-step rollout (Well def.)"
        row.cells = {
            key: Cell(table.value(name, one_step), table.value(name, rollout))
            for key, name in (("network", network), *((k, k) for k in ("persistence", "extrap2", "solver")))
        }
        rows.append(row)
    return rows


def number(value: float | None) -> str:
    return "—" if value is None else f"{value:.4g}"


def cell(c: Cell) -> str:
    return f"{number(c.one_step)} / {number(c.rollout)}"


NAMES = {"network": "the best network row", "persistence": "persistence", "extrap2": "extrap2", "solver": "the solver"}


def lowest(row: Row, attribute: str) -> str | None:
    values = {k: getattr(c, attribute) for k, c in row.cells.items() if getattr(c, attribute) is not None}
    return min(values, key=values.get) if values else None


def sentence(row: Row) -> str:
    """What the row shows, no more: the lowest row one-step and over the rollout (named first), and where the best
    network row stands against extrap2 and persistence."""
    c = row.cells
    winner = lowest(row, "one_step")
    net = c["network"].one_step
    sides = [
        f"{'below' if net < c[other].one_step else 'above'} {other} ({number(net)} vs {number(c[other].one_step)})"
        for other in ("extrap2", "persistence")
    ]
    text = (
        f"One-step, {NAMES[winner]} is the lowest of the four ({number(c[winner].one_step)}); the best network row "
        f"({row.network}) is " + " and ".join(sides) + "."
    )
    roll = lowest(row, "rollout")
    if roll is not None:
        text += f" Over the 5-step rollout {NAMES[roll]} is the lowest of the four ({number(c[roll].rollout)})"
        if c["network"].rollout is None:
            text += "; the report has no rollout of the best network row"
        elif roll != "network":
            text += f", the best network row at {number(c['network'].rollout)}"
        text += "."
    return text


def render() -> str:
    rows = [quickstart_row(), *reproduction_rows(), *replica_rows()]
    lines = [
        WHAT_YOU_GET[0],
        f"<!-- generated by `{COMMAND}` from the reports' tables; do not edit by hand -->",
        "",
        "Each cell: one-step VRMSE (the paper's definition) / 5-step rollout VRMSE (the Well's), from true histories "
        "on the validation split; — where the report has none. The best network row is the report's lowest one-step "
        "row that is not classical (supervised rows included).",
        "",
        "| setting | report (made) | seeds x validation trajectories | best network row | best network | "
        "persistence | extrap2 | solver |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row.setting} | `{row.report}` ({row.standing}) | {row.seeds} x {row.trajectories} | {row.network} | "
            + " | ".join(cell(row.cells[k]) for k in ("network", "persistence", "extrap2", "solver"))
            + " |"
        )
    lines.append("")
    for row in rows:
        note = f" ({row.note})" if row.note else ""
        lines.append(
            f"- **{row.setting}**, {row.seeds} seed{'s' if row.seeds > 1 else ''} x {row.trajectories} validation "
            f"trajectories{note}: {sentence(row)}"
        )
    lines.append(WHAT_YOU_GET[1])
    return "\n".join(lines)


def block_of(readme: str) -> str:
    start, end = readme.index(WHAT_YOU_GET[0]), readme.index(WHAT_YOU_GET[1]) + len(WHAT_YOU_GET[1])
    return readme[start:end]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md")
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if the README's table is not what the reports give"
    )
    args = parser.parse_args(argv)
    readme = args.readme.read_text()
    table = render()
    if args.check:
        if block_of(readme) != table:
            print(f"{args.readme}: the 'What you get' table is stale; run `{COMMAND}`", file=sys.stderr)
            return 1
        return 0
    updated = readme.replace(block_of(readme), table)
    temporary = args.readme.with_name(args.readme.name + ".tmp")
    temporary.write_text(updated)
    os.replace(temporary, args.readme)
    print(f"wrote the 'What you get' table of {args.readme}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
