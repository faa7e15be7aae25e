"""The documentation's commands run: each recipe page's blocks as written (``doc_blocks``), and every other command on
a page parsed by the real command line (``well-upao``: its argparse parser; the harness: Hydra composing our configs
with its overrides), so no page shows a command the product does not accept."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import time
from pathlib import Path

import pytest
from doc_blocks import CONSOLE_SCRIPT, blocks, commands, expected_lines_missing, run_recipe
from harness import readings  # benchmarks/ is on the path (tests/conftest.py)

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

#: pages whose recipe (every block above ``## Reference``) the suite runs as written
RECIPES = ("your-data.md",)
#: the run folder the your-data recipe trains
MY_HEAT_RUN = "experiments/my_heat-na_nslora-upao-NATransformer-0.0001/0"
#: the commands of a page: ours and the harness's (a user's own Python and modules are not), by their program
PRODUCT_COMMAND = re.compile(r"^(\S*/)?(well-upao\s|python\S*\s.*-m the_well\.|torchrun\s.*-m well_upao\.train)")


def clean_environment() -> dict[str, str]:
    """This environment without the settings that would point the commands elsewhere than the working folder."""
    env = {k: v for k, v in os.environ.items() if k not in ("WELL_BASE_PATH", "WELL_UPAO_EXPERIMENTS", "PYTHONPATH")}
    return {**env, "WANDB_MODE": "disabled", "HYDRA_FULL_ERROR": "1"}


def registries() -> tuple[dict, dict]:
    from well_upao.data.datasets import DATASETS
    from well_upao.physics import PDE_REGISTRY

    return DATASETS, PDE_REGISTRY


def check_your_data(workdir: Path) -> None:
    """What the your-data recipe is for: a run of the shipped backbone with NSLoRA under UPAO on the imported data,
    and its evaluation beside the classical rows and the solver of the user's PDE."""
    import torch

    checkpoint = torch.load(workdir / MY_HEAT_RUN / "checkpoints" / "best.pt", weights_only=False, map_location="cpu")
    assert checkpoint["adapters"]["kind"] == "nslora" and checkpoint["train"]["data"]["imports"] == ["my_pdes"]
    (report,) = (workdir / "evaluation").glob("evaluation_my_heat_valid_stride1.json")
    rows = {row["name"] for row in json.loads(report.read_text())["scores"]}
    assert {"persistence", "extrap1", "extrap2", "solver", "my_heat-na_nslora-upao-NATransformer-0.0001/0"} <= rows
    forecast = json.loads((workdir / "forecast" / "forecast.json").read_text())
    assert forecast["steps"] == 12 and len(forecast["trajectories"]) == 1
    assert {"persistence", "solver", "my_heat-na_nslora-upao-NATransformer-0.0001/0"} <= set(forecast["candidates"])


CHECKS = {"your-data.md": check_your_data}


@pytest.mark.parametrize("page", RECIPES)
def test_the_recipe_runs_as_written(page, tmp_path, monkeypatch):
    """Every block of the page's recipe, in order, in an empty folder; the output blocks match what the commands
    printed; at most six commands of ours or the harness's. Prints each command's seconds."""
    monkeypatch.delenv("WELL_BASE_PATH", raising=False)
    monkeypatch.delenv("WELL_UPAO_EXPERIMENTS", raising=False)
    markdown = (DOCS / page).read_text()
    datasets, pdes = registries()
    kept = dict(datasets), dict(pdes), set(sys.modules), list(sys.path)
    started = time.perf_counter()
    try:
        ran = run_recipe(markdown, tmp_path, clean_environment())
    finally:
        datasets.clear(), datasets.update(kept[0]), pdes.clear(), pdes.update(kept[1])
        for name in set(sys.modules) - kept[2]:
            if getattr(sys.modules[name], "__file__", None) and str(tmp_path) in str(sys.modules[name].__file__):
                del sys.modules[name]
        sys.path[:] = kept[3]
    for result in ran:
        for command, seconds in result.steps:
            print(f"{seconds:6.1f} s  {command[:100]}")
    print(f"{time.perf_counter() - started:6.1f} s  the whole recipe of {page}")
    product = [c for b in blocks(markdown, True) if b.language == "bash" for c in commands(b.text)]
    product = [c for c in product if PRODUCT_COMMAND.search(c)]
    assert len(product) <= 6, f"{page}: {len(product)} commands from the arrays to the end: {product}"
    CHECKS.get(page, lambda _: None)(tmp_path)


def test_the_recipe_runner_fails_a_failing_command_and_output_the_page_invents(tmp_path):
    """Negative controls: a command that fails, an output line no command printed, and a module block that is
    saved, not run."""
    env = clean_environment()
    with pytest.raises(AssertionError, match="exited with 1"):
        run_recipe("```bash\ntrue\nfalse\n```\n", tmp_path, env)
    with pytest.raises(AssertionError, match=r"did not print: \['goodbye'\]"):
        run_recipe("```bash\necho hello\n```\n\n```text\nhel...\ngoodbye\n```\n", tmp_path, env)
    ran = run_recipe(
        "```python\n# mod.py\nraise SystemExit(3)\n```\n\n## Reference\n\n```bash\nfalse\n```\n", tmp_path, env
    )
    assert (tmp_path / "mod.py").read_text().startswith("# mod.py") and len(ran) == 1
    assert expected_lines_missing("a ... c", "a b c\n") == [] and expected_lines_missing("a ... d", "a b c") == [
        "a ... d"
    ]


# ---------------------------------------------------------------------------- every command on every page


