"""The report of ``user_times.py`` (``reports/user_times.md``), written from its records: the measured commands'
table, one optimizer step of the harness, the quickstart's time (the one the docs state), what is not measured yet
with the command that measures it, and where the time goes in the profiled commands."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from performance.user_times_commands import COMMANDS, FEW_STEPS, MORE_STEPS, RECORDS, ROOT, UserCommand


def records(folder: Path = RECORDS) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}


def per_step(found: dict[str, dict], role: str) -> float | None:
    """One optimizer step's wall seconds of a harness run: the two step counts' median difference over their steps."""
    few, more = found.get(f"harness-{role}-{FEW_STEPS}"), found.get(f"harness-{role}-{MORE_STEPS}")
    if few is None or more is None:
        return None
    return (more["wall_seconds"] - few["wall_seconds"]) / (MORE_STEPS - FEW_STEPS)


def minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f}"


def quickstart_minutes(report_text: str) -> str | None:
    """The quickstart's wall minutes as the report's table states them (the time the docs state), or None."""
    match = re.search(r"^\| `quickstart` \| [^|]* \| [^|]* \| ([\d.]+) \|", report_text, re.M)
    return match.group(1) if match else None


def measured_line(record: dict) -> str:
    low, high = record["load"]
    mean = record.get("load_mean")
    load = f"{low:.2f}-{high:.2f}" if mean is None else f"{mean:.2f} ({low:.2f}-{high:.2f})"
    commit = record["made"]["commit"][:7] + (" (dirty)" if record["made"]["dirty"] else "")
    return (
        f"| `{record['name']}` | {record['page']} | {record['wall_seconds']:.1f} | {minutes(record['wall_seconds'])}"
        f" | {record['cpu_seconds']:.1f} | {minutes(record['cpu_seconds'])} | "
        f"{record['cpu_seconds'] / record['wall_seconds']:.2f} | "
        f"{record['peak_rss_mb']:.0f} | {record['repeats']} | {load} | {commit} |"
    )


def study_costs(folder: Path = ROOT / "reports" / "what_you_get") -> dict[str, list[float]]:
    """The wall seconds of evaluate per "What you get" setting as its study's records hold them (all seeds)."""
    found: dict[str, list[float]] = {}
    for path in sorted(folder.glob("*-seed*.json")):
        record = json.loads(path.read_text())
        cost = record.get("cost", {}).get("evaluate")
        if cost:
            found.setdefault(record["setting"], []).append(cost["wall_seconds"])
    return found


def report_lines(found: dict[str, dict], commands: tuple[UserCommand, ...] | None = None) -> list[str]:
    """The report: the measured commands' table, one optimizer step, the quickstart's time, what is not measured
    (with the command that measures it), and where the time goes in the profiled commands."""
    commands = COMMANDS if commands is None else commands
    measured = [found[c.name] for c in commands if c.name in found]
    missing = [c for c in commands if c.name not in found]
    machines = sorted({f"{r['machine']['cpu']}, {r['machine']['cores']} cores" for r in measured})
    makers = sorted({r["made_by"] for r in measured})
    lines = [
        "# What each command a user types costs",
        "",
        "Every command of the README and the docs' recipes at the settings they show, each run as a user runs it: "
        "one whole process in a fresh folder, three times and the median kept when it takes under a minute, once "
        "otherwise. Wall seconds; CPU seconds (user + system) and peak resident memory of the process and every "
        "process it waited for; the 1-minute load average before, during (every 5 s) and after each run. Written by "
        "`python benchmarks/performance/user_times.py --report-only` from the records in `reports/user_times/` "
        "(one per command, each with its runs, its commit and the command that made it: "
        + ", ".join(f"`{m}`" for m in makers)
        + ").",
        "",
        f"Machine: {'; '.join(machines) or 'none yet'}. Its two cores were shared with other developers' jobs while "
        "these were measured: a load average above the core count means a run waited for a core, so its wall "
        "seconds are above what the same machine gives it alone (CPU / wall below the threads it could use).",
        "",
        "| command | documented in | wall (s) | wall (min) | CPU (s) | CPU (min) | CPU / wall | peak memory (MB) | "
        "runs | load average: mean while running (before-after) | commit |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *(measured_line(r) for r in measured),
        "",
        "The commands as run (each in a fresh folder; what it reads made beforehand, untimed):",
        "",
        *(f"- `{c.name}`: `{shlex.join(c.argv)}`" + (f" ({c.note})" if c.note else "") for c in commands),
        "",
    ]
    return lines + step_lines(found) + quickstart_lines(found) + missing_lines(missing) + profile_lines(measured)


