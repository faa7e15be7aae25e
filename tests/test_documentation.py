"""The README is a map and the documentation holds the rest (issue 54): the README's size and parts, nothing the
0.1.0 README said lost on the way to docs/, the site built with ``mkdocs build --strict`` where the ``[docs]`` extra
is installed, with the API reference of the public classes and the "What you get" block rendered from its one
source, and the CHANGELOG cut at the package's version."""

from __future__ import annotations

import html
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from html.parser import HTMLParser
from pathlib import Path

import pytest
from harness import readings

ROOT = Path(__file__).resolve().parent.parent


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
    "data": [
        "well_upao.data.source.WellSource",
        "well_upao.data.datasets.DatasetSpec",
        "well_upao.data.importing.write_dataset",
    ],
    "models": ["well_upao.models.na_transformer.NATransformer", "well_upao.models.lora"],
    "physics": ["well_upao.physics.pdes.PDE", "well_upao.physics.discretisation.resolve"],
    "trainers": ["well_upao.trainers.upao.UpaoLoss", "well_upao.trainers.guard"],
    "evaluate": [
        "well_upao.evaluate.pipeline.run_evaluation",
        "well_upao.predict.evidence",
        "well_upao.predict.classical",
        "well_upao.forecast.core.forecast",
    ],
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
    """The results page includes README.md's generated block (not a copy): every number of the README's table is on
    the built page, docs/what-you-get.md holds the include, not the table, and the home page links it."""
    readme = README.read_text()
    block = readme[readme.index(readings.WHAT_YOU_GET[0]) : readme.index(readings.WHAT_YOU_GET[1])]
    table = "\n".join(line for line in block.splitlines() if line.startswith("| "))
    assert len(table.splitlines()) >= 2 and len(numbers_in(table)) >= 5  # the header and a row at least
    results = re.sub(r"<[^>]+>", " ", (site / "what-you-get" / "index.html").read_text())
    missing = numbers_in(table) - numbers_in(results)
    assert not missing, f"numbers of the README's table not on the results page: {sorted(missing)}"
    source = (DOCS / "what-you-get.md").read_text()
    assert '--8<-- "README.md:what_you_get"' in source and readings.WHAT_YOU_GET[0] not in source
    assert "](what-you-get.md)" in (DOCS / "index.md").read_text()


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


# Issue 65: the documentation for a user's tasks -------------------------------------------------------------------

sys.path.insert(0, str(DOCS))
import hooks  # noqa: E402  (docs/hooks.py: the site's build hooks)

#: a reST role left in a docstring (``:func:`name```), which mkdocstrings shows as text instead of a link
REST_ROLE = re.compile(r":(?:func|meth|class|mod|data|attr|exc|obj|const|ref):`?\w")
#: a report of ``reports/`` named by its path
REPORT_MENTION = r"reports/[\w.-]+\.md\b"
#: math that KaTeX would not see: inline ``$...$``, display ``$$``, ``\(`` or ``\[`` outside the formulas arithmatex
#: marked (``.arithmatex``) and outside code
LOOSE_MATH = re.compile(r"\$\$|\\\(|\\\[|\$[^\s$][^$\n]*\$")
REPLICAS = ("gray_scott_reaction_diffusion", "shear_flow", "rayleigh_benard", "active_matter")


def guide_pages() -> list[Path]:
    """The pages written for readers (not the API reference, which is docstrings, nor the reports)."""
    return [p for p in readings.documentation_pages(ROOT) if p.relative_to(DOCS).parts[0] != "api"]


#: HTML elements without an end tag
VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"})


class _Prose(HTMLParser):
    """The text of a built page outside code, scripts and the formulas arithmatex marked for KaTeX."""

    def __init__(self):
        super().__init__()
        self.skipping: list[bool] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in VOID:
            classes = (dict(attrs).get("class") or "").split()
            self.skipping.append(tag in ("pre", "code", "script", "style") or "arithmatex" in classes)

    def handle_endtag(self, tag):
        if tag not in VOID and self.skipping:
            self.skipping.pop()

    def handle_data(self, data):
        if not any(self.skipping):
            self.text.append(data)


def prose_of(html_text: str) -> str:
    parser = _Prose()
    parser.feed(html_text)
    return " ".join(parser.text)


def loose_math(html_text: str) -> list[str]:
    return LOOSE_MATH.findall(prose_of(html_text))


