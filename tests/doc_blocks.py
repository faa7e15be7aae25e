"""The code blocks of a documentation page, and what runs them (``tests/test_doc_recipes.py``).

A page's **recipe** is every fenced block above its ``## Reference`` heading, in order:

* ````python```` whose first line is ``# NAME.py``: written to ``NAME.py`` in the working folder (a module that later
  commands import, as the reader saves it);
* any other ````python````: run with the environment's Python in the working folder;
* ````bash````: each command (backslash continuations joined, comments dropped) run in the working folder:
  ``.venv/bin/well-upao ARGS`` through the console script's own function, ``well_upao.cli.main(ARGS)``, in this
  process (the same code without another interpreter's start-up), anything else with ``bash -c``;
* ````text```` right after a block: what that block prints; each of its lines must be a line of the output, ``...``
  standing for any text.

The working folder holds ``.venv``, a link to the environment running the tests, so the commands run as written.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
REFERENCE = re.compile(r"^## Reference\s*$", re.M)
CONSOLE_SCRIPT = ".venv/bin/well-upao"


@dataclass
class Block:
    """One fenced block of a page: its language, its text and the line it starts on."""

    language: str
    text: str
    line: int

    @property
    def module(self) -> str | None:
        """``NAME.py`` when the block is a module to save (its first line ``# NAME.py``)."""
        first = self.text.splitlines()[0].strip() if self.text.strip() else ""
        match = re.fullmatch(r"#\s*([\w/]+\.py)", first)
        return match.group(1) if self.language == "python" and match else None


def blocks(markdown: str, recipe_only: bool = False) -> list[Block]:
    """The page's fenced blocks in order (``recipe_only``: those above its ``## Reference`` heading)."""
    if recipe_only:
        reference = REFERENCE.search(markdown)
        markdown = markdown[: reference.start()] if reference else markdown
    return [Block(m.group(1), m.group(2), markdown.count("\n", 0, m.start()) + 1) for m in FENCE.finditer(markdown)]


def commands(bash: str) -> list[str]:
    """The commands of a bash block: continuation lines joined, blank lines and comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", bash)
    out = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out


def expected_lines_missing(expected: str, output: str) -> list[str]:
    """The lines of an expected-output block that no line of ``output`` matches (``...``: any text)."""
    lines = output.splitlines()
    missing = []
    for want in expected.strip().splitlines():
        pattern = ".*".join(re.escape(part) for part in want.split("..."))
        if not any(re.fullmatch(pattern, line.rstrip()) for line in lines):
            missing.append(want)
    return missing


@dataclass
class Ran:
    """What one block printed and how long it took."""

    block: Block
    output: str
    seconds: float
    steps: list[tuple[str, float]] = field(default_factory=list)


def run_in_process(argv: list[str], workdir: Path) -> tuple[int, str]:
    """``well-upao ARGV`` through ``well_upao.cli.main`` in ``workdir``, its stdout and stderr captured."""
    from well_upao.cli import main

    out = io.StringIO()
    before = os.getcwd()
    os.chdir(workdir)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = main(argv)
    finally:
        os.chdir(before)
    return code, out.getvalue()


def run_recipe(markdown: str, workdir: Path, env: dict[str, str], timeout: int = 600) -> list[Ran]:
    """Run a page's recipe in ``workdir`` (see the module docstring); raises ``AssertionError`` naming the block
    that failed."""
    venv = workdir / ".venv"
    if not venv.exists():
        venv.symlink_to(Path(sys.prefix))
    ran: list[Ran] = []
    for block in blocks(markdown, recipe_only=True):
        started = time.perf_counter()
        if block.language == "text":
            assert ran, f"line {block.line}: an output block before any command"
            missing = expected_lines_missing(block.text, ran[-1].output)
            assert not missing, f"line {block.line}: the page shows output the command did not print: {missing}"
            continue
        if block.module:
            (workdir / block.module).write_text(block.text)
            ran.append(Ran(block, "", 0.0))
            continue
        if block.language == "python":
            done = subprocess.run(
                [str(venv / "bin" / "python"), "-c", block.text],
                cwd=workdir,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
            assert done.returncode == 0, f"line {block.line}: the Python block failed:\n{done.stderr[-3000:]}"
            ran.append(Ran(block, done.stdout, time.perf_counter() - started))
            continue
        if block.language != "bash":
            continue
        outputs, steps = [], []
        for command in commands(block.text):
            step = time.perf_counter()
            if command.startswith(CONSOLE_SCRIPT + " "):
                code, output = run_in_process(shlex.split(command)[1:], workdir)
            else:
                done = subprocess.run(
                    ["bash", "-c", command], cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout
                )
                code, output = done.returncode, done.stdout + done.stderr
            assert code == 0, f"line {block.line}: `{command}` exited with {code}:\n{output[-3000:]}"
            outputs.append(output)
            steps.append((command, time.perf_counter() - step))
        ran.append(Ran(block, "\n".join(outputs), time.perf_counter() - started, steps))
    return ran
