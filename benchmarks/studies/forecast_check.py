"""How good the forecast's pick and its error bars are on data the pick was not tuned on (issue 73's goals).

For each held-out set (``reports/heldout_sets.md``: Allen-Cahn, Kuramoto-Sivashinsky, Swift-Hohenberg, made by their
own solvers, registered as a user registers a system), stride and history: ``well-upao forecast`` with the shipped
backbone zero-shot as its model (``shipped_extrap2`` on the set's slots) beside the classical candidates and the solver
step (left out by the forecast where one prediction is over its budget), from the rollout starts evaluate uses
(``studies/forecast_column.py``), scored against the stored frames it did not read; and ``well-upao evaluate`` of the
same backbone beside the classical rows on the same windows, whose rows give each candidate's own true VRMSE. Per
(set, stride, history) and window a *held window*: the forecast's true VRMSE over the best single candidate's (the
lowest of the rows it chose from, on the same frames: one step ahead each row's rollouts' first step from the
forecast's starts, not evaluate's mean over every target frame); and per start and window a *cell*: whether the
forecast's nominal 80% interval held its true VRMSE. The goals: the ratio at most 1.2 on 9 of every 10 held windows;
the intervals holding 70-90% of the cells.

    PYTHONPATH=benchmarks/studies WELL_BASE_PATH=RUNS/data-heldout \\
        python benchmarks/studies/forecast_check.py --base RUNS/data-heldout --out RUNS/forecast_check

Resumable (a (set, stride, history) with a record is skipped); writes ``reports/forecast_check.md`` from the records.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.jobs import WELL_UPAO, run_logged, thread_env

from studies.forecast_column import coverage, forecast_case

ROOT = Path(__file__).resolve().parents[2]
SETS = ("heldout_allen_cahn", "heldout_kuramoto_sivashinsky", "heldout_swift_hohenberg")
#: the sets whose solver row evaluate cannot afford (its step doubling reaches its cap: reports/heldout_sets.md)
NO_SOLVER = ("heldout_kuramoto_sivashinsky", "heldout_swift_hohenberg")
BACKBONE, MODEL_ROW = "shipped_extrap2", "backbone"
WINDOWS, RATIO_GOAL = ("one_step", "6:12", "13:30"), 1.2


def environment(args) -> dict:
    """The commands' environment: the user module on the path, the base path, one thread, wandb off."""
    path = os.pathsep.join(p for p in (str(ROOT / "benchmarks" / "studies"), os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, PYTHONPATH=path, WELL_BASE_PATH=str(args.base), WANDB_MODE="disabled")
    return thread_env(env, args.threads)


def logged(args, command: list[str], log: Path):
    finished = run_logged(["nice", "-n", "10", *command, "--imports", "heldout_pdes"], log, environment(args))
    if finished.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {finished.returncode}; see {log}")
    return finished


def backbone(args, dataset: str) -> Path:
    """The shipped backbone on ``dataset``'s slots, saved as a checkpoint (once)."""
    import studies.heldout_pdes  # noqa: F401  (registers the held-out sets in this process, as --imports does)
    from well_upao.quickstart import QuickstartConfig, zero_shot_checkpoint

    path = args.out / "backbones" / f"{dataset}.pt"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        zero_shot_checkpoint(QuickstartConfig(pde=dataset, backbone=BACKBONE), args.base, path)
    return path


def check(args, dataset: str, stride: int, history: int) -> dict:
    """One (set, stride, history): the forecast column and evaluate's rows on the same windows."""
    folder = args.out / f"{dataset}-stride{stride}-history{history}"
    model = backbone(args, dataset)
    solver = ["--no-solver"] if dataset in NO_SOLVER else []  # the forecast's candidates and evaluate's rows alike
    forecast = forecast_case(
        model, args.base, dataset, stride, history, folder, lambda c, log: logged(args, c, log), extra=tuple(solver)
    )
    command = [*WELL_UPAO, "evaluate", f"{MODEL_ROW}={model}", "--data", dataset, "--base-path", str(args.base),
               "--history", str(history), "--stride", str(stride), "--rollout-steps", str(forecast["steps"]),
               "--out", str(folder / "evaluation"), "--quiet", *solver]  # fmt: skip
    finished = logged(args, command, folder / "evaluate.log")
    return {
        "dataset": dataset,
        "stride": stride,
        "history": history,
        "forecast": forecast,
        "rows": evaluated_rows(folder),
        "evaluate_seconds": round(finished.wall_seconds, 1),
    }


def evaluated_rows(folder: Path) -> dict:
    """Each evaluated row's true VRMSE per window from evaluate's JSON in ``folder/evaluation``: ``one_step`` its mean
    over every target frame, ``one_step_at_starts`` its rollouts' first step (the rollout starts the forecast starts
    from: the same frames as the forecast's one-step cells), and the Well's rollout windows."""
    evaluation = json.loads(next((folder / "evaluation").glob("evaluation_*.json")).read_text())
    rows = {}
    for row in evaluation["scores"]:
        steps = row.get("rollout_vrmse_well") or []
        rows[row["name"]] = {"one_step": row["mean_vrmse_well"], **(row.get("rollout_windows") or {})}
        if steps:
            rows[row["name"]]["one_step_at_starts"] = steps[0]
    return rows


def held_windows(record: dict) -> list[dict]:
    """Per window the forecast's true VRMSE, the best candidate's (the lowest of the evaluated rows the forecast chose
    from: its candidates, the solver only where the forecast kept it) and their ratio."""
    chosen_from = set(record["forecast"]["candidates"]) | {MODEL_ROW}  # the model row goes by its file's name there
    out = []
    for window in WINDOWS:
        value = record["forecast"]["windows"].get(window)
        key = "one_step_at_starts" if window == "one_step" else window  # the forecast's frames, not every target's
        candidates = {
            name: cells.get(key)
            for name, cells in record["rows"].items()
            if cells.get(key) is not None and name in chosen_from
        }
        if value is None or not candidates:
            continue
        best = min(candidates, key=candidates.get)
        out.append({"window": window, "forecast": value, "best": best, "best_value": candidates[best],
                    "ratio": value / candidates[best] if candidates[best] > 0 else float("inf")})  # fmt: skip
    return out


def report(records: list[dict], command: str) -> str:
    lines = [
        "# The forecast's pick and error bars on held-out data",
        "",
        f"> Made by `{command}` at commit {commit()} ({len(records)} set x stride x history combinations). The sets "
        "are the held-out sets of [heldout_sets.md](heldout_sets.md); the forecast's model is the shipped backbone "
        f"`{BACKBONE}` zero-shot; no rule, threshold or default of the forecast was tuned on these sets.",
        "",
        "| set | stride | history | window | forecast | best candidate | ratio | candidates used |",
        "|---|---|---|---|---|---|---|---|",
    ]
    held, cells = [], []
    for record in records:
        used = {}
        for cell in record["forecast"]["cells"]:
            used.setdefault(cell["window"], set()).add(cell["predictor"])
        cells += record["forecast"]["cells"]
        for entry in held_windows(record):
            held.append(entry)
            lines.append(
                f"| {record['dataset']} | {record['stride']} | {record['history']} | {entry['window']} | "
                f"{entry['forecast']:.3g} | {entry['best']}: {entry['best_value']:.3g} | {entry['ratio']:.3g} | "
                f"{', '.join(sorted(used.get(entry['window'], [])))} |"
            )
    within = sum(entry["ratio"] <= RATIO_GOAL for entry in held)
    lines += [
        "",
        "## Goals",
        "",
        f"- the forecast within {RATIO_GOAL}x of the best single candidate: {within} of {len(held)} held windows (the "
        "goal: 9 of every 10)",
    ]
    for window in WINDOWS:
        inside = [c for c in cells if c["window"] == window]
        if inside:
            share = coverage(inside)
            widths = [c["high"] / c["low"] for c in inside if c.get("low")]
            lines.append(
                f"- {window}: the nominal 80% intervals held the true VRMSE in {100 * share:.0f}% of {len(inside)} "
                f"cells (the goal: 70-90%); median width high/low {statistics.median(widths):.3g}"
                if widths
                else f"- {window}: no interval"
            )
    return "\n".join(lines) + "\n"


def commit() -> str:
    return subprocess.run(
        ["git", "rev-parse", "--short=10", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", type=Path, required=True, help="the held-out sets' Well base path")
    parser.add_argument("--out", type=Path, default=Path("RUNS/forecast_check"))
    parser.add_argument("--sets", nargs="+", default=list(SETS), choices=SETS)
    parser.add_argument("--strides", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--histories", nargs="+", type=int, default=[8, 16, 32])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--report", type=Path, default=ROOT / "reports" / "forecast_check.md")
    parser.add_argument("--report-only", action="store_true", help="write the report from the records made so far")
    args = parser.parse_args(argv)
    records_folder = args.out / "records"
    records_folder.mkdir(parents=True, exist_ok=True)
    for dataset in [] if args.report_only else args.sets:
        for stride in args.strides:
            for history in args.histories:
                path = records_folder / f"{dataset}-stride{stride}-history{history}.json"
                if not path.is_file():
                    record = check(args, dataset, stride, history)
                    path.write_text(json.dumps(record, indent=1) + "\n")
                    print(f"{path.name}: done", flush=True)
    records = [json.loads(p.read_text()) for p in sorted(records_folder.glob("*.json"))]
    command = "python benchmarks/studies/forecast_check.py " + " ".join(argv if argv is not None else sys.argv[1:])
    text = report(records, command)
    if args.report.is_file() and "## Reading" in args.report.read_text():  # the hand-written reading is kept
        text += "\n## Reading" + args.report.read_text().split("## Reading", 1)[1]
    args.report.write_text(text)
    print(f"wrote {args.report}")


if __name__ == "__main__":
    main()
