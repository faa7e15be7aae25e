"""Weights of a one-frame model moved to a dataset with another number of channels (``trainer.init_from``)."""

from __future__ import annotations

import pytest
import torch

from well_upao.models.transfer import TransferError, adapt_state_dict


def test_input_and_output_projections_keep_shared_channels_and_zero_the_rest():
    history, c_src, c_tgt = 2, 2, 3
    source = {
        "lift.weight": torch.arange(4 * (history * c_src + 1), dtype=torch.float32).view(4, history * c_src + 1),
        "project.weight": torch.arange(c_src * 4, dtype=torch.float32).view(c_src, 4) + 100,
        "project.bias": torch.tensor([7.0, 8.0]),
        "core.weight": torch.ones(4, 4),
    }
    target = {
        "lift.weight": torch.empty(4, history * c_tgt + 1),
        "project.weight": torch.empty(c_tgt, 4),
        "project.bias": torch.empty(c_tgt),
        "core.weight": torch.empty(4, 4),
    }
    out, adapted = adapt_state_dict(source, target, c_src, c_tgt, history, constants=1)
    assert sorted(adapted) == ["lift.weight", "project.bias", "project.weight"]
    lift = out["lift.weight"].view(4, -1)
    # history step t, channel c sits at t * C + c; the constant field last
    for step in range(history):
        torch.testing.assert_close(
            lift[:, step * c_tgt : step * c_tgt + c_src], source["lift.weight"][:, step * 2 : step * 2 + 2]
        )
        assert torch.equal(lift[:, step * c_tgt + c_src], torch.zeros(4))  # the channel the source never saw
    torch.testing.assert_close(lift[:, -1], source["lift.weight"][:, -1])
    torch.testing.assert_close(out["project.weight"][:c_src], source["project.weight"])
    assert torch.equal(out["project.weight"][c_src:], torch.zeros(1, 4)) and out["project.bias"].tolist() == [7, 8, 0]
    assert torch.equal(out["core.weight"], source["core.weight"])


def test_fewer_target_channels_keep_the_first_and_other_architectures_are_refused():
    source = {"lift.weight": torch.randn(4, 3 * 3), "project.weight": torch.randn(3, 4)}
    target = {"lift.weight": torch.empty(4, 3 * 2), "project.weight": torch.empty(2, 4)}
    out, _ = adapt_state_dict(source, target, 3, 2, 3)
    torch.testing.assert_close(out["lift.weight"].view(4, 3, 2), source["lift.weight"].view(4, 3, 3)[..., :2])
    with pytest.raises(TransferError, match="another architecture"):
        adapt_state_dict(source, {"other.weight": torch.empty(1)}, 3, 2, 3)
    with pytest.raises(TransferError, match="neither"):
        adapt_state_dict({"w": torch.randn(4, 5)}, {"w": torch.empty(4, 7)}, 3, 2, 3)
