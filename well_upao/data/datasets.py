"""One home per dataset: the ``DatasetSpec`` registry.

A dataset is registered once, with everything specific to it:

* ``name``: the folder under the Well base path, the ``--pde`` key of the generators, the Well ``dataset_name``;
* ``slots``: ``{flattened channel name: slot name}`` in the Well's channel order (t0 fields, then each
  component of the t1 fields, ``velocity_x, velocity_y, ...``), see ``well_upao.data.slots``;
* ``pde``: the PDE of its UPAO residual: a name in ``well_upao.physics``' registry, a ``PDE`` object, or
  ``None`` for the PDE registered under the dataset's own name;
* ``family``: the trajectory family that generates it (``None`` for data made elsewhere, e.g. The Well's);
* ``fields``: the core fields to keep (the paper's selection; ``None`` keeps all);
* ``defaults``: settings of the UPAO trainer this dataset prefers where the run's config leaves them ``null``;
* ``data_config``: the Hydra data config selecting it (``data=<name>``; a user's dataset needs none:
  ``data.well_dataset_name=<name>``);
* ``origin``: ``exact``, ``simulated``, ``well`` or ``user``.

The slot table (``DATASET_SLOTS``), the field selections, the PDE lookup (``well_upao.physics.pde_for_dataset``),
the names the Well's loaders accept and the generators' lists are views of this registry. A user module does the
same as the built-in rows below:

    from well_upao.data.datasets import DatasetSpec, register_dataset

    register_dataset(DatasetSpec("my_heat", slots={"temperature": "temperature"}, pde=MY_HEAT_PDE,
                                 family=MyHeatFamily()))
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from well_upao.data.slot_inventory import N_SLOTS, SLOT_INDEX, SlotError, check_slot_row
from well_upao.datasets_exact import EXACT_PDES
from well_upao.families.base import TrajectoryFamily
from well_upao.families.simulated import SIMULATED_FAMILIES

ORIGINS = ("exact", "simulated", "well", "user")


@dataclass(frozen=True)
class DatasetSpec:
    """Everything specific to one dataset (see the module docstring)."""

    name: str
    slots: Mapping[str, str]
    pde: Any = None
    family: TrajectoryFamily | None = None
    fields: tuple[str, ...] | None = None
    defaults: Mapping[str, Any] = field(default_factory=dict)
    data_config: str | None = None
    origin: str = "user"

    def __post_init__(self) -> None:
        check_slot_row(self.name, self.slots)
        if self.origin not in ORIGINS:
            raise ValueError(f"dataset {self.name!r}: origin must be one of {ORIGINS}, got {self.origin!r}")
        if self.family is not None and self.family.name != self.name:
            raise ValueError(f"dataset {self.name!r}: its family is named {self.family.name!r}")
        object.__setattr__(self, "slots", dict(self.slots))
        object.__setattr__(self, "defaults", dict(self.defaults))
        if self.fields is not None:
            object.__setattr__(self, "fields", tuple(self.fields))


DATASETS: dict[str, DatasetSpec] = {}


def register_dataset(spec: DatasetSpec, overwrite: bool = False) -> DatasetSpec:
    """Add ``spec`` (the same spec again is a no-op; another spec under a taken name needs ``overwrite``)."""
    known = DATASETS.get(spec.name)
    if known is not None and known != spec and not overwrite:
        raise ValueError(f"a different dataset named {spec.name!r} is already registered (pass overwrite=True)")
    DATASETS[spec.name] = spec
    return spec


def get_dataset(name: str) -> DatasetSpec:
    if name not in DATASETS:
        raise SlotError(
            f"dataset {name!r} is not registered; known: {sorted(DATASETS)}. Register it with "
            "well_upao.data.datasets.register_dataset (in a module named by data.imports / --imports)."
        )
    return DATASETS[name]


def dataset_names(origin: str | None = None) -> list[str]:
    """Registered names (of one origin), in registration order."""
    return [name for name, spec in DATASETS.items() if origin is None or spec.origin == origin]


def generators(origin: str | None = None) -> dict[str, TrajectoryFamily]:
    """The families that generate registered datasets (of one origin): the generators' list."""
    return {
        name: spec.family
        for name, spec in DATASETS.items()
        if spec.family is not None and (origin is None or spec.origin == origin)
    }


class UserModuleError(ValueError):
    """A module that should register datasets or PDEs cannot be imported."""


def import_modules(names: Sequence[str], where: str = "") -> None:
    """Import the user modules ``names`` (which register datasets and PDEs): ``data.imports`` of a run,
    ``--imports`` of a command, or the imports a checkpoint recorded (``where`` says which, for the error).

    A module is looked up on ``sys.path`` and then in the current directory (where ``python -m`` finds it too, so
    ``well-upao ... --imports my_pdes`` finds ``./my_pdes.py`` as the harness's ``data.imports=[my_pdes]`` does)."""
    if names and os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.append(os.getcwd())
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as error:
            raise UserModuleError(
                f"cannot import {name!r}{f' ({where})' if where else ''}: {error}; make it importable (PYTHONPATH)"
            ) from error


