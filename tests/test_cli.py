"""The ``well-upao`` command line: help, the summary, and bad input (one-line error, exit != 0, nothing left)."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import pytest

from well_upao.cli import main
from well_upao.data.digest import dataset_digest


def run_cli(*args, cwd=None):
    """Run the installed console script in a subprocess."""
    exe = Path(sys.executable).with_name("well-upao")
    return subprocess.run([str(exe), *args], capture_output=True, text=True, cwd=cwd)


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


def test_help_explains_the_command():
    result = run_cli("generate-exact", "--help")
    assert result.returncode == 0
    for text in ("burgers2d", "train,valid,test", "stats.yaml", "--n-traj", "--overwrite", "examples"):
        assert text in result.stdout


def test_generate_prints_a_summary_and_validates(tmp_path):
    result = run_cli(
        "generate-exact",
        "--pde",
        "burgers2d",
        "--n-traj",
        "4",
        "--resolution",
        "16",
        "--n-steps",
        "10",
        "--out",
        str(tmp_path),
        "--quiet",
    )
    assert result.returncode == 0, result.stderr
    assert "burgers2d" in result.stdout and "train 3, valid 1, test 1" in result.stdout
    assert "velocity_x->Vx" in result.stdout
    check = run_cli("validate", str(tmp_path / "burgers2d"), "--check-exact")
    assert check.returncode == 0 and check.stdout.strip().endswith("OK")
    digest = run_cli("validate", str(tmp_path / "burgers2d"), "--digest")
    assert digest.returncode == 0
    assert digest.stdout.strip().splitlines()[-1] == f"content sha256 {dataset_digest(tmp_path / 'burgers2d')}"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--pde", "navier_stokes"], "unknown PDE"),
        (["--pde", "tg2d", "--n-traj", "0"], "--n-traj must be at least 2"),
        (["--pde", "tg2d", "--resolution", "-8"], "--resolution must be at least 4"),
        (["--pde", "tg2d", "--n-steps", "0"], "--n-steps must be at least 2"),
        (["--pde", "tg2d", "--dt", "0"], "--dt must be a positive number"),
        (["--pde", "tg2d", "--traj-per-file", "0", "--n-traj", "2", "--resolution", "8"], "--traj-per-file"),
    ],
)
def test_bad_sizes_and_names_fail_with_one_line(tmp_path, capsys, args, message):
    code = main(["generate-exact", *args, "--out", str(tmp_path), "--quiet"])
    err = capsys.readouterr().err
    assert code != 0
    assert message in err and err.count("\n") == 1
    assert leftovers(tmp_path) == []


def test_existing_dataset_needs_overwrite_and_is_kept(tmp_path, capsys):
    args = [
        "generate-exact",
        "--pde",
        "adv1d",
        "--n-traj",
        "3",
        "--resolution",
        "16",
        "--n-steps",
        "4",
        "--out",
        str(tmp_path),
        "--quiet",
    ]
    assert main(args) == 0
    marker = tmp_path / "adv1d" / "keep.txt"
    marker.write_text("x")
    capsys.readouterr()
    assert main(args) != 0
    assert "already exists" in capsys.readouterr().err
    assert marker.exists()
    assert main([*args, "--overwrite"]) == 0
    assert not marker.exists()
    assert leftovers(tmp_path) == ["adv1d"]


def test_unwritable_path_fails_cleanly(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    code = main(
        [
            "generate-exact",
            "--pde",
            "adv1d",
            "--n-traj",
            "3",
            "--resolution",
            "16",
            "--out",
            str(blocker / "sub"),
            "--quiet",
        ]
    )
    err = capsys.readouterr().err
    assert code != 0 and err.count("\n") == 1 and "error" in err
    assert leftovers(tmp_path) == ["file"]


@contextlib.contextmanager
def read_only(directory: Path):
    """Make ``directory`` unwritable for this process. Root ignores permission bits, so as root the directory gets
    the immutable attribute instead (``chattr +i``: not even root may create entries in it); where the file
    system or the container does not allow that, the test is skipped with the reason."""
    if os.geteuid() != 0:
        directory.chmod(0o500)
        try:
            yield
        finally:
            directory.chmod(0o700)
        return
    chattr = shutil.which("chattr")
    attempt = subprocess.run([chattr, "+i", str(directory)], capture_output=True, text=True) if chattr else None
    if attempt is None or attempt.returncode != 0:
        reason = "chattr not installed" if attempt is None else attempt.stderr.strip()
        pytest.skip(f"running as root and cannot make a directory immutable here ({reason})")
    try:
        yield
    finally:
        subprocess.run([chattr, "-i", str(directory)], check=True)


def test_read_only_directory_fails_cleanly(tmp_path, capsys):
    target = tmp_path / "read_only"
    target.mkdir()
    with read_only(target):
        code = main(["generate-exact", "--pde", "adv1d", "--n-traj", "3", "--out", str(target), "--quiet"])
    assert code != 0 and capsys.readouterr().err.count("\n") == 1
    assert leftovers(target) == []


def test_full_disk_detected_before_writing(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(10**6, 10**6 - 1000, 1000))
    code = main(
        ["generate-exact", "--pde", "tg2d", "--n-traj", "4", "--resolution", "32", "--out", str(tmp_path), "--quiet"]
    )
    err = capsys.readouterr().err
    assert code != 0 and "not enough disk space" in err and err.count("\n") == 1
    assert leftovers(tmp_path) == []


def test_disk_full_while_writing_leaves_nothing(tmp_path, capsys, monkeypatch):
    """ENOSPC in the middle of a file (after other files completed) removes the whole partial dataset."""
    from well_upao.data import well_format

    calls = {"n": 0}
    original = well_format.WellFileWriter.write_block

    def failing(self, *args):
        calls["n"] += 1
        if calls["n"] == 5:
            raise OSError(errno.ENOSPC, "No space left on device")
        return original(self, *args)

    monkeypatch.setattr(well_format.WellFileWriter, "write_block", failing)
    code = main(
        [
            "generate-exact",
            "--pde",
            "burgers1d",
            "--n-traj",
            "8",
            "--resolution",
            "16",
            "--n-steps",
            "4",
            "--traj-per-file",
            "2",
            "--out",
            str(tmp_path),
            "--quiet",
        ]
    )
    err = capsys.readouterr().err
    assert code != 0 and "No space left on device" in err and err.count("\n") == 1
    assert leftovers(tmp_path) == []


def test_failed_overwrite_keeps_the_old_dataset(tmp_path, capsys, monkeypatch):
    args = [
        "generate-exact",
        "--pde",
        "adv1d",
        "--n-traj",
        "3",
        "--resolution",
        "16",
        "--n-steps",
        "4",
        "--out",
        str(tmp_path),
        "--quiet",
    ]
    assert main(args) == 0
    before = sorted(p.name for p in (tmp_path / "adv1d" / "data" / "train").iterdir())
    from well_upao.data import well_format

    def failing(self, *args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(well_format.WellFileWriter, "write_block", failing)
    assert main([*args, "--overwrite", "--n-traj", "5"]) != 0
    assert sorted(p.name for p in (tmp_path / "adv1d" / "data" / "train").iterdir()) == before
    assert leftovers(tmp_path) == ["adv1d"]
    with h5py.File(tmp_path / "adv1d" / "data" / "train" / before[0], "r") as f:
        assert f.attrs["n_trajectories"] == 2


def test_validate_reports_missing_path(tmp_path, capsys):
    assert main(["validate", str(tmp_path / "nope")]) != 0
    assert "no such file" in capsys.readouterr().err


def test_unexpected_errors_are_one_line_and_debug_shows_the_traceback(monkeypatch, capsys):
    import well_upao.commands.fix_harness as fix_harness

    def broken(args):
        raise RuntimeError("something odd\nover two lines")

    monkeypatch.setattr(fix_harness, "run", broken)
    assert main(["fix-harness"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "RuntimeError: something odd over two lines (--debug shows the traceback)" in err
    with pytest.raises(RuntimeError, match="something odd"):
        main(["fix-harness", "--debug"])


def test_damaged_and_foreign_checkpoints_are_named_in_one_line(tmp_path, capsys):
    from well_upao.models.checkpoint import build_payload, save_checkpoint
    from well_upao.models.na_transformer import NATransformer

    good = tmp_path / "good.pt"
    save_checkpoint(good, build_payload(NATransformer(preset="tiny", layers=1, dims=(2,), channel_slots=[0])))
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    foreign = tmp_path / "foreign.pt"
    import torch

    torch.save({"weights": [1, 2]}, foreign)
    for path, problem in ((truncated, "cannot read checkpoint"), (foreign, "not a well-upao checkpoint")):
        for command in (["export-backbone", str(path), str(tmp_path / "out.pt")], ["adapters-report", str(path)]):
            code = main(command)
            err = capsys.readouterr().err
            assert code != 0 and err.count("\n") == 1 and path.name in err and problem in err, err
        code = main(["evaluate", "--no-figures", str(path), "--data", "tg2d", "--quiet"])
        err = capsys.readouterr().err
        assert code != 0 and err.count("\n") == 1 and path.name in err, err
    assert not (tmp_path / "out.pt").exists()


def test_imports_that_fail_and_a_missing_dataset_say_what_to_do(tmp_path, capsys):
    assert main(["validate", str(tmp_path), "--imports", "no_such_module_xyz"]) == 2
    assert "cannot import 'no_such_module_xyz' (--imports)" in capsys.readouterr().err
    assert main(["evaluate"]) == 2
    assert "--data is required when no run" in capsys.readouterr().err


def test_help_does_not_import_torch():
    """``well-upao --help`` (and a command's ``--help``) stays fast: building the parser loads no torch (the CLI's
    handlers import what they need when they run)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from well_upao.cli import main\n"
        "for argv in (['--help'], ['evaluate', '--help'], ['generate-replica', '--help'], ['import', '--help']):\n"
        "    try:\n"
        "        main(argv)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print('torch loaded:', 'torch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "torch loaded: False"


