"""Rule 3 of the expected VRMSE against rules 1 and 2, tuned sets first, held-out sets after (issue 75).

The classical rows (persistence, extrap1, extrap2) of every validation trajectory, on the history windows
``well-upao evaluate`` reads (``predict.backtests.add_history_curves``: 3 one-step windows spread over the targets, the
rollouts' own windows; 3 rollout starts of up to 30 steps): their every-start backtests (the start matrices of
``predict.expected_starts``) and their true VRMSE (one step ahead over every target; the Well's windows of the
rollouts' mean per-step curve), as evaluate computes them. A *cell* is one dataset x stride x history x row x window.
Rules 1 and 2 read each matrix's first row (the curve evaluate's JSON carries), rule 3 every start.

Phases, in this order (the script refuses another):

1. ``--phase tune``: the tuned sets' cells (``TUNED``) and rule 3's constants fitted on them (`fitted_rule`),
   printed with the rule's hash and written with the time to ``--record`` (default
   ``reports/expected_rule3_fixed.json``); nothing held out is opened. The constants are then put into ``RULE_3``
   (``well_upao/predict/expected_starts.py``) and committed with the record.
2. ``--phase score``: refused unless ``--record`` exists and the installed ``RULE_3``'s hash is the one it
   records; then, and only then, the held-out sets (``HELD_OUT`` under ``--heldout-base``, strides 1 and 2) are
   opened, the time of that reading appended to the record, and every group's table written to ``--report``;
   with ``--time-evaluate`` the cost (`timed_evaluate`), with ``--model-rows`` evaluate's own estimates with a model
   row, the shipped backbone zero-shot (`model_cells`).

    python benchmarks/studies/expected_rule3_study.py --phase tune --out RUNS/rule3
    python benchmarks/studies/expected_rule3_study.py --phase score --out RUNS/rule3 --time-evaluate --model-rows \
        --model-histories 8 16
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.bisection import smallest_reaching

from well_upao.data.source import WellSource
from well_upao.evaluate.metrics import vrmse_well
from well_upao.evaluate.plan import open_split
from well_upao.predict.classical import CLASSICAL_PRIORS
from well_upao.predict.expected import RULE_1, RULE_2, Z_80, expected_vrmse
from well_upao.predict.expected_starts import (
    RULE_3,
    StartsRule,
    WindowParts,
    classical_start_matrices,
    log_sigma,
    window_parts,
)
from well_upao.predict.windows import WINDOWS, rollout_starts, window_means

ROOT = Path(__file__).resolve().parents[2]
#: the tuned sets (made by ``benchmarks/harness/study_data.py`` under ``--tuned-base``): the horizon study's but
#: active_matter (its replica was not made for this study)
TUNED = ("gray_scott_reaction_diffusion", "shear_flow", "rayleigh_benard", "wave2d", "advdiff2d", "burgers1d")
HELD_OUT = ("heldout_allen_cahn", "heldout_kuramoto_sivashinsky", "heldout_swift_hohenberg")
ROLLOUT, STARTS = 30, 3
#: the model row of ``--model-rows``: the shipped backbone zero-shot
MODEL_BACKBONE = "shipped_extrap2"
GOAL_COVERAGE, GOAL_RATIO = (0.7, 0.9), (0.67, 1.5)


def dataset_cells(base: Path, dataset: str, history: int, stride: int, group: str, limit: int | None) -> list[dict]:
    """The classical rows' cells of ``dataset`` (module docstring): each with its true value and its estimate under
    rules 1 and 2 (``[value, low, high, continued share]``) and rule 3's parts
    (``predict.expected_starts.window_parts``: its interval under any constants, `under`)."""
    torch.set_num_threads(1)
    opened = open_split(WellSource(base, dataset, "valid"), history, stride)
    dims = opened.metadata.n_spatial_dims
    one_truth, roll_sum, roll_count = {n: [] for n in CLASSICAL_PRIORS}, {}, []
    matrices = {kind: {n: [] for n in CLASSICAL_PRIORS} for kind in ("one_step", "rollout")}
    seconds = {"every_start": 0.0}
    count = len(opened) if limit is None else min(limit, len(opened))
    for index in range(count):
        sample = opened[index]
        frames = torch.cat([sample["input_fields"], sample["output_fields"]]).double()
        total = frames.shape[0]
        if total <= history:
            continue
        steps = min(ROLLOUT, total - history)
        starts = rollout_starts(total, history, steps, STARTS)
        roll_count += [0] * (steps - len(roll_count))
        for name, prior in CLASSICAL_PRIORS.items():
            predicted = torch.stack([prior.next_frame(frames[None, t - history : t])[0] for t in range(history, total)])
            one_truth[name].append(vrmse_well(predicted, frames[history:], dims).mean(-1))
            for s in starts:
                p = prior.rolled_out(frames[None, s : s + history + steps], history)[0]
                curve = vrmse_well(p, frames[s + history : s + history + steps], dims).mean(-1)
                roll_sum[name] = roll_sum[name] + curve if name in roll_sum else curve  # equal lengths per set
        for step in range(steps):
            roll_count[step] += len(starts)
        cache = {}
        mask = torch.ones(frames.shape[-1])
        for kind, windows in (("one_step", rollout_starts(total, history, 1, STARTS)), ("rollout", starts or [0])):
            for s in windows:
                if s not in cache:
                    began = time.perf_counter()
                    cache[s] = classical_start_matrices(frames[s : s + history], mask)
                    seconds["every_start"] += time.perf_counter() - began
                for name, m in cache[s].items():
                    matrices[kind][name].append(m)
    out = []
    for name in CLASSICAL_PRIORS:
        truth = {"one_step": float(torch.cat(one_truth[name]).mean())}
        per_step = (roll_sum[name] / torch.tensor(roll_count[: len(roll_sum[name])], dtype=torch.float64)).tolist()
        truth |= {w: v for w, v in window_means(per_step).items() if v is not None}
        for window in WINDOWS:
            true = truth.get(window)
            if true is None or not math.isfinite(true) or true <= 0:
                continue
            parts = matrices["one_step" if window == "one_step" else "rollout"][name]
            curves = torch.stack([first_row_curve(m) for m in parts])
            cell = {"group": group, "dataset": dataset, "history": history, "stride": stride, "row": name,
                    "window": window, "true": true, "windows": len(parts)}  # fmt: skip
            for rule in (RULE_1, RULE_2):
                e = expected_vrmse(curves, window, rule)
                cell[f"rule{rule.version}"] = [e.value, e.low, e.high, e.continued_share]
            cell["rule3_parts"] = dataclasses.asdict(window_parts(parts, window))
            out.append(cell)
    for c in out:
        c["seconds_every_start"] = seconds["every_start"]
    return out


def first_row_curve(matrix: torch.Tensor) -> torch.Tensor:
    """The curve rules 1 and 2 read from a start matrix: its first row, one step ahead the mean over every start."""
    curve = matrix[0].clone()
    column = matrix[:, 0]
    curve[0] = column[torch.isfinite(column)].mean()
    return curve


def under(cell: dict, rule: StartsRule) -> list[float]:
    """Rule 3's ``[value, low, high]`` of a cell under ``rule`` (``predict.expected_starts.log_sigma`` of its parts)."""
    parts = WindowParts(**cell["rule3_parts"])
    factor = math.exp(Z_80 * log_sigma(parts, cell["window"], rule))
    return [parts.value, parts.value / factor, parts.value * factor]