# ---------------------------------------------------------------------------- the slot table, as a view
class SlotTable(Mapping[str, Mapping[str, str]]):
    """``dataset name -> {channel: slot}`` of every registered dataset (read-only; register to add a row)."""

    def __getitem__(self, name: str) -> Mapping[str, str]:
        return DATASETS[name].slots

    def __iter__(self) -> Iterator[str]:
        return iter(DATASETS)

    def __len__(self) -> int:
        return len(DATASETS)


DATASET_SLOTS = SlotTable()


def slot_indices(dataset_name: str, channel_names: Sequence[str]) -> list[int]:
    """Slot index of each of ``channel_names`` (in the given order) for ``dataset_name``."""
    row = get_dataset(dataset_name).slots
    missing = [c for c in channel_names if c not in row]
    if missing:
        raise SlotError(f"dataset {dataset_name!r}: channels {missing} have no slot (row: {row})")
    return [SLOT_INDEX[row[c]] for c in channel_names]


def channel_mask(dataset_name: str, channel_names: Sequence[str]) -> list[bool]:
    """Binary mask of length 18 marking the slots used by the dataset's channels."""
    used = set(slot_indices(dataset_name, channel_names))
    return [i in used for i in range(N_SLOTS)]


def selected_fields(dataset_name: str, fields: Sequence[str] | None = None) -> tuple[str, ...] | None:
    """Core field names to keep for a dataset: ``fields`` if given, else its registered selection, else all
    (``None``)."""
    if fields:
        return tuple(fields)
    spec = DATASETS.get(dataset_name)
    return None if spec is None else spec.fields


def register_dataset_slots(dataset_name: str, mapping: Mapping[str, str], overwrite: bool = False) -> DatasetSpec:
    """Register a dataset by its slot row alone, or set the row of a registered one (the registry's first form,
    kept for user modules written against it)."""
    known = DATASETS.get(dataset_name)
    if known is None:
        return register_dataset(DatasetSpec(dataset_name, mapping))
    if dict(known.slots) != dict(mapping) and not overwrite:
        raise SlotError(f"dataset {dataset_name!r} already has a different slot row")
    return register_dataset(dataclasses.replace(known, slots=dict(mapping)), overwrite=True)


# ---------------------------------------------------------------------------- our datasets
# Slots where a field has no obvious one (docs/your-data.md, "Channel slots"), identical in pretraining and adaptation:
# advected / diffused scalars u -> concentration_rho (a transported single-species concentration); the wave
# displacement u -> height (the linearised shallow-water height obeys the same wave equation) and its rate
# w = du/dt -> Vz (the out-of-plane velocity of that membrane); the 1D Burgers velocity -> Vx (the paper says so).
_EXACT_SLOTS = {
    "tg2d": {"pressure": "pressure", "velocity_x": "Vx", "velocity_y": "Vy"},
    "wave2d": {"u": "height", "w": "Vz"},
    "advdiff2d": {"u": "concentration_rho"},
    "burgers2d": {"velocity_x": "Vx", "velocity_y": "Vy"},
    "burgers1d": {"velocity_x": "Vx"},
    "adv1d": {"u": "concentration_rho"},
    "adv3d": {"u": "concentration_rho"},
}
_SIMULATED_SLOTS = {
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
}
#: the Well's datasets of the paper, with its field selection (appendix "The Well Downstream Datasets"): active
#: matter keeps concentration and velocity and drops the orientation (D) and strain-rate (E) tensors
_WELL_DATASETS = {
    "active_matter": (
        {"concentration": "concentration_rho", "velocity_x": "Vx", "velocity_y": "Vy"},
        ("concentration", "velocity"),
    ),
    "gray_scott_reaction_diffusion": ({"A": "concentration_u", "B": "concentration_v"}, None),
    "rayleigh_benard": (
        {"buoyancy": "buoyancy", "pressure": "pressure", "velocity_x": "Vx", "velocity_y": "Vy"},
        None,
    ),
    "shear_flow": (
        {"tracer": "passive_tracer", "pressure": "pressure", "velocity_x": "Vx", "velocity_y": "Vy"},
        None,
    ),
}

#: UPAO's residual discretisation where `auto` (the lowest residual floor of the training frames, chosen per run
#: and stride) beat the global default fd / crank_nicolson on every seed of reports/upao_auto.md (UPAO + NSLoRA,
#: equal budgets); elsewhere the global default stays (tests/data/test_datasets.py checks the two agree)
AUTO_DISCRETISATION = {"derivative": "auto", "time_scheme": "auto"}
UPAO_AUTO_DATASETS = ("wave2d", "advdiff2d")

for _name, _family in EXACT_PDES.items():
    _defaults = AUTO_DISCRETISATION if _name in UPAO_AUTO_DATASETS else {}
    register_dataset(
        DatasetSpec(_name, _EXACT_SLOTS[_name], family=_family, defaults=_defaults, data_config=_name, origin="exact")
    )
for _name, _slots in _SIMULATED_SLOTS.items():
    register_dataset(DatasetSpec(_name, _slots, family=SIMULATED_FAMILIES.get(_name), origin="simulated"))
for _name, (_slots, _fields) in _WELL_DATASETS.items():
    _defaults = AUTO_DISCRETISATION if _name in UPAO_AUTO_DATASETS else {}
    register_dataset(DatasetSpec(_name, _slots, fields=_fields, defaults=_defaults, data_config=_name, origin="well"))
