"""The base of our trainers: The Well's ``Trainer``, with the two places where we reach into it.

* Its constructor takes the formatter name as a positional or keyword argument and keeps only the formatter
  object; we keep the name too (checkpoints record it, so evaluation can rebuild harness models), and can swap
  the formatter after construction (``use_formatter``).
* Its validation draws power-spectrum plots that the_well 1.2.0 cannot draw for 1D data
  (``build_1d_power_spectrum`` indexes a 0-d tensor when there is a single spatial axis): for 1D datasets they are
  left out of ``the_well.benchmark.trainer.training.validation_plots`` for the duration of the validation.
* Its validation plots raise on data they cannot draw (``field_histograms`` asks numpy for 100 bins over the
  target's range, which numpy refuses when a field is uniform to float32 precision: "Too many bins for data
  range"), ending a training run over a figure: during our validations such a plot is skipped with a warning
  (``skip_when_undrawable``); the numbers logged are unaffected.
* Its validation logs ``param_norm``, the square root of the sum of ``p.pow(2).sum().item()`` over the parameters,
  which a parameter sharded by FSDP2 (a ``DTensor``) refuses: during our validations it is
  ``sharded_param_norm``, the same number from the shards.
* Its rollout metrics per time window come from log-spaced bounds that repeat on short rollouts (3 steps: 0, 1, 1,
  3), logging an empty window ``T=1:1`` as nan: repeated bounds are dropped (``WellTrainer.temporal_split_losses``).
* Its validation runs under ``torch.inference_mode``, in which FSDP2 would gather parameters into inference tensors
  that training cannot write to afterwards: a sharded model validates under ``torch.no_grad`` instead (the same
  numbers).
"""

from __future__ import annotations

import functools
import inspect
import logging

import matplotlib.pyplot as plt  # the Well's trainer loads it (its validation plots)
import torch
import torch.distributed as dist
from the_well.benchmark.trainer import Trainer
from the_well.benchmark.trainer import training as well_training
from the_well.data.data_formatter import DefaultChannelsFirstFormatter, DefaultChannelsLastFormatter
from torch.distributed.tensor import DTensor

logger = logging.getLogger(__name__)

#: numpy's message for a histogram range too narrow for its bins, the one plot failure skipped
UNDRAWABLE = "Too many bins for data range"

FORMATTERS = {
    "channels_first_default": DefaultChannelsFirstFormatter,
    "channels_last_default": DefaultChannelsLastFormatter,
}


def trainer_argument(name: str, args: tuple, kwargs: dict, default=None):
    """The value of argument ``name`` in a call of the Well's ``Trainer(*args, **kwargs)`` (keywords it does not
    take, our trainers' own, are left aside)."""
    signature = inspect.signature(Trainer.__init__)
    known = {key: value for key, value in kwargs.items() if key in signature.parameters}
    return signature.bind_partial(None, *args, **known).arguments.get(name, default)


def with_argument(name: str, value, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """``(args, kwargs)`` of a call of the Well's ``Trainer(*args, **kwargs)`` with argument ``name`` set to ``value``,
    where the call gave it (by position or by keyword) or not."""
    position = list(inspect.signature(Trainer.__init__).parameters).index(name) - 1  # self
    if position < len(args):
        return (*args[:position], value, *args[position + 1 :]), kwargs
    return args, {**kwargs, name: value}


def sharded_param_norm(parameters) -> float:
    """``sqrt(sum_p ||p||^2)`` over all parameters; for ``DTensor`` shards the squares of the local shards are summed
    over the processes (FSDP2 shards every parameter of a model over the same processes)."""
    total, sharded = 0.0, None
    with torch.no_grad():
        for parameter in parameters:
            if isinstance(parameter, DTensor):
                parameter = parameter.to_local()
                sharded = parameter.device  # NCCL reduces tensors on the GPU
            total += parameter.pow(2).sum().item()
    if sharded is not None and dist.is_initialized():
        reduced = torch.tensor(total, dtype=torch.float64, device=sharded)
        dist.all_reduce(reduced)
        total = float(reduced)
    return total**0.5


def skip_when_undrawable(plot_fn):
    """``plot_fn`` of the Well's validation plots, turned into a warning when numpy cannot bin the data (its
    ``ValueError`` "Too many bins for data range": a histogram of a field whose range is below float32 resolution;
    the figures of the later fields of that plot are skipped too). Any other error is raised."""

    @functools.wraps(plot_fn)
    def plot_or_warn(*args, **kwargs):
        try:
            return plot_fn(*args, **kwargs)
        except ValueError as error:
            if UNDRAWABLE not in str(error):
                raise
            plt.close("all")  # the figure left open by the failed plot
            logger.warning("validation plot %s skipped: %s", plot_fn.__name__, error)
            return None

    return plot_or_warn


class WellTrainer(Trainer):
    def __init__(self, *args, **kwargs):
        self.formatter_name = trainer_argument("formatter", args, kwargs, "channels_last_default")
        super().__init__(*args, **kwargs)

    def use_formatter(self, name: str) -> None:
        """Format model inputs with the Well's formatter ``name`` (``channels_first_default`` or
        ``channels_last_default``) from now on."""
        self.formatter, self.formatter_name = FORMATTERS[name](self.dset_metadata), name

    def temporal_split_losses(self, loss_values, temporal_loss_intervals, loss_name, dset_name, fname="full"):
        """The Well's per-window rollout metrics, without its empty windows: its log-spaced bounds repeat on short
        rollouts (3 steps give the bounds 0, 1, 1, 3, so a window ``T=1:1`` whose mean is nan); a repeated bound is
        dropped, so every logged window holds at least one step."""
        bounds = list(dict.fromkeys(int(b) for b in temporal_loss_intervals))
        return super().temporal_split_losses(loss_values, bounds, loss_name, dset_name, fname)

    def validation_loop(self, dataloader, valid_or_test: str = "valid", full: bool = False, epoch: int = 0):
        plots, norm = well_training.validation_plots, well_training.param_norm
        drawable = plots
        if self.dset_metadata.n_spatial_dims == 1:
            drawable = [p for p in plots if p.__name__ != "plot_power_spectrum_by_field"]
        well_training.validation_plots = [skip_when_undrawable(p) for p in drawable]
        well_training.param_norm = sharded_param_norm
        sharded = any(isinstance(parameter, DTensor) for parameter in self.model.parameters())
        try:
            if sharded:
                with torch.no_grad():  # the undecorated loop (see the module docstring)
                    return Trainer.validation_loop.__wrapped__(self, dataloader, valid_or_test, full, epoch)
            return super().validation_loop(dataloader, valid_or_test, full, epoch)
        finally:
            well_training.validation_plots, well_training.param_norm = plots, norm
