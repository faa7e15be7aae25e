"""The records of What you get and what the tables read of them: one ``Setting`` per setting (its seeds' records),
its rows' means over the seeds, the best extrapolation, the forecast column (``studies/forecast_column.py``) and the
commits between a record's and the newest one's. ``studies/what_you_get.py`` renders the tables from them."""

from __future__ import annotations

import json
import statistics
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
UPAO = "UPAO + NSLoRA (no labels)"
SUPERVISED = "supervised LoRA (reference)"
EXTRAPOLATIONS = ("persistence", "extrap1", "extrap2")
#: the settings in the table's order (the study's keys)
ORDER = ("quickstart", "wave2d", "advdiff2d", "tg2d", "burgers2d", "burgers1d", "adv1d", "adv3d",
         "active_matter", "gray_scott_reaction_diffusion", "shear_flow", "rayleigh_benard")  # fmt: skip
#: the forecast column's windows, and how close to the best extrapolation it is promised to be (issue 73)
FORECAST_WINDOWS, FORECAST_FACTOR = ("one_step", "6:12"), 1.1
#: beside the records: per record commit, the commits and package files between it and the newest record's
DISTANCES = "commit_distances.json"


def commit_distances(records: list[dict]) -> dict[str, object]:
    """By git: the newest record's commit (of the latest commit date) and, per record commit, the commits and the
    package files (``well_upao/``, ``datasets_exact/``) changed between it and that one; commits this clone does not
    hold are left out (``{}`` without any)."""

    def git(*arguments: str) -> str:
        return subprocess.run(["git", *arguments], cwd=ROOT, capture_output=True, text=True, check=True).stdout

    dated = {}
    for commit in sorted({r["made"]["commit"] for r in records}):
        try:
            dated[commit] = int(git("log", "-1", "--format=%ct", commit).strip())
        except subprocess.CalledProcessError:
            continue  # a commit this clone does not hold
    if not dated:
        return {}
    newest = max(dated, key=dated.get)
    out: dict[str, object] = {"newest": newest}
    for commit in dated:
        count = int(git("rev-list", "--count", f"{commit}..{newest}").strip())
        files = git("diff", "--name-only", commit, newest, "--", "well_upao", "datasets_exact").split()
        out[commit] = {"commits": count, "package_files": len(files)}
    return out


def read_distances(folder: Path) -> dict:
    path = folder / DISTANCES
    return json.loads(path.read_text()) if path.is_file() else {}


@dataclass
class Setting:
    """One setting's records (its seeds) and what the tables read of them."""

    key: str
    records: list[dict]
    #: ``commit_distances.json``: per record commit, the commits and package files before the newest record's
    distances: dict = None

    @property
    def label(self) -> str:
        return self.records[0]["label"]

    @property
    def seeds(self) -> list[int]:
        return [r["seed"] for r in self.records]

    @property
    def trajectories(self) -> int:
        return min(r["validation_trajectories"] for r in self.records)

    @property
    def one_dataset(self) -> bool:
        """Whether every seed read the same data: more than one seed, each record's data command the same (a study
        replica is made once and its seeds vary the training only); the exact sets are generated per seed."""
        data = {r["commands"].get("data") for r in self.records}
        return len(self.records) > 1 and len(data) == 1 and None not in data

    def size(self, long: bool = False) -> str:
        """Seeds x trajectories: ``3 x 3``, ``3 x 3 (one dataset)``; ``long``: ``3 seeds x 3 trajectories``,
        ``3 seeds x the same 3 trajectories``."""
        if not long:
            return f"{len(self.seeds)} x {self.trajectories}" + (" (one dataset)" if self.one_dataset else "")
        same = "the same " if self.one_dataset else ""
        return f"{plural(len(self.seeds), 'seed')} x {same}{self.trajectories} trajectories"

    def rows(self) -> list[str]:
        names = [n for n in self.records[0]["rows"] if all(n in r["rows"] for r in self.records)]
        return sorted(names, key=lambda n: (n not in (UPAO, SUPERVISED), n))

    def mean(self, row: str, measure: str) -> float | None:
        """The mean over the seeds of ``measure`` (``one_step_well``, ``one_step_paper``, a window, ``rollout_last``)
        of ``row``; ``None`` where a seed lacks it."""
        values = []
        for record in self.records:
            cells = record["rows"].get(row)
            if cells is None:
                return None
            value = cells["windows"].get(measure) if measure in ("6:12", "13:30") else cells.get(measure)
            if value is None:
                return None
            values.append(value)
        return statistics.fmean(values)

    def forecast_records(self) -> list[dict]:
        """The seeds whose record holds the forecast column (``studies/forecast_column.py``)."""
        return [r for r in self.records if r.get("forecast")]

    def forecast_mean(self, window: str) -> float | None:
        """The mean over the seeds with a forecast of its true VRMSE in ``window`` (``None`` where none holds it)."""
        values = [r["forecast"]["windows"].get(window) for r in self.forecast_records()]
        values = [v for v in values if v is not None]
        return statistics.fmean(values) if values else None

    def best_extrapolation(self, measure: str) -> str | None:
        scored = [(self.mean(n, measure), n) for n in EXTRAPOLATIONS if self.mean(n, measure) is not None]
        return min(scored)[1] if scored else None

    def kept(self) -> str:
        """What the UPAO runs' best.pt kept, per seed: ``network`` x 2, ``prior (extrap2)`` x 1."""
        counts: dict[str, int] = {}
        for record in self.records:
            kept = record["runs"]["upao"]["kept"]
            counts[kept] = counts.get(kept, 0) + 1
        return ", ".join(f"{kept} x {n}" for kept, n in sorted(counts.items()))

    def made(self) -> str:
        dates = sorted({r["made"]["date"] for r in self.records})
        commits = sorted({r["made"]["commit"] + ("+dirty" if r["made"]["dirty"] else "") for r in self.records})
        made = {r["made"]["commit"] for r in self.records}
        trained = sorted(
            {run["trained_at"] for r in self.records for run in r["runs"].values() if "trained_at" in run} - made
        )  # a run reused from an earlier invocation at another commit
        behind = []
        newest = (self.distances or {}).get("newest")
        for commit in sorted(made):
            distance = (self.distances or {}).get(commit)
            if distance and commit != newest:
                behind.append(
                    f"{commit}: {plural(distance['commits'], 'commit')} and "
                    f"{plural(distance['package_files'], 'package file')} changed before {newest}"
                )
        return (
            f"{'/'.join(dates)} at {'/'.join(commits)}"
            + (f" (runs trained at {'/'.join(trained)})" if trained else "")
            + (f" ({'; '.join(behind)}, the newest record's commit)" if behind else "")
        )


