"""``well-upao evaluate``: one-step and k-step rollout errors of models and classical baselines on a split.

For every trajectory of the split (read whole, at time stride ``stride``):

* one-step: frame ``t`` predicted from the true frames ``t - history .. t - 1`` for every ``t >= history``
  (the paper's protocol); VRMSE under both definitions, per channel (The Well's: averaged over frames; the
  paper's: over the trajectory's full time series);
* rollout: ``rollout_steps`` autoregressive steps (at most what the trajectory holds) from up to
  ``rollout_starts`` windows of each trajectory; The Well's VRMSE per step, averaged over every rollout, and its
  windows 6:12 and 13:30 (``well_upao.evaluate.windows``);
* the label-free scorecard of every row's one-step predictions (``well_upao.physics.scores``), from each target's
  window only: the residual of the prediction over the floor of the window, the departure from ``extrap2`` of
  the same window per unit of its step, and the backtest (the row run on the window without its last frame, against that
  observed frame), under the dataset's UPAO discretisation (:func:`label_free_scores`).

Results are averaged over trajectories. Classical baselines are always part of the comparison.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from tqdm.auto import tqdm

from well_upao.axes import UnevenAxisError, UniformAxis, window_steps
from well_upao.data.source import WellSource
from well_upao.evaluate.metrics import vrmse_paper, vrmse_well
from well_upao.evaluate.predictors import Context, Predictor
from well_upao.evaluate.protocol import one_step_all, rollout
from well_upao.evaluate.windows import LONGEST_WINDOW_END, WELL_WINDOWS, frames_needed, window_label, window_means
from well_upao.evaluate.windows import rollout_starts as spread_starts
from well_upao.harness.datamodule import WellUpaoDataset
from well_upao.harness.names import register_dataset_names
from well_upao.harness.samples import grid_of, into_slots, named_scalars
from well_upao.models.na_transformer import T_IN
from well_upao.physics.pdes import PDE
from well_upao.physics.scores import scorecard
from well_upao.physics.stencils import Stencils

#: the scorecard's columns in evaluation tables, in order
LABEL_FREE = ("residual_ratio", "departure_extrap2", "backtest")
#: why a score of :data:`LABEL_FREE` can be missing from a scored row (:func:`missing_scores`)
NO_EXTRAP2 = "history < 3 frames: no extrap2 of the window"
NO_BACKTEST = "no shorter window to backtest (history 1, or the row reads the whole history)"
NOT_FINITE = "not finite"
NO_WINDOW = "history 1: the scorecard needs at least 2 observed frames"
NOT_SCORED = "not scored"


class EvaluationError(ValueError):
    """Bad evaluation request (missing split, incompatible checkpoint, trajectory too short, ...)."""


@dataclass
class Scores:
    name: str
    kind: str
    one_step_vrmse_well: dict[str, float]
    one_step_vrmse_paper: dict[str, float]
    #: per rollout step (step 1 first), the mean over every rollout that reached it
    rollout_vrmse_well: list[float]
    seconds_per_prediction: float
    notes: dict = field(default_factory=dict)
    #: the label-free scorecard (``floor``, ``residual_ratio``, ``departure_extrap2``, ``backtest``), means over
    #: every target frame; empty when not computed
    label_free: dict = field(default_factory=dict)
    #: why a label-free score of this row was not computed (``{name: reason}``; the table prints "n/a (reason)")
    label_free_reasons: dict = field(default_factory=dict)
    #: for a run's row: what its selection did (``kept_start``, ``kept_start_reason``, ``guard_rejections``, from
    #: its ``metrics.jsonl``)
    selection: dict = field(default_factory=dict)
    #: the Well's rollout windows (``"6:12"``, ``"13:30"``): the mean of ``rollout_vrmse_well[a:b]``, ``None``
    #: where the rollout did not reach step ``b``
    rollout_windows: dict = field(default_factory=dict)
    #: how many rollouts stand behind each step of ``rollout_vrmse_well``
    rollout_counts: list[int] = field(default_factory=list)

    @property
    def mean_well(self) -> float:
        return sum(self.one_step_vrmse_well.values()) / len(self.one_step_vrmse_well)

    @property
    def mean_paper(self) -> float:
        """Mean over channels with a temporal variance (constant channels are NaN and left out)."""
        values = [v for v in self.one_step_vrmse_paper.values() if v == v]
        return sum(values) / len(values) if values else float("nan")


@dataclass
class Evaluation:
    dataset: str
    split: str
    stride: int
    dt: float
    history: int
    rollout_steps: int
    n_trajectories: int
    channels: list[str]
    regime: str
    scores: list[Scores]
    #: the fixed-step solvers the matched rows were picked from (``well_upao.evaluate.matched_solver``)
    solver_ladder: list[Scores] = field(default_factory=list)
    #: where the data came from when we know: ``replica (<grid>, well-upao generate-replica v<n>)``
    data_source: str = ""
    #: the residual floor of the evaluated frames (``well_upao.evaluate.pipeline.residual_floor_summary``)
    residual_floor: dict = field(default_factory=dict)
    #: the longest rollout run (``rollout_steps`` is what was asked; a trajectory holds at most its frames after the
    #: history), and the rollout starts asked per trajectory
    rollout_steps_run: int = 0
    rollout_starts: int = 1

    def to_json(self) -> str:
        data = asdict(self)
        for row, score in zip(data["scores"], self.scores, strict=True):
            row["mean_vrmse_well"], row["mean_vrmse_paper"] = score.mean_well, score.mean_paper
        return json.dumps(data, indent=2)


def open_split(source: WellSource, history: int, stride: int):
    """The source's split as whole trajectories (The Well's full-trajectory mode), with its field selection."""
    try:
        _ = source.files
    except FileNotFoundError as error:
        raise EvaluationError(str(error)) from error
    register_dataset_names([source.name])
    return WellUpaoDataset(
        fields=source.kept_fields,
        well_base_path=str(source.base),
        well_dataset_name=source.name,
        well_split_name=source.split,
        n_steps_input=history,
        n_steps_output=1,
        full_trajectory_mode=True,
        max_rollout_steps=10**9,
        min_dt_stride=stride,
        max_dt_stride=stride,
    )


def file_time_axis(source: WellSource) -> UniformAxis | None:
    """The split's time axis (``Layout.time_axis``), or ``None`` where it is not equally spaced: each window's own
    fit is used then, and the residual floor's note says why the label-free columns are n/a."""
    try:
        return source.layout.time_axis
    except UnevenAxisError:
        return None


