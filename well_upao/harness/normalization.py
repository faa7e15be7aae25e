"""Model units and physical units: the-well 1.2.0's normalisation convention, in one place.

With ``data.use_normalization=true`` (the Well's own benchmark setting) a model is trained on normalised fields:
the training dataset returns inputs *and* targets normalised (``ZScoreNormalization``: ``(u - mean) / std`` per
channel, from ``stats.yaml``), while the validation and test datasets return raw fields, which the Well's
``Trainer.rollout_model`` normalises before the model and de-normalises after it. So the model lives in *model
units*; everything else (metrics, residuals, plots, classical baselines) in physical units. Every path that calls
a model outside ``rollout_model`` (evaluation and its rollouts, the paper's VRMSE in the UPAO loop, the UPAO
objective) goes through a ``ModelSpace``: ``to_model`` before the model, ``to_physical`` after it. Without
normalisation both are the identity.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from the_well.data.normalization import RMSNormalization, ZScoreNormalization

from well_upao.data.source import WellSource

NORMALIZATIONS = {"ZScoreNormalization": ZScoreNormalization, "RMSNormalization": RMSNormalization}
#: what the Well's datamodule falls back to when ``use_normalization`` is on and no type is given
DEFAULT_NORMALIZATION = "ZScoreNormalization"


@dataclass
class ModelSpace:
    """The affine map between physical fields ``(..., C)`` (the dataset's channels, last axis) and the units a
    model was trained in. ``norm``: a normalisation object of the Well's, ``None`` for physical units."""

    norm: Any | None = None

    @property
    def normalized(self) -> bool:
        return self.norm is not None

    def to_model(self, fields: torch.Tensor) -> torch.Tensor:
        """Physical -> model units."""
        return fields if self.norm is None else self._apply(self.norm.normalize_flattened, fields)

    def to_physical(self, fields: torch.Tensor) -> torch.Tensor:
        """Model units -> physical."""
        return fields if self.norm is None else self._apply(self.norm.denormalize_flattened, fields)

    def constants_to_model(self, constants: torch.Tensor) -> torch.Tensor:
        """Physical -> model units of constant fields ``(..., C_const)`` (the Well's ``constant_fields``, which its
        trainer normalises the same way before a one-frame model reads them)."""
        return constants if self.norm is None else self._apply(self.norm.normalize_flattened, constants, "constant")

    @staticmethod
    def _apply(transform, fields: torch.Tensor, kind: str = "variable") -> torch.Tensor:
        # the Well keeps its statistics on the CPU in float32; match the fields' device and dtype
        return transform(fields.float().cpu(), kind).to(fields.device, fields.dtype)

    def describe(self) -> str:
        return type(self.norm).__name__ if self.norm is not None else "none"


def model_space_of(dataset) -> ModelSpace:
    """The model units of a run training on ``dataset`` (its training dataset, a ``WellDataset``): the dataset's
    normalisation when it has one."""
    norm = getattr(dataset, "norm", None) if getattr(dataset, "use_normalization", False) else None
    return ModelSpace(norm)


def model_space_for(source: WellSource, settings: Mapping[str, Any] | None) -> ModelSpace:
    """The model units of a run, rebuilt from its stored data settings (``use_normalization``,
    ``normalization_type``) and the dataset's ``stats.yaml`` over the kept fields (as the training dataset built
    them)."""
    settings = settings or {}
    if not settings.get("use_normalization"):
        return ModelSpace()
    name = settings.get("normalization_type") or DEFAULT_NORMALIZATION
    if name not in NORMALIZATIONS:
        raise ValueError(f"unknown normalization_type {name!r}; known: {sorted(NORMALIZATIONS)}")
    kept = source.kept_fields
    layout = source.layout
    core = [n for names in layout.field_names for n in names if kept is None or n in kept]
    constant = [n for names in layout.constant_field_names for n in names if kept is None or n in kept]
    return ModelSpace(NORMALIZATIONS[name](source.stats(), core, constant))
