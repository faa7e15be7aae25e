"""The PDE an import is checked against: given (``pde``), else the registered dataset's PDE object.

Each of the PDE's parameters (its ``constants`` aside) must be a per-trajectory scalar under its name or one of its
``aliases`` (a parameter given per frame is refused: a PDE's parameter is one value per trajectory), and each of its
variables a slot some channel maps to. A refusal is an ``ImportInputError`` naming the fix. The data layer does not
look PDEs up by name (``well_upao.physics.pde_for_dataset`` does, for ``well-upao import --pde``): a registered
dataset's PDE is used here only where its registry entry holds the PDE itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from well_upao.data.datasets import DATASETS
from well_upao.data.import_arrays import ImportInputError
from well_upao.data.import_plan import ImportPlan


def registered_pde(name: str) -> Any:
    """The PDE object the dataset ``name``'s registry entry holds, else ``None`` (no entry, no PDE, or its name)."""
    registered = DATASETS.get(name)
    if registered is not None and not isinstance(registered.pde, str | type(None)):
        return registered.pde
    return None


def check_pde(pde: Any, plan: ImportPlan, row: Mapping[str, str]) -> None:
    """The PDE's parameters are per-trajectory scalars (by name or alias; its ``constants`` need none) and its
    variables are slots of the channels (``row``: channel -> slot)."""
    if pde is None:
        return
    constants, aliases = dict(getattr(pde, "constants", {})), dict(getattr(pde, "aliases", {}))
    for parameter in pde.parameters:
        if parameter in constants:
            continue
        names = (parameter, *aliases.get(parameter, ()))
        if any(n in plan.scalars for n in names):
            continue
        if any(n in plan.varying_scalars for n in names):
            raise ImportInputError(
                f"PDE {pde.name!r} takes {parameter!r} as a parameter (one value per trajectory), but it is given per "
                "frame: give one value per trajectory (--scalar)"
            )
        have = ", ".join(plan.scalars) or "none"
        raise ImportInputError(
            f"PDE {pde.name!r} needs the parameter {parameter!r} and the scalars are {have}: give it under the PDE's "
            f"name (--scalar {parameter}=VALUE, or --rename OLD={parameter}; Python: scalars={{{parameter!r}: ...}})"
        )
    used = set(row.values())
    for variable in pde.variables:
        if variable not in used:
            raise ImportInputError(
                f"PDE {pde.name!r} reads the slot {variable!r}, which no channel maps to ({row}): map the channel with "
                f"--slots CHANNEL={variable}"
            )
