"""Adapters merged for inference: ``well-upao evaluate`` (and the rollouts and quickstart, which evaluate through
it) predicts with ``W0 + DeltaW`` folded into every adapted layer, to 1e-5 of the unmerged model;
``export-backbone --merge`` writes a plain backbone that ``model=na`` loads as ``model.pretrained=``."""

from __future__ import annotations

import pytest
import torch

from well_upao.cli import main
from well_upao.data.datasets import slot_indices
from well_upao.data.source import WellSource
from well_upao.models.assembly import assemble, load_model
from well_upao.models.checkpoint import build_payload, read_checkpoint, save_checkpoint
from well_upao.models.lora import adapter_layers, set_ns_active
from well_upao.predict.predictors import load_predictor

CHANNELS = ["pressure", "velocity_x", "velocity_y"]  # tg2d's fields, in its order


def adapted_checkpoint(tmp_path, kind: str) -> tuple[torch.nn.Module, object]:
    """A tiny backbone with trained-looking adapters (B != 0; NSLoRA's NS forward on) saved as a checkpoint."""
    torch.manual_seed(0)
    config = dict(preset="tiny", layers=2, dims=[2], channel_slots=slot_indices("tg2d", CHANNELS))
    model = assemble(config | {"dataset_name": "tg2d", "adapter": {"kind": kind, "rank": 4}}).eval()
    set_ns_active(model, kind == "nslora")
    with torch.no_grad():
        for layer in adapter_layers(model).values():
            layer.lora_B.normal_(0, 0.05)
    path = tmp_path / f"{kind}.pt"
    save_checkpoint(path, build_payload(model))
    return model, path


def relative_error(prediction: torch.Tensor, reference: torch.Tensor) -> float:
    return float((prediction - reference).norm() / reference.norm())


@pytest.mark.parametrize("kind", ["lora", "nslora"])
def test_evaluation_predicts_with_merged_adapters_what_the_adapters_predict(small_datasets, tmp_path, kind):
    model, path = adapted_checkpoint(tmp_path, kind)
    window = torch.randn(2, 4, 16, 16, 3)
    slotted = model.to_slots(window)
    with torch.no_grad():
        adapted = model.from_slots(model.forward_sequence(slotted)[:, -1])
    predictor = load_predictor(path, WellSource(small_datasets, "tg2d", "valid"))
    assert not adapter_layers(predictor.model) and predictor.notes["adapters"] == "18 merged"
    prediction = predictor.predict(window, None)
    assert relative_error(prediction, adapted) < 1e-5
    # negative control: the adapters matter (a merge that dropped DeltaW would be caught)
    set_ns_active(model, False)
    with torch.no_grad():
        for layer in adapter_layers(model).values():
            layer.lora_B.zero_()
        backbone = model.from_slots(model.forward_sequence(slotted)[:, -1])
    assert relative_error(backbone, adapted) > 1e-3


def test_export_merge_writes_a_plain_backbone_that_model_na_loads(tmp_path):
    model, path = adapted_checkpoint(tmp_path, "nslora")
    destination = tmp_path / "merged.pt"
    assert main(["export-backbone", str(path), str(destination), "--merge"]) == 0
    payload = read_checkpoint(destination)
    assert payload["adapters"] is None and payload["model"]["config"]["adapter"] is None
    assert payload["state_dict_complete"] and payload["train"]["merged_adapters"] == "nslora"
    assert not any("lora_" in key for key in payload["state_dict"])
    # what model=na with model.pretrained=<file> builds: the architecture, then the backbone's weights
    config = {k: payload["model"]["config"][k] for k in ("preset", "layers", "dims", "channel_slots")}
    plain = assemble(config | {"pretrained": str(destination)}).eval()
    assert not adapter_layers(plain)
    frames = model.to_slots(torch.randn(1, 4, 16, 16, 3))
    with torch.no_grad():
        adapted, merged = model.forward_sequence(frames), plain.forward_sequence(frames)
    assert relative_error(merged, adapted) < 1e-5
    assert not adapter_layers(load_model(destination))


def test_export_merge_of_a_checkpoint_without_adapters_is_refused(tmp_path, capsys):
    path = tmp_path / "plain.pt"
    save_checkpoint(path, build_payload(assemble(dict(preset="tiny", layers=1, dims=[2]))))
    assert main(["export-backbone", str(path), str(tmp_path / "out.pt"), "--merge"]) == 2
    assert "no adapters to merge" in capsys.readouterr().err
    assert not (tmp_path / "out.pt").exists()
