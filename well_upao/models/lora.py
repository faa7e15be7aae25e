"""LoRA and NSLoRA adapters for ``nn.Linear`` layers of a frozen backbone (paper section 3.4, appendix
"NSLoRA Implementation Details").

For a frozen ``W0 (d_out x d_in)`` and trainable ``A (r x d_in)``, ``B (d_out x r)``:

* LoRA:    ``DeltaW = (alpha / r) B A``
* NSLoRA:  ``DeltaW = ||A||_F ||B||_F NS5(B) NS5(A)``, where ``NS_n(M)`` starts from ``X0 = M / (||M||_F + eps)``
  and applies ``n`` Newton-Schulz steps ``X <- a X + b (X X^T) X + c (X X^T)^2 X`` with Muon's coefficients
  ``(a, b, c) = (3.4445, -4.7750, 2.0315)``, on the transpose when ``M`` is tall (so ``X X^T`` is the small
  Gram matrix). The result's non-trivial singular values lie in a band around 1 (not exactly 1).

The forward never forms ``DeltaW``: ``y = W0 x + s * (x A'^T) B'^T`` with the (orthogonalised) factors.

Zero-initialised ``B`` (ruling 5 of paper-decisions.md): ``NS(0) = 0`` and ``||B||_F = 0`` give NSLoRA no
gradient signal for ``B`` (the normalisation's derivative is ``1/eps`` times a zero magnitude). A layer in NS
mode therefore uses the standard LoRA forward while ``||B||_F <= ns_min_norm`` (only possible at the very start:
``nslora_from_start``); after the first update it runs the NS forward. Gradients are finite either way (norms
are computed as ``sqrt(sum + tiny)``).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence

import torch
from torch import nn

MUON_COEFFICIENTS = (3.4445, -4.7750, 2.0315)
DEFAULT_TARGETS = ("qkv", "proj", "gate_proj", "up_proj", "down_proj")
NORM_EPS = 1e-7


class AdapterError(ValueError):
    """Invalid adapter request (rank, target names, mismatched backbone)."""


def safe_frobenius(matrix: torch.Tensor) -> torch.Tensor:
    """``||M||_F`` with a finite gradient at 0."""
    return torch.sqrt(matrix.square().sum() + 1e-30)


def newton_schulz(
    matrix: torch.Tensor,
    steps: int = 5,
    coefficients: Sequence[float] = MUON_COEFFICIENTS,
    eps: float = NORM_EPS,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """``NS_steps(M)``: approximately semi-orthogonal factor of ``M`` (same shape), computed in ``dtype``."""
    a, b, c = coefficients
    x = matrix.to(dtype)
    x = x / (safe_frobenius(x) + eps)
    tall = x.shape[0] > x.shape[1]
    if tall:
        x = x.T
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * gram @ gram) @ x
    if tall:
        x = x.T
    return x.to(matrix.dtype)


class LoRALinear(nn.Module):
    """A frozen ``nn.Linear`` plus a rank-``r`` LoRA / NSLoRA update (``mode``: ``"lora"`` or ``"nslora"``)."""

    def __init__(
        self,
        base: nn.Linear,
        rank: int = 16,
        alpha: float = 32.0,
        ns_steps: int = 5,
        ns_dtype: torch.dtype = torch.float32,
        ns_min_norm: float = 1e-12,
    ):
        super().__init__()
        d_out, d_in = base.weight.shape
        if not 1 <= rank <= min(d_in, d_out):
            raise AdapterError(
                f"LoRA rank {rank} must lie in 1..min(d_in, d_out) = {min(d_in, d_out)} for {d_in}->{d_out}"
            )
        self.base = base
        for parameter in self.base.parameters():
            parameter.requires_grad_(False)
        self.rank, self.alpha = int(rank), float(alpha)
        self.ns_steps, self.ns_dtype, self.ns_min_norm = int(ns_steps), ns_dtype, float(ns_min_norm)
        factory = dict(device=base.weight.device, dtype=base.weight.dtype)
        self.lora_A = nn.Parameter(torch.empty(rank, d_in, **factory))
        self.lora_B = nn.Parameter(torch.zeros(d_out, rank, **factory))
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        self.register_buffer("ns_active", torch.zeros((), dtype=torch.bool, device=base.weight.device))

    @property
    def scaling(self) -> float:
        return self.alpha / self.rank

    def uses_ns(self) -> bool:
        return bool(self.ns_active) and float(self.lora_B.detach().norm()) > self.ns_min_norm

    def factors(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | float]:
        """``(A', B', s)`` with ``DeltaW = s B' A'``."""
        if self.uses_ns():
            magnitude = safe_frobenius(self.lora_A) * safe_frobenius(self.lora_B)
            a_hat = newton_schulz(self.lora_A, self.ns_steps, dtype=self.ns_dtype)
            b_hat = newton_schulz(self.lora_B, self.ns_steps, dtype=self.ns_dtype)
            return a_hat, b_hat, magnitude
        return self.lora_A, self.lora_B, self.scaling

    def delta_weight(self) -> torch.Tensor:
        a, b, s = self.factors()
        return s * (b @ a)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b, s = self.factors()
        return self.base(x) + s * ((x @ a.T) @ b.T)

    def merged(self) -> nn.Linear:
        """A plain ``nn.Linear`` with ``W0 + DeltaW`` (for inference)."""
        merged = nn.Linear(self.base.in_features, self.base.out_features, bias=self.base.bias is not None)
        merged = merged.to(self.base.weight.device, self.base.weight.dtype)
        with torch.no_grad():
            merged.weight.copy_(self.base.weight + self.delta_weight())
            if self.base.bias is not None:
                merged.bias.copy_(self.base.bias)
        return merged

    def extra_repr(self) -> str:
        return f"rank={self.rank}, alpha={self.alpha}, ns_active={bool(self.ns_active)}"


def _core_modules(model: nn.Module) -> Iterable[tuple[str, nn.Module]]:
    """The frozen Transformer core of a well-upao backbone: its layers and final norm."""
    yield "blocks", model.blocks
    yield "final_norm", model.final_norm


def inject_adapters(
    model: nn.Module,
    rank: int = 16,
    alpha: float = 32.0,
    targets: Sequence[str] = DEFAULT_TARGETS,
    ns_steps: int = 5,
    ns_dtype: torch.dtype = torch.float32,
) -> list[str]:
    """Wrap every ``nn.Linear`` of the core whose name ends in one of ``targets``; freeze the core (layers,
    final norm, time embedding) and keep encoders/decoders trainable. Returns the wrapped module names."""
    wrapped = []
    for prefix, core in _core_modules(model):
        for name, module in list(core.named_modules()):
            for child_name, child in list(module.named_children()):
                if isinstance(child, nn.Linear) and child_name in targets:
                    setattr(module, child_name, LoRALinear(child, rank, alpha, ns_steps, ns_dtype))
                    wrapped.append(".".join(p for p in (prefix, name, child_name) if p))
    matched = {w.rsplit(".", 1)[-1] for w in wrapped}
    unmatched = [t for t in targets if t not in matched]
    if unmatched:
        raise AdapterError(
            f"adapter targets {unmatched} match no linear layer of the core; available: {sorted(linear_names(model))}"
        )
    for _, core in _core_modules(model):
        for parameter_name, parameter in core.named_parameters():
            if "lora_" not in parameter_name:
                parameter.requires_grad_(False)
    model.time_embedding.requires_grad_(False)
    return wrapped


def linear_names(model: nn.Module) -> set[str]:
    return {
        name.rsplit(".", 1)[-1]
        for _, core in _core_modules(model)
        for name, m in core.named_modules()
        if isinstance(m, nn.Linear)
    }


def adapter_layers(model: nn.Module) -> dict[str, LoRALinear]:
    return {name: m for name, m in model.named_modules() if isinstance(m, LoRALinear)}


def set_ns_active(model: nn.Module, active: bool) -> None:
    for layer in adapter_layers(model).values():
        layer.ns_active.fill_(active)


def delta_norms(model: nn.Module) -> dict[str, float]:
    with torch.no_grad():
        return {name: float(layer.delta_weight().norm()) for name, layer in adapter_layers(model).items()}


def merge_adapters(model: nn.Module) -> nn.Module:
    """Replace every adapter by a plain linear layer holding ``W0 + DeltaW`` (in place)."""
    for name, layer in list(adapter_layers(model).items()):
        parent_name, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent_name), child, layer.merged())
    return model


def _tensor_bytes(tensor: torch.Tensor) -> bytes:
    return tensor.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes()


def backbone_sha256(model: nn.Module) -> str:
    """Hash of the frozen core weights (names without adapter wrapping), independent of the adapters."""
    digest = hashlib.sha256()
    for prefix, core in _core_modules(model):
        for name, tensor in sorted(core.state_dict().items()):
            if "lora_" in name or name.endswith("ns_active"):
                continue
            digest.update(f"{prefix}.{name.replace('.base.', '.')}".encode())
            digest.update(_tensor_bytes(tensor))
    digest.update(_tensor_bytes(model.time_embedding))
    return digest.hexdigest()
