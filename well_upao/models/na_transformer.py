"""The NA Transformer backbone of the paper (section "Architecture", appendix tables "Hyperparameters" and
"NA variants for 2D inputs").

Data flow for a history ``U = [u_1 .. u_T]`` (``T <= T_in``) in the unified 18-slot representation:

1. per-sample, per-channel standardisation ``U~ = (U - mu) / (sigma + eps)`` over time and space (inactive
   slots: ``mu = 0``, ``sigma = 1``, then zeroed by the mask);
2. a dimension-specific patch encoder per frame (two strided convolutions with a residual block) ->
   tokens ``(T, N_1/p, ..., N_d/p, H)``, plus a learned embedding of the position in the history window;
3. ``L`` pre-norm layers ``z += NA_d(RMSNorm(z)); z += SwiGLU(RMSNorm(z))``. ``NA_d`` is neighborhood attention
   over ``(t, x_1..x_d)`` windows (temporal kernel ``k_t``, causal; spatial kernel ``k``, bidirectional), with
   unshared weights per dimensionality and, in 2D, three aspect-ratio variants (``k x k``, ``k x (2k-1)``,
   ``k x (4k-3)``: 5x5, 5x9, 5x17) routed by the token grid's aspect ratio; RMSNorm and SwiGLU are shared;
4. a dimension-specific decoder (transposed convolutions, ``I + Conv0`` refinement, post-smoothing) ->
   ``T`` frames; frame ``tau`` predicts ``u_{tau+1}`` (the shifted design) as a classical *base* prediction
   plus the decoder's correction (``base``; the paper is silent, see below);
5. the inverse standardisation ``u^ = (sigma + eps) u~ + mu``; inactive slots are zero.

Prediction bases (``base``), all on the standardised frames ``u~``; position ``tau`` uses only ``u~_0..u~_tau``:

* ``last`` (default; earlier versions' ``residual_in_time=True``): ``u~_{tau+1} = u~_tau + D``;
* ``extrap1``: ``u~_{tau+1} = 2 u~_tau - u~_{tau-1} + g * D`` (linear extrapolation of the history);
* ``extrap2``: ``u~_{tau+1} = 3 u~_tau - 3 u~_{tau-1} + u~_{tau-2} + g * D`` (quadratic extrapolation);
* ``none`` (``residual_in_time=False``): ``u~_{tau+1} = D``.

Positions with too little history fall back to the highest order they allow (``tau = 0``: persistence,
``tau = 1``: linear). ``D`` is the decoder output and ``g`` a trainable per-slot gain that starts at zero, so an
untrained correction reproduces the extrapolation exactly, also on top of a backbone pretrained with ``last``
(whose decoder predicts a whole increment and would otherwise spoil the better base).

Two call paths (INTERFACES.md section 3): ``forward(x)`` keeps The Well's harness contract (formatted history
in, next frame out, in the dataset's own channels) and ``forward_sequence(frames, mask)`` takes 18-slot physical
frames ``(B, T, *space, 18)`` and returns the ``T`` shifted predictions.

The constructor builds layers only (a test can make one with no dataset on disk). Reading a dataset's channels is
the harness's model factory (``well_upao.harness.model_factory``); starting from a pretrained backbone and adding
adapters is ``well_upao.models.assembly``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from einops import rearrange
from torch import nn

from well_upao.data.slot_inventory import N_SLOTS, SlotError
from well_upao.models.checkpoint import legacy_base
from well_upao.models.kinds import ModelKind
from well_upao.models.layers import NeighborhoodAttention, PatchDecoder, PatchEncoder, SwiGLU

#: the history window T_in of every preset (paper appendix, table "Hyperparameters of the NA Transformer
#: backbone"): frames in, shifted predictions out; also the history of evaluations whose rows do not say
T_IN = 8

PRESETS: dict[str, dict[str, Any]] = {
    # the paper's backbone (appendix table "Hyperparameters of the NA Transformer backbone")
    "paper": dict(hidden=768, layers=12, heads=12, patch=16, kernel=5, temporal_kernel=5, n_steps_input=T_IN),
    # CPU presets that train on 2 cores
    "small": dict(hidden=192, layers=6, heads=6, patch=16, kernel=5, temporal_kernel=5, n_steps_input=T_IN),
    "tiny": dict(hidden=96, layers=4, heads=4, patch=8, kernel=5, temporal_kernel=5, n_steps_input=T_IN),
}
#: 2D aspect-ratio variants: (upper bound of the token-grid aspect ratio, name, long-axis kernel multiplier)
ASPECT_VARIANTS = ((1.5, "2d_1_1", 1), (3.0, "2d_1_2", 2), (math.inf, "2d_1_4", 4))
STD_EPS = 1e-5
#: prediction bases -> polynomial order of the extrapolation of the history (None: no base, decoder output only)
BASES: dict[str, int | None] = {"none": None, "last": 0, "extrap1": 1, "extrap2": 2}


def resolve_base(base: str | None, residual_in_time: bool | None) -> str:
    """The prediction base from ``base`` and the earlier flag ``residual_in_time`` (True = ``last``)."""
    legacy = legacy_base(residual_in_time)
    if base is None:
        return legacy or "last"
    if base not in BASES:
        raise ValueError(f"unknown base {base!r}; choose from {sorted(BASES)}")
    if legacy is not None and legacy != base:
        raise ValueError(f"residual_in_time={residual_in_time} contradicts base={base!r}; set base only")
    return base


def extrapolation_weights(order: int) -> tuple[float, ...]:
    """The weights of ``u_t, u_{t-1}, .., u_{t-order}`` in the polynomial of degree ``order`` through those frames,
    evaluated one step ahead (Newton's backward differences): ``w_j = (-1)^j C(order + 1, j + 1)``; ``(1,)``,
    ``(2, -1)``, ``(3, -3, 1)``, ``(4, -6, 4, -1)``, ..."""
    if order < 0:
        raise ValueError(f"extrapolation order must be >= 0, got {order}")
    return tuple(float((-1) ** j * math.comb(order + 1, j + 1)) for j in range(order + 1))


def extrapolate_history(frames: torch.Tensor, order: int) -> torch.Tensor:
    """Shifted extrapolation ``(B, T, ...) -> (B, T, ...)``: entry ``tau`` extrapolates ``frames[:, :tau+1]`` one
    step ahead with the polynomial of degree ``min(order, tau)`` through its last frames
    (``extrapolation_weights``): degree 0 ``u_tau``; 1 ``2 u_tau - u_{tau-1}``; 2 ``3 u_tau - 3 u_{tau-1} +
    u_{tau-2}``; any degree the same way."""
    if order < 0:
        raise ValueError(f"extrapolation order must be >= 0, got {order}")
    base = frames
    for degree in range(1, min(order, frames.shape[1] - 1) + 1):
        weights = extrapolation_weights(degree)
        steps = frames.shape[1] - degree
        polynomial = weights[0] * frames[:, degree:]
        for j, weight in enumerate(weights[1:], 1):
            polynomial = polynomial + weight * frames[:, degree - j : degree - j + steps]
        base = torch.cat([base[:, :degree], polynomial], dim=1)
    return base


class ModelInputError(ValueError):
    """Input the backbone cannot process (shape, channels, resolution, history length)."""


def aspect_variant(token_grid: Sequence[int]) -> str:
    """Name of the 2D NA variant for a token grid (aspect ratio = long / short side)."""
    ratio = max(token_grid) / min(token_grid)
    for bound, name, _ in ASPECT_VARIANTS:
        if ratio < bound:
            return name
    raise AssertionError("unreachable")


class NALayer(nn.Module):
    """One pre-norm layer: dimension-specific NA variants, shared RMSNorms and SwiGLU."""

    def __init__(self, hidden: int, heads: int, kernel: int, temporal_kernel: int, dims: Sequence[int], backend: str):
        super().__init__()
        self.norm1 = nn.RMSNorm(hidden)
        self.norm2 = nn.RMSNorm(hidden)
        self.mlp = SwiGLU(hidden, 4 * hidden)
        attention = {}
        if 1 in dims:
            attention["1d"] = NeighborhoodAttention(hidden, heads, (temporal_kernel, kernel), backend)
        if 2 in dims:
            for _, name, multiplier in ASPECT_VARIANTS:
                long_kernel = multiplier * (kernel - 1) + 1
                attention[name] = NeighborhoodAttention(hidden, heads, (temporal_kernel, kernel, long_kernel), backend)
        if 3 in dims:
            attention["3d"] = NeighborhoodAttention(hidden, heads, (temporal_kernel, kernel, kernel, kernel), backend)
        self.attention = nn.ModuleDict(attention)

    def forward(self, z: torch.Tensor, variant: str, kernel: Sequence[int]) -> torch.Tensor:
        z = z + self.attention[variant](self.norm1(z), kernel)
        return z + self.mlp(self.norm2(z))


class NATransformer(nn.Module):
    """Neighborhood-attention Transformer over the unified 18-slot representation (see module docstring).

    Harness arguments (``n_spatial_dims, spatial_resolution, dim_in, dim_out``) come from
    ``the_well.benchmark.train``; ``preset`` picks the size (``paper``, ``small``, ``tiny``) and any explicit
    size argument overrides it. ``channel_slots`` (the dataset's channel-to-slot map, which the harness's model
    factory reads from the dataset), ``history`` and ``formatter`` serve the harness call path ``forward(x)``.
    ``attention_backend`` names the neighborhood-attention backend of every layer (``auto``, ``tiles``, ``flex``,
    ``natten``: ``well_upao.models.neighborhood_attention``); it changes how the attention is computed, not what.
    """

    model_kind = ModelKind.SEQUENCE

    def __init__(
        self,
        n_spatial_dims: int | None = None,
        spatial_resolution: Sequence[int] | None = None,
        dim_in: int | None = None,
        dim_out: int | None = None,
        preset: str = "tiny",
        hidden: int | None = None,
        layers: int | None = None,
        heads: int | None = None,
        patch: int | None = None,
        kernel: int | None = None,
        temporal_kernel: int | None = None,
        n_steps_input: int | None = None,
        encoder_width: int | None = None,
        dims: Sequence[int] = (1, 2, 3),
        channel_slots: Sequence[int] | None = None,
        history: int | None = None,
        formatter: str = "channels_last_default",
        base: str | None = None,
        residual_in_time: bool | None = None,
        attention_backend: str = "auto",
    ):
        super().__init__()
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; choose from {sorted(PRESETS)}")
        size = dict(PRESETS[preset])
        explicit = {"hidden": hidden, "layers": layers, "heads": heads, "patch": patch, "kernel": kernel}
        explicit |= {"temporal_kernel": temporal_kernel, "n_steps_input": n_steps_input}
        size |= {name: int(value) for name, value in explicit.items() if value is not None}
        size["encoder_width"] = int(encoder_width) if encoder_width is not None else size["hidden"] // 2
        dims = tuple(sorted({int(d) for d in dims}))
        if not set(dims) <= {1, 2, 3}:
            raise ValueError(f"dims must be a subset of (1, 2, 3), got {dims}")
        if n_spatial_dims is not None and int(n_spatial_dims) not in dims:
            raise ValueError(f"the data is {n_spatial_dims}D but the model instantiates dims {dims}")
        if formatter not in ("channels_last_default", "channels_first_default"):
            raise ValueError(f"formatter must be channels_last_default or channels_first_default, got {formatter!r}")

        if channel_slots is not None:
            channel_slots = [int(s) for s in channel_slots]
            if len(channel_slots) > N_SLOTS or len(set(channel_slots)) != len(channel_slots):
                raise SlotError(f"{len(channel_slots)} channels cannot map one-to-one onto {N_SLOTS} slots")
            if dim_out is not None and int(dim_out) != len(channel_slots):
                raise ModelInputError(f"the dataset has {dim_out} channels but the slot map lists {len(channel_slots)}")
        elif dim_out is not None and int(dim_out) > N_SLOTS:
            raise SlotError(f"{dim_out} channels exceed the {N_SLOTS} slots of the unified representation")
        if history is not None and int(history) > size["n_steps_input"]:
            raise ModelInputError(
                f"history of {history} steps is longer than the model's T_in = {size['n_steps_input']}"
            )

        self.config: dict[str, Any] = dict(
            preset=preset,
            **size,
            dims=list(dims),
            n_spatial_dims=None if n_spatial_dims is None else int(n_spatial_dims),
            spatial_resolution=None if spatial_resolution is None else [int(n) for n in spatial_resolution],
            channel_slots=channel_slots,
            history=None if history is None else int(history),
            formatter=formatter,
            base=resolve_base(base, residual_in_time),
            attention_backend=attention_backend,
        )
        hidden, patch = size["hidden"], size["patch"]
        self.hidden, self.patch, self.t_in = hidden, patch, size["n_steps_input"]
        self.channel_slots = channel_slots
        self.base = self.config["base"]
        self.encoders = nn.ModuleDict(
            {str(d): PatchEncoder(d, N_SLOTS, hidden, size["encoder_width"], patch) for d in dims}
        )
        self.decoders = nn.ModuleDict(
            {str(d): PatchDecoder(d, N_SLOTS, hidden, size["encoder_width"], patch, 7 if d < 3 else 3) for d in dims}
        )
        self.time_embedding = nn.Parameter(torch.randn(self.t_in, hidden) * 0.02)
        self.blocks = nn.ModuleList(
            NALayer(hidden, size["heads"], size["kernel"], size["temporal_kernel"], dims, attention_backend)
            for _ in range(size["layers"])
        )
        self.final_norm = nn.RMSNorm(hidden)
        #: the prior this model predicts instead of its network when a selection kept it (``trainer.trust_window``):
        #: -1 none (the network), else the polynomial order of the extrapolation of the window (0 persistence, 1
        #: linear, 2 quadratic, ...; ``extrapolate_history``). A buffer, so every loader restores it.
        self.register_buffer("prior_order", torch.tensor(-1))
        self._prior = -1
        if self.base in ("extrap1", "extrap2"):
            # u_{t+1} = extrapolation + gain * correction, per slot. A fresh model starts with gain 1 and the
            # decoders' last up-sampling at zero (their refinements start at zero already), so its correction is
            # exactly zero and the first step trains that layer; a zero gain in front of a live decoder would be a
            # saddle (each factor's gradient is proportional to the other), where pretraining from scratch stalled
            # at the extrapolation. A backbone trained with another base loads with gain 0 instead
            # (``assembly.load_backbone_weights``): its decoder is trained, the gain opens at the first step.
            self.correction_gain = nn.Parameter(torch.ones(N_SLOTS))
            for decoder in self.decoders.values():
                nn.init.zeros_(decoder.up2.weight)
                nn.init.zeros_(decoder.up2.bias)

    # ------------------------------------------------------------------ what adapters wrap (lora.AdaptableBackbone)
    def adapter_core(self) -> dict[str, nn.Module]:
        """The Transformer core: its NA layers and final norm (encoders and decoders are not part of it)."""
        return {"blocks": self.blocks, "final_norm": self.final_norm}

    def core_parameters(self) -> list[nn.Parameter]:
        """The core's parameters outside those modules: the history-position embedding."""
        return [self.time_embedding]

    # ------------------------------------------------------------------ slots
    def slot_mask(self, device: torch.device | None = None) -> torch.Tensor:
        """Float mask ``(18,)`` of the dataset's active slots (all ones when no dataset is attached)."""
        mask = torch.zeros(N_SLOTS, device=device)
        if self.channel_slots is None:
            return mask + 1
        mask[self.channel_slots] = 1
        return mask

    def to_slots(self, fields: torch.Tensor) -> torch.Tensor:
        """Dataset channels ``(..., C)`` -> 18 slots ``(..., 18)``, zeros elsewhere."""
        slots = self._require_slots(fields.shape[-1])
        out = fields.new_zeros(*fields.shape[:-1], N_SLOTS)
        out[..., slots] = fields
        return out

    def from_slots(self, slotted: torch.Tensor) -> torch.Tensor:
        """18 slots ``(..., 18)`` -> dataset channels ``(..., C)``."""
        return slotted[..., self._require_slots(None)]

    def _require_slots(self, n_channels: int | None) -> list[int]:
        if self.channel_slots is None:
            raise ModelInputError("no dataset attached: build the model with its channel_slots")
        if n_channels is not None and n_channels != len(self.channel_slots):
            raise ModelInputError(
                f"input has {n_channels} channels, the dataset's slot map has {len(self.channel_slots)}"
            )
        return self.channel_slots

    # ------------------------------------------------------------------ core
    def forward_sequence(self, frames: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Shifted prediction on the unified representation.

        Args:
            frames: ``(B, T, *space, 18)`` physical values, ``1 <= T <= T_in``.
            mask: active slots, ``(18,)`` or ``(B, 18)`` (default: the attached dataset's slots).
        Returns:
            ``(B, T, *space, 18)``: entry ``tau`` predicts frame ``tau + 1``; the last entry is the next step.
        """
        if frames.ndim < 4:
            raise ModelInputError(f"expected (B, T, *space, 18), got shape {tuple(frames.shape)}")
        batch, steps, *space, channels = frames.shape
        dims = len(space)
        if channels != N_SLOTS:
            raise ModelInputError(f"expected {N_SLOTS} slot channels, got {channels} (use to_slots())")
        if str(dims) not in self.encoders:
            raise ModelInputError(f"{dims}D input, but this model instantiates dims {self.config['dims']}")
        if not 1 <= steps <= self.t_in:
            raise ModelInputError(f"history of {steps} steps; the model accepts 1..T_in = {self.t_in}")
        bad = [n for n in space if n % self.patch]
        if bad:
            raise ModelInputError(f"resolution {tuple(space)} is not divisible by the patch size {self.patch}")
        if mask is None:
            mask = self.slot_mask(frames.device)
        mask = mask.to(frames.dtype).reshape(-1, N_SLOTS)  # (1 or B, 18)
        channel_mask = mask.view(mask.shape[0], *([1] * (dims + 1)), N_SLOTS)

        if self._prior >= 0:  # a kept prior: the window's extrapolation, no network
            return extrapolate_history(frames, self._prior) * channel_mask
        reduce_dims = tuple(range(1, dims + 2))
        mean = (frames * channel_mask).mean(dim=reduce_dims, keepdim=True)
        std = (frames * channel_mask).std(dim=reduce_dims, keepdim=True, unbiased=False)
        std = torch.where(channel_mask > 0, std, torch.ones_like(std)) + STD_EPS
        normalized = (frames - mean) / std * channel_mask

        encoder, decoder = self.encoders[str(dims)], self.decoders[str(dims)]
        tokens = encoder(rearrange(normalized, "b t ... c -> (b t) c ..."))
        token_grid = tokens.shape[2:]
        tokens = rearrange(tokens, "(b t) h ... -> b t ... h", b=batch)
        tokens = tokens + self.time_embedding[:steps].view(1, steps, *([1] * dims), self.hidden)

        variant, kernel = self._route(dims, token_grid)
        for block in self.blocks:
            tokens = block(tokens, variant, kernel)
        tokens = self.final_norm(tokens)

        decoded = decoder(rearrange(tokens, "b t ... h -> (b t) h ..."), active_slots(mask))
        decoded = rearrange(decoded, "(b t) c ... -> b t ... c", b=batch)
        order = BASES[self.base]
        if order == 0:
            decoded = decoded + normalized
        elif order is not None:
            decoded = extrapolate_history(normalized, order) + self.correction_gain * decoded
        return (decoded * std + mean) * channel_mask

    def set_prior(self, order: int) -> None:
        """Predict the window's extrapolation of polynomial ``order`` (``extrapolate_history``; a classical prior's,
        ``well_upao.predict.classical``) instead of the network, or the network again (``-1``); the choice travels in
        the state dict (``prior_order``)."""
        if order < -1:
            raise ValueError(f"a prior is an extrapolation of order >= 0 (or -1: none), got {order}")
        self.prior_order.fill_(order)
        self._prior = order

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs) -> None:
        state_dict.setdefault(prefix + "prior_order", torch.tensor(-1))  # checkpoints written before priors
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        self._prior = int(self.prior_order)

    def _route(self, dims: int, token_grid: Sequence[int]) -> tuple[str, tuple[int, ...]]:
        """The NA variant for a token grid and its (temporal, spatial...) kernel, oriented along the grid."""
        k_t, k = self.config["temporal_kernel"], self.config["kernel"]
        if dims == 1:
            return "1d", (k_t, k)
        if dims == 3:
            return "3d", (k_t, k, k, k)
        name = aspect_variant(token_grid)
        multiplier = {n: m for _, n, m in ASPECT_VARIANTS}[name]
        long_kernel = multiplier * (k - 1) + 1
        if token_grid[0] > token_grid[1]:
            return name, (k_t, long_kernel, k)
        return name, (k_t, k, long_kernel)

    # ------------------------------------------------------------------ harness path
    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None, *, sequence: bool = False) -> torch.Tensor:
        """The Well's contract: formatted history in, the next frame out (dataset channels).

        channels-last: ``(B, *space, T*C [+ constants])`` -> ``(B, *space, C)``;
        channels-first: ``(B, T*C [+ constants], *space)`` -> ``(B, C, *space)``.
        With ``sequence=True`` this is ``forward_sequence(x, mask)`` (so trainers reach it through DDP).
        """
        if sequence:
            return self.forward_sequence(x, mask)
        slots = self._require_slots(None)
        n_fields = len(slots)
        channels_first = self.config["formatter"] == "channels_first_default"
        if channels_first:
            x = rearrange(x, "b c ... -> b ... c")
        history = self.config["history"] or x.shape[-1] // n_fields
        if history * n_fields > x.shape[-1]:
            raise ModelInputError(f"{x.shape[-1]} input channels cannot hold {history} steps of {n_fields} fields")
        frames = rearrange(x[..., : history * n_fields], "b ... (t c) -> b t ... c", t=history)
        prediction = self.from_slots(self.forward_sequence(self.to_slots(frames))[:, -1])
        if channels_first:
            prediction = rearrange(prediction, "b ... c -> b c ...")
        return prediction


def active_slots(mask: torch.Tensor) -> list[int] | None:
    """The slots a slot mask ``(1 or B, 18)`` keeps for some sample (the decoder computes only those where the
    last layer allows it, ``PatchDecoder.forward``); ``None`` (all) where reading the mask would synchronise with a
    device or ``torch.compile`` traces the forward."""
    if mask.device.type != "cpu" or torch.compiler.is_compiling():
        return None
    return torch.nonzero(mask.amax(0) > 0).flatten().tolist()


def count_parameters(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())
