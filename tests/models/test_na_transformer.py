"""The NA Transformer: size of the paper preset, resolutions, causality, equivariance, routing, bad input."""

from __future__ import annotations

import pytest
import torch

from well_upao.data.slots import N_SLOTS, SlotError
from well_upao.models.na_transformer import (
    ModelInputError,
    NATransformer,
    aspect_variant,
    count_parameters,
)

torch.manual_seed(0)


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    model = NATransformer(preset="tiny", channel_slots=[0, 1, 15])
    # perturb the zero-initialised refinement so tests exercise every path
    with torch.no_grad():
        for decoder in model.decoders.values():
            decoder.conv0.weight.normal_(0, 0.01)
            decoder.smooth[-1].weight.normal_(0, 0.01)
    return model.eval()


def random_frames(batch, steps, *space, slots=(0, 1, 15), seed=0):
    generator = torch.Generator().manual_seed(seed)
    frames = torch.zeros(batch, steps, *space, N_SLOTS)
    frames[..., list(slots)] = torch.randn(batch, steps, *space, len(slots), generator=generator)
    return frames


def test_paper_preset_has_182m_parameters_in_2d(capsys):
    with torch.device("meta"):
        two_d = NATransformer(preset="paper", dims=(2,))
        full = NATransformer(preset="paper", dims=(1, 2, 3))
    count = count_parameters(two_d)
    assert abs(count - 182e6) / 182e6 < 0.05, count
    # 12 layers x (3 NA variants + SwiGLU) dominate, as the paper's "108 adapter layers" implies
    assert count_parameters(two_d.blocks) / count > 0.9
    with capsys.disabled():
        print(f"\n[paper preset] 2D-only: {count / 1e6:.1f}M parameters; 1D+2D+3D: {count_parameters(full) / 1e6:.1f}M")


@pytest.mark.parametrize(
    "space, steps",
    [((64, 64), 8), ((128, 128), 3), ((256, 256), 2), ((512, 128), 2), ((1024,), 8), ((64, 64, 64), 2)],
)
def test_same_weights_run_at_every_resolution(tiny, space, steps):
    slots = (0, 1, 15)
    frames = random_frames(1, steps, *space, slots=slots)
    with torch.no_grad():
        out = tiny.forward_sequence(frames)
    assert out.shape == frames.shape
    assert torch.isfinite(out).all()
    inactive = [i for i in range(N_SLOTS) if i not in slots]
    assert (out[..., inactive] == 0).all()


def test_prediction_is_causal_in_time(tiny):
    """Rolling frame 4 in space keeps every channel's window mean and std (the standardisation) unchanged, so
    outputs 0..3 must not move while outputs 4.. do."""
    frames = random_frames(2, 6, 32, 32)
    changed = frames.clone()
    changed[:, 4] = torch.roll(frames[:, 4], shifts=(5, 3), dims=(1, 2))
    with torch.no_grad():
        base, out = tiny.forward_sequence(frames), tiny.forward_sequence(changed)
    torch.testing.assert_close(out[:, :4], base[:, :4], atol=1e-5, rtol=1e-5)
    assert (out[:, 4:] - base[:, 4:]).abs().max() > 1e-3


def test_causal_attention_does_not_see_the_future():
    """Without the window-wide standardisation, output tau depends only on inputs <= tau."""
    model = NATransformer(preset="tiny", channel_slots=[0], dims=(1,), layers=2).eval()
    tokens = torch.randn(1, 6, 8, model.hidden, requires_grad=True)
    z = tokens
    for block in model.blocks:
        z = block(z, "1d", (5, 5))
    z[:, 2].sum().backward()
    assert tokens.grad[:, 3:].abs().max() == 0
    assert tokens.grad[:, :3].abs().max() > 0


def test_prediction_is_equivariant_to_affine_changes_of_units(tiny):
    """Per-sample, per-channel standardisation: model(a u + b) = a model(u) + b channel-wise (a > 0)."""
    frames = random_frames(2, 5, 32, 32, seed=4)
    scale = torch.ones(N_SLOTS)
    shift = torch.zeros(N_SLOTS)
    scale[[0, 1, 15]] = torch.tensor([3.0, 0.01, 250.0])
    shift[[0, 1, 15]] = torch.tensor([-2.0, 5.0, 1e3])
    with torch.no_grad():
        base = tiny.forward_sequence(frames)
        moved = tiny.forward_sequence(frames * scale + shift * (frames != 0))
    expected = base * scale + shift * (base != 0)
    torch.testing.assert_close(moved, expected, rtol=2e-3, atol=2e-3 * 250)


def test_inactive_slots_do_not_influence_active_outputs(tiny):
    frames = random_frames(1, 4, 32, 32)
    noisy = frames.clone()
    noisy[..., 5] = 7.0  # a slot outside the dataset's mask
    with torch.no_grad():
        torch.testing.assert_close(tiny.forward_sequence(frames), tiny.forward_sequence(noisy))


