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

Evaluation scores a grid's rungs from the cheapest up and stops at the first one dearer than ``m`` with VRMSE <= ``e``
(``climb_ladder``): a rung above it on the same grid costs more (twice the RK4 steps), so it
is neither affordable nor the cheapest as accurate, and the matched entries are those of the whole ladder. It also
stops at a rung dearer than ``m`` whose VRMSE is the rung below's (``converged``): a coarse grid's spatial error,
which more sub-steps do not lower.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
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


def ladder_grids(ladder: Sequence[SolverStep]) -> list[list[SolverStep]]:
    """The ladder's rungs per grid (``notes["coarsen"]``), each grid's from the fewest sub-steps up, grids in ladder
    order."""
    grids: dict[int, list[SolverStep]] = {}
    for rung in ladder:
        grids.setdefault(rung.notes.get("coarsen", 1), []).append(rung)
    return [sorted(rungs, key=lambda r: r.notes.get("substeps", 0)) for rungs in grids.values()]


def settles_the_match(rung: Scores, reference: Scores) -> bool:
    """Whether no rung above ``rung`` on its grid can be a matched row: ``rung`` is dearer per prediction than the
    reference (a rung with more sub-steps is dearer still, so none above is affordable: not cost-matched) and at most
    as wrong (mean paper VRMSE: ``rung`` is then cheaper than every rung above that is as accurate, so none above is
    accuracy-matched)."""
    return rung.seconds_per_prediction > reference.seconds_per_prediction and rung.mean_paper <= reference.mean_paper


#: a grid's rung whose mean paper VRMSE is within this fraction of the rung below's has converged in time: more
#: RK4 sub-steps change its error no further (the grid's spatial error is what is left)
CONVERGED = 1e-3


def converged(rung: Scores, below: Scores | None, reference: Scores) -> bool:
    """Whether no rung above ``rung`` on its grid can be a matched row because the grid has converged in time:
    ``rung`` is dearer than the reference (so is every rung above: none is affordable) and its error is that of the
    rung below within :data:`CONVERGED` (RK4's time error falls 16-fold per doubling, so the rungs above keep this
    error, above the reference's when it settles nothing: none is as accurate)."""
    if below is None or not math.isfinite(rung.mean_paper) or not math.isfinite(below.mean_paper):
        return False
    dearer = rung.seconds_per_prediction > reference.seconds_per_prediction
    return dearer and abs(rung.mean_paper - below.mean_paper) <= CONVERGED * rung.mean_paper


def climb_ladder(
    ladder: Sequence[SolverStep], reference: Scores, score_round: Callable[[list[SolverStep]], list[Scores]]
) -> list[SolverStep]:
    """Score the ladder's rungs each grid from its cheapest up until a rung settles the match for ``reference``
    (``settles_the_match``), the grid has converged in time (``converged``) or its rungs end; ``score_round(rungs)``
    scores rungs (one round per rung height: the next rung of every grid still climbing) and returns their scores.
    ``match_solvers`` on the rungs scored picks what it picks on the whole ladder when a rung with more sub-steps is
    measured no cheaper than one with fewer. Returns the rungs scored, in ladder order."""
    climbing, scored, height = ladder_grids(ladder), {}, 0
    while climbing:
        rungs = [grid[height] for grid in climbing]
        scored.update(zip((rung.name for rung in rungs), score_round(rungs), strict=True))
        height += 1
        climbing = [grid for grid in climbing if height < len(grid) and not settled(grid, height, scored, reference)]
    return [rung for rung in ladder if rung.name in scored]


def settled(grid: list[SolverStep], height: int, scored: dict[str, Scores], reference: Scores) -> bool:
    """Whether the grid's climb ends at its rung ``height - 1`` (just scored): it settles the match or the grid has
    converged in time."""
    rung = scored[grid[height - 1].name]
    below = scored[grid[height - 2].name] if height >= 2 else None
    return settles_the_match(rung, reference) or converged(rung, below, reference)
