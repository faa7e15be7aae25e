"""The unified 18-channel representation: the slot inventory and the rule a dataset's slot row must follow.

The package imports the inventory from here; users import it, with the registry's slot views, from the documented
façade ``well_upao.data.slots`` (both this module and the registry sit below that façade, so no import circles).

The model sees ``C = 18`` channels in this fixed order (paper, appendix "Channel Slot Mapping"):
three vector slots ``Vx, Vy, Vz`` followed by the paper's 15 scalar slots in its index order 0..14.
A dataset's channels are the Well's flattened field names in the order the Well produces them
(all t0 fields, then each component of the t1 fields, ``velocity_x, velocity_y, ...``); each is written to
exactly one slot, the other slots are zero and masked out. Each dataset's row lives in its registry entry
(``well_upao.data.datasets``, which also documents our choices where a field has no obvious slot).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

VECTOR_SLOTS: tuple[str, ...] = ("Vx", "Vy", "Vz")
SCALAR_SLOTS: tuple[str, ...] = (
    "buoyancy",
    "concentration_rho",
    "concentration_u",
    "concentration_v",
    "density",
    "electron_fraction",
    "energy",
    "entropy",
    "geometry",
    "gravitational_potential",
    "height",
    "passive_tracer",
    "pressure",
    "speed_of_sound",
    "temperature",
)
SLOT_NAMES: tuple[str, ...] = VECTOR_SLOTS + SCALAR_SLOTS
N_SLOTS = len(SLOT_NAMES)
SLOT_INDEX: dict[str, int] = {name: i for i, name in enumerate(SLOT_NAMES)}


class SlotError(ValueError):
    """A dataset or channel that the slot table does not know, or an inconsistent mapping."""


def check_slot_row(dataset_name: str, mapping: Mapping[str, str]) -> None:
    """Raise unless ``mapping`` sends each channel to a known slot and no two channels to the same one."""
    unknown = [s for s in mapping.values() if s not in SLOT_INDEX]
    if unknown:
        raise SlotError(f"dataset {dataset_name!r}: unknown slot names {unknown}; slots are {SLOT_NAMES}")
    if len(set(mapping.values())) != len(mapping):
        raise SlotError(f"dataset {dataset_name!r}: two channels share a slot: {dict(mapping)}")


def slot_table_hash() -> str:
    """Short hash of the slot inventory; stored in checkpoints so a model never meets a reordered table."""
    payload = json.dumps({"slots": SLOT_NAMES}, sort_keys=True).encode()
    return hashlib.sha256(payload).hexdigest()[:16]
