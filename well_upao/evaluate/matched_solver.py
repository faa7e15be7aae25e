"""Cost- and accuracy-matched solver rows: compare a network with the dataset's own solver at equal runtime and at
equal accuracy (McGreivy & Hakim 2024, "Weak baselines and reporting biases lead to overoptimism in machine
learning for fluid-related partial differential equations").

The ``solver`` row steps until step doubling changes the result by less than 1e-6: the accuracy limit, not a
fair competitor on speed. The *ladder* here is the same method of lines with a fixed number of RK4 sub-steps
``s in {1, 2, 4, ..., max_substeps}``, on the full grid and, on periodic grids, on grids coarsened by 2 and 4 by
Fourier truncation (``well_upao.physics.resample``). For a model row with mean one-step VRMSE ``e`` (the paper's
definition) and ``m`` ms per prediction, measured in the same run on the same windows:

* cost-matched: the most accurate ladder entry with ms / prediction <= ``m`` (none: the cheapest entry, marked);
* accuracy-matched: the cheapest ladder entry with VRMSE <= ``e`` (none: no row).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from well_upao.evaluate.results import Scores
from well_upao.harness.samples import Context
from well_upao.physics.pdes import PDE
from well_upao.predict.predictors import SolverStep
from well_upao.predict.solver import supports

#: grids coarser than this many points per axis are left out of the ladder
MIN_COARSE_POINTS = 8


def solver_ladder(
    pde: PDE, context: Context, shape: tuple[int, ...], max_substeps: int = 256, coarsenings: tuple[int, ...] = (2, 4)
) -> list[SolverStep]:
    """Fixed-step solvers from cheapest to dearest on each grid (see the module docstring)."""
    if not supports(pde, context.grid):
        return []
    factors = [1]
    if all(context.grid.periodic):
        factors += [f for f in coarsenings if all(n % f == 0 and n // f >= MIN_COARSE_POINTS for n in shape)]
    ladder = []
    for factor in factors:
        substeps = 1
        while substeps <= max_substeps:
            grid = "" if factor == 1 else f", grid/{factor}"
            ladder.append(SolverStep(pde, substeps, factor, name=f"solver ({substeps} RK4 steps{grid})"))
            substeps *= 2
    return ladder


@dataclass
class MatchedSolvers:
    reference: str
    cost_matched: Scores | None
    accuracy_matched: Scores | None
    cheapest_is_slower: bool

    def rows(self) -> list[Scores]:
        out = []
        if self.cost_matched is not None:
            label = "slower than" if self.cheapest_is_slower else "cost-matched to"
            out.append(_relabel(self.cost_matched, f"solver, {label} {self.reference}"))
        if self.accuracy_matched is not None:
            out.append(_relabel(self.accuracy_matched, f"solver, accuracy-matched to {self.reference}"))
        return out


def _relabel(scores: Scores, prefix: str) -> Scores:
    settings = f"{scores.notes['substeps']} RK4 steps"
    if scores.notes.get("coarsen", 1) > 1:
        settings += f", grid/{scores.notes['coarsen']}"
    return replace(scores, name=f"{prefix} ({settings})")


def match_solvers(ladder: list[Scores], reference: Scores) -> MatchedSolvers:
    """Pick the cost- and accuracy-matched ladder entries for ``reference`` (see the module docstring)."""
    finite = [s for s in ladder if math.isfinite(s.mean_paper)]
    if not finite:
        return MatchedSolvers(reference.name, None, None, False)
    affordable = [s for s in finite if s.seconds_per_prediction <= reference.seconds_per_prediction]
    if affordable:
        cost, slower = min(affordable, key=lambda s: s.mean_paper), False
    else:
        cost, slower = min(finite, key=lambda s: s.seconds_per_prediction), True
    accurate = [s for s in finite if s.mean_paper <= reference.mean_paper]
    accuracy = min(accurate, key=lambda s: s.seconds_per_prediction) if accurate else None
    return MatchedSolvers(reference.name, cost, accuracy, slower)
