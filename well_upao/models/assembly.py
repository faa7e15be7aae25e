"""Assemble a backbone from its description, with no harness needed: layers, pretrained weights, adapters.

A backbone is described by one flat config (what the model factory receives and what checkpoints store in
``model.config``): the architecture (``NATransformer``'s constructor arguments), plus

* ``pretrained``: a backbone checkpoint to start from (``"shipped"`` / ``"shipped_extrap2"``: a packaged one);
* ``adapter``: LoRA / NSLoRA settings (``well_upao.models.lora.ADAPTER_DEFAULTS``), or none;
* ``dataset_name``: the dataset it is for (a label; the slots are in ``channel_slots``).

``assemble`` builds the layers, loads the backbone, attaches the adapters and records all of it in
``model.config``; ``build_model`` / ``load_model`` do the same from a checkpoint file.

Configs of earlier versions (the shipped backbone, checkpoints with ``adapter.schedule``, old ``model.adapter.*``
overrides) are brought to today's form by ``well_upao.models.checkpoint`` (``migrate_config``, ``migrated_base``),
the one home of checkpoint migration.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException
from torch import nn

from well_upao.models.checkpoint import (
    CheckpointError,
    build_payload,
    load_state,
    migrate_config,
    migrated_base,
    read_checkpoint,
    save_checkpoint,
)
from well_upao.models.lora import adapter_layers, attach_adapters, merge_adapters
from well_upao.models.na_transformer import NATransformer

logger = logging.getLogger(__name__)

#: config keys that are not NATransformer's constructor arguments
ASSEMBLY_KEYS = ("pretrained", "adapter", "dataset_name")
#: configuration keys that fix the backbone's parameter shapes
ARCHITECTURE_KEYS = (
    "hidden",
    "layers",
    "heads",
    "patch",
    "kernel",
    "temporal_kernel",
    "n_steps_input",
    "encoder_width",
)


#: tensors set to zero when a backbone trained with another prediction base is loaded (its correction starts off)
REZEROED_TENSORS = ("correction_gain",)


def assemble(config: Mapping[str, Any]) -> NATransformer:
    """A backbone from its flat description (see the module docstring)."""
    config = migrate_config(config)
    architecture = {key: value for key, value in config.items() if key not in ASSEMBLY_KEYS}
    model = NATransformer(**architecture)
    model.config.update(pretrained=None, adapter=None, dataset_name=config.get("dataset_name"))
    if config.get("pretrained"):
        load_backbone_weights(model, config["pretrained"])
    if config.get("adapter"):
        attach_adapters(model, config["adapter"])
    return model


def build_model(payload: dict[str, Any], **overrides) -> nn.Module:
    """The model a checkpoint describes, with its stored config (plus ``overrides``), weights not loaded yet.

    A well-upao backbone is assembled (``assemble``); its backbone file (``pretrained``) is only read when the
    checkpoint does not hold every weight itself. A harness model without its own config (e.g. the Well's FNO) is
    instantiated from its Hydra node and the harness arguments stored beside it."""
    if not payload["model"]["config"] and payload["model"].get("hydra"):
        return instantiate(payload["model"]["hydra"], **payload["model"].get("harness_args", {}), **overrides)
    module_name, _, class_name = payload["model"]["target"].rpartition(".")
    cls = getattr(importlib.import_module(module_name), class_name)
    config = {**payload["model"]["config"], **overrides}
    if not issubclass(cls, NATransformer):
        return cls(**config)
    if payload.get("state_dict_complete", True):
        config["pretrained"] = None  # every weight is in the file
    return assemble(config)


#: the run's composed configuration, saved by the Well's harness beside ``checkpoints/``
RUN_CONFIG = "extended_config.yaml"


def resolved_model_node(run_config) -> dict[str, Any]:
    """A run's ``model`` node as plain data, its interpolations (``${data.well_dataset_name}``, ...) resolved
    against the whole run configuration and a relative ``well_base_path`` made absolute, so the checkpoint rebuilds
    the model alone from any directory; left as written where one cannot be resolved outside the run (a
    ``${hydra:...}`` resolver)."""
    try:
        node = OmegaConf.to_container(run_config.model, resolve=True)
    except OmegaConfBaseException:
        return OmegaConf.to_container(run_config.model, resolve=False)
    if isinstance(node.get("well_base_path"), str):
        node["well_base_path"] = os.path.abspath(node["well_base_path"])
    return node


def check_hydra_node(payload: dict[str, Any], path: str | Path) -> None:
    """A harness model's stored Hydra node must be resolved (checkpoints store it so since the node records the
    run's data); one with interpolations left (``${data.*}``, written by an unreleased version) is refused."""
    node = payload["model"].get("hydra")
    if node and "${" in json.dumps(node):
        raise CheckpointError(
            f"{path} describes its model with unresolved interpolations (written by an earlier, unreleased version); "
            "retrain it, or resave it with its model node resolved"
        )


def load_model(path: str | Path, **overrides) -> nn.Module:
    """Rebuild a model from the checkpoint file (and, for slim adapter files, its backbone) and load it."""
    return model_from_payload(read_checkpoint(path), path, **overrides)


def model_from_payload(payload: dict[str, Any], path: str | Path, **overrides) -> nn.Module:
    """The model of a checkpoint already read (``read_checkpoint``) from ``path``, rebuilt and loaded."""
    check_hydra_node(payload, path)
    model = build_model(payload, **overrides)
    load_state(model, payload, path)
    return model


def export_merged_backbone(source: str | Path, destination: str | Path) -> int:
    """A checkpoint with LoRA / NSLoRA adapters -> a plain backbone with them folded in (``W_0 + DeltaW`` in every
    adapted linear layer, ``merge_adapters``), complete in one file and loadable as ``model.pretrained=`` of
    ``model=na`` (and as the backbone of new adapters). Returns the file size."""
    payload = read_checkpoint(source)
    model = load_model(source)
    if not adapter_layers(model):
        raise CheckpointError(f"{source} has no adapters to merge: export it without --merge")
    merge_adapters(model)
    model.config.update(adapter=None, pretrained=None)
    train = payload.get("train") or {}
    kept = {key: train[key] for key in ("epoch", "metrics", "global_step", "datasets") if key in train}
    merged = build_payload(model, epoch=payload.get("epoch", 0), metrics=train.get("metrics"))
    merged["train"] = kept | {"merged_from": str(source), "merged_adapters": payload["adapters"]["kind"]}
    save_checkpoint(destination, merged)
    return Path(destination).stat().st_size


def check_architecture(model_config: dict, checkpoint_config: dict, path: str | Path) -> None:
    mismatched = {
        key: (checkpoint_config.get(key), model_config.get(key))
        for key in ARCHITECTURE_KEYS
        if checkpoint_config.get(key) != model_config.get(key)
    }
    if mismatched:
        details = ", ".join(f"{k}: checkpoint {a} vs model {b}" for k, (a, b) in mismatched.items())
        raise CheckpointError(
            f"{path} holds a backbone of preset {checkpoint_config.get('preset')!r} that does not fit this model "
            f"(preset {model_config.get('preset')!r}): {details}"
        )


#: the backbones pretrained by the project and shipped in the package, by the name ``model.pretrained`` takes:
#: ``shipped`` (base ``last``, the paper's residual in time) and ``shipped_extrap2`` (base ``extrap2``, same corpus,
#: protocol and steps; better for the quickstart, reports/pretraining_comparison.md)
SHIPPED_BACKBONES = {"shipped": "na_tiny_pretrained.pt", "shipped_extrap2": "na_tiny_extrap2.pt"}
SHIPPED_BACKBONE = SHIPPED_BACKBONES["shipped"]


def shipped_backbone_path(name: str = "shipped") -> Path:
    """Path of a shipped pretrained tiny backbone inside the installed package."""
    path = Path(str(resources.files("well_upao.weights") / SHIPPED_BACKBONES[name]))
    if not path.is_file():
        raise CheckpointError(f"the shipped backbone {path} is missing from this installation")
    return path


def resolve_pretrained(path: str | Path | None) -> str | None:
    """A shipped backbone's name (``shipped``, ``shipped_extrap2``) -> its path; other values unchanged."""
    if path is None or str(path) in ("", "null", "None"):
        return None
    return str(shipped_backbone_path(str(path))) if str(path) in SHIPPED_BACKBONES else str(path)


def load_backbone_weights(model: nn.Module, path: str | Path) -> None:
    """Load a backbone checkpoint into ``model`` (same architecture; dimensionalities may be a subset)."""
    path = resolve_pretrained(path)
    payload = read_checkpoint(path)
    check_architecture(model.config, payload["model"]["config"], path)
    missing_dims = set(model.config["dims"]) - set(payload["model"]["config"].get("dims", []))
    if missing_dims:
        parts = ", ".join(f"{d}D" for d in sorted(missing_dims))
        raise CheckpointError(f"{path} has no weights for the {parts} parts this model needs")
    own = model.state_dict()
    state = {k: v for k, v in payload["state_dict"].items() if k in own}
    state["prior_order"] = torch.tensor(-1)  # a backbone is adapted through its network, whatever prior it kept
    source_base = migrated_base(payload["model"]["config"])
    if source_base != model.config.get("base", "last") and not hasattr(model, "correction_gain"):
        # only an extrapolation base has a gain to restart the correction from; a decoder trained for one base
        # read as the correction of another would predict garbage
        raise CheckpointError(
            f"{path} was trained with prediction base {source_base!r}; this model's base "
            f"{model.config.get('base')!r} cannot restart its correction from zero: set model.base={source_base} "
            "(or extrap1 / extrap2, whose correction gain starts at zero)"
        )
    if source_base != model.config.get("base", "last"):
        # the correction's gain is not part of a backbone trained with another base: it starts at zero, so the
        # adapted model starts from its own base (re-zeroed correction) and the trained decoder opens it
        state |= {k: torch.zeros_like(own[k]) for k in REZEROED_TENSORS if k in own}
        logger.info(
            "%s was trained with base %r; this model predicts from %r and its correction starts at zero",
            path,
            source_base,
            model.config.get("base"),
        )
    missing = sorted(set(own) - set(state))
    if missing:
        raise CheckpointError(f"{path} lacks {len(missing)} backbone tensors, e.g. {missing[:3]}")
    model.load_state_dict(state)
    model.config["pretrained"] = path
