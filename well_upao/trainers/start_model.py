"""The starting model of a UPAO run: the departure's reference (``well_upao.physics.scores``) at every validation.

It is copied, frozen, at the first validation before any step; its trainable weights are kept beside the checkpoints
(``checkpoints/start_trainable.pt``, ``START_WEIGHTS``) so a resumed run still measures departures. A sharded
model (FSDP) cannot be copied: its predictions of each validation batch are kept instead, in memory, at that first
validation (the validation batches come in one fixed order, each process its own).
"""

from __future__ import annotations

import copy
import os

import torch

from well_upao.distributed import is_main_process
from well_upao.trainers.run_context import RunContext
from well_upao.trainers.sharding import is_sharded

#: the starting model's trainable weights, kept beside the checkpoints so a resumed run still measures departures
START_WEIGHTS = "start_trainable.pt"


class StartModel:
    """The starting model of ``run`` (see the module docstring)."""

    def __init__(self, run: RunContext):
        self.run = run
        #: the starting model, frozen (``None`` until the first validation, or when it cannot be had)
        self.model: torch.nn.Module | None = None
        #: a sharded start's predictions per validation batch (``kept_prediction``)
        self.predictions: dict[int, torch.Tensor] = {}

    @property
    def available(self) -> bool:
        """Whether departures can be measured (a copy of the start, or its kept predictions)."""
        return self.model is not None or bool(self.predictions)

    def reference(self, step: int) -> torch.nn.Module | None:
        """The starting model, frozen: copied at a validation before any step (``step``: the optimizer steps done;
        its trainable weights saved to ``START_WEIGHTS``), or rebuilt on resume from that file; ``None`` when it cannot
        be had (a run resumed without that file, a sharded model)."""
        run = self.run
        if self.model is not None:
            return self.model
        if is_sharded(run.model):
            return None
        path = os.path.join(run.checkpoint_folder, START_WEIGHTS)
        if step == 0:
            self.model = copy.deepcopy(run.bare_model).eval().requires_grad_(False)
            trainable = {n: p.detach().cpu() for n, p in run.bare_model.named_parameters() if p.requires_grad}
            if is_main_process():
                tmp = path + ".tmp"
                torch.save(trainable, tmp)
                os.replace(tmp, path)
        elif os.path.isfile(path):
            self.model = copy.deepcopy(run.bare_model).eval().requires_grad_(False)
            self.model.load_state_dict(torch.load(path, map_location=run.device), strict=False)
        return self.model

    def kept_prediction(self, index: int, prediction: torch.Tensor, first: bool) -> torch.Tensor | None:
        """The departure's reference where no starting model can be copied (a sharded model): the start's
        predictions of validation batch ``index``, kept (on the CPU) at the first validation (``first``: before any
        step, when the model predicting ``prediction`` is the start). ``None`` when not kept (a resumed sharded run,
        or a model that can be copied)."""
        if not is_sharded(self.run.model):
            return None
        if first:
            self.predictions[index] = prediction.detach().cpu()
        kept = self.predictions.get(index)
        return None if kept is None else kept.to(prediction.device)
