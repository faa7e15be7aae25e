"""``benchmarks/studies/what_you_get_backfill.py``: a record gains each row's first rollout step from the evaluation
of the run it records, and a record whose case folder holds another run is left as it is."""

from __future__ import annotations

import json

from studies import what_you_get_backfill as backfill


def evaluation(one_step: float, first: float) -> dict:
    return {"scores": [{"name": "extrap2", "mean_vrmse_well": one_step, "rollout_vrmse_well": [first, 2 * first]}]}


def write_case(out, key: str, content: dict) -> None:
    folder = out / key / "seed42" / "evaluation"
    folder.mkdir(parents=True)
    (folder / "evaluation_x_valid_stride1.json").write_text(json.dumps(content))


def test_a_record_gains_the_first_rollout_step_of_its_own_run_and_another_run_is_refused(tmp_path):
    records, out = tmp_path / "records", tmp_path / "out"
    records.mkdir()
    for key in ("same", "other"):
        (records / f"{key}-seed42.json").write_text(json.dumps({"rows": {"extrap2": {"one_step_well": 0.0123457}}}))
    write_case(out, "same", evaluation(0.012345678, 0.00456789))  # the record's value to 6 digits: the same run
    write_case(out, "other", evaluation(0.02, 0.005))
    assert backfill.main(["--out", str(out), "--records", str(records)]) == 0
    same = json.loads((records / "same-seed42.json").read_text())
    assert same["rows"]["extrap2"]["rollout_first"] == 0.00456789
    assert "rollout_first" in same["backfilled"]
    other = json.loads((records / "other-seed42.json").read_text())
    assert other == {"rows": {"extrap2": {"one_step_well": 0.0123457}}}
    assert not list(records.glob("*.tmp"))
