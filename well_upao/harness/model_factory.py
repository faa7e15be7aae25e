"""The model factory Hydra instantiates for ``model=na``, ``na_lora`` and ``na_nslora``.

The Well's ``train.py`` builds the data module first and then calls the model config with the dataset's sizes
(``n_spatial_dims, spatial_resolution, dim_in, dim_out``). This factory adds what only the dataset knows: its
channels, read from its files and mapped to the 18 slots by its registry entry. It then hands one flat
description to :func:`well_upao.models.assembly.assemble` (layers, pretrained backbone, adapters).

The LoRA -> NSLoRA schedule is a training setting (``trainer.nslora_schedule``, ``trainer.switch_patience``).
``model.adapter.schedule`` / ``model.adapter.switch_patience``, which earlier commands set, still work: they are
taken off the adapter settings and passed on as ``model.schedule_alias``, which the trainer uses (with one
warning) when its own settings are left unset.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from well_upao.data.datasets import slot_indices
from well_upao.data.metadata import dataset_channel_names
from well_upao.models import na_transformer as backbone
from well_upao.models.assembly import assemble, migrate_config


def na_transformer(
    *,
    dataset_name: str | None = None,
    well_base_path: str | None = None,
    fields: Sequence[str] | None = None,
    channel_slots: Sequence[int] | None = None,
    pretrained: str | None = None,
    adapter: Mapping[str, Any] | None = None,
    **architecture: Any,
) -> backbone.NATransformer:
    """An NA Transformer for ``dataset_name`` (its channels read from the files under ``well_base_path``, within
    the field selection ``fields``), from ``pretrained`` with ``adapter``; other arguments are the architecture
    and the harness's sizes (``NATransformer``'s constructor)."""
    if channel_slots is None and dataset_name is not None:
        if well_base_path is None:
            raise ValueError("dataset_name needs well_base_path to read the dataset's channels")
        names = dataset_channel_names(well_base_path, dataset_name, list(fields) if fields else None)
        channel_slots = slot_indices(dataset_name, names)
    description, schedule_alias = migrate_config(
        {
            **architecture,
            "channel_slots": channel_slots,
            "dataset_name": dataset_name,
            "pretrained": pretrained,
            "adapter": dict(adapter) if adapter else None,
        }
    )
    model = assemble(description)
    model.schedule_alias = schedule_alias
    return model


#: The Hydra target of ``model=na``, ``na_lora``, ``na_nslora``. The Well names run folders after the last part of
#: the model's ``_target_`` (``<dataset>-<model>-<trainer>-NATransformer-<lr>``), so the factory carries the name of
#: the class it builds and run folders keep their names.
NATransformer = na_transformer
