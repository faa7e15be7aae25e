"""The analysis and report of ``benchmarks/studies/trust_study.py`` (reports/trust.md): does the label-free scorecard
rank runs as the truth does? The runs' table, the rank correlations across and within runs (bootstrap intervals), the
selection against an oracle with labels, the included runs against extrap2, the scatter figure."""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import numpy as np

from well_upao.data.source import WellSource
from well_upao.harness.runs import RunCheckpoint, find_checkpoint

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.readings import portable_paths

from studies.horizon_study import BEGIN as HORIZON_BEGIN
from studies.horizon_study import END as HORIZON_END
from studies.prior_study import BEGIN as PRIOR_BEGIN
from studies.prior_study import END as PRIOR_END

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
        f"the replicas {', '.join(args.replicas)} as `benchmarks/harness/study_data.py` makes them (41 frames{held}), "
        f"strides {', '.join(map(str, args.replica_strides))}; "
    )


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


def runs_table(runs: list[dict]) -> tuple[list[str], list[dict]]:
    """The runs' table's rows (the table's header is the report's) and every run's selections."""
    text, table = [], []
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
    return text, table


def oracle_section(table: list[dict]) -> list[str]:
    """The selection against an oracle with labels: the criterion alone and the guard, overall and per dataset and
    stride (nothing without runs)."""
    n = len(table)
    if not n:
        return []
    text: list[str] = []
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
    return text


def save(report: Path, text: list[str]) -> None:
    """Write ``report`` (run folders as ``RUNS/...``), keeping its reading and the other studies' sections."""
    report.parent.mkdir(parents=True, exist_ok=True)
    reading = kept = ""
    if report.is_file():
        earlier = report.read_text()
        if "\n## Reading" in earlier:
            reading = earlier[earlier.index("\n## Reading") :]
        for begin, end in ((PRIOR_BEGIN, PRIOR_END), (HORIZON_BEGIN, HORIZON_END)):  # the other studies' sections stay
            if begin in earlier:
                kept += "\n" + begin + earlier.split(begin, 1)[1].split(end, 1)[0] + end + "\n"
    tmp = report.with_suffix(".md.tmp")
    tmp.write_text(portable_paths("\n".join(text)) + kept + reading)  # run folders as RUNS/...
    tmp.replace(report)


def write_report(args, runs: list[dict]) -> None:
    rng = np.random.default_rng(0)
    by_dataset = {d: [r for r in runs if r["dataset"] == d] for d in sorted({r["dataset"] for r in runs})}
    groups = by_dataset | {"all": runs}
    text = [
        "# Does the label-free scorecard rank runs as the truth does?",
        "",
        f"Command: `python benchmarks/studies/trust_study.py {' '.join(args.argv)}`",
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
    rows, table = runs_table(runs)
    text += rows
    text.append("")
    text += correlation_rows(
        "Across runs: every candidate of every run of a dataset", groups, across_runs, rng, args.draws
    )
    text += correlation_rows("Within runs: across one run's checkpoints (mean over runs)", groups, within_runs, rng,
                             args.draws)  # fmt: skip
    text += oracle_section(table)
    text += included_against_extrap2(runs)
    scatter(runs, args.figure)
    text += [f"![scatter]({os.path.relpath(args.figure, args.report.parent)})", ""]
    save(args.report, text)
    print(f"wrote {args.report} from {len(runs)} runs")
