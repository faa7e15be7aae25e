"""Generate a dataset in the Well's layout from any trajectory family, streaming trajectory by trajectory.

Directory written (a Well base path ``out`` and the dataset name ``pde``):

    out/<pde>/data/train/<pde>_train_000.hdf5 ...
    out/<pde>/data/valid/<pde>_valid_000.hdf5 ...
    out/<pde>/data/test/...          (see ``split_trajectories``)
    out/<pde>/stats.yaml             (from train/ only)

Trajectory ``i`` draws its parameters from ``numpy.random.default_rng([seed, i])`` and is evaluated with portable
float64 arithmetic (``well_upao.families.portable``), so its stored bytes depend neither on how many others
are generated, nor on how they are grouped into files, write units or threads, nor on the x86 CPU model;
``stats.yaml`` is reduced with exact sums, so it does not either (``tests/data/test_reproducibility.py``, whose
instruction-set switches run on x86-64 Linux: other architectures are untested). Fields are evaluated in
bounded write units (a few small trajectories, or one large trajectory's block of time steps, see
``write_units``), so memory does not grow with the dataset, the resolution or the number of steps.
"""

from __future__ import annotations

import math
import os
import queue
import shutil
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml
from threadpoolctl import threadpool_limits
from tqdm.auto import tqdm

from well_upao.data.atomic import atomic_write_text, staged_directory
from well_upao.data.datasets import DATASETS, generators
from well_upao.data.source import SPLITS, split_files
from well_upao.data.stats import FieldStatistics
from well_upao.data.well_format import GridSpec, WellFileWriter
from well_upao.families.base import TrajectoryFamily, TrajectoryParameters

#: float64 working-set budget of one evaluation call (longer trajectories are split into time blocks)
BLOCK_BYTES = 64 * 2**20
#: trajectories of at most this many float32 bytes are evaluated, written and reduced several per call (the
#: per-call overhead of Python, HDF5 and numpy dominates a 400 kB 1D trajectory)
BATCH_BYTES = 8 * 2**20
#: the writer asks the kernel to start writeback after this many bytes, so disk and evaluation overlap (a single
#: fsync at the end of a file would leave the disk idle while evaluating and the CPUs idle while flushing)
SYNC_BYTES = 32 * 2**20
#: evaluation threads of closed-form families (fewer on machines with fewer cores)
MAX_EVALUATION_THREADS = 4
#: target size of one HDF5 file when --traj-per-file is not given
FILE_BYTES = 512 * 2**20


class GenerationError(ValueError):
    """Invalid generation request (reported as a one-line error by the CLI)."""


@dataclass(frozen=True)
class GenerationRequest:
    pde: str
    out: Path = Path("datasets")
    n_traj: int | None = None
    resolution: int | None = None
    n_steps: int | None = None
    dt: float | None = None
    seed: int = 42
    traj_per_file: int | None = None
    overwrite: bool = False
    valid_fraction: float = 0.1
    test_fraction: float = 0.0
    #: ``dimensions/time`` in ``float64`` (exact steps, the default) or ``float32`` (as the Well stores it); the
    #: fields are evaluated at the float64 times either way
    time_dtype: str = "float64"


@dataclass
class GenerationSummary:
    pde: str
    path: Path
    grid: GridSpec
    split_sizes: dict[str, int]
    n_files: dict[str, int]
    test_mirrors_valid: bool
    bytes_written: int
    seconds: float
    parameter_ranges: dict[str, tuple[float, float]] = field(default_factory=dict)

    @property
    def megabytes_per_second(self) -> float:
        return self.bytes_written / 2**20 / max(self.seconds, 1e-9)


def split_trajectories(
    n_traj: int, seed: int, valid_fraction: float = 0.1, test_fraction: float = 0.0
) -> dict[str, list[int]]:
    """Partition trajectory indices ``0..n_traj-1`` by a seeded permutation.

    ``valid`` gets ``max(1, round(valid_fraction * n))`` trajectories (the paper: 90% / 10%, seed 42). With
    ``test_fraction == 0`` (the default, the paper's protocol "the validation partition serves as the
    evaluation set") ``test`` lists the same trajectories as ``valid``; otherwise a separate held-out set of
    ``max(1, round(test_fraction * n))`` trajectories is carved out before ``train``.
    """
    if not 0.0 < valid_fraction < 1.0 or not 0.0 <= test_fraction < 1.0:
        raise GenerationError("valid/test fractions must lie in (0, 1) and [0, 1)")
    n_valid = max(1, round(valid_fraction * n_traj))
    n_test = max(1, round(test_fraction * n_traj)) if test_fraction > 0 else 0
    if n_traj - n_valid - n_test < 1:
        raise GenerationError(
            f"--n-traj {n_traj} is too small: need at least one train trajectory besides "
            f"{n_valid} valid and {n_test} test trajectories"
        )
    permutation = np.random.default_rng(seed).permutation(n_traj)
    valid = sorted(int(i) for i in permutation[:n_valid])
    test = sorted(int(i) for i in permutation[n_valid : n_valid + n_test]) if n_test else list(valid)
    train = sorted(int(i) for i in permutation[n_valid + n_test :])
    return {"train": train, "valid": valid, "test": test}