def sample_context(
    sample: dict, scalar_names: list[str], channel_slots: list[int], time_axis: UniformAxis | None = None
) -> Context:
    """The physics of one whole-trajectory sample: its dt (``well_upao.axes.window_steps``: a whole number
    of the file's step ``time_axis`` when given), grid, named scalars, slots and constant fields."""
    times = torch.cat([sample["input_time_grid"], sample["output_time_grid"]])
    scalars = sample.get("constant_scalars", torch.zeros(0))[None].double()
    named = named_scalars(scalars, scalar_names)
    grid = grid_of(sample["space_grid"], sample["boundary_conditions"])
    constants = sample.get("constant_fields")
    return Context(window_steps(times, time_axis).float(), grid, named, channel_slots, constants)


@torch.no_grad()
def evaluate(
    predictors: list[Predictor],
    source: WellSource,
    history: int = T_IN,
    stride: int = 1,
    rollout_steps: int = LONGEST_WINDOW_END,
    max_trajectories: int | None = None,
    progress: bool = True,
    keep_first: bool = True,
    opened=None,
    scoring: tuple[PDE, str, str] | None = None,
    rollout_starts: int = 3,
    unscored: str | None = None,
) -> tuple[Evaluation, dict]:
    """Scores of every predictor on ``source``'s split; also returns the first trajectory's frames and predictions
    (for figures). Every row is scored on the same target frames (those after the first ``history``); a predictor
    that reads fewer frames (its own ``history``) gets the last ones of each window. ``opened``: the split opened
    already (:func:`open_split`), to open it once. ``scoring``: ``(pde, derivative, scheme)`` to compute every
    row's label-free scorecard (:func:`label_free_scores`); without it, ``unscored`` says why (every row's
    ``label_free_reasons``, :func:`missing_scores`). ``rollout_starts``: rollouts per trajectory, from windows spread
    over it (``well_upao.evaluate.windows.rollout_starts``)."""
    longer = [p.name for p in predictors if p.history is not None and p.history > history]
    if longer:
        raise EvaluationError(f"rows {longer} read more than the evaluated history of {history} frames (--history)")
    if scoring is not None and history < 2:
        scoring, unscored = None, NO_WINDOW
    dataset = source.name
    data = opened if opened is not None else open_split(source, history, stride)
    meta = data.metadata
    channels = [n for names in meta.field_names.values() for n in names]
    slots = source.channel_slots
    time_axis = file_time_axis(source)
    count = len(data) if max_trajectories is None else min(max_trajectories, len(data))
    if count == 0:
        raise EvaluationError(
            f"split {source.split!r} of {dataset!r} has no trajectory long enough for history {history}"
        )
    one_well = {p.name: [] for p in predictors}
    one_paper = {p.name: [] for p in predictors}
    rolled_sums = {p.name: [] for p in predictors}  # per step: the sum over rollouts of the step's VRMSE
    rolled_counts: list[int] = []
    cards: dict[str, dict[str, list[torch.Tensor]]] = {p.name: {} for p in predictors}
    first: dict = {}
    dt = 0.0
    bar = tqdm(range(count), desc=f"evaluate {dataset}/{source.split}", unit="traj", disable=not progress)
    for index in bar:
        sample = data[index]
        frames = torch.cat([sample["input_fields"], sample["output_fields"]]).float()
        context = sample_context(sample, list(meta.constant_scalar_names), slots, time_axis)
        dt = float(context.dt)
        truth = frames[history:]
        steps = min(rollout_steps, truth.shape[0])
        starts = spread_starts(frames.shape[0], history, steps, rollout_starts)
        rolled_counts += [0] * (steps - len(rolled_counts))
        for step in range(steps):
            rolled_counts[step] += len(starts)
        for predictor in predictors:
            prediction = one_step_all(predictor, frames, history, context)
            one_well[predictor.name].append(vrmse_well(prediction, truth, meta.n_spatial_dims).mean(0))
            one_paper[predictor.name].append(vrmse_paper(prediction, truth, constant_as_nan=True))
            if scoring is not None:
                for name, value in label_free_scores(predictor, frames, prediction, history, context, *scoring).items():
                    cards[predictor.name].setdefault(name, []).append(value)
            if starts:
                sums = rolled_sums[predictor.name]
                sums += [0.0] * (steps - len(sums))
                predicted = rollout(predictor, frames, history, steps, context, starts)
                for start, run in zip(starts, predicted, strict=True):
                    target = frames[start + history : start + history + steps]
                    for step, value in enumerate(vrmse_well(run, target, meta.n_spatial_dims).mean(-1).tolist()):
                        sums[step] += value
            if keep_first and index == 0:
                first[predictor.name] = prediction
        if keep_first and index == 0:
            first["__truth__"], first["__context__"] = frames, context
    scores = []
    for p in predictors:
        well = torch.stack(one_well[p.name]).mean(0)
        paper = torch.stack(one_paper[p.name]).nanmean(0)
        roll = [total / n for total, n in zip(rolled_sums[p.name], rolled_counts, strict=False)]
        scores.append(
            Scores(
                p.name,
                p.kind,
                {c: float(v) for c, v in zip(channels, well, strict=True)},
                {c: float(v) for c, v in zip(channels, paper, strict=True)},
                roll,
                p.seconds_per_prediction,
                dict(p.notes),
                label_free={k: float(torch.cat(v).mean()) for k, v in cards[p.name].items()},
                rollout_windows=window_means(roll),
                rollout_counts=rolled_counts[: len(roll)],
            )
        )
        scores[-1].label_free_reasons = missing_scores(scores[-1].label_free, unscored if scoring is None else None)
    evaluation = Evaluation(
        dataset, source.split, stride, dt, history, rollout_steps, count, channels, "windows", scores
    )
    evaluation.data_source = source.provenance
    evaluation.rollout_steps_run, evaluation.rollout_starts = len(rolled_counts), rollout_starts
    return evaluation, first


