"""The scoring pass of ``well-upao evaluate``: every row of an evaluation plan (``well_upao.evaluate.plan``) on every
trajectory of its split, each trajectory read and put into slots once.

For every trajectory (read whole, at the plan's time stride):

* one-step: frame ``t`` predicted from the true frames ``t - history .. t - 1`` for every ``t >= history``
  (the paper's protocol); VRMSE under both definitions, per channel (The Well's: averaged over frames; the
  paper's: over the trajectory's full time series);
* rollout: ``rollout_steps`` autoregressive steps (at most what the trajectory holds) from up to
  ``rollout_starts`` windows of each trajectory; The Well's VRMSE per step, averaged over every rollout, and its
  windows 6:12 and 13:30 (``well_upao.predict.windows``);
* the label-free scorecard of every row's one-step predictions (``well_upao.physics.scores``), from each target's
  window only: the residual of the prediction over the floor of the window, the departure from ``extrap2`` of
  the same window per unit of its step, and the backtest (the row run on the window without its last frame, against
  that observed frame), under the plan's discretisation (``label_free_scores``);
* the solver ladder (``well_upao.evaluate.matched_solver``), when given, on the same trajectories and windows, with
  the VRMSEs and timings only, each grid climbed from its cheapest rung until a rung settles the matched rows
  (``matched_solver.climb_ladder``);
* per window (one step, 6:12, 13:30), the row the label-free evidence would trust (``predict.evidence``) and each
  row's expected VRMSE with an interval (rule 3, ``predict.expected_starts``), from backtests from every start of the
  history windows the rows predict from;
* for the figures, the first trajectory at its middle predicted frame: truth, every row's prediction and its
  ``|R_k|`` under the plan's discretisation, the table's (``FigureFrames``).

Results are averaged over trajectories. Classical baselines are always part of the comparison.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import torch
from tqdm.auto import tqdm

from well_upao.data.slot_inventory import SLOT_NAMES
from well_upao.evaluate.matched_solver import climb_ladder, match_solvers
from well_upao.evaluate.metrics import vrmse_paper, vrmse_well
from well_upao.evaluate.plan import EvaluationError, EvaluationPlan
from well_upao.evaluate.results import (
    NO_WINDOW,
    Evaluation,
    FigureFrames,
    Scores,
    missing_scores,
)
from well_upao.harness.samples import Context, file_time_axis, into_slots, sample_context
from well_upao.physics.bound import BoundResidual
from well_upao.physics.residual import slot_fields
from well_upao.predict.backtests import add_history_curves
from well_upao.predict.evidence import median_curves, pick
from well_upao.predict.expected_starts import expected_starts_per_window
from well_upao.predict.predictors import Predictor
from well_upao.predict.rollout import one_step_all, rollout
from well_upao.predict.windows import WINDOWS, window_means
from well_upao.predict.windows import rollout_starts as spread_starts


@dataclass
class RowSums:
    """What the scoring pass adds up for one row over the trajectories."""

    one_well: list[torch.Tensor] = field(default_factory=list)
    one_paper: list[torch.Tensor] = field(default_factory=list)
    #: per rollout step: the sum over rollouts of the step's VRMSE
    rolled: list[float] = field(default_factory=list)
    #: the label-free scores per target frame, per name
    cards: dict[str, list[torch.Tensor]] = field(default_factory=dict)


@dataclass
class PassSums:
    """What the scoring pass adds up over the trajectories: each row's ``RowSums``; each row's backtest curves on the
    history windows of the one-step targets and of the rollouts' starts (``curves``) and the same windows' start
    matrices (``matrices``, ``predict.expected_starts``: the evidence of each row's expected error under rule 3, the
    default); per rollout step, how many rollouts
    reached it (``counts``); how many trajectories were scored (``trajectories``)."""

    rows: dict[str, RowSums]
    curves: dict[str, dict[str, list[torch.Tensor]]] = field(default_factory=lambda: {"one_step": {}, "rollout": {}})
    matrices: dict[str, dict[str, list[torch.Tensor]]] = field(default_factory=lambda: {"one_step": {}, "rollout": {}})
    counts: list[int] = field(default_factory=list)
    trajectories: int = 0


@torch.no_grad()
def score(
    plan: EvaluationPlan, predictors: Sequence[Predictor], ladder: Sequence[Predictor] = (), progress: bool = True
) -> tuple[Evaluation, FigureFrames]:
    """One pass over the plan's trajectories scoring every row of ``predictors`` (their scorecard where the plan
    computes one, ``EvaluationPlan.scored``, each row with its own physics, ``EvaluationPlan.physics_of``;
    else each row's ``label_free_reasons`` say why); then, with a ``ladder``, its rungs up to where they settle the
    matched rows (``matched_solver.climb_ladder``: VRMSEs and timings; the evaluation's ``solver_ladder``). Every
    row is scored on the same target frames (those after the plan's history); a predictor that reads fewer frames
    gets the last ones of each window. Returns the finished evaluation (``evaluation_of``) and the figures' frames."""
    count = trajectories_to_score(plan, [*predictors, *ladder])
    scored, unscored = plan.scored, plan.unscored
    if scored and plan.history < 2:
        scored, unscored = False, NO_WINDOW
    data, source = plan.opened, plan.source
    sums = PassSums({p.name: RowSums() for p in [*predictors, *ladder]})
    time_axis, names = file_time_axis(source), list(data.metadata.constant_scalar_names)
    bar = tqdm(range(count), desc=f"evaluate {source.name}/{source.split}", unit="traj", disable=not progress)
    for index in bar:
        frames, slotted, context, starts = trajectory_inputs(plan, index, names, time_axis)
        bounds = bind_rows(plan, predictors, context)  # each row's residual on the trajectory, once per physics
        steps = min(plan.rollout_steps, frames.shape[0] - plan.history)
        sums.counts += [0] * (steps - len(sums.counts))
        for step in range(steps):
            sums.counts[step] += len(starts)
        first = {
            p.name: score_trajectory(
                plan, p, sums.rows[p.name], frames, slotted, context, starts, bounds[p.name] if scored else None
            )
            for p in predictors
        }
        add_history_curves(
            sums.curves,
            predictors,
            frames,
            plan.history,
            context,
            starts,
            plan.rollout_starts,
            matrices=sums.matrices,
        )
        if index == 0:
            figures = figure_frames(plan, frames, slotted, context, first, bounds)
        sums.trajectories += 1
    if ladder:
        reference = matched_reference_scores(plan, predictors, sums)
        ladder = climb_ladder(ladder, reference, score_ladder_round(plan, sums, count, progress))
    return evaluation_of(plan, predictors, ladder, sums, float(context.dt), None if scored else unscored, figures)


def trajectory_inputs(
    plan: EvaluationPlan, index: int, names: list[str], time_axis
) -> tuple[torch.Tensor, torch.Tensor, Context, list[int]]:
    """Trajectory ``index`` of the plan's split, read whole at its stride: its frames ``(T, *space, C)`` (float32),
    the same in slots (float64, once), its context and the rollouts' starts."""
    sample = plan.opened[index]
    frames = torch.cat([sample["input_fields"], sample["output_fields"]]).float()
    context = sample_context(sample, names, plan.source.channel_slots, time_axis)
    slotted = into_slots(frames.double(), plan.source.channel_slots)
    steps = min(plan.rollout_steps, frames.shape[0] - plan.history)
    return frames, slotted, context, spread_starts(frames.shape[0], plan.history, steps, plan.rollout_starts)


def matched_reference_scores(plan: EvaluationPlan, predictors: Sequence[Predictor], sums: PassSums) -> Scores:
    """The scores of the row the ladder is matched to (``plan.match_solver``; a transferred model's label: its kept
    assignment, ``kept_assignments``), from the pass's sums."""
    rows = [row_scores(p, sums.rows[p.name], plan.opened, sums.counts) for p in predictors]
    rows, _, _ = kept_assignments(rows, plan.transfer_labels)
    return next(s for s in rows if s.name == plan.match_solver)


def score_ladder_round(
    plan: EvaluationPlan, sums: PassSums, count: int, progress: bool
) -> Callable[[list[Predictor]], list[Scores]]:
    """The ladder climb's round (``matched_solver.climb_ladder``): score some rungs on the pass's trajectories and
    windows (VRMSEs and timings into ``sums``) and return their scores."""
    names, time_axis = list(plan.opened.metadata.constant_scalar_names), file_time_axis(plan.source)

    def score_round(rungs: list[Predictor]) -> list[Scores]:
        bar = tqdm(range(count), desc="solver ladder", unit="traj", disable=not progress, leave=False)
        for index in bar:
            frames, slotted, context, starts = trajectory_inputs(plan, index, names, time_axis)
            for rung in rungs:
                score_trajectory(plan, rung, sums.rows[rung.name], frames, slotted, context, starts, None)
        return [row_scores(rung, sums.rows[rung.name], plan.opened, sums.counts) for rung in rungs]

    return score_round


def evaluation_of(
    plan: EvaluationPlan,
    predictors: Sequence[Predictor],
    ladder: Sequence[Predictor],
    sums: PassSums,
    dt: float,
    unscored: str | None,
    figures: FigureFrames,
) -> tuple[Evaluation, FigureFrames]:
    """The finished evaluation, built once from the pass's sums: every row's scores (its residuals' note where its
    run's physics differs from the plan's default, its run's selection facts, ``plan.selections``; ``unscored``: why
    no row has a scorecard), the trust per window (over every row scored, the transferred models' assignments
    included), the best channel assignment of each transferred model (``kept_assignments``: the figures keep its
    frames alone), the solver ladder and the cost- and accuracy-matched solver rows of ``plan.match_solver``, the
    expected errors and the residual floor of the evaluated frames; with the figures' frames."""
    data, source, counts = plan.opened, plan.source, sums.counts
    rows = [
        row_scores(p, sums.rows[p.name], data, counts, unscored, plan.residuals_note(p), plan.selections.get(p.name))
        for p in predictors
    ]
    trust = trust_per_window(rows, *(median_curves(sums.curves[kind]) for kind in ("one_step", "rollout")))
    rows, renames, dropped = kept_assignments(rows, plan.transfer_labels)
    figures = figures.renamed(renames, dropped)
    solver_ladder = [row_scores(p, sums.rows[p.name], data, counts) for p in ladder]
    if solver_ladder:
        rows += match_solvers(solver_ladder, next(s for s in rows if s.name == plan.match_solver)).rows()
    expected = {
        window: {
            renames.get(name, name): e.as_dict()
            for name, e in expected_starts_per_window(sums.matrices[kind], window).items()
            if name not in dropped
        }
        for window in WINDOWS
        for kind in ["one_step" if window == "one_step" else "rollout"]
    }
    evaluation = Evaluation(
        source.name,
        source.split,
        plan.stride,
        dt,
        plan.history,
        plan.rollout_steps,
        sums.trajectories,
        [n for group in data.metadata.field_names.values() for n in group],
        "windows",
        rows,
        solver_ladder=solver_ladder,
        data_source=source.provenance,
        residual_floor=plan.floor,
        rollout_steps_run=len(counts),
        rollout_starts=plan.rollout_starts,
        trust=trust,
        expected=expected,
    )
    return evaluation, figures


def trust_per_window(
    rows: Sequence[Scores], one_step_curves: dict[str, list[float]], rollout_curves: dict[str, list[float]]
) -> dict[str, dict]:
    """Per window, the row the label-free evidence picks (one step from ``one_step_curves``, the rollout windows
    from ``rollout_curves``: ``add_history_curves``) and, where the split's labels give one, the lowest true
    error among the extrapolation rows and the models (``one_step``: the Well's one-step VRMSE; the rollout windows:
    the Well's window means) and the ratio of the pick's to it."""
    true_errors = {}
    for row in rows:
        if row.kind != "solver":
            true_errors[row.name] = {"one_step": row.mean_well} | {k: v for k, v in row.rollout_windows.items()}
    out = {}
    for window in WINDOWS:
        chosen, evidence = pick(one_step_curves if window == "one_step" else rollout_curves, window)
        entry: dict = {"pick": chosen, "evidence": {n: e.value for n, e in evidence.items()}}
        entry["reach"] = evidence[chosen].describe() if chosen else None
        held = {n: errors.get(window) for n, errors in true_errors.items()}
        held = {n: v for n, v in held.items() if v is not None and math.isfinite(v)}
        if held:
            best = min(held, key=held.get)
            entry |= {"best": best, "best_value": held[best], "pick_value": held.get(chosen)}
            if chosen in held and held[best] > 0:
                entry["ratio"] = held[chosen] / held[best]
        out[window] = entry
    return out


def trajectories_to_score(plan: EvaluationPlan, rows: Sequence[Predictor]) -> int:
    """How many of the plan's trajectories are scored; rows that read more than the evaluated history, or a split
    with no trajectory long enough, are refused (``EvaluationError``)."""
    longer = [p.name for p in rows if p.history is not None and p.history > plan.history]
    if longer:
        raise EvaluationError(
            f"rows {longer} read more than the evaluated history of {plan.history} frames (--history)"
        )
    data, source = plan.opened, plan.source
    count = len(data) if plan.max_trajectories is None else min(plan.max_trajectories, len(data))
    if count == 0:
        raise EvaluationError(
            f"split {source.split!r} of {source.name!r} has no trajectory long enough for history {plan.history}"
        )
    return count


def kept_assignments(rows: Sequence[Scores], labels: Sequence[str]) -> tuple[list[Scores], dict[str, str], list[str]]:
    """For each transferred model's ``label``, of the rows ``<label> [source channels ...]`` only the one with the
    lowest mean paper VRMSE, named ``label`` (how many assignments were tried in its ``notes``): the paper reports
    the best ``C_tgt``-subset for zero-shot transfer. Returns the rows, the renames (``{kept row's name: label}``)
    and the names of the rows dropped, for what else is keyed by row (the figures, the expected errors)."""
    kept, renames, dropped = list(rows), {}, []
    for label in labels:
        candidates = [s for s in kept if s.name.startswith(f"{label} [source channels ")]
        if not candidates:
            continue
        best = min(candidates, key=lambda s: s.mean_paper)
        renames[best.name] = label
        dropped += [c.name for c in candidates if c is not best]
        chosen = replace(best, name=label, notes=best.notes | {"assignments tried": len(candidates)})
        kept = [chosen if s is best else s for s in kept if s is best or s not in candidates]
    return kept, renames, dropped


def bind_rows(
    plan: EvaluationPlan, predictors: Sequence[Predictor], context: Context
) -> dict[str, BoundResidual | None]:
    """Each row's residual on one trajectory (its grid and scalars, float64): one bound per distinct physics (the
    plan's default, and a run's own where it has one); ``None`` without a PDE."""
    scalars = {k: v.double() for k, v in context.scalars.items()}
    bound: dict[int, BoundResidual | None] = {}
    out = {}
    for predictor in predictors:
        physics = plan.physics_of(predictor)
        if id(physics) not in bound:
            bound[id(physics)] = physics.bind(context.grid, scalars)
        out[predictor.name] = bound[id(physics)]
    return out


def score_trajectory(
    plan: EvaluationPlan,
    predictor: Predictor,
    sums: RowSums,
    frames: torch.Tensor,
    slotted: torch.Tensor,
    context: Context,
    starts: list[int],
    bound: BoundResidual | None,
) -> torch.Tensor:
    """Add one row's scores on one trajectory to ``sums``: one-step VRMSEs, its scorecard (with ``bound``, the
    trajectory's residual) and its rollouts from ``starts``; returns its one-step predictions
    ``(T - history, *space, C)``."""
    history, dims = plan.history, plan.opened.metadata.n_spatial_dims
    truth = frames[history:]
    prediction = one_step_all(predictor, frames, history, context)
    sums.one_well.append(vrmse_well(prediction, truth, dims).mean(0))
    sums.one_paper.append(vrmse_paper(prediction, truth, constant_as_nan=True))
    if bound is not None:
        cards = label_free_scores(predictor, frames, slotted, prediction, history, context, bound)
        for name, value in cards.items():
            sums.cards.setdefault(name, []).append(value)
    if starts:
        steps = min(plan.rollout_steps, truth.shape[0])
        sums.rolled += [0.0] * (steps - len(sums.rolled))
        predicted = rollout(predictor, frames, history, steps, context, starts)
        for start, run in zip(starts, predicted, strict=True):
            target = frames[start + history : start + history + steps]
            for step, value in enumerate(vrmse_well(run, target, dims).mean(-1).tolist()):
                sums.rolled[step] += value
    return prediction


def row_scores(
    predictor: Predictor,
    sums: RowSums,
    data,
    counts: list[int],
    unscored: str | None = None,
    residuals: str | None = None,
    selection: dict | None = None,
) -> Scores:
    """A row's ``Scores``: its sums averaged over trajectories (and rollouts); ``unscored``: why it has no
    scorecard, where it has none; ``residuals``: the note of a row scored with its run's own physics;
    ``selection``: its run's selection facts."""
    channels = [n for group in data.metadata.field_names.values() for n in group]
    well = torch.stack(sums.one_well).mean(0)
    paper = torch.stack(sums.one_paper).nanmean(0)
    roll = [total / n for total, n in zip(sums.rolled, counts, strict=False)]
    label_free = {k: float(torch.cat(v).mean()) for k, v in sums.cards.items()}
    return Scores(
        predictor.name,
        predictor.kind,
        {c: float(v) for c, v in zip(channels, well, strict=True)},
        {c: float(v) for c, v in zip(channels, paper, strict=True)},
        roll,
        predictor.seconds_per_prediction,
        dict(predictor.notes) | ({"residuals": residuals} if residuals is not None else {}),
        label_free=label_free,
        label_free_reasons=missing_scores(label_free, unscored),
        selection=selection if selection is not None else {},
        rollout_windows=window_means(roll),
        rollout_counts=counts[: len(roll)],
    )


def figure_frames(
    plan: EvaluationPlan,
    frames: torch.Tensor,
    slotted: torch.Tensor,
    context: Context,
    predictions: dict[str, torch.Tensor],
    bounds: dict[str, BoundResidual | None],
) -> FigureFrames:
    """The figures' frames of the first trajectory: its middle predicted frame, each row's prediction of it and
    ``|R_k|`` of that prediction under the row's residual on the trajectory (``bounds``, ``residual_fields``)."""
    offset = (frames.shape[0] - plan.history) // 2
    t = plan.history + offset
    figures = FigureFrames(t, frames[t])
    for name, prediction in predictions.items():
        figures.predictions[name] = prediction[offset]
        bound = bounds.get(name)
        if bound is not None:
            predicted = into_slots(prediction[offset].double(), context.channel_slots)
            figures.residuals[name] = residual_fields(bound, slotted, predicted, t, context)
    return figures


def residual_fields(
    bound: BoundResidual, slotted: torch.Tensor, predicted: torch.Tensor, t: int, context: Context
) -> dict[str, torch.Tensor]:
    """``|R_k|`` of each sub-equation between the true frame ``t - 1`` of a trajectory in slots and a predicted frame
    ``t`` (in slots), under the bound residual's derivative and time scheme (a scheme over ``span`` steps, central's 2,
    also reads the true frame ``t - span``; ``{}`` where there is none, or where the dataset lacks one of the PDE's
    variables)."""
    names = [SLOT_NAMES[s] for s in context.channel_slots]
    scheme = bound.scheme
    if not set(bound.pde.variables) <= set(names) or t + 1 < scheme.frames:
        return {}

    def fields(frame: torch.Tensor) -> dict[str, torch.Tensor]:
        return slot_fields(frame[None, None], names)

    older = fields(slotted[t - scheme.span]) if scheme.span > 1 else None
    residuals = bound.residuals(fields(slotted[t - 1]), fields(predicted), context.dt.double(), older=older)
    return {k: r[0, 0].abs().float() for k, r in residuals.items()}


def backtest_predictions(
    predictor: Predictor, frames: torch.Tensor, prediction: torch.Tensor, history: int, context: Context
) -> torch.Tensor | None:
    """The row's predictions of frames ``history - 1 .. T - 2`` from the ``history - 1`` true frames before each
    (``None`` with a history under 2). A row that reads the last frame alone predicts frame ``t`` from frame ``t - 1``
    in both protocols, so its one-step ``prediction`` of frames ``history .. T - 1`` serves from the second on and only
    frame ``history - 1`` is predicted anew (the solver's dearest part of a scorecard, not run twice). The solver's
    step doubling picks one sub-step count per batch of windows, so a reused prediction may differ from one solved in
    the backtest's own batches by the solver's tolerance (on burgers1d: not at all, reports/solver_backtests.md)."""
    if history < 2:
        return None
    if not predictor.reads_last_frame_only:
        return one_step_all(predictor, frames[:-1], history - 1, context)
    first = one_step_all(predictor, frames[:history], history - 1, context)
    return torch.cat([first, prediction[:-1]])


def label_free_scores(
    predictor: Predictor,
    frames: torch.Tensor,
    slotted: torch.Tensor,
    prediction: torch.Tensor,
    history: int,
    context: Context,
    bound: BoundResidual,
    chunk: int = 8,
) -> dict[str, torch.Tensor]:
    """The scorecard (``well_upao.physics.scores.scorecard``) of one row's one-step predictions of a trajectory,
    per target frame (``slotted``: the trajectory ``frames`` in slots): each target's window is the ``history`` true
    frames before it (what a user has), the
    departure's reference is ``extrap2`` of that window (``departure_extrap2``), and the backtest runs the row on
    the window without its last frame (``nan`` when the row needs more frames than that)."""
    timing = (predictor.seconds, predictor.calls)  # the backtest's calls do not count in the row's cost
    try:
        backtests = backtest_predictions(predictor, frames, prediction, history, context)
    except Exception:  # a row with a fixed history as long as the evaluated one has no shorter window to run on
        backtests = None
    finally:
        predictor.seconds, predictor.calls = timing
    slots = context.channel_slots
    predicted = into_slots(prediction.double(), slots)
    guesses = into_slots(backtests.double(), slots) if backtests is not None else None
    out: dict[str, list[torch.Tensor]] = {}
    targets = range(history, frames.shape[0])
    for start in range(0, len(targets), chunk):
        index = list(targets[start : start + chunk])
        windows = torch.stack([slotted[t - history : t] for t in index])
        reference = None
        if history >= 3:
            reference = 3 * windows[:, -1] - 3 * windows[:, -2] + windows[:, -3]
        guess = None if guesses is None else guesses[[t - history for t in index]]
        dt = context.dt.double().expand(len(index))
        card = bound.scorecard(windows, predicted[[t - history for t in index]], dt, reference, guess)
        if "departure" in card:
            card["departure_extrap2"] = card.pop("departure")
        for name, value in card.items():
            out.setdefault(name, []).append(value)
    if backtests is None:
        out["backtest"] = [torch.full((len(targets),), float("nan"), dtype=torch.float64)]
    return {k: torch.cat(v) for k, v in out.items()}