def fixes_named(source: str) -> dict[str, set[str]]:
    """The commands (``well-upao NAME``), options (``--name``) and config keys (``trainer.x``, ``data.x``, ``model.x``,
    ``optimizer.x``) the string literals of a module name: what a message tells the user to run or set."""
    import ast
    import re

    named: dict[str, set[str]] = {"commands": set(), "options": set(), "keys": set()}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            # a command as a message gives one: quoted, or followed by its options
            quoted = re.findall(r"`(?:\S*/)?well-upao ([a-z][a-z-]+)|well-upao ([a-z][a-z-]+) -", text)
            named["commands"] |= {a or b for a, b in quoted}
            named["options"] |= set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]+", text))
            named["keys"] |= set(
                # a key in full, not a template (trainer.rollout_<field>) nor a file name (your-data.md)
                re.findall(r"(?<![\w./-])((?:trainer|data|model|optimizer)\.[a-z][a-z0-9_.]*[a-z0-9])(?![\w<])", text)
            )
    return named


#: options of the programs beside ours that messages name (the harness's Hydra, torchrun)
OTHER_PROGRAMS_OPTIONS = {"--config-name", "--nnodes", "--nproc", "--rdzv"}
#: dotted names in messages that are code, not config keys
CODE_NAMES = {"model.blocks", "model.config", "model.forward_sequence"}