def missing_scores(label_free: dict, unscored: str | None = None) -> dict[str, str]:
    """``{name: reason}`` for each score of :data:`LABEL_FREE` a row lacks: all of them with ``unscored`` (why the
    scorecard was not computed) or :data:`NOT_SCORED`, when ``label_free`` is empty; else the departure without a
    window long enough for extrap2, a ``nan`` backtest (no shorter window) and any other value that is not
    finite."""
    if not label_free:
        return {name: unscored or NOT_SCORED for name in LABEL_FREE}
    reasons = {}
    for name in LABEL_FREE:
        value = label_free.get(name)
        if value is None:
            reasons[name] = NO_EXTRAP2 if name == "departure_extrap2" else NOT_SCORED
        elif not math.isfinite(value):
            reasons[name] = NO_BACKTEST if name == "backtest" and math.isnan(value) else NOT_FINITE
    return reasons


def explain_unscored(evaluation: Evaluation, reason: str | None) -> None:
    """Give every row that lacks a label-free score its reason (rows added after :func:`evaluate`, e.g. matched
    solvers, are not scored: ``reason`` or :data:`NOT_SCORED`)."""
    for score in evaluation.scores:
        for name, why in missing_scores(score.label_free, reason).items():
            score.label_free_reasons.setdefault(name, why)


