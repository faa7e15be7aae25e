"""The main job end to end at a toy size (marked slow: the README's first command runs the real one in CI)."""

from __future__ import annotations

import json
import os
import sys

import pytest
import torch
from matched_rows import expected_matched_rows

from well_upao.models.assembly import assemble, shipped_backbone_path
from well_upao.models.checkpoint import read_checkpoint
from well_upao.models.lora import backbone_sha256
from well_upao.models.na_transformer import NATransformer


def test_shipped_backbone_is_small_and_loads_by_name():
    path = shipped_backbone_path()
    assert path.stat().st_size < 20 * 2**20
    payload = read_checkpoint(path)
    assert payload["model"]["config"]["preset"] == "tiny" and payload["optimizer_state_dit"] is None
    model = assemble(dict(preset="tiny", channel_slots=[0, 1], pretrained="shipped"))
    reference = NATransformer(preset="tiny", channel_slots=[0, 1])
    reference.load_state_dict(payload["state_dict"])
    assert backbone_sha256(model) == backbone_sha256(reference)


def test_nslora_config_defaults_to_the_shipped_backbone():
    from pathlib import Path

    import yaml

    import well_upao.configs as configs

    for name in ("na_lora", "na_nslora"):
        node = yaml.safe_load((Path(configs.__file__).parent / "model" / f"{name}.yaml").read_text())
        assert node["pretrained"] == "shipped"


@pytest.mark.slow
def test_quickstart_runs_at_a_toy_size(tmp_path):
    from well_upao.quickstart import UPAO_ROW, QuickstartConfig, run_quickstart

    text = run_quickstart(QuickstartConfig(out=tmp_path, n_traj=3, resolution=32, n_steps=51, epochs=1))
    for row in ("persistence", "extrap2", "solver", "zero-shot", "UPAO + NSLoRA", "supervised LoRA"):
        assert row in text
    # the matched rows and the verdict's solver are the ones this run's measured ladder selects
    result = json.loads(next((tmp_path / "results").glob("evaluation_*.json")).read_text())
    expected = expected_matched_rows(result, UPAO_ROW)
    assert all(f"| {name} |" in text for name in expected), (expected, text)
    solver = "the cost-matched solver" if "cost-matched" in expected[0] else "the cheapest solver (slower)"
    assert f"{solver} (" in text, text
    assert "UPAO + NSLoRA (mean paper VRMSE" in text and "extrap2 (" in text
    assert list((tmp_path / "results").glob("fields_*.png"))


def test_quickstart_nslora_run_uses_the_newton_schulz_forward(tmp_path):
    """The quickstart's few epochs never stall the LoRA warm-up, so its NSLoRA row must run NS from the start."""
    from well_upao.quickstart import QuickstartConfig, harness_command

    command = harness_command(QuickstartConfig(out=tmp_path), "na_nslora", "upao", tmp_path, tmp_path)
    assert "trainer.nslora_schedule=from_start" in command
    assert "model.base=extrap2" in command and "trainer.vrmse_trajectories=3" in command


def test_the_quickstart_validates_on_three_trajectories():
    from well_upao.data.generate import split_trajectories
    from well_upao.quickstart import QuickstartConfig

    config = QuickstartConfig()
    splits = split_trajectories(config.n_traj, config.seed, config.valid_fraction)
    assert len(splits["valid"]) >= 3 and len(splits["train"]) >= 8


def test_the_verdict_compares_with_extrapolation_and_the_cost_matched_solver():
    from well_upao.evaluate.results import Scores
    from well_upao.quickstart import UPAO_ROW, verdict

    def row(name, vrmse, ms=1.0):
        return Scores(name, "x", {"u": vrmse}, {"u": vrmse}, [], ms / 1e3)

    line = verdict([row(UPAO_ROW, 0.2, 30), row("extrap2", 0.3), row("solver, cost-matched to x (4 RK4 steps)", 1e-5)])
    assert line.startswith("UPAO + NSLoRA (mean paper VRMSE 0.2) beat extrap2 (0.3) and did not beat")
    assert line.endswith("did not beat the cost-matched solver (1e-05 at 1.0 ms per prediction; the model 30.0 ms).")
    assert "did not beat extrap2" in verdict([row(UPAO_ROW, 0.5), row("extrap2", 0.3)])


