"""What an evaluation produces (``well-upao evaluate``): each row's ``Scores``, the ``Evaluation`` that holds
them, the figures' frames (``FigureFrames``), and why a label-free score is missing (``missing_scores``).
Data only: the scoring pass (``well_upao.evaluate.scores``) fills them, the report (``well_upao.evaluate.report``)
prints them."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

import torch

#: the scorecard's columns in evaluation tables, in order
LABEL_FREE = ("residual_ratio", "departure_extrap2", "backtest")
#: why a score of ``LABEL_FREE`` can be missing from a scored row (``missing_scores``)
NO_EXTRAP2 = "history < 3 frames: no extrap2 of the window"
NO_BACKTEST = "no shorter window to backtest (history 1, or the row reads the whole history)"
NOT_FINITE = "not finite"
NO_WINDOW = "history 1: the scorecard needs at least 2 observed frames"
NOT_SCORED = "not scored"


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

    def window_error(self, window: str) -> float | None:
        """The true error of a trust window (``predict.windows.WINDOWS``): one step, the Well's one-step VRMSE;
        a rollout window, its mean (``None`` where the rollout did not reach it)."""
        return self.mean_well if window == "one_step" else self.rollout_windows.get(window)

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
    #: the residual floor of the evaluated frames (``well_upao.evaluate.plan.residual_floor_summary``)
    residual_floor: dict = field(default_factory=dict)
    #: the longest rollout run (``rollout_steps`` is what was asked; a trajectory holds at most its frames after the
    #: history), and the rollout starts asked per trajectory
    rollout_steps_run: int = 0
    rollout_starts: int = 1
    #: what the evaluation would trust per window (``one_step``, ``6:12``, ``13:30``; ``predict.evidence``): the row
    #: the label-free evidence picks, its evidence and reach, and (with labels) the lowest true error among the
    #: extrapolation rows and the models, and the ratio between them
    trust: dict = field(default_factory=dict)
    #: per window, each row's expected VRMSE (the Well's) without labels and its nominal 80% interval
    #: (``evaluate.expected.Expected`` as a dict: value, low, high, continued_share, reach, windows, spread, rule)
    expected: dict = field(default_factory=dict)

    def to_json(self) -> str:
        data = asdict(self)
        for row, score in zip(data["scores"], self.scores, strict=True):
            row["mean_vrmse_well"], row["mean_vrmse_paper"] = score.mean_well, score.mean_paper
        return json.dumps(data, indent=2)


@dataclass
class FigureFrames:
    """The first trajectory at one predicted frame, for the figures: the true frame ``truth`` (``(*space, C)``, frame
    ``frame`` of the trajectory), each row's one-step prediction of it, and each row's ``|R_k|`` per sub-equation
    between the true frame before it and its prediction, under the plan's discretisation (empty without a PDE or
    without the PDE's variables)."""

    frame: int
    truth: torch.Tensor
    predictions: dict[str, torch.Tensor] = field(default_factory=dict)
    residuals: dict[str, dict[str, torch.Tensor]] = field(default_factory=dict)

    def renamed(self, names: Mapping[str, str], dropped: Sequence[str] = ()) -> FigureFrames:
        """The same frames without the rows ``dropped``, the rows of ``names`` under their new names."""

        def kept(held: dict) -> dict:
            out = {names.get(name, name): value for name, value in held.items() if name not in dropped}
            # a renamed row goes last, as a row renamed in place did
            return {k: v for k, v in out.items() if k not in names.values()} | {
                k: v for k, v in out.items() if k in names.values()
            }

        return FigureFrames(self.frame, self.truth, kept(self.predictions), kept(self.residuals))


def missing_scores(label_free: dict, unscored: str | None = None) -> dict[str, str]:
    """``{name: reason}`` for each score of ``LABEL_FREE`` a row lacks: all of them with ``unscored`` (why the
    scorecard was not computed) or ``NOT_SCORED``, when ``label_free`` is empty; else the departure without a
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
