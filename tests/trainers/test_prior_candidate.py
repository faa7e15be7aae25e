"""The prior per horizon (issue 53): a backbone of any base can predict with a classical prior (the window's
polynomial extrapolation) carried in its state dict, every UPAO validation scores the classical predictors and the
model on the observed history for the trust window, and best.pt keeps the best prior when the selected model's
evidence is worse. Expected values: the polynomial extrapolation written out here, and evidence written by hand."""

from __future__ import annotations

import math

import pytest
import torch
from hand_setup import hand_setup

from well_upao.data.slots import N_SLOTS
from well_upao.models.assembly import load_model
from well_upao.models.checkpoint import build_payload, read_checkpoint, save_checkpoint
from well_upao.models.na_transformer import NATransformer
from well_upao.physics.scores import Scorecard
from well_upao.predict.classical import CLASSICAL_PRIORS
from well_upao.trainers.guard import Candidate, Guard, TrustEvidence, Validated, choose_prior
from well_upao.trainers.rollout import RolloutSettings
from well_upao.trainers.run_context import RunContext
from well_upao.trainers.training_loss import kept_prior
from well_upao.trainers.upao import UpaoSettings
from well_upao.trainers.upao_validation import UpaoValidation, ValidationSettings

SLOTS = [0, 1, 15]


def trained_looking(base: str) -> NATransformer:
    """A model whose network output is far from any extrapolation (perturbed decoder)."""
    torch.manual_seed(0)
    model = NATransformer(preset="tiny", layers=1, dims=(2,), channel_slots=SLOTS, base=base)
    with torch.no_grad():
        for decoder in model.decoders.values():
            for parameter in decoder.parameters():
                parameter.normal_(0, 0.05)
    return model.eval()


