"""``benchmarks/studies/what_you_get_study.py`` reuses a training run only when an earlier invocation finished it: a run
cut short (its folder there, no ``<role>.done.json``) is removed and trained again, a finished one is not trained twice,
and ``--force`` retrains a case from the beginning. The harness is replaced by a stand-in that writes what it would."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest
from harness.jobs import Finished
from studies import what_you_get_study as study


@pytest.fixture
def harness(tmp_path, monkeypatch) -> list[str]:
    """The commands the case ran ("train upao", "train supervised", "evaluate"), each writing what the real one
    would: a run folder with a metrics.jsonl, an evaluation JSON."""
    ran: list[str] = []

    def logged(args, command, log, **env):
        if "the_well.benchmark.train" in command:
            model = next(c.split("=", 1)[1] for c in command if c.startswith("model="))
            trainer = next(c.split("=", 1)[1] for c in command if c.startswith("trainer="))
            experiments = Path(next(c.split("=", 1)[1] for c in command if c.startswith("experiment_dir=")))
            run = experiments / f"burgers1d-{model}-{trainer}-NATransformer-0.001" / "0"
            (run / "artifacts").mkdir(parents=True)
            lines = [{"epoch": 1, "step": 2, "valid": 1.0, "best_epoch": 1}]
            (run / "artifacts" / "metrics.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
            ran.append(f"train {'upao' if trainer == 'upao' else 'supervised'}")
        else:
            out = Path(command[command.index("--out") + 1])
            out.mkdir(parents=True, exist_ok=True)
            (out / "evaluation_burgers1d_valid_stride1.json").write_text(json.dumps({"scores": []}))
            ran.append("evaluate")
        return Finished(0, 1.0, 1.0)

    monkeypatch.setattr(study, "logged", logged)
    forecast = {"windows": {}, "cells": [], "steps": 0, "cost": {}}
    monkeypatch.setattr(study, "forecast_of", lambda *args: forecast)  # tests/test_forecast_column.py tests it
    monkeypatch.setattr(study, "data_for", lambda args, setting, seed: (tmp_path / "data", ["generate"]))
    return ran


def arguments(tmp_path: Path, force: list[str] | None = None) -> argparse.Namespace:
    return argparse.Namespace(out=tmp_path / "out", epochs=1, epoch_steps=2, threads=1, force=force or [])


def recording_arguments(tmp_path: Path, monkeypatch) -> argparse.Namespace:
    """Arguments of a whole case (``run_case``): records under ``tmp_path``, no deadline, a record that is the seed."""
    args = arguments(tmp_path)
    args.records, args.deadline = tmp_path / "records", None
    monkeypatch.setattr(study, "compact", lambda setting, seed, made, case: {"seed": seed})
    return args


def test_a_run_cut_short_is_trained_again_and_a_finished_one_is_reused(tmp_path, harness):
    args, setting = arguments(tmp_path), study.BY_KEY["burgers1d"]
    folder = study.case_folder(args, setting, 1)
    stale = folder / "experiments" / "burgers1d-na_nslora-upao-NATransformer-0.001" / "0"
    (stale / "checkpoints").mkdir(parents=True)
    (stale / "checkpoints" / "best.pt").write_bytes(b"the start only")  # an interrupted run: no done marker
    study.run_harness_case(args, setting, 1)
    assert harness == ["train upao", "train supervised", "evaluate"]
    assert not (stale / "checkpoints" / "best.pt").exists()  # the stale run was removed, not reused
    assert json.loads((folder / "upao.done.json").read_text())["trained_at"]
    harness.clear()
    (folder / "supervised.done.json").unlink()  # the supervised run now looks cut short; the UPAO run is finished
    study.run_harness_case(args, setting, 1)
    assert harness == ["train supervised", "evaluate"]


def test_force_removes_the_case_and_retrains_it(tmp_path, harness, monkeypatch):
    args, setting = recording_arguments(tmp_path, monkeypatch), study.BY_KEY["burgers1d"]
    study.run_case(args, setting, 1)
    harness.clear()
    study.run_case(args, setting, 1)
    assert harness == []  # its record exists: skipped
    args.force = ["burgers1d"]
    study.run_case(args, setting, 1)
    assert harness == ["train upao", "train supervised", "evaluate"]


def test_a_finished_run_of_another_command_or_without_its_folder_is_trained_again(tmp_path, harness):
    """A marker is the evidence of one command: a rehearsal's runs (``--epochs 1``) are not reused by the study's
    (``--epochs 6``), and a marker whose run folder is gone does not hand ``None`` to evaluate."""
    setting = study.BY_KEY["burgers1d"]
    rehearsal = arguments(tmp_path)
    study.run_harness_case(rehearsal, setting, 1)
    harness.clear()
    real = arguments(tmp_path)
    real.epochs = 6
    study.run_harness_case(real, setting, 1)
    assert harness == ["train upao", "train supervised", "evaluate"]
    folder = study.case_folder(real, setting, 1)
    assert "trainer.epochs=6" in json.loads((folder / "upao.done.json").read_text())["command"]
    harness.clear()
    for run in (folder / "experiments").glob("*-na_lora-shifted-*"):
        shutil.rmtree(run)
    study.run_harness_case(real, setting, 1)
    assert harness == ["train supervised", "evaluate"]


def test_force_past_the_deadline_deletes_nothing(tmp_path, harness, monkeypatch):
    args, setting = recording_arguments(tmp_path, monkeypatch), study.BY_KEY["burgers1d"]
    study.run_case(args, setting, 1)
    args.force, args.deadline = ["burgers1d"], 0.5  # long past
    study.run_case(args, setting, 1)
    assert (study.case_folder(args, setting, 1) / "upao.done.json").is_file()


def test_a_record_the_study_wrote_does_not_make_the_checkout_dirty(committed_folder, monkeypatch):
    """``made_at``'s ``dirty``: a changed tracked file of the code is; a changed record of the study (written by an
    earlier case of the same invocation) is not."""
    tmp_path = committed_folder({"reports/what_you_get/a-seed42.json": "{}\n", "code.py": "x = 1\n"})
    records = tmp_path / "reports" / "what_you_get"
    monkeypatch.setattr(study, "ROOT", tmp_path)
    monkeypatch.setattr(study, "RECORDS", records)
    assert study.made_at()["dirty"] is False
    (records / "a-seed42.json").write_text('{"made": 1}\n')
    assert study.made_at()["dirty"] is False
    (tmp_path / "code.py").write_text("x = 2\n")
    assert study.made_at()["dirty"] is True