def label_free_scores(
    predictor: Predictor,
    frames: torch.Tensor,
    prediction: torch.Tensor,
    history: int,
    context: Context,
    pde: PDE,
    derivative: str,
    scheme: str,
    chunk: int = 8,
) -> dict[str, torch.Tensor]:
    """The scorecard (``well_upao.physics.scores.scorecard``) of one row's one-step predictions of a trajectory,
    per target frame: each target's window is the ``history`` true frames before it (what a user has), the
    departure's reference is ``extrap2`` of that window (``departure_extrap2``), and the backtest runs the row on
    the window without its last frame (``nan`` when the row needs more frames than that)."""
    timing = (predictor.seconds, predictor.calls)  # the backtest's calls do not count in the row's cost
    try:
        backtests = one_step_all(predictor, frames[:-1], history - 1, context) if history >= 2 else None
    except Exception:  # a row with a fixed history as long as the evaluated one has no shorter window to run on
        backtests = None
    finally:
        predictor.seconds, predictor.calls = timing
    slots = context.channel_slots
    params = pde.resolve_parameters({k: v.double() for k, v in context.scalars.items()})
    ops = Stencils(context.grid, derivative)
    out: dict[str, list[torch.Tensor]] = {}
    targets = range(history, frames.shape[0])
    for start in range(0, len(targets), chunk):
        index = list(targets[start : start + chunk])
        windows = into_slots(torch.stack([frames[t - history : t] for t in index]).double(), slots)
        reference = None
        if history >= 3:
            reference = 3 * windows[:, -1] - 3 * windows[:, -2] + windows[:, -3]
        guess = None
        if backtests is not None:
            guess = into_slots(backtests[[t - history for t in index]].double(), slots)
        card = scorecard(
            pde,
            windows,
            into_slots(prediction[[t - history for t in index]].double(), slots),
            context.dt.double().expand(len(index)),
            params,
            ops,
            scheme,
            context.grid.dims,
            reference=reference,
            backtest=guess,
        )
        if "departure" in card:
            card["departure_extrap2"] = card.pop("departure")
        for name, value in card.items():
            out.setdefault(name, []).append(value)
    if backtests is None:
        out["backtest"] = [torch.full((len(targets),), float("nan"), dtype=torch.float64)]
    return {k: torch.cat(v) for k, v in out.items()}


def markdown_table(evaluation: Evaluation) -> str:
    e = evaluation
    header = (
        f"{e.dataset} / {e.split}: {e.n_trajectories} trajectories, stride {e.stride} (dt = {e.dt:g}), history "
        f"{e.history}; one-step = every frame from its true history (regime: {e.regime})"
        + (f"; data: {e.data_source}" if e.data_source else "")
        + "\n\n"
        "| model | kind | protocol | history | one-step VRMSE (paper, per trajectory) "
        "| one-step VRMSE (the Well, per frame) "
        + "".join(f"| {c} (paper) " for c in e.channels)
        + "".join(f"| rollout {window_label(w)} (the Well) " for w in WELL_WINDOWS)
        + f"| rollout step {e.rollout_steps_run} (the Well) | ms / prediction "
        + "| residual / floor | departure from extrap2 | backtest | selection |\n"
        + "|---|---|---|---|---|---|"
        + "---|" * len(e.channels)
        + "---|" * len(WELL_WINDOWS)
        + "---|---|---|---|---|---|"
    )
    rows = []
    for s in sorted(e.scores, key=lambda s: s.mean_paper):
        rollout_value = f"{s.rollout_vrmse_well[-1]:.4g}" if s.rollout_vrmse_well else "n/a"
        windows = "".join(f"| {window_cell(e, s, w)} " for w in WELL_WINDOWS)
        rows.append(
            f"| {s.name} | {s.kind} | {s.notes.get('protocol', '-')} | {s.notes.get('history', '-')} "
            f"| {s.mean_paper:.4g} | {s.mean_well:.4g} "
            + "".join(f"| {s.one_step_vrmse_paper[c]:.4g} " for c in e.channels)
            + windows
            + f"| {rollout_value} | {s.seconds_per_prediction * 1e3:.2f} "
            + "".join(f"| {_score_cell(s, k)} " for k in LABEL_FREE)
            + f"| {selection_text(s.selection)} |"
        )
    return header + "\n" + "\n".join(rows) + rollout_text(e) + floor_text(e.residual_floor) + scorecard_text(e)


