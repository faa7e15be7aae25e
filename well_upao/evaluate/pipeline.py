"""The evaluation pipeline behind ``well-upao evaluate`` and the quickstart: baselines and models on a split, a
markdown table, JSON and figures.

Rows: the classical baselines (persistence, extrapolation of the history, one step of a numerical solver where
the dataset's PDE is registered and supported) and every checkpoint or run folder given, each under its label.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from well_upao.data.datasets import DATASETS, slot_indices
from well_upao.data.metadata import dataset_channel_names
from well_upao.evaluate.floor import best_row, floor_table
from well_upao.evaluate.matched_solver import match_solvers, solver_ladder
from well_upao.evaluate.plots import plot_cost_accuracy, plot_fields, plot_rollout
from well_upao.evaluate.predictors import (
    Predictor,
    checkpoint_file,
    classical_predictors,
    load_predictor,
    transfer_predictors,
)
from well_upao.evaluate.run import (
    Evaluation,
    EvaluationError,
    evaluate,
    markdown_table,
    open_split,
    sample_context,
    save,
)
from well_upao.models.checkpoint import read_checkpoint
from well_upao.physics.objective import DEFAULT_DERIVATIVE, DEFAULT_SCHEME
from well_upao.physics.pdes import PDE_REGISTRY, pde_for_dataset


@dataclass
class EvaluationRequest:
    base: Path
    dataset: str
    split: str = "valid"
    history: int = 8
    stride: int = 1
    rollout_steps: int = 10
    max_trajectories: int | None = None
    solver: bool = True
    #: label of a row to add cost- and accuracy-matched solver rows for (``well_upao.evaluate.matched_solver``)
    match_solver: str | None = None
    out: Path | None = Path("evaluation")  # None: no JSON, no figures
    progress: bool = True


@dataclass
class EvaluationReport:
    evaluation: Evaluation
    table: str
    json_path: Path | None
    figures: list[Path] = field(default_factory=list)


def run_settings(checkpoint: Path) -> dict:
    """What a checkpoint or run folder says about the data it was trained on: ``dataset``, ``base`` (the Well base
    path), ``stride``, ``history`` (the keys it knows). Reading it imports the modules the run named in
    ``data.imports``, so a user's dataset is registered."""
    payload = read_checkpoint(checkpoint_file(checkpoint))
    data = (payload.get("train") or {}).get("data") or {}
    config = payload["model"].get("config") or {}
    found = {
        "dataset": data.get("well_dataset_name") or payload["model"].get("dataset") or config.get("dataset_name"),
        "base": Path(data["well_base_path"]) if data.get("well_base_path") else None,
        "stride": data.get("min_dt_stride"),
        "history": data.get("n_steps_input") or config.get("history"),
    }
    return {key: value for key, value in found.items() if value is not None}


def evaluate_request(request: EvaluationRequest, predictors: list[Predictor], keep_first: bool = True):
    """``evaluate`` the predictors on the request's split, stride, history and rollout length."""
    r = request
    return evaluate(
        predictors,
        r.base,
        r.dataset,
        r.split,
        r.history,
        r.stride,
        r.rollout_steps,
        r.max_trajectories,
        progress=r.progress,
        keep_first=keep_first,
    )


def add_matched_solvers(
    evaluation: Evaluation, request: EvaluationRequest, pde, context, shape: tuple[int, ...]
) -> None:
    """Append the solver rows matched in cost and in accuracy to the row ``request.match_solver``, measured on
    the same windows in this run (no rows when the PDE has no solver baseline on this grid)."""
    reference = next((s for s in evaluation.scores if s.name == request.match_solver), None)
    if reference is None:
        names = ", ".join(s.name for s in evaluation.scores)
        raise EvaluationError(f"--match-solver {request.match_solver!r} names no row; rows: {names}")
    ladder = solver_ladder(pde, context, shape)
    if not ladder:
        return
    measured, _ = evaluate_request(request, ladder, keep_first=False)
    evaluation.solver_ladder = measured.scores
    evaluation.scores += match_solvers(measured.scores, reference).rows()


