"""The README's "What you get" table and its full version, made from the study's records (issue 61).

``benchmarks/studies/what_you_get_study.py`` leaves one compact record per setting and seed in ``reports/what_you_get/``
(every row's VRMSE, the label-free pick per window, what the UPAO run's ``best.pt`` kept, the commands, costs, commit
and date). This script reads those records only and writes:

* the README's block (between ``readings.WHAT_YOU_GET``'s markers, included on the documentation's home page): per
  setting, UPAO + NSLoRA without labels, what ``well-upao forecast`` returns for the same run without labels (the
  seeds whose record has it), the best extrapolation of the history (the lowest of persistence, extrap1 and extrap2,
  named), supervised LoRA and the solver, each as one-step / 6:12 VRMSE (the Well's definition), means over the
  seeds; and one generated sentence per setting;
* the full table in ``reports/what_you_get.md`` (between :data:`FULL` markers; ``docs/what-you-get.md`` includes
  it): every row per setting, both VRMSE definitions, the ratios the goals of issue 61 read, what ``best.pt`` kept,
  the evidence's picks, the forecast's picks and whether its intervals held the truth, the costs, and when and at
  which commit each setting's records were made, with how many commits and package files changed between that commit
  and the newest record's (``commit_distances.json`` beside the records: computed by git when the blocks are
  written, read when they are checked, so the check needs no history).

    python benchmarks/studies/what_you_get.py            # rewrites both blocks and reports/figures/what_you_get.png
    python benchmarks/studies/what_you_get.py --check    # exit 1 if a block is not what the records give now

``tests/test_what_you_get.py`` runs the check, so a record added, changed or removed without regenerating fails.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.readings import WHAT_YOU_GET

from studies.what_you_get_records import (
    DISTANCES,
    FORECAST_FACTOR,
    FORECAST_WINDOWS,
    SUPERVISED,
    UPAO,
    Setting,
    commit_distances,
    forecast_ratio,
    number,
    plural,
    ratio,
    read_distances,
    seed_ratios,
    settings_of,
)

ROOT = Path(__file__).resolve().parents[2]
COMMAND = "python benchmarks/studies/what_you_get.py"
FULL = ("<!-- what_you_get full: begin -->", "<!-- what_you_get full: end -->")
#: the guard's promise (issue 61): UPAO at most this many times the best extrapolation row
GUARD_FACTOR = 1.1


def records_folder() -> Path:
    return ROOT / "reports" / "what_you_get"


def load_records(folder: Path) -> list[dict]:
    return [
        json.loads(path.read_text()) | {"file": path.name}
        for path in sorted(folder.glob("*.json"))
        if path.name != DISTANCES
    ]


def pair(setting: Setting, row: str | None) -> str:
    """``one-step / 6:12`` of a row (``—`` where the trajectories hold no 6:12 window or the row is missing)."""
    if row is None:
        return "— / —"
    return f"{number(setting.mean(row, 'one_step_well'))} / {number(setting.mean(row, '6:12'))}"


def forecast_pair(setting: Setting) -> str:
    """``one-step / 6:12`` of the forecast column, with its seed count where fewer seeds than the row's have it."""
    seeds = len(setting.forecast_records())
    if not seeds:
        return "not made yet"
    text = " / ".join(number(setting.forecast_mean(w)) for w in FORECAST_WINDOWS)
    return text if seeds == len(setting.records) else f"{text} ({plural(seeds, 'seed')})"


