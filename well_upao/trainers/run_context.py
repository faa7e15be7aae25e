"""What the training loop hands the parts it composes: the run as typed values.

The loop (``trainers/loop.py``) is the one composition root of a run. After the Well's constructor has built the
model, the data and the device, it builds one ``RunContext`` and composes the run from it: the training loss
(``TrainingLoss.attach``), and for a UPAO run its setup, its label-free validation and its judge
(``trainers/upao.py``). Each part reads what it needs from the context; none of them holds the loop, and what
changes during the run (the optimizer step, whether the start is being validated) is handed to each call::

    Trainer (loop.py) ── builds ──> RunContext (model, device, data, settings)
       │ composes
       ├──> loss        (training_loss.py: shifted, supervised, upao)   __call__(batch)
       ├──> validation  (upao_validation.py, a UPAO run's criterion)    validate(loader, full, step, first)
       └──> judge       (guard.py, a UPAO run's guard and prior rule)   observe(validated) ── the one writer
       Selection (selection.py) asks the judge about typed candidates; the loop writes best.pt as it decides
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch
from the_well.data.data_formatter import DefaultChannelsFirstFormatter, DefaultChannelsLastFormatter
from the_well.data.datasets import WellMetadata

from well_upao.harness.datamodule import WellUpaoDataModule
from well_upao.harness.mixture import MixtureDataModule
from well_upao.trainers.guard import Validated
from well_upao.trainers.rollout import RolloutSettings


@dataclass(frozen=True)
class RunContext:
    """The run the loop trains, for the parts it composes.

    ``model``: the model as trained (wrapped by DDP or sharded by FSDP where it is; forward passes go through it);
    ``bare_model``: the same model unwrapped (its slots, its prior, copies of its weights); ``device``;
    ``datamodule``: the run's data (its source, its training and validation datasets, its settings; a pretraining
    run's mixture); ``metadata``: the Well's metadata of the dataset (fields, spatial dims,
    constant scalars); ``rollout``: the steps each loss trains over (``trainer.rollout_steps`` and its options);
    ``formatter_name`` and ``formatter``: how a one-frame model of the Well's harness reads its inputs (the name
    checkpoints record, the Well's formatter object); ``loss_fn``: the harness's ``trainer.loss_fn``;
    ``well_rollout``: the Well's rollout of a model on a batch (``Trainer.rollout_model``: its normalisation and
    formatter), what a supervised one-frame step predicts; ``checkpoint_folder``: where the run's checkpoints go;
    ``short_validation_length``: the batches every validation sees; ``validate_start``: ``trainer.validate_start``;
    ``resumed``: the ``train`` section of the checkpoint the run resumed from (empty for a fresh run)."""

    model: torch.nn.Module
    bare_model: torch.nn.Module
    device: torch.device
    datamodule: WellUpaoDataModule | MixtureDataModule
    metadata: WellMetadata
    rollout: RolloutSettings
    formatter_name: str
    formatter: DefaultChannelsFirstFormatter | DefaultChannelsLastFormatter | None = None
    loss_fn: Callable[..., torch.Tensor] | None = None
    well_rollout: Callable[..., tuple[torch.Tensor, torch.Tensor]] | None = None
    checkpoint_folder: str = ""
    short_validation_length: int = 0
    validate_start: bool = True
    resumed: Mapping[str, Any] = field(default_factory=dict)

    @property
    def history(self) -> int:
        """The frames before each target (``data.n_steps_input``)."""
        return self.datamodule.train_dataset.n_steps_input

    @property
    def field_names(self) -> list[str]:
        """The dataset's channels in the model's order."""
        return [name for names in self.metadata.field_names.values() for name in names]

    def batch_frames(self, batch: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """Input and output frames of a batch concatenated in time, on the run's device: ``(B, T_in + T_out, *space,
        C)``."""
        return torch.cat([batch["input_fields"], batch["output_fields"]], dim=1).to(self.device)


class Criterion(Protocol):
    """A run's own label-free validation (a UPAO run's, ``trainers/upao_validation.py``): its value selects the
    candidate, its measurements go to the judge. ``first``: the run's first validation, before any step."""

    def validate(self, dataloader, full: bool, step: int, first: bool) -> Validated: ...

    def checkpoint_info(self) -> dict[str, Any]: ...
