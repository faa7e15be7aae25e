"""A run's ``metrics.jsonl`` (``<run>/artifacts/metrics.jsonl``): one JSON line per epoch, appended by the main
process, read back by evaluate, the quickstart and the benchmarks. The fields are documented in
``well_upao.trainers.records``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from well_upao.data.atomic import atomic_write_text
from well_upao.distributed import is_main_process

METRICS_FILE = "metrics.jsonl"


def metrics_path(artifact_folder: str | Path) -> Path:
    return Path(artifact_folder) / METRICS_FILE


def append_metrics(artifact_folder: str | Path, values: dict[str, Any]) -> dict[str, Any]:
    """Append one line (tensors as numbers) on the main process; returns the line as written."""
    clean = {k: (v.item() if isinstance(v, torch.Tensor) else v) for k, v in values.items()}
    if is_main_process():
        with open(metrics_path(artifact_folder), "a") as stream:
            stream.write(json.dumps(clean, default=float) + "\n")
    return clean


def forget_unfinished_epochs(artifact_folder: str | Path, starting_epoch: int) -> None:
    """Drop lines of epochs the checkpoint does not count as done (a run killed between writing an epoch's line
    and its checkpoint), so that a resumed run logs every epoch once."""
    path = metrics_path(artifact_folder)
    if not is_main_process() or not path.is_file():
        return
    lines = path.read_text().splitlines(keepends=True)
    kept = [line for line in lines if json.loads(line).get("epoch", 0) < starting_epoch]
    if len(kept) != len(lines):
        atomic_write_text(path, "".join(kept))


def read_metrics(run_or_artifacts: str | Path) -> list[dict[str, Any]]:
    """The lines of a run's ``metrics.jsonl`` (``<run>/artifacts/metrics.jsonl``, or a folder holding it)."""
    folder = Path(run_or_artifacts)
    path = metrics_path(folder / "artifacts") if (folder / "artifacts").is_dir() else metrics_path(folder)
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def first_value(lines: list[dict[str, Any]], key: str) -> Any:
    """The first value of ``key`` in a run's lines (``None`` when absent)."""
    return next((line[key] for line in lines if key in line), None)


def last_value(lines: list[dict[str, Any]], key: str) -> Any:
    """The last value of ``key`` in a run's lines (``None`` when absent)."""
    return next((line[key] for line in reversed(lines) if key in line), None)


def validation_lines(lines: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The lines that carry a validation (``valid``), in order."""
    return (line for line in lines if "valid" in line)