def sentence(setting: Setting) -> str:
    """What a setting's row shows, no more: UPAO against the best extrapolation one step ahead and over 6:12, against
    extrap2, and what best.pt kept."""
    parts = []
    for measure, label in (("one_step_well", "one step"), ("6:12", "over 6:12")):
        best, value = setting.best_extrapolation(measure), ratio(setting, measure)
        if value is None:
            continue
        side = "equal" if abs(value - 1) < 5e-4 else "below" if value < 1 else "above"
        shown = f"{value:.4g}" if side != "equal" and abs(value - 1) < 5e-3 else f"{value:.3g}"  # 1.002, not 1
        parts.append(f"{label} UPAO is {shown}x the best extrapolation ({best}, {side})")
    text = "; ".join(parts) if parts else "no UPAO row"
    forecast = [
        f"{value:.3g}x{{}} {label}"
        for window, label in zip(FORECAST_WINDOWS, ("one step ahead", "over 6:12"), strict=True)
        if (value := forecast_ratio(setting, window)) is not None
    ]
    forecast = [part.format(" the best extrapolation" if not index else "") for index, part in enumerate(forecast)]
    if forecast:
        text += f"; the forecast (no labels) is {' and '.join(forecast)}"
    return f"{text}; best.pt kept: {setting.kept()}."