def settings_of(records: Iterable[dict], distances: dict | None = None) -> list[Setting]:
    grouped: dict[str, list[dict]] = {}
    for record in records:
        grouped.setdefault(record["setting"], []).append(record)
    order = [k for k in ORDER if k in grouped] + sorted(k for k in grouped if k not in ORDER)
    return [Setting(key, sorted(grouped[key], key=lambda r: r["seed"]), distances or {}) for key in order]


def number(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"


def ratio(setting: Setting, measure: str) -> float | None:
    """UPAO over the best extrapolation row for ``measure`` (means over the seeds)."""
    best = setting.best_extrapolation(measure)
    upao, reference = setting.mean(UPAO, measure), setting.mean(best, measure) if best else None
    return None if upao is None or not reference else upao / reference


def forecast_ratio(setting: Setting, window: str) -> float | None:
    """The forecast column over the best extrapolation row in ``window``, on the seeds whose record has both (means
    over them). Like for like: over 6:12 both are the rollouts' window from the same starts; one step ahead the
    forecast's value is the first step from those starts, so the extrapolations' is theirs (``rollout_first``), not
    their mean over every target frame; a record without it has no one-step ratio (``None``)."""
    measure = "rollout_first" if window == "one_step" else window
    records = [
        r
        for r in setting.forecast_records()
        if r["forecast"]["windows"].get(window) is not None
        and all(seed_value(r, n, measure) for n in EXTRAPOLATIONS)  # every extrapolation, each nonzero
    ]
    if not records:
        return None
    best = min(statistics.fmean(seed_value(r, n, measure) for r in records) for n in EXTRAPOLATIONS)
    return statistics.fmean(r["forecast"]["windows"][window] for r in records) / best


def plural(count: int, noun: str) -> str:
    """``1 seed``, ``3 seeds``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def seed_value(record: dict, row: str, measure: str) -> float | None:
    """One seed's ``measure`` of ``row`` (``None`` where it lacks it)."""
    cells = record["rows"].get(row)
    if cells is None:
        return None
    return cells["windows"].get(measure) if measure in ("6:12", "13:30") else cells.get(measure)


def seed_ratios(setting: Setting, row: str, measure: str) -> list[float]:
    """Each seed's ``row`` over the best extrapolation row (lowest over the seeds' means) in the same seed: the seeds
    have their own data, so a seed is compared with its own extrapolation, not with the mean."""
    best = setting.best_extrapolation(measure)
    if best is None:
        return []
    pairs = [(seed_value(r, row, measure), seed_value(r, best, measure)) for r in setting.records]
    return [value / reference for value, reference in pairs if value is not None and reference]