def trajectory_rng(seed: int, index: int) -> np.random.Generator:
    return np.random.default_rng([seed, index])


def bytes_per_trajectory(pde: TrajectoryFamily, grid: GridSpec) -> int:
    """Stored (float32) bytes of one trajectory over all fields."""
    per_step = sum(math.prod(pde.field_shape(spec, grid.resolution)) for spec in pde.fields)
    return 4 * per_step * grid.n_steps


def no_generator(name: str, kind: str) -> str:
    """What to do about a registered dataset or PDE (``kind``) that nothing generates: re-make or download one of
    the Well's datasets, convert PDEBench's files, or import the user's own arrays."""
    origin = DATASETS[name].origin if name in DATASETS else "user"
    if origin == "well":
        return (
            f"{name!r} is one of the Well's datasets, which generate-exact does not make: re-make it at CPU size with "
            f"`well-upao generate-replica --dataset {name}` or download it with the-well-download"
        )
    if origin == "simulated":
        return f"{name!r} has no solver here: convert PDEBench's files of it with `well-upao convert-pdebench FILE`"
    return (
        f"{kind} {name!r} is registered but has no generator (no DatasetSpec with family=... makes its data): "
        f"write your own arrays as its dataset with `well-upao import FILE --dataset {name}` (docs/your-data.md), or "
        "register a TrajectoryFamily as its DatasetSpec's family"
    )


