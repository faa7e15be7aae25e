"""LoRA / NSLoRA: the Newton-Schulz iteration, the update's definition and rank, freezing, checkpoints, errors."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from well_upao.models.assembly import assemble, load_model
from well_upao.models.checkpoint import CheckpointError, build_payload, save_checkpoint
from well_upao.models.lora import (
    MUON_COEFFICIENTS,
    AdapterError,
    LoRALinear,
    adapter_layers,
    backbone_sha256,
    merge_adapters,
    newton_schulz,
    set_ns_active,
)
from well_upao.models.na_transformer import NATransformer

#: Muon's quintic Newton-Schulz coefficients as published: K. Jordan et al., "Muon: An optimizer for hidden layers
#: in neural networks" (2024, kellerjordan.github.io/posts/muon, function ``zeropower_via_newtonschulz5``), the
#: paper's ref. [jordan2024muon] and its appendix "NSLoRA Implementation Details": (a, b, c) = (3.4445, -4.7750,
#: 2.0315). Written here, not imported, so that the code is checked against the source.
PUBLISHED_MUON = (3.4445, -4.7750, 2.0315)


def test_the_coefficients_are_muons_published_ones():
    assert tuple(MUON_COEFFICIENTS) == PUBLISHED_MUON


def test_one_newton_schulz_step_of_a_2x2_matrix_by_hand():
    """M = [[1, 2], [0, 2]], ||M||_F = 3, so X0 = M / 3. By hand (in ninths, 27ths, 81sts and 243rds):
    X0 X0^T = [[5, 4], [4, 4]] / 9; (X0 X0^T) X0 = [[5, 18], [4, 16]] / 27;
    (X0 X0^T)^2 = [[41, 36], [36, 32]] / 81; (X0 X0^T)^2 X0 = [[41, 154], [36, 136]] / 243;
    X1 = a X0 + b (X0 X0^T) X0 + c (X0 X0^T)^2 X0 with Muon's (a, b, c)."""
    a, b, c = PUBLISHED_MUON
    x0 = [[1 / 3, 2 / 3], [0.0, 2 / 3]]
    gram_x = [[5 / 27, 18 / 27], [4 / 27, 16 / 27]]
    gram2_x = [[41 / 243, 154 / 243], [36 / 243, 136 / 243]]
    expected = torch.tensor(
        [[a * x0[i][j] + b * gram_x[i][j] + c * gram2_x[i][j] for j in range(2)] for i in range(2)],
        dtype=torch.float64,
    )
    matrix = torch.tensor([[1.0, 2.0], [0.0, 2.0]], dtype=torch.float64)
    got = newton_schulz(matrix, steps=1, eps=0.0, dtype=torch.float64)
    torch.testing.assert_close(got, expected, atol=1e-12, rtol=0)


def reference_ns(matrix, steps=5, eps=1e-7):
    """The iteration written plainly, on the matrix itself (no transposition): X <- aX + b(XX^T)X + c(XX^T)^2 X."""
    a, b, c = PUBLISHED_MUON
    x = matrix.double() / (matrix.double().norm() + eps)
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + b * gram @ x + c * gram @ gram @ x
    return x


