"""The plan of an evaluation: what ``well-upao evaluate`` scores, decided once before anything is scored.

A plan holds the split (``WellSource`` and the split opened as whole trajectories), the protocol (history, stride,
rollout length and starts, trajectories), the first trajectory's physics (:class:`Context`: step, grid, scalars,
slots), the dataset's PDE (resolved once, ``None`` when none is registered) and the discretisation of every residual
the evaluation computes, the label-free scorecard's and the figures' alike: the dataset's UPAO default, an ``auto``
part chosen by ``well_upao.physics.floor.choose_discretisation`` on the evaluated frames as the UPAO trainer
chooses it, with the residual floor of those frames (:func:`residual_floor_summary`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from well_upao.axes import UnevenAxisError, UniformAxis, window_steps
from well_upao.data.source import WellSource
from well_upao.evaluate.predictors import Context, Predictor
from well_upao.evaluate.windows import LONGEST_WINDOW_END
from well_upao.harness.datamodule import WellUpaoDataset
from well_upao.harness.names import register_dataset_names
from well_upao.harness.samples import grid_of, named_scalars
from well_upao.models.na_transformer import T_IN
from well_upao.physics.bound import BoundResidual
from well_upao.physics.floor import best_row, choose_discretisation, floor_rows
from well_upao.physics.objective import DEFAULT_DERIVATIVE, DEFAULT_SCHEME
from well_upao.physics.pdes import PDE, find_pde_for_dataset

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

    def check(self) -> None:
        """Refuse numbers no evaluation can run with (:class:`EvaluationError`)."""
        too_short = self.history is not None and self.history < 1
        if too_short or self.stride < 1 or self.rollout_steps < 0 or self.rollout_starts < 1:
            raise EvaluationError("history, stride and rollout starts must be >= 1, rollout steps >= 0")


@dataclass
class EvaluationPlan:
    """What is scored, on what, and with which discretisation (see the module docstring)."""

    source: WellSource
    #: the split opened as whole trajectories (:func:`open_split`)
    opened: WellUpaoDataset
    history: int
    stride: int
    rollout_steps: int
    rollout_starts: int
    max_trajectories: int | None
    #: the first trajectory's physics (its grid picks the solver rows)
    context: Context
    pde: PDE | None
    #: the derivative and time scheme of every residual of this evaluation (``None`` without a PDE)
    derivative: str | None
    scheme: str | None
    #: the residual floor of the evaluated frames (the JSON's ``residual_floor``; ``note`` where there is none)
    floor: dict
    #: why the label-free scorecard is not computed (``None``: it is)
    unscored: str | None

    @property
    def scoring(self) -> tuple[PDE, str, str] | None:
        """``(pde, derivative, scheme)`` of the label-free scorecard, ``None`` when it is not computed."""
        if self.unscored is not None or self.pde is None:
            return None
        return self.pde, self.derivative, self.scheme

    def bind(self, context: Context) -> BoundResidual | None:
        """The plan's residual on one trajectory (its grid and scalars, in float64); ``None`` without a PDE."""
        if self.pde is None:
            return None
        scalars = {k: v.double() for k, v in context.scalars.items()}
        return BoundResidual.of(self.pde, context.grid, self.derivative, self.scheme, scalars)


def plan_evaluation(request: EvaluationRequest, source: WellSource, rows: Sequence[Predictor]) -> EvaluationPlan:
    """The plan of ``request`` on ``source`` for the model ``rows`` (their histories set the default history)."""
    history = request.history or max((p.history for p in rows if p.history), default=DEFAULT_HISTORY)
    opened = open_split(source, history, request.stride)
    if len(opened) == 0:
        raise EvaluationError(f"split {source.split!r} of {source.name!r} has no trajectory")
    context = sample_context(
        opened[0], list(opened.metadata.constant_scalar_names), source.channel_slots, file_time_axis(source)
    )
    pde = find_pde_for_dataset(source.name)
    floor = residual_floor_summary(source, request.stride, pde) if pde is not None else {"note": no_pde(source.name)}
    derivative, scheme = discretisation_of(source, floor) if pde is not None else (None, None)
    return EvaluationPlan(
        source, opened, history, request.stride, request.rollout_steps, request.rollout_starts,
        request.max_trajectories, context, pde, derivative, scheme, floor,
        (NO_PDE if pde is None else UNSCORED_NO_FLOOR) if "note" in floor else None,
    )  # fmt: skip


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


def residual_floor_summary(source: WellSource, stride: int, pde: PDE) -> dict:
    """The residual floor of the evaluated frames at the evaluated stride (``well_upao.physics.floor``): the
    dataset's default derivative and time scheme (an ``auto`` part chosen as the UPAO trainer chooses it), and the
    lowest combination (a few trajectories and frames). Frames too few at this stride give a ``note`` instead."""
    try:
        rows = floor_rows(source.observed(stride, max_trajectories=2, max_frames=8), stride, pde)
    except (ValueError, KeyError) as error:  # too few frames at this stride; a parameter the files lack
        return {"note": str(error).strip("'\"")}
    derivative, scheme = dataset_defaults(source)
    default = choose_discretisation(rows, derivative, scheme)

    def entry(row) -> dict:
        return {"derivative": row.derivative, "scheme": row.scheme, "residuals": row.residuals}

    summary = {"lowest": entry(best_row(rows, stride))}
    if default is not None:
        summary["default"] = entry(default) | ({"chosen_by": "auto"} if "auto" in (derivative, scheme) else {})
    return summary


def dataset_defaults(source: WellSource) -> tuple[str, str]:
    """The dataset's UPAO derivative and time scheme (``DatasetSpec.defaults``, else the global defaults)."""
    return source.defaults.get("derivative", DEFAULT_DERIVATIVE), source.defaults.get("time_scheme", DEFAULT_SCHEME)


def discretisation_of(source: WellSource, floor: dict) -> tuple[str, str]:
    """``(derivative, scheme)`` of the evaluation's residuals: the dataset's UPAO default as the residual floor
    chose it (:func:`residual_floor_summary`); without a floor, the default with an ``auto`` part replaced by the
    global default."""
    default = floor.get("default")
    if default is not None:
        return default["derivative"], default["scheme"]
    derivative, scheme = dataset_defaults(source)
    return (
        DEFAULT_DERIVATIVE if derivative == "auto" else derivative,
        DEFAULT_SCHEME if scheme == "auto" else scheme,
    )


def no_pde(dataset: str) -> str:
    """The floor's note for a dataset without a PDE (nothing to compute a residual with)."""
    return (
        f"no PDE is registered for dataset {dataset!r}: the physics columns are n/a (register its DatasetSpec with "
        "a pde, in a module you pass with --imports MODULE)"
    )
