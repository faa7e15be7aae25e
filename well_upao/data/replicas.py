"""``well-upao generate-replica``: the Well's simulated datasets re-made by our solvers, in the Well's own layout.

Per parameter set, the trajectories are split 80/10/10 into ``train/valid/test`` (at least one each) and every
split holds one file per parameter set named as the Well names it (``shear_flow_Reynolds_1e4_Schmidt_1e-1.hdf5``).
A file is laid out like the Well's: root attributes ``dataset_name, grid_type, n_spatial_dims, n_trajectories,
simulation_parameters`` and one per parameter (a number: constant within the file); ``/dimensions`` with ``time``
(float64) and float32 coordinates; ``/boundary_conditions/<axis>_<type>`` with masks; ``/scalars`` holding the
parameters as 0-d float32 (not sample varying); ``/t0_fields``, ``/t1_fields``, ``/t2_fields`` float32. Ours on
top: the root attribute ``well_upao_replica`` (JSON: generator, version, method, sizes, seed, the trajectories'
initial-condition knobs), so evaluate and leaderboard can label replica rows as such; its ``resolution`` lists the
simulation's sizes (for active matter the orientations after the two grid sizes). ``stats.yaml`` is computed
from ``train`` as for every dataset (``well_upao.data.stats``).

Output is atomic (a staging folder renamed when complete); trajectories are simulated two at a time on a thread
pool with one torch thread each (the solvers' FFTs and solves release the GIL).
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import h5py
import numpy as np
import torch
import yaml
from tqdm.auto import tqdm

from well_upao.data.atomic import atomic_write_text, staged_directory
from well_upao.data.generate import SPLITS, GenerationError
from well_upao.data.source import REPLICA_ATTRIBUTE
from well_upao.data.stats import FieldStatistics
from well_upao.data.well_format import write_layout
from well_upao.families.replicas.families import REPLICA_VERSION, REPLICAS, ReplicaFamily, ReplicaSize

#: shares of each parameter set's trajectories (the Well's 80/10/10)
SPLIT_FRACTIONS = {"train": 0.8, "valid": 0.1, "test": 0.1}


@dataclass
class ReplicaRequest:
    dataset: str
    out: Path
    shape: tuple[int, ...] | None = None
    n_steps: int | None = None
    n_traj_per_set: int | None = None
    full: bool = False
    #: indices into the parameter sets (``None``: all of them)
    sets: list[int] | None = None
    seed: int = 0
    overwrite: bool = False
    workers: int = 2


@dataclass
class ReplicaSummary:
    path: Path
    size: ReplicaSize
    parameter_sets: int
    files: int
    seconds: float


def resolve_size(family: ReplicaFamily, request: ReplicaRequest) -> ReplicaSize:
    base = family.well_size if request.full else family.cpu_size
    shape = tuple(int(n) for n in (request.shape or base.shape))
    n_steps = int(request.n_steps or base.n_steps)
    n_traj = int(request.n_traj_per_set or base.n_traj_per_set)
    try:
        shape = family.check_shape(shape)
    except ValueError as error:
        raise GenerationError(str(error)) from error
    if n_steps < 2:
        raise GenerationError("a replica needs at least 2 stored frames")
    if n_traj < len(SPLITS):
        raise GenerationError(f"--n-traj {n_traj} is too small: each parameter set needs one trajectory per split")
    return ReplicaSize(shape, n_steps, n_traj)


def split_of_set(n_traj: int, rng: np.random.Generator) -> dict[str, list[int]]:
    """A seeded 80/10/10 partition of one parameter set's trajectories, at least one in each split."""
    order = [int(i) for i in rng.permutation(n_traj)]
    n_valid = max(1, round(SPLIT_FRACTIONS["valid"] * n_traj))
    n_test = max(1, round(SPLIT_FRACTIONS["test"] * n_traj))
    return {
        "valid": sorted(order[:n_valid]),
        "test": sorted(order[n_valid : n_valid + n_test]),
        "train": sorted(order[n_valid + n_test :]),
    }


def chosen_sets(family: ReplicaFamily, request: ReplicaRequest) -> list[dict[str, float]]:
    """The parameter sets a request makes: the family's (full or CPU) sets, or those picked by ``request.sets``."""
    sets = family.parameter_sets(request.full)
    if request.sets is not None:
        unknown = [i for i in request.sets if not 0 <= i < len(sets)]
        if unknown:
            raise GenerationError(f"parameter sets {unknown} do not exist: {family.name} has {len(sets)} (0..)")
        sets = [sets[i] for i in request.sets]
    return sets


