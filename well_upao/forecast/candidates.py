"""The predictors a forecast chooses from: the classical table's rows, the solver step where the input's PDE is
registered and supported, and the model of ``SOURCE``.

``SOURCE`` is a run folder (the harness's ``experiments/<run>/<n>``: its ``best.pt``, which may keep a classical
prior: then that prior is the model row's prediction), a well-upao checkpoint file, a shipped backbone by name
(``shipped``, ``shipped_extrap2``: zero-shot on the input's slots), or ``classical`` (no model row).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from well_upao.data.source import WellSource
from well_upao.forecast.inputs import ForecastError, ForecastInput
from well_upao.harness.runs import RunCheckpoint
from well_upao.models.assembly import SHIPPED_BACKBONES, model_from_payload, shipped_backbone_path
from well_upao.models.checkpoint import CheckpointError, read_checkpoint
from well_upao.models.kinds import is_sequence_model
from well_upao.physics.discretisation import pde_for_dataset
from well_upao.physics.pdes import PDE
from well_upao.predict.predictors import BackboneModel, Predictor, classical_predictors, load_predictor

#: ``SOURCE`` for the classical candidates alone
CLASSICAL_ONLY = "classical"


@dataclass
class Candidates:
    """The predictors a forecast chooses from (``rows``), the model row's name (``None`` without one), the run it came
    from (its settings: dataset, stride, history; empty for a backbone or ``classical``) and the input's PDE."""

    rows: list[Predictor]
    model: str | None
    run: dict
    pde: PDE | None
    #: what the notes say of the candidates: one left out and why, a run's row that predicts with a kept prior
    notes: list[str] = field(default_factory=list)
    #: whether the solver step was left out for its cost (``--solver-budget``), or not asked for (``--no-solver``)
    solver_over_budget: bool = False
    solver_asked: bool = True

    def named(self, name: str) -> Predictor:
        """The row ``name`` (``model``: the model row), refused with the names there are."""
        wanted = self.model if name == "model" and self.model is not None else name
        for row in self.rows:
            if row.name == wanted:
                return row
        names = ", ".join(r.name for r in self.rows) + (", model" if self.model else "")
        raise ForecastError(f"--predictor {name!r} is not a candidate here; candidates: {names}")


def run_settings(source: str) -> tuple[RunCheckpoint | None, dict]:
    """The run or checkpoint ``source`` names, read once (this imports its ``data.imports``), and what it says of
    its data (``RunCheckpoint.settings``); ``(None, {})`` for a backbone name or ``classical``."""
    if source == CLASSICAL_ONLY or source in SHIPPED_BACKBONES:
        return None, {}
    if not Path(source).exists():
        raise ForecastError(
            f"SOURCE {source!r} is neither a run folder, a checkpoint file, a shipped backbone "
            f"({', '.join(SHIPPED_BACKBONES)}) nor {CLASSICAL_ONLY!r}"
        )
    try:
        checkpoint = RunCheckpoint.read(None, source)
    except (CheckpointError, FileNotFoundError) as error:
        raise ForecastError(f"SOURCE {source}: {error}") from error
    return checkpoint, checkpoint.settings


def model_row(source: str, checkpoint: RunCheckpoint | None, given: ForecastInput) -> Predictor | None:
    """The model row of ``source`` on the input (``None`` for ``classical``). A run's model is fed in the units it
    trained in (its dataset's ``stats.yaml`` where it trained on normalised fields) and must have trained on the
    input's channels."""
    if source == CLASSICAL_ONLY:
        return None
    if checkpoint is None:  # a shipped backbone, zero-shot on the input's slots
        model = model_from_payload(read_checkpoint(shipped_backbone_path(source)), source)
        model.channel_slots = list(given.channel_slots)
        row = BackboneModel(source, model, history=min(given.history, model.config["n_steps_input"]))
        row.notes["initial weights"] = f"shipped backbone {source}, zero-shot"
        return row
    data = (checkpoint.payload.get("train") or {}).get("data") or {}
    trained = trained_source(data, checkpoint.path)
    if trained is not None and list(trained.channels) != list(given.channels):
        raise ForecastError(
            f"{checkpoint.path} was trained on channels {trained.channels}; the input has {given.channels}: forecast "
            "a file of the run's dataset, or give the run trained on this one"
        )
    if trained is not None and tuple(trained.layout.resolution) != tuple(given.layout.resolution):
        raise ForecastError(
            f"{checkpoint.path} was trained on a {'x'.join(map(str, trained.layout.resolution))} grid; the input's "
            f"is {'x'.join(map(str, given.layout.resolution))}: forecast on the run's grid"
        )
    try:
        row = load_predictor(checkpoint.path, trained or _source_of(given), payload=checkpoint.payload)
    except CheckpointError as error:
        raise ForecastError(str(error)) from error
    if not is_sequence_model(row.model) and row.history is not None and row.history > given.history:
        raise ForecastError(f"{checkpoint.path} reads {row.history} frames: --history must be at least that")
    return row


def trained_source(data: dict, path: Path) -> WellSource | None:
    """The data a run trained on, where its checkpoint names it and its folder is still there (its layout and, where
    the run trained on normalised fields, its ``stats.yaml`` give the model's units); ``None`` where it is not known.
    A run on normalised fields whose data folder is gone cannot be fed in its units: refused."""
    if not data.get("well_base_path"):
        return None
    source = WellSource.from_settings(data, "train")
    try:
        source.layout  # noqa: B018 (reads the first file)
    except FileNotFoundError as error:
        if data.get("use_normalization"):
            raise ForecastError(
                f"{path} trained on normalised fields of {source.directory}, which is gone: its model's units come "
                "from that dataset's stats.yaml; put the dataset back where the run found it"
            ) from error
        return None
    return source


def _source_of(given: ForecastInput) -> WellSource:
    """A source standing for the input where the run's own data folder is not known (a checkpoint file alone)."""
    return WellSource(given.path.parent, given.dataset)


def candidates(source: str, given: ForecastInput, solver: bool = True) -> Candidates:
    """Every candidate of a forecast of ``given`` from ``source`` (see the module docstring)."""
    checkpoint, settings = run_settings(source)
    row = model_row(source, checkpoint, given)
    pde = pde_for_dataset(given.dataset, required=False)
    rows = classical_predictors(pde, given.grid, solver=solver) + ([row] if row is not None else [])
    found = Candidates(rows, None if row is None else row.name, settings, pde, solver_asked=solver)
    selection = checkpoint.selection if checkpoint is not None else {}
    if selection.get("kept_prior"):
        found.notes.append(
            f"the run's best.pt keeps the prior {selection.get('kept_prior_name')} (its guard found training did not "
            f"beat it: {selection.get('kept_prior_reason')}): the model row {row.name} predicts with it"
        )
    return found
