"""``well_upao.harness.model_factory``: ``+seed`` reaches the model through its config, so a run through
``python -m the_well.benchmark.train`` (whose ``train`` seeds nothing) draws the same adapter weights every time."""

from __future__ import annotations

import torch
from hydra import compose, initialize_config_module
from hydra.utils import instantiate


def adapter_weights(base, overrides: list[str], draws_before: int) -> torch.Tensor:
    """The first adapter's ``lora_A`` of ``model=na_nslora`` built from the harness's config as the Well's train.py
    builds it, after ``draws_before`` unrelated draws from torch's generator (what the run did before)."""
    with initialize_config_module(config_module="well_upao.configs", version_base=None):
        cfg = compose(config_name="config", overrides=["model=na_nslora", "data=wave2d", *overrides])
    torch.randn(draws_before)
    model = instantiate(cfg.model, n_spatial_dims=2, spatial_resolution=[16, 16], dim_in=16, dim_out=2)
    return next(p for name, p in model.named_parameters() if name.endswith("lora_A")).detach().clone()


def test_a_seed_gives_the_same_adapters_whatever_the_run_drew_before(small_datasets, monkeypatch):
    monkeypatch.setenv("WELL_BASE_PATH", str(small_datasets))
    seeded = [adapter_weights(small_datasets, ["+seed=3"], draws) for draws in (0, 5, 17)]
    assert all(torch.equal(seeded[0], other) for other in seeded[1:])
    assert not torch.equal(seeded[0], adapter_weights(small_datasets, ["+seed=4"], 0))  # the seed matters
    # negative control: without +seed, what ran before decides the draw (the behaviour this fixes)
    unseeded = [adapter_weights(small_datasets, [], draws) for draws in (0, 5)]
    assert not torch.equal(unseeded[0], unseeded[1])
