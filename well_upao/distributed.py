"""Small helpers for code that runs under ``torchrun`` as well as in one process."""

from __future__ import annotations

import torch.distributed as dist


def is_main_process() -> bool:
    """True in a single process and on rank 0 of a process group: the one that writes files and logs."""
    return not dist.is_initialized() or dist.get_rank() == 0
