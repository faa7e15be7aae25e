"""The project's promises about installation: README commands = CI commands, every package is installed."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    """The README's set-up: install and main job, the optional extras (one line each), the tests."""
    blocks = re.findall(r"```bash\n(.*?)```", (REPO / "README.md").read_text(), flags=re.S)
    return [blocks[0].strip(), blocks[1].strip(), blocks[2].strip()]


def test_ci_runs_the_readme_commands_verbatim():
    install, extra, tests = readme_commands()
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert install in ci, "the README's install command must appear verbatim in .ci/run"
    for line in extra.splitlines():
        assert line in ci and ci.index(line) > ci.index(install), f"CI installs the extra {line!r} after the project"
    assert any(line.strip().startswith(tests) for line in ci), "the README's test command must run in .ci/run"


def test_every_python_package_is_listed_in_pyproject():
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    mapped = {v: k for k, v in config["package-dir"].items() if k}
    found = set()
    for init in REPO.glob("**/__init__.py"):
        rel = init.parent.relative_to(REPO)
        if rel.parts[0] in {"tests", "benchmarks", ".venv", "build"}:
            continue
        top = rel.parts[0]
        if top in mapped:
            found.add(".".join([mapped[top], *rel.parts[1:]]))
        elif str(rel.parent) in mapped:  # shims/the_well_configs
            found.add(mapped[str(rel.parent)])
        else:
            found.add(".".join(rel.parts))
    found |= {mapped["shims/the_well_configs"]}
    assert found <= listed, f"packages missing from pyproject: {sorted(found - listed)}"


def test_the_well_train_assert_is_satisfied():
    import the_well

    assert (Path(the_well.__file__).parent / "benchmark" / "configs" / "config.yaml").is_file()


def test_harness_works_from_the_source_checkout():
    """`python -m the_well.benchmark.train` in the repository root imports well_upao from the checkout (cwd comes
    first on sys.path), where configs/ and datasets_exact/ are not inside the package: both must still resolve."""
    import subprocess
    import sys

    command = [sys.executable, "-m", "the_well.benchmark.train", "experiment=fno", "data=wave2d", "--cfg", "job"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "the_well.benchmark.models.FNO" in done.stdout
    probe = "import well_upao.datasets_exact as d, well_upao.configs as c; print(d.__file__); print(c.__file__)"
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(REPO / "datasets_exact" / "__init__.py"), str(REPO / "configs" / "__init__.py")]
