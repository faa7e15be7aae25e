"""The prepared device call of the foundation backbone (benchmarks/device/foundation_call.py) rehearsed on the CPU: the
profile and two training calls, the second resuming from the first one's artifact, as a lent GPU would run them
(``--dry-run``: tiny sizes, a few optimizer steps). What a call returns must fit the device's return limits."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from device import foundation_call

ROOT = Path(__file__).resolve().parents[1]


from well_upao.models.resume import read_resume_record  # noqa: E402

FAMILIES = {
    "diffusion_reaction_2d", "shallow_water_2d", "incompressible_ns_forced_2d",
    "compressible_ns_1d", "compressible_ns_2d", "compressible_ns_3d",
}  # fmt: skip
#: a device call returns at most 8 files of at most 16 MiB each (the device tool's limits)
RETURN_FILES, RETURN_BYTES = 8, 16 * 2**20


def returned(out: Path) -> list[Path]:
    files = [p for p in out.rglob("*") if p.is_file()]
    assert len(files) <= RETURN_FILES and all(p.stat().st_size <= RETURN_BYTES for p in files), files
    return files


def test_the_profile_rehearsal_measures_every_family_and_both_attentions(tmp_path):
    out = tmp_path / "out"
    assert foundation_call.main(["profile", "--dry-run", "--out", str(out), "--workers", "2"]) == 0
    assert [p.name for p in returned(out)] == ["profile.json"]
    profile = json.loads((out / "profile.json").read_text())
    assert {g["family"] for g in profile["generation"]} == FAMILIES
    assert all(g["seconds_per_trajectory"] > 0 for g in profile["generation"])
    assert {s["family"] for s in profile["train_steps"]} == FAMILIES
    assert all(s["seconds_per_step"] > 0 for s in profile["train_steps"])
    assert {len(a["token_grid"]) for a in profile["attention"]} == {2, 3, 4}  # time + 1, 2, 3 spatial axes
    for row in profile["attention"]:  # FlexAttention with the window as a block mask computes our attention
        assert row.get("flex_unavailable") or row["max_difference"] < 1e-5, row
    backends = {(r["backend"], r["dtype"]) for r in profile["attention_backends"]}
    assert backends == {("tiles", "fp32"), ("flex eager", "fp32"), ("dense", "fp32")}  # the CPU rehearsal's rows
    assert all(r["forward_s"] > 0 for r in profile["attention_backends"])


def test_two_training_calls_the_second_resuming_from_the_first(tmp_path):
    common = ["train", "--dry-run", "--workers", "2", "--minutes", "1", "--max-steps", "3", "--schedule-steps", "500"]
    first, second = tmp_path / "first", tmp_path / "second"
    assert foundation_call.main([*common, "--out", str(first), "--work", str(tmp_path / "w1")]) == 0
    record = json.loads((first / "call_record.json").read_text())
    assert sorted(p.name for p in returned(first)) == ["call_record.json", "na_tiny_foundation.pt.part0"]
    artifact = tmp_path / "na_tiny_foundation.pt"
    (first / "na_tiny_foundation.pt.part0").rename(artifact)  # one part: the file itself (the record's "join")
    assert record["steps"] == 3 and record["start_step"] == 0 and record["schedule_steps"] == 500
    assert record["attention_backend"] == "auto"  # which path trained, for the model card
    resume = read_resume_record(artifact)
    assert (resume.step, resume.schedule_steps, resume.data_seed) == (3, 500, 1001)  # the next corpus seed
    rows = {(r["family"], r["row"]): r for r in record["validation"]}
    for family in FAMILIES:
        for row in ("persistence", "extrap1", "extrap2", "backbone"):
            assert math.isfinite(rows[family, row]["one_step_paper"]), (family, row)
            assert rows[family, row]["rollout_6_12_well"] is not None  # 21 frames hold history 8 and steps 6:12
    assert {g["seed"] for g in record["generation"]} == {1000}

    assert foundation_call.main([*common, "--out", str(second), "--work", str(tmp_path / "w2"),
                                 "--artifact", str(artifact)]) == 0  # fmt: skip
    again = json.loads((second / "call_record.json").read_text())
    assert again["start_step"] == 3 and again["schedule_steps"] == 500  # the schedule's place, fixed total
    assert {g["seed"] for g in again["generation"]} == {1001}  # a fresh corpus
    (second / "na_tiny_foundation.pt.part0").rename(tmp_path / "next.pt")
    resumed = read_resume_record(tmp_path / "next.pt")
    assert resumed.step == 6 and len(resumed.calls) == 2


def test_a_file_too_big_for_one_return_is_split_and_joins_back(tmp_path):
    source = tmp_path / "big.pt"
    data = bytes(range(256)) * 1000
    source.write_bytes(data)
    out = tmp_path / "out"
    out.mkdir()
    parts = foundation_call.split_for_return(source, out, limit=100_000)
    assert parts == [f"big.pt.part{i}" for i in range(3)]
    assert b"".join((out / p).read_bytes() for p in parts) == data
    with pytest.raises(ValueError, match="more than a call returns"):
        foundation_call.split_for_return(source, out, limit=10_000)