@pytest.mark.parametrize("shape", [(16, 96), (96, 16), (16, 16)])
def test_newton_schulz_matches_the_plain_iteration(shape):
    matrix = torch.randn(*shape, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(newton_schulz(matrix).double(), reference_ns(matrix), atol=2e-5, rtol=1e-4)


@pytest.mark.parametrize("shape", [(16, 768), (2304, 16), (16, 3072)])
def test_singular_values_land_in_a_band_around_one(shape):
    matrix = torch.randn(*shape, generator=torch.Generator().manual_seed(1))
    sigma = torch.linalg.svdvals(newton_schulz(matrix))
    assert sigma.min() > 0.6 and sigma.max() < 1.25  # Muon's coefficients: a band, not exactly 1
    assert (sigma - 1).abs().max() > 1e-3  # and indeed not exact orthogonality


def test_bfloat16_iteration_stays_close():
    matrix = torch.randn(16, 256, generator=torch.Generator().manual_seed(2))
    torch.testing.assert_close(newton_schulz(matrix, dtype=torch.bfloat16), newton_schulz(matrix), atol=0.05, rtol=0.1)


def adapter(d_in=64, d_out=48, rank=8, seed=0):
    torch.manual_seed(seed)
    layer = LoRALinear(nn.Linear(d_in, d_out), rank=rank, alpha=16.0)
    with torch.no_grad():
        layer.lora_B.normal_()
    return layer


def test_lora_and_nslora_updates_follow_the_definitions():
    layer = adapter()
    A, B = layer.lora_A.detach(), layer.lora_B.detach()
    torch.testing.assert_close(layer.delta_weight(), (16.0 / 8) * B @ A)
    set_ns_active(layer, True)
    expected = A.norm() * B.norm() * newton_schulz(B) @ newton_schulz(A)
    torch.testing.assert_close(layer.delta_weight(), expected)
    x = torch.randn(5, 64)
    torch.testing.assert_close(layer(x), layer.base(x) + x @ expected.T, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("ns", [False, True])
def test_the_update_never_exceeds_rank_r(ns):
    layer = adapter(d_in=96, d_out=80, rank=6)
    set_ns_active(layer, ns)
    assert torch.linalg.matrix_rank(layer.delta_weight().double(), rtol=1e-5) <= 6  # float32 rounding aside


def test_zero_initialised_b_gives_finite_gradients_and_a_working_start():
    torch.manual_seed(0)
    layer = LoRALinear(nn.Linear(32, 24), rank=4)
    x = torch.randn(8, 32)
    assert torch.equal(layer(x), layer.base(x))  # B = 0: the adapter starts as the identity update
    set_ns_active(layer, True)
    layer(x).square().sum().backward()
    assert torch.isfinite(layer.lora_A.grad).all() and torch.isfinite(layer.lora_B.grad).all()
    assert layer.lora_B.grad.abs().max() > 0  # the LoRA path at B = 0 lets B grow (ruling 5)
    # forcing the NS path itself at B = 0 is finite too (safe norms)
    a_hat = newton_schulz(layer.lora_A)
    b = layer.lora_B.detach().clone().requires_grad_(True)
    (torch.sqrt(b.square().sum() + 1e-30) * newton_schulz(b) @ a_hat).sum().backward()
    assert torch.isfinite(b.grad).all()


def tiny(**kwargs):
    """A small backbone, assembled with ``kwargs`` (``adapter``, ``pretrained``) as the model factory does."""
    torch.manual_seed(0)
    return assemble(dict(preset="tiny", channel_slots=[0, 1], dims=(2,), layers=2, **kwargs))


def test_injection_freezes_the_core_and_trains_adapters_and_codecs():
    model = tiny(adapter={"kind": "lora"})
    layers = adapter_layers(model)
    assert len(layers) == 2 * (3 * 2 + 3)  # per layer: 3 NA variants x (qkv, proj) + SwiGLU (gate, up, down)
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert all("lora_" in n or n.startswith(("encoders", "decoders")) for n in trainable)
    assert any(n.startswith("encoders") for n in trainable) and any(n.startswith("decoders") for n in trainable)
    core_before = backbone_sha256(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)  # all params, as the harness does
    frames = torch.zeros(2, 3, 16, 16, 18)
    frames[..., :2] = torch.randn(2, 3, 16, 16, 2)
    for _ in range(2):
        optimizer.zero_grad()
        model.forward_sequence(frames).square().mean().backward()
        optimizer.step()
    assert backbone_sha256(model) == core_before  # neither updated nor weight-decayed
    assert any(layer.lora_B.abs().max() > 0 for layer in layers.values())


def test_merge_gives_the_same_predictions():
    model = tiny(adapter={"kind": "nslora"}).eval()
    set_ns_active(model, True)
    with torch.no_grad():
        for layer in adapter_layers(model).values():
            layer.lora_B.normal_(0, 0.01)
    frames = torch.zeros(1, 4, 16, 16, 18)
    frames[..., :2] = torch.randn(1, 4, 16, 16, 2)
    with torch.no_grad():
        adapted = model.forward_sequence(frames)
        merged = merge_adapters(model).forward_sequence(frames)
    assert not adapter_layers(model)
    torch.testing.assert_close(merged, adapted, atol=1e-5, rtol=1e-4)


def test_adapter_checkpoints_are_slim_and_refuse_another_backbone(tmp_path):
    backbone = tiny()
    backbone_path = tmp_path / "backbone.pt"
    save_checkpoint(backbone_path, build_payload(backbone))
    adapted = tiny(adapter={"kind": "nslora"}, pretrained=str(backbone_path))
    with torch.no_grad():
        for layer in adapter_layers(adapted).values():
            layer.lora_B.normal_(0, 0.01)
    set_ns_active(adapted, True)
    path = tmp_path / "adapters.pt"
    save_checkpoint(path, build_payload(adapted))
    assert path.stat().st_size < 0.8 * backbone_path.stat().st_size
    rebuilt = load_model(path)  # rebuilds, reads the backbone file, checks its hash, loads adapters + codecs
    frames = torch.zeros(1, 3, 16, 16, 18)
    frames[..., :2] = torch.randn(1, 3, 16, 16, 2)
    with torch.no_grad():
        torch.testing.assert_close(rebuilt.eval().forward_sequence(frames), adapted.eval().forward_sequence(frames))
    assert all(bool(layer.ns_active) and layer.ns_mode for layer in adapter_layers(rebuilt).values())
    # another backbone under the same path: refused
    torch.manual_seed(1)
    other = NATransformer(preset="tiny", channel_slots=[0, 1], dims=(2,), layers=2)
    save_checkpoint(backbone_path, build_payload(other))
    with pytest.raises(CheckpointError, match="trained on another backbone"):
        load_model(path)


def test_bad_adapter_requests_are_explained():
    with pytest.raises(AdapterError, match=r"rank 97 must lie in 1..min\(d_in, d_out\) = 96"):
        tiny(adapter={"kind": "lora", "rank": 97})
    with pytest.raises(AdapterError, match=r"\['attn_out'\] match no linear layer"):
        tiny(adapter={"kind": "lora", "targets": ["qkv", "attn_out"]})
    with pytest.raises(AdapterError, match="unknown adapter settings"):
        tiny(adapter={"kind": "lora", "rnak": 4})
    with pytest.raises(AdapterError, match="kind must be"):
        tiny(adapter={"kind": "dora"})


def test_the_ns_forward_is_one_graph_without_reading_back_from_the_device():
    """NS mode is a Python flag and the zero-B rule a tensor ``where``: no host synchronisation per forward, so
    ``torch.compile`` traces it whole (it broke the graph when the mode was read from a buffer each call)."""
    layer = LoRALinear(torch.nn.Linear(8, 8), rank=2)
    layer.set_ns(True)
    explanation = torch._dynamo.explain(layer)(torch.randn(3, 8))
    assert explanation.graph_break_count == 0 and explanation.graph_count == 1


def test_a_forward_without_a_graph_reuses_the_ns_factors_while_a_and_b_hold_their_values(monkeypatch):
    """Without a graph through the factors (validation, evaluation) a layer computes NS once for the values ``A``
    and ``B`` hold and reuses it, with the same output as a fresh forward; an optimizer step (new values) computes
    them again, and a forward that trains never reuses them."""
    import well_upao.models.lora as lora

    torch.manual_seed(0)
    layer = LoRALinear(nn.Linear(12, 10), rank=3)
    layer.set_ns(True)
    with torch.no_grad():
        layer.lora_B.normal_()
    calls = []

    def counted(matrix, *args, **kwargs):
        calls.append(tuple(matrix.shape))
        return newton_schulz(matrix, *args, **kwargs)

    monkeypatch.setattr(lora, "newton_schulz", counted)
    x = torch.randn(4, 12)
    trained = layer(x)  # builds a graph: computes NS
    assert len(calls) == 2
    with torch.inference_mode():
        first, again = layer(x), layer(x)
    assert len(calls) == 4  # once for both forwards
    assert torch.equal(first, trained.detach()) and torch.equal(again, first)
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.5)
    trained.square().sum().backward()
    optimizer.step()
    with torch.no_grad():
        stepped = layer(x)
    assert len(calls) == 6
    fresh = layer(x)
    assert len(calls) == 8
    assert torch.equal(stepped, fresh.detach()) and not torch.equal(stepped, first)
