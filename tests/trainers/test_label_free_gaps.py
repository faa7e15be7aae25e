"""No silent holes in the label-free facts of a UPAO run: a score that cannot be computed is named with its reason
(``valid_unavailable_scores``), the guard says which rule it could not check (``guard_unchecked``), an empty floor
table says why (``upao_floors_reason``); and a one-frame model reads the constant fields the Well's formatters give
it. Negative controls: complete cards carry no reason."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import harness_command as harness
import pytest
import torch
from hand_setup import hand_setup

from well_upao.harness.samples import Context, one_frame_prediction
from well_upao.physics.scores import Scorecard
from well_upao.physics.stencils import Grid
from well_upao.predict.predictors import HarnessModel
from well_upao.trainers.guard import guard_unchecked
from well_upao.trainers.start_model import START_WEIGHTS
from well_upao.trainers.upao_validation import UpaoValidation, ValidationSettings

COMPLETE = Scorecard(floor=1e-3, residual_ratio=1.5, departure=0.2, backtest=0.3)


def test_the_guard_names_each_rule_it_could_not_check():
    assert guard_unchecked(COMPLETE, COMPLETE) == []  # negative control: both rules checked
    no_backtest = Scorecard(floor=1e-3, residual_ratio=1.5, departure=0.2)
    assert guard_unchecked(no_backtest, no_backtest) == [
        "floor rule not checked: start's backtest n/a",
        "backtest rule not checked: candidate's backtest, start's backtest n/a",
    ]
    assert guard_unchecked(COMPLETE, Scorecard(floor=1e-3, residual_ratio=1.5, backtest=0.3)) == [
        "floor rule not checked: candidate's departure n/a"
    ]
    assert guard_unchecked(None, COMPLETE) == [
        "floor and backtest rules: no scorecard of the start (the start was not validated)"
    ]


def test_a_runs_missing_scores_are_named_with_their_reasons():
    validation = UpaoValidation(hand_setup(history=4), None, ValidationSettings(True, 2, 30))
    assert validation.unavailable_scores(COMPLETE, has_reference=True) is None  # negative control
    text = validation.unavailable_scores(Scorecard(floor=1e-3, residual_ratio=1.5), has_reference=False)
    assert text == (
        "departure: no starting model to compare with (a run resumed without "
        f"checkpoints/{START_WEIGHTS}, or a sharded run resumed: its start's predictions are kept in memory); "
        "backtest: not finite on the validation batches"
    )
    validation.setup = hand_setup(history=4, one_frame=True)
    assert validation.unavailable_scores(Scorecard(1e-3, 1.5, 0.2), True) == (
        "backtest: a one-frame model predicts no observed frame of the history"
    )
    validation.setup = hand_setup(history=1)
    assert "history of 1 frame" in validation.unavailable_scores(Scorecard(1e-3, 1.5, 0.2), True)


@pytest.mark.parametrize("formatter", ["channels_first_default", "channels_last_default"])
def test_a_one_frame_model_reads_the_constant_fields_after_the_frames(formatter):
    """The Well's formatters append constant fields after the history's ``T * C`` channels: a model that returns
    its input's last channel returns the constant field."""
    history, constants = torch.randn(2, 3, 8, 8, 2), torch.randn(2, 8, 8, 1)
    if formatter == "channels_first_default":
        last = lambda x: x[:, -1:]  # noqa: E731
    else:
        last = lambda x: x[..., -1:]  # noqa: E731
    torch.testing.assert_close(one_frame_prediction(last, history, formatter, constants), constants)
    torch.testing.assert_close(one_frame_prediction(last, history, formatter), history[:, -1, ..., -1:])
    model = HarnessModel("m", torch.nn.Identity(), formatter, history=3)
    model.model = last
    context = Context(torch.ones(1), Grid((1.0, 1.0), (True, True)), {}, [0, 1], constants[0])
    torch.testing.assert_close(model.predict(history, context), constants[:1].expand(2, -1, -1, -1))  # one sample


@pytest.mark.slow  # one run of the Well's training command (~1 minute on two shared cores)
def test_a_one_frame_upao_run_on_a_file_with_constant_fields_logs_what_it_could_not_score(tmp_path, monkeypatch):
    """``experiment=fno trainer=upao`` on the 2D OPEN conformance fixture (a constant field: the FNO reads
    ``3 * 4 + 1`` channels; this stopped with a channel mismatch before): its metrics say why the backtest is
    missing, which guard rules were not checked and why there is no floor table; its log says so too."""
    from well_synthetic import write_spec_dataset

    write_spec_dataset(tmp_path / "base", 2, "OPEN")
    tests = str(Path(__file__).resolve().parents[1])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([tests, os.environ.get("PYTHONPATH", "")]))
    result = harness.run_harness(
        tmp_path, tmp_path / "base", "experiment=fno", "trainer=upao", "data.imports=[spec_conformance_dataset]",
        "data.well_dataset_name=spec2d_open", *harness.FAST,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    run = harness.run_folders(tmp_path)[0]
    lines = [json.loads(line) for line in (run / "artifacts" / "metrics.jsonl").read_text().splitlines()]
    assert lines[0]["upao_floors"] == {} and "fixed (not auto)" in lines[0]["upao_floors_reason"]
    validations = [line for line in lines if "valid_unavailable_scores" in line]
    assert validations and all(math.isfinite(line["valid_score_residual_ratio"]) for line in validations)
    one_frame = "backtest: a one-frame model predicts no observed frame of the history"
    assert all(line["valid_unavailable_scores"] == one_frame for line in validations)
    assert any("backtest rule not checked" in (line.get("guard_unchecked") or "") for line in lines)
    log = result.stderr + result.stdout
    assert "label-free scores not computed: backtest" in log and "the guard could not check everything" in log
