"""The splits of an import: which source trajectory, and which of its frames, each written trajectory holds.

**By trajectory** (the default, as the generators split): ``valid`` gets ``max(1, round(valid_fraction * n))``
trajectories, ``test`` ``max(1, round(test_fraction * n))`` (the Well's 80/10/10 by default; ``test_fraction=0``
makes ``test`` the ``valid`` trajectories again, the paper's protocol), drawn by a permutation seeded with ``seed``
(``well_upao.data.generate.split_trajectories``), ``train`` the rest.

**In time** (``segments``): every trajectory is cut into that many consecutive pieces of equal length (the frames left
over at the end are dropped); the first pieces of every trajectory train, the next validate, the last test, so a model
is judged on later times than it trained on (a single long trajectory is imported so).

A split left empty is refused (``ImportInputError``, naming the fix); the rule applied is stated in words.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from well_upao.data.generate import split_trajectories
from well_upao.data.import_arrays import ImportInputError
from well_upao.data.source import SPLITS


@dataclass(frozen=True)
class Piece:
    """One trajectory of the written dataset: source trajectory ``source`` from its kept frame ``first``
    (``segment`` its piece when trajectories are cut in time)."""

    source: int
    first: int
    segment: int = 0


@dataclass(frozen=True)
class Splits:
    """The pieces of each split, the frames each holds (``length``), the rule in words, and whether ``test`` repeats
    ``valid`` (then its files are links to valid's)."""

    pieces: dict[str, list[Piece]]
    length: int
    rule: str
    test_repeats_valid: bool

    def written(self) -> dict[str, list[Piece]]:
        """The splits written as files of their own (all but a ``test`` that repeats ``valid``)."""
        return {s: self.pieces[s] for s in SPLITS if not (s == "test" and self.test_repeats_valid)}


def assign_splits(
    n: int, steps: int, segments: int | None, valid_fraction: float, test_fraction: float, seed: int
) -> Splits:
    """The splits of ``n`` trajectories of ``steps`` kept frames (see the module docstring)."""
    if not 0.0 < valid_fraction < 1.0 or not 0.0 <= test_fraction < 1.0:
        raise ImportInputError("--valid-fraction must lie in (0, 1) and --test-fraction in [0, 1)")
    if segments is None:
        return _by_trajectory(n, steps, valid_fraction, test_fraction, seed)
    return _in_time(n, steps, segments, valid_fraction, test_fraction)


def _by_trajectory(n: int, steps: int, valid_fraction: float, test_fraction: float, seed: int) -> Splits:
    """Whole trajectories to each split, by a permutation seeded with ``seed``."""
    counts = _split_counts(n, valid_fraction, test_fraction)
    if counts[0] < 1:
        raise ImportInputError(
            f"{n} trajectories cannot fill train, valid ({counts[1]}) and test ({counts[2]}): train is left empty; "
            "cut the trajectories in time with --segments N (Python: segments=), pass --test-fraction 0 (test "
            "repeats valid, the paper's protocol) or import more trajectories"
        )
    indices = split_trajectories(n, seed, valid_fraction, test_fraction)
    pieces = {s: [Piece(i, 0) for i in indices[s]] for s in SPLITS}
    rule = f"split by trajectory, a permutation seeded with {seed}: " + "; ".join(
        f"{s} {_ranges(indices[s])}" for s in SPLITS
    )
    if test_fraction == 0:
        rule += " (test repeats valid)"
    return Splits(pieces, steps, rule, test_fraction == 0)


def _in_time(n: int, steps: int, segments: int, valid_fraction: float, test_fraction: float) -> Splits:
    """Every trajectory cut into ``segments`` pieces of equal length: the first train, the next validate, the last
    test."""
    if segments < 2:
        raise ImportInputError(f"--segments {segments}: cut each trajectory into at least 2 pieces")
    length = steps // segments
    if length < 2:
        raise ImportInputError(
            f"--segments {segments} leaves {length} frame per piece of the {steps} frames: use at most {steps // 2}"
        )
    n_train, n_valid, n_test = _split_counts(segments, valid_fraction, test_fraction)
    if n_train < 1:
        raise ImportInputError(
            f"{segments} segments cannot fill train, valid ({n_valid}) and test ({n_test}): train is left empty; use "
            "more --segments or --test-fraction 0 (test repeats valid)"
        )
    order = ["train"] * n_train + ["valid"] * n_valid + ["test"] * n_test
    pieces: dict[str, list[Piece]] = {s: [] for s in SPLITS}
    for k, split in enumerate(order):
        pieces[split] += [Piece(t, k * length, k) for t in range(n)]
    if n_test == 0:
        pieces["test"] = list(pieces["valid"])
    dropped = steps - segments * length
    by_split = "; ".join(f"{s} {_ranges([k for k, o in enumerate(order) if o == s])}" for s in SPLITS if s in order)
    rule = (
        f"split in time: each trajectory cut into {segments} segments of {length} frames, segments {by_split}"
        + (" (test repeats valid)" if n_test == 0 else "")
        + (f"; its last {dropped} frame(s), less than a segment, dropped" if dropped else "")
    )
    return Splits(pieces, length, rule, test_fraction == 0)


def _split_counts(n: int, valid_fraction: float, test_fraction: float) -> tuple[int, int, int]:
    """(train, valid, test) counts as ``generate.split_trajectories`` draws them."""
    n_valid = max(1, round(valid_fraction * n))
    n_test = max(1, round(test_fraction * n)) if test_fraction > 0 else 0
    return n - n_valid - n_test, n_valid, n_test


def _ranges(indices: Sequence[int]) -> str:
    """``[0-3, 5, 7-9]`` for a sorted list of indices."""
    parts, run = [], []
    for i in sorted(indices):
        if run and i == run[-1] + 1:
            run.append(i)
            continue
        if run:
            parts.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [i]
    if run:
        parts.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return "[" + ", ".join(parts) + "]"


def file_groups(pieces: list[Piece], per_file: int) -> list[list[Piece]]:
    """Pieces grouped into files: one segment's pieces share a file (its time axis), at most ``per_file`` a file."""
    groups: list[list[Piece]] = []
    for segment in sorted({p.segment for p in pieces}):
        members = [p for p in pieces if p.segment == segment]
        groups += [members[i : i + per_file] for i in range(0, len(members), per_file)]
    return groups
