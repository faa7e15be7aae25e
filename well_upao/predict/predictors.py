"""Everything ``well-upao evaluate`` and ``well-upao forecast`` can compare, behind one interface: next frame from a
history window.

``predict(window, context) -> next frame`` with ``window`` of shape ``(B, T, *space, C)`` in the dataset's
channels and physical units. Classical baselines are first-class entries (INTERFACES.md section 7):

* one row per entry of the classical table (``well_upao.predict.classical``: persistence, ``extrap1``, ``extrap2``);
* ``solver``: one step of a numerical solver of the dataset's PDE (``well_upao.predict.solver``);
* model rows: a well-upao backbone, or any model of the Well's harness, loaded from a run or a checkpoint.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

import torch

from well_upao.data.slot_inventory import SLOT_NAMES
from well_upao.data.source import WellSource
from well_upao.harness.normalization import ModelSpace, model_space_for
from well_upao.harness.runs import checkpoint_file, default_row_name, initial_weights, run_history
from well_upao.harness.samples import Context, one_frame_prediction
from well_upao.models.assembly import model_from_payload
from well_upao.models.checkpoint import CheckpointError, read_checkpoint
from well_upao.models.kinds import ModelKind, is_sequence_model, model_kind
from well_upao.models.lora import adapter_layers, merge_adapters
from well_upao.physics.discretisation import Physics
from well_upao.physics.pdes import PDE
from well_upao.physics.resample import fourier_resample
from well_upao.physics.stencils import Grid
from well_upao.predict.classical import CLASSICAL_PRIORS, ClassicalPrior, classical_prior
from well_upao.predict.solver import PDESolver, supports


@dataclass
class Predictor:
    """``history``: the frames the predictor reads (the last ones of the window it is given; ``None``: any)."""

    name: str
    kind: str  # "classical", "solver", "model"
    seconds: float = 0.0
    calls: int = 0
    notes: dict = field(default_factory=dict)
    history: int | None = None
    #: where a model row's network runs (``place``; ``None``: where it was built, the CPU)
    device: torch.device | None = None
    #: the physics its run trained with (a UPAO run's checkpoint stores it): its residuals are scored with it;
    #: ``None``: the evaluation's default
    physics: Physics | None = None

    def predict(self, window: torch.Tensor, context: Context) -> torch.Tensor:
        """The next frame; timed (a model on a GPU included: its prediction is copied back, which waits for it)."""
        start = time.perf_counter()
        out = self._predict(window, context)
        self.seconds += time.perf_counter() - start
        self.calls += window.shape[0]
        return out

    def place(self, device: str | torch.device) -> None:
        """Run this row's network on ``device``: its inputs are copied there and its predictions back (so scores,
        residuals and the classical rows stay on the CPU). Rows without a network ignore it."""
        model = getattr(self, "model", None)
        if isinstance(model, torch.nn.Module):
            self.device = torch.device(device)
            self.model = model.to(self.device)

    def _on_device(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor if self.device is None else tensor.to(self.device)

    def can_start_from(self, frames: int) -> bool:
        """Whether it predicts from a window of ``frames`` frames (a backtest starts from 3: ``predict.evidence``)."""
        return True

    @property
    def reads_last_frame_only(self) -> bool:
        """Whether its next frame is a function of the window's last frame alone (a one-step map: persistence, the
        solver), so that its prediction from any window ending at a frame is its prediction from every other."""
        return False

    def _predict(self, window: torch.Tensor, context: Context) -> torch.Tensor:
        raise NotImplementedError

    @property
    def seconds_per_prediction(self) -> float:
        return self.seconds / max(self.calls, 1)


class ClassicalRow(Predictor):
    """A classical predictor's row: its table entry ``prior`` (``well_upao.predict.classical``) from the window."""

    def __init__(self, prior: ClassicalPrior):
        super().__init__(prior.name, "classical")
        self.prior = prior

    @property
    def reads_last_frame_only(self) -> bool:
        return self.prior.order == 0

    def _predict(self, window, context):
        return self.prior.next_frame(window)


