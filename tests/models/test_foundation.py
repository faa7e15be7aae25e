"""The foundation-model baselines (extra ``well-upao[fm]``): PDE-Transformer and Poseidon as one-frame harness models.

All but the first are skipped when ``pdetransformer`` is not installed; ``.ci/run`` installs the extra, so CI
runs them."""

from __future__ import annotations

from pathlib import Path

import harness_command as harness
import pytest
import torch
from the_well.data.data_formatter import DefaultChannelsFirstFormatter

from well_upao.models.foundation import pdetransformer_available

needs_extra = pytest.mark.skipif(not pdetransformer_available(), reason="needs the extra well-upao[fm]")


def test_without_the_extra_the_error_names_the_install_command(monkeypatch):
    from well_upao.models import foundation

    monkeypatch.setattr(foundation, "pdetransformer_available", lambda: False)
    with pytest.raises(foundation.FoundationModelUnavailable, match=r"pip install 'well-upao\[fm\]'"):
        foundation.PDETransformerOneStep(history=2, n_fields=1, channel_types=[0], size="tiny")


def _foundation():
    from well_upao.models import foundation

    return foundation


def _randomize_output_layers(model: torch.nn.Module) -> None:
    """The released initialisation zeroes the output layers (the model starts at 0); give them weights so that
    the tests see how the output depends on the input."""
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "final_layer" in name or "adaLN" in name or "adain" in name:
                parameter.copy_(0.05 * torch.randn(parameter.shape, generator=generator))


def _well_input(frames: torch.Tensor, constants: torch.Tensor | None = None) -> torch.Tensor:
    """The harness's channels-first input of a history ``(B, T, H, W, C)``, made by The Well's own formatter."""
    batch = {"input_fields": frames, "output_fields": frames[:, -1:]}
    if constants is not None:
        batch["constant_fields"] = constants
    (x,), _ = DefaultChannelsFirstFormatter(metadata=None).process_input(batch)  # it reads no metadata
    return x


@needs_extra
def test_pde_transformer_reads_each_channel_history_in_the_wells_layout():
    """Channel c of the prediction changes when the history of channel c changes, through the Well's formatter's
    time-major layout; the constant fields (no stream for them) change nothing; a grid the patch hierarchy cannot
    split is refused with the multiple it needs."""
    torch.manual_seed(0)
    model = _foundation().PDETransformerOneStep(history=3, n_fields=2, channel_types=[4, 5], size="tiny").eval()
    _randomize_output_layers(model)
    frames = torch.randn(1, 3, 16, 16, 2)
    constants = torch.randn(1, 16, 16, 1)
    with torch.no_grad():
        out = model(_well_input(frames, constants))
        assert out.shape == (1, 2, 16, 16)
        assert torch.equal(out, model(_well_input(frames, constants + 1.0)))
        split = _foundation()._split_history(_well_input(frames, constants), 3, 2)
        assert torch.equal(split, frames.permute(0, 1, 4, 2, 3))
        swapped = model.__class__(history=3, n_fields=2, channel_types=[5, 4], size="tiny").eval()
        swapped.load_state_dict(model.state_dict())
        assert not torch.allclose(out, swapped(_well_input(frames, constants)))  # channel types are read
    with pytest.raises(ValueError, match="multiples of 8"):  # patch 4 x one down-sampling (tiny)
        model(torch.randn(1, 7, 20, 16))


@needs_extra
def test_poseidon_reads_only_the_last_frame_and_the_constants():
    torch.manual_seed(0)
    model = (
        _foundation()
        .PoseidonOneStep(history=3, n_fields=2, n_constant_fields=1, spatial_resolution=(16, 16), size="tiny")
        .eval()
    )
    frames = torch.randn(1, 3, 16, 16, 2)
    constants = torch.randn(1, 16, 16, 1)
    with torch.no_grad():
        out = model(_well_input(frames, constants))
        assert out.shape == (1, 2, 16, 16)
        earlier = frames.clone()
        earlier[:, :2] += 1.0
        assert torch.equal(out, model(_well_input(earlier, constants)))
        last = frames.clone()
        last[:, -1] += 1.0
        assert not torch.allclose(out, model(_well_input(last, constants)))
        assert not torch.allclose(out, model(_well_input(frames, constants + 1.0)))


