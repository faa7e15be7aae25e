"""Same command, same bytes: generated datasets do not depend on how many trajectories are generated, how they are
grouped into files, write units or threads, nor on the CPU.

The CPU cannot be chosen in a test, so two checks stand in for it: a golden digest per exact dataset committed
here (computed on one machine, checked on every other), and generation under other instruction sets of this
machine (numpy's dispatched SIMD targets disabled, OpenBLAS forced to older kernels), which reproduces the
differences seen between Intel and AMD machines before these datasets were made portable.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

import well_upao.data.generate as generate
from well_upao.data.digest import dataset_digest
from well_upao.data.generate import GenerationRequest, generate_dataset
from well_upao.data.well_format import EXACT_GROUP, FIELD_GROUPS
from well_upao.datasets_exact import EXACT_PDES

#: the small size of every exact dataset used below (also the ``small_datasets`` fixture's size)
RESOLUTION = {1: 64, 2: 16, 3: 8}
N_STEPS, N_TRAJ, TRAJ_PER_FILE = 12, 6, 2

#: dataset_digest of each exact dataset at the size above, seed 42 (computed on an AMD EPYC; must hold on any CPU)
GOLDEN_DIGESTS = {
    "tg2d": "46af11a202a968d1577a668d244f4d377f75618897acbab3abdb4e37a43b5fb2",
    "wave2d": "8f7317a7fda1a4470b31144332246a18cb3537c7d0d3e6b10e298a712e40b307",
    "advdiff2d": "95db7d3bde47e2e0f1d6a46e2d94992e9f6ad3de1102b85e2b6cf6e043bdf707",
    "burgers2d": "4939f719a48298c375371c78f89268ea71f7c7f7454634c565121abf2f3e564e",
    "burgers1d": "42d1b47866fe18458ef767b579f83a251696bdc0b4d3c5269e5a173f143a69eb",
    "adv1d": "6654300a5d8a63b23060448fdfc8821eea4fe3749b549e4db81e5e307e2459b2",
    "adv3d": "afaec72a5cdc9061217ff27a05c2cf32010c8d10e37a08c55252c637c1074b7d",
}


def small_request(name: str, out: Path, **overrides) -> GenerationRequest:
    size = dict(
        resolution=RESOLUTION[EXACT_PDES[name].n_spatial_dims],
        n_steps=N_STEPS,
        n_traj=N_TRAJ,
        traj_per_file=TRAJ_PER_FILE,
    )
    return GenerationRequest(pde=name, out=out, **{**size, **overrides})


def trajectory_bytes(dataset_dir: Path) -> dict[int, bytes]:
    """Every stored field value of each trajectory (train and valid files), by global trajectory index."""
    out: dict[int, bytes] = {}
    for split in ("train", "valid"):
        for path in sorted((dataset_dir / "data" / split).glob("*.hdf5")):
            with h5py.File(path, "r") as f:
                for slot, index in enumerate(f[EXACT_GROUP]["trajectory_index"][()]):
                    fields = [f[group][name][slot] for group in FIELD_GROUPS for name in sorted(f[group])]
                    out[int(index)] = b"".join(np.ascontiguousarray(v).tobytes() for v in fields)
    return out


@pytest.mark.parametrize("name", list(EXACT_PDES))
def test_golden_digest(small_datasets, name):
    """The committed digest: the same trajectories, parameters, attributes and stats.yaml on every machine."""
    assert dataset_digest(small_datasets / name) == GOLDEN_DIGESTS[name]


@pytest.mark.parametrize("name", list(EXACT_PDES))
def test_same_bytes_whatever_the_count_files_write_units_and_threads(small_datasets, tmp_path, monkeypatch, name):
    reference_dir = small_datasets / name
    reference = trajectory_bytes(reference_dir)
    stats = (reference_dir / "stats.yaml").read_bytes()
    digest = dataset_digest(reference_dir)

    # more trajectories: the first ones are unchanged (the split, hence stats.yaml, is not)
    generate_dataset(small_request(name, tmp_path / "more", n_traj=N_TRAJ + 3), progress=False)
    more = trajectory_bytes(tmp_path / "more" / name)
    assert all(more[i] == reference[i] for i in reference)

    # one trajectory per file: same values and statistics, other files
    generate_dataset(small_request(name, tmp_path / "files", traj_per_file=1), progress=False)
    assert trajectory_bytes(tmp_path / "files" / name) == reference
    assert (tmp_path / "files" / name / "stats.yaml").read_bytes() == stats

    # every write unit a single time step of a single trajectory, then everything in one unit
    for out, batch_bytes, block_bytes in (("steps", 0, 1), ("one_unit", 2**30, 2**30)):
        monkeypatch.setattr(generate, "BATCH_BYTES", batch_bytes)
        monkeypatch.setattr(generate, "BLOCK_BYTES", block_bytes)
        generate_dataset(small_request(name, tmp_path / out), progress=False)
        assert dataset_digest(tmp_path / out / name) == digest, out
    monkeypatch.undo()

    for threads in (1, 3):
        monkeypatch.setattr(generate, "MAX_EVALUATION_THREADS", threads)
        monkeypatch.setattr(os, "cpu_count", lambda: 8)
        generate_dataset(small_request(name, tmp_path / f"threads{threads}"), progress=False)
        assert dataset_digest(tmp_path / f"threads{threads}" / name) == digest, threads


def cpu_flags() -> set[str]:
    try:
        line = next(row for row in Path("/proc/cpuinfo").read_text().splitlines() if row.startswith("flags"))
    except (OSError, StopIteration):
        return set()
    return set(line.split(":", 1)[1].split())


def other_instruction_sets() -> dict[str, dict[str, str]]:
    """Environments that make this machine compute like an older one: numpy with every dispatched SIMD target off
    (baseline only: no AVX2/AVX-512 exp, no FMA), OpenBLAS forced to its SSE3 kernel, and to its AVX2 kernel (the
    one an AMD Zen or Intel Haswell machine gets) where the CPU supports it."""
    from numpy._core._multiarray_umath import __cpu_dispatch__

    variants = {
        "numpy baseline SIMD, OpenBLAS Prescott": {
            "NPY_DISABLE_CPU_FEATURES": " ".join(__cpu_dispatch__),
            "OPENBLAS_CORETYPE": "Prescott",
        }
    }
    if {"avx2", "fma"} <= cpu_flags():
        variants["OpenBLAS Haswell"] = {"OPENBLAS_CORETYPE": "Haswell"}
    return variants


DIGEST_SCRIPT = """
import json, sys
from pathlib import Path
from well_upao.data.digest import dataset_digest
from well_upao.data.generate import GenerationRequest, generate_dataset
from well_upao.datasets_exact import EXACT_PDES
out, size = Path(sys.argv[1]), json.loads(sys.argv[2])
digests = {}
for name, pde in EXACT_PDES.items():
    resolution = size["resolution"][str(pde.n_spatial_dims)]
    request = GenerationRequest(pde=name, out=out, resolution=resolution, **size["request"])
    generate_dataset(request, progress=False)
    digests[name] = dataset_digest(out / name)
