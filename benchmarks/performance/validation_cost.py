"""What validation costs next to training, per epoch, read from a UPAO run's metrics.jsonl (issue 53, item 4).

Two settings, each trained at its defaults through the Well's harness:

* ``quickstart``: the quickstart's UPAO + NSLoRA run (``well_upao.quickstart.harness_command``: wave2d 64^2, 12
  trajectories of 51 frames, stride 5, the shipped ``extrap2`` backbone), on the quickstart's data;
* ``wave2d``: the user's own command, ``python -m the_well.benchmark.train model=na_nslora trainer=upao data=wave2d``,
  on ``well-upao generate-exact --pde wave2d --resolution 64 --n-steps 41``, with ``trainer.epochs`` lowered to
  ``--epochs`` (the ratio is per epoch).

Per epoch, from the lines the loop writes: the training seconds are ``time_per_train_iter`` times the epoch's steps
(``step`` minus the previous line's); the rest of the epoch (``seconds`` minus the previous line's, less training) is
the validation, the best.pt/recent.pt writes and the line itself ("validation and checkpoints"). The first epoch also
carries the start's validation (``trainer.validate_start``), so the ratio is reported for it apart and as the median
over the later epochs. Goal (issue 53): at most 0.25 with the horizon scoring.

``--source DIR`` runs the harness on another checkout of the package (``PYTHONPATH=DIR``), e.g. the commit before the
horizon scoring, for the before/after pair; both are measured in one invocation on the same machine:

    git worktree add /tmp/before dc029ea
    python benchmarks/performance/validation_cost.py --out /tmp/validation_cost --source before=/tmp/before \
        --source after=. --jobs 2 --threads 1
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path

from well_upao.data.generate import GenerationRequest, generate_dataset
from well_upao.harness import runs
from well_upao.harness.metrics_file import read_metrics
from well_upao.quickstart import QuickstartConfig, harness_command

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.jobs import run_all, thread_env
from harness.readings import portable_paths, write_keeping_reading

SETTINGS = ("quickstart", "wave2d")


def epoch_costs(lines: list[dict]) -> list[dict]:
    """Per trained epoch: ``train_s`` (``time_per_train_iter`` x the epoch's steps), ``other_s`` (the rest of the
    epoch's wall seconds: validation and checkpoints) and their ratio; lines without training (the start's epoch 0,
    the test lines) are skipped."""
    out, previous_step, previous_seconds = [], 0, 0.0
    for line in lines:
        if "time_per_train_iter" not in line or "seconds" not in line or int(line.get("epoch", 0)) < 1:
            continue
        steps = int(line["step"]) - previous_step
        train = float(line["time_per_train_iter"]) * steps
        other = float(line["seconds"]) - previous_seconds - train
        out.append({"epoch": int(line["epoch"]), "train_s": train, "other_s": other, "ratio": other / train})
        previous_step, previous_seconds = int(line["step"]), float(line["seconds"])
    return out


def summary(costs: list[dict]) -> dict:
    """The first epoch's ratio (with the start's validation) and the median of the later epochs'."""
    later = [c["ratio"] for c in costs[1:]]
    return {
        "epochs": len(costs),
        "first_ratio": costs[0]["ratio"] if costs else float("nan"),
        "median_later_ratio": statistics.median(later) if later else float("nan"),
        "train_s": sum(c["train_s"] for c in costs),
        "other_s": sum(c["other_s"] for c in costs),
    }


def setting_command(setting: str, base: Path, experiments: Path, epochs: int) -> list[str]:
    """The harness command of one setting (see the module docstring)."""
    if setting == "quickstart":
        return harness_command(QuickstartConfig(), "na_nslora", "upao", base, experiments)
    overrides = ["model=na_nslora", "trainer=upao", "data=wave2d", f"data.well_base_path={base}"]
    overrides += [f"experiment_dir={experiments}", f"trainer.epochs={epochs}", "trainer.progress=false"]
    return runs.harness_command([*overrides, "auto_resume=false"])


def ensure_data(setting: str, out: Path) -> Path:
    """The setting's dataset under ``out/datasets/<setting>`` (made once)."""
    base = out / "datasets" / setting
    if not (base / "wave2d").is_dir():
        if setting == "quickstart":
            q = QuickstartConfig()
            request = GenerationRequest(
                pde="wave2d", out=base, n_traj=q.n_traj, resolution=q.resolution, n_steps=q.n_steps, seed=q.seed,
                valid_fraction=q.valid_fraction,
            )  # fmt: skip
        else:
            request = GenerationRequest(pde="wave2d", out=base, resolution=64, n_steps=41)
        generate_dataset(request, progress=False)
    return base