def continued(cell: dict) -> bool:
    return any(b > 0 for b in cell["rule3_parts"]["beyond"])


def smallest_covering(cells: list[dict], rule_of, target: float = 0.8) -> float:
    """The smallest parameter ``p`` in ``[0, 10]`` whose rule ``rule_of(p)`` covers ``target`` of ``cells``
    (bisection: coverage grows with each parameter of rule 3)."""

    def coverage(parameter: float) -> float:
        rule = rule_of(parameter)
        return sum(low <= c["true"] <= high for c in cells for _, low, high in [under(c, rule)]) / len(cells)

    return smallest_reaching(coverage, target)


def fitted_rule(cells: list[dict]) -> StartsRule:
    """Rule 3's constants fitted on ``cells`` (the tuned sets'), each the smallest that covers 80% of the cells it
    governs: the one-step transfer spread on the one-step cells; one transfer spread of the rollout windows on their
    cells read within the reach (none continued); then the slope spread ``c`` on the continued cells, the transfer
    spreads fixed."""
    base = dataclasses.replace(RULE_3, transfer={w: 0.0 for w in WINDOWS}, slope=0.0)
    one = [c for c in cells if c["window"] == "one_step"]
    one_step = smallest_covering(one, lambda p: dataclasses.replace(base, transfer={**base.transfer, "one_step": p}))
    within = [c for c in cells if c["window"] != "one_step" and not continued(c)]
    rollout = smallest_covering(within, lambda p: dataclasses.replace(base, transfer={"one_step": 0.0, "6:12": p,
                                                                                     "13:30": p}))  # fmt: skip
    transfer = {"one_step": round(one_step, 3), "6:12": round(rollout, 3), "13:30": round(rollout, 3)}
    base = dataclasses.replace(base, transfer=transfer)
    beyond = [c for c in cells if continued(c)]
    slope = smallest_covering(beyond, lambda p: dataclasses.replace(base, slope=p))
    return dataclasses.replace(base, slope=round(slope, 3))


