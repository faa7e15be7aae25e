"""The file the_well's harness asserts: what an editable install lacks, `well-upao fix-harness` writes, and the
commands that run the harness name the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from well_upao.cli import main
from well_upao.harness import install

REPO = Path(__file__).resolve().parents[2]


def test_the_embedded_text_is_the_shipped_file():
    assert install.SHIM_TEXT == (REPO / "shims" / "the_well_configs" / "config.yaml").read_text()


def test_the_installed_file_is_where_the_well_looks():
    import the_well

    expected = Path(the_well.__file__).parent / "benchmark" / "configs" / "config.yaml"
    assert install.harness_config_path() == expected and install.harness_config_missing() is None


@pytest.fixture
def missing(monkeypatch, tmp_path):
    """As after an editable install: the file is not there (a stand-in path, the real file is untouched)."""
    path = tmp_path / "the_well" / "benchmark" / "configs" / "config.yaml"
    monkeypatch.setattr(install, "harness_config_path", lambda: path)
    return path


def test_fix_harness_writes_the_missing_file_once(missing, capsys):
    assert "run `well-upao fix-harness` once" in install.harness_config_missing()
    assert main(["fix-harness"]) == 0 and f"wrote {missing}" in capsys.readouterr().out
    assert missing.read_text() == install.SHIM_TEXT and install.harness_config_missing() is None
    assert main(["fix-harness"]) == 0 and "already present" in capsys.readouterr().out


def test_the_quickstart_names_the_fix_before_running_the_harness(missing, tmp_path, capsys):
    assert main(["quickstart", "--out", str(tmp_path / "qs")]) == 2
    assert "well-upao fix-harness" in capsys.readouterr().err
    assert not (tmp_path / "qs").exists()