def finished(lines: list[dict]) -> bool:
    """Whether a run's metrics.jsonl reached the harness's test line (keys ``rollout_test_*`` or ``test_*``)."""
    return bool(lines) and any(key.startswith(("rollout_test_", "test_")) for key in lines[-1])


def run_setting(
    setting: str,
    label: str,
    source: Path | None,
    out: Path,
    epochs: int,
    partial: bool = False,
    threads: int | None = None,
) -> dict:
    """One harness run of ``setting`` on the code at ``source`` (``None``: the installed package); its summary.
    ``partial``: a run stopped before its end whose epochs are kept is tabulated as it stands (``stopped``), not run
    again."""
    base = ensure_data(setting, out)
    experiments = out / "runs" / f"{setting}-{label}"
    env = thread_env(dict(os.environ, WELL_BASE_PATH=str(base), WANDB_MODE="disabled"), threads)
    if source is not None:  # `python -m` puts its working folder first on the path: run it from the checkout
        env["PYTHONPATH"] = str(source.resolve())
    command = setting_command(setting, base, experiments, epochs)
    done = runs.latest_run(experiments, "*")
    lines = read_metrics(done) if done is not None else []
    if finished(lines) or (partial and epoch_costs(lines)):  # measured already (or as far as it went)
        print(f"[{setting} / {label}] reusing {done}", flush=True)
        costs = epoch_costs(lines)
        return {"setting": setting, "code": label, "run": str(done), "per_epoch": costs, **summary(costs),
                "stopped": not finished(lines)}  # fmt: skip
    print(f"[{setting} / {label}] {' '.join(command)}", flush=True)
    log = experiments.with_suffix(".log")
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as handle:
        folder = source.resolve() if source is not None else out
        run = subprocess.run(command, env=env, cwd=folder, stdout=handle, stderr=subprocess.STDOUT, check=False)
        code = run.returncode
    if code != 0:
        raise SystemExit(f"{setting} / {label} failed (exit {code}); see {log}")
    run = runs.latest_run(experiments, "*")
    costs = epoch_costs(read_metrics(run))
    return {"setting": setting, "code": label, "run": str(run), "per_epoch": costs, **summary(costs)}


def ratio(value: float) -> str:
    """A ratio to 3 decimals, "—" where there is none (a run stopped after its first epoch has no later one)."""
    return "—" if math.isnan(value) else f"{value:.3f}"


