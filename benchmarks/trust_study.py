"""Does the label-free scorecard rank runs as the truth does? (issue 29, reports/trust.md)

Runs UPAO + NSLoRA on the shipped backbone through The Well's harness over a grid of exact datasets x time strides x
prediction bases (``last`` / ``extrap2``) x budgets (optimizer steps per epoch) x seeds (``data.shuffle_seed``: the
training order), each with ``trainer.validate_start`` and ``trainer.guard`` on, at least 3 validation trajectories
(``trainer.vrmse_trajectories`` covers the whole validation split, so ``valid_paper_VRMSE`` at every validation is the
true interior VRMSE of that candidate). Then reads every run's ``metrics.jsonl`` only:

* rank correlations (Spearman and Kendall, with bootstrap 95% intervals over runs) between each label-free score
  (``valid_score_residual_ratio``, ``valid_score_departure``, ``valid_score_backtest``) and the true VRMSE relative to
  the run's start (``valid_paper_VRMSE / valid_paper_VRMSE at epoch 0``, so that strides and datasets share a scale):
  across the candidates of all runs of one dataset, and within each run across its checkpoints (the mean of the
  per-run coefficients, with a bootstrap interval over runs);
* the selection: which epoch the criterion alone would keep (lowest ``valid``), which the guard kept
  (``best_epoch``) and which an oracle with labels would keep (lowest ``valid_paper_VRMSE``); how often each matched
  the oracle and what a mismatch cost (its VRMSE over the oracle's);
* a scatter figure of each score against the relative VRMSE (``reports/trust_scatter.png``).

Resumable: a finished run leaves ``done.json`` beside its run folder and is not run again; ``--max-runs`` caps how
many new runs one call starts (the report then says exactly how many runs stand behind each number).

    python benchmarks/trust_study.py --out /tmp/trust_study --report reports/trust.md
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
from horizon_study import BEGIN as HORIZON_BEGIN
from horizon_study import END as HORIZON_END
from jobs import run_all as run_tasks  # benchmarks/ is on the path of a script run from it
from jobs import run_logged, thread_env, write_done
from prior_study import BEGIN as PRIOR_BEGIN
from prior_study import END as PRIOR_END
from readings import portable_paths
from study_data import STUDY_REPLICAS, ensure_replica

from well_upao.data.source import WellSource
from well_upao.harness.metrics_file import read_metrics
from well_upao.harness.runs import RunCheckpoint, find_checkpoint, harness_command, latest_run

SCORES = ("residual_ratio", "residual_distance", "departure", "backtest")
#: frames after the history that each validation trajectory is cut to (`data.max_rollout_steps`): the truth's frames
TRUTH_FRAMES = 2


def score(line: dict, name: str) -> float:
    """A validation line's score; ``residual_distance`` is ``|ln residual_ratio|``, the distance of the prediction's
    residual from the floor on either side (derived here, not logged)."""
    if name == "residual_distance":
        ratio = line.get("valid_score_residual_ratio", math.nan)
        return abs(math.log(ratio)) if ratio and ratio > 0 else math.nan
    return line.get(f"valid_score_{name}", math.nan)


def run_name(dataset: str, stride: int, base: str, steps: int, seed: int) -> str:
    return f"{dataset}-s{stride}-{base}-b{steps}-seed{seed}"


def command(args, dataset: str, stride: int, base: str, steps: int, seed: int, experiment: Path) -> list[str]:
    return harness_command(
        [
            "model=na_nslora",
            "trainer=upao",
            f"data={dataset}",
            f"model.base={base}",
            "optimizer.lr=1e-3",
            "trainer.nslora_schedule=from_start",
            f"data.min_dt_stride={stride}",
            f"data.max_dt_stride={stride}",
            f"trainer.epochs={args.epochs}",
            f"trainer.epoch_steps={steps}",
            "trainer.warmup_steps=5",
            "data.batch_size=4",
            f"data.shuffle_seed={seed}",
            f"trainer.max_rollout_steps={TRUTH_FRAMES}",
            f"data.max_rollout_steps={TRUTH_FRAMES}",
            "trainer.rollout_val_frequency=1000",
            f"trainer.short_validation_length={args.validation_batches}",
            "trainer.vrmse_trajectories=1000",
            "trainer.patience=0",
            "trainer.progress=false",
            "auto_resume=false",
            f"experiment_dir={experiment}",
        ]
    )


def ensure_dataset(args, dataset: str) -> Path:
    """The Well base path holding ``dataset``, made if missing: a study replica (``benchmarks/study_data.py``) or
    an exact set at ``--resolution`` with ``--n-traj`` trajectories of ``--n-steps`` frames."""
    from well_upao.data.generate import GenerationRequest, generate_dataset

    base = args.out / "datasets"
    if dataset in STUDY_REPLICAS:
        ensure_replica(dataset, base)
    elif not (base / dataset / "stats.yaml").is_file():
        generate_dataset(
            GenerationRequest(
                pde=dataset,
                out=base,
                n_traj=args.n_traj,
                resolution=args.resolution,
                n_steps=args.n_steps,
                seed=42,
                valid_fraction=args.valid_fraction,
            ),
            progress=False,
        )
    return base


def validation_trajectories(base: Path, dataset: str) -> int:
    """How many trajectories the validation split of ``dataset`` under ``base`` holds (its files' attributes)."""
    return WellSource(base, dataset, "valid").n_trajectories()


def replicas_phrase(args) -> str:
    """The replicas of the grid, for the report's opening sentence (empty without ``--replicas``), with the number
    of validation trajectories each holds (read from its files, where it is made)."""
    if not args.replicas:
        return ""
    base = args.out / "datasets"
    counts = [
        f"{name} {validation_trajectories(base, name)}"
        for name in args.replicas
        if (base / name / "stats.yaml").is_file()
    ]
    held = f"; validation trajectories: {', '.join(counts)}" if counts else ""
    return (
        f"the replicas {', '.join(args.replicas)} as `benchmarks/study_data.py` makes them (41 frames{held}), "
        f"strides {', '.join(map(str, args.replica_strides))}; "
    )


def grid(args) -> list[tuple[str, int, str, int, int]]:
    """Every (dataset, stride, base, budget, seed) of the study: the exact sets at ``--strides``, the replicas at
    ``--replica-strides``."""
    cells = list(itertools.product(args.datasets, args.strides, args.bases, args.budgets, args.seeds))
    cells += itertools.product(args.replicas, args.replica_strides, args.bases, args.budgets, args.seeds)
    # one of every (dataset, stride, base) first, so that a capped study still covers the grid's axes
    cells.sort(key=lambda c: (c[4], c[3] != args.budgets[0], c[1], c[0], c[2]))
    return cells


def run_one(args, cell: tuple[str, int, str, int, int]) -> None:
    """Train one cell of the grid (not after ``--stop-after-minutes``); ``done.json`` records its command, wall
    clock and CPU time when it finished."""
    dataset, stride, base, steps, seed = cell
    name = run_name(*cell)
    folder = args.out / "runs" / name
    if args.deadline and time.time() > args.deadline:
        print(f"{name}: deadline reached, not started", flush=True)
        return
    datasets = ensure_dataset(args, dataset)
    cmd = command(args, dataset, stride, base, steps, seed, folder / "experiment")
    env = thread_env(dict(os.environ, WELL_BASE_PATH=str(datasets), WANDB_MODE="disabled"), args.threads)
    folder.mkdir(parents=True, exist_ok=True)
    finished = run_logged(["nice", "-n", "10", *cmd], folder / "train.log", env, cwd=folder)
    print(f"{name}: exit {finished.returncode} in {finished.wall_seconds:.0f} s "
          f"({finished.cpu_seconds:.0f} CPU s)", flush=True)  # fmt: skip
    if finished.returncode == 0:
        record = {"command": cmd[1:], "seconds": finished.wall_seconds}
        write_done(folder / "done.json", finished, args.jobs, args.threads, **record)


def run_all(args) -> None:
    """Run every unfinished cell (at most ``--max-runs``), ``--jobs`` at a time; a datasets is made before the
    runs start (two runs must not make it at once)."""
    pending = [c for c in grid(args) if not (args.out / "runs" / run_name(*c) / "done.json").is_file()]
    pending = pending[: args.max_runs] if args.max_runs is not None else pending
    for dataset in dict.fromkeys(c[0] for c in pending):
        ensure_dataset(args, dataset)
    run_tasks([lambda cell=cell: run_one(args, cell) for cell in pending], args.jobs)


# ---------------------------------------------------------------------------------------------- analysis
def load_runs(args) -> list[dict]:
    runs = []
    for done in sorted((args.out / "runs").glob("*/done.json")):
        folder = done.parent
        run_folder = latest_run(folder / "experiment")
        if run_folder is None:
            continue
        lines = [line for line in read_metrics(run_folder) if "valid" in line and "valid_paper_VRMSE" in line]
        if len(lines) < 2 or lines[0].get("epoch") != 0:
            continue
        dataset, stride, base, budget, seed = folder.name.split("-")
        runs.append(
            {
                "name": folder.name,
                "dataset": dataset,
                "stride": int(stride[1:]),
                "base": base,
                "budget": int(budget[1:]),
                "seed": int(seed[4:]),
                "lines": lines,
                "command": json.loads(done.read_text())["command"],
                "seconds": json.loads(done.read_text())["seconds"],
            }
        )
    return runs


def load_external(folders: list[Path]) -> list[dict]:
    """Run folders made outside the grid (``--include-runs``, e.g. the done-when runs of
    ``tests/trainers/test_guard_burgers.py``), described from their ``extended_config.yaml``. A run made before the
    departure was measured in step units (its first line logs no ``guard`` setting under the current rule) is kept
    with its departure converted: ``departure (floor units) x floor``."""
    from omegaconf import OmegaConf

    runs = []
    for folder in folders:
        config = OmegaConf.load(folder / "extended_config.yaml")
        lines = [line for line in read_metrics(folder) if "valid" in line and "valid_paper_VRMSE" in line]
        if len(lines) < 2 or lines[0].get("epoch") != 0:
            continue
        if config.trainer.get("guard_departure_limit") == 1.0:  # the first rule: departure in floor units
            for line in lines:
                for key in ("valid_score_departure", "valid_score_start_departure"):
                    if key in line and line[key] == line[key]:
                        line[key] *= line["valid_score_floor"]
        runs.append(
            {
                "name": str(folder),
                "dataset": config.data.well_dataset_name,
                "stride": int(config.data.min_dt_stride),
                "base": config.model.base,
                "budget": int(config.trainer.epoch_steps),
                "seed": int(config.data.get("shuffle_seed") or 0),
                "lines": lines,
                "command": [],
                "seconds": lines[-1].get("seconds", math.nan),
                "external": True,
                "guard_on": bool(config.trainer.get("guard", False)),
                "folder": folder,
            }
        )
    return runs


def included_against_extrap2(runs: list[dict]) -> list[str]:
    """For every ``--include-runs`` run: its selected model (``best.pt``) against ``extrap2`` on the whole validation
    split of its dataset and stride (``well-upao evaluate``'s pipeline, the paper's VRMSE), with its selection and
    the label-free scores evaluate gives both rows: the done-when table of issue 29."""
    from well_upao.evaluate.pipeline import EvaluationRequest, run_evaluation

    external = [r for r in runs if r.get("external")]
    if not external:
        return []
    lines = [
        "### The runs of `--include-runs` against extrap2",
        "",
        "Each run's selected model (`best.pt`) and the `extrap2` row evaluated together on the whole validation split "
        "(`well-upao evaluate`'s pipeline, the paper's VRMSE); scores as evaluate reports them (residual over the "
        "floor; backtest as a fraction of a step). Evaluate scores every frame after the history, not the "
        f"{TRUTH_FRAMES} frames of the validations above, so a base-`extrap2` run's start VRMSE in the first table "
        "and the `extrap2` row here, the same predictions, read differently.",
        "",
        "| dataset | stride | base | trainer.guard | UPAO VRMSE | extrap2 VRMSE | UPAO / extrap2 | best_epoch "
        "| guard refusals | UPAO residual / floor | UPAO backtest | extrap2 backtest |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in sorted(external, key=lambda r: (r["dataset"], r["stride"], not r["guard_on"])):
        best = RunCheckpoint.read("upao", find_checkpoint(run["folder"]))
        data = best.payload["train"]["data"]  # the run's data settings, its absolute base path among them
        request = EvaluationRequest(
            Path(data["well_base_path"]), run["dataset"], stride=run["stride"], rollout_steps=0, out=None,
            progress=False,
        )  # fmt: skip
        request.solver = False
        rows = {score.name: score for score in run_evaluation(request, [best]).evaluation.scores}
        upao, extrap2 = rows["upao"], rows["extrap2"]
        last = run["lines"][-1]
        lines.append(
            f"| {run['dataset']} | {run['stride']} | {run['base']} | {str(run['guard_on']).lower()} "
            f"| {upao.mean_paper:.3g} | {extrap2.mean_paper:.3g} | {upao.mean_paper / extrap2.mean_paper:.3g} "
            f"| {last.get('best_epoch')} | {last.get('guard_rejections', 0)} "
            f"| {upao.label_free.get('residual_ratio', math.nan):.3g} "
            f"| {upao.label_free.get('backtest', math.nan):.3g} | {extrap2.label_free.get('backtest', math.nan):.3g} |"
        )
    return [*lines, ""]


def relative_vrmse(run: dict) -> list[float]:
    start = run["lines"][0]["valid_paper_VRMSE"]
    return [line["valid_paper_VRMSE"] / start for line in run["lines"]]


def rank_pair(x, y):
    from scipy.stats import kendalltau, spearmanr

    x, y = np.asarray(x, float), np.asarray(y, float)
    keep = np.isfinite(x) & np.isfinite(y)
    if keep.sum() < 3 or np.ptp(x[keep]) == 0 or np.ptp(y[keep]) == 0:
        return math.nan, math.nan
    return float(spearmanr(x[keep], y[keep]).statistic), float(kendalltau(x[keep], y[keep]).statistic)


def across_runs(runs: list[dict], name: str, rng, draws: int) -> dict:
    """Candidates (every validation of every run) pooled; bootstrap over runs."""

    def pairs(chosen):
        xs, ys = [], []
        for run in chosen:
            for line, rel in zip(run["lines"], relative_vrmse(run), strict=True):
                xs.append(score(line, name))
                ys.append(rel)
        return xs, ys

    rho, tau = rank_pair(*pairs(runs))
    boot = [rank_pair(*pairs([runs[i] for i in rng.integers(0, len(runs), len(runs))])) for _ in range(draws)]
    return {"spearman": rho, "kendall": tau, **interval(boot), "runs": len(runs), "points": len(pairs(runs)[0])}


def within_runs(runs: list[dict], name: str, rng, draws: int) -> dict:
    """Per run across its checkpoints; the mean coefficient over runs, bootstrap over runs."""
    per = [rank_pair([score(line, name) for line in r["lines"]], relative_vrmse(r)) for r in runs]
    per = [p for p in per if np.isfinite(p[0])]
    if not per:
        return {"spearman": math.nan, "kendall": math.nan, "runs": 0}
    values = np.array(per)
    boot = [values[rng.integers(0, len(values), len(values))].mean(0) for _ in range(draws)]
    return {"spearman": float(values[:, 0].mean()), "kendall": float(values[:, 1].mean()), **interval(boot),
            "runs": len(values)}  # fmt: skip


def interval(boot) -> dict:
    values = np.array([b for b in boot if np.all(np.isfinite(b))])
    if len(values) == 0:
        return {}
    low, high = np.percentile(values, [2.5, 97.5], axis=0)
    return {"spearman_ci": (float(low[0]), float(high[0])), "kendall_ci": (float(low[1]), float(high[1]))}


def simulate(run: dict, guard: bool) -> int:
    """The index of the validation line the label-free selection keeps, replayed from the logged scores: the start,
    then every candidate whose criterion is lower than the best so far, unless (``guard``) the guard refuses it
    (``well_upao.trainers.guard.guard_decision`` with the default thresholds, against the start's card measured on
    the same batches). A guard-off run gets the guard it would have had; a guard-on run's replay is checked against
    its ``best_epoch``."""
    from well_upao.physics.scores import Scorecard
    from well_upao.trainers.guard import guard_decision

    lines = run["lines"]
    best, best_valid = 0, lines[0]["valid"]
    for i, line in enumerate(lines[1:], start=1):
        if line["valid"] >= best_valid:
            continue
        if guard:
            start = Scorecard.from_logs(line, prefix="valid_score_start_")
            if guard_decision(start, Scorecard.from_logs(line)) is not None:
                continue
        best, best_valid = i, line["valid"]
    return best


def selections(run: dict) -> dict:
    lines = run["lines"]
    vrmse = [line["valid_paper_VRMSE"] for line in lines]
    oracle = int(np.argmin(vrmse))
    criterion = simulate(run, guard=False)
    guard = simulate(run, guard=True)
    actual = next(i for i, line in enumerate(lines) if line["epoch"] == lines[-1]["best_epoch"])
    guard_on = run.get("guard_on", True)
    return {
        "oracle": vrmse[oracle],
        "criterion": vrmse[criterion],
        "guard": vrmse[guard],
        "start": vrmse[0],
        "guard_fired": guard != criterion,
        "guard_kept_start": guard == 0,
        "match_guard": guard == oracle or vrmse[guard] == vrmse[oracle],
        "match_criterion": criterion == oracle or vrmse[criterion] == vrmse[oracle],
        "replay_ok": actual == (guard if guard_on else criterion),
    }


def scatter(runs: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(SCORES), figsize=(5 * len(SCORES), 4))
    datasets = sorted({r["dataset"] for r in runs})
    colors = dict(zip(datasets, plt.cm.tab10.colors, strict=False))
    for ax, name in zip(axes, SCORES, strict=True):
        for run in runs:
            xs = [score(line, name) for line in run["lines"]][1:]
            ys = relative_vrmse(run)[1:]
            ax.scatter(xs, ys, s=10, color=colors[run["dataset"]], alpha=0.7,
                       marker="o" if run["base"] == "extrap2" else "^")  # fmt: skip
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.axhline(1.0, color="k", lw=0.5)
        ax.set_xlabel(name)
        ax.set_ylabel("VRMSE / VRMSE of the start")
    for name, color in colors.items():
        axes[0].scatter([], [], color=color, label=name)
    axes[0].legend(title="o extrap2, ^ last", fontsize=8)
    fig.suptitle("Label-free scores vs the true VRMSE relative to the start (trained candidates of every run)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def fmt(value) -> str:
    return "n/a" if value is None or (isinstance(value, float) and not math.isfinite(value)) else f"{value:.2f}"


def median(values: list[float]) -> str:
    return fmt(float(np.median(values))) if values else "n/a"


def worst(values: list[float]) -> str:
    return fmt(max(values)) if values else "n/a"


def correlation_rows(title: str, groups: dict[str, list[dict]], fn, rng, draws) -> list[str]:
    lines = [
        f"### {title}",
        "",
        "| dataset | score | runs | Spearman (95% CI) | Kendall (95% CI) |",
        "|---|---|---|---|---|",
    ]
    for group, runs in groups.items():
        for name in SCORES:
            r = fn(runs, name, rng, draws)
            ci_s = r.get("spearman_ci")
            ci_k = r.get("kendall_ci")
            lines.append(
                f"| {group} | {name} | {r['runs']} | {fmt(r['spearman'])}"
                + (f" ({fmt(ci_s[0])}, {fmt(ci_s[1])})" if ci_s else "")
                + f" | {fmt(r['kendall'])}"
                + (f" ({fmt(ci_k[0])}, {fmt(ci_k[1])})" if ci_k else "")
                + " |"
            )
    return [*lines, ""]


def breakdown(table: list[dict]) -> list[str]:
    """One row per (dataset, stride): how often each selector matched the oracle and its worst cost."""
    rows = []
    for key in sorted({(t["run"]["dataset"], t["run"]["stride"]) for t in table}):
        group = [t for t in table if (t["run"]["dataset"], t["run"]["stride"]) == key]
        rows.append(
            f"| {key[0]} | {key[1]} | {len(group)} | {sum(t['match_criterion'] for t in group)} "
            f"| {fmt(max(t['criterion'] / t['oracle'] for t in group))} | {sum(t['match_guard'] for t in group)} "
            f"| {fmt(max(t['guard'] / t['oracle'] for t in group))} | {sum(t['guard_kept_start'] for t in group)} |"
        )
    return rows


def write_report(args, runs: list[dict]) -> None:
    rng = np.random.default_rng(0)
    by_dataset = {d: [r for r in runs if r["dataset"] == d] for d in sorted({r["dataset"] for r in runs})}
    groups = by_dataset | {"all": runs}
    text = [
        "# Does the label-free scorecard rank runs as the truth does?",
        "",
        f"Command: `python benchmarks/trust_study.py {' '.join(args.argv)}`",
        "",
        f"{len(runs)} finished UPAO + NSLoRA runs on the shipped backbone ({sum(not r.get('external') for r in runs)} "
        f"of the grid: exact sets at {args.resolution}^2, {args.n_traj} trajectories, {args.valid_fraction:.0%} "
        f"validation, strides {', '.join(map(str, args.strides))}; {replicas_phrase(args)}"
        f"{args.epochs} epochs of `budget` optimizer steps, {args.validation_batches} validation batches "
        f"for the scores and, for the VRMSE, every trajectory of the validation split cut to the {TRUTH_FRAMES} "
        f"frames after its history (`data.max_rollout_steps={TRUTH_FRAMES}`; the paper's VRMSE normalises by the "
        f"temporal variance of those frames); {sum(bool(r.get('external')) for r in runs)} "
        "from `--include-runs`, with their own settings (validations per run in the table)). Each run validates "
        "before training and after every epoch. Truth: `valid_paper_VRMSE` of every validation, divided by the "
        "run's start (epoch 0). Scores: `valid_score_*` of the same validations.",
        "",
        "| dataset | stride | base | budget | seed | start VRMSE | criterion's pick | guard's pick | oracle "
        "| guard changed the pick | validations | seconds |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    table = []
    for run in runs:
        s = selections(run)
        table.append(s | {"run": run})
        text.append(
            f"| {run['dataset']} | {run['stride']} | {run['base']} | {run['budget']} | {run['seed']} "
            f"| {s['start']:.3g} "
            f"| {s['criterion']:.3g} | {s['guard']:.3g} | {s['oracle']:.3g} "
            f"| {'yes' if s['guard_fired'] else 'no'}{'' if run.get('guard_on', True) else ' (replayed)'} "
            f"| {len(run['lines'])} | {run['seconds']:.0f} |"
        )
    text.append("")
    text += correlation_rows(
        "Across runs: every candidate of every run of a dataset", groups, across_runs, rng, args.draws
    )
    text += correlation_rows("Within runs: across one run's checkpoints (mean over runs)", groups, within_runs, rng,
                             args.draws)  # fmt: skip
    n = len(table)
    if n:
        match_guard = sum(t["match_guard"] for t in table)
        match_crit = sum(t["match_criterion"] for t in table)
        costs_guard = [t["guard"] / t["oracle"] for t in table if not t["match_guard"]]
        costs_crit = [t["criterion"] / t["oracle"] for t in table if not t["match_criterion"]]
        worse_guard = sum(t["guard"] > 1.2 * t["start"] for t in table)
        worse_crit = sum(t["criterion"] > 1.2 * t["start"] for t in table)
        text += [
            "### The selection against an oracle with labels",
            "",
            "| selector | matched the oracle | median cost when not (VRMSE / oracle's) | worst cost "
            "| picks > 1.2x the start |",
            "|---|---|---|---|---|",
            f"| criterion alone (UPAO loss) | {match_crit} of {n} | {median(costs_crit)} | {worst(costs_crit)} "
            f"| {worse_crit} of {n} |",
            f"| guard (trainer.guard) | {match_guard} of {n} | {median(costs_guard)} | {worst(costs_guard)} "
            f"| {worse_guard} of {n} |",
            "",
            "Per dataset and stride (matched = the pick's VRMSE equals the oracle's; cost = VRMSE / the oracle's, "
            "worst over the runs):",
            "",
            "| dataset | stride | runs | criterion matched | criterion worst cost | guard matched | guard worst cost "
            "| guard kept the start |",
            "|---|---|---|---|---|---|---|---|",
            *breakdown(table),
            "",
            f"The guard changed the pick in {sum(t['guard_fired'] for t in table)} of {n} runs and kept the start in "
            f"{sum(t['guard_kept_start'] for t in table)}. Picks are replayed from the logged scores "
            "(`simulate`): for runs made with the guard off, the guard's pick is the one it would have made; the "
            "replay "
            f"reproduced the run's own `best_epoch` in {sum(t['replay_ok'] for t in table)} of {n} runs.",
            "",
        ]
    text += included_against_extrap2(runs)
    scatter(runs, args.figure)
    text += [f"![scatter]({os.path.relpath(args.figure, args.report.parent)})", ""]
    args.report.parent.mkdir(parents=True, exist_ok=True)
    reading = kept = ""
    if args.report.is_file():
        earlier = args.report.read_text()
        if "\n## Reading" in earlier:
            reading = earlier[earlier.index("\n## Reading") :]
        for begin, end in ((PRIOR_BEGIN, PRIOR_END), (HORIZON_BEGIN, HORIZON_END)):  # the other studies' sections stay
            if begin in earlier:
                kept += "\n" + begin + earlier.split(begin, 1)[1].split(end, 1)[0] + end + "\n"
    tmp = args.report.with_suffix(".md.tmp")
    tmp.write_text(portable_paths("\n".join(text)) + kept + reading)  # run folders as RUNS/...
    tmp.replace(args.report)
    print(f"wrote {args.report} from {len(runs)} runs")


def main(argv: list[str] | None = None) -> None:
    """The study's command line (``argv``: its arguments, default ``sys.argv[1:]``; ``reproduce.py --study trust``
    passes its own)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("outputs/trust"))
    parser.add_argument("--report", type=Path, default=Path("reports/trust.md"))
    parser.add_argument("--figure", type=Path, default=Path("reports/trust_scatter.png"))
    parser.add_argument("--datasets", nargs="+", default=["burgers2d", "wave2d", "advdiff2d"])
    parser.add_argument("--strides", nargs="+", type=int, default=[1, 5, 10])
    parser.add_argument(
        "--replicas",
        nargs="*",
        default=["gray_scott_reaction_diffusion", "active_matter"],
        choices=list(STUDY_REPLICAS),
    )
    parser.add_argument(
        "--replica-strides",
        nargs="+",
        type=int,
        default=[1, 4],
        help="41 frames hold stride 4 with history 8 (the Well's rollout datasets need 8 s + s frames)",
    )
    parser.add_argument("--bases", nargs="+", default=["last", "extrap2"])
    parser.add_argument("--budgets", nargs="+", type=int, default=[5, 15], help="optimizer steps per epoch")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--validation-batches", type=int, default=2)
    parser.add_argument("--resolution", type=int, default=32)
    parser.add_argument("--n-traj", type=int, default=12)
    parser.add_argument("--n-steps", type=int, default=101)
    parser.add_argument("--valid-fraction", type=float, default=0.25)
    parser.add_argument("--jobs", type=int, default=1, help="runs at once")
    parser.add_argument("--threads", type=int, default=None, help="torch threads per run (default: torch's)")
    parser.add_argument("--max-runs", type=int, default=None, help="start at most this many new runs")
    parser.add_argument("--stop-after-minutes", type=float, default=None, help="start no new run after this")
    parser.add_argument("--draws", type=int, default=1000, help="bootstrap draws")
    parser.add_argument("--analyse-only", action="store_true")
    parser.add_argument("--include-runs", nargs="*", type=Path, default=[], help="run folders made outside the grid")
    args = parser.parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else list(argv)
    args.out = args.out.resolve()
    args.deadline = None if args.stop_after_minutes is None else time.time() + 60 * args.stop_after_minutes
    if not args.analyse_only:
        run_all(args)
    runs = load_runs(args) + load_external(args.include_runs)
    if not runs:
        raise SystemExit("no finished run to analyse")
    write_report(args, runs)


if __name__ == "__main__":
    main()