def frames(seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    out = torch.zeros(2, 5, 16, 16, N_SLOTS)
    out[..., SLOTS] = 1.0 + torch.randn(2, 5, 16, 16, len(SLOTS), generator=generator)
    return out


def prior_of(order: int):
    return next(prior for prior in CLASSICAL_PRIORS.values() if prior.order == order)


def by_hand(window: torch.Tensor, order: int) -> torch.Tensor:
    """Entry tau predicts frame tau + 1 from frames 0..tau with the highest order they allow (written out)."""
    out = []
    for tau in range(window.shape[1]):
        degree = min(order, tau)
        if degree == 0:
            out.append(window[:, tau])
        elif degree == 1:
            out.append(2 * window[:, tau] - window[:, tau - 1])
        else:
            out.append(3 * window[:, tau] - 3 * window[:, tau - 1] + window[:, tau - 2])
    return torch.stack(out, 1)


@pytest.mark.parametrize("base", ["last", "extrap2", "none"])
@pytest.mark.parametrize("order", [0, 1, 2])
def test_a_kept_prior_predicts_the_extrapolation_whatever_the_base(base, order):
    model, window = trained_looking(base), frames()
    with torch.no_grad():
        network = model.forward_sequence(window)[..., SLOTS]
        with kept_prior(model, prior_of(order)):
            prior = model.forward_sequence(window)[..., SLOTS]
        restored = model.forward_sequence(window)[..., SLOTS]
    torch.testing.assert_close(prior, by_hand(window, order)[..., SLOTS], rtol=1e-6, atol=1e-6)
    assert (network - prior).abs().max() > 1e-2  # negative control: the network predicts otherwise
    assert torch.equal(restored, network)


@pytest.mark.parametrize("order", [0, 1])
def test_a_kept_persistence_or_extrap1_prior_round_trips_both_loaders(order, tmp_path):
    """best.pt holding a prior: our loader (``load_model``, the file alone) and the harness's path (the Well's
    trainer's ``load_checkpoint`` into a model built from the run's config: ``load_state``) both predict with it."""
    from well_upao.models.checkpoint import load_state

    model, window = trained_looking("extrap2"), frames(1)
    path = tmp_path / "best.pt"
    with kept_prior(model, prior_of(order)):
        save_checkpoint(path, build_payload(model))
    assert int(read_checkpoint(path)["state_dict"]["prior_order"]) == order
    expected = by_hand(window, order)[..., SLOTS]
    ours = load_model(path).eval()
    rebuilt = NATransformer(preset="tiny", layers=1, dims=(2,), channel_slots=SLOTS, base="extrap2").eval()
    load_state(rebuilt, read_checkpoint(path), path)
    with torch.no_grad():
        for loaded in (ours, rebuilt):
            torch.testing.assert_close(loaded.forward_sequence(window)[..., SLOTS], expected, rtol=1e-6, atol=1e-6)
    plain = tmp_path / "plain.pt"  # negative control: a checkpoint without a prior predicts with the network
    save_checkpoint(plain, build_payload(model))
    with torch.no_grad():
        assert (load_model(plain).eval().forward_sequence(window)[..., SLOTS] - expected).abs().max() > 1e-2


def window(value: float) -> Candidate:
    """A candidate whose evidence for the trust window is ``value`` (its scorecard aside)."""
    return Candidate(Scorecard(), window=value)


def observed(judge: Guard, values: dict[str, float], reach: str) -> None:
    """What a validation hands the judge through the loop (``Guard.observe``)."""
    evidence = TrustEvidence(values, choose_prior(values), reach)
    judge.observe(Validated(0.0, {}, window(values["model"]), evidence), first=False)


def test_the_rule_keeps_the_best_prior_for_the_trust_window():
    judge = Guard(priors=True, trust_window="6:12")  # guard_backtest_tolerance 0.1; a model that can keep a prior
    values = {"persistence": 0.9, "extrap1": 2.5, "extrap2": 7.0, "model": 3.0}
    assert choose_prior(values) == "persistence" and choose_prior({"model": 1.0, "extrap2": math.nan}) is None
    observed(judge, values, "backtest to step 5 of 12")
    assert judge.prior_choice() == "persistence"
    reason = judge.prior_check(window(1.2))
    assert reason is not None and "persistence" in reason and "6:12" in reason and "step 5 of 12" in reason
    assert judge.prior_check(window(0.95)) is None  # within the 10% tolerance
    assert judge.prior_check(window(0.5)) is None
    assert judge.prior_check(window(math.nan)) is None  # no evidence decides nothing
    verdict = judge.prior_verdict(window(3.0))
    assert verdict.startswith("the start is worse than persistence for 6:12")
    unable = Guard(priors=False, trust_window="6:12")  # a model that cannot keep a prior: no rule
    observed(unable, values, "backtest to step 5 of 12")
    assert unable.prior_check(window(3.0)) is None and unable.prior_choice() is None
    with pytest.raises(ValueError, match="trust_window"):
        UpaoSettings.of(trust_window="5:10")


def test_a_prior_planted_far_off_the_data_is_never_picked():
    """The classical curves of a smooth history, plus a 'model' curve planted far off: the pick is a classical
    predictor whichever window is asked."""
    from well_upao.predict.evidence import classical_curves, pick

    t = torch.arange(8, dtype=torch.float64)
    window = torch.zeros(1, 8, 4, 4, N_SLOTS, dtype=torch.float64)
    window[..., 0] = (1 + 0.1 * t + 0.01 * t**2).view(1, 8, 1, 1)  # a quadratic in time: extrap2 exact
    mask = torch.zeros(N_SLOTS)
    mask[0] = 1
    curves = {name: c.mean(0).tolist() for name, c in classical_curves(window, mask).items()}
    curves["planted"] = [1e3] * 5
    for window_name in ("one_step", "6:12", "13:30"):
        chosen, evidence = pick(curves, window_name)
        assert chosen == "extrap2" and evidence["extrap2"].value < 1e-9
    assert evidence["extrap2"].describe() == "backtest to step 5 of 30"


def test_validation_records_the_picked_priors_true_vrmse_as_the_hand_extrapolation_scores():
    """``valid_prior_paper_VRMSE`` (the study's label oracle) is the paper's VRMSE of the picked prior, here the
    quadratic extrapolation ``3 u[t-1] - 3 u[t-2] + u[t-3]`` written out, not of the model (negative control)."""
    from types import SimpleNamespace

    from well_upao.evaluate.metrics import vrmse_paper, vrmse_well
    from well_upao.harness.normalization import ModelSpace

    model, history = trained_looking("last"), 4
    trajectory = 1.0 + torch.randn(9, 16, 16, len(SLOTS), generator=torch.Generator().manual_seed(3)).cumsum(0) / 4
    sample = {"input_fields": trajectory[:history], "output_fields": trajectory[history:]}
    run = RunContext(
        model=model,
        bare_model=model,
        device=torch.device("cpu"),
        datamodule=SimpleNamespace(rollout_val_dataset=[sample, sample]),
        metadata=SimpleNamespace(field_names={0: ["a", "b", "c"]}, n_spatial_dims=2),
        rollout=RolloutSettings(),
        formatter_name="channels_last_default",
    )
    setup = hand_setup(history=history, space=ModelSpace())
    validation = UpaoValidation(setup, run, ValidationSettings(True, 2, 30))
    logs = validation.paper_vrmse(full=False, prior="extrap2")
    extrapolated = torch.stack(
        [3 * trajectory[t - 1] - 3 * trajectory[t - 2] + trajectory[t - 3] for t in range(history, 9)]
    )
    expected = vrmse_paper(extrapolated, trajectory[history:]).mean().item()
    assert logs["valid_prior_paper_VRMSE"] == pytest.approx(expected, rel=1e-4)
    assert abs(logs["valid_paper_VRMSE"] - expected) > 1e-2 * expected  # the model predicts otherwise
    # the prior's rollout (valid_prior_rollout_VRMSE_*): the extrapolation fed back, 5 steps, the Well's VRMSE
    rolled = list(trajectory[:history])
    for _ in range(9 - history):
        rolled.append(3 * rolled[-1] - 3 * rolled[-2] + rolled[-3])
    last = vrmse_well(rolled[-1][None], trajectory[-1:], 2).mean().item()
    assert logs["valid_prior_rollout_VRMSE_steps"] == 5
    assert logs["valid_prior_rollout_VRMSE_last"] == pytest.approx(last, rel=1e-4)
    validation.settings = ValidationSettings(False, 2, 30)
    assert "valid_prior_paper_VRMSE" not in validation.paper_vrmse(full=False, prior="extrap2")


@pytest.mark.parametrize("order", [0, 1, 2])
def test_a_models_backtest_curve_is_the_classical_one_when_it_keeps_that_prior(order):
    """The model's curve in validation (its rollout from the first ``START`` frames, and one step ahead its causal
    predictions of every later frame) equals the classical curve of the prior it keeps, both parts; with its
    network it differs (negative control)."""
    from types import SimpleNamespace

    from well_upao.harness.normalization import ModelSpace
    from well_upao.harness.samples import into_slots, slots_mask
    from well_upao.predict.evidence import classical_curves

    model = trained_looking("last")
    generator = torch.Generator().manual_seed(4)
    observed = 1.0 + torch.randn(2, 8, 16, 16, len(SLOTS), generator=generator).cumsum(1) / 4
    run = SimpleNamespace(model=model, bare_model=model)
    setup = hand_setup(space=ModelSpace(), channel_slots=tuple(SLOTS))
    # a window beyond one step: the model's rollout is scored too
    validation = UpaoValidation(setup, run, ValidationSettings(True, 2, 30, trust_window="6:12"))
    history = into_slots(observed, SLOTS)
    name = next(n for n, p in CLASSICAL_PRIORS.items() if p.order == order)
    classical = classical_curves(history, slots_mask(SLOTS, history.device))[name]
    with kept_prior(model, CLASSICAL_PRIORS[name]):
        kept = validation.model_backtest_curve({"input_fields": observed}, history)["model"]
    assert kept.shape == (2, 5)
    torch.testing.assert_close(kept, classical, rtol=1e-5, atol=1e-6)
    network = validation.model_backtest_curve({"input_fields": observed}, history)["model"]
    assert not torch.allclose(network[:, 0], classical[:, 0], rtol=1e-2)  # one step
    assert not torch.allclose(network[:, 1:], classical[:, 1:], rtol=1e-2)  # the rollout
    # the default window (one step) pays no rollout: the model's curve is its one-step evidence alone, the same
    # whether its shifted predictions come from the objective's pass or from its own
    validation.settings = ValidationSettings(True, 2, 30, trust_window="one_step")
    alone = validation.model_backtest_curve({"input_fields": observed}, history)["model"]
    assert alone.shape == (2, 1)
    torch.testing.assert_close(alone[:, 0], network[:, 0])
    shifted = model(into_slots(observed[:, :-1], SLOTS), sequence=True)
    given = validation.model_backtest_curve({"input_fields": observed}, history, shifted)["model"]
    torch.testing.assert_close(given, alone)
