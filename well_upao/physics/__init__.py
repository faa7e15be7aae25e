"""Physics: finite-difference stencils, the PDE registry, residual time discretisation, the UPAO objective."""

from well_upao.physics.discretisation import pde_for_dataset
from well_upao.physics.objective import UpaoObjective, band_values
from well_upao.physics.pdes import PDE, PDE_REGISTRY, SubEquation, get_pde, register_pde
from well_upao.physics.residual import pde_residuals, slot_fields
from well_upao.physics.stencils import Grid, Stencils, boundary_band_mask, interior

__all__ = [
    "PDE",
    "PDE_REGISTRY",
    "Grid",
    "Stencils",
    "SubEquation",
    "UpaoObjective",
    "band_values",
    "boundary_band_mask",
    "get_pde",
    "interior",
    "pde_for_dataset",
    "pde_residuals",
    "register_pde",
    "slot_fields",
]
