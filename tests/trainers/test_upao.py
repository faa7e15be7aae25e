"""``trainer=upao``: no interior labels reach the gradients, label-free selection, the harness command."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import harness_command as harness
import numpy as np
import pytest
import torch
from the_well.benchmark.metrics import MSE

from well_upao.harness.datamodule import WellUpaoDataModule
from well_upao.harness.metrics_file import read_metrics
from well_upao.harness.model_factory import na_transformer
from well_upao.harness.samples import batch_dt
from well_upao.models.checkpoint import read_checkpoint
from well_upao.models.lora import adapter_layers
from well_upao.predict.classical import CLASSICAL_PRIORS
from well_upao.trainers.upao import UpaoTrainer


def make_trainer(base, tmp_path, dataset="burgers2d", model_kwargs=None, data_kwargs=None, **kwargs) -> UpaoTrainer:
    data_kwargs = {"n_steps_input": 8, "n_steps_output": 1, **(data_kwargs or {})}
    datamodule = WellUpaoDataModule(
        str(base), dataset, batch_size=2, data_workers=0, max_rollout_steps=3, **data_kwargs
    )
    torch.manual_seed(0)
    model = kwargs.pop("model", None) or na_transformer(
        preset="tiny",
        layers=1,
        dataset_name=dataset,
        well_base_path=str(base),
        history=data_kwargs["n_steps_input"],
        **(model_kwargs or {}),
    )
    folders = {name: str(tmp_path / name) for name in ("checkpoints", "artifacts", "viz")}
    for folder in folders.values():
        Path(folder).mkdir(parents=True, exist_ok=True)
    return UpaoTrainer(
        checkpoint_folder=folders["checkpoints"],
        artifact_folder=folders["artifacts"],
        viz_folder=folders["viz"],
        formatter="channels_last_default",
        model=model,
        datamodule=datamodule,
        optimizer=torch.optim.AdamW(model.parameters(), lr=1e-4),
        loss_fn=MSE(),
        epochs=1,
        checkpoint_frequency=0,
        val_frequency=1,
        rollout_val_frequency=1,
        max_rollout_steps=2,
        short_validation_length=1,
        make_rollout_videos=False,
        num_time_intervals=2,
        device=torch.device("cpu"),
        progress=False,
        **kwargs,
    )


def gradients(trainer, batch):
    trainer.model.zero_grad()
    terms = trainer.loss.upao_terms(batch)
    terms.total.backward()
    return terms, [p.grad.clone() for p in trainer.model.parameters() if p.grad is not None]


def test_interior_targets_never_reach_the_loss_or_its_gradients(small_datasets, tmp_path):
    trainer = make_trainer(small_datasets, tmp_path)
    batch = next(iter(trainer.datamodule.train_dataloader()))
    clean_terms, clean = gradients(trainer, batch)
    for garbage in (float("nan"), 1e30):
        poisoned = dict(batch)
        target = batch["output_fields"].clone()
        target[:, :, 1:-1, 1:-1] = garbage  # everything but the width-1 band
        poisoned["output_fields"] = target
        terms, dirty = gradients(trainer, poisoned)
        assert torch.equal(terms.total, clean_terms.total)
        assert all(torch.equal(a, b) for a, b in zip(clean, dirty, strict=True))
    # sanity: the band itself does matter
    moved = dict(batch)
    moved["output_fields"] = batch["output_fields"] + 1.0
    terms, _ = gradients(trainer, moved)
    assert terms.boundary > clean_terms.boundary


def test_label_free_selection_by_default_and_vrmse_under_the_paper_protocol(small_datasets, tmp_path):
    trainer = make_trainer(small_datasets, tmp_path / "default")
    loss, logs = trainer.validation_loop(trainer.datamodule.val_dataloader(), full=False)
    assert loss == pytest.approx(logs["valid_upao_loss"])
    assert "valid_paper_VRMSE_velocity_x" in logs and "valid_burgers2d/full_VRMSE_T=all" in logs  # both, labelled
    paper = make_trainer(small_datasets, tmp_path / "paper", paper_protocol=True)
    loss, logs = paper.validation_loop(paper.datamodule.val_dataloader(), full=False)
    assert loss == pytest.approx(logs["valid_paper_VRMSE"])


def test_unset_settings_take_the_datasets_defaults(small_datasets, tmp_path):
    """``derivative`` (and the other UPAO settings) left unset come from the dataset's registry entry."""
    import dataclasses

    from well_upao.data import datasets

    original = datasets.DATASETS["burgers2d"]
    datasets.DATASETS["burgers2d"] = dataclasses.replace(original, defaults={"derivative": "spectral"})
    try:
        chosen = make_trainer(small_datasets, tmp_path / "a").loss.setup
        assert chosen.settings["derivative"] == "spectral" and chosen.objective.derivative == "spectral"
        assert chosen.settings["time_scheme"] == "crank_nicolson"  # the global default
        explicit = make_trainer(small_datasets, tmp_path / "b", derivative="fd").loss.setup
        assert explicit.objective.derivative == "fd"
    finally:
        datasets.DATASETS["burgers2d"] = original


