"""``trainer.init_from``: start a run from another run's weights.

Our backbone loads them as they are (its 18 slots are the same for every dataset). A one-frame harness model
trained on a dataset with other channels gets its channel-facing layers re-shaped along the channel axis, shared
channels copied and missing ones zero (the paper's cross-target construction, ``well_upao.models.transfer``).
"""

from __future__ import annotations

import logging

from torch import nn

from well_upao.models.checkpoint import clean_state_dict, read_checkpoint
from well_upao.models.kinds import is_sequence_model
from well_upao.models.transfer import adapt_state_dict

logger = logging.getLogger(__name__)


def initialize_from(model: nn.Module, path: str, n_fields: int, n_constant_fields: int, history: int) -> None:
    """Load ``path``'s weights into ``model`` (a model for a dataset of ``n_fields`` channels and
    ``n_constant_fields`` constant channels, trained with ``history`` input frames)."""
    payload = read_checkpoint(path)
    state = clean_state_dict(payload["state_dict"])
    if is_sequence_model(model):
        model.load_state_dict(state)
        logger.info(f"started from {path} ({len(state)} tensors)")
        return
    source = payload["model"].get("harness_args") or {}
    if not source.get("dim_out"):
        raise ValueError(f"{path} does not say how many channels its model had (not a harness model checkpoint)")
    c_src = int(source["dim_out"])
    if int(source["dim_in"]) != history * c_src + n_constant_fields:
        raise ValueError(
            f"{path} read {source['dim_in']} input channels, not {history} steps of its {c_src} channels "
            f"+ {n_constant_fields} constants: train with the same history (data.n_steps_input)"
        )
    adapted, changed = adapt_state_dict(state, model.state_dict(), c_src, n_fields, history, n_constant_fields)
    model.load_state_dict(adapted)
    logger.info(
        f"started from {path} ({payload['model'].get('dataset')}, {c_src} channels -> {n_fields}); "
        f"re-shaped along the channel axis: {', '.join(changed) or 'nothing'}"
    )
