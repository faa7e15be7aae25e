"""Exact-solution datasets of the paper (appendix "Exact-Solution Finetuning Datasets").

One module per PDE, each with a parameter sampler and a closed-form evaluator; ``EXACT_PDES`` maps the
dataset name (the ``--pde`` key of ``well-upao generate-exact``) to an instance.
"""

from .adv1d import Advection1D
from .adv3d import Advection3D
from .advdiff2d import AdvectionDiffusion2D
from .base import ExactSolution, FieldSpec, TrajectoryParameters
from .burgers1d import Burgers1D
from .burgers2d import Burgers2D
from .tg2d import TaylorGreen2D
from .wave2d import Wave2D

EXACT_PDES: dict[str, ExactSolution] = {
    pde.name: pde
    for pde in (
        TaylorGreen2D(),
        Wave2D(),
        AdvectionDiffusion2D(),
        Burgers2D(),
        Burgers1D(),
        Advection1D(),
        Advection3D(),
    )
}

__all__ = ["EXACT_PDES", "ExactSolution", "FieldSpec", "TrajectoryParameters"]