def table(results: list[dict]) -> str:
    """One row per run (``repeat``: which invocation of the study made it, where ``--combine`` joined several)."""
    rows = [
        "| setting | code | repeat | epochs | training s | validation and checkpoints s | ratio, epoch 1 (with the "
        "start's validation) | ratio, median of later epochs |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        epochs = f"{r['epochs']} (stopped)" if r.get("stopped") else f"{r['epochs']}"
        rows.append(
            f"| {r['setting']} | {r['code']} | {r.get('repeat', 1)} | {epochs} | {r['train_s']:.1f} "
            f"| {r['other_s']:.1f} | {ratio(r['first_ratio'])} | {ratio(r['median_later_ratio'])} |"
        )
    return "\n".join(rows)


def spread_table(results: list[dict]) -> str:
    """Per setting and code, over its repeats: the median and the range of the later epochs' ratio."""
    rows = [
        "| setting | code | repeats | ratio, median of later epochs: median over repeats | lowest | highest |",
        "|---|---|---|---|---|---|",
    ]
    keys = dict.fromkeys((r["setting"], r["code"]) for r in results)
    for setting, code in keys:
        values = [r["median_later_ratio"] for r in results if (r["setting"], r["code"]) == (setting, code)]
        values = [v for v in values if not math.isnan(v)]
        if values:
            rows.append(
                f"| {setting} | {code} | {len(values)} | {ratio(statistics.median(values))} | {ratio(min(values))} "
                f"| {ratio(max(values))} |"
            )
    return "\n".join(rows)


def kept_name(result: dict) -> str:
    """The file a run's metrics.jsonl is kept under (``--keep``)."""
    return f"{result['setting']}-{result['code']}-{result.get('repeat', 1)}.metrics.jsonl"


def combine(outs: list[Path], keep: Path | None) -> list[dict]:
    """The runs of several invocations (each ``OUT/validation_cost.json``), numbered by ``repeat`` in the order
    given; with ``keep``, each run's metrics.jsonl copied there (the evidence a report's table is checked against)
    and the result's ``run`` pointing at the copy."""
    results = []
    for repeat, out in enumerate(outs, start=1):
        record = out / "validation_cost.json"
        if not record.is_file():
            raise SystemExit(f"{record} does not exist: run the study with --out {out} first")
        for result in json.loads(record.read_text()):
            result = result | {"repeat": repeat}
            if keep is not None:
                keep.mkdir(parents=True, exist_ok=True)
                metrics = Path(result["run"]) / "artifacts" / "metrics.jsonl"
                target = keep / kept_name(result)
                tmp = target.with_suffix(".tmp")
                tmp.write_text(metrics.read_text())
                tmp.replace(target)
                result["run"] = str(target)
            results.append(result)
    return results


def parse_source(text: str) -> tuple[str, Path | None]:
    label, _, folder = text.partition("=")
    if not folder:
        raise argparse.ArgumentTypeError(f"--source wants LABEL=DIR, got {text!r}")
    return label, None if folder == "installed" else Path(folder)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("outputs/validation_cost"))
    parser.add_argument("--setting", choices=SETTINGS, action="append", help="default: both")
    parser.add_argument("--source", type=parse_source, action="append", help="LABEL=DIR (DIR 'installed': this "
                        "interpreter's package); default: installed")  # fmt: skip
    parser.add_argument("--epochs", type=int, default=3, help="epochs of the wave2d setting (default 3)")
    parser.add_argument("--report", type=Path, help="write the table and the command here (markdown)")
    parser.add_argument("--combine", type=Path, nargs="+", help="run nothing: tabulate the runs of these earlier "
                        "--out folders together, one repeat each")  # fmt: skip
    parser.add_argument("--keep", type=Path, help="with --combine: copy each run's metrics.jsonl here")
    parser.add_argument("--threads", type=int, default=None, help="torch threads per run (default: torch's)")
    parser.add_argument("--jobs", type=int, default=1, help="runs at once (2: a before/after pair side by side, "
                        "under the same load)")  # fmt: skip
    parser.add_argument("--analyse-only", action="store_true", help="read --out's validation_cost.json, run nothing")
    parser.add_argument("--partial", action="store_true", help="tabulate a run stopped before its end as it stands "
                        "(its completed epochs; 'stopped' in the table) instead of running it again")  # fmt: skip
    args = parser.parse_args(argv)
    if args.keep is not None and not args.combine:
        parser.error("--keep keeps the runs of --combine: give both")
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    sources = args.source or [("installed", None)]
    record = args.out / "validation_cost.json"
    if args.combine:
        results = combine([out.resolve() for out in args.combine], args.keep)
    elif args.analyse_only:
        results = json.loads(record.read_text())
    else:
        for setting in args.setting or SETTINGS:
            ensure_data(setting, args.out)  # once, before runs that share it start
        cases = [(setting, label, source) for setting in (args.setting or SETTINGS) for label, source in sources]
        results = run_all(
            [lambda c=c: run_setting(*c, args.out, args.epochs, args.partial, args.threads) for c in cases], args.jobs
        )
        record.write_text(json.dumps(results, indent=1))
    command = "python benchmarks/performance/validation_cost.py " + " ".join(sys.argv[1:] if argv is None else argv)
    text = f"Command: `{command}` (`--analyse-only`: the table of the runs it names)\n\n" + table(results)
    if any(r.get("repeat", 1) > 1 for r in results):
        text += "\n\nOver the repeats:\n\n" + spread_table(results)
    print(text)
    if args.report is not None:
        write_report(args.report, text, results)


def write_report(report: Path, text: str, results: list[dict]) -> None:
    """The report: what was measured, the table, each run's folder; a hand-written reading after it is kept."""
    runs = "\n".join(
        f"- {r['setting']} / {r['code']} / {r.get('repeat', 1)}: `{portable_paths(r['run'])}`" for r in results
    )
    body = (
        "# What validation costs next to training (issue 53, item 4)\n\n"
        + "\n\n".join((__doc__ or "").split("\n\n")[1:3]).strip()
        + "\n\nTraining seconds are `time_per_train_iter` times the epoch's steps; the rest of the epoch's wall "
        "seconds (validation, best.pt/recent.pt, the line) is the second column. Goal: a ratio of at most 0.25 "
        "with the horizon scoring.\n\n" + text + "\n\nRuns (their metrics.jsonl):\n" + runs + "\n"
    )
    write_keeping_reading(report, body.splitlines())  # the hand-written reading (## Reading on) is kept


if __name__ == "__main__":
    main()
