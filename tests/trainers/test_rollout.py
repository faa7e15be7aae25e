"""Training over the model's own rollouts (``trainer.rollout_steps=K``, ``well_upao/trainers/rollout.py``): ``K = 1``
is the one-step objective bitwise; a ``K``-step loss equals a rollout assembled by hand (UPAO for a backbone and a
one-frame model, the shifted and the supervised loss with labels on every step); no interior label reaches it;
pushforward stops the gradient at the fed-back frames (autograd); the noise has the stated size; the data follow
``K`` and a mismatch is refused with the fix; the scorecard and the guard follow the rollout."""

from __future__ import annotations

import math

import pytest
import torch
from the_well.benchmark.models import FNO
from trainers.test_upao import make_trainer, trainer_config  # tests/ is on sys.path (conftest)

from well_upao.harness.metrics_file import read_metrics
from well_upao.harness.samples import (
    batch_dt,
    batch_grid,
    into_slots,
    named_scalars,
    one_frame_prediction,
    slots_mask,
)
from well_upao.physics.objective import band_values
from well_upao.trainers.rollout import RolloutSettings, noise_scale, perturbed


def small_fno():
    return FNO(dim_in=8 * 2, dim_out=2, n_spatial_dims=2, spatial_resolution=(16, 16), modes1=4, modes2=4,
               hidden_channels=8)  # fmt: skip


def rollout_trainer(small_datasets, tmp_path, steps: int, **kwargs):
    data = {"n_steps_input": 8, "n_steps_output": steps, **kwargs.pop("data_kwargs", {})}
    return make_trainer(small_datasets, tmp_path, data_kwargs=data, rollout_steps=steps, **kwargs)


def hand_objective(trainer, batch, prediction, inputs, bands):
    """The objective on hand-assembled physical 18-slot frames (raw batch: the model works in physical units)."""
    loss = trainer.loss.setup
    scalars = named_scalars(batch.get("constant_scalars"), list(loss.scalar_names))
    bound = loss.objective.bind(batch_grid(batch), {k: v.float() for k, v in scalars.items()})
    return loss.objective(
        prediction,
        inputs,
        bands,
        batch_dt(batch, loss.time_axis).float(),
        bound,
        slots_mask(loss.channel_slots),
        window=batch_history(trainer, batch),
    )


def batch_history(trainer, batch):
    return into_slots(batch["input_fields"], trainer.loss.setup.channel_slots)


def bands_of(trainer, batch, steps: int):
    frames = batch["output_fields"][:, :steps]
    bands = band_values(frames.flatten(0, 1), 2).unflatten(0, frames.shape[:2])
    return into_slots(bands, trainer.loss.setup.channel_slots)


def test_one_step_is_the_one_step_objective_bitwise(small_datasets, tmp_path):
    """K = 1 (the default): the loss of a batch equals the objective on the backbone's shifted predictions with the
    next frame's band, assembled here as the one-step objective always was, bit for bit."""
    trainer = make_trainer(small_datasets, tmp_path)
    assert trainer.rollout.one_step
    batch = next(iter(trainer.datamodule.train_dataloader()))
    slots = trainer.loss.setup.channel_slots
    history = batch_history(trainer, batch)
    with torch.no_grad():
        shifted = into_slots(trainer.model(history, sequence=True)[..., slots], slots)
        ours = trainer.loss.upao_terms(batch).total
    next_band = into_slots(band_values(batch["output_fields"][:, 0], 2), slots)
    theirs = hand_objective(trainer, batch, shifted, history, next_band).total
    assert torch.equal(ours, theirs)


def test_a_backbones_two_step_loss_is_the_hand_rollout_and_reads_no_interior_label(small_datasets, tmp_path):
    trainer = rollout_trainer(small_datasets, tmp_path, 2)
    batch = next(iter(trainer.datamodule.train_dataloader()))
    assert batch["output_fields"].shape[1] == 2
    slots = trainer.loss.setup.channel_slots
    history = batch_history(trainer, batch)
    with torch.no_grad():
        ours = trainer.loss.upao_terms(batch).total
        shifted = into_slots(trainer.model(history, sequence=True)[..., slots], slots)
        slid = torch.cat([history[:, 1:], shifted[:, -1:]], 1)  # the window slid by one frame, by hand
        second = trainer.model(slid, sequence=True)[:, -1:]
    prediction = torch.cat([shifted, into_slots(second[..., slots], slots)], 1)
    inputs = torch.cat([history, shifted[:, -1:]], 1)
    per_frame = hand_objective(trainer, batch, prediction, inputs, bands_of(trainer, batch, 2)).per_frame
    expected = 0.5 * per_frame[:, :8].mean() + 0.5 * per_frame[:, 8].mean()
    torch.testing.assert_close(ours, expected, rtol=1e-6, atol=0)
    # the second step's term is not the first step's: the rollout adds a term
    assert not torch.isclose(ours, per_frame[:, :8].mean())
    poisoned = dict(batch)
    target = batch["output_fields"].clone()
    target[:, :, 1:-1, 1:-1] = float("nan")  # every interior value of both frames after the history
    poisoned["output_fields"] = target
    with torch.no_grad():
        assert torch.equal(trainer.loss.upao_terms(poisoned).total, ours)