def estimate(cell: dict, rule: str) -> list[float]:
    return under(cell, RULE_3) if rule == "rule3" else cell[rule][:3]


def summary(cells: list[dict], rule: str) -> dict:
    inside = below = above = 0
    ratios, widths = [], []
    for c in cells:
        value, low, high = estimate(c, rule)
        inside += low <= c["true"] <= high
        below += c["true"] < low
        above += c["true"] > high
        ratios.append(value / c["true"])
        widths.append(high / low if low > 0 else math.inf)
    return {"cells": len(cells), "coverage": inside / len(cells), "below": below, "above": above,
            "ratio": statistics.median(ratios), "width": statistics.median(widths)}  # fmt: skip


def table(cells: list[dict], group: str) -> list[str]:
    lines = ["| history | window | cells | rule | coverage (80% nominal) | below / above | median width (high/low) | "
             "median expected / true |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    histories = sorted({c["history"] for c in cells if c["group"] == group})
    for history in [*histories, "all"]:
        for window in WINDOWS:
            chosen = [c for c in cells if c["group"] == group and c["window"] == window
                      and (history == "all" or c["history"] == history)]  # fmt: skip
            if not chosen:
                continue
            for rule in ("rule1", "rule2", "rule3"):
                s = summary(chosen, rule)
                lines.append(f"| {history} | {window} | {s['cells']} | {rule[-1]} | {100 * s['coverage']:.0f}% | "
                             f"{s['below']} / {s['above']} | {s['width']:.3g} | {s['ratio']:.3g} |")  # fmt: skip
    return lines


def gather(args, group: str) -> list[dict]:
    base = args.tuned_base if group == "tuned" else args.heldout_base
    strides = [1] if group == "tuned" else args.strides
    found = []
    for dataset in TUNED if group == "tuned" else HELD_OUT:
        if args.datasets and dataset not in args.datasets:
            continue
        for stride in strides:
            for history in args.histories:
                began = time.perf_counter()
                part = dataset_cells(base, dataset, history, stride, group, args.trajectories)
                print(f"{group} {dataset} stride {stride} history {history}: {len(part)} cells in "
                      f"{time.perf_counter() - began:.1f} s", flush=True)  # fmt: skip
                found += part
    return found


def timed_evaluate(args, seconds: dict) -> str:
    """Cost: the wall clock of ``well-upao evaluate`` of the first held-out set at history 16, stride 1 (classical rows,
    no solver: the cheapest evaluate, so the share is an upper bound for evaluations with a model row), which now
    computes rule 3's every-start backtests itself, against those backtests' own seconds on the same windows
    (`dataset_cells`, this run)."""
    import os

    dataset = HELD_OUT[0]
    folder = args.out / "timed_evaluate"
    command = [sys.executable, "-m", "well_upao.cli", "evaluate", "--data", dataset, "--imports", "heldout_pdes",
               "--base-path", str(args.heldout_base), "--history", "16", "--stride", "1", "--rollout-steps",
               str(ROLLOUT), "--rollout-starts", str(STARTS), "--no-solver", "--out", str(folder),
               "--quiet"]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(ROOT / "benchmarks" / "studies"), OMP_NUM_THREADS="1")
    began = time.perf_counter()
    subprocess.run(command, env=env, check=True, capture_output=True)
    wall = time.perf_counter() - began
    own = seconds[(dataset, 16, 1)]
    return (f"Cost: `well-upao evaluate` of {dataset} (valid split, history 16, stride 1, classical rows, no solver) "
            f"took {wall:.3g} s in this run; the every-start backtests of the same windows took {own:.3g} s "
            f"({100 * own / wall:.2g}% of it).")  # fmt: skip


