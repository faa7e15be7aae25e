"""Sharding options in one process: per-layer activation checkpointing recomputes each layer and changes no
number, the options refuse what they cannot do, the Well's parameter norm is unchanged for unsharded models.
(Several processes: tests/trainers/test_fsdp.py.)"""

from __future__ import annotations

import pytest
import torch

from well_upao.models.na_transformer import NATransformer
from well_upao.trainers.sharding import ShardingOptions, checkpoint_layers


def loss_and_gradients(model: NATransformer, frames: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    model.zero_grad()
    loss = model(frames, None, sequence=True).square().mean()
    loss.backward()
    return loss.detach(), {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


def test_activation_checkpointing_recomputes_each_layer_with_the_same_gradients():
    torch.manual_seed(0)
    plain = NATransformer(preset="tiny", layers=2, dims=(2,))
    checkpointed = NATransformer(preset="tiny", layers=2, dims=(2,))
    checkpointed.load_state_dict(plain.state_dict())
    assert checkpoint_layers(checkpointed) == 2
    frames = torch.randn(2, 3, 16, 16, 18)
    calls = {"plain": 0, "checkpointed": 0}
    for name, model in (("plain", plain), ("checkpointed", checkpointed)):
        for block in model.blocks:
            block.mlp.register_forward_pre_hook(lambda *_, name=name: calls.__setitem__(name, calls[name] + 1))
    loss, gradients = loss_and_gradients(plain, frames)
    loss_checkpointed, gradients_checkpointed = loss_and_gradients(checkpointed, frames)
    assert calls == {"plain": 2, "checkpointed": 4}  # each layer once more, in the backward
    assert torch.equal(loss, loss_checkpointed)
    assert gradients.keys() == gradients_checkpointed.keys()
    for name, gradient in gradients.items():
        torch.testing.assert_close(gradients_checkpointed[name], gradient, rtol=1e-6, atol=1e-9)
    assert checkpoint_layers(checkpointed) == 2 and calls["checkpointed"] == 4  # applied once only


def test_sharding_options_refuse_what_they_cannot_do():
    settings = {"strategy": "fsdp", "mixed_precision": "bf16", "activation_checkpointing": True, "epochs": 3}
    options = ShardingOptions.pop_from(settings)
    assert options == ShardingOptions("fsdp", "bf16", True) and settings == {"epochs": 3}
    assert ShardingOptions.pop_from({}) == ShardingOptions("ddp", None, False)
    with pytest.raises(ValueError, match="strategy"):
        ShardingOptions("zero3")
    with pytest.raises(ValueError, match="mixed_precision"):
        ShardingOptions("fsdp", "fp8")
    with pytest.raises(ValueError, match="FSDP"):
        ShardingOptions("ddp", "bf16")


def test_the_wells_parameter_norm_is_unchanged_for_unsharded_models():
    from the_well.benchmark.trainer.training import param_norm

    from well_upao.harness.well_trainer import sharded_param_norm

    model = NATransformer(preset="tiny", layers=1, dims=(1,))
    assert sharded_param_norm(model.parameters()) == pytest.approx(param_norm(model.parameters()), rel=1e-15)
