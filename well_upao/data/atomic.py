"""Write a whole directory under a temporary name and move it into place only when complete.

A failed or interrupted job leaves nothing at the destination (and nothing half-written beside it); an
existing destination is replaced only after the new content is complete. A job killed outright (SIGKILL, power
loss) cannot clean up: its hidden ``.<name>.partial-<pid>`` folder stays until the next job writing the same
destination removes it (folders of processes that no longer exist).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path


class OutputExistsError(FileExistsError):
    """The destination exists and overwriting was not requested."""


@contextlib.contextmanager
def staged_directory(destination: Path, overwrite: bool) -> Iterator[Path]:
    """Yield a fresh temporary directory next to ``destination``; on success rename it to ``destination``.

    On any exception (including ``KeyboardInterrupt``) the temporary directory is removed and the exception
    propagates; ``destination`` is untouched.
    """
    destination = Path(destination)
    if destination.exists() and not overwrite:
        raise OutputExistsError(f"{destination} already exists (pass --overwrite to replace it)")
    parent = destination.parent
    parent.mkdir(parents=True, exist_ok=True)
    remove_abandoned(parent, destination.name)
    staging = parent / f".{destination.name}.partial-{os.getpid()}"
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir()
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _fsync_directory(staging)
    retired = None
    if destination.exists():
        retired = parent / f".{destination.name}.old-{os.getpid()}"
        destination.rename(retired)
    staging.rename(destination)
    _fsync_directory(parent)
    if retired is not None:
        shutil.rmtree(retired, ignore_errors=True)


def remove_abandoned(parent: Path, name: str) -> list[Path]:
    """Remove the staging (``.partial-<pid>``) and retired (``.old-<pid>``) folders of ``name`` left by processes
    that no longer exist; returns what was removed."""
    removed = []
    for folder in parent.glob(f".{name}.*-*"):
        kind, _, pid = folder.name.rpartition("-")
        if not kind.endswith((".partial", ".old")) or not pid.isdigit() or _alive(int(pid)):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _fsync_directory(directory: Path) -> None:
    """Persist a directory's entries (new files, renames) so a crash cannot undo a completed rename."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same directory and an atomic rename."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
