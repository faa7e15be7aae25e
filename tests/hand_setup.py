"""A UPAO setup written by hand, for tests of the validation and the judge without a run."""

from __future__ import annotations

import torch

from well_upao.harness.normalization import ModelSpace
from well_upao.trainers.rollout import RolloutSettings
from well_upao.trainers.upao_setup import UpaoSetup


def hand_setup(**given) -> UpaoSetup:
    """``UpaoSetup`` with the fields a test gives and placeholders for the others (no physics, no objective: a test
    that reads them gives them)."""
    values = dict(
        physics=None,
        objective=None,
        channel_slots=(),
        one_frame=False,
        history=8,
        rollout=RolloutSettings(),
        space=ModelSpace(),
        time_axis=None,
        scalar_names=(),
        device=torch.device("cpu"),
        dims=2,
        formatter="channels_last_default",
        lambda_bc=1e4,
        normalization="norm",
    )
    return UpaoSetup(**(values | given))
