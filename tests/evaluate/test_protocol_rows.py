"""``well-upao evaluate`` puts a history-4 run of the Well's protocol (``experiment=fno_well``: history 4, z-score
normalisation) beside a history-8 run of the paper's (``experiment=fno``) in one table: each row reads its own
history and units from its checkpoint, every row is scored on the same target frames (those after the longest
history), and each row names the protocol its run recorded."""

from __future__ import annotations

import json

import harness_command as harness  # tests/ is on sys.path (conftest)
import pytest

from well_upao.cli import main

SMALL = ["model.modes1=4", "model.modes2=4", "model.hidden_channels=8", "data=burgers2d", "data.batch_size=4"]
FAST = [
    "trainer.epochs=1",
    "trainer.max_rollout_steps=1",
    "data.max_rollout_steps=2",
    "trainer.short_validation_length=1",
]


@pytest.fixture(scope="module")
def burgers(tmp_path_factory):
    from well_upao.data.generate import GenerationRequest, generate_dataset

    base = tmp_path_factory.mktemp("rows")
    generate_dataset(GenerationRequest(pde="burgers2d", out=base, n_traj=6, resolution=16, n_steps=14), progress=False)
    return base


def scores(out, *arguments: str) -> dict:
    assert (
        main(
            [
                "evaluate",
                "--no-figures",
                *arguments,
                "--out",
                str(out),
                "--quiet",
                "--no-solver",
                "--rollout-steps",
                "1",
            ]
        )
        == 0
    )
    return json.loads(next(out.glob("*.json")).read_text())


@pytest.mark.slow  # two harness runs and three evaluations: about a minute on two shared cores
def test_history_4_well_row_beside_history_8_paper_row_on_the_same_frames(burgers, tmp_path, monkeypatch):
    runs = tmp_path / "experiments"
    well = harness.run_harness_in_process(burgers, runs, monkeypatch, "experiment=fno_well", "name=well", *SMALL, *FAST)
    paper = harness.run_harness_in_process(
        burgers, runs, monkeypatch, "experiment=fno", "name=paper", "trainer.validate_start=false", *SMALL, *FAST
    )
    both = scores(tmp_path / "both", f"well={well}", f"paper={paper}")
    assert both["history"] == 8  # the longest history of the rows
    rows = {s["name"]: s for s in both["scores"]}
    assert rows["well"]["notes"]["protocol"] == "well" and rows["well"]["notes"]["history"] == 4
    assert rows["well"]["notes"]["normalization"] == "ZScoreNormalization"
    assert rows["paper"]["notes"]["protocol"] == "paper" and rows["paper"]["notes"]["history"] == 8
    assert "normalization" not in rows["paper"]["notes"]
    # the history-4 row alone, on the frames after 8 (as in the joint table) and after 4 (its own, more frames)
    alone_8 = {s["name"]: s for s in scores(tmp_path / "alone8", f"well={well}", "--history", "8")["scores"]}
    alone_4 = scores(tmp_path / "alone4", f"well={well}")
    assert alone_4["history"] == 4
    alone_4 = {s["name"]: s for s in alone_4["scores"]}
    for name in ("well", "persistence"):
        assert rows[name]["mean_vrmse_well"] == pytest.approx(alone_8[name]["mean_vrmse_well"], rel=1e-6)
        assert rows[name]["mean_vrmse_paper"] == pytest.approx(alone_8[name]["mean_vrmse_paper"], rel=1e-6)
        # other frames give another number: the equality above is not vacuous
        # on its own frames (after 4) the paper's VRMSE, normalised over the frames scored, differs by far:
        # the equalities above are not vacuous
        assert abs(rows[name]["mean_vrmse_paper"] / alone_4[name]["mean_vrmse_paper"] - 1) > 0.1
