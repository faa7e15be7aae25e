"""The report of an evaluation: the markdown table and the text under it, the JSON and the figures
(``well_upao.evaluate.plots``). It formats and draws what the scoring pass computed (``well_upao.evaluate.scores``)
and computes nothing of its own: no residual, no metric.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from well_upao.evaluate.plots import plot_cost_accuracy, plot_expected, plot_fields, plot_rollout
from well_upao.evaluate.results import LABEL_FREE, NOT_FINITE, Evaluation, FigureFrames, Scores, missing_scores
from well_upao.predict.windows import WELL_WINDOWS, first_non_finite_step, frames_needed, window_label


@dataclass
class EvaluationReport:
    evaluation: Evaluation
    table: str
    json_path: Path | None
    figures: list[Path] = field(default_factory=list)


def write_report(
    evaluation: Evaluation, figures: FigureFrames, out: Path | None, draw: bool = True
) -> EvaluationReport:
    """The table; with ``out``, the JSON and (unless ``draw`` is false) the figures written there too."""
    table = markdown_table(evaluation)
    if out is None:
        return EvaluationReport(evaluation, table, None)
    json_path = save(evaluation, out)
    if not draw:
        return EvaluationReport(evaluation, table, json_path)
    paths = [plot_rollout(evaluation, out), *plot_fields(evaluation, figures, out)]
    paths += [path for path in [plot_cost_accuracy(evaluation, out), plot_expected(evaluation, out)] if path]
    return EvaluationReport(evaluation, table, json_path, paths)


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
    text = header + "\n" + "\n".join(rows) + rollout_text(e) + floor_text(e.residual_floor)
    return text + residuals_text(e) + trust_text(e) + expected_text(e) + scorecard_text(e)


def expected_text(evaluation: Evaluation) -> str:
    """Each row's expected error per window without labels, beside its true value (``Evaluation.expected``)."""
    if not any(evaluation.expected.values()):
        return ""
    lines = [
        "",
        "",
        "How far off, without labels (the Well's VRMSE the history's backtests expect, with a nominal 80% interval; "
        "docs/label-free.md), beside the true value:",
    ]
    rows = {s.name: s for s in evaluation.scores}
    for window, estimates in evaluation.expected.items():
        for name, estimate in estimates.items():
            true = rows[name].window_error(window) if name in rows else None
            low, high = estimate["low"], estimate["high"]
            line = f"- {window}, {name}: expected {estimate['value']:.3g} [{low:.3g}, {high:.3g}]"
            if estimate["continued_share"] > 0:
                line += f" ({100 * estimate['continued_share']:.0f}% past the evidence's step {estimate['reach']})"
            line += f", true {true:.3g}" if true is not None and math.isfinite(true) else ", no true value"
            lines.append(line)
    return "\n".join(lines)


def trust_text(evaluation: Evaluation) -> str:
    """The row the label-free evidence would trust per window, beside the labels' best (``Evaluation.trust``)."""
    if not evaluation.trust:
        return ""
    lines = [
        "",
        "",
        "What the evidence would trust per window (label-free: backtests on the history windows the rows predict "
        "from, spread over each trajectory's one-step targets and its rollouts' starts; the solver not a candidate; "
        "with labels, the lowest true error among the extrapolation rows and the models):",
    ]
    for window, entry in evaluation.trust.items():
        if entry.get("pick") is None:
            lines.append(f"- {window}: no backtest (the history holds too few frames)")
            continue
        line = f"- {window}: {entry['pick']} ({entry['reach']})"
        if "best" in entry:
            line += f"; true best {entry['best']} ({entry['best_value']:.4g})"
            if "ratio" in entry:
                line += f", the pick {entry['ratio']:.3g}x it"
        lines.append(line)
    return "\n".join(lines)


def residuals_text(evaluation: Evaluation) -> str:
    """Which rows score their residuals with their own run's discretisation (its checkpoint's), not the default the
    floor above describes; empty when none does."""
    own = [f"- {s.name}: {s.notes['residuals']}" for s in evaluation.scores if s.notes.get("residuals")]
    if not own:
        return ""
    return "\n\nResiduals scored with the run's own discretisation (the other rows: the default above):\n" + "\n".join(
        own
    )


def window_cell(evaluation: Evaluation, score: Scores, window: tuple[int, int]) -> str:
    """A row's value of one of the Well's rollout windows, or why there is none."""
    value = score.rollout_windows.get(window_label(window))
    if value is not None and not math.isfinite(value):
        return f"diverged (non-finite from step {first_non_finite_step(score.rollout_vrmse_well)})"
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


def _score_cell(score: Scores, name: str) -> str:
    """A label-free score, or ``n/a (reason)`` (the row's ``label_free_reasons``, else ``missing_scores``)."""
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
        text = f"kept prior ({selection.get('kept_prior_name') or 'its extrapolation'})"
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
        "Label-free scores (no interior labels; docs/label-free.md): *residual / floor* is the "
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
            lines.append(
                f"- {s.name}: kept its prior (predicts {s.selection.get('kept_prior_name') or 'its extrapolation'}): "
                f"{s.selection['kept_prior_reason']}"
            )
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