def test_the_extrap2_backbone_is_shipped_and_is_the_quickstarts_default():
    """`shipped_extrap2` resolves to a packaged backbone trained with base extrap2 (its correction gain trained away
    from the fresh value 1), which loads into the quickstart's base; the quickstart adapts it by default."""
    from well_upao.models.assembly import resolve_pretrained
    from well_upao.models.checkpoint import migrated_base
    from well_upao.quickstart import QuickstartConfig

    payload = read_checkpoint(resolve_pretrained("shipped_extrap2"))
    assert migrated_base(payload["model"]["config"]) == "extrap2"
    assert not torch.equal(payload["state_dict"]["correction_gain"], torch.ones(18))
    assert QuickstartConfig().backbone == "shipped_extrap2" and QuickstartConfig().base == "extrap2"
    model = assemble(dict(preset="tiny", channel_slots=[0, 1], base="extrap2", pretrained="shipped_extrap2"))
    assert torch.equal(model.correction_gain, payload["state_dict"]["correction_gain"])


def test_the_verdict_states_the_label_free_score_and_the_guard_from_metrics_jsonl(tmp_path):
    """The verdict's label-free facts are those of the run's metrics.jsonl (the selected epoch's scores, the
    guard's refusals and kept_start_reason): changing the file changes the sentence."""
    from well_upao.evaluate.results import Scores
    from well_upao.harness.metrics_file import read_metrics
    from well_upao.quickstart import UPAO_ROW, progress_text, verdict

    def row(name, vrmse):
        return Scores(name, "x", {"u": vrmse}, {"u": vrmse}, [], 1e-3)

    def write(lines):
        path = tmp_path / "artifacts" / "metrics.jsonl"
        path.parent.mkdir(exist_ok=True)
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
        return read_metrics(tmp_path)

    start = {
        "guard": True,
        "epoch": 0,
        "valid": 4.0,
        "best_epoch": 0,
        "guard_rejections": 0,
        "valid_score_residual_ratio": 0.94,
        "valid_score_backtest": 3.8e-4,
    }
    refused = {
        "epoch": 1,
        "valid": 2.0,
        "best_epoch": 0,
        "guard_rejections": 1,
        "guard_rejected": True,
        "kept_start": True,
        "kept_start_reason": "guard: floor: ...",
        "valid_score_residual_ratio": 0.5,
        "valid_score_backtest": 2e-2,
    }
    scores = [row(UPAO_ROW, 4e-4), row("extrap2", 4e-4)]
    line = verdict(scores, write([start, refused]))
    assert line.endswith(
        "Without labels: residual 0.94x the floor, backtest 0.00038 of a step (epoch 0); the guard "
        "fired (1 candidate refused; it kept the start)."
    ), line
    accepted = dict(refused, best_epoch=1, guard_rejections=0, guard_rejected=False, kept_start=False,
                    kept_start_reason=None, valid_score_residual_ratio=1.1, valid_score_backtest=2e-4)  # fmt: skip
    line = verdict(scores, write([start, accepted]))
    assert "residual 1.1x the floor, backtest 0.0002 of a step (epoch 1); the guard did not fire." in line
    assert "the guard was off" in verdict(scores, write([dict(start, guard=False), accepted]))
    assert progress_text(write([start, refused]), 6) == (
        "epoch 1/6 criterion 2 residual/floor 0.5 backtest 0.02 guard refused 1"
    )
    expected = {
        "model": {"value": 0.0213, "low": 0.0118, "high": 0.0384},
        "extrap2": {"value": 9, "low": 1, "high": 80},
    }
    assert progress_text(write([start, dict(refused, valid_expected_vrmse=expected)]), 6) == (
        "epoch 1/6 criterion 2 residual/floor 0.5 backtest 0.02 expected VRMSE 0.0213 [0.0118, 0.0384] guard refused 1"
    )


