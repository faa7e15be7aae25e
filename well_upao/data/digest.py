"""A content digest of a dataset in the Well's layout: sha256 over what it holds, not over how HDF5 lays it out.

Two generations of the same dataset on different machines (or HDF5 versions) write files whose bytes may differ
in layout, while every array, attribute and statistic is identical. The digest covers exactly those: for every
file under ``data/`` (sorted relative paths), every attribute and dataset (sorted names, recursively), each as its
name, dtype, shape and little-endian bytes (strings as UTF-8); then the values of ``stats.yaml`` (floats by their
exact bits). Same digest, same data.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import h5py
import numpy as np
import yaml

from well_upao.data.source import SPLITS, split_files


def dataset_digest(dataset_dir: str | Path) -> str:
    """sha256 (hex) of the content of ``dataset_dir`` (``data/<split>/*.hdf5`` and ``stats.yaml``)."""
    root = Path(dataset_dir)
    files = sorted(path for split in SPLITS for path in split_files(root / "data" / split))
    if not files:
        raise FileNotFoundError(f"no HDF5 files under {root / 'data'}")
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode())
        with h5py.File(path, "r") as file:
            _update_group(digest, file)
    stats = root / "stats.yaml"
    if stats.exists():
        _update_value(digest, "stats.yaml", _flatten(yaml.safe_load(stats.read_text())))
    return digest.hexdigest()


def _update_group(digest, group: h5py.Group) -> None:
    for key in sorted(group.attrs):
        _update_value(digest, f"{group.name}@{key}", group.attrs[key])
    for key in sorted(group):
        item = group[key]
        if isinstance(item, h5py.Group):
            _update_group(digest, item)
        else:
            for attribute in sorted(item.attrs):
                _update_value(digest, f"{item.name}@{attribute}", item.attrs[attribute])
            _update_value(digest, item.name, item[()])


def _update_value(digest, name: str, value) -> None:
    array = np.asarray(value)
    digest.update(name.encode() + b"\0")
    if array.dtype.kind in "OSU":
        items = [v.decode() if isinstance(v, bytes) else str(v) for v in array.reshape(-1)]
        digest.update(b"str" + repr(array.shape).encode() + "\0".join(items).encode())
    else:
        little = array.astype(array.dtype.newbyteorder("<"), copy=False)
        digest.update(little.dtype.str.encode() + repr(array.shape).encode() + np.ascontiguousarray(little).tobytes())


def _flatten(tree, prefix: str = "") -> list[str]:
    """``key=value`` lines of a nested dict of numbers/lists, floats by their exact hex bits."""
    if isinstance(tree, dict):
        return [line for key in sorted(tree) for line in _flatten(tree[key], f"{prefix}/{key}")]
    if isinstance(tree, list):
        return [line for index, item in enumerate(tree) for line in _flatten(item, f"{prefix}[{index}]")]
    return [f"{prefix}={float(tree).hex() if isinstance(tree, float | int) else tree}"]