def plan_trajectories(
    family: ReplicaFamily, sets: list[dict[str, float]], n_traj_per_set: int, seed: int
) -> list[tuple[dict[str, float], list[dict[str, float]], dict[str, list[int]]]]:
    """Per parameter set: its scalars, each trajectory's initial-condition knobs and the split of its trajectories,
    all drawn in order from ``numpy.random.default_rng(seed)`` (what ``generate-replica --seed`` makes)."""
    rng = np.random.default_rng(seed)
    plans = []
    for scalars in sets:
        initial = [family.initial_condition(rng) for _ in range(n_traj_per_set)]
        plans.append((scalars, initial, split_of_set(n_traj_per_set, rng)))
    return plans


def generate_replica(request: ReplicaRequest, progress: bool = True) -> ReplicaSummary:
    """Simulate and write ``request.out / <dataset>`` (see the module docstring)."""
    if request.dataset not in REPLICAS:
        raise GenerationError(f"no replica generator for {request.dataset!r}; choose from {sorted(REPLICAS)}")
    family = REPLICAS[request.dataset]
    size = resolve_size(family, request)
    sets = chosen_sets(family, request)
    times = np.arange(size.n_steps, dtype=np.float64) * family.frame_dt
    plans = plan_trajectories(family, sets, size.n_traj_per_set, request.seed)
    started = time.perf_counter()
    layout = {spec.name: (spec.order, family.n_spatial_dims**spec.order) for spec in family.fields}
    statistics = FieldStatistics(layout)
    bar = tqdm(total=len(sets) * size.n_traj_per_set, desc=f"replica {family.name}", unit="traj", disable=not progress)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with (
            staged_directory(Path(request.out) / family.name, request.overwrite) as staging,
            ThreadPoolExecutor(max_workers=max(1, request.workers)) as pool,
        ):
            for split in SPLITS:
                (staging / "data" / split).mkdir(parents=True)
            n_files = 0
            for scalars, initial, splits in plans:
                simulated = pool.map(partial(family.simulate, scalars, shape=size.shape, times=times), initial)
                trajectories = []
                try:
                    for fields in simulated:
                        trajectories.append(fields)
                        bar.update(1)
                except FloatingPointError as error:  # nothing is written: the staging directory is removed
                    raise GenerationError(
                        f"{error}; choose resolved parameter sets with --sets (see --list-sets) or the Well's grid "
                        "with --full"
                    ) from error
                for split in SPLITS:
                    chosen = splits[split]
                    path = staging / "data" / split / f"{family.file_stem(scalars)}.hdf5"
                    write_replica_file(
                        path,
                        family,
                        size,
                        times,
                        scalars,
                        [trajectories[i] for i in chosen],
                        request,
                        [initial[i] for i in chosen],
                    )
                    n_files += 1
                    if split == "train":
                        for name in layout:
                            block = np.stack([trajectories[i][name] for i in chosen])
                            statistics.update_trajectories(name, block)
            stats_text = yaml.safe_dump(statistics.as_yaml_dict(), sort_keys=False)
            atomic_write_text(staging / "stats.yaml", stats_text)
    finally:
        torch.set_num_threads(threads)
        bar.close()
    return ReplicaSummary(Path(request.out) / family.name, size, len(sets), n_files, time.perf_counter() - started)


def write_replica_file(
    path: Path,
    family: ReplicaFamily,
    size: ReplicaSize,
    times: np.ndarray,
    scalars: dict[str, float],
    trajectories: list[dict[str, np.ndarray]],
    request: ReplicaRequest,
    initial: list[dict[str, float]],
) -> None:
    """One file of one parameter set and split, in the Well's layout (see the module docstring)."""
    with h5py.File(path, "w") as f:
        blocks = {s.name: np.stack([t[s.name] for t in trajectories]).astype(np.float32) for s in family.fields}
        datasets = write_layout(
            f,
            dataset_name=family.name,
            n_trajectories=len(trajectories),
            times=np.asarray(times, dtype=np.float32),  # the Well's dtype for time too (since replica v3)
            # the Well's dtype; the simulation's sizes may go beyond the grid's (active matter's orientations)
            coordinates=[np.asarray(c, dtype=np.float32) for c in family.axes(family.spatial_shape(size.shape))],
            boundary_types=family.boundary_types,
            scalar_names=family.scalar_names,
            scalar_values=scalars,
            fields=[(spec.name, spec.order, blocks[spec.name].shape) for spec in family.fields],
        )
        for name, block in blocks.items():
            datasets[name][...] = block
        for name in family.scalar_names:
            f.attrs[name] = float(scalars[name])
        f.attrs[REPLICA_ATTRIBUTE] = json.dumps(
            {
                "generator": f"well-upao generate-replica --dataset {family.name}",
                "version": REPLICA_VERSION,
                "method": family.method,
                "resolution": list(size.shape),
                "n_steps": size.n_steps,
                "seed": request.seed,
                "full_parameter_sets": request.full,
                "initial_conditions": initial,
            }
        )
