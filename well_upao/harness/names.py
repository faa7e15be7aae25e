"""Make The Well's loaders accept our dataset names without editing the installed package.

``the_well.data.WellDataset`` asserts that ``well_dataset_name`` is in ``the_well.data.utils.WELL_DATASETS``
whenever a base path is given. The list is a module-level object, so appending to it at run time (before the
datasets are built) is enough; every function here is idempotent.
"""

from __future__ import annotations

from collections.abc import Iterable

from the_well.data import utils as well_utils

from well_upao.data.datasets import dataset_names


def register_dataset_names(names: Iterable[str]) -> None:
    """Append ``names`` to the Well's list of accepted dataset names (once each)."""
    for name in names:
        if name not in well_utils.WELL_DATASETS:
            well_utils.WELL_DATASETS.append(name)


def register_exact_datasets() -> None:
    """Register the seven exact-solution dataset names (the ``exact`` rows of the dataset registry)."""
    register_dataset_names(dataset_names("exact"))
