"""FSDP2 on CPU: two gloo processes of the tiny preset against one process on the same global batch, sharded
checkpoints that resume a killed run, and consolidated checkpoints that evaluate in one process.

The default suite runs one launch (``test_fsdp_matches_one_process_and_its_checkpoints_load_in_one_process``); the
rest is ``slow``. The one-process references run the same entry point's code (in this process, or as a subprocess)
without sharding: the expected numbers never come from the FSDP code.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest
import torch

from well_upao.data.generate import GenerationRequest, generate_dataset
from well_upao.data.source import WellSource
from well_upao.models.checkpoint import read_checkpoint

FAMILIES = ["shallow_water_2d", "compressible_ns_1d"]
STEPS = 3
COMMON = [
    f"data.datasets=[{','.join(FAMILIES)}]",
    "data.n_steps_input=4",
    "data.clips_per_dataset=8",
    "data.validation_trajectories=1",
    "trainer.progress=false",
    "model.layers=1",
    "model.preset=tiny",
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    base = tmp_path_factory.mktemp("corpus")
    for name in FAMILIES:
        resolution = 32 if name.endswith("1d") else 16
        generate_dataset(GenerationRequest(pde=name, out=base, n_traj=3, resolution=resolution, n_steps=8), False)
    return base


def launcher(processes: int) -> list[str]:
    """The interpreter, under ``torchrun`` (``torch.distributed.run``) for several processes (``--standalone``: a
    rendezvous on a free local port, the machine may run other launches)."""
    if processes == 1:
        return [sys.executable]
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={processes}"]


def pretraining_command(processes: int) -> list[str]:
    return [*launcher(processes), "-m", "well_upao.train", "--config-name", "pretrain", *COMMON]


def environment(corpus: Path) -> dict[str, str]:
    return dict(os.environ, WELL_BASE_PATH=str(corpus), OMP_NUM_THREADS="1")


def launch(corpus: Path, out: Path, processes: int, *overrides: str) -> subprocess.CompletedProcess:
    out.mkdir(parents=True, exist_ok=True)
    command = [*pretraining_command(processes), f"trainer.output_dir={out}", *overrides]
    result = subprocess.run(command, cwd=out, env=environment(corpus), capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def run_in_this_process(corpus: Path, out: Path, *overrides: str) -> None:
    """``python -m well_upao.train --config-name pretrain ...`` in one process, without a launch."""
    from hydra import compose, initialize_config_module

    from well_upao.train import Distributed, run_pretraining

    with initialize_config_module(version_base=None, config_module="well_upao.configs"):
        cfg = compose(
            "pretrain",
            overrides=[*COMMON, f"data.well_base_path={corpus}", f"trainer.output_dir={out}", *overrides],
        )
    run_pretraining(cfg, Distributed(rank=0, world_size=1, local_rank=0))


def last_metrics(out: Path) -> dict:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()][-1]


def per_dataset_scores(model: torch.nn.Module, corpus: Path) -> dict[str, float]:
    """The pretraining validation (one-step VRMSE per dataset on its validation trajectories) of a model in one
    process: what the run logged when the model was sharded."""
    from well_upao.harness.mixture import MixtureDataModule
    from well_upao.trainers.pretraining import per_dataset_validation

    mixture = MixtureDataModule(str(corpus), FAMILIES, batch_size=4, n_steps_input=4, validation_trajectories=1)
    trainer = types.SimpleNamespace(datamodule=mixture, bare_model=model, device=torch.device("cpu"))
    return per_dataset_validation(trainer, "valid", True, 1)[1]


def test_fsdp_matches_one_process_and_its_checkpoints_load_in_one_process(corpus, tmp_path):
    from well_upao.models.assembly import build_model, load_model
    from well_upao.trainers.sharded_checkpoint import load_sharded_state

    sharded_out, one_out = tmp_path / "fsdp", tmp_path / "one"
    budget = [f"trainer.max_steps={STEPS}", "trainer.epochs=1"]
    launch(corpus, sharded_out, 2, "data.batch_size=2", "trainer.strategy=fsdp", *budget)
    run_in_this_process(corpus, one_out, "data.batch_size=4", *budget)

    # (a) the same parameters as one process on the same global batch of 4
    sharded_metrics, one_metrics = last_metrics(sharded_out), last_metrics(one_out)
    assert sharded_metrics["step"] == one_metrics["step"] == STEPS
    assert sharded_metrics["train_loss"] == pytest.approx(one_metrics["train_loss"], rel=1e-5)
    sharded, one = read_checkpoint(sharded_out / "recent.pt"), read_checkpoint(one_out / "recent.pt")
    assert set(sharded["state_dict"]) == set(one["state_dict"])
    for key, value in one["state_dict"].items():
        assert sharded["state_dict"][key].dtype == value.dtype
        torch.testing.assert_close(sharded["state_dict"][key], value, rtol=1e-4, atol=1e-6)

    # the consolidated file names its (only) sharded checkpoint and holds no optimizer state of its own
    directories = sorted(sharded_out.glob("recent.sharded-*"))
    assert [d.name for d in directories] == [sharded["train"]["sharded"]]
    assert sharded["optimizer_state_dit"] is None and sharded["train"]["optimizer"] is None

    # the sharded checkpoint restores, in one process, the weights of the consolidated file exactly and the AdamW
    # state one process has after the same steps (no state for parameters that never had a gradient)
    restored = build_model(sharded)
    trainable = [p for p in restored.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=1e-4, betas=(0.9, 0.95), weight_decay=0.01)
    load_sharded_state(restored, optimizer, directories[0])
    for key, value in restored.state_dict().items():
        assert torch.equal(value, sharded["state_dict"][key]), key
    settings = ("lr", "initial_lr", "betas", "weight_decay")  # the schedule continues from the same point
    for group, saved in zip(optimizer.param_groups, one["optimizer_state_dit"]["param_groups"], strict=True):
        assert {k: group[k] for k in settings} == {k: saved[k] for k in settings}
    one_optimizer = one["optimizer_state_dit"]["state"]
    own = {i: optimizer.state[p] for i, p in enumerate(trainable) if optimizer.state.get(p)}
    assert set(own) == set(one_optimizer) and len(own) < len(trainable)
    assert max(float(state["step"]) for state in one_optimizer.values()) == STEPS  # (a batch uses one dimension)
    for index, state in one_optimizer.items():
        assert float(own[index]["step"]) == float(state["step"])
        for name in ("exp_avg", "exp_avg_sq"):
            torch.testing.assert_close(own[index][name], state[name], rtol=1e-4, atol=1e-9)

    # (c) the consolidated checkpoint evaluates in one process to the predictions the sharded run validated with,
    # the sharded checkpoint's and one process's
    consolidated = load_model(sharded_out / "recent.pt").eval()
    scores = per_dataset_scores(consolidated, corpus)
    assert scores == per_dataset_scores(restored.eval(), corpus)
    for key, value in scores.items():
        assert value == pytest.approx(sharded_metrics[key], rel=1e-5), key
        assert value == pytest.approx(one_metrics[key], rel=1e-4), key


def killed_mid_epoch(command: list[str], cwd: Path, env: dict, recent: Path) -> None:
    """Start ``command`` (torchrun), SIGKILL it and its workers (each in a session of its own) once ``recent`` marks
    a mid-epoch point."""
    import psutil

    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    point, deadline = None, time.time() + 300
    while point is None and process.poll() is None and time.time() < deadline:
        try:
            point = read_checkpoint(recent)["train"].get("resume")
        except Exception:  # not written yet, or being renamed into place
            pass
        time.sleep(0.02)
    for child in psutil.Process(process.pid).children(recursive=True):
        child.send_signal(signal.SIGKILL)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert point is not None, "the run finished (or never checkpointed) before it could be killed mid-epoch"


@pytest.mark.slow
def test_a_killed_fsdp_run_resumes_from_its_sharded_checkpoint(corpus, tmp_path):
    """(b) A 2-process FSDP run SIGKILLed inside an epoch resumes from its sharded checkpoint and ends with the steps
    and the weights of an uninterrupted one, logging every epoch once."""
    settings = ["data.batch_size=1", "trainer.epochs=2", "trainer.max_steps=1000", "trainer.strategy=fsdp"]
    whole_out = tmp_path / "whole"
    launch(corpus, whole_out, 2, *settings)
    whole = read_checkpoint(whole_out / "recent.pt")

    out = tmp_path / "killed"
    out.mkdir()
    command = [
        *pretraining_command(2),
        f"trainer.output_dir={out}",
        *settings,
        "trainer.checkpoint_steps=1",
    ]
    killed_mid_epoch(command, out, environment(corpus), out / "recent.pt")
    resumed = launch(corpus, out, 2, *settings, "trainer.checkpoint_steps=1")
    assert "weights and optimizer state from the sharded checkpoint" in resumed.stderr + resumed.stdout
    assert "continuing epoch" in resumed.stderr + resumed.stdout
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [m["epoch"] for m in metrics] == [1, 2]
    assert metrics[-1]["step"] == last_metrics(whole_out)["step"] == whole["train"]["global_step"] > 0
    final = read_checkpoint(out / "recent.pt")
    for key, value in whole["state_dict"].items():
        torch.testing.assert_close(final["state_dict"][key], value, rtol=1e-5, atol=1e-7)
    assert len(list(out.glob("recent.sharded-*"))) == 1


@pytest.mark.slow
def test_bf16_policy_trains_close_to_fp32_and_keeps_fp32_weights(corpus, tmp_path):
    """``trainer.mixed_precision=bf16`` computes in bfloat16 and reduces in fp32: the loss of each step is within
    bf16's resolution of the fp32 run's, and the stored weights stay fp32."""
    settings = ["data.batch_size=2", "trainer.strategy=fsdp", f"trainer.max_steps={STEPS}", "trainer.epochs=1"]
    launch(corpus, tmp_path / "fp32", 2, *settings)
    launch(corpus, tmp_path / "bf16", 2, *settings, "trainer.mixed_precision=bf16")
    fp32, bf16 = last_metrics(tmp_path / "fp32"), last_metrics(tmp_path / "bf16")
    assert bf16["train_loss"] == pytest.approx(fp32["train_loss"], rel=2e-2)
    assert bf16["train_loss"] != fp32["train_loss"]  # the policy is in effect
    state = read_checkpoint(tmp_path / "bf16" / "recent.pt")["state_dict"]
    assert {value.dtype for value in state.values() if value.is_floating_point()} == {torch.float32}


HARNESS = [
    "data=tg2d",
    "model=na_nslora",
    "trainer=shifted",
    "+seed=0",
    "trainer.epochs=2",
    "trainer.epoch_steps=2",
    "trainer.nslora_schedule=warmup",
    "trainer.switch_patience=0",  # LoRA in epoch 1, the switch at its validation, NS forward in epoch 2
    "trainer.activation_checkpointing=true",
    "trainer.max_rollout_steps=2",
    "data.max_rollout_steps=3",
    "trainer.short_validation_length=1",
    "trainer.rollout_val_frequency=1000",
    "trainer.progress=false",
]


def harness_run(base: Path, cwd: Path, processes: int, *overrides: str) -> Path:
    """``[torchrun] python -m well_upao.train <HARNESS> <overrides>`` in ``cwd``; returns the run folder."""
    cwd.mkdir()
    command = [*launcher(processes), "-m", "well_upao.train", *HARNESS, *overrides]
    env = dict(os.environ, WELL_BASE_PATH=str(base), OMP_NUM_THREADS="1")
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    (run,) = sorted((cwd / "experiments").glob("*/*"))
    return run


@pytest.mark.slow
def test_fsdp_harness_run_with_nslora_adapters_matches_one_process(small_datasets, tmp_path):
    """A harness run (``torchrun -m well_upao.train model=na_nslora ...``) sharded over 2 processes with per-layer
    activation checkpointing, LoRA for an epoch, then the switch (its ``||DeltaW||`` gathered from the shards), then
    the NS forward: the frozen backbone sharded, the adapters trained to the values one process reaches on the same
    global batches; its consolidated checkpoint (adapters, encoders and decoders on the shipped backbone's hash) is
    read by evaluate and adapters-report."""
    from well_upao.evaluate.spectral import adapters_report
    from well_upao.predict.predictors import load_predictor

    one = harness_run(small_datasets, tmp_path / "one", 1, "data.batch_size=2")
    sharded = harness_run(small_datasets, tmp_path / "fsdp", 2, "data.batch_size=1", "trainer.strategy=fsdp")
    lines = {}
    for name, run in (("one", one), ("fsdp", sharded)):
        logged = [json.loads(line) for line in (run / "artifacts" / "metrics.jsonl").read_text().splitlines()]
        lines[name] = [line for line in logged if "train_loss" in line]  # the epochs (not the start's validation)
    switch = ("delta_w_norm_before_switch", "delta_w_norm_after_switch")
    for epoch_one, epoch_fsdp in zip(lines["one"][:2], lines["fsdp"][:2], strict=True):
        assert epoch_one["step"] == epoch_fsdp["step"] == 2 * epoch_one["epoch"]
        for key in ("train_loss", "valid", "param_norm", *switch):  # param_norm: the Well's, from the shards
            if key in epoch_one or key in epoch_fsdp:
                assert epoch_fsdp[key] == pytest.approx(epoch_one[key], rel=1e-5), key
    assert lines["fsdp"][0]["nslora_switch_epoch"] == 1

    reference = read_checkpoint(one / "checkpoints" / "recent.pt")
    payload = read_checkpoint(sharded / "checkpoints" / "recent.pt")
    assert payload["state_dict_complete"] is False and payload["adapters"]["kind"] == "nslora"
    assert payload["adapters"]["backbone_sha256"] == reference["adapters"]["backbone_sha256"]
    assert set(payload["state_dict"]) == set(reference["state_dict"])
    assert any(key.endswith("ns_active") and bool(value) for key, value in payload["state_dict"].items())
    for key, value in reference["state_dict"].items():  # (4 AdamW steps of lr <= 1e-4: atol 1e-5 is 1/40 of them)
        torch.testing.assert_close(payload["state_dict"][key], value, rtol=1e-4, atol=1e-5)

    report = adapters_report(sharded / "checkpoints" / "recent.pt")
    expected = adapters_report(one / "checkpoints" / "recent.pt")
    assert report["n_untouched"] == expected["n_untouched"] < report["n_modules"]
    assert report["mean"]["frobenius"] == pytest.approx(expected["mean"]["frobenius"], rel=1e-4)
    predictor = load_predictor(sharded / "checkpoints" / "recent.pt", WellSource(small_datasets, "tg2d", "valid"))
    assert predictor.notes["training"] == "2 epochs, 4 steps"


@pytest.mark.slow
def test_sharding_starts_every_process_from_rank_0s_weights(tmp_path):
    """Processes that initialised differently (another seed each) train rank 0's weights once sharded, as DDP
    does: the weights gathered from the shards are rank 0's initial ones."""
    script = tmp_path / "shard.py"
    script.write_text(
        "import sys, torch, torch.distributed as dist\n"
        "from well_upao.models.na_transformer import NATransformer\n"
        "from well_upao.trainers.sharded_checkpoint import whole_state\n"
        "from well_upao.trainers.sharding import ShardingOptions, shard\n"
        "dist.init_process_group('gloo')\n"
        "torch.manual_seed(100 + dist.get_rank())\n"
        "model = NATransformer(preset='tiny', layers=1, dims=(2,))\n"
        "if dist.get_rank() == 0:\n"
        "    torch.save(model.state_dict(), sys.argv[1] + '/initial.pt')\n"
        "shard(model, ShardingOptions('fsdp'), torch.device('cpu'))\n"
        "state = whole_state(model)\n"
        "if dist.get_rank() == 0:\n"
        "    torch.save(state, sys.argv[1] + '/sharded.pt')\n"
        "dist.destroy_process_group()\n"
    )
    command = [*launcher(2), str(script), str(tmp_path)]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    initial, sharded = torch.load(tmp_path / "initial.pt"), torch.load(tmp_path / "sharded.pt")
    assert set(initial) == set(sharded)
    for key, value in initial.items():
        assert torch.equal(sharded[key], value), key


@pytest.mark.slow
def test_fsdp_rollout_upao_keeps_the_guards_departure_and_matches_one_process(small_datasets, tmp_path):
    """``trainer=upao trainer.rollout_steps=2 trainer.strategy=fsdp`` over 2 processes: the guard's departure is
    measured (from the start's kept predictions: no start model can be copied from shards) and equals the one a
    single process measures against its copied start model on the same global batches."""
    upao = [o if o != "trainer=shifted" else "trainer=upao" for o in HARNESS if not o.startswith("trainer.nslora")]
    upao = [o for o in upao if not o.startswith(("trainer.switch_patience", "trainer.activation_checkpointing"))]
    runs = {}
    for name, processes, extra in (
        ("one", 1, ["data.batch_size=2"]),
        ("fsdp", 2, ["data.batch_size=1", "trainer.strategy=fsdp"]),
    ):
        cwd = tmp_path / name
        cwd.mkdir()
        command = [*launcher(processes), "-m", "well_upao.train", *upao, "trainer.rollout_steps=2", *extra]
        env = dict(os.environ, WELL_BASE_PATH=str(small_datasets), OMP_NUM_THREADS="1")
        result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr[-3000:]
        (run,) = sorted((cwd / "experiments").glob("*/*"))
        lines = [json.loads(line) for line in (run / "artifacts" / "metrics.jsonl").read_text().splitlines()]
        runs[name] = [line for line in lines if "valid_score_departure" in line]
    for one, sharded in zip(runs["one"], runs["fsdp"], strict=True):
        assert "valid_score_residual_ratio_step2" in sharded
        assert sharded["valid_score_departure"] == pytest.approx(one["valid_score_departure"], rel=1e-4, abs=1e-9)
    assert runs["fsdp"][-1]["valid_score_departure"] > 0 and runs["fsdp"][-1]["valid_unavailable_scores"] is None