def test_a_one_frame_models_rollout_loss_is_the_hand_rollout_with_step_weights(small_datasets, tmp_path):
    trainer = rollout_trainer(small_datasets, tmp_path, 3, model=small_fno(), rollout_step_weight=0.5)
    batch = next(iter(trainer.datamodule.train_dataloader()))
    slots, formatter = trainer.loss.setup.channel_slots, trainer.formatter_name
    with torch.no_grad():
        ours = trainer.loss.upao_terms(batch).total
        window, frames = batch["input_fields"], []
        for _ in range(3):
            frames.append(one_frame_prediction(trainer.model, window, formatter))
            window = torch.cat([window[:, 1:], frames[-1][:, None]], 1)
    prediction = into_slots(torch.stack(frames, 1), slots)
    inputs = torch.cat([batch_history(trainer, batch)[:, -1:], prediction[:, :-1]], 1)
    per_frame = hand_objective(trainer, batch, prediction, inputs, bands_of(trainer, batch, 3)).per_frame
    weights = torch.tensor([1.0, 0.5, 0.25]) / 1.75
    torch.testing.assert_close(ours, (weights * per_frame.mean(0)).sum(), rtol=1e-6, atol=0)


def test_pushforward_stops_the_gradient_at_the_fed_back_frames(small_datasets, tmp_path):
    """Autograd: the last step's output depends on the first step's output without pushforward, and not with it;
    the parameters still get the last step's gradient."""
    for pushforward in (False, True):
        trainer = rollout_trainer(small_datasets, tmp_path / str(pushforward), 3, rollout_pushforward=pushforward)
        batch = next(iter(trainer.datamodule.train_dataloader()))
        outputs: list[torch.Tensor] = []
        hook = trainer.bare_model.register_forward_hook(lambda module, args, output, kept=outputs: kept.append(output))
        predicted, fed = trainer.loss.setup.rolled_out(trainer.model, batch["input_fields"], None, train=True)
        hook.remove()
        assert len(outputs) == 3 and fed.requires_grad == (not pushforward)
        (through_first,) = torch.autograd.grad(predicted[:, -1].sum(), outputs[0], retain_graph=True, allow_unused=True)
        if pushforward:
            assert through_first is None or not through_first.any()
        else:
            assert through_first is not None and through_first.abs().sum() > 0
        trainable = [p for p in trainer.model.parameters() if p.requires_grad]
        grads = torch.autograd.grad(predicted[:, -1].sum(), trainable, allow_unused=True)
        assert any(g is not None and g.abs().sum() > 0 for g in grads)


def test_noise_scales_are_the_closed_forms_and_noise_has_the_stated_size():
    ramp = torch.arange(5.0)[None, :, None, None, None] * torch.tensor([0.5, -2.0])  # h_t = t c, (1, 5, 1, 1, 2)
    ramp = ramp.expand(3, 5, 4, 4, 2).contiguous()
    assert torch.allclose(noise_scale(ramp, "change").flatten(1), torch.tensor([[0.5, 2.0]]).expand(3, 2))
    spread = torch.arange(5.0).repeat_interleave(16).std()  # the sample std over the 5 frames x 16 points
    assert torch.allclose(noise_scale(ramp, "spread").flatten(1), spread * torch.tensor([[0.5, 2.0]]).expand(3, 2))
    torch.manual_seed(0)
    frame = torch.zeros(3, 64, 64, 2)
    noisy = perturbed(frame, noise_scale(ramp, "change"), 0.1)
    assert noisy[..., 0].std().item() == pytest.approx(0.05, rel=0.05)
    assert noisy[..., 1].std().item() == pytest.approx(0.2, rel=0.05)
    assert torch.equal(perturbed(frame, noise_scale(ramp, "change"), 0.0), frame)
    with pytest.raises(ValueError, match="rollout_noise_scale"):
        RolloutSettings.of(2, noise=0.1, noise_scale="range")