def model_cells(args) -> list[dict]:
    """Score: ``well-upao evaluate`` of each held-out set at ``--model-histories``, stride 1, with the shipped
    backbone zero-shot as a model row (``well_upao.quickstart.zero_shot_checkpoint``; no solver) and, with
    ``--upao-runs``, the set's UPAO run (``studies.heldout_upao``) as another; one cell per row and
    window from its JSON: the expected value and interval evaluate stated (rule 3, the default) and the true value."""
    import os

    from well_upao.quickstart import QuickstartConfig, zero_shot_checkpoint

    sys.path.insert(0, str(ROOT / "benchmarks" / "studies"))
    import heldout_pdes  # noqa: F401  (registers the held-out sets, as --imports does)

    from studies.heldout_upao import UPAO_ROW, upao_run

    env = dict(os.environ, PYTHONPATH=str(ROOT / "benchmarks" / "studies"), OMP_NUM_THREADS="1")
    out = []
    for dataset in HELD_OUT:
        backbone = args.out / "models" / f"{dataset}-{MODEL_BACKBONE}.pt"
        if not backbone.is_file():
            backbone.parent.mkdir(parents=True, exist_ok=True)
            zero_shot_checkpoint(QuickstartConfig(pde=dataset, backbone=MODEL_BACKBONE), args.heldout_base, backbone)
        specs = [f"{MODEL_BACKBONE} zero-shot={backbone}"]  # evaluate's model rows, NAME=CHECKPOINT
        if args.upao_runs:
            specs.append(f"{UPAO_ROW}={upao_run(dataset, args.heldout_base, args.out)}")
        for history in args.model_histories:
            folder = args.out / ("model_rows_upao" if args.upao_runs else "model_rows") / f"{dataset}-h{history}"
            if not sorted(folder.glob("evaluation_*.json")):
                command = [sys.executable, "-m", "well_upao.cli", "evaluate", *specs, "--data", dataset,
                           "--imports", "heldout_pdes", "--base-path", str(args.heldout_base), "--history",
                           str(history), "--stride", "1", "--rollout-steps", str(ROLLOUT),
                           "--rollout-starts", str(STARTS), "--no-solver", "--out", str(folder), "--quiet"]  # fmt: skip
                began = time.perf_counter()
                folder.parent.mkdir(parents=True, exist_ok=True)
                with open(folder.with_suffix(".log"), "w") as log:
                    finished = subprocess.run(command, env=env, stdout=log, stderr=subprocess.STDOUT)
                if finished.returncode != 0:
                    raise RuntimeError(f"{' '.join(command)} exited {finished.returncode}; see {folder}.log")
                print(f"evaluate {dataset} history {history} with a model row: {time.perf_counter() - began:.0f} s")
            data = json.loads(sorted(folder.glob("evaluation_*.json"))[0].read_text())
            rows = {row["name"]: row for row in data["scores"]}
            for window, estimates in data["expected"].items():
                for name, e in estimates.items():
                    row = rows[name]
                    true = row["mean_vrmse_well"] if window == "one_step" else row["rollout_windows"].get(window)
                    if true is None or not math.isfinite(true) or true <= 0:
                        continue
                    out.append({"dataset": dataset, "history": history, "row": name, "kind": row["kind"],
                                "window": window, "true": true, "value": e["value"], "low": e["low"],
                                "high": e["high"], "rule": e["rule"]})  # fmt: skip
    return out


