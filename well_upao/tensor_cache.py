"""A memoising decorator for functions that build constant tensors (index tables, masks).

``functools.lru_cache`` alone would keep whatever the first call made: a tensor created inside
``torch.inference_mode`` (The Well's validation loop runs in it) cannot be used later in autograd, so a table first
built during a validation would break the next training step. These tables are built outside inference mode,
whatever mode the caller is in.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

import torch

F = TypeVar("F", bound=Callable)


def cached_tensors(maxsize: int) -> Callable[[F], F]:
    def decorate(function: F) -> F:
        @functools.lru_cache(maxsize=maxsize)
        @functools.wraps(function)
        def build(*args, **kwargs):
            with torch.inference_mode(False):
                return function(*args, **kwargs)

        return build  # type: ignore[return-value]

    return decorate
