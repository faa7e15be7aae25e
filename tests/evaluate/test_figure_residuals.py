"""The figures' residual panels use the table's discretisation (issue 38 part 2): the scoring pass computes each
row's ``|R_k|`` for the figures with the plan's derivative and time scheme, the ones its scorecard uses, and the
report only draws them. Expected fields are computed here from the trajectory's frames with the physics directly;
the fixed fd / Crank-Nicolson choice the figures once used gives other fields (negative control)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest
import torch

import well_upao.evaluate.plots as plots
import well_upao.evaluate.report as report
from well_upao.data.slot_inventory import SLOT_NAMES
from well_upao.data.source import WellSource
from well_upao.evaluate.plan import EvaluationRequest, plan_evaluation
from well_upao.evaluate.scores import score
from well_upao.physics.residual import pde_residuals
from well_upao.physics.stencils import Stencils
from well_upao.predict.predictors import classical_row


@pytest.fixture(scope="module")
def advdiff(tmp_path_factory) -> Path:
    from well_upao.data.generate import GenerationRequest, generate_dataset

    base = tmp_path_factory.mktemp("figures")
    generate_dataset(
        GenerationRequest(pde="advdiff2d", out=base, n_traj=4, resolution=16, n_steps=12, valid_fraction=0.5),
        progress=False,
    )
    return base


def expected(plan, derivative: str, scheme: str) -> dict[str, torch.Tensor]:
    """``|R_k|`` of persistence's prediction of the figures' frame (the true frame before it), from the first
    trajectory's frames."""
    sample = plan.opened[0]
    frames = torch.cat([sample["input_fields"], sample["output_fields"]]).double()
    t = plan.history + (frames.shape[0] - plan.history) // 2

    def fields(frame):
        return {SLOT_NAMES[s]: frame[None, None, ..., i] for i, s in enumerate(plan.context.channel_slots)}

    context = plan.context
    params = plan.pde.resolve_parameters({k: v.double() for k, v in context.scalars.items()})
    older = fields(frames[t - 2]) if scheme == "central" else None
    residuals = pde_residuals(
        plan.pde, fields(frames[t - 1]), fields(frames[t - 1]), context.dt.double(), params,
        Stencils(context.grid, derivative), scheme, older=older,
    )  # fmt: skip
    return {k: r[0, 0].abs().float() for k, r in residuals.items()}


@pytest.mark.parametrize("scheme", [None, "central"], ids=["auto", "central"])
def test_the_figures_residuals_use_the_plans_discretisation(advdiff, scheme):
    source = WellSource(advdiff, "advdiff2d")
    request = EvaluationRequest(advdiff, "advdiff2d", history=4, rollout_steps=0, max_trajectories=1, out=None)
    plan = plan_evaluation(request, source, [])
    # advdiff2d's UPAO default is auto: on periodic data the floor picks spectral derivatives, not fd
    assert plan.physics.derivative == plan.floor["default"]["derivative"] == "spectral"
    if scheme is not None:
        plan = dataclasses.replace(plan, physics=dataclasses.replace(plan.physics, scheme=scheme))
    evaluation, figures = score(plan, [classical_row("persistence"), classical_row("extrap2")], progress=False)
    assert set(figures.residuals) == {"persistence", "extrap2"}
    assert evaluation.scores[0].label_free  # the table's scorecard, with the same discretisation
    shown = figures.residuals["persistence"]
    wanted = expected(plan, plan.physics.derivative, plan.physics.scheme)
    assert shown.keys() == wanted.keys()
    for name, field in wanted.items():
        torch.testing.assert_close(shown[name], field, rtol=1e-5, atol=1e-8)
    fixed = expected(plan, "fd", "crank_nicolson")  # what a fixed fd / Crank-Nicolson panel would show
    assert any((shown[k] - fixed[k]).abs().max() > 1e-3 * fixed[k].abs().max() for k in fixed)


def test_the_report_computes_no_physics():
    """The report and its figures import nothing from ``well_upao.physics``: they cannot recompute a residual."""
    for module in (report, plots):
        tree = ast.parse(Path(module.__file__).read_text())
        imported = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        assert not [m for m in imported if m and m.startswith("well_upao.physics")], module.__name__
