"""The evaluation pipeline behind ``well-upao evaluate`` and the quickstart: baselines and models on a split, a
markdown table, JSON and figures.

Rows: the classical baselines (persistence, extrapolation of the history, one step of a numerical solver where
the dataset's PDE is registered and supported) and every checkpoint or run folder given, each under its label.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from well_upao.data.source import WellSource
from well_upao.evaluate.matched_solver import match_solvers, solver_ladder
from well_upao.evaluate.plots import plot_cost_accuracy, plot_fields, plot_rollout
from well_upao.evaluate.predictors import Predictor, classical_predictors, load_predictor, transfer_predictors
from well_upao.evaluate.scores import (
    Evaluation,
    EvaluationError,
    evaluate,
    explain_unscored,
    file_time_axis,
    markdown_table,
    open_split,
    sample_context,
    save,
)
from well_upao.evaluate.windows import LONGEST_WINDOW_END
from well_upao.harness.runs import RunCheckpoint
from well_upao.models.na_transformer import T_IN
from well_upao.physics.floor import best_row, choose_discretisation, floor_rows
from well_upao.physics.objective import DEFAULT_DERIVATIVE, DEFAULT_SCHEME
from well_upao.physics.pdes import PDE, pde_for_dataset

#: the history of an evaluation whose rows do not say (classical rows only): the paper's T_in
DEFAULT_HISTORY = T_IN


@dataclass
class EvaluationRequest:
    """What to evaluate. ``history``: the frames before each target (``None``: the longest history of the rows,
    else :data:`DEFAULT_HISTORY`); every row is scored on the same target frames."""

    base: Path
    dataset: str
    split: str = "valid"
    history: int | None = None
    stride: int = 1
    #: autoregressive steps per rollout (the default reaches the end of the Well's 13:30 window)
    rollout_steps: int = LONGEST_WINDOW_END
    #: rollouts per trajectory, from start windows spread over it
    rollout_starts: int = 3
    max_trajectories: int | None = None
    solver: bool = True
    #: label of a row to add cost- and accuracy-matched solver rows for (``well_upao.evaluate.matched_solver``)
    match_solver: str | None = None
    out: Path | None = Path("evaluation")  # None: no JSON, no figures
    progress: bool = True
    #: where the model rows' networks run: ``cpu``, ``cuda`` (``cuda:N``) or ``auto`` (CUDA when present); inputs,
    #: scores and the classical rows stay on the CPU
    device: str = "auto"


@dataclass
class EvaluationReport:
    evaluation: Evaluation
    table: str
    json_path: Path | None
    figures: list[Path] = field(default_factory=list)


def evaluate_request(
    request: EvaluationRequest,
    source: WellSource,
    predictors: list[Predictor],
    history: int,
    keep_first: bool = True,
    opened=None,
    scoring=None,
    unscored: str | None = None,
):
    """``evaluate`` the predictors on the request's split, stride and rollout length, with ``history`` frames
    before each target (``scoring``: ``(pde, derivative, scheme)`` of the label-free scorecard; ``unscored``: why
    there is none)."""
    r = request
    return evaluate(
        predictors,
        source,
        history,
        r.stride,
        r.rollout_steps,
        r.max_trajectories,
        progress=r.progress,
        keep_first=keep_first,
        opened=opened,
        scoring=scoring,
        rollout_starts=r.rollout_starts,
        unscored=unscored,
    )


def add_matched_solvers(
    evaluation: Evaluation, request: EvaluationRequest, source: WellSource, pde: PDE, context, opened
) -> None:
    """Append the solver rows matched in cost and in accuracy to the row ``request.match_solver``, measured on
    the same windows in this run (no rows when the PDE has no solver baseline on this grid)."""
    reference = next((s for s in evaluation.scores if s.name == request.match_solver), None)
    if reference is None:
        names = ", ".join(s.name for s in evaluation.scores)
        raise EvaluationError(f"--match-solver {request.match_solver!r} names no row; rows: {names}")
    ladder = solver_ladder(pde, context, tuple(source.layout.resolution))
    if not ladder:
        return
    measured, _ = evaluate_request(request, source, ladder, evaluation.history, keep_first=False, opened=opened)
    evaluation.solver_ladder = measured.scores
    evaluation.scores += match_solvers(measured.scores, reference).rows()


def residual_floor_summary(source: WellSource, stride: int, pde: PDE) -> dict:
    """The residual floor of the evaluated frames at the evaluated stride (``well_upao.physics.floor``): the
    dataset's default derivative and time scheme (an ``auto`` part chosen as the UPAO trainer chooses it), and the
    lowest combination (a few trajectories and frames). Frames too few at this stride give a ``note`` instead."""
    try:
        rows = floor_rows(source.observed(stride, max_trajectories=2, max_frames=8), stride, pde)
    except (ValueError, KeyError) as error:  # too few frames at this stride; a parameter the files lack
        return {"note": str(error).strip("'\"")}
    derivative = source.defaults.get("derivative", DEFAULT_DERIVATIVE)
    scheme = source.defaults.get("time_scheme", DEFAULT_SCHEME)
    default = choose_discretisation(rows, derivative, scheme)
    best = best_row(rows, stride)

    def entry(row) -> dict:
        return {"derivative": row.derivative, "scheme": row.scheme, "residuals": row.residuals}

    summary = {"lowest": entry(best)}
    if default is not None:
        summary["default"] = entry(default) | ({"chosen_by": "auto"} if "auto" in (derivative, scheme) else {})
    return summary


#: the reason every label-free cell gives when the evaluated frames have no residual floor (its note, under the
#: table and in the JSON's ``residual_floor``, says why)
UNSCORED_NO_FLOOR = "no residual floor of these frames: see the note under the table"


def no_pde(dataset: str) -> str:
    """The floor's note for a dataset without a PDE (nothing to compute a residual with)."""
    return (
        f"no PDE is registered for dataset {dataset!r} (register its DatasetSpec with a pde, in a module named by "
        "--imports)"
    )


