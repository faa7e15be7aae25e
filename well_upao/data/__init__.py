"""Data: the Well-format writer and validator, the channel-slot table, dataset generation and registration, and the
import of a user's arrays: ``well_upao.data.write_dataset`` (``well_upao.data.importing``), loaded when first used so
that importing this package stays light (``well-upao --help`` loads no torch)."""

from __future__ import annotations

from typing import Any

__all__ = ["write_dataset"]


def __getattr__(name: str) -> Any:
    if name == "write_dataset":
        from well_upao.data.importing import write_dataset

        return write_dataset
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
