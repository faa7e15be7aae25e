"""The CPU-study replicas of the Well's four datasets: one definition shared by every study that trains on them.

``benchmarks/studies/well_protocols.py`` (reports/well_protocols.md), ``benchmarks/studies/reproduce.py`` (the Well
columns of reports/reproduction.md and the panels of reports/transfer.md) and ``benchmarks/studies/trust_study.py``
(reports/trust.md) read the same replicas, made by ``well-upao generate-replica`` with the arguments below: small enough
to simulate in minutes on two cores, large enough that the Well's protocol finds a whole batch of its size in every
training split (256 windows of history 4 for Gray-Scott, 64 for Rayleigh-Benard and active matter, 32 for shear flow;
the loaders drop a partial batch). 41 frames each, two or three parameter sets, the trajectories of each set split as
``generate-replica`` splits them (15 per set: 11/2/2; 5 per set: 3/1/1). Validation trajectories: Gray-Scott 4, active
matter 3, shear flow and Rayleigh-Benard 2.

    python benchmarks/harness/study_data.py --out /work/runs/replicas          # all four (about 10 CPU-minutes)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: its groups import as packages

from harness.jobs import WELL_UPAO

#: generate-replica arguments of each study replica (besides --dataset and --out)
STUDY_REPLICAS: dict[str, list[str]] = {
    # 64^2, sets maze and spots, 15 trajectories per set: 22 training trajectories x 37 windows = 814 >= 256, and
    # 4 validation trajectories (the trust study asks for at least 3; 10 per set gave 2)
    "gray_scott_reaction_diffusion": "--resolution 64 64 --n-steps 41 --sets 2 5 --n-traj 15".split(),
    # 64x128, Re 1e4 / Sc 0.1 and Re 5e4 / Sc 1: 6 training trajectories x 37 windows = 222 >= 32
    "shear_flow": "--resolution 64 128 --n-steps 41 --sets 0 4 --n-traj 5".split(),
    # 128x32, Ra 1e6 with Pr 1 and 10: 222 windows >= 64
    "rayleigh_benard": "--resolution 128 32 --n-steps 41 --sets 0 1 --n-traj 5".split(),
    # the CPU default grid (64^2 x 64 orientations), its 3 parameter sets: 9 training trajectories, 333 windows >= 64
    "active_matter": "--n-steps 41 --n-traj 5".split(),
}


def replica_command(dataset: str, base: Path) -> list[str]:
    """The ``well-upao generate-replica`` command that makes ``dataset``'s study replica under ``base``."""
    if dataset not in STUDY_REPLICAS:
        raise ValueError(f"{dataset!r} has no study replica; known: {', '.join(STUDY_REPLICAS)}")
    return [*WELL_UPAO, "generate-replica", "--dataset", dataset, *STUDY_REPLICAS[dataset], "--out", str(base)]


def replica_note(dataset: str) -> str:
    """How a study replica was made, for a report."""
    return f"`well-upao generate-replica --dataset {dataset} {' '.join(STUDY_REPLICAS[dataset])}`"


def planned_split_sizes(dataset: str) -> tuple[dict[str, int], int]:
    """The trajectories per split and the frames per trajectory that ``dataset``'s study replica holds, planned as
    ``generate-replica`` plans them (its parameter sets, sizes and seeded splits; nothing is simulated)."""
    from well_upao.data.generate import SPLITS
    from well_upao.data.replicas import ReplicaRequest, chosen_sets, plan_trajectories, resolve_size
    from well_upao.families.replicas.families import REPLICAS

    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--sets", nargs="+", type=int)
    parser.add_argument("--n-traj", type=int)
    parser.add_argument("--n-steps", type=int)
    known, _ = parser.parse_known_args(STUDY_REPLICAS[dataset])
    family = REPLICAS[dataset]
    request = ReplicaRequest(dataset, Path("."), n_steps=known.n_steps, n_traj_per_set=known.n_traj, sets=known.sets)
    size = resolve_size(family, request)
    plans = plan_trajectories(family, chosen_sets(family, request), size.n_traj_per_set, request.seed)
    return {split: sum(len(split_of[split]) for _, _, split_of in plans) for split in SPLITS}, size.n_steps


#: the file, beside a study replica's ``stats.yaml``, that records the arguments it was made with
STAMP = "study_replica.json"


def ensure_replica(dataset: str, base: Path, quiet: bool = True) -> None:
    """Make ``dataset``'s study replica under ``base`` unless it is there (generation writes ``stats.yaml`` last,
    after the splits: a dataset with it is complete). A dataset there that was not made with the study's arguments
    (its :data:`STAMP` missing or different) is refused: the reports name the data by those arguments."""
    folder = base / dataset
    if (folder / "stats.yaml").is_file():
        try:
            made_with = json.loads((folder / STAMP).read_text())["arguments"]
        except (OSError, ValueError, KeyError, TypeError):
            made_with = None
        if made_with != STUDY_REPLICAS[dataset]:
            found = "no record of how it was made" if made_with is None else f"made with {' '.join(made_with)}"
            raise ValueError(
                f"{folder} holds a {dataset} dataset that is not the study replica ({found}; the study's: "
                f"{replica_note(dataset)}): move it away or give the study another base path"
            )
        return
    subprocess.run([*replica_command(dataset, base), *(["--quiet"] if quiet else [])], check=True)
    tmp = folder / (STAMP + ".tmp")
    tmp.write_text(json.dumps({"arguments": STUDY_REPLICAS[dataset]}) + "\n")
    tmp.replace(folder / STAMP)


def ensure_study_dataset(dataset: str, base: Path, resolution: int = 64) -> Path:
    """``base`` holding ``dataset``, made if missing: a study replica (:func:`ensure_replica`), or an exact set of
    12 trajectories of 101 frames at ``resolution``, seed 42, a quarter for validation (``well-upao
    generate-exact``)."""
    from well_upao.data.generate import GenerationRequest, generate_dataset

    if dataset in STUDY_REPLICAS:
        ensure_replica(dataset, base)
    elif not (base / dataset / "stats.yaml").is_file():
        request = GenerationRequest(
            pde=dataset, out=base, n_traj=12, resolution=resolution, n_steps=101, seed=42, valid_fraction=0.25
        )
        generate_dataset(request, progress=False)
    return base


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="the Well base path to write the replicas under")
    parser.add_argument("--datasets", nargs="+", default=list(STUDY_REPLICAS), choices=list(STUDY_REPLICAS))
    args = parser.parse_args()
    for dataset in args.datasets:
        ensure_replica(dataset, args.out.resolve(), quiet=False)


if __name__ == "__main__":
    main()
