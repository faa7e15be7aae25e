"""``well-upao evaluate``: tables with the classical baselines, JSON, figures, and clear errors."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from well_upao.cli import main
from well_upao.harness.model_factory import na_transformer
from well_upao.models.checkpoint import build_payload, save_checkpoint


def checkpoint(path, dataset, base, **kwargs):
    model = na_transformer(preset="tiny", layers=1, dims=(2,), dataset_name=dataset, well_base_path=str(base), **kwargs)
    save_checkpoint(path, build_payload(model))
    return path


def test_evaluate_prints_baselines_and_models_and_writes_files(small_datasets, tmp_path, capsys):
    ckpt = checkpoint(tmp_path / "model.pt", "burgers2d", small_datasets)
    out = tmp_path / "out"
    code = main(
        [
            "evaluate",
            str(ckpt),
            "--data",
            "burgers2d",
            "--base-path",
            str(small_datasets),
            "--rollout-steps",
            "3",
            "--out",
            str(out),
            "--quiet",
        ]
    )
    assert code == 0
    table = capsys.readouterr().out
    for name in ("persistence", "extrap1", "extrap2", "solver", "model"):
        assert f"| {name} |" in table, table
    assert "VRMSE (paper, per trajectory)" in table and "VRMSE (the Well, per frame)" in table
    result = json.loads((out / "evaluation_burgers2d_valid_stride1.json").read_text())
    names = {s["name"] for s in result["scores"]}
    assert {"persistence", "extrap1", "extrap2", "solver", "model"} <= names
    solver = next(s for s in result["scores"] if s["name"] == "solver")
    persistence = next(s for s in result["scores"] if s["name"] == "persistence")
    assert solver["mean_vrmse_paper"] < 0.01 * persistence["mean_vrmse_paper"]  # the solver knows the PDE
    assert len(persistence["rollout_vrmse_well"]) == 3
    assert (out / "rollout_burgers2d_valid_stride1.png").stat().st_size > 1000
    assert (out / "fields_burgers2d_model.png").exists()


def test_stride_is_applied_and_reported(small_datasets, tmp_path):
    out = tmp_path / "out"
    assert (
        main(
            [
                "evaluate",
                "--no-figures",
                "--data",
                "adv1d",
                "--base-path",
                str(small_datasets),
                "--history",
                "2",
                "--stride",
                "3",
                "--rollout-steps",
                "2",
                "--out",
                str(out),
                "--quiet",
                "--no-solver",
            ]
        )
        == 0
    )
    result = json.loads((out / "evaluation_adv1d_valid_stride3.json").read_text())
    assert result["stride"] == 3 and result["dt"] == pytest.approx(0.03)


def test_a_checkpoint_for_another_channel_set_is_refused(small_datasets, tmp_path, capsys):
    ckpt = checkpoint(tmp_path / "tg.pt", "tg2d", small_datasets)
    code = main(
        [
            "evaluate",
            "--no-figures",
            str(ckpt),
            "--data",
            "burgers2d",
            "--base-path",
            str(small_datasets),
            "--quiet",
            "--out",
            str(tmp_path / "out"),
        ]
    )
    err = capsys.readouterr().err
    assert code != 0 and "trained on 'tg2d'" in err and err.count("\n") == 1


def test_missing_split_and_empty_directory_are_explained(small_datasets, tmp_path, capsys):
    base = tmp_path / "base"
    shutil.copytree(small_datasets / "adv1d", base / "adv1d")
    shutil.rmtree(base / "adv1d" / "data" / "test")
    assert (
        main(["evaluate", "--no-figures", "--data", "adv1d", "--base-path", str(base), "--split", "test", "--quiet"])
        != 0
    )
    assert "no HDF5 files" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["evaluate", "--no-figures", "--data", "adv1d", "--base-path", str(tmp_path / "empty"), "--quiet"]) != 0
    assert "generate-exact" in capsys.readouterr().err


def test_leaderboard_lists_the_wells_numbers_and_ours(tmp_path, capsys):
    evaluation = tmp_path / "evaluation_shear_flow_valid_stride1.json"
    evaluation.write_text(
        json.dumps(
            {
                "dataset": "shear_flow",
                "split": "valid",
                "scores": [
                    {
                        "name": "mine",
                        "mean_vrmse_well": 0.5,
                        "mean_vrmse_paper": 0.25,
                        "notes": {"training": "6 epochs, 480 steps"},
                    }
                ],
            }
        )
    )
    assert main(["leaderboard", str(evaluation)]) == 0
    table = capsys.readouterr().out
    assert "| shear_flow | the Well | test, one-step (Well VRMSE) | 1.189 | 1.472 | 3.447 | 0.808 |" in table
    assert (
        "ours: mine [data: the dataset's files; trained 6 epochs, 480 steps] | valid: Well VRMSE 0.5, paper VRMSE 0.25"
        in table
    )
    assert "revised its shear_flow test numbers on 2024-12-09 (the_well commit c923631)" in table
    assert main(["leaderboard", str(tmp_path / "missing.json")]) != 0


def test_rows_are_named_by_label_and_same_named_runs_stay_apart(small_datasets, tmp_path):
    """LABEL=PATH names a row; two run folders both called <experiment>/0 must not overwrite each other."""
    for seed, sweep in enumerate(("a", "b")):
        run = tmp_path / sweep / "burgers2d-na-upao-NATransformer-0.001" / "0" / "checkpoints"
        run.mkdir(parents=True)
        torch.manual_seed(seed)
        checkpoint(run / "best.pt", "burgers2d", small_datasets)
    folders = [str(tmp_path / s / "burgers2d-na-upao-NATransformer-0.001" / "0") for s in ("a", "b")]
    labelled = checkpoint(tmp_path / "plain.pt", "burgers2d", small_datasets)
    out = tmp_path / "out"
    arguments = ["--data", "burgers2d", "--base-path", str(small_datasets), "--rollout-steps", "1"]
    assert main(["evaluate", *folders, f"UPAO, norm={labelled}", *arguments, "--out", str(out), "--quiet"]) == 0
    scores = json.loads((out / "evaluation_burgers2d_valid_stride1.json").read_text())["scores"]
    names = [s["name"] for s in scores]
    assert set(folders) <= set(names) and "UPAO, norm" in names
    by_name = {s["name"]: s["mean_vrmse_well"] for s in scores}
    assert by_name[folders[0]] != by_name[folders[1]]  # two different models, two rows
    assert (out / "fields_burgers2d_UPAO_norm.png").exists()


def test_an_auto_default_is_resolved_to_the_lowest_floor(small_datasets, tmp_path):
    """wave2d's registry default is `auto`: the floor section's "default" line is the combination auto picks (here
    the lowest of all), not a missing row looked up under the name "auto"."""
    out = tmp_path / "out"
    args = ["--data", "wave2d", "--base-path", str(small_datasets), "--no-solver", "--rollout-steps", "1"]
    assert main(["evaluate", "--no-figures", *args, "--quiet", "--out", str(out)]) == 0
    floor = json.loads((out / "evaluation_wave2d_valid_stride1.json").read_text())["residual_floor"]
    assert floor["default"]["chosen_by"] == "auto"
    assert floor["default"] | {"chosen_by": None} == floor["lowest"] | {"chosen_by": None}


def test_every_row_gets_the_label_free_scorecard_and_runs_show_their_guard(small_datasets, tmp_path, capsys):
    """The scorecard beside every row, classical ones too: persistence's backtest is exactly 1 and its departure from
    extrap2 exactly 1 (it predicts the last observed frame by the one before, the next by the last: an error of
    exactly that step, a move of exactly extrap2's step), extrap2's departure from itself is rounding,
    the solver's residual sits near the floor of the true frames while persistence's is far above it (negative
    control); a run folder's row says from its metrics.jsonl that the guard kept its start."""
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "artifacts").mkdir()
    checkpoint(run / "checkpoints" / "best.pt", "burgers2d", small_datasets)
    lines = [
        {"guard": True, "epoch": 0, "valid": 2.0, "best_epoch": 0, "kept_start": True, "guard_rejections": 0},
        {"epoch": 1, "valid": 1.0, "best_epoch": 0, "kept_start": True, "guard_rejections": 1,
         "kept_start_reason": "guard: floor: test reason"},
    ]  # fmt: skip
    (run / "artifacts" / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "out"
    args = ["evaluate", "--no-figures", f"upao={run}", "--data", "burgers2d", "--base-path", str(small_datasets)]
    assert main([*args, "--rollout-steps", "1", "--out", str(out), "--quiet"]) == 0
    table = capsys.readouterr().out
    assert "| residual / floor | departure from extrap2 | backtest | selection |" in table
    assert not list(out.glob("*.png"))  # --no-figures: the JSON alone
    assert "kept start (guard); guard refused 1" in table and "kept its start: guard: floor: test reason" in table
    result = json.loads((out / "evaluation_burgers2d_valid_stride1.json").read_text())
    rows = {s["name"]: s for s in result["scores"]}
    assert rows["persistence"]["label_free"]["backtest"] == pytest.approx(1.0, rel=1e-9)
    # extrap2's departure from the reference extrap2 is its float32 rounding only; persistence moved back exactly
    # the extrapolation's whole step
    assert rows["extrap2"]["label_free"]["departure_extrap2"] < 1e-3
    assert rows["persistence"]["label_free"]["departure_extrap2"] == pytest.approx(1.0, rel=1e-6)
    assert 0.3 < rows["solver"]["label_free"]["residual_ratio"] < 3
    assert rows["persistence"]["label_free"]["residual_ratio"] > 10
    for row in rows.values():
        assert set(row["label_free"]) == {"floor", "residual_ratio", "departure_extrap2", "backtest"}
    assert rows["upao"]["selection"]["kept_start"] and rows["upao"]["selection"]["guard"] is True


def test_an_impossible_device_is_refused_with_its_fix(small_datasets, tmp_path, capsys):
    path = checkpoint(tmp_path / "m.pt", "wave2d", small_datasets)
    out = tmp_path / "out"
    base = ["evaluate", "--no-figures", str(path), "--base-path", str(small_datasets), "--quiet", "--out", str(out)]
    assert main([*base, "--device", "gpu"]) != 0
    assert "use auto, cpu, cuda or cuda:N" in capsys.readouterr().err
    if not torch.cuda.is_available():
        assert main([*base, "--device", "cuda"]) != 0
        assert "no CUDA device" in capsys.readouterr().err
    assert not out.exists()  # refused before anything was written


def test_a_placed_model_row_predicts_what_it_predicted_in_place():
    """``place`` moves a row's network and its inputs; on the CPU it must not change a prediction (CUDA is checked by
    benchmarks/device/gpu_check.py on a GPU) and a row without a network ignores it."""
    from well_upao.predict.predictors import HarnessModel, classical_row

    torch.manual_seed(0)
    network = torch.nn.Conv2d(3 * 2, 2, 3, padding=1)
    row = HarnessModel("conv", network, "channels_first_default", history=3)
    window = torch.randn(2, 4, 8, 8, 2)
    before = row.predict(window, None)
    row.place("cpu")
    assert row.device == torch.device("cpu") and torch.equal(row.predict(window, None), before)
    classical = classical_row("extrap2")
    classical.place("cpu")
    assert classical.device is None


def test_leaderboard_says_which_evaluations_it_has_no_published_numbers_for(tmp_path, capsys):
    evaluation = tmp_path / "evaluation_dummy_dataset_valid_stride1.json"
    score = {"name": "fno", "mean_vrmse_well": 1.5, "mean_vrmse_paper": 1.7, "notes": {}}
    evaluation.write_text(json.dumps({"dataset": "dummy_dataset", "split": "valid", "scores": [score, score]}))
    assert main(["leaderboard", str(evaluation)]) == 0
    table = capsys.readouterr().out
    assert "Not shown: evaluations of dummy_dataset (2 rows), which have no published leaderboard" in table
    assert "| dummy_dataset |" not in table


def test_a_run_is_evaluated_at_the_stride_it_trained_at(tmp_path, capsys, monkeypatch):
    """A run trained with ``data.min_dt_stride=5`` (its checkpoint's ``train.data``), evaluated without ``--stride``,
    is evaluated at stride 5 (the Well's validation reads the run's ``min_dt_stride`` too); ``--stride 1`` overrides
    it. What the evaluation does with the stride: ``tests/evaluate/test_scores.py``."""
    import types

    import advected_mode

    import well_upao.commands.evaluate as command

    base = tmp_path / "data"
    advected_mode.write(base)
    model = na_transformer(preset="tiny", layers=1, dims=(2,), dataset_name=advected_mode.NAME,
                           well_base_path=str(base), history=2)  # fmt: skip
    data = {"well_base_path": str(base), "well_dataset_name": advected_mode.NAME, "n_steps_input": 2,
            "min_dt_stride": 5, "max_dt_stride": 5}  # fmt: skip
    ckpt = tmp_path / "run.pt"
    save_checkpoint(ckpt, build_payload(model, extra_train={"data": data}))
    requests = []

    def run_evaluation(request, checkpoints, transfers=()):
        requests.append(request)
        return types.SimpleNamespace(table="", json_path="-", figures=[])

    monkeypatch.setattr(command, "run_evaluation", run_evaluation)
    assert main(["evaluate", str(ckpt), "--quiet"]) == 0
    assert main(["evaluate", str(ckpt), "--quiet", "--stride", "1"]) == 0
    capsys.readouterr()
    assert [(r.dataset, r.base, r.stride) for r in requests] == [
        (advected_mode.NAME, base, 5),
        (advected_mode.NAME, base, 1),
    ]
