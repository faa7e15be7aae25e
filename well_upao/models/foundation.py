"""Foundation-model baselines of the paper: PDE-Transformer (its ``sc`` separate-channel model) and Poseidon (scOT),
from PyPI ``pdetransformer`` (the optional extra ``well-upao[fm]``), as one-frame models of the harness.

Both take the Well's channels-first input ``(B, T_in * C + K, H, W)`` (``K`` constant fields) and return the next
frame ``(B, C, H, W)``, so ``trainer=shifted`` / ``supervised`` train them with labels and ``trainer=upao`` without
(its one-frame path: the residual between the last input frame and the prediction).

* ``PDETransformerOneStep``: every physical channel is a separate token stream of ``T_in + 1`` frames whose
  last frame is zero on input and predicted on output (PDE-Transformer's forward-prediction task), labelled by its
  channel type, here the channel's slot of our 18-slot table (a released checkpoint's own channel ids can be
  given instead). Constant fields are not read (the model has no stream for them).
* ``PoseidonOneStep``: scOT maps the current state ``u(t)`` and a lead time to ``u(t + lead)``; as the paper
  says, it reads no history: only the last input frame (and the constant fields). It takes square inputs: a
  rectangular grid whose longer side is a multiple of the shorter is cut into non-overlapping square tiles, each
  mapped as an independent sample (the paper's construction for Rayleigh-Benard and shear flow).

Released checkpoints load from a local directory (``weights=PATH``; nothing is downloaded: the Hugging Face
libraries run offline). Importing ``pdetransformer`` as a package would also import its data loaders, which fetch a
dataset index over the network; ``pdetransformer_module`` imports only the model modules.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
import types
from pathlib import Path

import torch
from einops import rearrange
from torch import nn

from well_upao.models.checkpoint import FORMAT, check_payload, clean_state_dict
from well_upao.models.kinds import ModelKind

#: added to every channel's standard deviation over the history (constant channels stay finite)
STD_EPS = 1e-5
EXTRA_HINT = "install the foundation-model extra: pip install 'well-upao[fm]'"
#: sizes of the released PDE-Transformer models (``sc-s``, ``sc-b``, ``sc-l``) and a CPU test size
PDE_TRANSFORMER_SIZES = {
    "S": dict(hidden_size=96, num_heads=4, depth=(2, 5, 8, 5, 2)),
    "B": dict(hidden_size=192, num_heads=8, depth=(2, 5, 8, 5, 2)),
    "L": dict(hidden_size=384, num_heads=16, depth=(2, 5, 8, 5, 2)),
    "XS": dict(hidden_size=64, num_heads=4, depth=(2, 2, 2)),  # pretrained on our corpus at the tiny NA budget
    "tiny": dict(hidden_size=32, num_heads=2, depth=(1, 1, 1)),
}
#: the released models' block settings (the package's PDE-S/B/L constructors), shared by every size here
PDE_TRANSFORMER_BLOCKS = dict(
    down_factor=2,
    ffn_type="rep",
    rep=1,
    mlp_ratio=4,
    attn_type="v2",
    posemb_type="rope2d",
    downsampler="dwconv5",
    down_shortcut=1,
)
#: a CPU test size of Poseidon's scOT; the released T / S / B / L come from the package (``scot.MODEL_MAP``)
POSEIDON_TINY = dict(
    embed_dim=16, depths=[1, 1], num_heads=[2, 2], skip_connections=[1, 0], window_size=4, use_conditioning=True
)


class FoundationModelUnavailable(ImportError):
    """The optional ``pdetransformer`` package (extra ``well-upao[fm]``) is not installed."""


def pdetransformer_available() -> bool:
    return "pdetransformer" in sys.modules or importlib.util.find_spec("pdetransformer") is not None


def pdetransformer_module(name: str) -> types.ModuleType:
    """``pdetransformer.<name>`` (e.g. ``core.separate_channels.pde_transformer``) without running the package's
    ``__init__`` files (they import its data loaders, which go to the network)."""
    if not pdetransformer_available():
        raise FoundationModelUnavailable(f"the foundation-model baselines need pdetransformer: {EXTRA_HINT}")
    for variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ.setdefault(variable, "1")  # nothing is downloaded at run time
    parts = ["pdetransformer", *name.split(".")]
    for depth in range(1, len(parts)):  # empty parent packages: the submodules' relative imports resolve in them
        package = ".".join(parts[:depth])
        if package not in sys.modules:
            location = _package_root().joinpath(*parts[1:depth])
            module = types.ModuleType(package)
            module.__path__ = [str(location)]
            module.__spec__ = importlib.machinery.ModuleSpec(package, None, is_package=True)
            module.__spec__.submodule_search_locations = [str(location)]
            sys.modules[package] = module
    return importlib.import_module(".".join(parts))


def _package_root() -> Path:
    loaded = sys.modules.get("pdetransformer")
    if loaded is not None:
        return Path(loaded.__path__[0])
    return Path(next(iter(importlib.util.find_spec("pdetransformer").submodule_search_locations)))


def _split_history(x: torch.Tensor, history: int, n_fields: int) -> torch.Tensor:
    """``(B, T*C + K, H, W)`` (the Well's channels-first layout, time-major) -> ``(B, T, C, H, W)``."""
    if x.shape[1] < history * n_fields:
        raise ValueError(f"expected at least {history} x {n_fields} input channels, got {x.shape[1]}")
    return x[:, : history * n_fields].unflatten(1, (history, n_fields))


def _check_2d(n_spatial_dims: int, name: str) -> None:
    if n_spatial_dims != 2:
        raise ValueError(f"{name} is a 2D model; this dataset has {n_spatial_dims} spatial dimensions")


class PDETransformerOneStep(nn.Module):
    """PDE-Transformer (separate channels) predicting frame ``T_in + 1`` of every channel from its ``T_in`` frames.

    ``size``: ``S`` / ``B`` / ``L`` (the released ``sc-s`` / ``sc-b`` / ``sc-l``) or ``tiny``; ``weights``: ``None``
    (random), a directory holding a released checkpoint (diffusers ``config.json`` + weights, loaded offline), or a
    ``.pt`` state dict of this wrapper. Grids must be multiples of ``patch_size * 2**levels`` on both axes.
    """

    def __init__(
        self,
        *,
        history: int,
        n_fields: int,
        channel_types: list[int],
        n_spatial_dims: int = 2,
        size: str = "S",
        patch_size: int = 4,
        window_size: int = 8,
        periodic: bool = True,
        carrier_tokens: bool = False,
        weights: str | None = None,
    ):
        super().__init__()
        _check_2d(n_spatial_dims, "PDE-Transformer")
        if len(channel_types) != n_fields:
            raise ValueError(f"{n_fields} fields need {n_fields} channel types, got {channel_types}")
        self.history, self.n_fields, self.patch_size = int(history), int(n_fields), int(patch_size)
        self.register_buffer("channel_types", torch.tensor(channel_types, dtype=torch.long), persistent=False)
        self.weights_origin = "random"
        if weights is not None and Path(weights).is_dir():
            module = pdetransformer_module("core.separate_channels.pde_transformer")
            released = module.PDETransformer.from_pretrained(weights, local_files_only=True)
            if released.config.num_timesteps != self.history + 1:
                raise ValueError(
                    f"the checkpoint in {weights} reads {released.config.num_timesteps - 1} history frames; this run "
                    f"has {self.history} (set data.n_steps_input={released.config.num_timesteps - 1})"
                )
            self.net, self.patch_size, self.weights_origin = released.model, released.patch_size, "released"
        else:
            self.net = build_pde_transformer(self.history, size, self.patch_size, window_size, periodic, carrier_tokens)
        if weights is not None and not Path(weights).is_dir():
            self.load_state_dict(weights_file_state(weights))
            self.weights_origin = str(weights)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        frames = _split_history(x, self.history, self.n_fields)  # (B, T, C, H, W)
        return predict_next_frame(self.net, frames, self.channel_types, self.patch_size)


class PDETransformerSlots(nn.Module):
    """PDE-Transformer (separate channels) on the 18-slot frames of a pretraining mixture
    (``python -m well_upao.train --config-name pretrain_pde_transformer``): ``forward(frames, mask)`` maps a
    history ``(B, T, H, W, 18)`` to the next frame ``(B, H, W, 18)``, one token stream per active slot of ``mask``
    with the slot as its channel type (zeros in the inactive slots). Its weights are those of
    ``PDETransformerOneStep`` of the same size (``model=pde_transformer model.weights=<its checkpoint>``),
    which labels a dataset's channels by the same slots."""

    model_kind = ModelKind.SLOT_FRAME  # no shifted (every-history-length) output: trained on the next frame

    def __init__(
        self,
        *,
        history: int,
        size: str = "S",
        patch_size: int = 4,
        window_size: int = 8,
        periodic: bool = True,
        carrier_tokens: bool = False,
    ):
        super().__init__()
        self.history, self.patch_size = int(history), int(patch_size)
        self.config = dict(
            history=self.history,
            size=size,
            patch_size=self.patch_size,
            window_size=window_size,
            periodic=periodic,
            carrier_tokens=carrier_tokens,
        )
        self.net = build_pde_transformer(self.history, size, self.patch_size, window_size, periodic, carrier_tokens)

    def forward(self, frames: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        if frames.ndim != 5 or frames.shape[1] != self.history:
            raise ValueError(
                f"expected a 2D history (B, {self.history}, H, W, slots), got {tuple(frames.shape)}"
                + (" (PDE-Transformer is 2D only)" if frames.ndim != 5 else "")
            )
        slots = mask.nonzero().flatten()
        history = frames[..., slots].permute(0, 1, 4, 2, 3)  # (B, T, C_active, H, W)
        prediction = predict_next_frame(self.net, history, slots, self.patch_size)  # (B, C_active, H, W)
        out = frames.new_zeros(*frames.shape[:1], *frames.shape[2:])
        out[..., slots] = prediction.permute(0, 2, 3, 1)
        return out


def build_pde_transformer(
    history: int, size: str, patch_size: int, window_size: int, periodic: bool, carrier_tokens: bool
) -> nn.Module:
    """The package's separate-channel ``PDEImpl`` with the released models' block settings at ``size``."""
    if size not in PDE_TRANSFORMER_SIZES:
        raise ValueError(f"PDE-Transformer size must be one of {sorted(PDE_TRANSFORMER_SIZES)}, got {size!r}")
    module = pdetransformer_module("core.separate_channels.pde_transformer")
    return module.PDEImpl(
        num_timesteps=history + 1,
        patch_size=patch_size,
        window_size=window_size,
        periodic=periodic,
        use_carrier_tokens=carrier_tokens,
        learn_sigma=False,
        **PDE_TRANSFORMER_BLOCKS,
        **PDE_TRANSFORMER_SIZES[size],
    )


def predict_next_frame(
    net: nn.Module, frames: torch.Tensor, channel_types: torch.Tensor, patch_size: int
) -> torch.Tensor:
    """PDE-Transformer's forward-prediction task: every channel ``c`` of the history ``(B, T, C, H, W)`` is a
    stream of ``T + 1`` frames whose last one enters as zeros, labelled ``channel_types[c]``; returns that last
    frame as predicted, ``(B, C, H, W)``.

    Each channel is normalised by its mean and standard deviation over the history (per sample, as our backbone
    does; the package's models are trained on standardised fields) and the prediction mapped back:
    ``u_{T+1} = mu + sigma * net((u_{1..T} - mu) / sigma)``, so any field scale enters the network at unit size."""
    levels = net.num_encoder_layers
    multiple = patch_size * 2**levels
    if any(n % multiple for n in frames.shape[-2:]):
        raise ValueError(
            f"PDE-Transformer needs both grid sizes to be multiples of {multiple} (patch {patch_size} "
            f"x 2^{levels} down-samplings); got {tuple(frames.shape[-2:])}"
        )
    batch, history, n_channels = frames.shape[:3]
    mean = frames.mean(dim=(1, 3, 4), keepdim=True)
    std = frames.std(dim=(1, 3, 4), keepdim=True, unbiased=False) + STD_EPS
    normalized = (frames - mean) / std
    target = torch.zeros_like(normalized[:, :1])
    streams = list(torch.cat([normalized, target], dim=1).permute(2, 0, 1, 3, 4))  # C x (B, T+1, H, W)
    zeros = torch.zeros(batch, device=frames.device)
    labels = torch.zeros(batch, dtype=torch.long, device=frames.device)
    output = net(
        x=streams,
        simulation_time=[zeros] * n_channels,
        channel_type=[channel_types[c].expand(batch) for c in range(n_channels)],
        pde_type=[labels] * n_channels,
        pde_parameters=[zeros[:, None]] * n_channels,
        pde_parameters_class=[labels[:, None]] * n_channels,
        simulation_dt=[zeros] * n_channels,
        task=[labels] * n_channels,  # forward prediction
        t=[zeros] * n_channels,
    )  # (B, C, T+1, H, W)
    return output[:, :, history] * std[:, 0] + mean[:, 0]


def weights_file_state(path: str | Path) -> dict[str, torch.Tensor]:
    """The state dict in ``path``: a plain ``torch.save``d state dict or a well-upao checkpoint (e.g. the
    ``best.pt`` of a ``pretrain_pde_transformer`` run, whose weights carry the same names)."""
    loaded = torch.load(path, map_location="cpu", weights_only=False)
    if isinstance(loaded, dict) and loaded.get("format") == FORMAT:
        return clean_state_dict(check_payload(loaded, path)["state_dict"])
    return loaded


class PoseidonOneStep(nn.Module):
    """Poseidon's scOT mapping the last input frame (and the constant fields) to the next frame.

    ``size``: ``T`` / ``B`` / ``L`` (the released configurations) or ``tiny``; ``lead_time`` is the time input of
    the continuous-in-time operator for one step; ``weights``: ``None``, a local directory with a released
    checkpoint (``config.json`` + weights; its channel counts must match), or a ``.pt`` state dict. A rectangular
    grid is mapped as square tiles (``square_tile``: the released checkpoint's grid, else the shorter side),
    each an independent sample, and reassembled.
    """

    def __init__(
        self,
        *,
        history: int,
        n_fields: int,
        n_constant_fields: int,
        spatial_resolution: tuple[int, int],
        n_spatial_dims: int = 2,
        size: str = "B",
        patch_size: int = 4,
        lead_time: float = 1.0,
        weights: str | None = None,
    ):
        super().__init__()
        _check_2d(n_spatial_dims, "Poseidon")
        height, width = spatial_resolution
        scot = pdetransformer_module("core.mixed_channels.scot")
        self.history, self.n_fields, self.n_constant_fields = int(history), int(n_fields), int(n_constant_fields)
        self.lead_time = float(lead_time)
        self.weights_origin = "random"
        if weights is not None and Path(weights).is_dir():
            self.net = scot.ScOT.from_pretrained(weights, local_files_only=True)
            self.weights_origin = "released"
            self.tile = square_tile(height, width, self.net.config.image_size)  # the grid it was trained on
            wanted = (self.n_fields + self.n_constant_fields, self.n_fields)
            found = (self.net.config.num_channels, self.net.config.num_out_channels)
            if found != wanted:
                raise ValueError(
                    f"the checkpoint in {weights} reads {found[0]} and writes {found[1]} channels; this dataset needs "
                    f"{wanted[0]} in ({self.n_fields} fields + {self.n_constant_fields} constant) and {wanted[1]} out"
                )
        else:
            if size != "tiny" and size not in scot.MODEL_MAP:
                raise ValueError(f"Poseidon size must be one of {sorted(scot.MODEL_MAP)} or tiny, got {size!r}")
            self.tile = square_tile(height, width)
            settings = dict(POSEIDON_TINY if size == "tiny" else scot.MODEL_MAP[size])  # a copy: never edit theirs
            settings.update(
                image_size=self.tile,
                patch_size=patch_size,
                num_channels=self.n_fields + self.n_constant_fields,
                num_out_channels=self.n_fields,
            )
            config = scot.ScOTConfig(**settings)
            self.net = scot.ScOT(config)
        if weights is not None and not Path(weights).is_dir():
            self.load_state_dict(weights_file_state(weights))
            self.weights_origin = str(weights)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        last = _split_history(x, self.history, self.n_fields)[:, -1]
        constants = x[:, self.history * self.n_fields :]
        height, width = x.shape[-2:]
        if height % self.tile or width % self.tile:
            raise ValueError(f"Poseidon was built for {self.tile} x {self.tile} tiles; got a {height} x {width} grid")
        rows, cols = height // self.tile, width // self.tile
        tiles = rearrange(
            torch.cat([last, constants], dim=1), "b c (r h) (s w) -> (b r s) c h w", r=rows, s=cols
        )  # each tile an independent sample
        time = torch.full((tiles.shape[0],), self.lead_time, device=x.device, dtype=x.dtype)
        output = self.net(pixel_values=tiles, time=time).output
        return rearrange(output, "(b r s) c h w -> b c (r h) (s w)", r=rows, s=cols)


def square_tile(height: int, width: int, side: int | None = None) -> int:
    """The side of the square tiles Poseidon maps a ``height x width`` grid in: ``side`` (a released checkpoint's
    grid) or else the shorter side; both sides must be multiples of it (the paper, with Poseidon-B's 128^2:
    Rayleigh-Benard 512 x 128 -> four tiles, shear flow 512 x 256 -> eight)."""
    tile = int(side) if side is not None else min(height, width)
    if height % tile or width % tile:
        raise ValueError(
            f"Poseidon takes square inputs, and a {height} x {width} grid does not split into {tile} x {tile} tiles"
        )
    return tile
