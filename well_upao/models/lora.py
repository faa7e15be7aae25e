"""LoRA and NSLoRA adapters for ``nn.Linear`` layers of a frozen backbone (paper section 3.4, appendix
"NSLoRA Implementation Details").

For a frozen ``W0 (d_out x d_in)`` and trainable ``A (r x d_in)``, ``B (d_out x r)``:

* LoRA:    ``DeltaW = (alpha / r) B A``
* NSLoRA:  ``DeltaW = ||A||_F ||B||_F NS5(B) NS5(A)``, where ``NS_n(M)`` starts from ``X0 = M / (||M||_F + eps)``
  and applies ``n`` Newton-Schulz steps ``X <- a X + b (X X^T) X + c (X X^T)^2 X`` with Muon's coefficients
  ``(a, b, c) = (3.4445, -4.7750, 2.0315)``, on the transpose when ``M`` is tall (so ``X X^T`` is the small
  Gram matrix). The result's non-trivial singular values lie in a band around 1 (not exactly 1).

The forward never forms ``DeltaW``: ``y = W0 x + s * (x A'^T) B'^T`` with the (orthogonalised) factors.

Zero-initialised ``B`` (a case the paper leaves open): ``NS(0) = 0`` and ``||B||_F = 0`` give NSLoRA no
gradient signal for ``B`` (the normalisation's derivative is ``1/eps`` times a zero magnitude). A layer in NS
mode therefore uses the standard LoRA forward while ``||B||_F <= ns_min_norm`` (only possible at the very start:
NS from the first step); after the first update it runs the NS forward. The choice is a tensor ``where`` on the
factors, so the forward never reads a value back to the host (no synchronisation, ``torch.compile``-able); the
NS mode itself is a Python flag mirrored in the ``ns_active`` buffer that checkpoints store.

What a backbone offers adapters ([`AdaptableBackbone`][well_upao.models.lora.AdaptableBackbone]): ``adapter_core()``,
the named modules whose linear layers are wrapped and which are frozen, and ``core_parameters()``, further frozen
parameters of the core. Adapter settings and their defaults are ``ADAPTER_DEFAULTS``
([`resolve_adapter_config`][well_upao.models.lora.resolve_adapter_config]). When NS starts (the paper's switch after a
LoRA warm-up, or from the first step) is a training setting, not an adapter one.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import torch
from torch import nn
from torch.distributed.tensor import DTensor

from well_upao.distributed import whole_parameters

MUON_COEFFICIENTS = (3.4445, -4.7750, 2.0315)
DEFAULT_TARGETS = ("qkv", "proj", "gate_proj", "up_proj", "down_proj")
NORM_EPS = 1e-7


#: adapter settings: kind (lora | nslora), rank r, scale alpha, wrapped layer names, NS steps and precision
ADAPTER_DEFAULTS: dict[str, Any] = dict(
    kind="nslora",
    rank=16,
    alpha=32.0,
    targets=list(DEFAULT_TARGETS),
    ns_steps=5,
    ns_dtype="float32",  # float32 | bfloat16
)


class AdapterError(ValueError):
    """Invalid adapter request (rank, target names, mismatched backbone)."""


class AdaptableBackbone(Protocol):
    """What adapters need from a backbone (``NATransformer`` provides it)."""

    def adapter_core(self) -> dict[str, nn.Module]:
        """Named core modules: their linear layers get adapters, all their weights are frozen."""

    def core_parameters(self) -> list[nn.Parameter]:
        """Further parameters of the frozen core (outside those modules)."""


def resolve_adapter_config(adapter: dict | None) -> dict | None:
    """Adapter settings with defaults filled in (``None`` or empty: no adapters)."""
    if not adapter:
        return None
    spec = {**ADAPTER_DEFAULTS, **dict(adapter)}
    unknown = set(spec) - set(ADAPTER_DEFAULTS)
    if unknown:
        raise AdapterError(f"unknown adapter settings {sorted(unknown)}; known: {sorted(ADAPTER_DEFAULTS)}")
    if spec["kind"] not in ("lora", "nslora"):
        raise AdapterError(f"adapter kind must be 'lora' or 'nslora', got {spec['kind']!r}")
    if spec["ns_dtype"] not in ("float32", "bfloat16"):
        raise AdapterError(f"ns_dtype must be float32 or bfloat16, got {spec['ns_dtype']!r}")
    spec["targets"] = list(spec["targets"])
    return spec


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
        self.ns_mode = False  # mirrors ns_active without reading it back from the device
        #: ``(A, B, factors)``: the NS factors of the values ``A`` and ``B`` held when last computed without a graph
        self._kept_ns: tuple[torch.Tensor, torch.Tensor, tuple] | None = None

    @property
    def scaling(self) -> float:
        return self.alpha / self.rank

    def set_ns(self, active: bool) -> None:
        """Switch the NS forward on or off (flag and stored buffer)."""
        self.ns_mode = bool(active)
        self.ns_active.fill_(self.ns_mode)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs) -> None:
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        stored = state_dict.get(prefix + "ns_active")
        if stored is not None:
            self.ns_mode = bool(stored)

    def runs_ns(self) -> bool:
        """Whether the forward currently is NSLoRA's (reads ``||B||_F`` back: for reports, not for forwards)."""
        return self.ns_mode and float(self.lora_B.detach().norm()) > self.ns_min_norm

    def factors(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | float]:
        """``(A', B', s)`` with ``DeltaW = s B' A'``: LoRA's, or in NS mode NSLoRA's once ``||B||_F > ns_min_norm``
        (LoRA's before, chosen on the device). A forward that builds no graph through the factors on the CPU reuses
        the NS factors of the last such forward while ``A`` and ``B`` hold the same values (``kept_ns_factors``)."""
        if not self.ns_mode:
            return self.lora_A, self.lora_B, self.scaling
        if self.reuses_factors():
            return self.kept_ns_factors()
        return self.ns_factors()

    def reuses_factors(self) -> bool:
        """Whether this forward may reuse kept NS factors: no graph through the factors (no grad, or frozen
        factors), on the CPU and not sharded (comparing values reads them; a GPU forward never reads back), not
        under ``torch.compile``."""
        graph = torch.is_grad_enabled() and (self.lora_A.requires_grad or self.lora_B.requires_grad)
        local = self.lora_A.device.type == "cpu" and not isinstance(self.lora_A, DTensor)  # not a shard of FSDP2's
        return not graph and local and not torch.compiler.is_compiling()

    def kept_ns_factors(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``ns_factors()``, computed once for the values ``A`` and ``B`` hold: kept with a copy of them and reused
        while both are bitwise equal to it (a validation, an evaluation: one NS pass per layer instead of one per
        forward); any change (an optimizer step, a loaded state, another dtype) computes them again. The same
        numbers: NS is a deterministic function of ``A`` and ``B``."""
        a, b = self.lora_A.detach(), self.lora_B.detach()
        kept = self._kept_ns
        if kept is not None and all(
            old.shape == new.shape and old.dtype == new.dtype and torch.equal(old, new)
            for old, new in ((kept[0], a), (kept[1], b))
        ):
            return kept[2]
        with torch.no_grad():
            factors = self.ns_factors()
        self._kept_ns = (a.clone(), b.clone(), factors)
        return factors

    def ns_factors(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """NSLoRA's ``(A', B', s)``: ``(NS(A), NS(B), ||A||_F ||B||_F)`` once ``||B||_F > ns_min_norm``, else LoRA's
        (module docstring)."""
        norm_a, norm_b = safe_frobenius(self.lora_A), safe_frobenius(self.lora_B)
        a_hat = newton_schulz(self.lora_A, self.ns_steps, dtype=self.ns_dtype)
        b_hat = newton_schulz(self.lora_B, self.ns_steps, dtype=self.ns_dtype)
        started = norm_b > self.ns_min_norm
        return (
            torch.where(started, a_hat, self.lora_A),
            torch.where(started, b_hat, self.lora_B),
            torch.where(started, norm_a * norm_b, torch.full_like(norm_a, self.scaling)),
        )

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
        return f"rank={self.rank}, alpha={self.alpha}, ns_mode={self.ns_mode}"


def _core_modules(model: AdaptableBackbone) -> Iterable[tuple[str, nn.Module]]:
    return model.adapter_core().items()


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
    for parameter in model.core_parameters():
        parameter.requires_grad_(False)
    return wrapped


def attach_adapters(model: AdaptableBackbone, adapter: dict) -> dict:
    """Wrap ``model``'s core with the adapters ``adapter`` describes (defaults filled in); returns the settings."""
    spec = resolve_adapter_config(adapter)
    ns_dtype = getattr(torch, spec["ns_dtype"])
    inject_adapters(model, spec["rank"], spec["alpha"], spec["targets"], spec["ns_steps"], ns_dtype)
    if isinstance(getattr(model, "config", None), dict):
        model.config["adapter"] = spec  # what checkpoints record, so the model can be rebuilt
    return spec


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
        layer.set_ns(active)


def ns_active(model: nn.Module) -> bool:
    """Whether the model's adapters run the NS forward (all of them switch together)."""
    return any(layer.ns_mode for layer in adapter_layers(model).values())


def delta_norms(model: nn.Module) -> dict[str, float]:
    """``||DeltaW||_F`` of every adapter (of a model sharded with FSDP2 too: a collective there, the factors are
    gathered first)."""
    with torch.no_grad(), whole_parameters(model):
        return {name: float(layer.delta_weight().norm()) for name, layer in adapter_layers(model).items()}


def merge_adapters(model: nn.Module) -> nn.Module:
    """Replace every adapter by a plain linear layer holding ``W0 + DeltaW`` (in place)."""
    for name, layer in list(adapter_layers(model).items()):
        parent_name, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent_name), child, layer.merged())
    return model


def _tensor_bytes(tensor: torch.Tensor) -> bytes:
    return tensor.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes()


def backbone_sha256(model: nn.Module, state: dict[str, torch.Tensor] | None = None) -> str:
    """Hash of the frozen core weights (names without adapter wrapping), independent of the adapters: of the model's
    own tensors, or of ``state``, the model's whole state dict (e.g. gathered from the shards of an FSDP model)."""
    digest = hashlib.sha256()
    for prefix, core in _core_modules(model):
        if state is None:
            items = core.state_dict().items()
        else:
            items = [(key[len(prefix) + 1 :], value) for key, value in state.items() if key.startswith(prefix + ".")]
        for name, tensor in sorted(items):
            if "lora_" in name or name.endswith("ns_active"):
                continue
            digest.update(f"{prefix}.{name.replace('.base.', '.')}".encode())
            digest.update(_tensor_bytes(tensor))
    names = {id(parameter): name for name, parameter in model.named_parameters()}
    for parameter in model.core_parameters():
        digest.update(_tensor_bytes(parameter if state is None else state[names[id(parameter)]]))
    return digest.hexdigest()