def resolve_request(
    request: GenerationRequest, family: TrajectoryFamily | None = None
) -> tuple[TrajectoryFamily, GridSpec, int, int]:
    """Apply the family's defaults and validate sizes; returns (family, grid, n_traj, traj_per_file)."""
    if family is None:
        families = generators()
        if request.pde in DATASETS and request.pde not in families:
            raise GenerationError(no_generator(request.pde, "dataset"))
        if request.pde not in families:
            raise GenerationError(
                f"unknown PDE {request.pde!r}; choose from {', '.join(generators('exact'))} or 'all' "
                f"(simulated: {', '.join(generators('simulated'))})"
            )
        family = families[request.pde]
    pde = family
    resolution = pde.default_resolution if request.resolution is None else request.resolution
    n_steps = pde.default_n_steps if request.n_steps is None else request.n_steps
    dt = pde.default_dt if request.dt is None else request.dt
    n_traj = pde.default_n_traj if request.n_traj is None else request.n_traj
    if resolution < 4:
        raise GenerationError(f"--resolution must be at least 4 (got {resolution})")
    if n_steps < 2:
        raise GenerationError(f"--n-steps must be at least 2 (got {n_steps})")
    if not (dt > 0 and math.isfinite(dt)):
        raise GenerationError(f"--dt must be a positive number (got {dt})")
    if n_traj < 2:
        raise GenerationError(f"--n-traj must be at least 2 (one train and one valid trajectory; got {n_traj})")
    if request.time_dtype not in ("float64", "float32"):
        raise GenerationError(f"--time-dtype must be float64 or float32 (got {request.time_dtype!r})")
    grid = GridSpec(resolution=resolution, n_steps=n_steps, dt=dt, time_dtype=request.time_dtype)
    traj_per_file = request.traj_per_file
    if traj_per_file is None:
        traj_per_file = max(1, FILE_BYTES // bytes_per_trajectory(pde, grid))
    if traj_per_file < 1:
        raise GenerationError(f"--traj-per-file must be at least 1 (got {traj_per_file})")
    return pde, grid, n_traj, traj_per_file


def check_free_space(directory: Path, needed: int) -> None:
    probe = directory
    while not probe.exists():
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    if needed > free:
        raise OSError(
            28,
            f"not enough disk space under {probe}: the dataset needs {needed / 2**30:.2f} GiB, "
            f"{free / 2**30:.2f} GiB free",
        )


def write_units(pde: TrajectoryFamily, grid: GridSpec, n_slots: int) -> list[tuple[int, int, int, int]]:
    """The ``(first slot, stop slot, first step, stop step)`` rectangles of one file, each evaluated, written and
    reduced by one call: groups of whole trajectories up to ``BATCH_BYTES`` (always whole trajectories for
    families that integrate in time), else one trajectory in time blocks whose float64 fields fit
    ``BLOCK_BYTES``."""
    per_trajectory = bytes_per_trajectory(pde, grid)
    if per_trajectory <= BATCH_BYTES or not pde.streams_in_time:
        group = max(1, BATCH_BYTES // per_trajectory)
        return [(first, min(first + group, n_slots), 0, grid.n_steps) for first in range(0, n_slots, group)]
    steps = max(1, BLOCK_BYTES // (2 * per_trajectory // grid.n_steps))
    return [
        (slot, slot + 1, start, min(start + steps, grid.n_steps))
        for slot in range(n_slots)
        for start in range(0, grid.n_steps, steps)
    ]


def generate_dataset(
    request: GenerationRequest, progress: bool = True, family: TrajectoryFamily | None = None
) -> GenerationSummary:
    """Write ``request.out / <family name>`` atomically and return what was written.

    The family is ``request.pde`` looked up among the registered datasets' generators (exact, simulated, a
    user's), or ``family`` itself (e.g. a PDEBench file being converted)."""
    pde, grid, n_traj, traj_per_file = resolve_request(request, family)
    splits = split_trajectories(n_traj, request.seed, request.valid_fraction, request.test_fraction)
    mirror_test = request.test_fraction == 0
    destination = Path(request.out) / pde.name
    check_free_space(destination.parent, n_traj * bytes_per_trajectory(pde, grid) + 2**20)
    ranges: dict[str, list[float]] = {}
    n_files: dict[str, int] = {}
    started = time.perf_counter()

    bar = tqdm(total=n_traj, desc=f"generate {pde.name}", unit="traj", disable=not progress)
    # Evaluation and statistics run on a small thread pool and every HDF5 call in order on one background thread
    # (no two threads touch a file), so that they overlap. These threads fill the cores already: BLAS's own worker
    # threads would only contend with them (measured: 1D generation 1.4x slower with them).
    with (
        threadpool_limits(limits=1, user_api="blas"),
        staged_directory(destination, request.overwrite) as staging,
        _Pipeline(pde, pde.grid_axes(grid.resolution), grid.times(), bar) as pipeline,
    ):
        for split in SPLITS:
            split_dir = staging / "data" / split
            split_dir.mkdir(parents=True)
            if split == "test" and mirror_test:
                pipeline.drain()  # valid/ is complete on disk
                n_files[split] = mirror_files(staging / "data" / "valid", split_dir, "valid", "test")
                continue
            indices = splits[split]
            chunks = [indices[i : i + traj_per_file] for i in range(0, len(indices), traj_per_file)]
            n_files[split] = len(chunks)
            for file_number, chunk in enumerate(chunks):
                path = split_dir / f"{pde.name}_{split}_{file_number:03d}.hdf5"
                writer = WellFileWriter(str(path), pde, grid, chunk, request.seed, SYNC_BYTES)
                for p in pipeline.write_file(writer, request.seed, with_statistics=split == "train"):
                    for name, value in p.scalars.items():
                        low, high = ranges.setdefault(name, [value, value])
                        ranges[name] = [min(low, value), max(high, value)]
        pipeline.drain()
        stats = pipeline.statistics()
        atomic_write_text(staging / "stats.yaml", yaml.safe_dump(stats.as_yaml_dict(), sort_keys=False))
    bar.close()
    return GenerationSummary(
        pde=pde.name,
        path=destination,
        grid=grid,
        split_sizes={k: len(v) for k, v in splits.items()},
        n_files=n_files,
        test_mirrors_valid=mirror_test,
        bytes_written=n_traj * bytes_per_trajectory(pde, grid),
        seconds=time.perf_counter() - started,
        parameter_ranges={k: (v[0], v[1]) for k, v in ranges.items()},
    )


class _Pipeline:
    """Evaluate a file's write units on a thread pool, then hand them, in order, to the HDF5 writer thread.

    Each pool thread also reduces the units it evaluated (train files) into statistics of its own while the data is
    still in its cache; ``statistics`` merges them (exact sums: the result does not depend on which thread
    reduced what). A unit that starts inside a trajectory is evaluated with one frame before it, so its first
    increment needs nothing from other units. At most ``2 x workers`` units are in flight and the writer's queue
    is bounded, so memory stays bounded too.

    Closed-form families evaluate on up to ``os.cpu_count()`` (at most ``MAX_EVALUATION_THREADS``) threads (numpy
    releases the GIL in its array loops); simulated families use one, as torch already parallelises each solve.
    """

    def __init__(self, pde: TrajectoryFamily, axes, times: np.ndarray, bar: tqdm):
        self.pde, self.axes, self.times, self.bar = pde, axes, times, bar
        workers = min(MAX_EVALUATION_THREADS, os.cpu_count() or 1) if pde.kind == "closed_form" else 1
        self.evaluation = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="evaluate")
        self.depth = 2 * workers
        self.writer = BackgroundWriter()
        self._field_layout = {s.name: (s.order, pde.n_spatial_dims**s.order) for s in pde.fields}
        self._per_thread = threading.local()
        self._all_statistics: list[FieldStatistics] = []
        self._lock = threading.Lock()

    def __enter__(self) -> _Pipeline:
        self.writer.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.evaluation.shutdown(wait=True, cancel_futures=True)
        finally:
            self.writer.__exit__(*exc)

    def write_file(self, writer: WellFileWriter, seed: int, with_statistics: bool) -> list[TrajectoryParameters]:
        """Queue everything that makes ``writer``'s file (layout, every write unit, parameters, fsync and close)
        and return the parameters of its trajectories, which the evaluation threads draw."""
        grid, indices = writer.grid, writer.trajectory_indices
        self.writer.submit(writer.open)
        params: list[TrajectoryParameters] = []
        in_flight: deque = deque()
        for first, stop, start, end in write_units(self.pde, grid, len(indices)):
            future = self.evaluation.submit(self._evaluate, indices[first:stop], seed, start, end, with_statistics)
            in_flight.append((future, first, start, stop - first if end == grid.n_steps else 0))
            while len(in_flight) > self.depth:
                params += self._hand_over(writer, *in_flight.popleft())
        while in_flight:
            params += self._hand_over(writer, *in_flight.popleft())
        self.writer.submit(writer.write_parameters, params)
        self.writer.submit(writer.close, True)
        return params

    def _evaluate(self, indices: list[int], seed: int, start: int, end: int, with_statistics: bool):
        """Draw the trajectories' parameters and evaluate fields ``(trajectories, end - start, ...)`` as float32;
        with statistics, also reduce them. Returns the parameters (for the first time block only) and fields."""
        params = [self.pde.sample_parameters(trajectory_rng(seed, i), i) for i in indices]
        lead = 1 if with_statistics and start > 0 else 0
        fields = self.pde.evaluate_many(params, self.axes, self.times[start - lead : end], dtype=np.float32)
        if with_statistics:
            _accumulate_statistics(self._thread_statistics(), fields, lead)
        return (params if start == 0 else []), {name: block[:, lead:] for name, block in fields.items()}

    def _thread_statistics(self) -> FieldStatistics:
        stats = getattr(self._per_thread, "stats", None)
        if stats is None:
            stats = self._per_thread.stats = FieldStatistics(self._field_layout)
            with self._lock:
                self._all_statistics.append(stats)
        return stats

    def _hand_over(
        self, writer: WellFileWriter, future: Future, first: int, start: int, done: int
    ) -> list[TrajectoryParameters]:
        params, fields = future.result()
        self.writer.submit(writer.write_block, first, start, fields)
        self.bar.update(done)
        return params

    def drain(self) -> None:
        """Block until every queued write has run."""
        self.writer.drain()

    def statistics(self) -> FieldStatistics:
        """The statistics of every train unit so far, merged over the evaluation threads."""
        merged = FieldStatistics(self._field_layout)
        for stats in self._all_statistics:
            merged.merge(stats)
        return merged


def _accumulate_statistics(stats: FieldStatistics, fields: dict[str, np.ndarray], lead: int) -> None:
    """Feed one unit ``(trajectories, frames, ...)`` to ``stats``; with ``lead == 1`` its first frame only serves as
    the frame before the others (for the first increment)."""
    for name, block in fields.items():
        stats.update_trajectories(name, block[:, lead:], block[:, 0] if lead else None)


class BackgroundWriter:
    """Run jobs (HDF5 calls) in submission order on one background thread, so that evaluation overlaps them
    (numpy and HDF5 release the GIL in their inner loops).

    At most ``depth`` jobs wait in the queue, so memory stays bounded. An exception raised by a job cancels the
    remaining jobs and is re-raised in the caller at the next ``submit``, ``drain`` or on exit.
    """

    def __init__(self, depth: int = 4):
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> BackgroundWriter:
        self._thread.start()
        return self

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            try:
                if job is None:
                    return
                if self._error is None:
                    job[0](*job[1])
            except BaseException as error:  # re-raised in the producer thread
                self._error = error
            finally:
                self._queue.task_done()

    def _raise_pending(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def submit(self, function: Callable, *args) -> None:
        self._raise_pending()
        self._queue.put((function, args))

    def drain(self) -> None:
        """Block until every submitted job has run; re-raise a job's exception."""
        self._queue.join()
        self._raise_pending()

    def __exit__(self, *exc) -> None:
        self._queue.put(None)
        self._thread.join()
        if exc[0] is None:
            self._raise_pending()


def mirror_files(source: Path, target: Path, old: str, new: str) -> int:
    """Hard-link (or copy, where links are impossible) every file of ``source`` into ``target``."""
    count = 0
    for path in split_files(source):
        link = target / path.name.replace(f"_{old}_", f"_{new}_")
        try:
            os.link(path, link)
        except OSError:
            shutil.copy2(path, link)
        count += 1
    return count
