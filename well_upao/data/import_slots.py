"""The backbone's slot of every channel of an import (``well_upao.data.slots``: 18 named slots).

Every channel (the Well's flattened names: ``T``, ``velocity_x``, ...) of a scalar or vector field needs a slot: the
registered dataset's row if the dataset's name is registered (``slots`` may add to it, never contradict it), else
``slots``, else a channel named as a slot keeps it (``temperature``, ``pressure``, ...) and ``velocity_x/y/z`` go to
``Vx/Vy/Vz``. A channel without a slot, a name that is no slot, and two channels sharing one are refused
(``ImportInputError``, naming the fix). The backbone reads scalar and vector fields: a tensor field's channels get a
slot only where ``slots`` gives one; a tensor field without slots is stored all the same, and the registration to
print keeps the other fields.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from well_upao.data.datasets import DATASETS
from well_upao.data.import_arrays import ImportInputError
from well_upao.data.import_plan import ImportPlan, channels_of
from well_upao.data.slot_inventory import SLOT_INDEX, SLOT_NAMES


@dataclass(frozen=True)
class SlotRow:
    """Each channel's slot (``row``), the channels that have one in the Well's order, and the fields to register
    where some tensor field has no slots (``kept_fields``, else ``None``: all)."""

    row: dict[str, str]
    channels: list[str]
    kept_fields: tuple[str, ...] | None


def assign_slots(plan: ImportPlan, slots: Mapping[str, str] | None, name: str) -> SlotRow:
    """The slot row of the dataset ``name`` (see the module docstring); a tensor field left without slots is noted
    in ``plan.notes``."""
    given = dict(slots or {})
    tensor_channels = [c for c in plan.channels() if c not in plan.channels(max_order=1)]
    row = resolve_slots(plan.channels(max_order=1), {c: s for c, s in given.items() if c not in tensor_channels}, name)
    row |= {c: s for c, s in given.items() if c in tensor_channels}
    n_dims = len(plan.axes)
    tensors = sorted({s.name for s in plan.fields if s.order > 1 and not all(c in row for c in channels_of(s, n_dims))})
    kept = tuple(s.name for s in plan.fields if s.name not in tensors) if tensors else None
    if tensors:
        plan.notes.append(
            f"{', '.join(tensors)}: tensor field(s) without slots, stored but not read by the backbone; register the "
            f"dataset with fields={kept!r} to keep the others"
        )
    return SlotRow(row, [c for c in plan.channels() if c in row], kept)


def resolve_slots(channels: list[str], given: Mapping[str, str] | None, name: str) -> dict[str, str]:
    """Each channel's slot (see the module docstring), refused where one has none or two share one."""
    given = dict(given or {})
    unknown = sorted(set(given) - set(channels))
    if unknown:
        raise ImportInputError(
            f"--slots names channel {unknown[0]!r}, which the fields do not have (channels: {', '.join(channels)})"
        )
    row = _registered_row(channels, given, name)
    for channel in channels:
        if channel in row:
            continue
        if channel in SLOT_INDEX:
            row[channel] = channel
        elif re.fullmatch(r"velocity_[xyz]", channel):
            row[channel] = "V" + channel[-1]
    _check_row(channels, row)
    return {c: row[c] for c in channels}


def _registered_row(channels: list[str], given: dict[str, str], name: str) -> dict[str, str]:
    """The registered dataset's slots of ``channels`` with ``given`` added (refused where they contradict), else
    ``given``."""
    registered = DATASETS.get(name)
    if registered is None:
        return dict(given)
    row = {c: registered.slots[c] for c in channels if c in registered.slots}
    clash = {c: s for c, s in given.items() if row.get(c, s) != s}
    if clash:
        raise ImportInputError(
            f"dataset {name!r} is registered with slots {dict(registered.slots)}, which --slots {clash} "
            "contradicts: change the registration or drop --slots"
        )
    row.update(given)
    return row


def _check_row(channels: list[str], row: Mapping[str, str]) -> None:
    """Every channel has a slot of the backbone's, its own."""
    missing = [c for c in channels if c not in row]
    if missing:
        raise ImportInputError(
            f"channels {missing} have no slot: map each to one of the backbone's slots with --slots "
            f"{missing[0]}=SLOT (Python: slots={{{missing[0]!r}: SLOT}}); slots: {', '.join(SLOT_NAMES)}"
        )
    bad = {c: s for c, s in row.items() if s not in SLOT_INDEX}
    if bad:
        raise ImportInputError(f"--slots {bad}: not slots of the backbone ({', '.join(SLOT_NAMES)})")
    shared = [s for s in set(row.values()) if list(row.values()).count(s) > 1]
    if shared:
        users = [c for c, s in row.items() if s == shared[0]]
        raise ImportInputError(f"channels {users} share the slot {shared[0]!r}: give each its own (--slots)")