def test_noise_is_on_fed_back_frames_in_training_only(small_datasets, tmp_path):
    trainer = rollout_trainer(small_datasets, tmp_path, 2, rollout_noise=0.5)
    batch = next(iter(trainer.datamodule.train_dataloader()))
    history = batch["input_fields"]
    with torch.no_grad():
        clean = [trainer.loss.setup.rolled_out(trainer.model, history, None, train=False) for _ in range(2)]
        noisy = trainer.loss.setup.rolled_out(trainer.model, history, None, train=True)
    assert torch.equal(clean[0][1], clean[1][1])  # validation: deterministic, no noise
    difference = noisy[1][:, 0] - clean[0][0][:, 7]  # the fed frame minus the step-1 prediction it came from
    standardized = difference / noise_scale(history, "change")  # per sample and channel
    torch.testing.assert_close(standardized.flatten(0, -2).std(0), torch.full((2,), 0.5), rtol=0.1, atol=0)


def test_the_data_follow_rollout_steps_and_a_mismatch_is_refused_with_the_fix(small_datasets, tmp_path):
    config = trainer_config("trainer.rollout_steps=3")
    assert config.rollout_steps == 3
    from hydra import compose, initialize_config_module

    with initialize_config_module(config_module="well_upao.configs", version_base=None):
        composed = compose(
            config_name="config", overrides=["trainer=upao", "data=burgers2d", "trainer.rollout_steps=3"]
        )
    assert composed.data.n_steps_output == 3
    with pytest.raises(ValueError, match=r"data.n_steps_output=3"):
        make_trainer(small_datasets, tmp_path, rollout_steps=3)  # its data serve one frame after the history
    with pytest.raises(ValueError, match="rollout_steps must be a positive"):
        RolloutSettings.of(0)


def test_validation_scores_the_rollout_and_says_why_a_backtest_is_missing(small_datasets, tmp_path):
    trainer = rollout_trainer(
        small_datasets, tmp_path / "long", 2, model_kwargs={"base": "extrap2"}, validate_start=True
    )
    _, logs = trainer.validation_loop(trainer.datamodule.val_dataloader(), full=False)
    for name in ("floor", "residual_ratio", "residual_ratio_step1", "residual_ratio_step2", "backtest", "departure"):
        assert math.isfinite(logs[f"valid_score_{name}"]), name
    assert logs["valid_score_residual_ratio"] == pytest.approx(
        (logs["valid_score_residual_ratio_step1"] + logs["valid_score_residual_ratio_step2"]) / 2
    )
    assert all(math.isfinite(logs[f"valid_score_window_{name}"]) for name in ("persistence", "extrap2", "model"))
    short = rollout_trainer(
        small_datasets, tmp_path / "short", 2, data_kwargs={"n_steps_input": 3}, model_kwargs={"base": "extrap2"}
    )
    _, logs = short.validation_loop(short.datamodule.val_dataloader(), full=False)
    assert math.isnan(logs["valid_score_backtest"])
    assert "needs a history of 4 frames" in logs["valid_unavailable_scores"]


def test_the_rollout_backtest_ends_on_the_last_observed_frame(small_datasets, tmp_path):
    """The start of an extrap2 model (correction zero) predicts the quadratic extrapolation in physical units (the
    per-window standardisation is affine, the extrapolation's weights sum to 1), so its 3-step backtest is the
    extrapolation rolled out by hand from the first T - 3 observed frames, growing the window."""
    trainer = rollout_trainer(small_datasets, tmp_path, 3, model_kwargs={"base": "extrap2"})
    batch = next(iter(trainer.datamodule.val_dataloader()))
    history = batch_history(trainer, batch).double()
    frames = list(history[:, :5].unbind(1))
    for _ in range(3):
        frames.append(3 * frames[-1] - 3 * frames[-2] + frames[-3])
    backtest = trainer.criterion.rollout_backtest(batch)
    torch.testing.assert_close(backtest.double(), frames[-1], rtol=1e-4, atol=1e-5)
    assert not torch.allclose(backtest.double(), history[:, -1], rtol=1e-3, atol=0)  # a prediction, not the frame


