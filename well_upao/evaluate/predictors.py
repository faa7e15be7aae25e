"""Everything ``well-upao evaluate`` can compare, behind one interface: next frame from a history window.

``predict(window, context) -> next frame`` with ``window`` of shape ``(B, T, *space, C)`` in the dataset's
channels and physical units. Classical baselines are first-class entries (INTERFACES.md section 7):

* ``persistence``: ``u_{t+1} = u_t``
* ``extrap1``: linear extrapolation of the last two frames, ``2 u_t - u_{t-1}``
* ``extrap2``: quadratic extrapolation of the last three, ``3 u_t - 3 u_{t-1} + u_{t-2}``
* ``solver``: one step of a numerical solver of the dataset's PDE (``well_upao.evaluate.solver``)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from well_upao.data.slots import SLOT_INDEX, SLOT_NAMES
from well_upao.physics.pdes import PDE
from well_upao.physics.stencils import Grid


@dataclass
class Context:
    """What a sample tells about its physics: time step, grid, named scalars, slot map."""

    dt: torch.Tensor  # (B,)
    grid: Grid
    scalars: dict[str, torch.Tensor]
    channel_slots: list[int]


@dataclass
class Predictor:
    name: str
    kind: str  # "classical", "solver", "model"
    seconds: float = 0.0
    calls: int = 0
    notes: dict = field(default_factory=dict)

    def predict(self, window: torch.Tensor, context: Context) -> torch.Tensor:
        start = time.perf_counter()
        out = self._predict(window, context)
        self.seconds += time.perf_counter() - start
        self.calls += window.shape[0]
        return out

    def _predict(self, window: torch.Tensor, context: Context) -> torch.Tensor:
        raise NotImplementedError

    @property
    def seconds_per_prediction(self) -> float:
        return self.seconds / max(self.calls, 1)


class Persistence(Predictor):
    def __init__(self):
        super().__init__("persistence", "classical")

    def _predict(self, window, context):
        return window[:, -1]


#: weights of u_t, u_{t-1}, ... for polynomial extrapolation of degree 1 and 2 (Newton's backward differences)
EXTRAPOLATION_WEIGHTS: dict[int, tuple[float, ...]] = {1: (2.0, -1.0), 2: (3.0, -3.0, 1.0)}


class Extrapolation(Predictor):
    """Polynomial extrapolation of the last ``order + 1`` frames."""

    def __init__(self, order: int):
        super().__init__(f"extrap{order}", "classical")
        self.order = order

    def _predict(self, window, context):
        weights = EXTRAPOLATION_WEIGHTS[self.order]
        if window.shape[1] < len(weights):
            return window[:, -1]
        return sum(w * window[:, -1 - i] for i, w in enumerate(weights))


class SolverStep(Predictor):
    """One step of the dataset's PDE from the last frame (``well_upao.evaluate.solver``).

    ``substeps=None``: step doubling until the result converges (the ``solver`` row, the accuracy limit);
    ``substeps=s``: ``s`` RK4 steps, no error control; ``coarsen=f`` (periodic grids): stepped on the grid
    coarsened ``f`` times by Fourier truncation and prolonged back (``well_upao.physics.resample``)."""

    def __init__(self, pde: PDE, substeps: int | None = None, coarsen: int = 1, name: str = "solver"):
        super().__init__(name, "solver")
        self.pde, self.substeps, self.coarsen = pde, substeps, int(coarsen)
        if substeps is not None:
            self.notes.update(substeps=int(substeps), coarsen=self.coarsen)
        self._solvers: dict = {}

    def _solver(self, grid: Grid):
        from well_upao.evaluate.solver import PDESolver

        key = (grid.spacing, grid.periodic)
        if key not in self._solvers:
            self._solvers[key] = PDESolver(self.pde, grid)
        return self._solvers[key]

    def _predict(self, window, context):
        from well_upao.physics.resample import fourier_resample

        last = window[:, -1].double()
        slots = {SLOT_NAMES[s]: last[..., i] for i, s in enumerate(context.channel_slots)}
        state = {name: slots[name] for name in self.pde.variables}
        params = self.pde.resolve_parameters({k: v.double() for k, v in context.scalars.items()})
        grid, shape = context.grid, tuple(last.shape[1:-1])
        if self.coarsen > 1:
            grid = Grid(tuple(h * self.coarsen for h in grid.spacing), grid.periodic, grid.derivative)
            coarse = tuple(n // self.coarsen for n in shape)
            state = {name: fourier_resample(field, coarse) for name, field in state.items()}
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
    """A well-upao backbone (``forward_sequence`` on the 18 slots)."""

    def __init__(self, name: str, model: torch.nn.Module):
        super().__init__(name, "model")
        self.model = model.eval()

    @torch.no_grad()
    def _predict(self, window, context):
        slotted = self.model.to_slots(window)
        return self.model.from_slots(self.model.forward_sequence(slotted)[:, -1])


class SlotModel(Predictor):
    """A well-upao backbone, or a one-frame slot model (``model.one_frame``), on frames already in the 18 slots,
    with the dataset's slot mask (a mixture)."""

    def __init__(self, name: str, model: torch.nn.Module, mask: torch.Tensor):
        super().__init__(name, "model")
        self.model, self.mask = model.eval(), mask

    @torch.no_grad()
    def _predict(self, window, context):
        if getattr(self.model, "one_frame", False):
            return self.model(window, self.mask)
        return self.model.forward_sequence(window, self.mask)[:, -1]