def test_the_training_bar_redraws_only_when_the_run_logs_something_new(tmp_path, capsys):
    """follow_run polls every 2 s; it redraws the bar when the run's metrics.jsonl has news, not at every poll (a log
    captured to a file grows by a line per redraw). The child logs two validations, then stays silent ~7 s."""
    from well_upao.quickstart import follow_run

    child = tmp_path / "child.py"
    child.write_text(
        "import json, pathlib, time\n"
        "path = pathlib.Path('experiment/run/artifacts/metrics.jsonl')\n"
        "path.parent.mkdir(parents=True)\n"
        "for epoch in (0, 1):\n"
        "    with open(path, 'a') as f:\n"
        "        f.write(json.dumps({'epoch': epoch, 'valid': 1.0 / (epoch + 1)}) + '\\n')\n"
        "    time.sleep(2.5)\n"
        "time.sleep(7)\n"
    )
    command = [sys.executable, str(child)]
    code = follow_run(command, dict(os.environ), tmp_path, tmp_path / "log", tmp_path, "experiment", 2, "t")
    assert code == 0
    err = capsys.readouterr().err
    assert err.count("criterion 1]") == 1 and err.count("criterion 0.5]") == 1, err


def test_each_training_run_gets_an_equal_share_of_the_cores():
    from well_upao.quickstart import run_threads

    assert [run_threads(2, cores) for cores in (1, 2, 3, 16)] == [1, 1, 1, 8]
    assert run_threads(3, 8) == 2 and run_threads(1, 4) == 4


def test_the_two_training_runs_run_at_the_same_time_and_a_failure_names_its_log(tmp_path):
    """follow_runs starts every run before waiting for any: each child writes when it started and ended, and each
    starts before the other ends; the exit codes come back in order."""
    from well_upao.quickstart import FollowedRun, follow_runs

    child = tmp_path / "child.py"
    child.write_text(
        "import sys, time\n"
        "start = time.time(); time.sleep(3)\n"
        "open(sys.argv[1], 'w').write(f'{start} {time.time()}')\n"
        "sys.exit(int(sys.argv[2]))\n"
    )
    followed = [
        FollowedRun(
            [sys.executable, str(child), str(tmp_path / f"times{i}"), str(code)],
            dict(os.environ),
            tmp_path / f"cwd{i}",
            tmp_path / f"log{i}",
            tmp_path,
            "none",
            f"run {i}",
        )
        for i, code in enumerate((0, 3))
    ]
    assert follow_runs(followed, 1) == [0, 3]
    (start0, end0), (start1, end1) = (map(float, (tmp_path / f"times{i}").read_text().split()) for i in (0, 1))
    assert start1 < end0 and start0 < end1


def test_the_training_runs_get_their_threads_folders_and_errors(tmp_path, monkeypatch):
    """train_runs gives each harness run its own working folder (Hydra names its output folder by the second)
    and OMP_NUM_THREADS its share of the cores unless the environment sets it; a failed run's error names its log."""
    import well_upao.quickstart as quickstart

    seen = []
    codes = [0, 0]
    monkeypatch.setattr(quickstart, "follow_runs", lambda followed, epochs: seen.append(followed) or codes)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    config = quickstart.QuickstartConfig(out=tmp_path)
    folders = quickstart.train_runs(config, tmp_path / "datasets", tmp_path)
    assert list(folders) == list(quickstart.RUNS)
    runs = seen[-1]
    assert len({run.cwd for run in runs}) == 2 and all(run.cwd.parent == tmp_path / "hydra" for run in runs)
    assert {run.env["OMP_NUM_THREADS"] for run in runs} == {str(quickstart.run_threads(2))}
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    quickstart.train_runs(config, tmp_path / "datasets", tmp_path)
    assert {run.env["OMP_NUM_THREADS"] for run in seen[-1]} == {"3"}
    codes[1] = 1
    with pytest.raises(RuntimeError, match=r"na_lora-shifted\.log"):
        quickstart.train_runs(config, tmp_path / "datasets", tmp_path)