def test_the_guard_refuses_a_rollout_candidate_worse_than_the_start(small_datasets, tmp_path):
    """K = 2, the start the extrapolation itself (correction zero): a candidate whose correction is switched on with
    random weights rolls out worse on the observed history, and the guard refuses it; negative control: the start
    itself as the candidate passes."""
    trainer = rollout_trainer(small_datasets, tmp_path, 2, model_kwargs={"base": "extrap2"}, validate_start=True)
    loader = trainer.datamodule.val_dataloader()
    trainer.validation_loop(loader, full=False)  # global step 0: the start's card
    assert trainer.judge.check(trainer.validated.candidate) is None  # negative control
    trainer.global_step = 1
    torch.manual_seed(1)
    with torch.no_grad():
        trainer.bare_model.correction_gain.fill_(1.0)
        for parameter in trainer.bare_model.parameters():
            parameter.add_(0.05 * torch.randn_like(parameter))
    _, logs = trainer.validation_loop(loader, full=False)
    assert logs["valid_score_backtest"] > 1.1 * logs["valid_score_start_backtest"]
    reason = trainer.judge.check(trainer.validated.candidate)
    assert reason is not None and "backtest" in reason


def test_the_shifted_loss_supervises_every_rollout_step(small_datasets, tmp_path):
    from well_upao.trainers.shifted import ShiftedTrainer, masked_mse

    probe = rollout_trainer(small_datasets, tmp_path / "probe", 2)
    kwargs = {k: getattr(probe, k) for k in ("model", "datamodule")}
    trainer = ShiftedTrainer(
        checkpoint_folder=str(tmp_path / "c"), artifact_folder=str(tmp_path / "a"), viz_folder=str(tmp_path / "v"),
        formatter="channels_last_default", optimizer=torch.optim.AdamW(probe.model.parameters(), lr=1e-4),
        loss_fn=probe.loss_fn, epochs=1, checkpoint_frequency=0, val_frequency=1, rollout_val_frequency=1,
        max_rollout_steps=2, short_validation_length=1, make_rollout_videos=False, num_time_intervals=2,
        device=torch.device("cpu"), progress=False, rollout_steps=2, **kwargs,
    )  # fmt: skip
    batch = next(iter(trainer.datamodule.train_dataloader()))
    model, mask = trainer.bare_model, trainer.bare_model.slot_mask(trainer.device)
    frames = model.to_slots(trainer.run.batch_frames(batch))
    with torch.no_grad():
        ours, _ = trainer.loss(batch)
        shifted = model(frames[:, :8], mask, sequence=True)
        slid = torch.cat([frames[:, 1:8], (shifted[:, -1] * mask)[:, None]], 1)
        second = model(slid, mask, sequence=True)[:, -1:]
    expected = 0.5 * masked_mse(shifted, frames[:, 1:9], mask) + 0.5 * masked_mse(second, frames[:, 9:10], mask)
    torch.testing.assert_close(ours, expected, rtol=1e-6, atol=0)
    moved = dict(batch)
    moved["output_fields"] = batch["output_fields"].clone()
    moved["output_fields"][:, 1] += 1.0  # the second step's label
    with torch.no_grad():
        assert trainer.loss(moved)[0] > ours


def test_the_supervised_loss_rolls_out_through_the_formatter_with_labels_on_every_step(small_datasets, tmp_path):
    from the_well.benchmark.metrics import MSE

    from well_upao.trainers.supervised import SupervisedTrainer

    probe = rollout_trainer(small_datasets, tmp_path / "probe", 2, model=small_fno())
    trainer = SupervisedTrainer(
        checkpoint_folder=str(tmp_path / "c"), artifact_folder=str(tmp_path / "a"), viz_folder=str(tmp_path / "v"),
        formatter="channels_first_default", model=probe.model, datamodule=probe.datamodule,
        optimizer=torch.optim.AdamW(probe.model.parameters(), lr=1e-4), loss_fn=MSE(), epochs=1,
        checkpoint_frequency=0, val_frequency=1, rollout_val_frequency=1, max_rollout_steps=2,
        short_validation_length=1, make_rollout_videos=False, num_time_intervals=2, device=torch.device("cpu"),
        progress=False, rollout_steps=2, rollout_step_weight=3.0,
    )  # fmt: skip
    batch = next(iter(trainer.datamodule.train_dataloader()))
    with torch.no_grad():
        ours, _ = trainer.loss(batch)
        first = one_frame_prediction(trainer.model, batch["input_fields"], "channels_first_default")
        slid = torch.cat([batch["input_fields"][:, 1:], first[:, None]], 1)
        second = one_frame_prediction(trainer.model, slid, "channels_first_default")
    target = batch["output_fields"]
    expected = 0.25 * ((first - target[:, 0]) ** 2).mean() + 0.75 * ((second - target[:, 1]) ** 2).mean()
    torch.testing.assert_close(ours, expected, rtol=1e-6, atol=0)