def test_a_pde_that_needs_missing_slots_is_refused(small_datasets, tmp_path):
    with pytest.raises(ValueError, match="needs slots"):
        make_trainer(small_datasets, tmp_path, pde="tg2d")  # burgers2d has no pressure channel


def test_harness_runs_upao_end_to_end(small_datasets, tmp_path):
    result = harness.run_harness(tmp_path, small_datasets, "model=na", "trainer=upao", "data=tg2d", *harness.FAST)
    assert result.returncode == 0, result.stderr[-3000:]
    folder = harness.run_folders(tmp_path)[0]
    assert folder.parent.name == "tg2d-na-upao-NATransformer-0.0001"
    payload = read_checkpoint(folder / "checkpoints" / "best.pt")
    assert payload["train"]["selection"] == "upao_loss" and payload["train"]["regime"] == "windows"
    lines = [json.loads(line) for line in (folder / "artifacts" / "metrics.jsonl").read_text().splitlines()]
    start, first = lines[0], lines[1]  # the untrained model's validation (trainer.validate_start), then epoch 1
    assert start["epoch"] == 0 and start["step"] == 0 and start["kept_start"] and "train_loss" not in start
    assert (start["pde"], start["upao_derivative"], start["upao_time_scheme"]) == ("tg2d", "fd", "crank_nicolson")
    assert start["device"] == "cpu" and "device" not in first  # where the run computed, once (CUDA when present)
    assert {"train_L_BC", "train_L_PDE", "valid_upao_loss", "valid_paper_VRMSE"} <= set(first)
    assert first["epoch"] == 1 and first["kept_start"] == (first["best_epoch"] == 0) and "pde" not in first
    assert payload["epoch"] == first["best_epoch"]  # best.pt holds the model of the logged best epoch


def test_a_user_pde_registered_outside_the_package_runs_in_the_harness(small_datasets, tmp_path):
    plugin = tmp_path / "plugins"
    plugin.mkdir()
    (plugin / "my_pdes.py").write_text(
        "from well_upao.physics import PDE, SubEquation, register_pde\n"
        "register_pde(PDE(name='my_advection', variables=('concentration_rho',), parameters=('a',),\n"
        "    equations=(SubEquation('transport', rate=lambda f, p, ops: f['concentration_rho'],\n"
        "        flux=lambda f, p, ops: p['a'] * ops.d(f['concentration_rho'], 0)),)))\n"
    )
    import os

    os.environ["PYTHONPATH"] = str(plugin) + os.pathsep + os.environ.get("PYTHONPATH", "")
    try:
        result = harness.run_harness(
            tmp_path,
            small_datasets,
            "trainer=upao",
            "data=adv1d",
            "data.imports=[my_pdes]",
            "trainer.pde=my_advection",
            *harness.FAST,
        )
    finally:
        os.environ["PYTHONPATH"] = os.environ["PYTHONPATH"].split(os.pathsep, 1)[1]
    assert result.returncode == 0, result.stderr[-3000:]
    assert "PDE my_advection (1 sub-equations)" in result.stderr + result.stdout


