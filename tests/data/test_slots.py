"""The 18-slot table: order, completeness for every supported dataset, no collisions."""

from __future__ import annotations

import pytest

from well_upao.data import slots
from well_upao.datasets_exact import EXACT_PDES


def test_slot_order_is_the_papers():
    assert slots.N_SLOTS == 18
    assert slots.SLOT_NAMES[:3] == ("Vx", "Vy", "Vz")
    assert slots.SLOT_NAMES[3] == "buoyancy" and slots.SLOT_NAMES[3 + 12] == "pressure"
    assert slots.SLOT_NAMES[-1] == "temperature"


@pytest.mark.parametrize("name", list(slots.DATASET_SLOTS))
def test_every_row_is_complete_and_collision_free(name):
    row = slots.DATASET_SLOTS[name]
    assert set(row.values()) <= set(slots.SLOT_NAMES)
    indices = slots.slot_indices(name, list(row))
    assert len(set(indices)) == len(indices)
    assert sum(slots.channel_mask(name, list(row))) == len(row)


@pytest.mark.parametrize("name", list(EXACT_PDES))
def test_every_exact_dataset_channel_has_a_slot(name):
    pde = EXACT_PDES[name]
    axes = "xyz"[: pde.n_spatial_dims]
    channels = [s.name if s.order == 0 else f"{s.name}_{a}" for s in pde.fields for a in (axes if s.order else [""])]
    assert sorted(channels) == sorted(slots.DATASET_SLOTS[name])


def test_velocity_components_land_in_vector_slots():
    assert slots.slot_indices("tg2d", ["pressure", "velocity_x", "velocity_y"]) == [15, 0, 1]
    assert slots.slot_indices("burgers1d", ["velocity_x"]) == [0]


def test_unknown_inputs_are_rejected():
    with pytest.raises(slots.SlotError, match="no row"):
        slots.slot_indices("mystery", ["u"])
    with pytest.raises(slots.SlotError, match="no slot"):
        slots.slot_indices("tg2d", ["vorticity"])
    with pytest.raises(slots.SlotError, match="unknown slot"):
        slots.register_dataset_slots("mine", {"u": "colour"})
    with pytest.raises(slots.SlotError, match="share a slot"):
        slots.register_dataset_slots("mine", {"u": "height", "h": "height"})


def test_user_rows_can_be_registered(monkeypatch):
    monkeypatch.setattr(slots, "DATASET_SLOTS", dict(slots.DATASET_SLOTS))
    slots.register_dataset_slots("my_heat", {"temperature": "temperature"})
    assert slots.slot_indices("my_heat", ["temperature"]) == [17]
