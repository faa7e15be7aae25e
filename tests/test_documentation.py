"""The README is a map and the documentation holds the rest (issue 54): the README's size and parts, nothing the
0.1.0 README said lost on the way to docs/, the site built with ``mkdocs build --strict`` where the ``[docs]`` extra
is installed, with the API reference of the public classes and the "What you get" block rendered from its one
source, and the CHANGELOG cut at the package's version."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import readings  # noqa: E402  (benchmarks/ is a folder of scripts, not a package)

README = ROOT / "README.md"
DOCS = ROOT / "docs"
#: every number the README quoted when it was the whole manual (0.1.0), one per line (see the file's header)
NUMBERS_0_1_0 = ROOT / "tests" / "fixtures" / "readme_0.1.0_numbers.txt"
MAX_README_LINES = 250
#: the user's path: the three commands the README shows (data, adaptation through the Well's harness, evaluation)
USER_PATH = (
    "well-upao generate-exact --pde",
    "python -m the_well.benchmark.train model=na_nslora trainer=upao",
    "well-upao evaluate",
)
#: the public classes and functions the README and the issue name, and the API page that must render each
API = {
    "data": ["well_upao.data.source.WellSource", "well_upao.data.datasets.DatasetSpec"],
    "models": ["well_upao.models.na_transformer.NATransformer", "well_upao.models.lora"],
    "physics": ["well_upao.physics.pdes.PDE", "well_upao.physics.discretisation.resolve"],
    "trainers": ["well_upao.trainers.upao.UpaoLoss", "well_upao.trainers.guard"],
    "evaluate": ["well_upao.evaluate.pipeline.run_evaluation", "well_upao.evaluate.horizons"],
}


def markdown_sources() -> list[Path]:
    """README.md and the documentation's own pages (not the linked reports)."""
    return [README, *readings.documentation_pages(ROOT)]


def numbers_in(text: str) -> set[str]:
    return set(readings.NUMBER.findall(text))


def test_the_readme_is_a_map_of_at_most_250_lines():
    text = README.read_text()
    assert len(text.splitlines()) <= MAX_README_LINES
    headings = re.findall(r"^## (.+)$", text, flags=re.M)
    assert headings[0] == "What you get" and "Set-up" in headings
    assert any(h.startswith("Where it pays") for h in headings) and "**Reading the table.**" in text
    path = text.split("## Your path", 1)[1].split("\n## ", 1)[0]
    commands = "\n".join(re.findall(r"```bash\n(.*?)```", path, flags=re.S))
    for command in USER_PATH:
        assert command in commands, f"the README's path shows {command!r} as a command"
    linked = set(re.findall(r"\]\((docs/[^)#]+)", text))
    assert {"docs/getting-started.md", "docs/training.md", "docs/evaluation.md", "docs/reports.md"} <= linked


def test_every_link_of_the_readme_and_the_docs_resolves():
    """Relative links of README.md and docs/ point at files that exist (mkdocs checks docs/ too, where installed)."""
    broken = []
    for page in markdown_sources():
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if re.match(r"[a-z]+://", target):
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken, broken


def lost_numbers(texts: list[str]) -> list[str]:
    """The numbers of the 0.1.0 README (:data:`NUMBERS_0_1_0`) that none of ``texts`` holds."""
    wanted = [line for line in NUMBERS_0_1_0.read_text().splitlines() if line and not line.startswith("#")]
    assert len(wanted) > 250  # the fixture is the whole list, not a sample
    found = set().union(*(numbers_in(text) for text in texts))
    return [number for number in wanted if number not in found]


def test_no_number_of_the_0_1_0_readme_is_lost():
    """Moving the README's text into docs/ kept every number it quoted outside its generated table."""
    lost = lost_numbers([page.read_text() for page in markdown_sources()])
    assert not lost, f"numbers of the 0.1.0 README in neither README.md nor docs/: {lost}"


def test_the_lost_number_check_sees_a_number_removed():
    """Negative control: the same check on the pages with one quoted number edited away names that number."""
    texts = [page.read_text() for page in markdown_sources()]
    edited = [text.replace("1.23e+03", "1.24e+03") for text in texts]
    assert edited != texts
    assert lost_numbers(edited) == ["1.23e+03"]


def test_the_changelog_is_cut_at_the_package_version():
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    text = (ROOT / "CHANGELOG.md").read_text()
    releases = re.findall(r"^## \[([^\]]+)\]", text, flags=re.M)
    assert releases[:2] == ["Unreleased", version]
    unreleased = text.split("## [Unreleased]", 1)[1].split(f"## [{version}]", 1)[0]
    groups = re.findall(r"^### (.+)$", unreleased, flags=re.M)
    assert groups and set(groups) <= {"Added", "Changed", "Fixed"}


