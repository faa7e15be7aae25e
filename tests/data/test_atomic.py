"""Whole datasets or nothing: a generation killed outright leaves only a hidden staging folder, which the next
run of the same command removes; the destination never holds half a dataset."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from well_upao.data.atomic import remove_abandoned


def test_a_killed_generation_leaves_nothing_after_the_next_run(tmp_path):
    cli = str(Path(sys.executable).with_name("well-upao"))
    command = [cli, "generate-exact", "--pde", "burgers1d", "--n-traj", "3000", "--out", str(tmp_path), "--quiet"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while not list(tmp_path.glob(".burgers1d.partial-*")) and process.poll() is None and time.time() < deadline:
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert list(tmp_path.glob(".burgers1d.partial-*")), "the generation finished before it could be killed"
    assert not (tmp_path / "burgers1d").exists()  # never half a dataset at the destination

    small = [cli, "generate-exact", "--pde", "burgers1d", "--n-traj", "4", "--out", str(tmp_path), "--quiet"]
    assert subprocess.run(small, capture_output=True).returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["burgers1d"]


def test_folders_of_running_processes_are_kept(tmp_path):
    mine = tmp_path / f".data.partial-{os.getpid()}"
    gone = tmp_path / ".data.partial-999999999"
    retired = tmp_path / ".data.old-999999999"
    other = tmp_path / ".other.partial-999999999"
    for folder in (mine, gone, retired, other):
        folder.mkdir()
    assert sorted(p.name for p in remove_abandoned(tmp_path, "data")) == sorted([gone.name, retired.name])
    assert mine.exists() and other.exists()
