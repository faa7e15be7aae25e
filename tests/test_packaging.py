"""The project's promises about installation: README commands = CI commands, every package is installed."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", (REPO / "README.md").read_text(), flags=re.S)
    return [blocks[0].strip(), blocks[1].strip()]


def test_ci_runs_the_readme_commands_verbatim():
    install, tests = readme_commands()
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert install in ci, "the README's install command must appear verbatim in .ci/run"
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