def scoring_discretisation(source: WellSource, pde: PDE, floor: dict) -> tuple[PDE, str, str]:
    """``(pde, derivative, scheme)`` of the label-free scorecard: the dataset's UPAO default (an ``auto`` part as
    the residual floor chose it, :func:`residual_floor_summary`)."""
    default = floor.get("default")
    if default is not None:
        return pde, default["derivative"], default["scheme"]
    derivative = source.defaults.get("derivative", DEFAULT_DERIVATIVE)
    scheme = source.defaults.get("time_scheme", DEFAULT_SCHEME)
    return pde, "fd" if derivative == "auto" else derivative, DEFAULT_SCHEME if scheme == "auto" else scheme


def model_device(device: str) -> torch.device:
    """``auto``: the first CUDA device when one is present, else the CPU; ``cuda`` without one is refused."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except RuntimeError as error:
        raise EvaluationError(f"--device {device!r} is not a device: use auto, cpu, cuda or cuda:N") from error
    if resolved.type not in ("cpu", "cuda"):
        raise EvaluationError(f"--device {device!r}: evaluate runs models on cpu or cuda")
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise EvaluationError(f"--device {device}: this machine has no CUDA device (use cpu or auto)")
    if resolved.type == "cuda" and resolved.index is not None and resolved.index >= torch.cuda.device_count():
        raise EvaluationError(f"--device {device}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    return resolved


def place_models(rows: Sequence[Predictor], device: str) -> None:
    """Put the model rows' networks on ``device`` (:func:`model_device`); rows on a GPU say so in their notes."""
    resolved = model_device(device)
    if resolved.type == "cpu":
        return
    name = torch.cuda.get_device_name(resolved)
    for row in rows:
        row.place(resolved)
        if row.device is not None:
            row.notes["device"] = f"{resolved} ({name})"


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
    checkpoints: Sequence[RunCheckpoint] = (),
    models: Sequence[Predictor] = (),
    transfers: Sequence[tuple[str, Path]] = (),
) -> EvaluationReport:
    """Evaluate the baselines, the checkpoints (read once, :class:`RunCheckpoint`; a ``None`` label names a row
    after its run folder) and models already in memory (``models``); write JSON and figures to ``request.out``.
    ``transfers``: (label, checkpoint) of one-frame models of another dataset, evaluated zero-shot on every subset
    of their channels; the best one is kept (:func:`keep_best_assignment`)."""
    r = request
    if (r.history is not None and r.history < 1) or r.stride < 1 or r.rollout_steps < 0 or r.rollout_starts < 1:
        raise EvaluationError("history, stride and rollout starts must be >= 1, rollout steps >= 0")
    source = WellSource(r.base, r.dataset, r.split)
    rows = [load_predictor(c.path, source, name=c.label, payload=c.payload) for c in checkpoints]
    rows += list(models)
    for label, path in transfers:
        rows += transfer_predictors(path, source, label)
    place_models(rows, r.device)
    history = r.history or max((p.history for p in rows if p.history), default=DEFAULT_HISTORY)
    opened = open_split(source, history, r.stride)
    if len(opened) == 0:
        raise EvaluationError(f"split {r.split!r} of {r.dataset!r} has no trajectory")
    registered = source.spec is not None
    pde = pde_for_dataset(r.dataset) if registered else None
    names = list(opened.metadata.constant_scalar_names)
    context = sample_context(opened[0], names, source.channel_slots, file_time_axis(source))
    predictors = classical_predictors(pde, context.grid, solver=r.solver) + rows
    floor = residual_floor_summary(source, r.stride, pde) if pde is not None else {"note": no_pde(r.dataset)}
    scoring = scoring_discretisation(source, pde, floor) if "note" not in floor else None
    unscored = None if scoring is not None else UNSCORED_NO_FLOOR
    evaluation, first = evaluate_request(
        r, source, predictors, history, opened=opened, scoring=scoring, unscored=unscored
    )
    for checkpoint, row in zip(checkpoints, rows, strict=False):
        score = next((s for s in evaluation.scores if s.name == row.name), None)
        if score is not None:
            score.selection = checkpoint.selection
    for label, _ in transfers:
        keep_best_assignment(evaluation, first, label)
    if r.match_solver is not None and pde is not None:
        add_matched_solvers(evaluation, r, source, pde, context, opened)
    evaluation.residual_floor = floor
    explain_unscored(evaluation, unscored)
    table = markdown_table(evaluation)
    if r.out is None:
        return EvaluationReport(evaluation, table, None)
    json_path = save(evaluation, r.out)
    figures = [plot_rollout(evaluation, r.out), *plot_fields(evaluation, first, pde, r.out)]
    figures += [path for path in [plot_cost_accuracy(evaluation, r.out)] if path is not None]
    return EvaluationReport(evaluation, table, json_path, figures)
