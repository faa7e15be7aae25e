"""``benchmarks/studies/expected_rule3_study.py`` keeps the order of issue 75: the rule is fixed on the tuned sets and
recorded before a held-out cell is read. Checked without data: the refusals come before anything is opened."""

from __future__ import annotations

import dataclasses
import json

import pytest
from studies import expected_rule3_study as study

from well_upao.predict.expected_starts import RULE_3


def record(path, digest: str, **extra) -> None:
    path.write_text(json.dumps({"rule": {}, "digest": digest, "fixed_at": "t", "commit": "c", "argv": [], **extra}))


def test_the_held_out_sets_are_not_read_before_a_rule_is_recorded(tmp_path):
    with pytest.raises(SystemExit, match="run --phase tune first"):
        study.main(["--phase", "score", "--out", str(tmp_path), "--record", str(tmp_path / "none.json")])


def test_the_held_out_sets_are_not_read_under_another_rule_than_the_recorded_one(tmp_path):
    path = tmp_path / "fixed.json"
    other = dataclasses.replace(RULE_3, slope=RULE_3.slope + 0.1)
    record(path, other.digest())
    with pytest.raises(SystemExit, match="is not the one fixed"):
        study.main(["--phase", "score", "--out", str(tmp_path), "--record", str(path)])
    assert "held_out_read" not in json.loads(path.read_text())  # nothing recorded as read


def test_no_tuning_after_a_held_out_reading(tmp_path):
    path = tmp_path / "fixed.json"
    record(path, RULE_3.digest(), held_out_read=[{"at": "t", "commit": "c"}])
    with pytest.raises(SystemExit, match="records a held-out reading already"):
        study.main(["--phase", "tune", "--out", str(tmp_path), "--record", str(path), "--tuned-base",
                    str(tmp_path / "no-data")])  # fmt: skip


def test_the_digest_changes_with_every_constant():
    digests = {
        RULE_3.digest(),
        dataclasses.replace(RULE_3, slope=RULE_3.slope + 0.001).digest(),
        dataclasses.replace(RULE_3, transfer={**RULE_3.transfer, "6:12": 0.5}).digest(),
        dataclasses.replace(RULE_3, effective=False).digest(),
    }
    assert len(digests) == 4


def test_a_held_out_upao_run_is_the_quickstarts_recipe_on_the_users_dataset(tmp_path):
    """The values ``studies/heldout_upao.py``'s docstring states, no data config (the user's dataset by name and
    module instead, as docs/your-data.md trains), stride 1 and epochs cut at 24 steps."""
    from studies.heldout_upao import upao_overrides

    given = upao_overrides("heldout_allen_cahn", tmp_path / "base", tmp_path / "experiments")
    assert not [o for o in given if o.startswith("data=")]
    assert {
        "model=na_nslora", "trainer=upao", "data.imports=[heldout_pdes]", "data.well_dataset_name=heldout_allen_cahn",
        "model.pretrained=shipped_extrap2", "model.base=extrap2", "optimizer.lr=0.001", "data.batch_size=4",
        "trainer.epochs=6", "trainer.epoch_steps=24", "data.min_dt_stride=1", "data.max_dt_stride=1",
        "trainer.nslora_schedule=from_start", "trainer.derivative=auto", "trainer.time_scheme=auto",
        f"data.well_base_path={tmp_path / 'base'}", f"experiment_dir={tmp_path / 'experiments'}",
    } <= set(given)  # fmt: skip
    assert len(given) == len(set(given))
