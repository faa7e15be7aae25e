"""Checkpoint schema: rebuild from the file alone, refuse mismatched backbones, strip wrapper prefixes."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from well_upao.models.assembly import assemble, load_model
from well_upao.models.checkpoint import (
    CheckpointError,
    build_payload,
    clean_state_dict,
    read_checkpoint,
    save_checkpoint,
)
from well_upao.models.na_transformer import NATransformer


def test_model_is_rebuilt_from_the_file_alone(tmp_path):
    model = NATransformer(preset="tiny", channel_slots=[0, 1], dims=(2,), layers=2).eval()
    path = tmp_path / "model.pt"
    save_checkpoint(path, build_payload(model, epoch=3, validation_loss=0.5))
    payload = read_checkpoint(path)
    assert payload["format"] == "well-upao" and payload["version"] == 1
    assert payload["epoch"] == 3 and "model_state_dict" in payload and "optimizer_state_dit" in payload
    rebuilt = load_model(path).eval()
    frames = torch.zeros(1, 3, 16, 16, 18)
    frames[..., :2] = torch.randn(1, 3, 16, 16, 2)
    with torch.no_grad():
        torch.testing.assert_close(rebuilt.forward_sequence(frames), model.forward_sequence(frames))
    assert not list(tmp_path.glob(".*tmp*"))  # no temporary file left


def test_backbone_of_another_preset_is_refused(tmp_path):
    small = NATransformer(preset="small", channel_slots=[0], dims=(2,), layers=1)
    path = tmp_path / "small.pt"
    save_checkpoint(path, build_payload(small))
    with pytest.raises(CheckpointError, match=r"preset 'small'.*hidden: checkpoint 192 vs model 96"):
        assemble(dict(preset="tiny", channel_slots=[0], dims=(2,), layers=1, pretrained=str(path)))


def test_pretrained_backbone_loads_into_another_dataset(tmp_path):
    source = NATransformer(preset="tiny", channel_slots=[0, 1], dims=(1, 2), layers=1)
    path = tmp_path / "backbone.pt"
    save_checkpoint(path, build_payload(source))
    target = assemble(dict(preset="tiny", channel_slots=[15], dims=(2,), layers=1, pretrained=str(path)))
    torch.testing.assert_close(target.blocks[0].mlp.up_proj.weight, source.blocks[0].mlp.up_proj.weight)
    assert target.config["pretrained"] == str(path)  # recorded for checkpoints
    with pytest.raises(CheckpointError, match="3D"):
        assemble(dict(preset="tiny", channel_slots=[15], dims=(3,), layers=1, pretrained=str(path)))


def test_foreign_and_damaged_files_are_refused(tmp_path):
    foreign = tmp_path / "foreign.pt"
    torch.save({"model_state_dict": {}}, foreign)
    with pytest.raises(CheckpointError, match="not a well-upao checkpoint"):
        read_checkpoint(foreign)
    damaged = tmp_path / "damaged.pt"
    damaged.write_bytes(b"not a zip")
    with pytest.raises(CheckpointError, match="cannot read"):
        read_checkpoint(damaged)
    with pytest.raises(CheckpointError, match="does not exist"):
        read_checkpoint(tmp_path / "missing.pt")


def test_wrapper_prefixes_never_reach_the_file():
    model = NATransformer(preset="tiny", channel_slots=[0], dims=(1,), layers=1)
    wrapped = torch.nn.Sequential()
    wrapped.module = model  # what DDP looks like
    payload = build_payload(wrapped)
    assert not any(k.startswith("module.") for k in payload["state_dict"])
    assert clean_state_dict({"module._orig_mod.a": 1}) == {"a": 1}


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_checkpoints_written_before_the_architecture_change_still_load():
    """A slim NSLoRA adapter checkpoint on the shipped backbone, written by the code of commit 6d80feb (before
    the model constructor stopped loading backbones and injecting adapters itself) with

        model = NATransformer(preset="tiny", dims=[2], channel_slots=[10, 2], dataset_name="wave2d", history=4,
                              pretrained="shipped", adapter={"kind": "nslora", "schedule": "from_start",
                              "rank": 4, "targets": ["qkv", "down_proj"]})
        # B ~ N(0, 1e-3) after torch.manual_seed(0); build_payload(model, epoch=3) with pretrained="shipped"

    must rebuild from the file (plus the shipped backbone) and give the outputs recorded then."""
    model = load_model(FIXTURES / "slim_nslora_adapters_v0.pt").eval()
    recorded = torch.load(FIXTURES / "slim_nslora_adapters_v0_io.pt")
    with torch.no_grad():
        torch.testing.assert_close(model(recorded["input"]), recorded["output"], rtol=1e-5, atol=1e-6)