@needs_extra
def test_poseidon_maps_a_rectangular_grid_as_independent_square_tiles():
    """The paper's construction for non-square sets: a 16 x 48 field is three 16^2 samples, each mapped by the
    same network as a square model would map it alone; a grid that does not split into squares is refused."""
    foundation = _foundation()
    torch.manual_seed(0)
    wide = foundation.PoseidonOneStep(
        history=2, n_fields=2, n_constant_fields=1, spatial_resolution=(16, 48), size="tiny"
    ).eval()
    square = foundation.PoseidonOneStep(
        history=2, n_fields=2, n_constant_fields=1, spatial_resolution=(16, 16), size="tiny"
    ).eval()
    square.load_state_dict(wide.state_dict())
    frames, constants = torch.randn(1, 2, 16, 48, 2), torch.randn(1, 16, 48, 1)
    with torch.no_grad():
        out = wide(_well_input(frames, constants))
        assert out.shape == (1, 2, 16, 48)
        for k in range(3):
            part = slice(16 * k, 16 * (k + 1))
            alone = square(_well_input(frames[:, :, :, part], constants[:, :, part]))
            torch.testing.assert_close(out[..., part], alone, rtol=1e-5, atol=1e-6)
        assert not torch.allclose(out[..., :16], out[..., 16:32])  # not one tile broadcast
    with pytest.raises(ValueError, match="16 x 24 grid does not split into 16 x 16 tiles"):
        foundation.PoseidonOneStep(history=2, n_fields=2, n_constant_fields=0, spatial_resolution=(16, 24))
    with pytest.raises(ValueError, match="built for 16 x 16 tiles"):
        wide(torch.randn(1, 5, 16, 40))


@needs_extra
def test_released_checkpoints_load_from_a_local_directory(tmp_path):
    """A checkpoint saved by the package's own classes (as released ones are) loads offline from its directory and
    predicts what the package's model predicts; one with other channel counts is refused by name."""
    foundation = _foundation()
    scot = foundation.pdetransformer_module("core.mixed_channels.scot")
    config = scot.ScOTConfig(
        **{**foundation.POSEIDON_TINY, "image_size": 16, "patch_size": 4, "num_channels": 2, "num_out_channels": 2}
    )
    torch.manual_seed(0)
    released = scot.ScOT(config).eval()
    released.save_pretrained(tmp_path / "poseidon")
    model = foundation.PoseidonOneStep(
        history=2, n_fields=2, n_constant_fields=0, spatial_resolution=(16, 16), weights=str(tmp_path / "poseidon")
    ).eval()
    assert model.weights_origin == "released"
    frames = torch.randn(1, 2, 16, 16, 2)
    with torch.no_grad():
        expected = released(pixel_values=frames[:, -1].permute(0, 3, 1, 2), time=torch.ones(1)).output
        torch.testing.assert_close(model(_well_input(frames)), expected)  # the memory layout differs: rounding
    with pytest.raises(ValueError, match="reads 2 and writes 2 channels"):
        foundation.PoseidonOneStep(
            history=2, n_fields=3, n_constant_fields=0, spatial_resolution=(16, 16), weights=str(tmp_path / "poseidon")
        )


@needs_extra
def test_pde_transformer_trains_with_upao_through_the_harness(small_datasets, tmp_path, monkeypatch):
    """`model=pde_transformer trainer=upao data=burgers2d` (issue 17's command, tiny size): no interior labels, the
    one-frame path; and Poseidon supervised on tg2d (`model=poseidon`)."""
    upao = harness.run_harness(
        tmp_path, small_datasets, "model=pde_transformer", "model.size=tiny", "trainer=upao", "data=burgers2d",
        *harness.FAST,
    )  # fmt: skip
    assert upao.returncode == 0, upao.stderr[-3000:]
    assert "a one-frame model: its residual joins the last input frame" in upao.stderr + upao.stdout
    runs = harness.run_folders(tmp_path)
    assert len(runs) == 1 and "PDETransformer" in runs[0].parent.name
    assert (runs[0] / "checkpoints" / "best.pt").exists()
    _check_the_checkpoint_rebuilds_its_model(runs[0], small_datasets, monkeypatch)
    supervised = harness.run_harness(
        tmp_path, small_datasets, "model=poseidon", "model.size=tiny", "trainer=supervised", "data=tg2d", *harness.FAST
    )
    assert supervised.returncode == 0, supervised.stderr[-3000:]
    assert any("Poseidon" in run.parent.name for run in harness.run_folders(tmp_path))


def _check_the_checkpoint_rebuilds_its_model(run, data_root, monkeypatch):
    """`well-upao evaluate`'s loader rebuilds the model from the checkpoint alone (its Hydra node is stored with the
    dataset's name and root resolved), away from its run; a node that still reads `${data.*}` is refused by name."""
    from omegaconf import OmegaConf

    from well_upao.models.assembly import load_model
    from well_upao.models.checkpoint import CheckpointError, read_checkpoint, save_checkpoint

    best = run / "checkpoints" / "best.pt"
    payload = read_checkpoint(best)
    assert payload["model"]["hydra"]["dataset_name"] == "burgers2d"
    assert Path(payload["model"]["hydra"]["well_base_path"]).is_absolute()
    reference = load_model(best).state_dict()
    save_checkpoint(run / "elsewhere.pt", payload)
    rebuilt = load_model(run / "elsewhere.pt").state_dict()
    assert rebuilt.keys() == reference.keys() and all(torch.equal(rebuilt[k], reference[k]) for k in reference)
    payload["model"]["hydra"] = OmegaConf.to_container(OmegaConf.load(run / "extended_config.yaml").model)
    assert payload["model"]["hydra"]["dataset_name"] == "${data.well_dataset_name}"
    save_checkpoint(run / "unresolved.pt", payload)
    with pytest.raises(CheckpointError, match="unresolved interpolations"):
        load_model(run / "unresolved.pt")