def test_validations_log_the_wells_rollout_windows_by_hand(small_datasets, tmp_path):
    """``valid_rollout_VRMSE_*``: the rollout of each validation trajectory from its first window, the Well's VRMSE
    per step (channel mean) computed here by hand; at this size (the validation trajectories cut to history 2 + 3
    frames) the rollout runs 3 steps, so 6:12 is not held and is not logged."""
    from well_upao.predict.predictors import BackboneModel

    trainer = make_trainer(small_datasets, tmp_path, data_kwargs={"n_steps_input": 2}, vrmse_trajectories=2)
    logs = trainer.criterion.paper_vrmse(full=False)
    dataset = trainer.datamodule.rollout_val_dataset
    predictor = BackboneModel("model", trainer.bare_model, trainer.loss.setup.space)
    curves = []
    for index in range(min(2, len(dataset))):
        sample = dataset[index]
        frames = torch.cat([sample["input_fields"], sample["output_fields"]])
        window, errors = frames[:2], []
        with torch.no_grad():
            for step in range(frames.shape[0] - 2):
                nxt = predictor.predict(window[None], None)[0]
                truth = frames[2 + step]
                mse = ((nxt - truth) ** 2).mean(dim=(0, 1))
                errors.append(torch.sqrt(mse / (truth.var(dim=(0, 1), unbiased=True) + 1e-7)).mean().item())
                window = torch.cat([window[1:], nxt[None]])
        curves.append(errors)
    assert logs["valid_rollout_VRMSE_steps"] == len(curves[0]) == 3
    mean_last = sum(curve[-1] for curve in curves) / len(curves)
    assert logs["valid_rollout_VRMSE_last"] == pytest.approx(mean_last, rel=1e-5)
    assert "valid_rollout_VRMSE_6:12" not in logs


def test_rollout_window_logs_slice_the_mean_curve_as_the_wells_trainer():
    from well_upao.trainers.upao_validation import rollout_window_logs

    curves = [[float(k) for k in range(30)], [2.0 * k for k in range(31)]]  # mean curve 1.5 k over the 30 common steps
    logs = rollout_window_logs(curves, "v")
    assert logs == pytest.approx({"v_6:12": 1.5 * 8.5, "v_13:30": 1.5 * 21, "v_steps": 30, "v_last": 1.5 * 29})
    assert "v_13:30" not in rollout_window_logs([[1.0] * 29], "v") and rollout_window_logs([], "v") == {}


@pytest.mark.parametrize("steps", [2])
def test_a_sharded_run_keeps_its_starts_predictions_for_the_departure(small_datasets, tmp_path, monkeypatch, steps):
    """Under FSDP no starting model can be copied: the start's predictions of each validation batch are kept at the
    first validation, and a later candidate's departure equals the one measured against a copied start model."""
    import well_upao.trainers.start_model as start_model

    def validate_twice(trainer):
        loader = trainer.datamodule.val_dataloader()
        _, first = trainer.validation_loop(loader, full=False)
        trainer.global_step = 1
        torch.manual_seed(3)
        with torch.no_grad():
            for parameter in trainer.bare_model.parameters():
                parameter.add_(0.01 * torch.randn_like(parameter))
        return first, trainer.validation_loop(loader, full=False)[1]

    plain = validate_twice(rollout_trainer(small_datasets, tmp_path / "plain", steps, validate_start=True))
    monkeypatch.setattr(start_model, "is_sharded", lambda model: True)  # what FSDP2 modules answer
    sharded = validate_twice(rollout_trainer(small_datasets, tmp_path / "sharded", steps, validate_start=True))
    assert sharded[0]["valid_score_departure"] == plain[0]["valid_score_departure"] == 0.0
    assert sharded[1]["valid_score_departure"] > 0
    assert sharded[1]["valid_score_departure"] == pytest.approx(plain[1]["valid_score_departure"], rel=1e-6)
    assert sharded[1]["valid_unavailable_scores"] is None


