"""One versioned checkpoint schema for everything well-upao writes (INTERFACES.md section 4).

    {"format": "well-upao", "version": 1,
     "model": {"target": "<module>.<class>", "config": {...}},   # enough to rebuild the model from the file
     "slot_table": <hash>, "state_dict": {...},
     "adapters": None | {"kind", "config", "state_dict", "backbone_sha256"},
     "train": {"epoch", "optimizer", "scheduler", "metrics", ...},
     # plus the keys the Well's Trainer reads, so its own resume logic works:
     "epoch", "model_state_dict", "optimizer_state_dit", "validation_loss", "best_validation_loss"}

Tensors shared between ``state_dict`` and ``model_state_dict`` are stored once by ``torch.save``. Files are
written to a temporary name and renamed when complete. DDP/FSDP ``module.`` prefixes never reach the file.
Rebuilding a model from a file (``load_model``) is ``well_upao.models.assembly``.

Migration (the one place): configs written by earlier versions are read in today's form. The shipped ``shipped``
backbone says ``residual_in_time`` instead of a prediction ``base``
([`migrated_base`][well_upao.models.checkpoint.migrated_base], [`legacy_base`][well_upao.models.checkpoint.legacy_base],
which the model's constructor reads the flag with too); adapter configs of earlier versions (the v0 adapter fixture, old
``model.adapter.*`` overrides) carry ``schedule`` / ``switch_patience``, now training settings
(``trainer.nslora_schedule`` / ``switch_patience``), which
[`migrate_config`][well_upao.models.checkpoint.migrate_config] takes off.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from well_upao.data.datasets import import_modules
from well_upao.data.slot_inventory import slot_table_hash
from well_upao.models.lora import adapter_layers, backbone_sha256

FORMAT = "well-upao"
VERSION = 1


#: buffers a slim adapter checkpoint keeps beside the trained tensors: the prior a selection kept
KEPT_BUFFERS = ("prior_order",)
#: adapter keys of earlier configs that are now training settings (see the module docstring)
LEGACY_SCHEDULE_KEYS = ("schedule", "switch_patience")


class CheckpointError(ValueError):
    """A checkpoint that is not ours, is damaged, or does not fit the model."""


def legacy_base(residual_in_time: bool | None) -> str | None:
    """The prediction base that the earlier flag ``residual_in_time`` meant (true: ``last``, false: ``none``)."""
    return None if residual_in_time is None else ("last" if residual_in_time else "none")


def migrated_base(config: Mapping[str, Any]) -> str:
    """The prediction base a stored config describes: its ``base``; configs written before ``base`` existed say
    ``residual_in_time`` ([`legacy_base`][well_upao.models.checkpoint.legacy_base]), and neither means ``last``."""
    return config.get("base") or legacy_base(config.get("residual_in_time")) or "last"


def migrate_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """A model config without the adapter keys of earlier versions (``LEGACY_SCHEDULE_KEYS``)."""
    config = dict(config)
    adapter = {k: v for k, v in (config.get("adapter") or {}).items() if k not in LEGACY_SCHEDULE_KEYS}
    config["adapter"] = adapter or None
    return config


def unwrap(model: nn.Module) -> nn.Module:
    """The bare model inside DDP / FSDP / torch.compile wrappers."""
    while hasattr(model, "module") and isinstance(model.module, nn.Module):
        model = model.module
    return getattr(model, "_orig_mod", model)


def clean_state_dict(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Drop ``module.`` / ``_orig_mod.`` prefixes left by wrappers."""
    out = {}
    for key, value in state.items():
        while key.startswith(("module.", "_orig_mod.")):
            key = key.split(".", 1)[1]
        out[key] = value
    return out


def model_target(model: nn.Module) -> str:
    """``<module>.<class>`` of the bare model (FSDP2 swaps a sharded module's class for a subclass
    ``FSDP<Name>(FSDPModule, <Name>)``: its ``<Name>``)."""
    cls = type(unwrap(model))
    while cls.__module__.startswith("torch.distributed.fsdp"):
        cls = cls.__bases__[-1]
    return f"{cls.__module__}.{cls.__qualname__}"


def build_payload(
    model: nn.Module,
    *,
    epoch: int = 0,
    optimizer: torch.optim.Optimizer | None = None,
    scheduler_state: dict | None = None,
    validation_loss: float | None = None,
    best_validation_loss: float | None = None,
    metrics: dict | None = None,
    adapters: dict | None = None,
    extra_train: dict | None = None,
    extra_model: dict | None = None,
    state: dict[str, torch.Tensor] | None = None,
) -> dict[str, Any]:
    """The checkpoint of ``model`` (its weights, or ``state``: its whole state dict gathered elsewhere, e.g. from
    the shards of an FSDP model) in the schema above."""
    bare = unwrap(model)
    state = clean_state_dict(bare.state_dict() if state is None else state)
    complete = True
    if adapters is None:
        adapters, state, complete = adapter_section(bare, state)
    optimizer_state = optimizer.state_dict() if optimizer is not None else None
    return {
        "format": FORMAT,
        "version": VERSION,
        "model": {"target": model_target(bare), "config": dict(getattr(bare, "config", {})), **(extra_model or {})},
        "slot_table": slot_table_hash(),
        "state_dict": state,
        "state_dict_complete": complete,
        "adapters": adapters,
        "train": {
            "epoch": epoch,
            "optimizer": optimizer_state,
            "scheduler": scheduler_state,
            "metrics": metrics or {},
            **(extra_train or {}),
        },
        # The Well's Trainer keys (its spelling)
        "epoch": epoch,
        "model_state_dict": state,
        "optimizer_state_dit": optimizer_state,
        "validation_loss": validation_loss,
        "best_validation_loss": best_validation_loss,
    }


