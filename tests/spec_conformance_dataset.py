"""The conformance fixtures' registry entries (``tests/well_synthetic.py`` ``write_spec_dataset``): one user module,
as docs/your-data.md describes ("add your own dataset"), registering ``spec{1,2,3}d_{periodic,wall,open}`` with the
heat equation ``d_t T = kappa lap T`` (``kappa`` from the files' ``/scalars``) and slots for ``temperature`` and
``velocity``; the constant field ``obstacle`` has no slot (it is not a channel)."""

from __future__ import annotations

from well_synthetic import SPEC_BOUNDARIES, SPEC_SHAPES, spec_dataset_name

from well_upao.data.datasets import DatasetSpec, register_dataset
from well_upao.physics import PDE, SubEquation

SPEC_HEAT = PDE(
    name="spec_heat",
    variables=("temperature",),
    parameters=("kappa",),
    equations=(
        SubEquation("heat", rate="temperature", flux=lambda f, p, ops: -p["kappa"] * ops.laplacian(f["temperature"])),
    ),
)

for _dims in SPEC_SHAPES:
    for _boundary in SPEC_BOUNDARIES:
        _slots = {"temperature": "temperature"} | {f"velocity_{a}": f"V{a}" for a in "xyz"[:_dims]}
        register_dataset(DatasetSpec(spec_dataset_name(_dims, _boundary), slots=_slots, pde=SPEC_HEAT))