@needs_extra
def test_the_mixture_pde_transformer_is_the_harness_model_with_slots_as_channel_types():
    """On 18-slot frames the mixture model predicts, in the active slots, what the harness model with channel types
    = those slots predicts from the same weights; inactive slots stay zero and are never read; 1D is refused."""
    foundation = _foundation()
    torch.manual_seed(0)
    mixture = foundation.PDETransformerSlots(history=3, size="tiny").eval()
    _randomize_output_layers(mixture)
    slots = [4, 5, 9]
    harness_model = foundation.PDETransformerOneStep(history=3, n_fields=3, channel_types=slots, size="tiny").eval()
    harness_model.load_state_dict(mixture.state_dict())
    frames = torch.randn(2, 3, 16, 16, 18)
    mask = torch.zeros(18)
    mask[slots] = 1
    with torch.no_grad():
        out = mixture(frames, mask)
        expected = harness_model(_well_input(frames[..., slots]))  # (B, C, H, W)
        torch.testing.assert_close(out[..., slots], expected.permute(0, 2, 3, 1))
        assert not out[..., mask == 0].any()
        other = frames.clone()
        other[..., mask == 0] = 7.0
        assert torch.equal(mixture(other, mask), out)
    with pytest.raises(ValueError, match="2D only"):
        mixture(torch.randn(2, 3, 16, 18), mask)


@needs_extra
def test_pde_transformer_standardises_each_channel_over_its_history():
    """u_{T+1} = mu + sigma * net((u - mu) / sigma) per channel: scaling and shifting a channel's history scales
    and shifts its prediction alike and leaves the other channel's unchanged (raw scales never reach the net)."""
    torch.manual_seed(0)
    model = _foundation().PDETransformerOneStep(history=3, n_fields=2, channel_types=[4, 5], size="tiny").eval()
    _randomize_output_layers(model)
    frames = torch.randn(2, 3, 16, 16, 2)
    moved = frames.clone()
    moved[..., 0] = 250.0 * frames[..., 0] - 40.0
    with torch.no_grad():
        out, out_moved = model(_well_input(frames)), model(_well_input(moved))
    torch.testing.assert_close(out_moved[:, 0], 250.0 * out[:, 0] - 40.0, rtol=1e-4, atol=0.05)  # float32 at x250
    torch.testing.assert_close(out_moved[:, 1], out[:, 1], rtol=1e-4, atol=1e-4)  # rounding of channel 0 only


@needs_extra
def test_pde_transformer_pretrains_on_a_slot_mixture_and_its_weights_load_into_the_harness_model(tmp_path):
    """`--config-name pretrain_pde_transformer`: the pretraining loop with the next-frame loss on two 2D datasets of
    different channels; the checkpoint loads into `model=pde_transformer` (`model.weights=best.pt`) and predicts what
    the trained mixture model predicts on those slots, and the row is labelled as pretrained."""
    import json
    import os
    import subprocess
    import sys

    from well_upao.data.generate import GenerationRequest, generate_dataset
    from well_upao.harness.runs import initial_weights
    from well_upao.models.checkpoint import load_state, read_checkpoint

    corpus = tmp_path / "corpus"
    families = ["shallow_water_2d", "diffusion_reaction_2d"]
    for name in families:
        generate_dataset(GenerationRequest(pde=name, out=corpus, n_traj=3, resolution=16, n_steps=8), False)
    out = tmp_path / "run"
    command = [
        sys.executable, "-m", "well_upao.train", "--config-name", "pretrain_pde_transformer",
        f"data.datasets=[{','.join(families)}]", "data.batch_size=2", "data.n_steps_input=3",
        "data.clips_per_dataset=4", "data.validation_trajectories=1", "trainer.epochs=1", "trainer.max_steps=3",
        f"trainer.output_dir={out}", "trainer.progress=false", "model.size=tiny",
    ]  # fmt: skip
    env = dict(os.environ, WELL_BASE_PATH=str(corpus), OMP_NUM_THREADS="1")
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert {f"{name}/vrmse_paper" for name in families} <= set(metrics[-1])
    payload = read_checkpoint(out / "best.pt")
    assert payload["model"]["target"].endswith("PDETransformerSlots")

    foundation = _foundation()
    trained = foundation.PDETransformerSlots(**payload["model"]["config"]).eval()
    load_state(trained, payload)
    slots = [4, 5, 0]  # any slots: the weights are shared by every channel stream
    harness_model = foundation.PDETransformerOneStep(
        history=3, n_fields=3, channel_types=slots, size="tiny", weights=str(out / "best.pt")
    ).eval()
    frames = torch.randn(1, 3, 16, 16, 18)
    mask = torch.zeros(18)
    mask[slots] = 1
    with torch.no_grad():
        expected = trained(frames, mask)[..., slots].permute(0, 3, 1, 2)
        torch.testing.assert_close(harness_model(_well_input(frames[..., slots])), expected)
    assert initial_weights({"model": {"hydra": {"weights": str(out / "best.pt")}}}) == "pretrained best.pt"