def adapter_section(model: nn.Module, state: dict) -> tuple[dict | None, dict, bool]:
    """``(adapters, state_dict, complete)`` for a model; with adapters on a pretrained backbone the file keeps
    only what training changes (adapters, encoders, decoders) plus the backbone's hash and path."""
    if not adapter_layers(model):
        return None, state, True
    spec = model.config.get("adapter") or {"kind": "lora"}
    adapter_state = {k: v for k, v in state.items() if "lora_" in k or k.endswith("ns_active")}
    section = {
        "kind": spec["kind"],
        "config": dict(spec),
        "state_dict": adapter_state,
        "backbone_sha256": backbone_sha256(model, state),
        "backbone": model.config.get("pretrained"),
    }
    if not model.config.get("pretrained"):
        return section, state, True  # no backbone file to rebuild from: keep everything
    trainable = {name for name, p in model.named_parameters() if p.requires_grad}
    slim = {k: v for k, v in state.items() if k in trainable or k in adapter_state or k in KEPT_BUFFERS}
    return section, slim, False


def load_state(model: nn.Module, payload: dict[str, Any], path: str | Path = "checkpoint") -> None:
    """Load a payload's weights into a model built from its config; adapters must sit on the same backbone."""
    model = unwrap(model)
    state = clean_state_dict(payload["state_dict"])
    adapters = payload.get("adapters")
    if adapters is not None:
        own = backbone_sha256(model)
        if payload.get("state_dict_complete", True):
            # the frozen weights are in the file: load them first, then compare with the recorded hash
            model.load_state_dict(state)
            if backbone_sha256(model) != adapters["backbone_sha256"]:
                raise CheckpointError(f"{path}: the stored backbone does not match the adapters' backbone hash")
            return
        if own != adapters["backbone_sha256"]:
            raise CheckpointError(
                f"{path}: these adapters were trained on another backbone (sha256 {adapters['backbone_sha256'][:12]}"
                f", this model's is {own[:12]}); load the backbone they were trained on ({adapters.get('backbone')})"
            )
        missing, unexpected = model.load_state_dict(state, strict=False)
        frozen = {name for name, p in model.named_parameters() if not p.requires_grad}
        frozen |= {name for name, _ in model.named_buffers() if not name.endswith("ns_active")}
        if unexpected or set(missing) - frozen:
            raise CheckpointError(
                f"{path}: weights do not fit the model (missing {missing[:3]}, unexpected {unexpected[:3]})"
            )
        return
    model.load_state_dict(state)


def save_checkpoint(path: str | Path, payload: dict[str, Any]) -> None:
    """``torch.save`` to a temporary file in the same directory, then an atomic rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        torch.save(payload, tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def export_backbone(source: str | Path, destination: str | Path) -> int:
    """Copy a checkpoint without optimizer/scheduler state and per-step history (returns the file size)."""
    payload = read_checkpoint(source)
    train = payload.get("train", {})
    slim = dict(payload)
    slim["train"] = {k: train.get(k) for k in ("epoch", "metrics", "global_step", "datasets") if k in train}
    slim["optimizer_state_dit"] = None
    save_checkpoint(destination, slim)
    return Path(destination).stat().st_size


def read_checkpoint(path: str | Path, accept_well_trainer: bool = False) -> dict[str, Any]:
    """The checkpoint at ``path`` (see [`check_payload`][well_upao.models.checkpoint.check_payload]).
    ``accept_well_trainer``: also return a checkpoint of the Well's own trainer (``model_state_dict``, no schema) as it
    is, for resuming a run from it."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path} does not exist")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as error:  # torch raises many types for damaged files
        raise CheckpointError(f"cannot read checkpoint {path}: {error}") from error
    if accept_well_trainer and isinstance(payload, dict) and payload.get("format") != FORMAT:
        if "model_state_dict" not in payload:
            raise CheckpointError(f"{path} has no model weights")
        return payload
    return check_payload(payload, path)


def check_payload(payload: Any, path: str | Path) -> dict[str, Any]:
    """``payload`` (what ``torch.load`` read from ``path``) if it is a well-upao checkpoint this code reads;
    imports the modules its run named."""
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not a well-upao checkpoint (no 'format': '{FORMAT}')")
    if payload.get("version") != VERSION:
        raise CheckpointError(f"{path} has schema version {payload.get('version')}, this code reads {VERSION}")
    if payload.get("slot_table") != slot_table_hash():
        raise CheckpointError(f"{path} was written with another channel-slot table")
    imports = ((payload.get("train") or {}).get("data") or {}).get("imports") or []
    import_modules(imports, f"the data.imports {path} was trained with")  # the run's own datasets and PDEs
    return payload
