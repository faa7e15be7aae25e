"""Small helpers for code that runs under ``torchrun`` as well as in one process."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import FSDPModule


def is_main_process() -> bool:
    """True in a single process and on rank 0 of a process group: the one that writes files and logs."""
    return not dist.is_initialized() or dist.get_rank() == 0


@contextlib.contextmanager
def whole_parameters(model: nn.Module) -> Iterator[nn.Module]:
    """Inside the block, every parameter of an FSDP2-sharded ``model`` is whole (all-gathered, in the units'
    compute precision) on every process; outside it they are shards again. A collective: all processes enter
    together. A model that is not sharded is left as it is."""
    units = [module for module in model.modules() if isinstance(module, FSDPModule)]
    for unit in units:
        unit.unshard()
    try:
        yield model
    finally:
        for unit in units:
            unit.reshard()
