"""The user module for the Well's dummy dataset (``tests/well_dummy.py``): slots for its vector field and a PDE,
as docs/your-data.md's "add your own dataset" describes, plus ``dummy_nopde``, the same files registered without a PDE.

The dummy's values are random, so the PDE is only something to compute a residual with: advection of each velocity
component by the file's constant scalar ``a`` along x, ``d_t V + a d_x V = 0``."""

from __future__ import annotations

from well_upao.data.datasets import DatasetSpec, register_dataset
from well_upao.physics import PDE, SubEquation

DUMMY_ADVECTION = PDE(
    name="dummy_advection",
    variables=("Vx", "Vy"),
    parameters=("a",),  # the dummy's /scalars/a (0.25)
    equations=(
        SubEquation("x", rate="Vx", flux=lambda f, p, ops: p["a"] * ops.d(f["Vx"], 0)),
        SubEquation("y", rate="Vy", flux=lambda f, p, ops: p["a"] * ops.d(f["Vy"], 0)),
    ),
)

DUMMY_SLOTS = {"field_x": "Vx", "field_y": "Vy"}

register_dataset(DatasetSpec("dummy_dataset", slots=DUMMY_SLOTS, pde=DUMMY_ADVECTION))
register_dataset(DatasetSpec("dummy_nopde", slots=DUMMY_SLOTS))