def pages() -> list[Path]:
    """README.md and the hand-written documentation pages (the API pages are docstrings, the reports generated)."""
    return [ROOT / "README.md", *(p for p in readings.documentation_pages(ROOT) if "api" not in p.parts)]


def shell_values(markdown: str) -> dict[str, str]:
    """The page's ``export NAME=VALUE`` lines, plus ``$HOME``, for substituting variables in its commands."""
    values = {"HOME": "/home/user"}
    for name, value in re.findall(r"^\s*export (\w+)=(\S+)", markdown, flags=re.M):
        values[name] = value
    return values


def substituted(command: str, values: dict[str, str]) -> str:
    for _ in range(3):  # values that name other variables ($WELL_BASE_PATH=$ROOT/datasets)
        command = re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: values.get(m.group(1) or m.group(2), "VALUE"), command)
    return command


def documented_commands() -> list[tuple[Path, int, str, bool]]:
    """Every product command in a bash block of a page: (page, block line, command, run by a recipe test)."""
    found = []
    for page in pages():
        markdown = page.read_text()
        recipe = {b.line for b in blocks(markdown, recipe_only=True)} if page.name in RECIPES else set()
        values = shell_values(markdown)
        for block in blocks(markdown):
            if block.language not in ("bash", "sh", "shell"):
                continue
            for command in commands(block.text):
                command = command.split(" # ")[0].strip()
                for part in re.split(r"\s*&&\s*", command):
                    if PRODUCT_COMMAND.search(part):
                        found.append((page, block.line, substituted(part, values), block.line in recipe))
    return found


def parse_problem(command: str) -> str | None:
    """Why the real command line would refuse ``command`` (``None``: it accepts it)."""
    tokens = shlex.split(command)
    if any(t.endswith("well-upao") for t in tokens[:1]):
        from well_upao.commands.parsers import build_parser

        try:
            build_parser().parse_args(tokens[1:])
        except SystemExit as exit_:
            return None if exit_.code == 0 else f"well-upao refuses {tokens[1:]}"
        return None
    module = tokens[tokens.index("-m") + 1]
    overrides = tokens[tokens.index("-m") + 2 :]
    config = "config"
    if "--config-name" in overrides:
        at = overrides.index("--config-name")
        config = overrides[at + 1]
        overrides = overrides[:at] + overrides[at + 2 :]
    if module not in ("the_well.benchmark.train", "well_upao.train"):
        return f"unknown module {module}"
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    try:
        with initialize_config_module(config_module="well_upao.configs", version_base=None):
            compose(config_name=config, overrides=overrides)
    except Exception as error:  # Hydra's errors for unknown groups, keys and values
        return f"Hydra refuses {overrides}: {str(error).splitlines()[0]}"
    return None


def test_every_command_on_a_page_is_run_by_a_recipe_or_accepted_by_the_command_line():
    found = documented_commands()
    assert len(found) > 40, "the walk finds the pages' commands"
    recipe = [c for _, _, c, run in found if run]
    assert any("well-upao import" in c for c in recipe) and any("the_well.benchmark.train" in c for c in recipe)
    problems = []
    for page, line, command, run in found:
        if run:
            continue
        problem = parse_problem(command)
        if problem:
            problems.append(f"{page.relative_to(ROOT)}:{line}: {problem}")
    assert not problems, "\n".join(problems)


def test_the_command_check_refuses_what_the_command_line_refuses():
    """Negative controls: an option ``evaluate`` does not have, a config key and a config group that do not exist."""
    assert parse_problem(".venv/bin/well-upao evaluate --no-such-option") is not None
    assert parse_problem(".venv/bin/well-upao evaluate run/0 --rollout-starts 1") is None
    assert parse_problem(".venv/bin/python -m the_well.benchmark.train trainer.no_such_key=1") is not None
    assert parse_problem(".venv/bin/python -m the_well.benchmark.train model=no_such_model") is not None
    assert parse_problem(".venv/bin/python -m the_well.benchmark.train model=na_nslora trainer=upao") is None
    assert substituted("--dataset $DATASET ${DATASET}_x", {"DATASET": "d"}) == "--dataset d d_x"
    assert CONSOLE_SCRIPT == ".venv/bin/well-upao"


def calls_with_unknown_keywords(code: str, function) -> list[str]:
    """Keywords of the calls of ``function`` (by its name) in ``code`` that it does not take."""
    import ast
    import inspect

    accepted = set(inspect.signature(function).parameters)
    unknown = []
    for node in ast.walk(ast.parse(code)):
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", getattr(node.func, "attr", None)) == function.__name__
        ):
            unknown += [k.arg for k in node.keywords if k.arg not in accepted]
    return unknown


def test_the_reference_python_of_a_recipe_page_parses_and_calls_with_real_arguments():
    """The Python blocks below a recipe (not run: they name the reader's arrays) compile, and their calls of
    ``write_dataset`` use its own keywords."""
    from well_upao.data import write_dataset

    for page in RECIPES:
        markdown = (DOCS / page).read_text()
        recipe = {b.line for b in blocks(markdown, recipe_only=True)}
        reference = [b for b in blocks(markdown) if b.language == "python" and b.line not in recipe]
        assert reference, f"{page}: no Python in its reference"
        for block in reference:
            compile(block.text, f"{page}:{block.line}", "exec")
            assert calls_with_unknown_keywords(block.text, write_dataset) == [], f"{page}:{block.line}"
    assert calls_with_unknown_keywords("write_dataset(a, 'n', no_such_keyword=1)", write_dataset) == ["no_such_keyword"]
