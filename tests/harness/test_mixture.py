"""The pretraining mixture: equal clips per dataset, global batches identical for any number of processes,
and the loader the training loop iterates."""

from __future__ import annotations

import pytest
import torch

from well_upao.data.generate import GenerationRequest, generate_dataset
from well_upao.harness.mixture import MixtureDataModule

FAMILIES = ["shallow_water_2d", "compressible_ns_1d"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    base = tmp_path_factory.mktemp("corpus")
    for name in FAMILIES:
        resolution = 32 if name.endswith("1d") else 16
        generate_dataset(GenerationRequest(pde=name, out=base, n_traj=3, resolution=resolution, n_steps=8), False)
    return base


def test_equal_clips_per_dataset_and_identical_global_batches(corpus):
    single = MixtureDataModule(str(corpus), FAMILIES, batch_size=4, n_steps_input=4, clips_per_dataset=8)
    batches = single.global_batches(epoch=1)
    assert sorted(name for name, _ in batches) == ["compressible_ns_1d"] * 2 + ["shallow_water_2d"] * 2

    def same(a, b):
        return len(a) == len(b) and all(x[0] == y[0] and (x[1] == y[1]).all() for x, y in zip(a, b, strict=True))

    assert same(batches, single.global_batches(epoch=1)) and not same(batches, single.global_batches(epoch=2))
    ranks = [
        MixtureDataModule(
            str(corpus), FAMILIES, batch_size=2, n_steps_input=4, clips_per_dataset=8, world_size=2, rank=r
        )
        for r in (0, 1)
    ]
    first_single = next(single.train_batches(1))
    first_split = [next(r.train_batches(1)) for r in ranks]
    assert first_single.dataset == first_split[0].dataset == first_split[1].dataset
    torch.testing.assert_close(torch.cat([b.frames for b in first_split]), first_single.frames)
    active = {"shallow_water_2d": 3, "compressible_ns_1d": 3}[first_single.dataset]  # h, Vx, Vy / rho, p, Vx
    assert first_single.frames.shape[-1] == 18 and first_single.mask.sum() == active


def test_the_loader_gives_the_loop_slot_batches_of_the_epoch(corpus):
    mixture = MixtureDataModule(str(corpus), FAMILIES, batch_size=4, n_steps_input=4, clips_per_dataset=8)
    loader = mixture.train_dataloader()
    loader.set_epoch(2)
    batches = list(loader)
    assert len(batches) == len(loader) == mixture.steps_per_epoch()
    expected = next(mixture.train_batches(2))
    first = batches[0]
    assert first["dataset"] == expected.dataset and first["input_fields"].shape[1] == 4
    torch.testing.assert_close(torch.cat([first["input_fields"], first["output_fields"]], 1), expected.frames)
    torch.testing.assert_close(first["slot_mask"], expected.mask)
    assert mixture.checkpoint_info()["datasets"] == FAMILIES and mixture.checkpoint_info()["data"]["n_steps_input"] == 4