needs_mkdocs = pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings") is None,
    reason="the [docs] extra is not installed (pip install '.[docs]')",
)


def build(config: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config), "--site-dir", str(site)],
        capture_output=True,
        text=True,
        cwd=config.parent,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    result = build(ROOT / "mkdocs.yml", out)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return out


def built_page(site: Path, page: Path) -> Path:
    """Where mkdocs writes ``page`` (directory URLs): ``a/b.md`` -> ``a/b/index.html``, ``a/index.md`` ->
    ``a/index.html``."""
    relative = page.relative_to(DOCS).with_suffix("")
    folder = relative.parent if relative.name == "index" else relative
    return site / folder / "index.html"


@needs_mkdocs
def test_the_site_builds_strict_with_every_page(site):
    pages = readings.documentation_pages(ROOT)
    missing = [str(p.relative_to(ROOT)) for p in pages if not built_page(site, p).is_file()]
    assert not missing, missing


@needs_mkdocs
def test_the_api_reference_renders_the_public_classes(site):
    for page, names in API.items():
        html = (site / "api" / page / "index.html").read_text()
        for name in names:
            assert f'id="{name}"' in html, f"api/{page}: {name} not rendered"


@needs_mkdocs
def test_what_you_get_is_one_source_rendered_in_both(site):
    """The home page includes README.md's generated block (not a copy): every number of the README's table is on
    the built page, and docs/index.md holds the include, not the table."""
    readme = README.read_text()
    block = readme[readme.index(readings.WHAT_YOU_GET[0]) : readme.index(readings.WHAT_YOU_GET[1])]
    table = "\n".join(line for line in block.splitlines() if line.startswith("| "))
    assert len(numbers_in(table)) > 40
    home = re.sub(r"<[^>]+>", " ", (site / "index.html").read_text())
    missing = numbers_in(table) - numbers_in(home)
    assert not missing, f"numbers of the README's table not on the home page: {sorted(missing)}"
    source = (DOCS / "index.md").read_text()
    assert '--8<-- "README.md:what_you_get"' in source and readings.WHAT_YOU_GET[0] not in source


@needs_mkdocs
def test_a_broken_link_fails_the_strict_build(tmp_path):
    """Negative control: the same site with one link to a missing page does not build."""
    copy = tmp_path / "repo"
    shutil.copytree(DOCS, copy / "docs", symlinks=True)
    (copy / "docs" / "reports").unlink()  # the link to ../reports, relative: point it at the repository's
    (copy / "docs" / "reports").symlink_to(ROOT / "reports")
    config = (ROOT / "mkdocs.yml").read_text()  # the sources (docstrings, included files) from the repository
    config = config.replace('paths: ["."]', f'paths: ["{ROOT}"]').replace('base_path: ["."]', f'base_path: ["{ROOT}"]')
    (copy / "mkdocs.yml").write_text(config)
    page = copy / "docs" / "commands.md"
    page.write_text(page.read_text() + "\nSee [a page that does not exist](nowhere.md).\n")
    result = build(copy / "mkdocs.yml", tmp_path / "broken")
    assert result.returncode != 0 and "nowhere.md" in result.stdout + result.stderr


#: the module of each replica's solver (``well_upao/families/replicas/``), whose docstring states its equations
SOLVERS = {
    "gray_scott_reaction_diffusion": "gray_scott",
    "shear_flow": "shear_flow",
    "rayleigh_benard": "rayleigh_benard",
    "active_matter": "active_matter",
}


def test_one_dataset_page_per_exact_set_and_replica_with_its_figure():
    """Every exact set the package generates and every replica it re-makes has a page in the site's nav, with a
    figure that exists."""
    from well_upao.datasets_exact import EXACT_PDES
    from well_upao.families.replicas.families import REPLICAS

    nav = (ROOT / "mkdocs.yml").read_text()
    for name in [*EXACT_PDES, *REPLICAS]:
        page = DOCS / "datasets" / f"{name}.md"
        assert page.is_file() and f"datasets/{name}.md" in nav, f"no dataset page for {name}"
        figures = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", page.read_text())
        assert figures and all((page.parent / f).is_file() for f in figures), f"{name}: figure missing"
        module = f"datasets_exact.{name}" if name in EXACT_PDES else f"well_upao.families.replicas.{SOLVERS[name]}"
        assert f"::: {module}" in page.read_text(), f"{name}: the equation comes from its module's docstring"
