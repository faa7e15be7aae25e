"""The unified 18-channel representation and the one mapping from dataset channels to slots.

The model sees ``C = 18`` channels in this fixed order (paper, appendix "Channel Slot Mapping"):
three vector slots ``Vx, Vy, Vz`` followed by the paper's 15 scalar slots in its index order 0..14.
A dataset's channels are the Well's flattened field names in the order the Well produces them
(all t0 fields, then each component of the t1 fields, ``velocity_x, velocity_y, ...``); each is written to
exactly one slot, the other slots are zero and masked out.

Choices where a field has no obvious slot (ruling 8 of paper-decisions.md), identical in pretraining and
adaptation:

* advected / diffused scalars ``u`` (advdiff2d, adv1d, adv3d) -> ``concentration_rho`` (a single-species
  concentration transported by a flow, which is what these equations describe);
* the wave displacement ``u`` -> ``height`` (the linearised shallow-water height obeys the same wave equation);
  its rate ``w = du/dt`` -> ``Vz``: the out-of-plane velocity of the membrane whose height is ``u``;
* the 1D Burgers velocity -> ``Vx`` (the paper says so explicitly).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

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

# dataset name -> {flattened Well channel name: slot name}. Channel order follows the Well (t0, t1, t2).
DATASET_SLOTS: dict[str, dict[str, str]] = {
    # exact-solution datasets (this package)
    "tg2d": {"pressure": "pressure", "velocity_x": "Vx", "velocity_y": "Vy"},
    "wave2d": {"u": "height", "w": "Vz"},
    "advdiff2d": {"u": "concentration_rho"},
    "burgers2d": {"velocity_x": "Vx", "velocity_y": "Vy"},
    "burgers1d": {"velocity_x": "Vx"},
    "adv1d": {"u": "concentration_rho"},
    "adv3d": {"u": "concentration_rho"},
    # the simulated pretraining families (well-upao generate-pretrain), identical slots when adapting
    "diffusion_reaction_2d": {"u": "concentration_u", "v": "concentration_v"},
    "shallow_water_2d": {"height": "height", "velocity_x": "Vx", "velocity_y": "Vy"},
    "incompressible_ns_forced_2d": {"forcing": "buoyancy", "velocity_x": "Vx", "velocity_y": "Vy"},
    "compressible_ns_1d": {"density": "density", "pressure": "pressure", "velocity_x": "Vx"},
    "compressible_ns_2d": {"density": "density", "pressure": "pressure", "velocity_x": "Vx", "velocity_y": "Vy"},
    "compressible_ns_3d": {
        "density": "density",
        "pressure": "pressure",
        "velocity_x": "Vx",
        "velocity_y": "Vy",
        "velocity_z": "Vz",
    },
    # the Well's datasets used by the paper (field selection of the paper's appendix)
    "active_matter": {"concentration": "concentration_rho", "velocity_x": "Vx", "velocity_y": "Vy"},
    "gray_scott_reaction_diffusion": {"A": "concentration_u", "B": "concentration_v"},
    "rayleigh_benard": {"buoyancy": "buoyancy", "pressure": "pressure", "velocity_x": "Vx", "velocity_y": "Vy"},
    "shear_flow": {"tracer": "passive_tracer", "pressure": "pressure", "velocity_x": "Vx", "velocity_y": "Vy"},
}


#: the paper's field selection where it drops fields (appendix "The Well Downstream Datasets"): active matter
#: keeps concentration and velocity and drops the orientation (D) and strain-rate (E) tensors
PAPER_FIELDS: dict[str, tuple[str, ...]] = {"active_matter": ("concentration", "velocity")}


def selected_fields(dataset_name: str, fields: Sequence[str] | None = None) -> tuple[str, ...] | None:
    """Core field names to keep for a dataset: ``fields`` if given, else the paper's selection, else all (None)."""
    if fields:
        return tuple(fields)
    return PAPER_FIELDS.get(dataset_name)


class SlotError(ValueError):
    """A dataset or channel that the slot table does not know, or an inconsistent mapping."""


def slot_indices(dataset_name: str, channel_names: Sequence[str]) -> list[int]:
    """Slot index of each of ``channel_names`` (in the given order) for ``dataset_name``."""
    if dataset_name not in DATASET_SLOTS:
        raise SlotError(
            f"dataset {dataset_name!r} has no row in the slot table (well_upao.data.slots.DATASET_SLOTS); "
            f"known: {sorted(DATASET_SLOTS)}. Register it with register_dataset_slots()."
        )
    row = DATASET_SLOTS[dataset_name]
    missing = [c for c in channel_names if c not in row]
    if missing:
        raise SlotError(f"dataset {dataset_name!r}: channels {missing} have no slot (row: {row})")
    indices = [SLOT_INDEX[row[c]] for c in channel_names]
    if len(set(indices)) != len(indices):
        raise SlotError(f"dataset {dataset_name!r}: two channels share a slot: {row}")
    return indices


def channel_mask(dataset_name: str, channel_names: Sequence[str]) -> list[bool]:
    """Binary mask of length 18 marking the slots used by the dataset's channels."""
    used = set(slot_indices(dataset_name, channel_names))
    return [i in used for i in range(N_SLOTS)]


def register_dataset_slots(dataset_name: str, mapping: dict[str, str], overwrite: bool = False) -> None:
    """Add a row for a user dataset: ``{flattened channel name: slot name}``."""
    unknown = [s for s in mapping.values() if s not in SLOT_INDEX]
    if unknown:
        raise SlotError(f"unknown slot names {unknown}; slots are {SLOT_NAMES}")
    if len(set(mapping.values())) != len(mapping):
        raise SlotError(f"two channels share a slot: {mapping}")
    if dataset_name in DATASET_SLOTS and not overwrite and DATASET_SLOTS[dataset_name] != mapping:
        raise SlotError(f"dataset {dataset_name!r} already has a different slot row")
    DATASET_SLOTS[dataset_name] = dict(mapping)


def slot_table_hash() -> str:
    """Short hash of the slot inventory; stored in checkpoints so a model never meets a reordered table."""
    payload = json.dumps({"slots": SLOT_NAMES}, sort_keys=True).encode()
    return hashlib.sha256(payload).hexdigest()[:16]
