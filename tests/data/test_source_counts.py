"""``well_upao.data.source.WellSource``: what the benchmarks asked of a split without opening its files."""

from __future__ import annotations

from well_upao.data.generate import GenerationRequest, generate_dataset, split_trajectories
from well_upao.data.source import WellSource


def test_a_split_counts_its_trajectories(tmp_path):
    request = GenerationRequest(
        pde="tg2d", out=tmp_path, n_traj=8, resolution=8, n_steps=4, traj_per_file=3, valid_fraction=0.25
    )
    generate_dataset(request, progress=False)
    expected = split_trajectories(8, request.seed, request.valid_fraction)
    for split in ("train", "valid"):
        assert WellSource(tmp_path, "tg2d", split).n_trajectories() == len(expected[split]), split