def model_table(cells: list[dict]) -> list[str]:
    """Per group of rows (the classical ones together, each model row by its name), history and window."""
    lines = ["| rows | history | window | cells | coverage (80% nominal) | below / above | median width "
             "(high/low) | median expected / true |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    models = sorted({c["row"] for c in cells if c["kind"] == "model"})
    for kind in ("classical", *models):
        for history in sorted({c["history"] for c in cells}):
            for window in WINDOWS:
                chosen = [c for c in cells if c["window"] == window and c["history"] == history
                          and (c["kind"] != "model" if kind == "classical" else c["row"] == kind)]  # fmt: skip
                if not chosen:
                    continue
                inside = sum(c["low"] <= c["true"] <= c["high"] for c in chosen)
                below = sum(c["true"] < c["low"] for c in chosen)
                width = statistics.median(c["high"] / c["low"] if c["low"] > 0 else math.inf for c in chosen)
                ratio = statistics.median(c["value"] / c["true"] for c in chosen)
                lines.append(f"| {kind} | {history} | {window} | {len(chosen)} | {100 * inside / len(chosen):.0f}% | "
                             f"{below} / {len(chosen) - inside - below} | {width:.3g} | {ratio:.3g} |")  # fmt: skip
    return lines


def commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short=10", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                           text=True).stdout.strip()  # fmt: skip
    return done.stdout.strip() + (" (with uncommitted changes)" if dirty else "")


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--phase", choices=["tune", "score"], required=True)
    parser.add_argument("--out", type=Path, default=Path("outputs/rule3"))
    parser.add_argument("--report", type=Path, default=Path("reports/expected_rule3.md"))
    parser.add_argument("--record", type=Path, default=Path("reports/expected_rule3_fixed.json"),
                        help="the rule's constants, hash, times of fixing and of held-out readings")  # fmt: skip
    parser.add_argument("--tuned-base", type=Path, default=Path("outputs/ee/datasets"))
    parser.add_argument(
        "--heldout-base", type=Path, help="the held-out sets' folder (heldout_sets.py --out); the score phase's"
    )
    parser.add_argument("--histories", nargs="+", type=int, default=[8, 16, 32])
    parser.add_argument("--strides", nargs="+", type=int, default=[1, 2], help="held-out sets' strides")
    parser.add_argument("--datasets", nargs="+", help="only these datasets (a smaller study)")
    parser.add_argument("--trajectories", type=int, default=None, help="at most this many per set")
    parser.add_argument("--time-evaluate", action="store_true",
                        help="score: time `well-upao evaluate` (classical rows, no solver) of the first held-out "
                             "set at history 16, stride 1, against the every-start backtests")  # fmt: skip
    parser.add_argument(
        "--model-rows",
        action="store_true",
        help="score: evaluate the held-out sets with the shipped backbone zero-shot as a model row",
    )
    parser.add_argument("--model-histories", nargs="+", type=int, default=[16])
    parser.add_argument("--upao-runs", action="store_true",
                        help="with --model-rows: a UPAO + NSLoRA run on each held-out set (studies/heldout_upao.py, "
                             "trained once under --out) as a second model row")  # fmt: skip
    return parser.parse_args(argv)


def write_record(record: dict, path: Path) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1))
    tmp.replace(path)


def tune(args: argparse.Namespace, argv: list[str]) -> None:
    """Phase 1: the tuned sets' cells, the fitted rule and its record (refused after a held-out reading)."""
    record_path = args.record
    if record_path.is_file() and "held_out_read" in json.loads(record_path.read_text()):
        sys.exit(f"{record_path} records a held-out reading already: tuning again would tune after it; "
                 "use a new --out")  # fmt: skip
    cells = gather(args, "tuned")
    (args.out / "cells_tuned.json").write_text(json.dumps(cells))
    rule = fitted_rule(cells)
    record = {"rule": dataclasses.asdict(rule), "digest": rule.digest(),
              "fixed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "commit": commit(),
              "tuned_cells": len(cells), "argv": argv}  # fmt: skip
    write_record(record, record_path)
    print(json.dumps(record, indent=1))


