"""What a sample of ``the_well.data.WellDataset`` tells about its physics (time step, grid, boundaries, scalars),
and how its frames meet the models (the 18 slots; a one-frame harness model's layout).

A sample (or a batch of them, with a leading batch axis) holds ``input_time_grid`` and ``output_time_grid``
(min-subtracted, so differences are the true spacing, whatever the time stride), ``space_grid`` (coordinates,
``(*space, d)``), ``boundary_conditions`` (``(d, 2)`` codes of ``the_well.data.datasets.BoundaryCondition``) and
``constant_scalars`` (the per-trajectory ``/scalars``, in the metadata's ``constant_scalar_names`` order).

Training decodes batches here (``batch_grid``, ``batch_dt``) and evaluation whole-trajectory samples
(``sample_context``, with the split's time axis ``file_time_axis``): one place for both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch
from einops import rearrange
from the_well.data.datasets import BoundaryCondition

from well_upao.axes import UnevenAxisError, UniformAxis, uniform_step, window_steps
from well_upao.data.slot_inventory import N_SLOTS
from well_upao.data.source import WellSource
from well_upao.physics.stencils import Grid

PERIODIC = BoundaryCondition.PERIODIC.value


def grid_of(space_grid: torch.Tensor, boundary_codes: torch.Tensor) -> Grid:
    """Grid spacing from one sample's coordinates ``(*space, d)`` (float64 fits of each whole axis at the precision
    the loader holds them in, ``well_upao.axes``); periodic axes from its codes ``(d, 2)``."""
    dims = space_grid.shape[-1]
    spacing = []
    for axis in range(dims):
        index = [0] * dims
        index[axis] = slice(None)
        line = space_grid[(*index, axis)].detach().cpu().numpy()
        spacing.append(uniform_step(line, line.dtype, f"axis {axis} coordinate"))
    periodic = tuple(bool((boundary_codes[axis] == PERIODIC).all()) for axis in range(dims))
    return Grid(tuple(spacing), periodic)


def batch_grid(batch: Mapping[str, torch.Tensor]) -> Grid:
    """The grid of a batch (its samples share one dataset, hence one grid)."""
    return grid_of(batch["space_grid"][0], batch["boundary_conditions"][0])


def batch_dt(batch: Mapping[str, torch.Tensor], time_axis: UniformAxis | None = None) -> torch.Tensor:
    """The time step of each sample's frames, ``(B,)`` float64: a least-squares fit over its input and output
    times, snapped to a whole number of the file's step when its ``time_axis`` is given
    (``well_upao.axes.window_steps``; the loader's times are float32 and min-subtracted)."""
    times = torch.cat([batch["input_time_grid"], batch["output_time_grid"]], dim=1)
    return window_steps(times, time_axis)


def named_scalars(scalars: torch.Tensor | None, names: Sequence[str]) -> dict[str, torch.Tensor]:
    """``{name: (B,)}`` from ``constant_scalars`` ``(B, n)`` (an empty dict when there are none)."""
    if scalars is None or not names:
        return {}
    return {name: scalars[:, i] for i, name in enumerate(names)}


def into_slots(fields: torch.Tensor, channel_slots: Sequence[int]) -> torch.Tensor:
    """Dataset channels ``(..., C)`` -> the 18 slots ``(..., 18)`` (zeros in the slots the dataset lacks)."""
    out = fields.new_zeros(*fields.shape[:-1], N_SLOTS)
    out[..., list(channel_slots)] = fields
    return out


def slots_mask(channel_slots: Sequence[int], device=None) -> torch.Tensor:
    """``(18,)`` float mask of the slots a dataset fills."""
    mask = torch.zeros(N_SLOTS, device=device)
    mask[list(channel_slots)] = 1
    return mask


def one_frame_prediction(
    model: torch.nn.Module, history: torch.Tensor, formatter: str, constants: torch.Tensor | None = None
) -> torch.Tensor:
    """The next frame ``(B, *space, C)`` from a one-frame harness model (the Well's FNO, TFNO, U-Nets) given the
    history ``(B, T, *space, C)``: the Well's layout for ``formatter`` (channels-first ``(B, T*C [+ C_const],
    *space)`` in and ``(B, C, *space)`` out; channels-last ``(B, *space, T*C [+ C_const])`` in and
    ``(B, *space, C)`` out). ``constants``: the sample's constant fields ``(B, *space, C_const)`` (the Well's
    ``constant_fields``, in the model's units), appended after the frames as the Well's formatters do."""
    if formatter == "channels_first_default":
        inputs = rearrange(history, "b t ... c -> b (t c) ...")
        if constants is not None:
            inputs = torch.cat([inputs, rearrange(constants.to(inputs), "b ... c -> b c ...")], dim=1)
        return rearrange(model(inputs), "b c ... -> b ... c")
    inputs = rearrange(history, "b t ... c -> b ... (t c)")
    if constants is not None:
        inputs = torch.cat([inputs, constants.to(inputs)], dim=-1)
    return model(inputs)


@dataclass
class Context:
    """What a sample tells about its physics: time step, grid, named scalars, slot map."""

    dt: torch.Tensor  # (B,)
    grid: Grid
    scalars: dict[str, torch.Tensor]
    channel_slots: list[int]
    #: the sample's constant fields ``(*space, C_const)`` (the Well's ``constant_fields``), ``None`` without
    constant_fields: torch.Tensor | None = None


def file_time_axis(source: WellSource) -> UniformAxis | None:
    """The split's time axis (``Layout.time_axis``), or ``None`` where it is not equally spaced: each window's own
    fit is used then, and the residual floor's note says why the label-free columns are n/a."""
    try:
        return source.layout.time_axis
    except UnevenAxisError:
        return None


def sample_context(
    sample: dict, scalar_names: list[str], channel_slots: list[int], time_axis: UniformAxis | None = None
) -> Context:
    """The physics of one whole-trajectory sample: its dt (``well_upao.axes.window_steps``: a whole number
    of the file's step ``time_axis`` when given), grid, named scalars, slots and constant fields."""
    times = torch.cat([sample["input_time_grid"], sample["output_time_grid"]])
    scalars = sample.get("constant_scalars", torch.zeros(0))[None].double()
    named = named_scalars(scalars, scalar_names)
    grid = grid_of(sample["space_grid"], sample["boundary_conditions"])
    constants = sample.get("constant_fields")
    return Context(window_steps(times, time_axis).float(), grid, named, channel_slots, constants)
