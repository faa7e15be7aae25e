"""Start a one-frame model from a checkpoint trained on another dataset (the paper's appendix "Construction of the
cross-target panels"): the weights that touch the channels are re-shaped along the channel axis.

A one-frame model of the Well reads ``history * C + K`` input channels (``K`` constant fields) and writes ``C``.
Between a source with ``C_src`` channels and a target with ``C_tgt``, a tensor whose shape differs in exactly one
axis is

* an input projection when that axis has ``history * C_src + K`` entries in the source and ``history * C_tgt + K``
  in the target: viewed as ``(history, C)`` plus the constants, the first ``min(C_src, C_tgt)`` channels of each
  history step are copied and the target's extra channels are zero;
* an output projection when that axis has ``C_src`` entries in the source and ``C_tgt`` in the target: the first
  ``min(C_src, C_tgt)`` are copied, extra target channels are zero (the paper's zero-padding of missing channels).

Every other tensor must have the same shape in both. The channels kept are the first ones (the paper evaluates
every ``C_tgt``-subset for zero-shot transfer; a finetuning run starts from the first).
"""

from __future__ import annotations

from collections.abc import Mapping

import torch


class TransferError(ValueError):
    """A source checkpoint whose weights cannot be mapped onto the target model."""


def _adapt_axis(source: torch.Tensor, target: torch.Tensor, axis: int, groups: int, c_src: int, c_tgt: int, extra: int):
    """Copy ``source`` into a zero tensor of ``target``'s shape along ``axis`` viewed as ``groups`` blocks of ``C``
    channels (plus ``extra`` trailing entries copied as they are)."""
    out = torch.zeros_like(target)
    keep = min(c_src, c_tgt)
    for group in range(groups):
        src = source.narrow(axis, group * c_src, keep)
        out.narrow(axis, group * c_tgt, keep).copy_(src)
    if extra:
        out.narrow(axis, groups * c_tgt, extra).copy_(source.narrow(axis, groups * c_src, extra))
    return out


def adapt_state_dict(
    source: Mapping[str, torch.Tensor],
    target: Mapping[str, torch.Tensor],
    c_src: int,
    c_tgt: int,
    history: int,
    constants: int = 0,
) -> tuple[dict[str, torch.Tensor], list[str]]:
    """``(state for the target, names of the tensors that were re-shaped)`` (see the module docstring)."""
    missing = sorted(set(target) - set(source))
    unexpected = sorted(set(source) - set(target))
    if missing or unexpected:
        raise TransferError(
            f"the source checkpoint is another architecture (missing {missing[:3]}, unexpected {unexpected[:3]})"
        )
    out, adapted = {}, []
    for name, wanted in target.items():
        given = source[name]
        if given.shape == wanted.shape:
            out[name] = given.to(wanted.dtype)
            continue
        axes = (
            [a for a, (g, w) in enumerate(zip(given.shape, wanted.shape, strict=True)) if g != w]
            if (given.ndim == wanted.ndim)
            else []
        )
        if len(axes) != 1:
            raise TransferError(f"{name}: source shape {tuple(given.shape)} cannot become {tuple(wanted.shape)}")
        axis = axes[0]
        g, w = given.shape[axis], wanted.shape[axis]
        if (g, w) == (history * c_src + constants, history * c_tgt + constants):
            out[name] = _adapt_axis(given.to(wanted.dtype), wanted, axis, history, c_src, c_tgt, constants)
        elif (g, w) == (c_src, c_tgt):
            out[name] = _adapt_axis(given.to(wanted.dtype), wanted, axis, 1, c_src, c_tgt, 0)
        else:
            raise TransferError(
                f"{name}: axis {axis} has {g} entries in the source and {w} in the target, neither "
                f"{history} x channels ({c_src} -> {c_tgt}) + {constants} constants nor the channels themselves"
            )
        adapted.append(name)
    return out, adapted
