"""The table of classical predictors (``well_upao.predict.classical``): each entry's closed form, and a new prior added
as one entry reaching everything that names a classical predictor (evaluate's rows, the evidence and the pick, the
expected error, a UPAO run's prior candidate and the model predicting with a kept prior)."""

from __future__ import annotations

import json
import math

import pytest
import torch

from well_upao.data.generate import GenerationRequest, generate_dataset
from well_upao.evaluate.pipeline import EvaluationRequest, run_evaluation
from well_upao.models.na_transformer import NATransformer, extrapolation_weights
from well_upao.predict.classical import CLASSICAL_PRIORS, ClassicalPrior, classical_prior
from well_upao.predict.evidence import START, classical_curves, pick
from well_upao.predict.expected import classical_expected_curves
from well_upao.predict.predictors import classical_predictors
from well_upao.trainers.guard import choose_prior
from well_upao.trainers.training_loss import kept_prior

CUBIC = ClassicalPrior("extrap3", 3, "cubic extrapolation of the last four frames")


def polynomial_in_time(degree: int, frames: int) -> torch.Tensor:
    """``(1, T, 8, 1)``: ``u(t, x) = (1 + t)^degree sin(x)`` at ``t = 0, 0.1, ..``, float64."""
    t = torch.arange(frames, dtype=torch.float64) * 0.1
    x = torch.linspace(0, 2 * math.pi, 9, dtype=torch.float64)[:-1]
    return ((1 + t)[:, None] ** degree * torch.sin(x)[None])[None, ..., None]


def test_the_weights_are_newtons_backward_differences():
    """Written out: ``(1,)``, ``(2, -1)``, ``(3, -3, 1)``, ``(4, -6, 4, -1)``, each summing to 1."""
    assert [extrapolation_weights(order) for order in range(4)] == [
        (1.0,),
        (2.0, -1.0),
        (3.0, -3.0, 1.0),
        (4.0, -6.0, 4.0, -1.0),
    ]


@pytest.mark.parametrize("order", [0, 1, 2, 3])
def test_an_entry_of_order_p_is_exact_on_a_polynomial_of_degree_p_and_not_on_degree_p_plus_one(order):
    prior = ClassicalPrior(f"p{order}", order, "")
    exact = polynomial_in_time(order, 6)
    torch.testing.assert_close(prior.next_frame(exact[:, :-1]), exact[:, -1], rtol=1e-12, atol=1e-12)
    above = polynomial_in_time(order + 1, 6)  # negative control: one degree more is not extrapolated exactly
    assert (prior.next_frame(above[:, :-1]) - above[:, -1]).abs().max() > 1e-6


def test_one_step_and_rolled_out_agree_with_predictions_written_out():
    """``one_step``: each frame from the true frames before it; ``rolled_out``: each prediction fed back."""
    window = torch.randn(2, 7, 5, 1, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    extrap1 = CLASSICAL_PRIORS["extrap1"]
    by_hand = torch.stack([2 * window[:, t - 1] - window[:, t - 2] for t in range(START, 7)], 1)
    torch.testing.assert_close(extrap1.one_step(window, START), by_hand)
    rolled = list(window[:, :START].unbind(1))
    for _ in range(7 - START):
        rolled.append(2 * rolled[-1] - rolled[-2])
    torch.testing.assert_close(extrap1.rolled_out(window, START), torch.stack(rolled[START:], 1))
    with pytest.raises(KeyError, match="known: persistence, extrap1, extrap2"):
        classical_prior("extrap9")


def test_a_fourth_prior_is_one_entry_and_reaches_every_reader(monkeypatch, tmp_path):
    """A cubic extrapolation added to the table alone (as a user or a later change would add it) is an evaluate row
    with its own scores, has evidence and is picked on a field cubic in time, has an expected error, is chosen as a
    UPAO run's prior and is what a model keeping it predicts."""
    monkeypatch.setitem(CLASSICAL_PRIORS, CUBIC.name, CUBIC)
    assert [row.name for row in classical_predictors(None, None)] == ["persistence", "extrap1", "extrap2", "extrap3"]
    cubic = polynomial_in_time(3, 10)
    mask = torch.ones(1)
    curves = {name: curve.mean(0).tolist() for name, curve in classical_curves(cubic, mask).items()}
    chosen, evidence = pick(curves, "one_step")
    # exact from its fifth frame on (the backtests start from 3 frames, where it is quadratic)
    assert chosen == "extrap3" and evidence["extrap3"].value < 0.5 * evidence["extrap2"].value
    assert set(classical_expected_curves(cubic, mask)) == set(CLASSICAL_PRIORS)
    assert choose_prior({name: e.value for name, e in evidence.items()} | {"model": 1.0}) == "extrap3"
    # the model predicting with the kept prior: the window's cubic extrapolation, no network
    model = NATransformer(n_spatial_dims=2, preset="tiny", channel_slots=[4])
    frames = torch.zeros(1, 8, 8, 8, 18)
    frames[..., 4] = polynomial_in_time(3, 8)[0, :, :, 0][..., None].float()
    with kept_prior(model, CUBIC), torch.no_grad():
        predicted = model.forward_sequence(frames)[:, -1, ..., 4]
    torch.testing.assert_close(predicted, CUBIC.next_frame(frames[..., 4]), rtol=1e-5, atol=1e-5)
    # evaluate's rows, its trust evidence and its expected errors
    base = tmp_path / "data"
    generate_dataset(GenerationRequest(pde="advdiff2d", out=base, n_traj=4, resolution=16, n_steps=30), progress=False)
    request = EvaluationRequest(base, "advdiff2d", history=8, stride=1, rollout_steps=12, max_trajectories=2,
                                solver=False, out=tmp_path / "out", progress=False)  # fmt: skip
    result = json.loads(run_evaluation(request).json_path.read_text())
    row = next(row for row in result["scores"] if row["name"] == "extrap3")
    assert row["kind"] == "classical" and all(math.isfinite(v) for v in row["one_step_vrmse_well"].values())
    assert "extrap3" in result["trust"]["one_step"]["evidence"]
    assert "extrap3" in result["expected"]["one_step"] and "extrap3" in result["expected"]["6:12"]
