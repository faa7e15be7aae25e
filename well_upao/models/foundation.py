"""Foundation-model baselines of the paper: PDE-Transformer (its ``sc`` separate-channel model) and Poseidon (scOT),
from PyPI ``pdetransformer`` (the optional extra ``well-upao[fm]``), as one-frame models of the harness.

Both take the Well's channels-first input ``(B, T_in * C + K, H, W)`` (``K`` constant fields) and return the next
frame ``(B, C, H, W)``, so ``trainer=shifted`` / ``supervised`` train them with labels and ``trainer=upao`` without
(its one-frame path: the residual between the last input frame and the prediction).

* :class:`PDETransformerOneStep`: every physical channel is a separate token stream of ``T_in + 1`` frames whose
  last frame is zero on input and predicted on output (PDE-Transformer's forward-prediction task), labelled by its
  channel type, here the channel's slot of our 18-slot table (a released checkpoint's own channel ids can be
  given instead). Constant fields are not read (the model has no stream for them).
* :class:`PoseidonOneStep`: scOT maps the current state ``u(t)`` and a lead time to ``u(t + lead)``; as the paper
  says, it reads no history: only the last input frame (and the constant fields). Square grids only.

Released checkpoints load from a local directory (``weights=PATH``; nothing is downloaded: the Hugging Face
libraries run offline). Importing ``pdetransformer`` as a package would also import its data loaders, which fetch a
dataset index over the network; :func:`pdetransformer_module` imports only the model modules.
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
from torch import nn

EXTRA_HINT = "install the foundation-model extra: pip install 'well-upao[fm]'"
#: sizes of the released PDE-Transformer models (``sc-s``, ``sc-b``, ``sc-l``) and a CPU test size
PDE_TRANSFORMER_SIZES = {
    "S": dict(hidden_size=96, num_heads=4, depth=(2, 5, 8, 5, 2)),
    "B": dict(hidden_size=192, num_heads=8, depth=(2, 5, 8, 5, 2)),
    "L": dict(hidden_size=384, num_heads=16, depth=(2, 5, 8, 5, 2)),
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
        if size not in PDE_TRANSFORMER_SIZES:
            raise ValueError(f"PDE-Transformer size must be one of {sorted(PDE_TRANSFORMER_SIZES)}, got {size!r}")
        module = pdetransformer_module("core.separate_channels.pde_transformer")
        self.history, self.n_fields, self.patch_size = int(history), int(n_fields), int(patch_size)
        self.register_buffer("channel_types", torch.tensor(channel_types, dtype=torch.long), persistent=False)
        self.weights_origin = "random"
        if weights is not None and Path(weights).is_dir():
            released = module.PDETransformer.from_pretrained(weights, local_files_only=True)
            if released.config.num_timesteps != self.history + 1:
                raise ValueError(
                    f"the checkpoint in {weights} reads {released.config.num_timesteps - 1} history frames; this run "
                    f"has {self.history} (set data.n_steps_input={released.config.num_timesteps - 1})"
                )
            self.net, self.patch_size, self.weights_origin = released.model, released.patch_size, "released"
        else:
            self.net = module.PDEImpl(
                num_timesteps=self.history + 1,
                patch_size=self.patch_size,
                window_size=window_size,
                periodic=periodic,
                use_carrier_tokens=carrier_tokens,
                learn_sigma=False,
                **PDE_TRANSFORMER_BLOCKS,
                **PDE_TRANSFORMER_SIZES[size],
            )
        self.levels = self.net.num_encoder_layers
        if weights is not None and not Path(weights).is_dir():
            self.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True))
            self.weights_origin = str(weights)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        multiple = self.patch_size * 2**self.levels
        if any(n % multiple for n in x.shape[-2:]):
            raise ValueError(
                f"PDE-Transformer needs both grid sizes to be multiples of {multiple} (patch {self.patch_size} "
                f"x 2^{self.levels} down-samplings); got {tuple(x.shape[-2:])}"
            )
        frames = _split_history(x, self.history, self.n_fields)  # (B, T, C, H, W)
        batch = x.shape[0]
        target = torch.zeros_like(frames[:, :1])  # the frame to predict enters as zeros
        streams = list(torch.cat([frames, target], dim=1).permute(2, 0, 1, 3, 4))  # C x (B, T+1, H, W)
        zeros = torch.zeros(batch, device=x.device)
        labels = torch.zeros(batch, dtype=torch.long, device=x.device)
        output = self.net(
            x=streams,
            simulation_time=[zeros] * self.n_fields,
            channel_type=[self.channel_types[c].expand(batch) for c in range(self.n_fields)],
            pde_type=[labels] * self.n_fields,
            pde_parameters=[zeros[:, None]] * self.n_fields,
            pde_parameters_class=[labels[:, None]] * self.n_fields,
            simulation_dt=[zeros] * self.n_fields,
            task=[labels] * self.n_fields,  # forward prediction
            t=[zeros] * self.n_fields,
        )  # (B, C, T+1, H, W)
        return output[:, :, self.history]


class PoseidonOneStep(nn.Module):
    """Poseidon's scOT mapping the last input frame (and the constant fields) to the next frame.

    ``size``: ``T`` / ``B`` / ``L`` (the released configurations) or ``tiny``; ``lead_time`` is the time input of
    the continuous-in-time operator for one step; ``weights``: ``None``, a local directory with a released
    checkpoint (``config.json`` + weights; its channel counts must match), or a ``.pt`` state dict.
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
        if height != width:
            raise ValueError(
                f"Poseidon takes square grids; this dataset is {height} x {width} (the paper tiles such fields "
                "into square patches, which this wrapper does not)"
            )
        scot = pdetransformer_module("core.mixed_channels.scot")
        self.history, self.n_fields, self.n_constant_fields = int(history), int(n_fields), int(n_constant_fields)
        self.lead_time = float(lead_time)
        self.weights_origin = "random"
        if weights is not None and Path(weights).is_dir():
            self.net = scot.ScOT.from_pretrained(weights, local_files_only=True)
            self.weights_origin = "released"
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
            settings = dict(POSEIDON_TINY if size == "tiny" else scot.MODEL_MAP[size])  # a copy: never edit theirs
            settings.update(
                image_size=height,
                patch_size=patch_size,
                num_channels=self.n_fields + self.n_constant_fields,
                num_out_channels=self.n_fields,
            )
            config = scot.ScOTConfig(**settings)
            self.net = scot.ScOT(config)
        if weights is not None and not Path(weights).is_dir():
            self.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True))
            self.weights_origin = str(weights)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        last = _split_history(x, self.history, self.n_fields)[:, -1]
        constants = x[:, self.history * self.n_fields :]
        time = torch.full((x.shape[0],), self.lead_time, device=x.device, dtype=x.dtype)
        return self.net(pixel_values=torch.cat([last, constants], dim=1), time=time).output