def test_lora_to_nslora_switch_after_patience(small_datasets, tmp_path):
    trainer = make_trainer(small_datasets, tmp_path, model_kwargs={"adapter": {"kind": "nslora"}}, switch_patience=2)
    layers = adapter_layers(trainer.bare_model)
    with torch.no_grad():
        for layer in layers.values():
            layer.lora_B.normal_(0, 0.01)
    trainer.epochs_without_improvement = 1
    assert trainer.after_validation(1, 1.0, improved=False) == {}
    assert not any(bool(layer.ns_active) for layer in layers.values())
    trainer.epochs_without_improvement = 2
    optimizer_state = trainer.optimizer.state_dict()
    logs = trainer.after_validation(2, 1.0, improved=False)
    assert logs["nslora_switch_epoch"] == 2
    assert logs["delta_w_norm_before_switch"] > 0 and logs["delta_w_norm_after_switch"] > 0
    assert all(bool(layer.ns_active) for layer in layers.values())
    assert trainer.epochs_without_improvement == 0  # early stopping restarts after the switch
    assert trainer.optimizer.state_dict() == optimizer_state  # A, B and the AdamW state are kept
    assert trainer.after_validation(3, 1.0, improved=False) == {}  # switches once


def trainer_config(*overrides: str):
    from hydra import compose, initialize_config_module

    with initialize_config_module(config_module="well_upao.configs", version_base=None):
        return compose(config_name="config", overrides=["trainer=upao", "data=burgers2d", *overrides]).trainer


def test_the_schedule_in_the_model_config_is_an_alias_of_the_trainer_setting(small_datasets, tmp_path):
    """``model.adapter.schedule`` / ``switch_patience`` (earlier commands) reach the trainer through its config
    (``trainer.adapter_schedule`` / ``adapter_switch_patience``), not through the model; its own settings win."""
    legacy = ("model.adapter.schedule=from_start", "model.adapter.switch_patience=3")
    config = trainer_config("model=na_nslora", *legacy)
    carried = {key: config[key] for key in ("adapter_schedule", "adapter_switch_patience")}
    assert carried == {"adapter_schedule": "from_start", "adapter_switch_patience": 3}
    assert trainer_config("model=na").adapter_schedule is None  # a model without adapters
    adapter = {"kind": "nslora", "schedule": "from_start", "switch_patience": 3}
    trainer = make_trainer(small_datasets, tmp_path, model_kwargs={"adapter": adapter}, **carried)
    assert (trainer.switch.schedule, trainer.switch.patience) == ("from_start", 3)
    assert all(layer.ns_mode for layer in adapter_layers(trainer.bare_model).values())
    assert "schedule" not in trainer.bare_model.config["adapter"]  # not an adapter setting any more
    assert not hasattr(trainer.bare_model, "schedule_alias")  # nothing rides on the model
    trainer = make_trainer(
        small_datasets, tmp_path, model_kwargs={"adapter": adapter}, nslora_schedule="warmup", **carried
    )
    assert trainer.switch.schedule == "warmup" and not any(
        layer.ns_mode for layer in adapter_layers(trainer.bare_model).values()
    )


