"""``well_upao.harness.runs``: the one home of a harness run. The quickstart's and the benchmarks' training commands
come from :func:`harness_command`; a run folder's checkpoint is found by :func:`find_checkpoint`, which refuses
clearly when there is none or several."""

from __future__ import annotations

import ast
import sys
from argparse import Namespace
from pathlib import Path

import pytest
from studies import prior_study, reproduce, trust_study, well_protocols

from well_upao.harness import runs
from well_upao.models.checkpoint import CheckpointError

ROOT = Path(__file__).resolve().parents[2]


FAKE = "fake_harness.train"


@pytest.fixture
def fake_harness(monkeypatch):
    """Every command built through ``harness_command`` now names :data:`FAKE`."""
    monkeypatch.setattr(runs, "HARNESS_MODULE", FAKE)


def test_the_command_is_the_interpreter_the_module_and_the_overrides_in_order():
    assert runs.harness_command(["model=na", "data=tg2d"]) == [
        sys.executable,
        "-m",
        "the_well.benchmark.train",
        "model=na",
        "data=tg2d",
    ]
    assert runs.harness_command(["a=1"], python="/x/python")[0] == "/x/python"


def test_the_quickstart_and_the_benchmarks_build_their_commands_through_harness_command(fake_harness, tmp_path):
    from well_upao.quickstart import QuickstartConfig, harness_command

    built = {
        "quickstart": harness_command(QuickstartConfig(out=tmp_path), "na_nslora", "upao", tmp_path, tmp_path),
        "trust_study": trust_study.command(
            Namespace(epochs=2, validation_batches=4), "wave2d", 5, "extrap2", 8, 0, tmp_path
        ),
        "prior_study": prior_study.command(
            Namespace(epochs=2, steps=8, truth_frames=3, validation_batches=4), "wave2d", 5, "shipped", 0, tmp_path
        ),
        "well_protocols": well_protocols.row_command(
            Namespace(out=tmp_path, minutes=1.0, validation_batches=4, extra=[], batch_size=None),
            "wave2d",
            "fno",
            "paper",
        )[0],
    }
    commands: dict = {}
    args = Namespace(out=tmp_path, resume=False, evaluate_only=True)
    reproduce.train_row(args, "row", ["model=na"], "wave2d", 5, 1.0, commands, {}, train=False)
    built["reproduce"] = [sys.executable, *commands[("wave2d", 5, "row")].split(" ")]
    for name, command in built.items():
        assert command[:3] == [sys.executable, "-m", FAKE], name
        assert command == runs.harness_command(command[3:]), name


def string_constants(tree: ast.AST) -> list[ast.Constant]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)]


def sources() -> list[Path]:
    return sorted((ROOT / "well_upao").rglob("*.py")) + sorted((ROOT / "benchmarks").glob("*.py"))


def test_no_module_but_runs_names_the_harness_module_or_globs_a_run_folder():
    """Outside ``harness/runs.py`` no module spells the training module in a command (``gpu_check``'s list of
    modules to import aside) or globs ``*/*`` / ``.../checkpoints/...`` for a run."""
    offenders = []
    for path in sources():
        if path == ROOT / "well_upao" / "harness" / "runs.py":
            continue
        tree = ast.parse(path.read_text())
        imported = {
            id(c)
            for node in ast.walk(tree)
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "IMPORT_CHAIN" for t in node.targets)
            for c in string_constants(node)
        }
        for node in string_constants(tree):
            if node.value == runs.HARNESS_MODULE and id(node) not in imported:
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} names {node.value}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") in ("glob", "rglob") and node.args:
                pattern = " ".join(c.value for c in string_constants(node.args[0]))
                if pattern == "*/*" or "checkpoints" in pattern or pattern.startswith("experiments/"):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} globs {pattern!r}")
    assert not offenders, offenders


def make_run(experiments: Path, name: str, number: int, file: str | None = "best.pt") -> Path:
    folder = experiments / name / str(number)
    (folder / "checkpoints").mkdir(parents=True)
    if file is not None:
        (folder / "checkpoints" / file).write_bytes(b"x")
    return folder


def test_find_checkpoint_finds_best_pt_in_a_run_folder_or_an_experiment_folder_with_one_run(tmp_path):
    run = make_run(tmp_path, "wave2d-na-upao-x", 0)
    assert runs.find_checkpoint(run) == run / "checkpoints" / "best.pt"
    assert runs.find_checkpoint(tmp_path) == run / "checkpoints" / "best.pt"
    assert runs.checkpoint_file(tmp_path) == run / "checkpoints" / "best.pt"
    assert runs.checkpoint_file(run / "checkpoints" / "best.pt") == run / "checkpoints" / "best.pt"


def test_find_checkpoint_refuses_a_folder_without_one_naming_the_folder(tmp_path):
    run = make_run(tmp_path, "wave2d-na-upao-x", 0, file="recent.pt")
    with pytest.raises(CheckpointError, match=f"{run} has no checkpoints/best.pt"):
        runs.find_checkpoint(run)
    with pytest.raises(CheckpointError, match=f"{tmp_path} has no checkpoints/best.pt"):
        runs.find_checkpoint(tmp_path)


def test_find_checkpoint_refuses_several_runs_naming_the_folder_and_the_runs(tmp_path):
    make_run(tmp_path, "wave2d-na-upao-x", 0)
    make_run(tmp_path, "wave2d-na-upao-x", 1)
    with pytest.raises(CheckpointError, match=f"{tmp_path} holds 2 runs .*wave2d-na-upao-x/0, wave2d-na-upao-x/1"):
        runs.find_checkpoint(tmp_path)


def test_the_latest_run_is_the_highest_run_number_not_the_last_name(tmp_path):
    for number in (2, 10, 9):
        make_run(tmp_path, "a", number)
    assert runs.latest_run(tmp_path) == tmp_path / "a" / "10"
    assert [p.name for p in runs.run_folders(tmp_path)] == ["2", "9", "10"]
    assert runs.latest_run(tmp_path / "missing") is None


def test_labelled_checkpoints_label_clashing_run_folders_by_their_paths(tmp_path):
    one, two = make_run(tmp_path / "a", "exp", 0), make_run(tmp_path / "b", "exp", 0)
    other = make_run(tmp_path / "c", "other", 0)
    assert runs.labelled_checkpoints([str(one), f"mine={other}"]) == [(None, one), ("mine", other)]
    assert runs.labelled_checkpoints([str(one), str(two)]) == [(str(one), one), (str(two), two)]
    with pytest.raises(CheckpointError, match="same label"):
        runs.labelled_checkpoints([f"x={one}", f"x={two}"])
