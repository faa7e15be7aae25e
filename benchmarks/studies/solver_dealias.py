"""reports/solver_dealias.md: the solver baseline with and without de-aliasing, in one ``well-upao evaluate`` pass.

    python benchmarks/studies/solver_dealias.py [--base outputs/rollout_study/datasets] [--dataset shear_flow]

The evaluation's classical rows (persistence, extrap1, extrap2, the solver, which de-aliases its right-hand side by
the 3/2 rule, ``well_upao.predict.solver``) plus the same solver evaluated on the data's grid (``dealias=1``, the
baseline before the rule), on the validation split of a study replica (``benchmarks/harness/study_data.py``; made under
``--base`` when missing), one-step and 30-step rollouts from 3 starts per trajectory: the solver's rollouts of the
shear-flow replica (Reynolds 1e4 and 5e4) went non-finite at step 28 in the rollout study (reports/rollout.md).
Writes the evaluation's JSON beside the report and the report's table; the reading (from ``## Reading`` on) is kept
and checked (``benchmarks/harness/readings.py``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from well_upao.evaluate.pipeline import EvaluationRequest, run_evaluation
from well_upao.evaluate.report import window_cell
from well_upao.evaluate.results import Evaluation
from well_upao.physics import pde_for_dataset
from well_upao.predict.predictors import SolverStep
from well_upao.predict.windows import WELL_WINDOWS, window_label

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.readings import exit_if_stale, write_keeping_reading
from harness.study_data import STUDY_REPLICAS, ensure_replica, replica_note

#: the row of the solver evaluated on the data's grid
PLAIN = "solver, no de-aliasing"


def evaluate(args: argparse.Namespace) -> Evaluation:
    request = EvaluationRequest(
        args.base, args.dataset, "valid", rollout_steps=args.rollout_steps, rollout_starts=args.rollout_starts,
        max_trajectories=args.max_trajectories, out=None, progress=True, device="cpu",
    )  # fmt: skip
    plain = SolverStep(pde_for_dataset(args.dataset), name=PLAIN, dealias=1)
    return run_evaluation(request, models=[plain]).evaluation


def plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def report_lines(evaluation: Evaluation, args: argparse.Namespace, seconds: float) -> list[str]:
    trajectories = plural(evaluation.n_trajectories, "trajectory", "trajectories")
    starts = plural(evaluation.rollout_starts, "start", "starts")
    lines = [
        "# The solver baseline with and without de-aliasing",
        "",
        "Command:",
        "",
        f"    python benchmarks/studies/solver_dealias.py {' '.join(args.argv)}".rstrip(),
        "",
        f"Data: {replica_note(args.dataset)}, validation split ({trajectories}), stride {evaluation.stride}, history "
        f"{evaluation.history}; rollouts of {evaluation.rollout_steps_run} steps from up to {starts} per trajectory. "
        "`solver`: RK4 with step doubling, its right-hand side evaluated on a grid 3/2 times finer and truncated back "
        f"(the 3/2 rule); `{PLAIN}`: the same solver on the data's grid. One evaluation pass, {seconds / 60:.0f} "
        f"minutes on {torch.get_num_threads()} thread(s). The Well's VRMSE (channel mean) per rollout window; "
        "one-step: the paper's VRMSE.",
        "",
        "| row | one-step VRMSE (paper) | "
        + " | ".join(window_label(w) for w in WELL_WINDOWS)
        + f" | step {evaluation.rollout_steps_run} | most RK4 sub-steps in one step | ms per prediction |",
        "|---|---|" + "---|" * len(WELL_WINDOWS) + "---|---|---|",
    ]
    for score in evaluation.scores:
        last = score.rollout_vrmse_well[-1] if score.rollout_vrmse_well else float("nan")
        windows = " | ".join(window_cell(evaluation, score, w) for w in WELL_WINDOWS)
        substeps = score.notes.get("substeps", "-")
        lines.append(
            f"| {score.name} | {score.mean_paper:.4g} | {windows} | {last:.4g} | {substeps} | "
            f"{1e3 * score.seconds_per_prediction:.3g} |"
        )
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", type=Path, default=Path("outputs/rollout_study/datasets"))
    parser.add_argument("--dataset", default="shear_flow", choices=sorted(STUDY_REPLICAS))
    parser.add_argument("--rollout-steps", type=int, default=30)
    parser.add_argument("--rollout-starts", type=int, default=3)
    parser.add_argument("--max-trajectories", type=int, default=None, help="default: every validation trajectory")
    parser.add_argument("--report", type=Path, default=Path("reports/solver_dealias.md"))
    args = parser.parse_args()
    args.argv = sys.argv[1:]
    ensure_replica(args.dataset, args.base)
    started = time.perf_counter()
    evaluation = evaluate(args)
    seconds = time.perf_counter() - started
    data = args.report.with_suffix("")
    data.mkdir(parents=True, exist_ok=True)
    json_path = data / f"evaluation_{args.dataset}.json"
    json_path.with_suffix(".tmp").write_text(evaluation.to_json())
    json_path.with_suffix(".tmp").replace(json_path)
    write_keeping_reading(args.report, report_lines(evaluation, args, seconds))
    exit_if_stale(args.report)


if __name__ == "__main__":
    main()