def test_shorter_histories_equal_prefix_predictions(tiny):
    """The shifted design: a history of any length <= T_in; entry tau uses frames <= tau only. The model
    standardises each channel over the whole window, so the longer window's later frames are spatial rolls of the
    prefix's frames (same per-channel mean and std over the window): then the predictions from the first ``steps``
    frames are exactly the first ``steps`` predictions from the whole window."""
    with torch.no_grad():
        for steps, total in ((1, 8), (3, 6), (4, 8)):
            prefix = random_frames(1, steps, 32, 32, seed=steps)
            later = [torch.roll(prefix[:, k % steps], shifts=(3 * k, 5 * k), dims=(1, 2)) for k in range(steps, total)]
            window = torch.cat([prefix, torch.stack(later, 1)], 1)
            short, full = tiny.forward_sequence(prefix), tiny.forward_sequence(window)
            assert short.shape[1] == steps and full.shape[1] == total
            torch.testing.assert_close(short, full[:, :steps], rtol=1e-5, atol=1e-5)
            assert (full[:, steps:] - short[:, -1:]).abs().max() > 1e-3  # the later entries do move


def test_aspect_ratio_routing_and_kernel_orientation():
    assert aspect_variant((4, 4)) == "2d_1_1"
    assert aspect_variant((8, 4)) == "2d_1_2"
    assert aspect_variant((4, 16)) == "2d_1_4"
    model = NATransformer(preset="tiny", channel_slots=[0], dims=(2,))
    assert model._route(2, (32, 8)) == ("2d_1_4", (5, 17, 5))
    assert model._route(2, (8, 16)) == ("2d_1_2", (5, 5, 9))
    assert set(model.blocks[0].attention) == {"2d_1_1", "2d_1_2", "2d_1_4"}


def test_harness_path_matches_forward_sequence(tiny):
    frames = random_frames(2, 8, 32, 32)
    dataset_frames = frames[..., [0, 1, 15]]
    x = dataset_frames.permute(0, 2, 3, 1, 4).reshape(2, 32, 32, 8 * 3)  # channels-last "(t c)"
    with torch.no_grad():
        expected = tiny.forward_sequence(frames)[:, -1][..., [0, 1, 15]]
        torch.testing.assert_close(tiny(x), expected)
        tiny.config["formatter"] = "channels_first_default"
        try:
            out = tiny(x.permute(0, 3, 1, 2))
        finally:
            tiny.config["formatter"] = "channels_last_default"
    torch.testing.assert_close(out, expected.permute(0, 3, 1, 2))


@pytest.mark.parametrize(
    "frames, message",
    [
        (torch.zeros(1, 2, 32, 32, 5), "18 slot channels"),
        (torch.zeros(1, 2, 30, 32, 18), "not divisible by the patch"),
        (torch.zeros(1, 9, 32, 32, 18), "history of 9 steps"),
        (torch.zeros(32, 18), "expected"),
    ],
)
def test_bad_input_is_explained(tiny, frames, message):
    with pytest.raises(ModelInputError, match=message):
        tiny.forward_sequence(frames)


def test_bad_configuration_is_explained():
    with pytest.raises(ModelInputError, match="dataset has 4 channels"):
        NATransformer(preset="tiny", channel_slots=[0, 1], dim_out=4)
    with pytest.raises(SlotError, match="exceed"):
        NATransformer(preset="tiny", dim_out=19)
    with pytest.raises(ModelInputError, match="longer than the model's T_in"):
        NATransformer(preset="tiny", channel_slots=[0], history=9)
    with pytest.raises(ValueError, match="data is 3D"):
        NATransformer(preset="tiny", channel_slots=[0], dims=(2,), n_spatial_dims=3)
    model = NATransformer(preset="tiny", channel_slots=[0], dims=(2,))
    with pytest.raises(ModelInputError, match="1D input"):
        model.forward_sequence(torch.zeros(1, 2, 32, 18))


def test_the_decoder_smooths_only_the_read_slots_with_the_same_numbers(tiny, monkeypatch):
    """The last smoothing convolution computes only the slots the mask keeps (``active_slots``); every output and
    every gradient equals the whole decoder's (reference: the same model with the restriction switched off), on a
    per-sample mask whose slots differ between the samples too (their union is computed)."""
    import well_upao.models.na_transformer as module

    model = NATransformer(preset="tiny", channel_slots=[0, 1, 15]).train()
    model.load_state_dict(tiny.state_dict())
    frames = random_frames(2, 3, 16, 16)
    mask = torch.zeros(2, N_SLOTS)
    mask[0, [0, 1]], mask[1, [0, 15]] = 1, 1

    def run(restrict: bool):
        if not restrict:
            monkeypatch.setattr(module, "active_slots", lambda mask: None)
        model.zero_grad()
        out = model.forward_sequence(frames, mask)
        out.square().sum().backward()
        monkeypatch.undo()
        grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
        return out.detach(), grads

    whole, whole_grads = run(False)
    restricted, restricted_grads = run(True)
    torch.testing.assert_close(restricted, whole, rtol=1e-6, atol=1e-7)
    assert whole[1, ..., 1].abs().max() == 0 and whole[0, ..., 1].abs().max() > 0  # slot 1 of sample 0 only
    assert whole_grads.keys() == restricted_grads.keys()
    for name, grad in whole_grads.items():
        torch.testing.assert_close(restricted_grads[name], grad, rtol=1e-5, atol=1e-9, msg=name)
    assert module.active_slots(mask) == [0, 1, 15]
    assert module.active_slots(torch.ones(1, N_SLOTS)) == list(range(N_SLOTS))