def classical_row(name: str) -> ClassicalRow:
    """The row of the classical table's entry ``name``."""
    return ClassicalRow(classical_prior(name))


class SolverStep(Predictor):
    """One step of the dataset's PDE from the last frame (``well_upao.predict.solver``).

    ``substeps=None``: step doubling until the result converges (the ``solver`` row, the accuracy limit);
    ``substeps=s``: ``s`` RK4 steps, no error control; ``coarsen=f`` (periodic grids): stepped on the grid
    coarsened ``f`` times by Fourier truncation and prolonged back (``well_upao.physics.resample``); ``dealias``:
    the refinement of the grid its right-hand side is evaluated on (``well_upao.predict.solver``; 1: none; default
    the PDE's ``solver_dealias``)."""

    def __init__(
        self,
        pde: PDE,
        substeps: int | None = None,
        coarsen: int = 1,
        name: str = "solver",
        dealias: float | None = None,
    ):
        super().__init__(name, "solver")
        self.pde, self.substeps, self.coarsen, self.dealias = pde, substeps, int(coarsen), dealias
        if substeps is not None:
            self.notes.update(substeps=int(substeps), coarsen=self.coarsen)
        self._solvers: dict = {}

    def _solver(self, grid: Grid):
        key = (grid.spacing, grid.periodic)
        if key not in self._solvers:
            self._solvers[key] = PDESolver(self.pde, grid, dealias=self.dealias)
        return self._solvers[key]

    def _problem(self, window, context) -> tuple[torch.Tensor, dict, dict, Grid]:
        """The last frame (double), the PDE's state read from it (coarsened where asked), its parameters and the
        grid the solver steps on."""
        last = window[:, -1].double()
        slots = {SLOT_NAMES[s]: last[..., i] for i, s in enumerate(context.channel_slots)}
        state = {name: slots[name] for name in self.pde.variables}
        params = self.pde.resolve_parameters({k: v.double() for k, v in context.scalars.items()})
        grid, shape = context.grid, tuple(last.shape[1:-1])
        if self.coarsen > 1:
            grid = Grid(tuple(h * self.coarsen for h in grid.spacing), grid.periodic)
            coarse = tuple(n // self.coarsen for n in shape)
            state = {name: fourier_resample(field, coarse) for name, field in state.items()}
        return last, state, params, grid

    @property
    def reads_last_frame_only(self) -> bool:
        return True

    def substeps_needed(self, window: torch.Tensor, context: Context, cap: int) -> int | None:
        """The RK4 sub-steps step doubling needs for the next frame of ``window`` (``None``: more than ``cap``);
        deterministic, unlike its seconds (``PDESolver.substeps_needed``)."""
        _, state, params, grid = self._problem(window, context)
        return self._solver(grid).substeps_needed(state, params, context.dt.double(), cap)

    def _predict(self, window, context):
        last, state, params, grid = self._problem(window, context)
        shape = tuple(last.shape[1:-1])
        solver = self._solver(grid)
        if self.substeps is None:
            new, substeps = solver.step(state, params, context.dt.double())
            self.notes["substeps"] = max(self.notes.get("substeps", 0), substeps)
        else:
            new = solver.advance(state, params, context.dt.double(), self.substeps)
        if self.coarsen > 1:
            new = {name: fourier_resample(field, shape) for name, field in new.items()}
        out = last.clone()
        for i, s in enumerate(context.channel_slots):
            name = SLOT_NAMES[s]
            if name in new:
                out[..., i] = new[name]
        return out.to(window.dtype)


class BackboneModel(Predictor):
    """A well-upao backbone (``forward_sequence`` on the 18 slots), fed in the units it was trained in
    (``space``, ``well_upao.harness.normalization``)."""

    def __init__(self, name: str, model: torch.nn.Module, space: ModelSpace | None = None, history: int | None = None):
        super().__init__(name, "model", history=history)
        self.model, self.space = model.eval(), space or ModelSpace()

    @torch.no_grad()
    def _predict(self, window, context):
        window = window if self.history is None else window[:, -self.history :]
        slotted = self.model.to_slots(self.space.to_model(window))
        predicted = self.model.forward_sequence(self._on_device(slotted))[:, -1].to(slotted.device)
        return self.space.to_physical(self.model.from_slots(predicted))


def kept_prior(predictor: Predictor) -> ClassicalPrior | None:
    """The classical prior a backbone row predicts with when its run's ``best.pt`` kept one (the guard found training
    did not beat it; ``NATransformer.set_prior``): the row is then that prior's extrapolation of the window (in the
    model's units, which an extrapolation carries over unchanged: its weights sum to one), and its evidence is the
    prior's own, from every start (``predict.backtests``), not the two backtests a network gets; a row served fewer
    frames than the prior reads extrapolates with the degree they allow (``extrapolate_history``), and that is its
    prior. ``None`` for a network, a classical row or the solver."""
    if not isinstance(predictor, BackboneModel | SlotModel):
        return None
    order = int(getattr(predictor.model, "_prior", -1))
    if order < 0:
        return None
    if predictor.history is not None:  # a window of H frames is extrapolated with degree at most H - 1
        order = min(order, predictor.history - 1)
    return next((prior for prior in CLASSICAL_PRIORS.values() if prior.order == order), None)


class SlotModel(Predictor):
    """A well-upao backbone, or a one-frame slot model (``model_kind`` ``slot_frame``), on frames already in the 18
    slots, with the dataset's slot mask (a mixture)."""

    def __init__(self, name: str, model: torch.nn.Module, mask: torch.Tensor):
        super().__init__(name, "model")
        self.model, self.mask = model.eval(), mask

    @torch.no_grad()
    def _predict(self, window, context):
        inputs, mask = self._on_device(window), self._on_device(self.mask)
        if model_kind(self.model) is ModelKind.SLOT_FRAME:
            return self.model(inputs, mask).to(window.device)
        return self.model.forward_sequence(inputs, mask)[:, -1].to(window.device)


class HarnessModel(Predictor):
    """Any model of the Well's harness (``model(x)`` on formatted histories, e.g. the FNO baselines), fed its
    last ``history`` frames in the units it was trained in (``space``)."""

    def __init__(
        self, name: str, model: torch.nn.Module, formatter: str, history: int, space: ModelSpace | None = None
    ):
        super().__init__(name, "model", history=history)
        self.model, self.formatter = model.eval(), formatter
        self.space = space or ModelSpace()
        #: constant fields ``(*space, C_const)`` for calls without a context that carries them
        self.constant_fields: torch.Tensor | None = None

    def can_start_from(self, frames: int) -> bool:
        """A one-frame model reads exactly its ``history`` frames."""
        return frames >= self.history

    @torch.no_grad()
    def _predict(self, window, context):
        inputs = self.space.to_model(window[:, -self.history :])
        constants = context.constant_fields if context is not None else None
        constants = constants if constants is not None else self.constant_fields
        if constants is not None:  # the model's input holds them after the frames (the Well's formatters)
            constants = self._on_device(self.space.constants_to_model(constants.expand(len(window), *constants.shape)))
        predicted = one_frame_prediction(self.model, self._on_device(inputs), self.formatter, constants)
        return self.space.to_physical(predicted.to(inputs.device))


def resolve_device(device: str) -> torch.device:
    """``auto``: the first CUDA device when one is present, else the CPU; ``cpu``, ``cuda``, ``cuda:N`` as given; a
    device this machine lacks is refused (``ValueError``, with the fix)."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except RuntimeError as error:
        raise ValueError(f"--device {device!r} is not a device: use auto, cpu, cuda or cuda:N") from error
    if resolved.type not in ("cpu", "cuda"):
        raise ValueError(f"--device {device!r}: models run on cpu or cuda")
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"--device {device}: this machine has no CUDA device (use cpu or auto)")
    if resolved.type == "cuda" and resolved.index is not None and resolved.index >= torch.cuda.device_count():
        raise ValueError(f"--device {device}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    return resolved


def place_rows(rows: Sequence[Predictor], device: str) -> None:
    """Put the model rows' networks on ``device`` (``resolve_device``); rows on a GPU say so in their notes (inputs,
    scores and the classical rows stay on the CPU)."""
    resolved = resolve_device(device)
    if resolved.type == "cpu":
        return
    name = torch.cuda.get_device_name(resolved)
    for row in rows:
        row.place(resolved)
        if row.device is not None:
            row.notes["device"] = f"{resolved} ({name})"


def classical_predictors(pde: PDE | None, grid: Grid | None, solver: bool = True) -> list[Predictor]:
    predictors: list[Predictor] = [ClassicalRow(prior) for prior in CLASSICAL_PRIORS.values()]
    if solver and pde is not None and grid is not None and supports(pde, grid):
        predictors.append(SolverStep(pde))
    return predictors


def load_predictor(
    path: str | Path, source: WellSource, name: str | None = None, payload: dict | None = None
) -> Predictor:
    """A trained model from a well-upao checkpoint file or a run folder (``<run>/checkpoints/best.pt``), for the
    dataset of ``source``: fed the history length it was trained with, in the units it was trained in (its run's
    ``data.use_normalization``, ``well_upao.harness.normalization``).

    Its row is called ``name``, by default ``<experiment>/<n>`` for a run folder and the file's stem otherwise.
    Its ``notes`` name the training protocol the run recorded (``protocol``: ``paper``, ``well``; ``unrecorded`` for
    checkpoints written before runs recorded it) and the history it reads.
    ``payload``: the checkpoint already read (``read_checkpoint``), so evaluation reads each file once.

    LoRA / NSLoRA adapters are folded into their linear layers first (``W0 + DeltaW``,
    ``well_upao.models.lora.merge_adapters``): NSLoRA's Newton-Schulz runs once, not at every prediction.
    """
    path = checkpoint_file(path)
    payload = payload if payload is not None else read_checkpoint(path)
    model = model_from_payload(payload, path)
    merged = len(adapter_layers(model))
    if merged:
        merge_adapters(model)
    name = default_row_name(path) if name is None else name
    predictor = _model_predictor(path, payload, model, name, source)
    if merged:
        predictor.notes["adapters"] = f"{merged} merged"
    train = payload.get("train") or {}
    if train.get("global_step"):
        predictor.notes["training"] = f"{train.get('epoch', 0)} epochs, {train['global_step']} steps"
    predictor.notes["initial weights"] = initial_weights(payload)
    predictor.notes["protocol"] = train.get("protocol") or "unrecorded"
    predictor.notes["history"] = predictor.history
    if train.get("physics"):  # a UPAO run's: its rows are scored with the discretisation it trained with
        predictor.physics = Physics.from_record(train["physics"])
    if predictor.space.normalized:
        predictor.notes["normalization"] = predictor.space.describe()
    return predictor


def _model_predictor(path, payload, model, name, source: WellSource) -> Predictor:
    config = payload["model"]["config"]
    channels = source.channels
    history = run_history(payload)
    space = model_space_for(source, (payload.get("train") or {}).get("data"))
    if is_sequence_model(model):
        expected = source.channel_slots
        if config.get("channel_slots") != expected:
            raise CheckpointError(
                f"{path} was trained on {config.get('dataset_name')!r} with slots {config.get('channel_slots')}; "
                f"{source.name!r} has slots {expected} ({', '.join(channels)})"
            )
        return BackboneModel(
            name, model, space, history=min(history or config["n_steps_input"], config["n_steps_input"])
        )
    harness = payload["model"].get("harness_args", {})
    if harness.get("dim_out") not in (None, len(channels)) or payload["model"].get("dataset") not in (
        None,
        source.name,
    ):
        raise CheckpointError(
            f"{path} was trained on {payload['model'].get('dataset')!r} with {harness.get('dim_out')} channels; "
            f"{source.name!r} has {len(channels)}"
        )
    if history is None:
        raise CheckpointError(f"{path} does not say how many history frames its model takes")
    return HarnessModel(name, model, payload["model"].get("formatter", "channels_first_default"), history, space)


class ChannelSubsetModel(HarnessModel):
    """A one-frame model trained on a dataset with ``C_src`` channels, evaluated zero-shot on one with ``C_tgt <=
    C_src``: target channel ``j`` enters as source channel ``assignment[j]`` (the other source channels are zero)
    and is read back from that output channel. Equivalent to the paper's channel re-shaping of the input and output
    projections (zero input columns, selected output rows) for one ``C_tgt``-subset of the source channels."""

    def __init__(self, name: str, model: torch.nn.Module, formatter: str, history: int, c_src: int, assignment):
        super().__init__(name, model, formatter, history)
        self.c_src, self.assignment = int(c_src), tuple(int(a) for a in assignment)
        self.notes["source channels"] = ",".join(map(str, self.assignment))

    @torch.no_grad()
    def _predict(self, window, context):
        source = window.new_zeros((*window.shape[:-1], self.c_src))
        source[..., list(self.assignment)] = window
        return super()._predict(source, context)[..., list(self.assignment)]


def transfer_predictors(path: str | Path, source: WellSource, name: str) -> list[Predictor]:
    """Zero-shot rows of a one-frame model of another dataset on ``source``'s: one per ``C_tgt``-subset of its
    ``C_src`` channels (kept in order), named ``<name> [source channels i,j]`` (``kept_assignments`` keeps the
    best), each fed the history its run trained with. ``C_src < C_tgt`` has no zero-shot row (the paper's "---");
    a model trained on normalised fields has none either (its normalisation belongs to the other dataset)."""
    path = checkpoint_file(path)
    payload = read_checkpoint(path)
    model = model_from_payload(payload, path)
    if is_sequence_model(model):
        raise CheckpointError(f"{path} is a well-upao backbone: it reads every dataset through its slots, evaluate it")
    if ((payload.get("train") or {}).get("data") or {}).get("use_normalization"):
        raise CheckpointError(f"{path} was trained on normalised fields of another dataset: no zero-shot transfer")
    harness = payload["model"].get("harness_args") or {}
    c_src, c_tgt = int(harness.get("dim_out") or 0), len(source.channels)
    if c_src < c_tgt:
        raise CheckpointError(
            f"{path} writes {c_src} channels, {source.name!r} has {c_tgt}: no zero-shot transfer (the paper's ---)"
        )
    formatter = payload["model"].get("formatter", "channels_first_default")
    history = run_history(payload)
    return [
        ChannelSubsetModel(f"{name} [source channels {','.join(map(str, s))}]", model, formatter, history, c_src, s)
        for s in combinations(range(c_src), c_tgt)
    ]


def slot_fields_of(frame: torch.Tensor, channel_slots: list[int]) -> dict[str, torch.Tensor]:
    """``{slot name: (..., *space)}`` of a dataset-channel frame ``(..., *space, C)``."""
    return {SLOT_NAMES[s]: frame[..., i] for i, s in enumerate(channel_slots)}


__all__ = [
    "ClassicalRow",
    "Context",
    "Predictor",
    "classical_predictors",
    "classical_row",
    "load_predictor",
    "slot_fields_of",
    "transfer_predictors",
]