def window_cell(evaluation: Evaluation, score: Scores, window: tuple[int, int]) -> str:
    """A row's value of one of the Well's rollout windows, or why there is none."""
    value = score.rollout_windows.get(window_label(window))
    if value is not None:
        return f"{value:.4g}"
    if evaluation.rollout_steps < window[1]:
        return f"not run (rollout steps {evaluation.rollout_steps} < {window[1]})"
    return f"not held (needs {frames_needed(evaluation.history, window)} frames)"


def rollout_text(evaluation: Evaluation) -> str:
    """What stands behind the rollout columns: steps run, rollouts, and the Well's slicing."""
    e = evaluation
    counts = next((s.rollout_counts for s in e.scores if s.rollout_counts), [])
    if not counts:
        return "\n\nRollout: none run (`--rollout-steps 0`, or no trajectory holds a frame after the history)."
    return (
        f"\n\nRollout (the Well's VRMSE per step, each prediction fed back): {e.rollout_steps_run} steps run of "
        f"{e.rollout_steps} asked, {counts[0]} rollouts on {e.n_trajectories} trajectories (up to "
        f"{e.rollout_starts} starts each, spread over the trajectory); a window a:b is the mean of the predicted "
        "steps a to b - 1 counted from 0, as the Well's trainer slices its per-step losses."
    )


def _number(value: float | None) -> str:
    return "n/a" if value is None or value != value else f"{value:.3g}"


def _score_cell(score: Scores, name: str) -> str:
    """A label-free score, or ``n/a (reason)`` (the row's ``label_free_reasons``, else :func:`missing_scores`)."""
    value = score.label_free.get(name)
    if value is not None and math.isfinite(value):
        return f"{value:.3g}"
    reason = score.label_free_reasons.get(name) or missing_scores(score.label_free).get(name, NOT_FINITE)
    return f"n/a ({reason})"


def selection_text(selection: dict) -> str:
    """A run row's selection in a table cell: ``kept start (guard)`` / ``kept start`` / ``trained (epoch n)``, with
    the number of candidates the guard refused."""
    if not selection:
        return ""
    if selection.get("kept_prior"):
        text = "kept prior (its extrapolation)"
    elif selection.get("kept_start"):
        reason = selection.get("kept_start_reason") or ""
        text = "kept start (guard)" if reason.startswith("guard") else "kept start"
    else:
        text = f"trained (epoch {selection.get('best_epoch')})"
    refused = selection.get("guard_rejections")
    if refused:
        text += f"; guard refused {refused}"
    return text


def scorecard_text(evaluation: Evaluation) -> str:
    """The scorecard's definitions under the table, and each run row's guard reason."""
    if not any(s.label_free for s in evaluation.scores):
        return ""
    lines = [
        "",
        "",
        'Label-free scores (no interior labels; README "Label-free scorecard and guard"): *residual / floor* is the '
        "prediction's relative residual over that of the observed window's frames (~1: as consistent as the data; "
        "< 1: closer to the discrete equation than the truth is); *departure from extrap2* is how far the prediction "
        "moved from the window's quadratic extrapolation, per unit of its step (the floor is in the same unit); "
        "*backtest* is the "
        "error of the row predicting the window's observed last frame from the frames before it, per unit of that "
        "frame's step.",
    ]
    for s in evaluation.scores:
        reason = s.selection.get("kept_start_reason")
        if reason:
            lines.append(f"- {s.name}: kept its start: {reason}")
        if s.selection.get("kept_prior_reason"):
            lines.append(f"- {s.name}: kept its prior (predicts its extrapolation): {s.selection['kept_prior_reason']}")
    return "\n".join(lines)


def floor_text(floor: dict) -> str:
    """Two lines under the table: the residual floor with the default and with the lowest discretisation."""
    if not floor:
        return ""
    if "note" in floor:
        return (
            f"\n\nResidual floor of these frames: not computed ({floor['note']}); the label-free columns are n/a for "
            "the same reason"
        )

    def describe(entry: dict) -> str:
        values = ", ".join(f"{k} {v:.2e}" for k, v in entry["residuals"].items())
        return f"{entry['derivative']}/{entry['scheme']}: {values}"

    lines = ["", "", "Residual floor of these frames (||R_k|| / ||scale_k||; `well-upao residual-floor`):"]
    if "default" in floor:
        chosen = " (the dataset's default is auto)" if floor["default"].get("chosen_by") == "auto" else ""
        lines.append(f"- UPAO default {describe(floor['default'])}{chosen}")
    lines.append(f"- lowest {describe(floor['lowest'])}")
    return "\n".join(lines)


def save(evaluation: Evaluation, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"evaluation_{evaluation.dataset}_{evaluation.split}_stride{evaluation.stride}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(evaluation.to_json())
    tmp.replace(path)
    return path