def test_rollout_upao_runs_through_the_harness_with_nslora_and_records_its_rollout(
    small_datasets, tmp_path, monkeypatch
):
    """``model=na_nslora trainer=upao trainer.rollout_steps=2`` through the harness's run function: the data serve 2
    frames after the history without being told, the first metrics line records the rollout in the protocol, every
    validation logs the rollout's scorecard per step."""
    import harness_command as harness

    run = harness.run_harness_in_process(
        small_datasets, tmp_path, monkeypatch, "model=na_nslora", "trainer=upao", "data=burgers2d",
        "trainer.rollout_steps=2", "trainer.rollout_pushforward=true", "trainer.rollout_noise=0.1",
        "trainer.epoch_steps=2", "name=rollout", *harness.FAST,
    )  # fmt: skip
    lines = read_metrics(run)
    settings = lines[0]["protocol_settings"]
    assert settings["rollout_steps"] == 2 and settings["rollout_pushforward"] and settings["rollout_noise"] == 0.1
    validations = [line for line in lines if "valid_score_residual_ratio_step2" in line]
    assert len(validations) >= 2 and all(math.isfinite(v["valid_score_backtest"]) for v in validations)
    assert (run / "checkpoints" / "best.pt").is_file()


@pytest.mark.slow  # TFNO's FFTs took minutes on a loaded two-core machine
def test_tfno_and_a_unet_train_over_rollouts_without_interior_labels(small_datasets, tmp_path):
    """The other one-frame models UPAO runs on: a K = 2 loss with finite gradients that no interior value of either
    frame after the history changes (the foundation-model baselines take the same path; their extra is optional)."""
    from the_well.benchmark.models import TFNO, UNetClassic

    models = {
        "tfno": TFNO(dim_in=16, dim_out=2, n_spatial_dims=2, spatial_resolution=(16, 16), modes1=4, modes2=4,
                     hidden_channels=8),
        "unet": UNetClassic(dim_in=16, dim_out=2, n_spatial_dims=2, spatial_resolution=(16, 16), init_features=4),
    }  # fmt: skip
    for name, model in models.items():
        trainer = rollout_trainer(small_datasets, tmp_path / name, 2, model=model)
        batch = next(iter(trainer.datamodule.train_dataloader()))
        terms = trainer.loss.upao_terms(batch)
        terms.total.backward()
        grads = [p.grad for p in trainer.model.parameters() if p.grad is not None]
        assert grads and all(torch.isfinite(g).all() for g in grads), name
        poisoned = dict(batch)
        poisoned["output_fields"] = batch["output_fields"].clone()
        poisoned["output_fields"][:, :, 1:-1, 1:-1] = float("nan")
        with torch.no_grad():
            assert torch.equal(trainer.loss.upao_terms(poisoned).total, terms.total.detach()), name


@pytest.mark.parametrize(
    "dataset",
    ["wave2d", "burgers1d", "adv3d", *(pytest.param(name, marks=pytest.mark.slow) for name in
                                       ("tg2d", "advdiff2d", "burgers2d", "adv1d"))],
)  # fmt: skip
def test_a_four_step_upao_rollout_trains_and_validates_on_every_exact_dataset(small_datasets, tmp_path, dataset):
    """``trainer.rollout_steps=4`` on each exact dataset (1D, 2D, 3D; one and several sub-equations): two optimizer
    steps and the validations run, the loss is finite, the adapted weights move, and the rollout scorecard scores
    four steps (history 6 = K + 2 holds the backtest)."""
    trainer = rollout_trainer(
        small_datasets, tmp_path, 4, dataset=dataset, data_kwargs={"n_steps_input": 6}, max_steps=2,
        validate_start=True, rollout_vrmse_steps=0, vrmse_trajectories=1,
    )  # fmt: skip
    before = [p.detach().clone() for p in trainer.model.parameters()]
    trainer.max_epoch = 1
    trainer.train()
    assert trainer.global_step == 2
    lines = [line for line in read_metrics(trainer.artifact_folder) if "valid_upao_loss" in line]
    assert lines and all(math.isfinite(line["valid_upao_loss"]) for line in lines)
    assert [key for key in lines[-1] if key.startswith("valid_score_residual_ratio_step")] == [
        f"valid_score_residual_ratio_step{k}" for k in range(1, 5)
    ]
    assert math.isfinite(lines[-1]["valid_score_backtest"])
    assert any(not torch.equal(a, b.detach()) for a, b in zip(before, trainer.model.parameters(), strict=True))
