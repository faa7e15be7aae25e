"""What a run writes and reads back: its checkpoints (``recent.pt``, ``best.pt``, in our schema with the Well's
keys, INTERFACES.md section 4) and ``metrics.jsonl``, one JSON line per epoch.

Facts that reports and later commands need are fields of those lines, never log wording:

* every line: ``epoch``, ``step`` (optimizer steps so far), ``seconds``;
* every validation line: ``valid`` (the selection criterion), ``best_valid``, ``best_epoch`` (the epoch of
  ``best.pt``; 0 is the model as training started) and ``kept_start`` (``best.pt`` is still the starting model),
  ``kept_start_reason`` (why the selection kept it, when something other than the criterion decided: ``guard: ...``),
  ``guard_rejected`` / ``guard_reason`` (the loss's guard refused this epoch's candidate, and why),
  ``guard_rejections`` (how many so far), ``guard_unchecked`` (the guard rules it could not check and the scores
  they lacked, else ``None``); a UPAO run's label-free scorecard ``valid_score_<name>`` and the starting
  model's on the same batches ``valid_score_start_<name>`` (``well_upao.physics.scores``), with
  ``valid_unavailable_scores`` (each score it could not compute and why, else ``None``);
* the NSLoRA switch's line: ``nslora_switch_epoch`` and ``||DeltaW||`` on both sides;
* the first line a process writes: the loss's facts (``trainers.loop.TrainingLoss.run_facts``), e.g. the
  discretisation an ``auto`` UPAO run chose, its floors (``upao_floors``; when empty, ``upao_floors_reason``), the
  PDE constants it used and whether its guard is on (``guard``).

The lines are written and read back by ``well_upao.harness.metrics_file`` (``append_metrics``, ``read_metrics``),
below ``evaluate``, which reads them too; a run's folder and checkpoint are found by ``well_upao.harness.runs``.
"""

from __future__ import annotations

import os

import torch
from omegaconf import OmegaConf

from well_upao.harness.mixture import MixtureDataModule
from well_upao.models.assembly import RUN_CONFIG, resolved_model_node


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
        run_config = OmegaConf.load(config_file)
        if run_config.get("model") is not None:
            description["hydra"] = resolved_model_node(run_config)
    return description
