"""The studies' shared plumbing (``benchmarks/harness/jobs.py``, ``benchmarks/harness/study_data.py``): every row of a
resumable study runs even when one fails, a row's marker exists only complete, and a report names only data it was run
on."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from harness import jobs, study_data

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_a_failed_task_does_not_stop_the_others(n_jobs):
    ran = []

    def task(i):
        ran.append(i)
        if i == 1:
            raise RuntimeError("row 1 failed")
        return i

    with pytest.raises(RuntimeError, match="row 1 failed"):
        jobs.run_all([lambda i=i: task(i) for i in range(4)], n_jobs)
    assert sorted(ran) == [0, 1, 2, 3]
    assert jobs.run_all([lambda i=i: i * i for i in range(4)], n_jobs) == [0, 1, 4, 9]


def test_a_done_marker_records_the_sharing_and_is_written_whole(tmp_path):
    finished = jobs.Finished(returncode=0, wall_seconds=12.5, cpu_seconds=11.0)
    marker = tmp_path / "row.done"
    jobs.write_done(marker, finished, 2, 1, command=["x"])
    assert json.loads(marker.read_text()) == {
        "wall_seconds": 12.5, "cpu_seconds": 11.0, "jobs": 2, "threads": 1, "command": ["x"]
    }  # fmt: skip
    assert [p.name for p in tmp_path.iterdir()] == ["row.done"]  # no temporary file left behind


def test_the_sharing_note_reads_the_markers_not_the_command_line():
    recorded = [{"jobs": 2, "threads": 1}, {"jobs": 2, "threads": 1}]
    assert jobs.sharing_note(recorded, 1, None) == "2 rows at a time, 1 thread each"
    assert jobs.sharing_note([{}], 1, None) == "1 row at a time, torch's default threads each"  # an old marker
    mixed = jobs.sharing_note([{"jobs": 2, "threads": 1}, {"jobs": 1, "threads": 2}], 2, 1)
    assert "2 rows at a time, 1 thread each" in mixed and "1 row at a time, 2 threads each" in mixed


def test_a_dataset_not_made_as_the_study_replica_is_refused(tmp_path):
    folder = tmp_path / "shear_flow"
    folder.mkdir()
    (folder / "stats.yaml").write_text("mean: {}\n")  # complete, but made some other way
    with pytest.raises(ValueError, match=r"not the study replica \(no record of how it was made"):
        study_data.ensure_replica("shear_flow", tmp_path)
    (folder / study_data.STAMP).write_text(json.dumps({"arguments": ["--n-traj", "1"]}))
    with pytest.raises(ValueError, match="made with --n-traj 1"):
        study_data.ensure_replica("shear_flow", tmp_path)
    (folder / study_data.STAMP).write_text(json.dumps({"arguments": study_data.STUDY_REPLICAS["shear_flow"]}))
    study_data.ensure_replica("shear_flow", tmp_path)  # the study replica: used as it is, nothing generated


def test_the_study_replicas_hold_what_the_studies_need():
    """Each training split holds one batch of the Well's size for its dataset (history 4, stride 1: frames - 4
    windows per trajectory; the Well's loaders drop a partial batch), and the trust study's replicas hold at least
    3 validation trajectories (issue 29)."""
    import yaml

    protocol = yaml.safe_load((ROOT / "configs" / "experiment" / "_well_protocol.yaml").read_text())
    batch = protocol["well_protocol"]["batch_size"]
    for dataset in study_data.STUDY_REPLICAS:
        splits, frames = study_data.planned_split_sizes(dataset)
        assert frames == 41
        assert splits["train"] * (frames - 4) >= batch[dataset], dataset
        assert splits["valid"] >= 1 and splits["test"] >= 1
    for dataset in ("gray_scott_reaction_diffusion", "active_matter"):  # trust_study.py's default --replicas
        assert study_data.planned_split_sizes(dataset)[0]["valid"] >= 3, dataset


def test_reproduce_study_trust_is_the_trust_study_command_line(tmp_path, monkeypatch):
    """``reproduce.py --study trust`` hands every other argument to ``trust_study.py`` (arguments reproduce.py does not
    know, such as ``--analyse-only``, reach it): an empty study folder is refused by the trust study's own check."""
    from studies import reproduce

    argv = ["reproduce.py", "--study", "trust", "--analyse-only", "--out", str(tmp_path), "--replicas"]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit, match="no finished run to analyse"):
        reproduce.main()


def test_a_study_case_replaces_an_unfinished_attempt_and_marks_only_a_success(tmp_path):
    """``jobs.run_study_case``: an earlier attempt's leftovers go before the run; ``done.json`` (with the command
    after the interpreter) only when it exits 0; nothing starts past the deadline."""
    import argparse
    import time

    args = argparse.Namespace(deadline=None, threads=1, jobs=1)
    folder = tmp_path / "case"
    (folder / "experiment" / "old").mkdir(parents=True)  # an unfinished attempt's run folder
    ok = [sys.executable, "-c", "import os; print(os.environ['WELL_BASE_PATH'], os.environ['OMP_NUM_THREADS'])"]
    jobs.run_study_case(args, "case", folder, ok, tmp_path / "base")
    assert not (folder / "experiment").exists()
    assert (folder / "train.log").read_text().split() == [str(tmp_path / "base"), "1"]
    assert json.loads((folder / "done.json").read_text())["command"] == ok[1:]
    failing = tmp_path / "failing"
    jobs.run_study_case(args, "failing", failing, [sys.executable, "-c", "raise SystemExit(3)"], tmp_path)
    assert (failing / "train.log").is_file() and not (failing / "done.json").exists()
    late = tmp_path / "late"
    jobs.run_study_case(argparse.Namespace(deadline=time.time() - 1, threads=1, jobs=1), "late", late, ok, tmp_path)
    assert not late.exists()