def compact_block(settings: list[Setting], files: list[str]) -> str:
    lines = [
        WHAT_YOU_GET[0],
        f"<!-- generated by `{COMMAND}` from reports/what_you_get/*.json; do not edit by hand -->",
        f"<!-- records: {' '.join(files)} -->",
        "",
        "Each cell: the Well's VRMSE one step ahead / over the Well's window 6:12 of a rollout (— where the "
        "trajectories hold no such window), from true histories on the validation split, the mean over the seeds; "
        "*best extrapolation*: the lowest of persistence, extrap1 and extrap2 one step ahead. Every row made by "
        "today's commands at the commit the full table (`reports/what_you_get.md`) names for it.",
        "",
        "*Forecast (no labels)*: what `well-upao forecast` returns for the same UPAO run from the validation "
        "histories alone, each window's steps from the candidate its evidence trusts (the run, an extrapolation or the "
        "solver step), scored against the stored frames it did not read. It starts from the rollouts' starts, so its "
        "one-step value is the first step from those starts, not the mean over every target frame of the other "
        "columns: compare it with them over 6:12; the sentences below compare one step ahead only where the record "
        "holds the extrapolations' first rollout step from the same starts.",
        "",
        "| setting | seeds x trajectories | UPAO + NSLoRA (no labels) | forecast (no labels) | best extrapolation "
        "| supervised LoRA | solver |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in settings:
        best = s.best_extrapolation("one_step_well")
        lines.append(
            f"| {s.label} | {s.size()} | {pair(s, UPAO)} | {forecast_pair(s)} | {best or '—'}: {pair(s, best)} "
            f"| {pair(s, SUPERVISED)} | {pair(s, 'solver')} |"
        )
    lines.append("")
    for s in settings:
        lines.append(f"- **{s.label}** ({s.size(long=True)}): {sentence(s)}")
    lines.append(WHAT_YOU_GET[1])
    return "\n".join(lines)


def goals(settings: list[Setting]) -> list[str]:
    """The goals of issue 61, measured on the records."""
    held = [s for s in settings if s.mean(UPAO, "one_step_well") is not None]
    within = [
        s.key
        for s in held
        if all(ratio(s, m) is None or ratio(s, m) <= GUARD_FACTOR for m in ("one_step_well", "6:12"))
    ]
    below = [
        s.key
        for s in held
        if any(
            s.mean(UPAO, m) is not None and s.mean("extrap2", m) and s.mean(UPAO, m) < s.mean("extrap2", m)
            for m in ("one_step_well", "6:12")
        )
    ]
    complete = [s.key for s in settings if len(s.seeds) >= 3 and s.trajectories >= 3]
    above = [s.key for s in held if s.key not in within]
    fewer = [f"{s.key} ({len(s.seeds)})" for s in settings if len(s.seeds) < 3]
    forecast = [s for s in settings if s.forecast_records()]
    forecast_within = [
        s.key
        for s in forecast
        if all(forecast_ratio(s, w) is None or forecast_ratio(s, w) <= FORECAST_FACTOR for w in FORECAST_WINDOWS)
    ]
    one_step_judged = [s.key for s in forecast if forecast_ratio(s, "one_step") is not None]
    cells = [c for s in forecast for r in s.forecast_records() for c in r["forecast"]["cells"]]
    judged = [c["covered"] for c in cells if c.get("covered") is not None]
    forecast_above = [s.key for s in forecast if s.key not in forecast_within]
    return [
        f"- the forecast (no labels) at most {FORECAST_FACTOR}x the best extrapolation one step ahead and over 6:12: "
        f"{len(forecast_within)} of {len(forecast)} settings with a forecast record"
        + (f" ({', '.join(forecast_above)} above)" if forecast_above else "")
        + (
            f", one step ahead judged on {len(one_step_judged)} of them (a record without the extrapolations' first "
            "rollout step from the forecast's starts is judged over 6:12 only)"
            if len(one_step_judged) < len(forecast)
            else ""
        )
        + (
            f"; its nominal 80% intervals held the true VRMSE in {sum(judged)} of {len(judged)} cells (start x window)"
            if judged
            else ""
        ),
        f"- settings made at 3 seeds x at least 3 validation trajectories: {len(complete)} of 12"
        + (f"; on fewer seeds so far: {', '.join(fewer)}" if fewer else ""),
        f"- UPAO at most {GUARD_FACTOR}x the best extrapolation one step ahead and over 6:12 (where reached): "
        f"{len(within)} of {len(held)} settings" + (f" ({', '.join(above)} above)" if above else ""),
        f"- UPAO + NSLoRA below extrap2 one step ahead or over 6:12: {len(below)} of {len(held)} settings "
        f"({', '.join(below) or 'none'}); the goal asks 3 of 12",
    ]


def full_block(settings: list[Setting]) -> str:
    lines = [
        FULL[0],
        f"<!-- generated by `{COMMAND}` from reports/what_you_get/*.json; do not edit by hand -->",
        "",
        "Per setting, every row's mean over the seeds: the Well's VRMSE one step ahead, the paper's (per trajectory, "
        "its temporal variance), the Well's window means 6:12 and 13:30 and the last rollout step run (— where the "
        "trajectories hold no such window); what the label-free evidence would trust per window in each seed; what "
        "the UPAO run's best.pt kept; each part's cost (CPU seconds of one core, two rows sharing two cores, niced; "
        "means over the seeds) and the commands of one seed (the others differ by their seed; a setting made from one "
        "dataset has one data command).",
        "",
        "## Goals of issue 61",
        "",
        *goals(settings),
        "",
    ]
    for s in settings:
        lines += setting_section(s)
    lines.append(FULL[1])
    return "\n".join(lines)


def mean_costs(s: Setting) -> dict[str, float]:
    """Each part's CPU seconds (training runs, evaluate, the quickstart), the mean over the seeds; a part some seed
    lacks is left out."""
    costs = {}
    for part in ("upao", "supervised", "evaluate", "quickstart"):
        section = "runs" if part in ("upao", "supervised") else "cost"
        seconds = [r[section].get(part, {}).get("cpu_seconds") for r in s.records]
        if all(v is not None for v in seconds):
            costs[part] = statistics.fmean(seconds)
    return costs


def setting_section(s: Setting) -> list[str]:
    """A setting's part of the full page: every row's means, the picks per window and seed, what best.pt kept, each
    seed's optimizer steps, the costs and one seed's commands."""
    lines = [
        f"## {s.label}",
        "",
        f"Seeds {', '.join(map(str, s.seeds))}, {s.trajectories} validation trajectories each"
        + (" (one dataset: every seed read the same trajectories)" if s.one_dataset else "")
        + f"; made {s.made()}.",
        "",
        "| row | one step (Well) | one step (paper) | 6:12 | 13:30 | last rollout step |",
        "|---|---|---|---|---|---|",
    ]
    for row in s.rows():
        cells = [s.mean(row, m) for m in ("one_step_well", "one_step_paper", "6:12", "13:30", "rollout_last")]
        lines.append(f"| {row} | " + " | ".join(number(v) for v in cells) + " |")
    picks = {
        window: ", ".join(str(r["trust"].get(window, {}).get("pick")) for r in s.records)
        for window in ("one_step", "6:12", "13:30")
    }
    steps = "; ".join(
        f"seed {r['seed']} {r['runs']['upao']['optimizer_steps']}, {r['runs']['supervised']['optimizer_steps']}"
        for r in s.records
    )
    return [
        *lines,
        "",
        f"- the evidence's pick per seed: one step {picks['one_step']}; 6:12 {picks['6:12']}; 13:30 {picks['13:30']}",
        *forecast_lines(s),
        f"- best.pt kept: {s.kept()}; optimizer steps (UPAO, supervised): {steps}",
        "- CPU seconds: " + ", ".join(f"{part} {value:.0f}" for part, value in mean_costs(s).items()),
        f"- commands (seed {s.seeds[0]}):",
        "",
        *[f"    {command}" for command in s.records[0]["commands"].values()],
        "",
    ]


def forecast_lines(s: Setting) -> list[str]:
    """The forecast column's part of a setting's section: its true VRMSE per window, the candidates it used and how
    many of its cells' intervals held the truth (the seeds that have it)."""
    records = s.forecast_records()
    if not records:
        return ["- forecast (no labels): not made yet for this setting"]
    windows = ", ".join(f"{w} {number(s.forecast_mean(w))}" for w in ("one_step", "6:12", "13:30"))
    cells = [c for r in records for c in r["forecast"]["cells"]]
    used: dict[str, set[str]] = {}
    for cell in cells:
        used.setdefault(cell["window"], set()).add(cell["predictor"])
    judged = [c["covered"] for c in cells if c.get("covered") is not None]
    picks = "; ".join(f"{w} {', '.join(sorted(names))}" for w, names in used.items())
    return [
        f"- forecast (no labels), {plural(len(records), 'seed')}: true VRMSE {windows}; candidates used: {picks}; "
        f"its intervals held the truth in {sum(judged)} of {len(judged)} cells (start x window)"
    ]


def figure(settings: list[Setting], path: Path) -> None:
    """Per setting and window (one step, 6:12), UPAO + NSLoRA's and supervised LoRA's VRMSE over the best
    extrapolation's (the row lowest in that window over the seeds' means, of persistence, extrap1, extrap2), each seed
    over that row in the same seed (its own data): each seed a dot, the mean of the seeds' ratios a bar; 1 (the
    extrapolation) and the guard's 1.1 drawn. Written to a temporary name and renamed."""

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    windows = (("one_step_well", "one step"), ("6:12", "6:12"))
    fig, axes = plt.subplots(1, 2, figsize=(13, 0.45 * len(settings) + 1.8), sharey=True)
    for ax, (measure, title) in zip(axes, windows, strict=True):
        for row, colour, offset in ((UPAO, "tab:blue", -0.18), (SUPERVISED, "tab:orange", 0.18)):
            for index, setting in enumerate(settings):
                ratios = seed_ratios(setting, row, measure)
                if not ratios:
                    continue
                y = index + offset
                label = row if index == 0 else None
                mean = statistics.fmean(ratios)  # the bar runs from 1 (the extrapolation) to the mean
                ax.barh(y, mean - 1.0, left=1.0, height=0.34, color=colour, alpha=0.45, label=label)
                ax.plot(ratios, [y] * len(ratios), "o", color=colour, markersize=4)
        ax.axvline(1.0, color="black", linewidth=1)
        ax.axvline(GUARD_FACTOR, color="black", linewidth=1, linestyle=":")
        ax.set_xscale("log")
        ax.set_title(title)
        ax.set_xlabel("VRMSE / best extrapolation's (below 1: better)")
    fig.suptitle(
        "Each seed's VRMSE over the best extrapolation's on the same data (dots; bars: their mean; dotted: the "
        f"guard's {GUARD_FACTOR})"
    )
    axes[0].set_yticks(range(len(settings)), [f"{s.label} ({plural(len(s.seeds), 'seed')})" for s in settings])
    axes[0].invert_yaxis()
    axes[0].legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp.png")
    fig.savefig(temporary, dpi=110)
    plt.close(fig)
    os.replace(temporary, path)


def block_of(text: str, markers: tuple[str, str]) -> str:
    start, end = text.index(markers[0]), text.index(markers[1]) + len(markers[1])
    return text[start:end]


def targets(readme: Path, page: Path) -> list[tuple[Path, tuple[str, str]]]:
    return [(readme, WHAT_YOU_GET), (page, FULL)]


def render(folder: Path | None = None) -> tuple[str, str]:
    """The README's block and the full page's block from the records in ``folder``."""
    records = load_records(folder or records_folder())
    if not records:
        raise SystemExit(f"no records in {folder or records_folder()}: run benchmarks/studies/what_you_get_study.py")
    settings = settings_of(records, read_distances(folder or records_folder()))
    return compact_block(settings, [r["file"] for r in records]), full_block(settings)


def missing_records(readme_text: str, folder: Path) -> list[str]:
    """The record files the README's block names that are not in ``folder``."""
    if WHAT_YOU_GET[0] not in readme_text or WHAT_YOU_GET[1] not in readme_text:
        raise SystemExit(f"README.md has no block between {WHAT_YOU_GET[0]} and {WHAT_YOU_GET[1]}")
    line = next((x for x in block_of(readme_text, WHAT_YOU_GET).splitlines() if x.startswith("<!-- records:")), "")
    named = line.removeprefix("<!-- records:").removesuffix("-->").split()
    return [name for name in named if not (folder / name).is_file()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md")
    parser.add_argument("--page", type=Path, default=None, help="the full table's report (reports/what_you_get.md)")
    parser.add_argument("--records", type=Path, default=None, help="the records' folder (reports/what_you_get)")
    parser.add_argument("--check", action="store_true", help="exit 1 if a block is not what the records give")
    parser.add_argument("--figure", type=Path, default=ROOT / "reports" / "figures" / "what_you_get.png",
                        help="the ratios' figure (written unless --check)")  # fmt: skip
    args = parser.parse_args(argv)
    folder = args.records or records_folder()
    args.page = args.page or ROOT / "reports" / "what_you_get.md"
    missing = missing_records(args.readme.read_text(), folder)
    if args.check and missing:
        print(f"{args.readme}: the table names records that are missing: {', '.join(missing)}", file=sys.stderr)
        return 1
    if not args.check:  # the distances are computed when the blocks are written, read when they are checked
        distances = commit_distances(load_records(folder))
        temporary = folder / (DISTANCES + ".tmp")
        temporary.write_text(json.dumps(distances, indent=1, sort_keys=True) + "\n")
        os.replace(temporary, folder / DISTANCES)
    blocks = render(folder)
    stale = [
        path for (path, markers), block in zip(targets(args.readme, args.page), blocks, strict=True)
        if block_of(path.read_text(), markers) != block
    ]  # fmt: skip
    if args.check:
        for path in stale:
            print(f"{path}: the 'What you get' table is stale; run `{COMMAND}`", file=sys.stderr)
        return 1 if stale else 0
    for (path, markers), block in zip(targets(args.readme, args.page), blocks, strict=True):
        text = path.read_text()
        temporary = path.with_name(path.name + ".tmp")
        temporary.write_text(text.replace(block_of(text, markers), block))
        os.replace(temporary, path)
        print(f"wrote the 'What you get' block of {path}")
    if args.figure is not None:
        figure(settings_of(load_records(folder)), args.figure)
        print(f"wrote {args.figure}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
