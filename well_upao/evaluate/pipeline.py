"""The evaluation pipeline behind ``well-upao evaluate`` and the quickstart: plan, rows, one scoring pass, report.

1. the plan (``well_upao.evaluate.plan``): the split, the protocol, the PDE and the discretisation of every residual;
2. the rows: the classical baselines (persistence, extrapolation of the history, one step of a numerical solver
   where the dataset's PDE is registered and supported) and every checkpoint or run folder given, each under its
   label, with the solver ladder when a row is to be matched (``well_upao.evaluate.matched_solver``);
3. one scoring pass over the trajectories (``well_upao.evaluate.scores``);
4. the report (``well_upao.evaluate.report``): the markdown table, JSON and figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from well_upao.data.source import WellSource
from well_upao.evaluate.matched_solver import solver_ladder
from well_upao.evaluate.plan import EvaluationError, EvaluationPlan, EvaluationRequest, plan_evaluation
from well_upao.evaluate.report import EvaluationReport, write_report
from well_upao.evaluate.scores import score
from well_upao.harness.runs import RunCheckpoint
from well_upao.predict.predictors import (
    Predictor,
    classical_predictors,
    load_predictor,
    place_rows,
    resolve_device,
    transfer_predictors,
)

__all__ = ["EvaluationReport", "EvaluationRequest", "run_evaluation"]


def model_device(device: str) -> torch.device:
    """``auto``: the first CUDA device when one is present, else the CPU (``predict.predictors.model_device``); a
    device this machine lacks is refused (``EvaluationError``)."""
    try:
        return resolve_device(device)
    except ValueError as error:
        raise EvaluationError(str(error)) from error


def place_models(rows: Sequence[Predictor], device: str) -> None:
    """Put the model rows' networks on ``device`` (``predict.predictors.place_rows``)."""
    try:
        place_rows(rows, device)
    except ValueError as error:
        raise EvaluationError(str(error)) from error


def model_rows(
    source: WellSource,
    checkpoints: Sequence[RunCheckpoint],
    models: Sequence[Predictor],
    transfers: Sequence[tuple[str, Path]],
    device: str,
) -> list[Predictor]:
    """The model rows: the checkpoints (a ``None`` label names a row after its run folder), the models in memory and
    every channel assignment of each transferred model, their networks on ``device`` (``place_models``)."""
    rows = [load_predictor(c.path, source, name=c.label, payload=c.payload) for c in checkpoints]
    rows += list(models)
    for label, path in transfers:
        rows += transfer_predictors(path, source, label)
    place_models(rows, device)
    return rows


def matched_reference(predictors: Sequence[Predictor], transfers: Sequence[tuple[str, Path]], name: str) -> None:
    """Refuse a ``--match-solver`` name that is no row (the transferred models' rows go by their labels)."""
    labels = [label for label, _ in transfers]
    names: list[str] = []
    for p in predictors:
        label = next((x for x in labels if p.name.startswith(f"{x} [source channels ")), p.name)
        if label not in names:
            names.append(label)
    if name not in names:
        raise EvaluationError(f"--match-solver {name!r} names no row; rows: {', '.join(names)}")


def rows_of(
    plan: EvaluationPlan, request: EvaluationRequest, models: list[Predictor], transfers: Sequence[tuple[str, Path]]
) -> tuple[list[Predictor], list[Predictor]]:
    """The rows to score (classical rows first) and the solver ladder (empty unless a row is to be matched)."""
    predictors = classical_predictors(plan.pde, plan.context.grid, solver=request.solver) + models
    if request.match_solver is None or plan.pde is None:
        return predictors, []
    matched_reference(predictors, transfers, request.match_solver)
    return predictors, solver_ladder(plan.pde, plan.context, tuple(plan.source.layout.resolution))


def run_evaluation(
    request: EvaluationRequest,
    checkpoints: Sequence[RunCheckpoint] = (),
    models: Sequence[Predictor] = (),
    transfers: Sequence[tuple[str, Path]] = (),
) -> EvaluationReport:
    """Evaluate the baselines, the checkpoints (read once, ``RunCheckpoint``; a ``None`` label names a row
    after its run folder) and models already in memory (``models``); write JSON and figures to ``request.out``.
    ``transfers``: (label, checkpoint) of one-frame models of another dataset, evaluated zero-shot on every subset
    of their channels; the best one is kept (``scores.kept_assignments``). The scoring pass returns the finished
    evaluation (``scores.evaluation_of``), which the report only prints."""
    request.check()
    source = WellSource(request.base, request.dataset, request.split)
    rows = model_rows(source, checkpoints, models, transfers, request.device)
    selections = {row.name: c.selection for c, row in zip(checkpoints, rows, strict=False)}
    plan = plan_evaluation(request, source, rows, selections, [label for label, _ in transfers])
    predictors, ladder = rows_of(plan, request, rows, transfers)
    return write_report(*score(plan, predictors, ladder, progress=request.progress), request.out, request.figures)