def opened_reading(args: argparse.Namespace) -> tuple[dict, list[dict], str]:
    """Phase 2's checks (the record exists, its hash is the installed rule's, the tuned cells and the held-out folder
    are there), then the reading's time appended to the record: (record, tuned cells, commit)."""
    record_path, tuned_path = args.record, args.out / "cells_tuned.json"
    if not record_path.is_file():
        sys.exit(f"no {record_path}: run --phase tune first (the rule is fixed before a held-out cell is read)")
    record = json.loads(record_path.read_text())
    if record["digest"] != RULE_3.digest():
        sys.exit(f"the installed RULE_3 ({RULE_3.digest()}) is not the one fixed in {record_path} "
                 f"({record['digest']}): put its constants {record['rule']} into RULE_3 first")  # fmt: skip
    if not tuned_path.is_file():  # checked before the reading is recorded: a failed start reads nothing
        sys.exit(f"no {tuned_path}: run --phase tune with this --out first")
    if args.heldout_base is None or not args.heldout_base.is_dir():
        sys.exit(f"--heldout-base {args.heldout_base}: give the held-out sets' folder (heldout_sets.py --out)")
    tuned = json.loads(tuned_path.read_text())
    at_commit = commit()  # before the record is rewritten (the report names the commit that made it)
    record.setdefault("held_out_read", []).append(
        {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "commit": at_commit}
    )
    write_record(record, record_path)
    return record, tuned, at_commit


def score(args: argparse.Namespace, argv: list[str]) -> None:
    """Phase 2: the held-out cells under the recorded rule and the report."""
    record, tuned, at_commit = opened_reading(args)
    held = gather(args, "held-out")
    (args.out / "cells_heldout.json").write_text(json.dumps(held))
    cells = tuned + held
    seconds = {(c["dataset"], c["history"], c["stride"]): c["seconds_every_start"] for c in cells}
    lines = [
        "# Rule 3 of the expected VRMSE: every start, fitted growth (issue 75)",
        "",
        f"> Made {time.strftime('%Y-%m-%d')} at commit {at_commit} by "
        f"`python benchmarks/studies/expected_rule3_study.py {' '.join(argv)}`; "
        f"rule 3 was fixed at {record['fixed_at']} (commit {record['commit']}, hash {record['digest']}, constants "
        f"{record['rule']}) by `... {' '.join(record['argv'])}`; held-out cells read at "
        f"{', '.join(r['at'] for r in record['held_out_read'])} (`{args.record}`). The script's docstring says what "
        "each number is.",
        "",
        "Rows: persistence, extrap1, extrap2 (classical rows; a model row only in the table of `--model-rows`). Width: "
        "the interval's high / low.",
        "",
        "## Tuned sets",
        "",
        *table(cells, "tuned"),
        "",
        "## Held-out sets",
        "",
        *table(cells, "held-out"),
        "",
        f"Every-start backtests of the three classical rows: {sum(seconds.values()):.3g} s in all over "
        f"{len(seconds)} dataset x history x stride evaluations.",
        "",
    ]
    if args.time_evaluate:
        lines += [timed_evaluate(args, seconds), ""]
    if args.model_rows:
        models = model_cells(args)
        (args.out / "cells_models.json").write_text(json.dumps(models))
        upao = " and a UPAO + NSLoRA run on the set (`benchmarks/studies/heldout_upao.py`)" if args.upao_runs else ""
        lines += ["## Held-out sets with a model row, as evaluate states them", "",
                  f"`well-upao evaluate` with `{MODEL_BACKBONE}` zero-shot{upao} beside the classical rows, stride 1 "
                  "(its JSON's expected values and intervals, rule 3, and the true values):", "",
                  *model_table(models), ""]  # fmt: skip
    if args.report.is_file() and "## Reading" in args.report.read_text():
        lines += ["## Reading" + args.report.read_text().split("## Reading", 1)[1]]
    tmp = args.report.with_suffix(".md.tmp")
    tmp.write_text("\n".join(lines))
    tmp.replace(args.report)
    print(f"wrote {args.report} ({len(cells)} cells)")


def main(argv: list[str] | None = None) -> None:
    args = arguments(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    shown = sys.argv[1:] if argv is None else argv
    (tune if args.phase == "tune" else score)(args, shown)


if __name__ == "__main__":
    main()