def raw_roles(html_text: str) -> list[str]:
    return REST_ROLE.findall(html.unescape(re.sub(r"<[^>]+>", "", html_text)))


def unlinked_reports(markdown: str) -> list[str]:
    """Mentions of a report by its path that are not links: in the page's prose and tables, and as a code span that
    holds only the path (not inside fenced blocks, comments, a code span that is a command, or a ``--8<--`` include
    of a report's block)."""
    text = re.sub(r"<!--.*?-->", "", markdown, flags=re.S)
    text = re.sub(r'^--8<-- "[^"]*"\s*$', "", text, flags=re.M)  # an include of a report's block, not a mention
    text = re.sub(r"^(```|~~~).*?^\1", "", text, flags=re.S | re.M)
    text = re.sub(r"!?\[[^\]]*\]\([^)]*\)", "", text)
    text = re.sub(r"`([^`]*)`", lambda m: m.group(0) if re.fullmatch(REPORT_MENTION, m.group(1)) else "", text)
    return re.findall(REPORT_MENTION, text)


@needs_mkdocs
def test_no_raw_rest_role_on_any_built_page(site):
    """Docstrings say cross-references as mkdocstrings renders them ([`name`][path] or a code span): no reST role is
    left as text on any page of the site."""
    found = {str(p.relative_to(site)): raw_roles(p.read_text()) for p in site.rglob("*.html")}
    found = {page: roles for page, roles in found.items() if roles}
    assert not found, f"raw reST roles on built pages: {found}"


def test_the_role_check_sees_a_role():
    """Negative control: a docstring role as mkdocstrings renders it, and the same reference as a link."""
    assert raw_roles("<p>see :func:<code>resolve</code> and :meth:`Physics.bind`</p>") == [":func:r", ":meth:`P"]
    assert raw_roles('<p>see <a href="#x"><code>resolve</code></a>; a time 12:30</p>') == []


@needs_mkdocs
def test_no_unrendered_math_on_any_built_page(site):
    """Every formula of the site is one arithmatex marked for KaTeX: no ``$...$``, ``$$``, ``\\(`` or ``\\[`` left in
    a page's text outside code."""
    found = {str(p.relative_to(site)): loose_math(p.read_text()) for p in site.rglob("*.html")}
    found = {page: math for page, math in found.items() if math}
    assert not found, f"math KaTeX will not render: {found}"
    formulas = sum(p.read_text().count('class="arithmatex"') for p in site.rglob("*.html"))
    assert formulas > 50, "the dataset pages' equations are rendered by arithmatex"


def test_the_math_check_sees_loose_math():
    """Negative control: math outside arithmatex's markup is found, math inside it or in code is not."""
    assert loose_math("<p>with $\\nu > 0$ and \\(x\\)</p>") == ["$\\nu > 0$", "\\("]
    page = '<p><span class="arithmatex">\\(\\nu\\)</span> costs <code>$OUT</code>, US$ 5</p>'
    assert loose_math(page) == []


