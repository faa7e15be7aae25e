"""The evaluation at a time stride (``well_upao.evaluate.plan`` and ``scores``): the stride reaches the residual
floor of the evaluated frames and the solver baseline's step. Data: ``tests/advected_mode.py`` (exact
advection-diffusion, 24 x 40 with a wall axis, float32 time from t = 1000 every 0.04)."""

from __future__ import annotations

import dataclasses

import advected_mode
import pytest
import torch

from well_upao.data.source import WellSource
from well_upao.evaluate.plan import EvaluationRequest, plan_evaluation
from well_upao.evaluate.scores import score
from well_upao.harness.samples import file_time_axis, sample_context
from well_upao.physics.pdes import get_pde
from well_upao.predict.predictors import SolverStep, classical_row

STRIDE = 5


def test_at_a_stride_the_floor_and_the_solver_step_use_the_strided_step(tmp_path):
    """``evaluate --stride 5``: the floor the plan reports is the closed form at ``5 * 0.04`` (the 8 frames it reads
    from frame 1); the evaluation's dt is ``5 * 0.04`` to 2e-6; the solver row, stepping that dt, predicts the next
    strided frame to under 15% of persistence's error (its second-order x-differences are what remains). Negative
    control: the solver stepping the file's frame spacing instead misses by more than half of persistence's."""
    advected_mode.write(tmp_path)
    valid = WellSource(tmp_path, advected_mode.NAME, "valid")
    request = EvaluationRequest(tmp_path, advected_mode.NAME, history=2, stride=STRIDE, rollout_steps=0,
                                max_trajectories=1, out=None, progress=False)  # fmt: skip
    plan = plan_evaluation(request, valid, [])
    rows = {row.discretisation: row for row in plan.physics.rows}
    assert {row.stride for row in rows.values()} == {STRIDE}
    expected = advected_mode.crank_nicolson_floor(STRIDE, 8)
    assert rows[("spectral", "crank_nicolson")].residuals["advection"] == pytest.approx(expected, rel=1e-3)

    solver = SolverStep(get_pde(advected_mode.NAME))
    evaluation, _ = score(plan, [classical_row("persistence"), solver], progress=False)
    assert abs(evaluation.dt / (STRIDE * advected_mode.DT) - 1) < 2e-6
    vrmse = {row.name: row.mean_paper for row in evaluation.scores}
    assert vrmse["solver"] < 0.15 * vrmse["persistence"], vrmse

    sample = plan.opened[0]
    frames = torch.cat([sample["input_fields"], sample["output_fields"]]).float()
    context = sample_context(sample, list(plan.opened.metadata.constant_scalar_names), valid.channel_slots,
                             file_time_axis(valid))  # fmt: skip
    file_step = dataclasses.replace(context, dt=context.dt / STRIDE)
    truth, persistence = frames[2], (frames[1] - frames[2]).norm()
    assert (solver.predict(frames[:2][None], context)[0] - truth).norm() < 0.15 * persistence
    assert (solver.predict(frames[:2][None], file_step)[0] - truth).norm() > 0.5 * persistence