def step_lines(found: dict[str, dict]) -> list[str]:
    """One optimizer step of the harness, where both step counts are measured."""
    lines: list[str] = []
    steps = {role: per_step(found, role) for role in ("upao", "supervised")}
    if any(v is not None for v in steps.values()):
        lines += [
            "## One optimizer step of the harness",
            "",
            f"The harness's runs at {FEW_STEPS} and {MORE_STEPS} optimizer steps (one epoch each, the README's "
            "wave2d at 64^2): the difference of their median wall seconds over the "
            f"{MORE_STEPS - FEW_STEPS} steps is one step's cost; the rest of a run (start-up, the validations, the "
            "test split) it pays once.",
            "",
            "| run | seconds per optimizer step | the rest of a run (s) |",
            "|---|---|---|",
        ]
        for role, value in steps.items():
            if value is not None:
                rest = found[f"harness-{role}-{FEW_STEPS}"]["wall_seconds"] - FEW_STEPS * value
                lines.append(f"| {role} | {value:.2f} | {rest:.1f} |")
        lines.append("")
    return lines


def quickstart_lines(found: dict[str, dict]) -> list[str]:
    """The quickstart's time, the one the docs state."""
    lines: list[str] = []
    if "quickstart" in found:
        q = found["quickstart"]
        lines += [
            "## The quickstart's time",
            "",
            f"`well-upao quickstart` took {minutes(q['wall_seconds'])} minutes wall ({minutes(q['cpu_seconds'])} CPU "
            f"minutes) at commit {q['made']['commit'][:7]}, load average {q['load'][0]:.2f}-{q['load'][1]:.2f} on "
            f"{q['machine']['cores']} cores. The README, docs/index.md, docs/getting-started.md, docs/commands.md "
            "and the command's `--help` state this time (tests/test_user_times.py checks they agree with this "
            "table).",
            "",
        ]
    return lines


def missing_lines(missing: list[UserCommand]) -> list[str]:
    """The commands without a record, each with the command that measures it."""
    lines: list[str] = []
    if missing:
        costs = study_costs()
        lines += [
            "## Not measured yet",
            "",
            "Each with the command that measures it (from the repository's root; heavy ones only when named):",
            "",
            "| command | documented in | how to measure it | wall s in the what-you-get study's records (per seed) |",
            "|---|---|---|---|",
        ]
        for c in missing:
            recorded = costs.get(c.name.removeprefix("evaluate-"), []) if c.name.startswith("evaluate-") else []
            study = ", ".join(f"{v:.0f}" for v in recorded) or "-"
            how = f"python benchmarks/performance/user_times.py --out RUNS/user_times --only {c.name}"
            lines.append(f"| `{c.name}` | {c.page} | `{how}` | {study} |")
        lines.append("")
    return lines


def profile_lines(measured: list[dict]) -> list[str]:
    """Where the time goes in the profiled commands (cProfile's top entries)."""
    lines: list[str] = []
    profiles = [r for r in measured if r.get("profile")]
    if profiles:
        lines += ["## Where the time goes", ""]
        for r in profiles:
            p = r["profile"]
            lines += [
                f"`{r['name']}` under cProfile ({p['wall_seconds']:.1f} s wall with the profiler; the processes it "
                "starts are not in it). The functions with the most own time:",
                "",
                "| function | calls | own (s) | cumulative (s) |",
                "|---|---|---|---|",
                *(
                    f"| `{e['function']}` | {e['calls']} | {e['own_seconds']:.2f} | {e['cumulative_seconds']:.2f} |"
                    for e in p["own"]
                ),
                "",
                "The package's functions with the most cumulative time:",
                "",
                "| function | calls | own (s) | cumulative (s) |",
                "|---|---|---|---|",
                *(
                    f"| `{e['function']}` | {e['calls']} | {e['own_seconds']:.2f} | {e['cumulative_seconds']:.2f} |"
                    for e in p["package_cumulative"]
                ),
                "",
            ]
    return lines