@pytest.mark.slow  # ~25 s; the CI runs the quickstart (UPAO + NSLoRA through the harness) before the suite
def test_harness_runs_nslora_with_upao_and_reports_the_adapters(small_datasets, tmp_path):
    result = harness.run_harness(
        tmp_path,
        small_datasets,
        "model=na_nslora",
        "trainer=upao",
        "data=burgers2d",
        "trainer.epochs=2",
        "trainer.switch_patience=0",
        "model.base=extrap2",
        *harness.FAST[1:],
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "switching adapters LoRA -> NSLoRA" in result.stderr + result.stdout
    folder = harness.run_folders(tmp_path)[0]
    assert folder.parent.name == "burgers2d-na_nslora-upao-NATransformer-0.0001"
    best = folder / "checkpoints" / "recent.pt"
    stored = read_checkpoint(best)
    assert stored["model"]["config"]["base"] == "extrap2"
    assert stored["state_dict"]["correction_gain"].abs().sum() > 0  # the correction opened during training
    report = subprocess.run(
        [
            str(Path(sys.executable).with_name("well-upao")),
            "adapters-report",
            str(best),
            "--json",
            str(tmp_path / "r.json"),
        ],
        capture_output=True,
        text=True,
    )
    assert report.returncode == 0, report.stderr
    assert "**mean**" in report.stdout and "| nslora |" in report.stdout
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["n_modules"] == 4 * (5 * 2 + 3)  # 4 layers x (1D, three 2D, 3D NA: qkv, proj; SwiGLU: 3)
    assert data["n_untouched"] == 4 * 4 * 2  # the 1D, 3D and two unused 2D variants get no gradient on 16x16 data
    assert 1.0 <= data["mean"]["stable_rank"] <= 16


def test_time_strides_give_each_sample_its_own_dt(small_datasets, tmp_path):
    trainer = make_trainer(
        small_datasets,
        tmp_path,
        dataset="adv1d",
        data_kwargs={"n_steps_input": 3, "min_dt_stride": 2, "max_dt_stride": 3},
    )
    seen = set()
    for batch in trainer.datamodule.train_dataloader():
        seen |= {round(float(v), 6) for v in batch_dt(batch)}
        terms = trainer.loss.upao_terms(batch)
        assert torch.isfinite(terms.total)
    assert seen <= {0.02, 0.03} and 0.02 in seen


def test_auto_derivative_and_time_scheme_take_the_lowest_floor_of_the_training_frames(small_datasets, tmp_path):
    from well_upao.data.source import WellSource
    from well_upao.physics import pde_for_dataset
    from well_upao.physics.floor import floor_rows

    trainer = make_trainer(small_datasets, tmp_path, dataset="tg2d", derivative="auto", time_scheme="auto")
    chosen = (trainer.loss.setup.settings["derivative"], trainer.loss.setup.settings["time_scheme"])
    observed = WellSource(small_datasets, "tg2d").observed(1, max_trajectories=4, max_frames=12)
    best = min(floor_rows(observed, 1, pde_for_dataset("tg2d")), key=lambda row: row.mean)
    assert chosen == (best.derivative, best.scheme) and chosen[0] == "spectral"
    assert trainer.loss.setup.objective.derivative == chosen[0] and trainer.loss.setup.objective.scheme == chosen[1]
    fixed = make_trainer(small_datasets, tmp_path / "fixed", dataset="tg2d", derivative="fd", time_scheme="auto")
    assert fixed.loss.setup.settings["derivative"] == "fd" and fixed.loss.setup.settings["time_scheme"] != "auto"
    assert all(key.startswith("fd/") for key in fixed.loss.setup.physics.floors)


def test_fitted_constants_come_from_the_training_frames(small_datasets, tmp_path, monkeypatch):
    """Gray-Scott replicas at the Well's 10 s frames, from t = 100 s on (the first ~50 s after the initial condition
    are a transient faster than the frames resolve: fitted there, the diffusivities come out 10-50% off, measured).
    The fit (spectral derivatives, Crank-Nicolson) recovers the solver's delta_A = 2e-5 and delta_B = 1e-5 within 2%
    (measured here: 0.3% and 1.1%), each as itself (a swap would be 2x off)."""
    from well_upao.data.replicas import ReplicaRequest, generate_replica
    from well_upao.families.replicas.families import REPLICAS

    family = REPLICAS["gray_scott_reaction_diffusion"]
    simulate, skipped = family.simulate, 10

    def after_the_transient(scalars, initial, shape, times):
        spacing = float(times[1] - times[0])
        longer = np.arange(skipped + len(times)) * spacing
        return {name: value[skipped:] for name, value in simulate(scalars, initial, shape, longer).items()}

    monkeypatch.setattr(family, "simulate", after_the_transient)
    base = tmp_path / "replica"
    request = ReplicaRequest(
        "gray_scott_reaction_diffusion", base, shape=(32, 32), n_steps=14, n_traj_per_set=3, sets=[2, 5]
    )
    generate_replica(request, progress=False)
    trainer = make_trainer(base, tmp_path / "run", dataset="gray_scott_reaction_diffusion",
                           data_kwargs={"n_steps_input": 4}, pde_constants="fitted", derivative="spectral")  # fmt: skip
    fitted = trainer.loss.setup.objective.constants
    assert set(fitted) == {"delta_A", "delta_B"} and fitted != {"delta_A": 2e-5, "delta_B": 1e-5}
    assert fitted["delta_A"] == pytest.approx(2e-5, rel=0.02) and fitted["delta_B"] == pytest.approx(1e-5, rel=0.02)
    with pytest.raises(ValueError, match="no constants to fit"):
        make_trainer(small_datasets, tmp_path / "tg", dataset="tg2d", pde_constants="fitted")


def test_the_wells_one_frame_models_adapt_without_interior_labels(small_datasets, tmp_path):
    """trainer=upao with the Well's FNO: the residual joins the last input and the prediction; poisoning every
    interior target value changes neither the loss nor a gradient."""
    from the_well.benchmark.models import FNO

    model = FNO(dim_in=8 * 2, dim_out=2, n_spatial_dims=2, spatial_resolution=(16, 16), modes1=4, modes2=4,
                hidden_channels=8)  # fmt: skip
    trainer = make_trainer(small_datasets, tmp_path, model=model)
    assert trainer.loss.setup.one_frame and trainer.formatter_name == "channels_first_default"
    batch = next(iter(trainer.datamodule.train_dataloader()))
    clean_terms, clean = gradients(trainer, batch)
    assert clean and all(torch.isfinite(g).all() for g in clean)
    poisoned = dict(batch)
    target = batch["output_fields"].clone()
    target[:, :, 1:-1, 1:-1] = float("nan")
    poisoned["output_fields"] = target
    terms, dirty = gradients(trainer, poisoned)
    assert torch.equal(terms.total, clean_terms.total)
    assert all(torch.equal(a, b) for a, b in zip(clean, dirty, strict=True))
    loss, logs = trainer.validation_loop(trainer.datamodule.val_dataloader(), full=False)
    assert loss == pytest.approx(logs["valid_upao_loss"]) and "valid_paper_VRMSE" in logs


@pytest.mark.slow  # tens of seconds on two cores (the default suite had passed 10 minutes)
def test_tfno_adapts_with_upao_through_the_harness_and_starts_from_another_dataset(small_datasets, tmp_path):
    """`experiment=tfno trainer=upao data=burgers2d` (issue 17's command), then the same model on tg2d (3
    channels) started from the burgers2d run (2 channels) with trainer.init_from."""
    small = ["model.hidden_channels=8", "model.modes1=4", "model.modes2=4"]
    (tmp_path / "source").mkdir()
    source = harness.run_harness(
        tmp_path / "source", small_datasets, "experiment=tfno", "trainer=upao", "data=burgers2d", *small, *harness.FAST
    )
    assert source.returncode == 0, source.stderr[-3000:]
    assert "a one-frame model: its residual joins the last input frame" in source.stderr + source.stdout
    best = harness.run_folders(tmp_path / "source")[0] / "checkpoints" / "best.pt"
    assert read_checkpoint(best)["model"]["formatter"] == "channels_first_default"
    (tmp_path / "target").mkdir()
    start = f"trainer.init_from={best}"
    target = harness.run_harness(
        tmp_path / "target",
        small_datasets,
        "experiment=tfno",
        "trainer=upao",
        "data=tg2d",
        start,
        *small,
        *harness.FAST,
    )
    assert target.returncode == 0, target.stderr[-3000:]
    assert "(burgers2d, 2 channels -> 3)" in target.stderr + target.stdout


def test_a_run_that_only_gets_worse_returns_its_starting_point(small_datasets, tmp_path):
    """validate_start: the untrained model (here the quadratic extrapolation itself, its correction zero) is the
    selection's first candidate; training that climbs its own loss cannot make best.pt worse than it."""
    trainer = make_trainer(
        small_datasets, tmp_path, dataset="tg2d", model_kwargs={"base": "extrap2"}, validate_start=True
    )
    ascend = trainer.loss.__call__

    class Ascending(type(trainer.loss)):  # training climbs the loss the selection measures
        def __call__(self, batch):
            loss, logs = ascend(batch)
            return -loss, logs

    trainer.loss.__class__ = Ascending
    initial = {name: tensor.clone() for name, tensor in trainer.bare_model.state_dict().items()}
    trainer.train()
    best = read_checkpoint(tmp_path / "checkpoints" / "best.pt")
    assert best["epoch"] == 0
    weights = {name: tensor for name, tensor in initial.items() if name != "prior_order"}
    assert all(torch.equal(best["state_dict"][name], tensor) for name, tensor in weights.items())
    # the start is extrap2 in the model's float32 arithmetic; the prior rule may keep extrap2 itself (exact)
    assert int(best["state_dict"]["prior_order"]) in (-1, 2)
    recent = read_checkpoint(tmp_path / "checkpoints" / "recent.pt")
    assert recent["epoch"] == 1 and recent["validation_loss"] > best["validation_loss"]


def test_every_candidate_is_scored_on_the_same_validation_batches(small_datasets, tmp_path):
    """The label-free selection compares the start and each epoch's model on the same windows: the floor of the
    observed frames (a property of the batches, not of the model) is equal at every validation, the last one
    included (the Well's loop validates its last epoch on the whole split, other windows)."""
    trainer = make_trainer(small_datasets, tmp_path, validate_start=True)
    batches = len(trainer.datamodule.val_dataloader())
    assert batches > trainer.short_validation_length  # a whole-split validation would see other windows
    trainer.train()
    lines = [line for line in read_metrics(tmp_path) if "valid_score_floor" in line]
    assert [line["epoch"] for line in lines] == [0, 1]
    assert lines[1]["valid_score_floor"] == lines[0]["valid_score_floor"]
    assert lines[1]["valid_score_start_floor"] == lines[0]["valid_score_floor"]
    # issue 53: each classical predictor's one-step residual ratio on the same batches (labels-free, so equal at
    # every validation); persistence has no rate term and is marked blind; on these smooth exact frames quadratic
    # extrapolation satisfies the PDE far better than persistence
    ratios = {n: lines[0][f"valid_score_residual_ratio_{n}"] for n in ("persistence", "extrap1", "extrap2")}
    assert all(np.isfinite(v) for v in ratios.values()) and ratios["extrap2"] < 0.5 * ratios["persistence"]
    assert lines[0]["valid_residual_blind"] == lines[1]["valid_residual_blind"] == ["persistence"]
    assert lines[1]["valid_score_residual_ratio_extrap2"] == ratios["extrap2"]
    # issue 64: the expected VRMSE of the model and of the prior for the trust window, the prior's a property of
    # the batches (equal at every validation), each inside its interval
    prior, expected = lines[0]["valid_trust_prior"], [line["valid_expected_vrmse"] for line in lines]
    assert set(expected[0]) == set(expected[1]) == {"model", prior}
    assert expected[1][prior] == expected[0][prior]
    assert all(e["low"] < e["value"] < e["high"] and e["windows"] > 0 for e in expected[1].values())


def prefer_trained(trainer) -> None:
    """Make the selection criterion prefer every later candidate (minus the optimizer steps taken), so that only
    the guard can keep the start."""
    validate = trainer.criterion.validate

    class Preferring(type(trainer.criterion)):
        def validate(self, dataloader, full, step, first):
            return dataclasses.replace(validate(dataloader, full, step, first), value=-float(step))

    trainer.criterion.__class__ = Preferring


@pytest.mark.slow
def test_the_guard_keeps_the_start_when_the_scorecard_refuses_every_move(small_datasets, tmp_path):
    """trainer.guard: with a departure limit of 0 (and any start counted as at the floor) every trained candidate is
    refused, so best.pt stays the start and metrics.jsonl says why; the scorecard is logged at every validation."""
    from well_upao.harness.metrics_file import read_metrics

    trainer = make_trainer(
        small_datasets,
        tmp_path,
        model_kwargs={"base": "extrap2"},
        validate_start=True,
        guard=True,
        guard_floor_tolerance=float("inf"),
        guard_departure_limit=0.0,
    )
    prefer_trained(trainer)
    initial = {name: tensor.clone() for name, tensor in trainer.bare_model.state_dict().items()}
    trainer.train()
    lines = [line for line in read_metrics(tmp_path) if "valid" in line]
    start, trained = lines[0], lines[-1]
    for line in lines:
        for name in ("floor", "residual_ratio", "departure", "backtest"):
            assert np.isfinite(line[f"valid_score_{name}"]), name
    assert start["valid_score_departure"] == 0.0 and trained["valid_score_departure"] > 0
    assert trained["valid"] < start["valid"]  # the criterion alone would have taken the trained model
    assert trained["guard_rejected"] and trained["guard_reason"].startswith("floor:")
    assert trained["kept_start"] and trained["kept_start_reason"].startswith("guard: floor:")
    assert trained["guard_rejections"] == 1
    best = read_checkpoint(tmp_path / "checkpoints" / "best.pt")
    assert best["epoch"] == 0 and best["train"]["guard_start"]["residual_ratio"] > 0
    weights = {name: tensor for name, tensor in initial.items() if name != "prior_order"}
    assert all(torch.equal(best["state_dict"][name], tensor) for name, tensor in weights.items())
    # the start's weights, predicting with the prior the rule kept if it kept one (issue 53), else its network
    kept = CLASSICAL_PRIORS[trained["kept_prior_name"]].order if trained["kept_prior"] else -1
    assert int(best["state_dict"]["prior_order"]) == kept


@pytest.mark.slow
def test_without_the_guard_the_criterion_alone_selects(small_datasets, tmp_path):
    """Negative control of the test above: the same run with trainer.guard=false takes the trained candidate."""
    from well_upao.harness.metrics_file import read_metrics

    trainer = make_trainer(
        small_datasets,
        tmp_path,
        model_kwargs={"base": "extrap2"},
        validate_start=True,
        guard=False,
        guard_floor_tolerance=float("inf"),
        guard_departure_limit=0.0,
    )
    prefer_trained(trainer)
    trainer.train()
    trained = [line for line in read_metrics(tmp_path) if "valid" in line][-1]
    assert not trained["guard_rejected"] and trained["best_epoch"] == 1 and not trained["kept_start"]


def test_at_a_stride_the_run_resolves_its_physics_and_steps_its_residual_at_the_strided_step(tmp_path):
    """``data.min_dt_stride = data.max_dt_stride = 5`` on float32 time from t = 1000 every 0.04
    (``tests/advected_mode.py``, exact advection-diffusion, 24 x 40 with a wall axis): the run's ``auto``
    discretisation is chosen from the floors of the training frames at stride 5 (its spectral / Crank-Nicolson floor
    the closed form at ``5 * 0.04``; at stride 1 it would be 26x lower), and every batch's residual steps
    ``5 * 0.04`` (to 2e-6: five times the file's float64 step, not the loader's float32 window times)."""
    import advected_mode

    advected_mode.write(tmp_path / "data")
    trainer = make_trainer(tmp_path / "data", tmp_path / "run", dataset=advected_mode.NAME,
                           model_kwargs={"base": "extrap2"},
                           data_kwargs={"n_steps_input": 2, "min_dt_stride": 5, "max_dt_stride": 5})  # fmt: skip
    loss = trainer.loss.setup
    assert loss.physics.discretisation == "spectral/crank_nicolson"
    expected = advected_mode.crank_nicolson_floor(5, 12)  # frames 1, 6, ..., 31
    assert loss.physics.floors["spectral/crank_nicolson"] == pytest.approx(expected, rel=1e-3)
    assert expected > 20 * advected_mode.crank_nicolson_floor(1, 12)
    prepared = loss.prepared(next(iter(trainer.datamodule.train_dataloader())), trainer.model)
    assert ((prepared.dt.double() / (5 * advected_mode.DT) - 1).abs() < 2e-6).all(), prepared.dt
    assert torch.isfinite(loss.terms_of(prepared).total)