class HarnessModel(Predictor):
    """Any model of the Well's harness (``model(x)`` on formatted histories, e.g. the FNO baselines)."""

    def __init__(self, name: str, model: torch.nn.Module, formatter: str, history: int):
        super().__init__(name, "model")
        self.model, self.formatter, self.history = model.eval(), formatter, history

    @torch.no_grad()
    def _predict(self, window, context):
        from well_upao.harness.samples import one_frame_prediction

        return one_frame_prediction(self.model, window[:, -self.history :], self.formatter)


def classical_predictors(pde: PDE | None, grid: Grid | None, solver: bool = True) -> list[Predictor]:
    from well_upao.evaluate.solver import supports

    predictors: list[Predictor] = [Persistence(), Extrapolation(1), Extrapolation(2)]
    if solver and pde is not None and grid is not None and supports(pde, grid):
        predictors.append(SolverStep(pde))
    return predictors


def checkpoint_file(path: str | Path) -> Path:
    """The checkpoint file behind ``path``: itself, or ``<run>/checkpoints/best.pt`` (or ``<run>/best.pt``)."""
    from well_upao.models.checkpoint import CheckpointError

    path = Path(path)
    if not path.is_dir():
        return path
    candidates = [path / "checkpoints" / "best.pt", path / "best.pt"]
    found = next((c for c in candidates if c.is_file()), None)
    if found is None:
        raise CheckpointError(f"{path} has no checkpoints/best.pt")
    return found


def default_row_name(checkpoint: Path) -> str:
    """A checkpoint file's row name: ``<experiment>/<n>`` for a run folder's ``checkpoints/best.pt``, else its stem."""
    if checkpoint.parent.name == "checkpoints":
        return f"{checkpoint.parents[2].name}/{checkpoint.parents[1].name}"
    return checkpoint.stem


def load_predictor(
    path: str | Path, dataset_name: str, channel_names: list[str], history: int, name: str | None = None
) -> Predictor:
    """A trained model from a well-upao checkpoint file or a run folder (``<run>/checkpoints/best.pt``).

    Its row is called ``name``, by default ``<experiment>/<n>`` for a run folder and the file's stem otherwise.
    LoRA / NSLoRA adapters are folded into their linear layers first (``W0 + DeltaW``,
    ``well_upao.models.lora.merge_adapters``): NSLoRA's Newton-Schulz runs once, not at every prediction.
    """
    from well_upao.models.assembly import load_model
    from well_upao.models.checkpoint import read_checkpoint
    from well_upao.models.lora import adapter_layers, merge_adapters

    path = checkpoint_file(path)
    payload = read_checkpoint(path)
    model = load_model(path)
    merged = len(adapter_layers(model))
    if merged:
        merge_adapters(model)
    name = default_row_name(path) if name is None else name
    predictor = _model_predictor(path, payload, model, name, dataset_name, channel_names, history)
    if merged:
        predictor.notes["adapters"] = f"{merged} merged"
    train = payload.get("train") or {}
    if train.get("global_step"):
        predictor.notes["training"] = f"{train.get('epoch', 0)} epochs, {train['global_step']} steps"
    predictor.notes["initial weights"] = initial_weights(payload)
    return predictor


