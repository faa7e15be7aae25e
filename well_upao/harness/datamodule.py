"""The data module our Hydra data configs instantiate: The Well's ``WellDataModule`` plus name registration,
field selection, a resumable training order and sample provenance.

The Well's datasets assert that the dataset name is one of theirs; we register ours first, and check that the
files exist so a missing dataset gives a one-line hint instead of an assertion deep in the loader. When a field
selection applies (``fields``, or the paper's selection such as active matter without its tensor fields), every
split is served by ``WellUpaoDataset``; the training split always is, and every sample carries its
``sample_index``, which ``WellUpaoDataset.describe_index`` turns into file, trajectory and time.

The training loader draws a permutation per epoch from ``(shuffle_seed, epoch)`` (``EpochSampler``), so an
epoch interrupted after ``n`` batches can be resumed by skipping them: the same command finishes with the same
optimizer steps as an uninterrupted run.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Sequence

import numpy as np
import torch
import yaml
from the_well.data import WellDataModule, WellDataset
from torch.utils.data import DataLoader, Sampler

from well_upao.data.datasets import import_modules
from well_upao.data.source import SPLITS, WellSource
from well_upao.harness.names import register_dataset_names


class WellUpaoDataset(WellDataset):
    """A ``WellDataset`` that keeps only the core fields in ``fields`` (metadata, samples and normalisation; all of
    them when ``None``) and adds each sample's ``sample_index``. With a selection, the normalisation is built over
    the kept fields only: ``stats.yaml`` need not cover the others, and they are never normalised."""

    def __init__(self, *args, fields: Sequence[str] | None = None, **kwargs):
        normalization_type = kwargs.get("normalization_type")
        if fields is not None:  # the Well's would be built over every field; ours, below, over the kept ones only
            kwargs["normalization_type"] = None
        super().__init__(*args, **kwargs)
        self.normalization_type = normalization_type
        self.kept_fields = None if fields is None else tuple(fields)
        if self.kept_fields is None:
            return
        unknown = set(self.kept_fields) - set(self.core_field_names) - set(self.core_constant_field_names)
        if unknown:
            raise ValueError(f"fields {sorted(unknown)} are not in the dataset (it has {self.core_field_names})")

        def keep(name: str) -> bool:
            return any(name == f or name.startswith(f"{f}_") for f in self.kept_fields)

        for names in (self.metadata.field_names, self.metadata.constant_field_names):
            for order in names:
                names[order] = [n for n in names[order] if keep(n)]
        self.core_field_names = [n for n in self.core_field_names if n in self.kept_fields]
        self.core_constant_field_names = [n for n in self.core_constant_field_names if n in self.kept_fields]
        if self.use_normalization and normalization_type:  # the normalisation over the kept fields only
            with self.fs.open(self.normalization_path, mode="r") as f:
                stats = yaml.safe_load(f)
            self.norm = self.normalization_type(stats, self.core_field_names, self.core_constant_field_names)

    def __getitem__(self, index):
        sample = super().__getitem__(index)
        sample["sample_index"] = index
        return sample

    def describe_index(self, index: int) -> str:
        """``<file> trajectory <i> time <t>`` of a sample (the Well's own index arithmetic)."""
        if self.restriction_set is not None:
            index = self.restriction_set[index]
        file_number = int(np.searchsorted(self.file_index_offsets, index, side="right") - 1)
        local = index - max(self.file_index_offsets[file_number], 0)
        windows = self.n_windows_per_trajectory[file_number]
        name = os.path.basename(str(self.files_paths[file_number]))
        return f"{name} trajectory {local // windows} time {local % windows}"

    def _reconstruct_fields(self, file, cache, sample_idx, time_idx, n_steps, dt):
        """The Well's reader reads (and, with ``use_normalization``, normalises) every field of the file; ours then
        drops those not kept. While it reads, ``norm`` (built over the kept fields) stands behind
        ``KeptFieldsNormalization``, so a dropped field is passed through rather than looked up in statistics
        that do not cover it (active matter's D and E under the Well's protocol)."""
        if self.kept_fields is None:
            return super()._reconstruct_fields(file, cache, sample_idx, time_idx, n_steps, dt)
        norm = self.norm
        if norm is not None:
            self.norm = KeptFieldsNormalization(norm, self.kept_fields)
        try:
            variable, constant = super()._reconstruct_fields(file, cache, sample_idx, time_idx, n_steps, dt)
        finally:
            self.norm = norm
        for group in (variable, constant):
            for order in group:
                group[order] = {k: v for k, v in group[order].items() if k in self.kept_fields}
        return variable, constant


class KeptFieldsNormalization:
    """The per-field calls of the Well's reader on a dataset with a field selection: ``normalize`` and
    ``delta_normalize`` of a kept field are the normalisation's own; a field that is not kept comes back unchanged
    (it is dropped after reading, and its statistics need not exist)."""

    def __init__(self, norm, kept_fields: Sequence[str]):
        self.norm = norm
        self.kept_fields = tuple(kept_fields)

    def normalize(self, x: torch.Tensor, field: str) -> torch.Tensor:
        return self.norm.normalize(x, field) if field in self.kept_fields else x

    def delta_normalize(self, x: torch.Tensor, field: str) -> torch.Tensor:
        return self.norm.delta_normalize(x, field) if field in self.kept_fields else x


class WellUpaoDataModule(WellDataModule):
    """``WellDataModule`` that accepts our dataset names (same arguments).

    ``imports``: modules imported first, where a user registers their own dataset slots and PDEs (the data
    module is the first object the harness builds, so the model and trainer see the registrations).
    ``fields``: core field names to keep (default: the paper's selection for the dataset, else all).
    ``shuffle_seed``: seed of the per-epoch training order. ``settings`` (what checkpoints record, so later
    commands on a run know its data) holds the base path, dataset, history, strides, field selection, imports and
    normalisation. ``source`` is the training split's ``WellSource`` (files, layout,
    registry entry), the one place the rest of a run reads the dataset's description from.
    """

    def __init__(
        self,
        well_base_path: str,
        well_dataset_name: str,
        batch_size: int,
        imports: Sequence[str] = (),
        fields: Sequence[str] | None = None,
        shuffle_seed: int = 0,
        **kwargs,
    ):
        import_modules(imports, "data.imports")
        self.shuffle_seed = int(shuffle_seed)
        self.settings = {
            "well_base_path": os.path.abspath(well_base_path),
            "well_dataset_name": well_dataset_name,
            "n_steps_input": kwargs.get("n_steps_input", 1),
            "min_dt_stride": kwargs.get("min_dt_stride", 1),
            "max_dt_stride": kwargs.get("max_dt_stride", 1),
            "fields": list(fields) if fields else None,
            "imports": list(imports),
            "use_normalization": bool(kwargs.get("use_normalization", False)),
            "normalization_type": normalization_name(kwargs.get("normalization_type")),
        }
        register_dataset_names([well_dataset_name])
        self.source = WellSource(well_base_path, well_dataset_name, "train", fields or None)
        for split in SPLITS:
            _ = self.source.with_split(split).files  # a clear error when a split is missing
        check_frames_for_rollouts(self.source.layout.n_steps, kwargs.get("n_steps_input", 1), kwargs)
        self.fields = self.source.kept_fields
        kwargs["train_dataset"] = functools.partial(WellUpaoDataset, fields=self.fields)
        super().__init__(
            well_base_path=str(well_base_path), well_dataset_name=well_dataset_name, batch_size=batch_size, **kwargs
        )
        if self.fields is not None:
            self._select_fields_in_evaluation_splits(kwargs)

    def _select_fields_in_evaluation_splits(self, kwargs: dict) -> None:
        """Rebuild the validation/test datasets (hard-wired to ``WellDataset`` upstream) with the selection."""
        common = dict(
            well_base_path=self.well_base_path,
            well_dataset_name=self.well_dataset_name,
            include_filters=kwargs.get("include_filters", []),
            exclude_filters=kwargs.get("exclude_filters", []),
            n_steps_input=kwargs.get("n_steps_input", 1),
            n_steps_output=kwargs.get("n_steps_output", 1),
            storage_options=kwargs.get("storage_kwargs"),
            min_dt_stride=kwargs.get("min_dt_stride", 1),
            max_dt_stride=kwargs.get("min_dt_stride", 1),
            boundary_return_type=kwargs.get("boundary_return_type", "padding"),
            fields=self.fields,
        )
        rollout = dict(full_trajectory_mode=True, max_rollout_steps=kwargs.get("max_rollout_steps", 100))
        self.val_dataset = WellUpaoDataset(well_split_name="valid", **common)
        self.rollout_val_dataset = WellUpaoDataset(well_split_name="valid", **common, **rollout)
        self.test_dataset = WellUpaoDataset(well_split_name="test", **common)
        self.rollout_test_dataset = WellUpaoDataset(well_split_name="test", **common, **rollout)

    def checkpoint_info(self) -> dict:
        """What checkpoints record about the data (``train.data``): ``settings``."""
        return {"data": dict(self.settings)}

    def train_dataloader(self) -> DataLoader:
        """The training batches in the order of ``EpochSampler`` (drop the last partial batch, as the Well).
        A training split with fewer windows than one batch is refused: the Well's loader would yield no batch."""
        windows = len(self.train_dataset) // self.world_size
        if windows < self.batch_size:
            raise ValueError(
                f"{self.well_dataset_name}: the training split has {windows} windows per process, fewer than one "
                f"batch of {self.batch_size} (the loader drops a partial batch): lower data.batch_size or add "
                "training trajectories"
            )
        sampler = EpochSampler(len(self.train_dataset), self.shuffle_seed, self.world_size, self.rank)
        return DataLoader(
            self.train_dataset,
            batch_size=self.batch_size,
            sampler=sampler,
            num_workers=self.data_workers,
            drop_last=True,
        )

    def val_dataloader(self) -> DataLoader:
        """Validation batches in one fixed order (``_evaluation_loader``), the same at every validation. The
        rollout loaders keep the Well's (reshuffled) order: rollout validations run over the whole split at the end of
        training, where the order does not change the mean."""
        return self._evaluation_loader(self.val_dataset, super().val_dataloader)

    def test_dataloader(self) -> DataLoader:
        """Test batches, with the same rules as ``val_dataloader`` (the Well's test loader is sequential; with a
        full test pass only the windows dropped with a partial last batch and the last batch's plots differ)."""
        return self._evaluation_loader(self.test_dataset, super().test_dataloader)

    def _evaluation_loader(self, dataset, well_loader) -> DataLoader:
        """The Well's loader shuffles with torch's global generator at every pass, so a short validation
        (``trainer.short_validation_length`` batches) scored each epoch's model on other windows, and the selection
        compared candidates on different samples. Ours: one permutation from a fixed seed
        (``EVALUATION_ORDER_SEED``), the same for every validation, run and training seed, with the Well's
        ``drop_last``; a split with fewer windows than one batch is one batch of all its windows (the Well's loader
        would validate nothing). Several processes keep the Well's ``DistributedSampler`` (its order is fixed too)."""
        if self.is_distributed or len(dataset) == 0:
            return well_loader()
        batch = min(self.batch_size, len(dataset))
        order = torch.randperm(len(dataset), generator=torch.Generator().manual_seed(EVALUATION_ORDER_SEED))
        return DataLoader(
            dataset, batch_size=batch, sampler=order.tolist(), drop_last=True, num_workers=self.data_workers
        )


#: the seed of the one order in which validation and test windows are served (``_evaluation_loader``)
EVALUATION_ORDER_SEED = 0


def check_frames_for_rollouts(n_frames: int, n_steps_input: int, kwargs: dict) -> None:
    """Refuse, with the numbers, a history and stride that the Well's rollout datasets cannot hold: its full-trajectory
    mode (built for every split at start-up) needs ``n_frames - max(n_steps_input, start) * stride >= stride``, one
    stride more than a single window uses (its own assertion says only "not supported")."""
    stride = int(kwargs.get("min_dt_stride", 1))
    start = int(kwargs.get("start_output_steps_at_t", -1))
    needed = max(n_steps_input * stride, start) + stride
    if n_frames < needed:
        raise ValueError(
            f"trajectories of {n_frames} frames are too short for history {n_steps_input} at stride {stride}: the "
            f"Well's rollout datasets need at least {needed} frames; lower data.min_dt_stride / data.max_dt_stride "
            "or data.n_steps_input, or store more frames"
        )


def normalization_name(normalization_type) -> str | None:
    """The name of a normalisation class of the Well's (``ZScoreNormalization``, ``RMSNormalization``) as
    checkpoints record it, ``None`` when unset."""
    if normalization_type is None:
        return None
    return normalization_type if isinstance(normalization_type, str) else normalization_type.__name__


class EpochSampler(Sampler[int]):
    """A permutation of ``range(size)`` per epoch, drawn from ``(seed, epoch)`` and split over ``num_replicas``
    processes (each takes every ``num_replicas``-th index, the tail that does not divide is dropped). ``skip(n)``
    leaves out the first ``n`` indices of the next pass only (an interrupted epoch's consumed samples); the
    length stays the whole epoch's, so learning-rate schedules do not change on resume."""

    def __init__(self, size: int, seed: int = 0, num_replicas: int = 1, rank: int = 0):
        self.size, self.seed, self.num_replicas, self.rank = size, seed, num_replicas, rank
        self.epoch, self.skipped = 0, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def skip(self, count: int) -> None:
        self.skipped = count

    def __len__(self) -> int:
        return self.size // self.num_replicas

    def __iter__(self) -> Iterator[int]:
        generator = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
        order = torch.randperm(self.size, generator=generator)[: len(self) * self.num_replicas]
        mine = order[self.rank :: self.num_replicas].tolist()
        skipped, self.skipped = self.skipped, 0
        return iter(mine[skipped:])
