"""What a run writes and reads back: its checkpoints (``recent.pt``, ``best.pt``, in our schema with the Well's
keys, INTERFACES.md section 4) and ``metrics.jsonl``, one JSON line per epoch.

Facts that reports and later commands need are fields of those lines, never log wording:

* every line: ``epoch``, ``step`` (optimizer steps so far), ``seconds``;
* every validation line: ``valid`` (the selection criterion), ``best_valid``, ``best_epoch`` (the epoch of
  ``best.pt``; 0 is the model as training started) and ``kept_start`` (``best.pt`` is still the starting model),
  ``kept_start_reason`` (why the selection kept it, when something other than the criterion decided: ``guard: ...``),
  ``guard_rejected`` / ``guard_reason`` (the loss's guard refused this epoch's candidate, and why),
  ``guard_rejections`` (how many so far); a UPAO run's label-free scorecard ``valid_score_<name>`` and the starting
  model's on the same batches ``valid_score_start_<name>`` (``well_upao.physics.scores``);
* the NSLoRA switch's line: ``nslora_switch_epoch`` and ``||DeltaW||`` on both sides;
* the first line a process writes: the loss's facts (``trainers.loop.TrainingLoss.run_facts``), e.g. the
  discretisation an ``auto`` UPAO run chose, its floors (``upao_floors``), the PDE constants it used and whether
  its guard is on (``guard``).

:func:`read_metrics` reads them back.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from well_upao.data.atomic import atomic_write_text
from well_upao.distributed import is_main_process
from well_upao.harness.mixture import MixtureDataModule
from well_upao.models.assembly import RUN_CONFIG, resolved_model_node

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


def model_description(model: torch.nn.Module, datamodule, formatter_name: str, checkpoint_folder: str) -> dict:
    """How the harness built the model, for checkpoints: dataset, formatter, constructor sizes, and its Hydra node
    (from the run's ``extended_config.yaml``, resolved) for models without their own stored config. A datamodule
    that is not one Well dataset (a mixture) describes itself instead (its ``checkpoint_info``)."""
    if isinstance(datamodule, MixtureDataModule):
        return {}
    meta = datamodule.train_dataset.metadata
    history = datamodule.train_dataset.n_steps_input
    description = {
        "dataset": datamodule.source.name,
        "formatter": formatter_name,
        "harness_args": {
            "n_spatial_dims": meta.n_spatial_dims,
            "spatial_resolution": list(meta.spatial_resolution),
            "dim_in": history * meta.n_fields + meta.n_constant_fields,
            "dim_out": meta.n_fields,
        },
    }
    config_file = os.path.join(os.path.dirname(checkpoint_folder), RUN_CONFIG)
    if not getattr(model, "config", None) and os.path.isfile(config_file):
        from omegaconf import OmegaConf

        run_config = OmegaConf.load(config_file)
        if run_config.get("model") is not None:
            description["hydra"] = resolved_model_node(run_config)
    return description
