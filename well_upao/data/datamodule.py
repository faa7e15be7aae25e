"""The data module our Hydra data configs instantiate: The Well's ``WellDataModule`` plus name registration.

The Well's datasets assert that the dataset name is one of theirs; we register ours first, and check that the
files exist so a missing dataset gives a one-line hint instead of an assertion deep in the loader.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from the_well.data import WellDataModule

from well_upao.data.metadata import first_file
from well_upao.data.registry import register_dataset_names


class WellUpaoDataModule(WellDataModule):
    """``WellDataModule`` that accepts our dataset names (same arguments).

    ``imports``: modules imported first, where a user registers their own dataset slots and PDEs (the data
    module is the first object the harness builds, so the model and trainer see the registrations).
    """

    def __init__(
        self, well_base_path: str, well_dataset_name: str, batch_size: int, imports: Sequence[str] = (), **kwargs
    ):
        for module in imports:
            importlib.import_module(module)
        register_dataset_names([well_dataset_name])
        for split in ("train", "valid", "test"):
            first_file(well_base_path, well_dataset_name, split)  # clear error when missing
        super().__init__(
            well_base_path=str(well_base_path), well_dataset_name=well_dataset_name, batch_size=batch_size, **kwargs
        )
