"""The model factory Hydra instantiates for ``model=na``, ``na_lora`` and ``na_nslora``.

The Well's ``train.py`` builds the data module first and then calls the model config with the dataset's sizes
(``n_spatial_dims, spatial_resolution, dim_in, dim_out``). This factory adds what only the dataset knows: its
channels, read from its files and mapped to the 18 slots by its registry entry. It then hands one flat
description to ``well_upao.models.assembly.assemble`` (layers, pretrained backbone, adapters).

The LoRA -> NSLoRA schedule is a training setting (``trainer.nslora_schedule``, ``trainer.switch_patience``).
``model.adapter.schedule`` / ``model.adapter.switch_patience``, which earlier commands set, still work: the trainer
config carries them over (``trainer.adapter_schedule`` / ``adapter_switch_patience``, interpolated from the model's
config; the trainer uses them, with one warning, where its own settings are unset) and ``assemble`` takes them
off the adapter settings (``migrate_config``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from well_upao.data.source import WellSource
from well_upao.models import na_transformer as backbone
from well_upao.models.assembly import assemble


def na_transformer(
    *,
    dataset_name: str | None = None,
    well_base_path: str | None = None,
    fields: Sequence[str] | None = None,
    channel_slots: Sequence[int] | None = None,
    pretrained: str | None = None,
    adapter: Mapping[str, Any] | None = None,
    seed: int | None = None,
    **architecture: Any,
) -> backbone.NATransformer:
    """An NA Transformer for ``dataset_name`` (its channels read from the files under ``well_base_path``, within
    the field selection ``fields``), from ``pretrained`` with ``adapter``; other arguments are the architecture
    and the harness's sizes (``NATransformer``'s constructor). ``seed`` (the run's ``+seed``, which the model
    config reads): torch's generator is seeded with it right before the weights are drawn, so the random ones
    (the adapters' ``A``, a backbone built without ``pretrained``) are the same in every run with that seed, through
    ``python -m the_well.benchmark.train`` (which itself seeds nothing) as through ``well_upao.train``."""
    if seed is not None:
        torch.manual_seed(int(seed))
    if channel_slots is None and dataset_name is not None:
        if well_base_path is None:
            raise ValueError("dataset_name needs well_base_path to read the dataset's channels")
        channel_slots = WellSource(well_base_path, dataset_name, fields=fields or None).channel_slots
    return assemble(
        {
            **architecture,
            "channel_slots": channel_slots,
            "dataset_name": dataset_name,
            "pretrained": pretrained,
            "adapter": dict(adapter) if adapter else None,
        }
    )


#: The Hydra target of ``model=na``, ``na_lora``, ``na_nslora``. The Well names run folders after the last part of
#: the model's ``_target_`` (``<dataset>-<model>-<trainer>-NATransformer-<lr>``), so the factory carries the name of
#: the class it builds and run folders keep their names.
NATransformer = na_transformer


def _channel_slots(dataset_name: str | None, well_base_path: str | None, fields: Sequence[str] | None) -> list[int]:
    if dataset_name is None or well_base_path is None:
        raise ValueError("the model needs dataset_name and well_base_path to read the dataset's channels")
    return WellSource(well_base_path, dataset_name, fields=fields or None).channel_slots


def pde_transformer(
    *,
    n_spatial_dims: int,
    spatial_resolution: Sequence[int],
    dim_in: int,
    dim_out: int,
    history: int,
    dataset_name: str | None = None,
    well_base_path: str | None = None,
    fields: Sequence[str] | None = None,
    channel_types: Sequence[int] | None = None,
    **settings: Any,
):
    """``model=pde_transformer``: PDE-Transformer (separate channels, extra ``well-upao[fm]``) for the harness's
    sizes; each channel's type is its slot of our table unless ``channel_types`` (a released checkpoint's ids)."""
    # the foundation models need the optional extra well-upao[fm]: imported when one is built
    from well_upao.models.foundation import PDETransformerOneStep

    del spatial_resolution, dim_in  # the model reads any grid that is a multiple of its patch hierarchy
    types = list(channel_types) if channel_types else _channel_slots(dataset_name, well_base_path, fields)
    return PDETransformerOneStep(
        history=history, n_fields=dim_out, channel_types=types, n_spatial_dims=n_spatial_dims, **settings
    )


def poseidon(
    *,
    n_spatial_dims: int,
    spatial_resolution: Sequence[int],
    dim_in: int,
    dim_out: int,
    history: int,
    **settings: Any,
):
    """``model=poseidon``: Poseidon's scOT (extra ``well-upao[fm]``) on the last input frame and the constant
    fields (``dim_in - history * dim_out`` of them)."""
    from well_upao.models.foundation import PoseidonOneStep  # the optional extra, as above

    return PoseidonOneStep(
        history=history,
        n_fields=dim_out,
        n_constant_fields=dim_in - history * dim_out,
        spatial_resolution=tuple(spatial_resolution),
        n_spatial_dims=n_spatial_dims,
        **settings,
    )


def pde_transformer_mixture(
    *,
    history: int,
    dataset_name: str | None = None,
    well_base_path: str | None = None,
    fields: Sequence[str] | None = None,
    formatter: str | None = None,
    **settings: Any,
):
    """PDE-Transformer for pretraining on a slot mixture (``--config-name pretrain_pde_transformer``): channel
    types are the slots every batch brings, so no dataset is named (the pretraining config sets ``dataset_name``,
    ``fields`` and ``well_base_path`` to null for every model; ``formatter`` is the mixture's own)."""
    from well_upao.models.foundation import PDETransformerSlots  # the optional extra, as above

    if dataset_name is not None or fields is not None:
        raise ValueError("a mixture's PDE-Transformer reads the slots of each batch: leave dataset_name/fields null")
    del well_base_path, formatter
    return PDETransformerSlots(history=history, **settings)


#: Hydra targets named after the classes they build (the Well names run folders after the target's last part)
PDETransformer = pde_transformer
Poseidon = poseidon