def initial_weights(payload: dict) -> str:
    """What a checkpoint's run started from, for labelling rows: ``random``, ``released <dir>`` (a foundation
    model's published checkpoint), ``pretrained <file>`` (our backbone, a state dict, or ``trainer.init_from``)."""
    model = payload["model"]
    start = (model.get("config") or {}).get("pretrained") or (model.get("hydra") or {}).get("weights")
    start = start or ((payload.get("train") or {}).get("init_from"))
    if not start:
        return "random"
    return f"released {start}" if Path(str(start)).is_dir() else f"pretrained {Path(str(start)).name}"


def _model_predictor(path, payload, model, name, dataset_name, channel_names, history) -> Predictor:
    from well_upao.data.datasets import slot_indices
    from well_upao.models.checkpoint import CheckpointError

    config = payload["model"]["config"]
    if hasattr(model, "forward_sequence"):
        expected = slot_indices(dataset_name, channel_names)
        if config.get("channel_slots") != expected:
            raise CheckpointError(
                f"{path} was trained on {config.get('dataset_name')!r} with slots {config.get('channel_slots')}; "
                f"{dataset_name!r} has slots {expected} ({', '.join(channel_names)})"
            )
        if history > config["n_steps_input"]:
            raise CheckpointError(f"{path}: history {history} exceeds the model's T_in {config['n_steps_input']}")
        return BackboneModel(name, model)
    harness = payload["model"].get("harness_args", {})
    if harness.get("dim_out") not in (None, len(channel_names)) or payload["model"].get("dataset") not in (
        None,
        dataset_name,
    ):
        raise CheckpointError(
            f"{path} was trained on {payload['model'].get('dataset')!r} with {harness.get('dim_out')} channels; "
            f"{dataset_name!r} has {len(channel_names)}"
        )
    return HarnessModel(name, model, payload["model"].get("formatter", "channels_first_default"), history)


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


def transfer_predictors(
    path: str | Path, dataset_name: str, channel_names: list[str], history: int, name: str
) -> list[Predictor]:
    """Zero-shot rows of a one-frame model of another dataset on ``dataset_name``: one per ``C_tgt``-subset of its
    ``C_src`` channels (kept in order), named ``<name> [source channels i,j]`` (``keep_best_assignment`` keeps the
    best). ``C_src < C_tgt`` has no zero-shot row (the paper's "---")."""
    from itertools import combinations

    from well_upao.models.assembly import load_model
    from well_upao.models.checkpoint import CheckpointError, read_checkpoint

    path = checkpoint_file(path)
    payload = read_checkpoint(path)
    model = load_model(path)
    if hasattr(model, "forward_sequence"):
        raise CheckpointError(f"{path} is a well-upao backbone: it reads every dataset through its slots, evaluate it")
    harness = payload["model"].get("harness_args") or {}
    c_src, c_tgt = int(harness.get("dim_out") or 0), len(channel_names)
    if c_src < c_tgt:
        raise CheckpointError(
            f"{path} writes {c_src} channels, {dataset_name!r} has {c_tgt}: no zero-shot transfer (the paper's ---)"
        )
    formatter = payload["model"].get("formatter", "channels_first_default")
    return [
        ChannelSubsetModel(f"{name} [source channels {','.join(map(str, s))}]", model, formatter, history, c_src, s)
        for s in combinations(range(c_src), c_tgt)
    ]


def slot_fields_of(frame: torch.Tensor, channel_slots: list[int]) -> dict[str, torch.Tensor]:
    """``{slot name: (..., *space)}`` of a dataset-channel frame ``(..., *space, C)``."""
    return {SLOT_NAMES[s]: frame[..., i] for i, s in enumerate(channel_slots)}


__all__ = [
    "SLOT_INDEX",
    "Context",
    "Predictor",
    "classical_predictors",
    "load_predictor",
    "slot_fields_of",
    "transfer_predictors",
]
