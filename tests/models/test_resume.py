"""The resume artifact of a backbone pretrained across device calls: bf16 weights, a record, loaded as a backbone."""

from __future__ import annotations

import pytest
import torch

from well_upao.models.assembly import assemble
from well_upao.models.checkpoint import CheckpointError, build_payload, save_checkpoint
from well_upao.models.na_transformer import NATransformer
from well_upao.models.resume import first_record, read_resume_record, write_resume_artifact


def test_an_artifact_holds_bf16_weights_and_its_record_and_loads_as_a_backbone(tmp_path):
    torch.manual_seed(0)
    model = NATransformer(preset="tiny", channel_slots=[0, 1], dims=(2,), layers=2)
    source = tmp_path / "best.pt"
    optimizer = torch.optim.AdamW(model.parameters())
    save_checkpoint(source, build_payload(model, epoch=3, optimizer=optimizer))
    record = first_record(20_000, data_seed=7).after_call(
        1_500, {"device": "H200", "minutes": 4.2, "steps": 1_500, "clips": 48_000}
    )
    artifact = tmp_path / "artifact.pt"
    size = write_resume_artifact(source, artifact, record)
    parameters = sum(p.numel() for p in model.parameters())
    assert size < 2 * parameters + 2**20  # two bytes a weight, no optimizer moments (which would add eight more)
    again = read_resume_record(artifact)
    assert (again.step, again.schedule_steps, again.data_seed, again.schedule_left) == (1_500, 20_000, 8, 18_500)
    assert again.calls == [{"device": "H200", "minutes": 4.2, "steps": 1_500, "clips": 48_000}]
    loaded = assemble(dict(preset="tiny", channel_slots=[0, 1], dims=(2,), layers=2, pretrained=str(artifact)))
    weight, original = loaded.blocks[0].mlp.up_proj.weight, model.blocks[0].mlp.up_proj.weight
    assert weight.dtype == torch.float32  # read into the model's own precision
    torch.testing.assert_close(weight, original.to(torch.bfloat16).float(), rtol=0, atol=0)
    assert (weight - original).abs().max() > 0  # bf16 rounding happened: it is not the fp32 file


def test_a_plain_checkpoint_has_no_record_and_a_schedule_needs_a_step(tmp_path):
    path = tmp_path / "plain.pt"
    save_checkpoint(path, build_payload(NATransformer(preset="tiny", channel_slots=[0], dims=(1,), layers=1)))
    with pytest.raises(CheckpointError, match="no resume record"):
        read_resume_record(path)
    with pytest.raises(ValueError, match="at least one step"):
        first_record(0)