def config_keys() -> set[str]:
    """Every key of the harness's configs, over the model and trainer choices messages name."""
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    keys: set[str] = set()

    def walk(node: dict, prefix: str) -> None:
        for key, value in node.items():
            keys.add(prefix + key)
            if isinstance(value, dict):
                walk(value, f"{prefix}{key}.")

    GlobalHydra.instance().clear()
    choices = [
        ["model=na_nslora", "trainer=upao"],
        ["experiment=fno_well"],
        ["model=pde_transformer"],
        ["model=poseidon"],
    ]
    with initialize_config_module(config_module="well_upao.configs", version_base=None):
        for overrides in choices:
            walk(OmegaConf.to_container(compose(config_name="config", overrides=overrides)), "")
        walk(OmegaConf.to_container(compose(config_name="pretrain")), "")
    return keys


def test_every_fix_a_message_names_exists():
    """A message that tells the user to run ``well-upao NAME``, pass ``--option`` or set ``trainer.key`` names a
    command, an option of one and a config key that exist (ours, or the harness's and torchrun's own options)."""
    from well_upao.commands.parsers import build_parser

    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    options = {o for sub in commands.values() for action in sub._actions for o in action.option_strings}
    keys = config_keys()
    missing = []
    package = Path(__import__("well_upao").__file__).parent
    for path in sorted(package.rglob("*.py")):
        named = fixes_named(path.read_text())
        missing += [f"{path.name}: well-upao {c}" for c in named["commands"] - set(commands)]
        missing += [f"{path.name}: {o}" for o in named["options"] - options - OTHER_PROGRAMS_OPTIONS]
        missing += [f"{path.name}: {k}" for k in named["keys"] - keys - CODE_NAMES]
    assert not missing, missing


def test_the_fix_check_sees_a_fix_that_does_not_exist():
    """Negative control: a made-up command, option and key are found in a message."""
    source = 'raise CommandError("run `well-upao frobnicate --no-such-flag` or set trainer.no_such_key=1")'
    assert fixes_named(source) == {
        "commands": {"frobnicate"},
        "options": {"--no-such-flag"},
        "keys": {"trainer.no_such_key"},
    }