print(json.dumps(digests))
"""
SIZE_ARGUMENT = json.dumps(
    {"resolution": RESOLUTION, "request": {"n_traj": N_TRAJ, "n_steps": N_STEPS, "traj_per_file": TRAJ_PER_FILE}}
)


@pytest.mark.skipif(sys.platform != "linux" or os.uname().machine != "x86_64", reason="x86-64 Linux CPU switches")
@pytest.mark.parametrize("variant", list(other_instruction_sets()))
def test_same_bytes_on_other_instruction_sets(small_datasets, tmp_path, variant):
    environment = {**os.environ, **other_instruction_sets()[variant]}
    command = [sys.executable, "-c", DIGEST_SCRIPT, str(tmp_path), SIZE_ARGUMENT]
    result = subprocess.run(command, env=environment, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    digests = json.loads(result.stdout.strip().splitlines()[-1])
    assert digests == {name: dataset_digest(small_datasets / name) for name in EXACT_PDES}


@pytest.mark.parametrize("name", ["diffusion_reaction_2d", "compressible_ns_1d"])
def test_simulated_families_do_not_depend_on_count_files_or_threads(tmp_path, monkeypatch, name):
    """Simulated (pretraining) families integrate one trajectory per call from its own seed: the same bytes for
    trajectory i however many are generated, however they are filed, on one or two torch threads."""
    import torch

    resolution = 16 if name.endswith("2d") else 32
    base = dict(pde=name, resolution=resolution, n_steps=3, dt=0.05)
    generate_dataset(GenerationRequest(out=tmp_path / "a", n_traj=3, traj_per_file=3, **base), progress=False)
    reference = trajectory_bytes(tmp_path / "a" / name)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        generate_dataset(GenerationRequest(out=tmp_path / "b", n_traj=4, traj_per_file=1, **base), False)
    finally:
        torch.set_num_threads(threads)
    other = trajectory_bytes(tmp_path / "b" / name)
    assert all(other[i] == reference[i] for i in reference)
