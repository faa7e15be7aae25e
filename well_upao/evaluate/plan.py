"""The plan of an evaluation: what ``well-upao evaluate`` scores, decided once before anything is scored.

A plan holds the split (``WellSource`` and the split opened as whole trajectories), the protocol (history, stride,
rollout length and starts, trajectories), the first trajectory's physics (``Context``: step, grid, scalars,
slots) and the physics of every residual the evaluation computes, the label-free scorecard's and the figures' alike
(``well_upao.physics.discretisation.Physics``): a run that stores its own (UPAO runs) is scored with it, every other
row with the dataset's UPAO default, resolved on the evaluated frames (an ``auto`` part chosen as the UPAO trainer
chooses it), with the residual floor of those frames (``default_physics``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from well_upao.data.source import WellSource
from well_upao.harness.datamodule import WellUpaoDataset
from well_upao.harness.names import register_dataset_names
from well_upao.harness.samples import Context, file_time_axis, sample_context
from well_upao.models.na_transformer import T_IN
from well_upao.physics.discretisation import EVALUATION_SAMPLE, Physics, PhysicsRequest, physics_of
from well_upao.physics.pdes import PDE
from well_upao.predict.predictors import Predictor
from well_upao.predict.windows import LONGEST_WINDOW_END

#: the history of an evaluation whose rows do not say (classical rows only): the paper's T_in
DEFAULT_HISTORY = T_IN
#: the reason every label-free cell gives when the evaluated frames have no residual floor (its note, under the
#: table and in the JSON's ``residual_floor``, says why)
UNSCORED_NO_FLOOR = "no residual floor of these frames: see the note under the table"
#: the reason of every physics cell (label-free scores, residual floor) of a dataset without a PDE
NO_PDE = "no PDE registered: pass --imports MODULE that registers one"


class EvaluationError(ValueError):
    """Bad evaluation request (missing split, incompatible checkpoint, trajectory too short, ...)."""


@dataclass
class EvaluationRequest:
    """What to evaluate. ``history``: the frames before each target (``None``: the longest history of the rows,
    else ``DEFAULT_HISTORY``); every row is scored on the same target frames."""

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
    figures: bool = True  # False: the JSON without the PNG figures
    progress: bool = True
    #: where the model rows' networks run: ``cpu``, ``cuda`` (``cuda:N``) or ``auto`` (CUDA when present); inputs,
    #: scores and the classical rows stay on the CPU
    device: str = "auto"

    def check(self) -> None:
        """Refuse numbers no evaluation can run with (``EvaluationError``)."""
        too_short = self.history is not None and self.history < 1
        if too_short or self.stride < 1 or self.rollout_steps < 0 or self.rollout_starts < 1:
            raise EvaluationError("history, stride and rollout starts must be >= 1, rollout steps >= 0")


@dataclass
class EvaluationPlan:
    """What is scored, on what, and with which discretisation (see the module docstring)."""

    source: WellSource
    #: the split opened as whole trajectories (``open_split``)
    opened: WellUpaoDataset
    history: int
    stride: int
    rollout_steps: int
    rollout_starts: int
    max_trajectories: int | None
    #: the first trajectory's physics (its grid picks the solver rows)
    context: Context
    #: the residuals' physics of rows without their own (classical rows, runs that record none): the dataset's
    #: default, resolved on the evaluated frames (``well_upao.physics.discretisation``); no PDE: it says why
    physics: Physics
    #: the residual floor of the evaluated frames (the JSON's ``residual_floor``; ``note`` where there is none)
    floor: dict
    #: why the label-free scorecard is not computed (``None``: it is)
    unscored: str | None
    #: each run's selection facts, by its row's name (``harness.runs.RunCheckpoint.selection``)
    selections: Mapping[str, dict] = field(default_factory=dict)
    #: the labels of the transferred models, each evaluated on every channel assignment (the best one is kept)
    transfer_labels: tuple[str, ...] = ()
    #: the row the solver ladder's matched rows are picked for (``EvaluationRequest.match_solver``)
    match_solver: str | None = None

    @property
    def pde(self) -> PDE | None:
        return self.physics.pde

    @property
    def scored(self) -> bool:
        """Whether the label-free scorecard is computed."""
        return self.unscored is None and self.physics.available

    def physics_of(self, predictor: Predictor) -> Physics:
        """The physics a row's residuals are scored with: its run's (a UPAO run's checkpoint stores it), else the
        plan's default."""
        own = predictor.physics
        return own if own is not None and own.available else self.physics

    def residuals_note(self, predictor: Predictor) -> str | None:
        """A row's note when its residuals use another discretisation than the plan's default (``None`` else)."""
        own = self.physics_of(predictor)
        if own is self.physics or own.same_choice(self.physics):
            return None
        return f"{own.discretisation} (its run's: {own.reason})"


def plan_evaluation(
    request: EvaluationRequest,
    source: WellSource,
    rows: Sequence[Predictor],
    selections: Mapping[str, dict] | None = None,
    transfer_labels: Sequence[str] = (),
) -> EvaluationPlan:
    """The plan of ``request`` on ``source`` for the model ``rows`` (their histories set the default history);
    ``selections``: the runs' selection facts by row name; ``transfer_labels``: the transferred models' labels."""
    history = request.history or max((p.history for p in rows if p.history), default=DEFAULT_HISTORY)
    opened = open_split(source, history, request.stride)
    if len(opened) == 0:
        raise EvaluationError(f"split {source.split!r} of {source.name!r} has no trajectory")
    context = sample_context(
        opened[0], list(opened.metadata.constant_scalar_names), source.channel_slots, file_time_axis(source)
    )
    physics, floor = default_physics(source, request.stride)
    unscored = None
    if "note" in floor:
        unscored = NO_PDE if physics.pde is None else UNSCORED_NO_FLOOR
    return EvaluationPlan(
        source,
        opened,
        history,
        request.stride,
        request.rollout_steps,
        request.rollout_starts,
        request.max_trajectories,
        context,
        physics,
        floor,
        unscored,
        dict(selections or {}),
        tuple(transfer_labels),
        request.match_solver,
    )


def default_physics(source: WellSource, stride: int) -> tuple[Physics, dict]:
    """The evaluation's default physics and the residual floor of the evaluated frames at the evaluated stride
    (``well_upao.physics.discretisation.physics_of`` with the dataset's UPAO defaults on ``EVALUATION_SAMPLE`` of the
    evaluated frames, an ``auto`` part chosen as the UPAO trainer chooses it; a survey of every combination for the
    report's lowest). Frames too few at this stride, or a parameter the files lack, give the floor a ``note`` and
    the default settings with an ``auto`` part replaced by the global default (the request's ``fallback``)."""
    request = PhysicsRequest(survey=True, sample=EVALUATION_SAMPLE, fallback=True, no_pde=no_pde(source.name))
    physics = physics_of(source, request, stride)
    if physics.note is not None:
        return physics, {"note": physics.note}
    return physics, floor_summary(physics)


def floor_summary(physics: Physics) -> dict:
    """The JSON's ``residual_floor``: the row of the default discretisation (``chosen_by: auto`` where the dataset's
    default is ``auto``: its floors are those the choice was made from) and the lowest row of the survey."""

    def entry(row) -> dict:
        return {"derivative": row.derivative, "scheme": row.scheme, "residuals": row.residuals}

    summary = {"lowest": entry(min(physics.rows, key=lambda r: r.mean))}
    default = next(r for r in physics.rows if r.discretisation == (physics.derivative, physics.scheme))
    summary["default"] = entry(default) | ({"chosen_by": "auto"} if physics.floors else {})
    return summary


def open_split(source: WellSource, history: int, stride: int) -> WellUpaoDataset:
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


def no_pde(dataset: str) -> str:
    """The floor's note for a dataset without a PDE (nothing to compute a residual with)."""
    return (
        f"no PDE is registered for dataset {dataset!r}: the physics columns are n/a (register its DatasetSpec with "
        "a pde, in a module you pass with --imports MODULE)"
    )