def residual_floor_summary(request: EvaluationRequest) -> dict:
    """The residual floor of the evaluated frames at the evaluated stride (``well_upao.evaluate.floor``): the
    dataset's default derivative and time scheme, and the lowest combination (a few trajectories and frames)."""
    directory = Path(request.base) / request.dataset / "data" / request.split
    files = sorted(directory.glob("*.hdf5")) + sorted(directory.glob("*.h5"))
    try:
        rows = floor_table(files, [request.stride], max_trajectories=2, max_frames=8)
    except (ValueError, KeyError):
        return {}  # too few frames at this stride, or parameters the PDE needs are not in the files
    spec = DATASETS.get(request.dataset)
    defaults = dict(spec.defaults) if spec is not None else {}
    derivative = defaults.get("derivative", DEFAULT_DERIVATIVE)
    scheme = defaults.get("time_scheme", DEFAULT_SCHEME)
    # the dataset's default discretisation; an `auto` part takes the lowest floor, as the UPAO trainer does
    matching = [row for row in rows if derivative in ("auto", row.derivative) and scheme in ("auto", row.scheme)]
    default = min(matching, key=lambda row: row.mean, default=None)
    best = best_row(rows, request.stride)

    def entry(row) -> dict:
        return {"derivative": row.derivative, "scheme": row.scheme, "residuals": row.residuals}

    summary = {"lowest": entry(best)}
    if default is not None:
        summary["default"] = entry(default) | ({"chosen_by": "auto"} if "auto" in (derivative, scheme) else {})
    return summary


def keep_best_assignment(evaluation: Evaluation, first: dict, label: str) -> None:
    """Of the rows ``<label> [source channels ...]`` keep the one with the lowest mean paper VRMSE, named ``label``
    (its channels in ``notes``); the paper reports the best ``C_tgt``-subset for zero-shot transfer."""
    candidates = [s for s in evaluation.scores if s.name.startswith(f"{label} [source channels ")]
    if not candidates:
        return
    best = min(candidates, key=lambda s: s.mean_paper)
    for score in candidates:
        predictions = first.pop(score.name, None)
        if score is best and predictions is not None:
            first[label] = predictions
    evaluation.scores = [s for s in evaluation.scores if s is best or s not in candidates]
    best.notes["assignments tried"] = len(candidates)
    best.name = label


def run_evaluation(
    request: EvaluationRequest,
    checkpoints: Sequence[tuple[str | None, Path]] = (),
    models: Sequence[Predictor] = (),
    transfers: Sequence[tuple[str, Path]] = (),
) -> EvaluationReport:
    """Evaluate the baselines, the (label, checkpoint or run folder) pairs and models already in memory
    (``models``); write JSON and figures to ``request.out``. A ``None`` label names a row after its run folder.
    ``transfers``: (label, checkpoint) of one-frame models of another dataset, evaluated zero-shot on every subset
    of their channels; the best one is kept (:func:`keep_best_assignment`)."""
    r = request
    if r.history < 1 or r.stride < 1 or r.rollout_steps < 0:
        raise EvaluationError("history and stride must be >= 1, rollout steps >= 0")
    channels = dataset_channel_names(r.base, r.dataset)
    split = open_split(r.base, r.dataset, r.split, r.history, r.stride)
    if len(split) == 0:
        raise EvaluationError(f"split {r.split!r} of {r.dataset!r} has no trajectory")
    registered = r.dataset in DATASETS or r.dataset in PDE_REGISTRY
    pde = pde_for_dataset(r.dataset) if registered else None
    context = sample_context(split[0], list(split.metadata.constant_scalar_names), slot_indices(r.dataset, channels))
    predictors = classical_predictors(pde, context.grid, solver=r.solver)
    for label, path in checkpoints:
        predictors.append(load_predictor(path, r.dataset, channels, r.history, name=label))
    predictors += list(models)
    for label, path in transfers:
        predictors += transfer_predictors(path, r.dataset, channels, r.history, label)
    evaluation, first = evaluate_request(r, predictors)
    for label, _ in transfers:
        keep_best_assignment(evaluation, first, label)
    if r.match_solver is not None and pde is not None:
        add_matched_solvers(evaluation, r, pde, context, tuple(split[0]["input_fields"].shape[1:-1]))
    if registered:
        evaluation.residual_floor = residual_floor_summary(r)
    table = markdown_table(evaluation)
    if r.out is None:
        return EvaluationReport(evaluation, table, None)
    json_path = save(evaluation, r.out)
    figures = [plot_rollout(evaluation, r.out), *plot_fields(evaluation, first, pde, r.out)]
    figures += [path for path in [plot_cost_accuracy(evaluation, r.out)] if path is not None]
    return EvaluationReport(evaluation, table, json_path, figures)
