"""The data module our Hydra data configs instantiate: The Well's ``WellDataModule`` plus name registration and
field selection.

The Well's datasets assert that the dataset name is one of theirs; we register ours first, and check that the
files exist so a missing dataset gives a one-line hint instead of an assertion deep in the loader. When a field
selection applies (``fields``, or the paper's selection such as active matter without its tensor fields), every
split is served by :class:`FieldSelectingWellDataset`.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Sequence

from the_well.data import WellDataModule, WellDataset

from well_upao.data.datasets import selected_fields
from well_upao.data.metadata import first_file
from well_upao.harness.names import register_dataset_names


class FieldSelectingWellDataset(WellDataset):
    """A ``WellDataset`` that keeps only the core fields in ``fields`` (metadata, samples and normalisation)."""

    def __init__(self, *args, fields: Sequence[str] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
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
        if self.norm is not None:  # rebuild the normalisation over the kept fields only
            import yaml

            with self.fs.open(self.normalization_path, mode="r") as f:
                stats = yaml.safe_load(f)
            self.norm = self.normalization_type(stats, self.core_field_names, self.core_constant_field_names)

    def _reconstruct_fields(self, file, cache, sample_idx, time_idx, n_steps, dt):
        variable, constant = super()._reconstruct_fields(file, cache, sample_idx, time_idx, n_steps, dt)
        if self.kept_fields is None:
            return variable, constant
        for group in (variable, constant):
            for order in group:
                group[order] = {k: v for k, v in group[order].items() if k in self.kept_fields}
        return variable, constant


class WellUpaoDataModule(WellDataModule):
    """``WellDataModule`` that accepts our dataset names (same arguments).

    ``imports``: modules imported first, where a user registers their own dataset slots and PDEs (the data
    module is the first object the harness builds, so the model and trainer see the registrations).
    ``fields``: core field names to keep (default: the paper's selection for the dataset, else all).
    """

    def __init__(
        self,
        well_base_path: str,
        well_dataset_name: str,
        batch_size: int,
        imports: Sequence[str] = (),
        fields: Sequence[str] | None = None,
        **kwargs,
    ):
        for module in imports:
            importlib.import_module(module)
        register_dataset_names([well_dataset_name])
        for split in ("train", "valid", "test"):
            first_file(well_base_path, well_dataset_name, split)  # clear error when missing
        self.fields = selected_fields(well_dataset_name, fields)
        if self.fields is not None:
            kwargs["train_dataset"] = functools.partial(FieldSelectingWellDataset, fields=self.fields)
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
        self.val_dataset = FieldSelectingWellDataset(well_split_name="valid", **common)
        self.rollout_val_dataset = FieldSelectingWellDataset(well_split_name="valid", **common, **rollout)
        self.test_dataset = FieldSelectingWellDataset(well_split_name="test", **common)
        self.rollout_test_dataset = FieldSelectingWellDataset(well_split_name="test", **common, **rollout)
