"""Build hooks of the documentation site (``hooks:`` in mkdocs.yml), for pages that read on GitHub too.

* **A note for GitHub's readers.** A blockquote after the line ``<!-- github only -->`` says, where GitHub shows a
  page's markdown, what it cannot render there (``:::`` docstrings, ``--8<--`` includes) and where to read it; the
  site renders those, so it drops the note.
* **Links to the reports.** The pages link a report or its figure by its path in the repository
  (``../reports/trust.md`` from ``docs/``), which GitHub follows; the site serves ``reports/`` through the link
  ``docs/reports``, so the build takes one ``../`` off.
* **The Well's published numbers** on a dataset's page: the block between ``<!-- published: NAME -->`` and
  ``<!-- published: end -->`` is made from `well_upao.evaluate.leaderboard.published_markdown`, the numbers
  ``well-upao leaderboard`` prints, when the site is built; the copy written in the page (what GitHub shows) is
  checked against it by ``tests/test_documentation.py`` and rewritten by ``python docs/hooks.py``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
GITHUB_NOTE = "<!-- github only -->"
PUBLISHED = re.compile(r"(<!-- published: (\w+) -->\n)(.*?)(<!-- published: end -->)", re.S)


def drop_github_notes(markdown: str) -> str:
    """The page without its notes for GitHub's readers: the marker line and the blockquote that follows it."""
    lines, kept, dropping = markdown.splitlines(keepends=True), [], False
    for line in lines:
        if line.strip() == GITHUB_NOTE:
            dropping = True
            continue
        if dropping and line.startswith(">"):
            continue
        if dropping and not line.strip():
            dropping = False
            continue
        dropping = False
        kept.append(line)
    return "".join(kept)


def published_blocks(markdown: str) -> list[tuple[str, str, str]]:
    """Each published-numbers block of a page: (dataset, the table written in the page, the table the package
    makes)."""
    from well_upao.evaluate.leaderboard import published_markdown

    return [(m.group(2), m.group(3).strip(), published_markdown(m.group(2))) for m in PUBLISHED.finditer(markdown)]


def fill_published(markdown: str) -> str:
    """The page with every published-numbers block made from the package."""
    from well_upao.evaluate.leaderboard import published_markdown

    return PUBLISHED.sub(lambda m: f"{m.group(1)}\n{published_markdown(m.group(2))}\n\n{m.group(4)}", markdown)


def site_report_links(markdown: str, depth: int) -> str:
    """The page's links into the repository's ``reports/`` pointed at the site's ``docs/reports`` (a page ``depth``
    folders below ``docs/``)."""
    return markdown.replace("](" + "../" * (depth + 1) + "reports/", "](" + "../" * depth + "reports/")


def on_page_markdown(markdown: str, page, **_) -> str:
    depth = page.file.src_uri.count("/")
    return fill_published(site_report_links(drop_github_notes(markdown), depth))


def main(docs: Path = DOCS) -> int:
    """Rewrite the published-numbers blocks of the pages under ``docs`` (prints the pages it changed)."""
    for page in sorted(docs.rglob("*.md")):
        if page.is_symlink() or "reports" in page.relative_to(docs).parts[:1]:
            continue
        text = page.read_text()
        filled = fill_published(text)
        if filled != text:
            page.write_text(filled)
            print(f"rewrote {page.relative_to(docs.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
