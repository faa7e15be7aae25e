"""What kind of model a module is, declared by its class (``model_kind``), never guessed from its methods.

* ``sequence``: a well-upao backbone: the 18 slots, ``forward_sequence(frames, mask)`` returning the shifted
  predictions of every history length (the paper's design), and the harness's ``model(x)``;
* ``slot_frame``: a one-frame model on the 18 slots, ``model(history, mask)`` returning the next frame (a
  foundation model pretrained on a slot mixture);
* ``harness``: a model of The Well's harness (its FNO, TFNO, U-Nets, and our foundation-model wrappers):
  ``model(x)`` on the formatter's layout of the history, the next frame in the dataset's channels. Classes that
  declare nothing (the Well's own) are of this kind.
"""

from __future__ import annotations

from enum import StrEnum

from torch import nn

from well_upao.models.checkpoint import unwrap


class ModelKind(StrEnum):
    SEQUENCE = "sequence"
    SLOT_FRAME = "slot_frame"
    HARNESS = "harness"


def model_kind(model: nn.Module) -> ModelKind:
    """The kind ``model``'s class declares (through DDP/FSDP wrappers); ``harness`` when it declares none."""
    return ModelKind(getattr(type(unwrap(model)), "model_kind", ModelKind.HARNESS))


def is_sequence_model(model: nn.Module) -> bool:
    """A well-upao backbone (shifted predictions over the 18 slots)."""
    return model_kind(model) is ModelKind.SEQUENCE
