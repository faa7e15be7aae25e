"""A UPAO validation computes what does not depend on the trained weights once (the starting model's predictions and
scores, the classical predictors' backtests and residuals) and gives the same numbers as computing it again."""

from __future__ import annotations

import dataclasses
import math

import torch
from trainers.test_upao import make_trainer  # tests/ is on sys.path (conftest)

from well_upao.trainers.upao_validation import UpaoValidation, batch_fingerprint


def same_logs(a: dict, b: dict) -> list[str]:
    """The keys on which two validations' logs differ (``nan`` equals ``nan``)."""

    def equal(x, y) -> bool:
        if isinstance(x, float) and isinstance(y, float):
            return x == y or (math.isnan(x) and math.isnan(y))
        if isinstance(x, dict) and isinstance(y, dict):
            return x.keys() == y.keys() and all(equal(x[k], y[k]) for k in x)
        if isinstance(x, list) and isinstance(y, list):
            return len(x) == len(y) and all(equal(u, v) for u, v in zip(x, y, strict=True))
        return x == y

    return sorted(k for k in a.keys() | b.keys() if not equal(a.get(k), b.get(k)))


def moved(model: torch.nn.Module) -> None:
    """The trained weights moved away from the start (as after some optimizer steps)."""
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.requires_grad:
                parameter.add_(0.05 * torch.randn(parameter.shape, generator=generator))


def test_the_starts_and_the_classical_parts_are_computed_once_and_equal_a_fresh_validation(small_datasets, tmp_path):
    trainer = make_trainer(small_datasets, tmp_path)
    run = dataclasses.replace(trainer.run, short_validation_length=2)  # the batches every validation sees
    loss = trainer.loss
    validation = UpaoValidation(loss.setup, run, trainer.criterion.settings)
    batches = list(trainer.datamodule.val_dataloader())[:2]
    validation.run_batches(batches, False, 0, True)  # before any step: the start is copied, its parts computed
    assert sorted(validation.fixed) == [0, 1]
    start = validation.start.model
    calls = []
    hook = start.register_forward_hook(lambda *_: calls.append(1))
    moved(trainer.model)
    kept = validation.run_batches(batches, False, 1, False).logs
    assert not calls  # the start was not run again
    fresh = UpaoValidation(loss.setup, run, validation.settings)
    fresh.start.model = start  # the same frozen start, nothing kept: every part computed again
    again = fresh.run_batches(batches, False, 1, False).logs
    assert calls  # (the fresh validation did run the start)
    assert same_logs(kept, again) == []
    assert kept["score_start_residual_ratio"] != kept["score_residual_ratio"]  # the model moved off its start
    # a different batch served at a kept index is computed anew, not read from what was kept
    calls.clear()
    other = {name: value.clone() if isinstance(value, torch.Tensor) else value for name, value in batches[0].items()}
    other["input_fields"] = other["input_fields"].flip(0) * 1.5
    assert batch_fingerprint(other) != batch_fingerprint(batches[0])
    changed = validation.run_batches([other], False, 1, False).logs
    assert calls
    expected = UpaoValidation(loss.setup, run, validation.settings)
    expected.start.model = start
    assert same_logs(changed, expected.run_batches([other], False, 1, False).logs) == []
    hook.remove()


def test_the_expected_error_is_rule_3_from_every_start_of_each_validation_window(small_datasets, tmp_path):
    """``valid_expected_vrmse`` is stated as ``evaluate`` and ``forecast`` state it (rule 3): the prior's from every
    start of each validation window (each sample one history window), the model's from its own backtests; the
    prior's value is the one rule 3 gives on the same windows' start matrices, computed here from the frames."""
    from well_upao.harness.samples import slots_mask
    from well_upao.predict.expected_starts import classical_start_matrices, expected_from_starts

    trainer = make_trainer(small_datasets, tmp_path)
    run = dataclasses.replace(trainer.run, short_validation_length=2)
    setup = trainer.loss.setup
    validation = UpaoValidation(setup, run, trainer.criterion.settings)
    batches = list(trainer.datamodule.val_dataloader())[:2]
    logs = validation.run_batches(batches, False, 0, True).logs
    prior, window = logs["trust_prior"], logs["trust_window"]
    expected = logs["expected_vrmse"]
    assert {e["rule"] for e in expected.values()} == {3}
    histories = [setup.prepared(b, trainer.model, normalized=False).history for b in batches]
    mask = slots_mask(setup.channel_slots, histories[0].device)
    windows = [w.double() for h in histories for w in h.unbind(0)]
    by_hand = expected_from_starts([classical_start_matrices(w, mask)[prior] for w in windows], window)
    assert expected[prior]["value"] == by_hand.value and expected[prior]["high"] == by_hand.high
    assert expected[prior]["windows"] == expected["model"]["windows"] == len(windows) > 2
