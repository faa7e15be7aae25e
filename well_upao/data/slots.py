"""The documented home of the channel slots (docs/your-data.md "Channel slots", INTERFACES.md section 2): the 18-slot
inventory (``well_upao.data.slot_inventory``) and the dataset registry's views of each dataset's slot row
(``well_upao.data.datasets``), importable from one place.

A user module may write ``from well_upao.data.slots import register_dataset_slots, SLOT_NAMES``; the package
itself imports the inventory from ``well_upao.data.slot_inventory``, which the registry imports too.
"""

from __future__ import annotations

from well_upao.data.datasets import (
    DATASET_SLOTS,
    channel_mask,
    register_dataset_slots,
    selected_fields,
    slot_indices,
)
from well_upao.data.slot_inventory import (
    N_SLOTS,
    SCALAR_SLOTS,
    SLOT_INDEX,
    SLOT_NAMES,
    VECTOR_SLOTS,
    SlotError,
    check_slot_row,
    slot_table_hash,
)

__all__ = [
    "DATASET_SLOTS",
    "N_SLOTS",
    "SCALAR_SLOTS",
    "SLOT_INDEX",
    "SLOT_NAMES",
    "VECTOR_SLOTS",
    "SlotError",
    "channel_mask",
    "check_slot_row",
    "register_dataset_slots",
    "selected_fields",
    "slot_indices",
    "slot_table_hash",
]
