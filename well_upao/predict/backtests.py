"""The backtests of every row on a trajectory's history windows: the evidence of the pick (``predict.evidence``) and
of the expected error (``predict.expected``), for ``well-upao evaluate`` (on the windows its rows predict from) and
the forecast (on the history it is given).

A classical row's backtest is the closed form of its table entry (``predict.classical``); a model row's is its own
rollout from the window's first ``START`` frames (``predict.rollout``) and, one step ahead, its prediction of every
later frame of the window from the true frames before it. The solver is not a candidate (it is the accuracy limit
given the equation, not a prediction of the user's system without it). The expected error's rule 3
(``predict.expected_starts``) reads each window's start matrix besides: a classical row's rollouts from every start
of the window, a model row's two backtests above (``window_evidence``). A model row whose run's ``best.pt`` kept a
classical prior (``predictors.kept_prior``) predicts with that prior's extrapolation: its backtests and start matrix
are the prior's closed forms (every start), as the prior's own row has them, so the same predictions carry the
same evidence and expected error under either name.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from well_upao.harness.samples import Context
from well_upao.predict.evidence import START, backtest_curve, with_one_step
from well_upao.predict.expected import expected_curve, step_over_spread
from well_upao.predict.expected_starts import own_start_matrix, prior_start_matrix
from well_upao.predict.predictors import ClassicalRow, Predictor, kept_prior
from well_upao.predict.rollout import one_step_all, rollout
from well_upao.predict.windows import rollout_starts


def add_history_curves(
    curves: dict[str, dict[str, list[torch.Tensor]]],
    predictors: Sequence[Predictor],
    frames: torch.Tensor,
    history: int,
    context: Context,
    starts: Sequence[int],
    count: int,
    expected: dict[str, dict[str, list[torch.Tensor]]] | None = None,
    matrices: dict[str, dict[str, list[torch.Tensor]]] | None = None,
) -> None:
    """Add a trajectory's backtest curves (``history_curves``) to ``curves``: under ``one_step``, those of up to
    ``count`` history windows spread evenly over the one-step targets (the windows before the first, a middle and the
    last target frame for 3), the evidence for the one-step pick; under ``rollout``, those of the rollouts' own
    history windows (``starts``; the first window where no rollout is run), the evidence for the rollout
    windows. Each prediction the pick is judged on reads such a window, so the evidence comes from where the rows are
    scored, not from the first frames only (on a trajectory that starts with a transient, those rank the predictors
    otherwise); a window's curve is computed once. ``expected`` receives the same windows' curves in VRMSE units
    (``predict.expected.expected_curve``) and ``matrices`` their start matrices
    (``predict.expected_starts``), the evidence of the expected error under rules 1 and 2 and under rule 3."""
    one_step_starts = rollout_starts(frames.shape[0], history, 1, count)
    cache: dict[int, tuple[dict[str, torch.Tensor], ...]] = {}
    for kind, windows in (("one_step", one_step_starts), ("rollout", list(starts) or [0])):
        for start in windows:
            if start not in cache:
                cache[start] = window_evidence(predictors, frames[start : start + history], context)
            for held, part in zip((curves, expected, matrices), cache[start], strict=True):
                if held is not None:
                    for name, curve in part.items():
                        held[kind].setdefault(name, []).append(curve)


def window_curves(
    predictors: Sequence[Predictor],
    window: torch.Tensor,
    context: Context,
    solver: bool = False,
    mask: torch.Tensor | None = None,
) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """Every row's backtest curve on one history window ``(T, *space, C)``, ``{name: (1, K)}``, in step units (the
    pick's evidence, ``predict.evidence``) and in VRMSE units (the expected error's, ``predict.expected``);
    ``solver``: the solver row is a candidate too (the forecast's; evaluate's rows leave it out); ``mask`` ``(C,)``:
    the channels the VRMSE-unit curve averages (default all)."""
    curves, expected, _ = window_evidence(predictors, window, context, solver, mask, matrices=False)
    return curves, expected


def window_evidence(
    predictors: Sequence[Predictor],
    window: torch.Tensor,
    context: Context,
    solver: bool = False,
    mask: torch.Tensor | None = None,
    matrices: bool = True,
) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """`window_curves` and, with ``matrices``, every row's start matrix ``(A, A)`` on the window
    (``predict.expected_starts``): a classical row's from every start (closed forms, cheap), a model or solver row's
    from its own two backtests (``own_start_matrix``: no rollout added)."""
    per_channel = channel_history_curves(predictors, window, context, solver)
    mask = torch.ones(window.shape[-1]) if mask is None else mask
    active = mask.bool()
    rho = step_over_spread(window[None], mask) if per_channel else None
    curves = {name: with_one_step(r.mean(-1), o.mean(-1)) for name, (r, o) in per_channel.items()}
    expected = {
        name: expected_curve(with_one_step(r[..., active], o[..., active]), rho) for name, (r, o) in per_channel.items()
    }
    starts: dict[str, torch.Tensor] = {}
    if matrices:
        rows = {p.name: p for p in predictors}
        for name, (r, o) in per_channel.items():
            row = rows[name]
            prior = row.prior if isinstance(row, ClassicalRow) else kept_prior(row)
            if prior is not None:
                starts[name] = prior_start_matrix(prior, window.double(), mask, rho[0])
            else:
                starts[name] = own_start_matrix(r[0][..., active], o[0][..., active], rho[0])
    return curves, expected, starts


def history_curves(predictors: Sequence[Predictor], history: torch.Tensor, context: Context) -> dict[str, torch.Tensor]:
    """Each row's backtest curve (``predict.evidence``) on one history window, ``(1, K)``: the classical rows'
    closed forms, a model row's rollout from the window's first ``START`` frames and, one step ahead, its predictions
    of every later frame of the window from the ``START`` frames before it (none for a row that cannot start from
    them, ``Predictor.can_start_from``: a one-frame model of the Well reading more frames); the solver is not a
    candidate."""
    per_channel = channel_history_curves(predictors, history, context)
    return {name: with_one_step(r.mean(-1), o.mean(-1)) for name, (r, o) in per_channel.items()}


def channel_history_curves(
    predictors: Sequence[Predictor], history: torch.Tensor, context: Context, solver: bool = False
) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """``history_curves`` per channel before the one-step mean: each row's rollout curve ``(1, K, C)`` and its
    one-step curve over the window's later frames ``(1, T - START, C)``; ``solver``: the solver row's too."""
    window = history[None]
    mask = torch.ones(history.shape[-1])
    out = {}
    for predictor in predictors:
        if (predictor.kind == "solver" and not solver) or history.shape[0] <= START:
            continue
        prior = predictor.prior if isinstance(predictor, ClassicalRow) else kept_prior(predictor)
        if prior is not None:
            predicted = prior.rolled_out(window, START)
            one_step = prior.one_step(window, START)
        elif predictor.kind in ("model", "solver") and predictor.can_start_from(START):
            predicted = rollout(predictor, history, START, history.shape[0] - START, context, starts=(0,))
            one_step = one_step_all(predictor, history, START, context)[None]
        else:
            continue
        out[predictor.name] = (
            backtest_curve(predicted, window, START, mask, per_channel=True),
            backtest_curve(one_step, window, START, mask, per_channel=True),
        )
    return out
