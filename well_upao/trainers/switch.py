"""The paper's LoRA -> NSLoRA switch (appendix "NSLoRA Implementation Details").

With NSLoRA adapters and ``schedule=warmup`` the adapters run the standard LoRA forward ``(alpha / r) B A`` until
the selection criterion has not improved for ``patience`` validations, then switch to the Newton-Schulz forward
``||A||_F ||B||_F NS(B) NS(A)``, keeping A, B and the optimizer state. The two parametrisations give different
``||DeltaW||``, so both sides of the switch are recorded. ``schedule=from_start`` runs NS from the first step.
"""

from __future__ import annotations

import logging
from typing import Any

from torch import nn

from well_upao.models.lora import adapter_layers, delta_norms, ns_active, set_ns_active

logger = logging.getLogger(__name__)

SCHEDULES = ("warmup", "from_start")
_warned_about_alias = False


def resolve_nslora_schedule(schedule: str | None, switch_patience: int | None, alias: dict | None) -> tuple[str, int]:
    """The NSLoRA schedule: the trainer's settings, else the model config's earlier names for them
    (``model.adapter.schedule`` / ``switch_patience``, documented in docs/training.md; with one warning), else
    ``warmup`` after 5 validations."""
    global _warned_about_alias
    alias = alias or {}
    if alias and not _warned_about_alias:
        logger.warning(
            "model.adapter.schedule / model.adapter.switch_patience are now trainer.nslora_schedule / "
            f"trainer.switch_patience; using {alias} from the model config"
        )
        _warned_about_alias = True
    schedule = schedule if schedule is not None else alias.get("schedule", "warmup")
    patience = switch_patience if switch_patience is not None else alias.get("switch_patience", 5)
    if schedule not in SCHEDULES:
        raise ValueError(f"nslora_schedule must be one of {SCHEDULES}, got {schedule!r}")
    return schedule, int(patience)


def adapter_kind(model: nn.Module) -> str | None:
    """``lora`` / ``nslora`` for a model with adapters attached, else ``None``."""
    spec = (getattr(model, "config", None) or {}).get("adapter")
    return spec["kind"] if spec and adapter_layers(model) else None


class AdapterSwitch:
    """The switch of one model: NS from the start, or after the warm-up stalls (``after_validation``)."""

    def __init__(self, model: nn.Module, schedule: str, patience: int):
        self.model, self.schedule, self.patience = model, schedule, int(patience)
        if schedule == "from_start" and adapter_kind(model) == "nslora":
            set_ns_active(model, True)

    @property
    def pending(self) -> bool:
        """NSLoRA adapters still in their LoRA warm-up."""
        return adapter_kind(self.model) == "nslora" and self.schedule == "warmup" and not ns_active(self.model)

    def after_validation(self, epoch: int, validations_without_improvement: int) -> dict[str, Any]:
        """Switch when the warm-up has stalled for ``patience`` validations; the values to log (``{}`` when it
        did not switch). The caller restarts its early-stopping count on a switch."""
        if not self.pending or validations_without_improvement < self.patience:
            return {}
        before = sum(delta_norms(self.model).values())
        set_ns_active(self.model, True)
        after = sum(delta_norms(self.model).values())
        logger.info(
            f"epoch {epoch}: switching adapters LoRA -> NSLoRA after {self.patience} validations without "
            f"improvement; sum of ||DeltaW||_F {before:.4e} -> {after:.4e}"
        )
        return {"nslora_switch_epoch": epoch, "delta_w_norm_before_switch": before, "delta_w_norm_after_switch": after}