@needs_mkdocs
def test_equations_render_without_a_network(site):
    """KaTeX is served from the site itself (vendored in docs/assets/katex), no page loads a script, stylesheet or
    font from another host, and every formula of the site parses with the vendored KaTeX (checked with node where
    it is installed)."""
    config = (ROOT / "mkdocs.yml").read_text()
    assert "pymdownx.arithmatex" in config and "generic: true" in config
    for page in site.rglob("*.html"):
        text = page.read_text()
        remote = re.findall(r'<(?:script|link)[^>]+(?:src|href)="(https?:[^"]+)"', text)
        assert not remote, f"{page.relative_to(site)} loads {remote}"
    home = (site / "index.html").read_text()
    for asset in ("assets/katex/katex.min.js", "assets/katex/katex.min.css", "assets/math.js"):
        assert asset in home and (site / asset).is_file(), asset
    css = (site / "assets" / "katex" / "katex.min.css").read_text()
    fonts = set(re.findall(r"url\((fonts/[\w-]+\.woff2)\)", css))
    assert fonts and all((site / "assets" / "katex" / font).is_file() for font in fonts)
    if shutil.which("node") is None:
        return
    formulas = []
    for page in site.rglob("*.html"):
        for kind, body in re.findall(r'<(div|span) class="arithmatex">(.*?)</\1>', page.read_text(), flags=re.S):
            tex = html.unescape(body).strip()
            formulas.append([str(page.relative_to(site)), tex[2:-2], kind == "div"])
    script = (
        "const katex = require(process.argv[1]); const bad = [];"
        "for (const [where, tex, display] of JSON.parse(require('fs').readFileSync(0, 'utf8'))) {"
        "  try { katex.renderToString(tex, {displayMode: display, throwOnError: true}); }"
        "  catch (e) { bad.push([where, tex, String(e.message)]); } }"
        "process.stdout.write(JSON.stringify(bad));"
    )
    katex = str(site / "assets" / "katex" / "katex.min.js")
    result = subprocess.run(["node", "-e", script, katex], input=json.dumps(formulas), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [], result.stdout


def test_every_report_mention_on_a_guide_page_is_a_link():
    """A guide page names a report by a link to it (which GitHub follows from the repository's path and the site
    from docs/reports); a command that writes a report is code and stays so."""
    found = {str(p.relative_to(ROOT)): unlinked_reports(p.read_text()) for p in guide_pages()}
    found = {page: names for page, names in found.items() if names}
    assert not found, f"report mentions that are not links: {found}"


def test_the_report_link_check_sees_a_plain_mention():
    """Negative control: a path in prose, alone in a code span or in a table cell is found; a link, a command and a
    fenced block are not."""
    text = (
        "Measured (`reports/trust.md`; also reports/rollout.md).\n\n| a | reports/gpu.md |\n\n"
        "See [trust.md](../reports/trust.md), `python benchmarks/x.py --report reports/x.md`.\n\n"
        "```bash\ncat reports/x.md\n```\n"
    )
    assert unlinked_reports(text) == ["reports/trust.md", "reports/rollout.md", "reports/gpu.md"]


def configured_repositories(config_text: str) -> list[str]:
    """The repository addresses mkdocs.yml gives as this project's (``repo_url``, ``edit_uri``)."""
    return re.findall(r"^(?:repo_url|edit_uri)\s*:\s*(\S+)", config_text, flags=re.M)


@needs_mkdocs
def test_no_other_projects_repository_is_configured_as_ours(site):
    """This project has no public address yet: the header links no repository (the Well's is linked where a page
    names it as the Well's)."""
    config = (ROOT / "mkdocs.yml").read_text()
    assert configured_repositories(config) == []
    for page in site.rglob("*.html"):
        assert 'class="md-source"' not in page.read_text(), f"{page.relative_to(site)} has a repository link"
    urls = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"].get("urls", {})
    assert not any("PolymathicAI" in url for url in urls.values())


def test_the_repository_check_sees_a_configured_repository():
    """Negative control: the check reads the setting as the site's header does."""
    text = "site_name: x\nrepo_url: https://github.com/PolymathicAI/the_well\n"
    assert configured_repositories(text) == ["https://github.com/PolymathicAI/the_well"]


def download_commands(text: str) -> list[str]:
    return re.findall(r"the-well-download ([^\n`]*)", text)


def test_the_leaderboard_page_downloads_with_the_wells_own_command():
    """The leaderboard page takes a user from ``the-well-download`` (with the flags the installed command accepts)
    to ``well-upao leaderboard``, and names a dataset of the Well."""
    from the_well.data.utils import WELL_DATASETS

    text = (DOCS / "leaderboard.md").read_text()
    commands = download_commands(text)
    assert commands, "leaderboard.md names the-well-download"
    accepted = subprocess.run(
        [sys.executable, "-m", "the_well.utils.download", "--help"], capture_output=True, text=True, check=True
    ).stdout
    splits = set()
    for command in commands:
        flags = re.findall(r"(--[\w-]+)", command)
        assert {"--base-path", "--dataset", "--split"} <= set(flags), command
        assert all(flag in accepted for flag in flags), command
        splits |= set(re.findall(r"--split (\w+)", command))
    assert splits == {"train", "valid", "test"}
    dataset = re.search(r"export DATASET=(\w+)", text).group(1)
    assert dataset in WELL_DATASETS
    for step in ("trainer=upao", "trainer=shifted", "well-upao evaluate", "--split test", "well-upao leaderboard"):
        assert step in text, step
    assert text.index("the-well-download") < text.index("trainer=upao") < text.index("well-upao leaderboard")


def test_the_download_check_reads_the_commands_of_a_page():
    """Negative control: a page without the command has none, a command's flags are read as written."""
    assert download_commands("Download the data.") == []
    assert download_commands("`the-well-download --base-path x --dataset y`") == ["--base-path x --dataset y"]


def test_each_dataset_page_states_its_pde_in_latex():
    from well_upao.datasets_exact import EXACT_PDES

    for name in [*EXACT_PDES, *REPLICAS]:
        text = (DOCS / "datasets" / f"{name}.md").read_text()
        blocks = re.findall(r"^\$\$\n(.*?)\n\$\$$", text, flags=re.S | re.M)
        assert any(r"\partial_t" in block for block in blocks), f"{name}: no PDE in a $$ block"


def test_each_replica_page_shows_the_wells_published_numbers_and_links_its_page():
    """The published rows on a replica's page are the ones ``well-upao leaderboard`` prints (one source: the
    package's table, filled in by docs/hooks.py at build time); the copy written in the page for GitHub is current
    (``python docs/hooks.py`` rewrites it)."""
    for name in REPLICAS:
        text = (DOCS / "datasets" / f"{name}.md").read_text()
        assert f"https://polymathic-ai.org/the_well/datasets/{name}/" in text
        blocks = hooks.published_blocks(text)
        assert [dataset for dataset, _, _ in blocks] == [name]
        _, written, made = blocks[0]
        assert written == made, f"{name}: run `python docs/hooks.py`"


def test_the_published_block_is_made_from_the_package():
    """Negative control: a block with a number changed by hand is refilled from the package, and the check above
    sees the difference."""
    text = (DOCS / "datasets" / "shear_flow.md").read_text()
    edited = text.replace("| 1.189 |", "| 1.19 |", 1)
    assert edited != text
    ((_, written, made),) = hooks.published_blocks(edited)
    assert written != made and "| 1.189 |" in made
    assert hooks.fill_published(edited) == text


def rendered_elsewhere(markdown: str) -> bool:
    """Whether a page holds what GitHub cannot render: a ``:::`` docstring or a ``--8<--`` include."""
    return bool(re.search(r"^(:::|--8<--) ", markdown, flags=re.M))


def test_pages_github_cannot_render_say_so_in_their_first_lines():
    """A page with an include or a docstring block opens (after its title) with a note for readers on GitHub, which
    the site drops (docs/hooks.py)."""
    pages = [p for p in readings.documentation_pages(ROOT) if rendered_elsewhere(p.read_text())]
    assert len(pages) >= 19
    for page in pages:
        lines = page.read_text().splitlines()
        assert lines[0].startswith("# ") and lines[2] == hooks.GITHUB_NOTE, page.relative_to(ROOT)
        assert lines[3].startswith("> ") and "GitHub" in lines[3], page.relative_to(ROOT)
        assert hooks.GITHUB_NOTE not in hooks.drop_github_notes(page.read_text())
        assert "GitHub" not in hooks.drop_github_notes("\n".join(lines[:6]))


@needs_mkdocs
def test_the_site_drops_the_notes_for_github(site):
    text = (site / "datasets" / "wave2d" / "index.html").read_text()
    assert "On GitHub" not in prose_of(text) and "datasets_exact.wave2d" in text


# Issue 74: the home page as the Well's, short paragraphs, no internal issue numbers ------------------------------

#: the rendered home page's words at most (the Well's home page renders about 860)
MAX_HOME_WORDS = 900
#: words of one paragraph (or list item) of a hand-written page at most
MAX_PARAGRAPH_WORDS = 150


def article_words(html_text: str) -> int:
    """Words of a built page's article (its text, code and tables included: what a reader scrolls through)."""
    article = re.search(r"<article[^>]*>(.*?)</article>", html_text, flags=re.S).group(1)
    return len(html.unescape(re.sub(r"<[^>]+>", " ", article)).split())


@needs_mkdocs
def test_the_home_page_renders_at_most_900_words_in_the_wells_order(site):
    """What it is, install and quickstart first, the path, then the results (the table on its own page, linked)."""
    page = (site / "index.html").read_text()
    assert article_words(page) <= MAX_HOME_WORDS, article_words(page)
    headings = re.findall(r"^## (.+)$", (DOCS / "index.md").read_text(), flags=re.M)
    assert headings[:3] == ["Install and quickstart", "The path", "Results"], headings
    assert article_words("<article>" + "word " * (MAX_HOME_WORDS + 1) + "</article>") > MAX_HOME_WORDS


def test_the_home_page_defines_its_terms_and_typesets_the_loss():
    """extrap2, stride and 6:12 defined where they first appear; the UPAO loss as a formula; python3.11 (3.12 is
    refused) and NATTEN optional on the CPU."""
    text = (DOCS / "index.md").read_text()
    for term, definition in (("extrap2", "quadratic"), ("stride", "stored frames"), ("6:12", "predicted steps")):
        first = text.index(term)
        assert definition in text[first : first + 400], f"{term} is not defined where it first appears"
    assert re.search(r"\$\$\n.*\\lambda_\{\\mathrm\{BC\}\}.*R_k.*\n\$\$", text, flags=re.S)
    assert "python3.11 -m venv" in text and "3.12" in text and re.search(r"NATTEN[^.]*optional on the CPU", text)


def paragraphs(markdown: str) -> list[str]:
    """A page's paragraphs and list items, without code, tables, headings, comments and includes."""
    text = re.sub(r"<!--.*?-->", "", markdown, flags=re.S)
    text = re.sub(r"^(```|~~~).*?^\1[ \t]*$", "", text, flags=re.S | re.M)
    found: list[list[str]] = []
    current: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        item = re.match(r"^([-*+]|\d+\.)\s", stripped)
        if not stripped or item or stripped.startswith(("#", "|", "--8<--", ":::", "$$")):
            if current:
                found.append(current)
            current = [stripped] if item else []
            continue
        current.append(stripped)
    if current:
        found.append(current)
    return [" ".join(lines) for lines in found]


def paragraph_words(paragraph: str) -> int:
    return len(re.sub(r"\]\([^)]*\)", "]", paragraph).split())


def long_paragraphs(markdown: str) -> list[tuple[int, str]]:
    return [(n, p[:60]) for p in paragraphs(markdown) if (n := paragraph_words(p)) > MAX_PARAGRAPH_WORDS]


def test_no_paragraph_of_a_hand_written_page_is_over_150_words():
    found = {str(p.relative_to(ROOT)): long_paragraphs(p.read_text()) for p in guide_pages()}
    found = {page: items for page, items in found.items() if items}
    assert not found, f"paragraphs over {MAX_PARAGRAPH_WORDS} words: {found}"


def test_the_paragraph_check_sees_a_long_paragraph_and_not_code():
    """Negative control: 151 words in a paragraph or a list item are found; in code, a table or a comment not."""
    words = " ".join(["word"] * 151)
    assert [n for n, _ in long_paragraphs(f"Intro.\n\n{words}\n")] == [151]
    assert [n for n, _ in long_paragraphs(f"- short\n- {words}\n")] == [152]
    hidden = f"```bash\n{words}\n```\n\n| {words} |\n\n<!-- {words} -->\n\n[{'a ' * 20}](x)\n"
    assert long_paragraphs(hidden) == []


#: this project's issue or pull-request numbers, as a page would cite them (another project's, linked, are facts)
INTERNAL_ISSUE = re.compile(r"\b(?:[Ii]ssues?|PRs?|[Pp]ull requests?)\s*#?\d+")


def internal_issue_numbers(markdown: str) -> list[str]:
    """Issue numbers a reader sees that are not links to another project's issue or pull request."""
    text = re.sub(r"<!--.*?-->", "", markdown, flags=re.S)
    text = re.sub(r"\[[^\]]*\]\(https://github\.com/(?!well-upao)[^)]*/(?:issues|pull)/\d+\)", "", text)
    return INTERNAL_ISSUE.findall(text)


def test_no_page_names_an_internal_issue_number():
    found = {str(p.relative_to(ROOT)): internal_issue_numbers(p.read_text()) for p in [README, *guide_pages()]}
    found = {page: numbers for page, numbers in found.items() if numbers}
    assert not found, found


def test_the_issue_number_check_sees_one():
    """Negative control: ours in prose is found; the Well's, linked, and a comment are not."""
    assert internal_issue_numbers("Fixed (issue 53) and PR #12.") == ["issue 53", "PR #12"]
    linked = "[the Well's issue 49](https://github.com/PolymathicAI/the_well/issues/49) <!-- issue 73 -->"
    assert internal_issue_numbers(linked) == []
