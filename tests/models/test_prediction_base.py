"""``base``: the network corrects persistence or a polynomial extrapolation of its history (issue 18)."""

from __future__ import annotations

import pytest
import torch

from well_upao.data.slots import N_SLOTS
from well_upao.models.assembly import assemble, load_model
from well_upao.models.checkpoint import CheckpointError, build_payload, read_checkpoint, save_checkpoint
from well_upao.models.na_transformer import NATransformer, extrapolate_history

SLOTS = [0, 1, 15]


def history(batch: int, steps: int, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    frames = torch.zeros(batch, steps, 16, 16, N_SLOTS)
    frames[..., SLOTS] = 3.0 + 2.0 * torch.randn(batch, steps, 16, 16, len(SLOTS), generator=generator)
    return frames


def perturbed(model: NATransformer) -> NATransformer:
    """Non-zero refinement weights, so the decoder's output is not trivially zero."""
    with torch.no_grad():
        for decoder in model.decoders.values():
            decoder.conv0.weight.normal_(0, 0.05)
            decoder.smooth[-1].weight.normal_(0, 0.05)
    return model.eval()


def test_extrapolation_is_exact_on_polynomials_of_its_order_and_falls_back_early():
    t = torch.arange(6, dtype=torch.float64).view(1, 6, 1)
    a, b, c = 1.5, -0.7, 0.3
    quadratic = a + b * t + c * t**2
    linear = a + b * t
    exact_next = a + b * (t + 1) + c * (t + 1) ** 2
    predicted = extrapolate_history(quadratic, 2)
    torch.testing.assert_close(predicted[:, 2:], exact_next[:, 2:], rtol=0, atol=1e-12)
    # too little history: tau = 0 persistence, tau = 1 the line through two frames
    torch.testing.assert_close(predicted[:, 0], quadratic[:, 0])
    torch.testing.assert_close(predicted[:, 1], 2 * quadratic[:, 1] - quadratic[:, 0])
    torch.testing.assert_close(extrapolate_history(linear, 1)[:, 1:], (a + b * (t + 1))[:, 1:], rtol=0, atol=1e-12)
    torch.testing.assert_close(extrapolate_history(quadratic, 0), quadratic)
    # a quadratic is not reproduced by the linear rule (the test above could not pass with order ignored)
    assert (extrapolate_history(quadratic, 1)[:, 2:] - exact_next[:, 2:]).abs().min() > 0.1


@pytest.mark.parametrize("base, order", [("extrap1", 1), ("extrap2", 2)])
@pytest.mark.parametrize("steps", [1, 2, 3, 6])
def test_an_untrained_correction_reproduces_the_extrapolation(base, order, steps):
    torch.manual_seed(0)
    model = NATransformer(preset="tiny", layers=1, dims=(2,), channel_slots=SLOTS, base=base).eval()
    frames = history(2, steps)
    with torch.no_grad():
        predicted = model.forward_sequence(frames)
    expected = extrapolate_history(frames, order)
    scale = frames[..., SLOTS].abs().max()
    torch.testing.assert_close(predicted, expected, rtol=0, atol=2e-6 * float(scale))
    # and the decoder is live: once its last layers have weights the prediction moves away from the base
    with torch.no_grad():
        for decoder in model.decoders.values():
            decoder.up2.weight.normal_(0, 0.05)
        assert (perturbed(model).forward_sequence(frames) - expected).abs().max() > 1e-3


def test_a_fresh_extrapolation_model_trains_its_whole_correction():
    """No saddle at the start: the first step's gradient reaches the decoder's zero layer, and after one Adam step
    the second reaches the Transformer core (a zero gain in front of a live decoder gave none to either)."""
    torch.manual_seed(0)
    model = NATransformer(preset="tiny", layers=1, dims=(2,), channel_slots=SLOTS, base="extrap2")
    frames = history(2, 5)
    target = frames[:, 1:] + 0.1 * torch.randn_like(frames[:, 1:]) * model.slot_mask()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step() -> dict[str, float]:
        optimizer.zero_grad()
        (model.forward_sequence(frames)[:, :-1] - target).pow(2).mean().backward()
        grads = {n: float(p.grad.abs().sum()) for n, p in model.named_parameters() if p.grad is not None}
        optimizer.step()
        return grads

    first = step()
    assert first["decoders.2.up2.weight"] > 0
    core = [name for name in first if name.startswith("blocks.")]
    assert core and all(first[name] == 0 for name in core)  # behind the zero layer: nothing yet
    second = step()
    assert all(second[name] > 0 for name in core if "lora_" not in name)


def test_last_and_none_keep_the_earlier_residual_flag_semantics():
    torch.manual_seed(0)
    last = perturbed(NATransformer(preset="tiny", layers=1, dims=(2,), channel_slots=SLOTS, base="last"))
    torch.manual_seed(0)
    legacy = perturbed(NATransformer(preset="tiny", layers=1, dims=(2,), channel_slots=SLOTS, residual_in_time=True))
    torch.manual_seed(0)
    none = perturbed(NATransformer(preset="tiny", layers=1, dims=(2,), channel_slots=SLOTS, residual_in_time=False))
    assert (last.config["base"], legacy.config["base"], none.config["base"]) == ("last", "last", "none")
    assert not hasattr(last, "correction_gain")  # the shipped backbone's state dict is unchanged
    frames = history(1, 4)
    with torch.no_grad():
        with_residual, plain = last.forward_sequence(frames), none.forward_sequence(frames)
        torch.testing.assert_close(legacy.forward_sequence(frames), with_residual)
    mask = last.slot_mask()
    mean = frames.mean(dim=(1, 2, 3), keepdim=True) * mask
    std = frames.std(dim=(1, 2, 3), keepdim=True, unbiased=False)
    std = torch.where(mask > 0, std, torch.ones_like(std)) + 1e-5
    # same decoder output; "last" adds the standardised input frame tau
    torch.testing.assert_close(with_residual - plain, (frames - mean) / std * std * mask, rtol=1e-4, atol=1e-4)


def test_contradicting_settings_and_unknown_bases_are_refused():
    with pytest.raises(ValueError, match="contradicts"):
        NATransformer(preset="tiny", base="extrap2", residual_in_time=False)
    with pytest.raises(ValueError, match="unknown base"):
        NATransformer(preset="tiny", base="cubic")


def test_a_backbone_trained_with_last_starts_extrap2_from_a_zero_correction():
    model = assemble(dict(preset="tiny", dims=[2], channel_slots=SLOTS, base="extrap2", pretrained="shipped"))
    shipped = read_checkpoint(model.config["pretrained"])["state_dict"]
    own = model.state_dict()
    assert all(torch.equal(own[name], tensor) for name, tensor in shipped.items() if name in own)
    assert torch.equal(model.correction_gain, torch.zeros(N_SLOTS))
    frames = history(1, 5)
    with torch.no_grad():
        torch.testing.assert_close(model.forward_sequence(frames), extrapolate_history(frames, 2), rtol=0, atol=2e-5)


def test_a_backbone_is_not_read_under_a_base_that_cannot_restart_its_correction(tmp_path):
    """An extrap2 backbone loaded by a `last` model would add a decoder trained as the extrapolation's correction to
    persistence (no gain to zero): refused, naming the base to set; an extrap1 model restarts from gain zero."""
    torch.manual_seed(0)
    source = NATransformer(preset="tiny", layers=1, dims=(2,), channel_slots=SLOTS, base="extrap2")
    path = tmp_path / "extrap2.pt"
    save_checkpoint(path, build_payload(source))
    with pytest.raises(CheckpointError, match=r"set model\.base=extrap2"):
        assemble(dict(preset="tiny", layers=1, dims=[2], channel_slots=SLOTS, base="last", pretrained=str(path)))
    model = assemble(dict(preset="tiny", layers=1, dims=[2], channel_slots=SLOTS, base="extrap1", pretrained=str(path)))
    assert torch.equal(model.correction_gain, torch.zeros(N_SLOTS))


def test_the_gain_trains_under_adapters_and_is_saved_with_them(tmp_path):
    """NSLoRA on a frozen backbone: the gain is trainable, the first step opens it, then the adapters learn; a slim
    checkpoint rebuilds the same model."""
    model = assemble(
        dict(
            preset="tiny",
            dims=[2],
            channel_slots=SLOTS,
            base="extrap2",
            pretrained="shipped",
            adapter={"kind": "nslora", "rank": 4},
        )
    )
    assert model.correction_gain.requires_grad
    frames = history(2, 5)
    target = frames[:, 1:] + 0.1 * torch.randn_like(frames[:, 1:]) * model.slot_mask()
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2)

    def step() -> dict[str, float]:
        optimizer.zero_grad()
        loss = (model.forward_sequence(frames)[:, :-1] - target).pow(2).mean()
        loss.backward()
        grads = {n: float(p.grad.abs().sum()) for n, p in model.named_parameters() if p.grad is not None}
        optimizer.step()
        return grads

    first = step()
    assert first["correction_gain"] > 0
    assert all(value == 0 for name, value in first.items() if "lora_" in name)  # the correction is still off
    second = step()
    assert sum(value for name, value in second.items() if "lora_" in name) > 0
    path = tmp_path / "adapted.pt"
    save_checkpoint(path, build_payload(model, epoch=1))
    payload = read_checkpoint(path)
    assert "correction_gain" in payload["state_dict"] and not payload["state_dict_complete"]
    reloaded = load_model(path).eval()
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(reloaded.forward_sequence(frames), model.forward_sequence(frames))
