"""Readings checked against their tables, so that regenerating a report's tables cannot leave its prose stale.

A report in ``reports/`` is what a script in ``benchmarks/`` wrote (its tables and generated text) followed by a
hand-written reading: everything from the heading ``## Reading`` on. The scripts keep the reading when they
rewrite the tables (:func:`write_keeping_reading`), and every number the reading states is checked against the
numbers of the report outside the reading's prose (its tables and generated text, the tables inside the reading
included) and of any report a paragraph names (``reports/regimes.md``):

* a *cited* number, written with a decimal point or an exponent (``0.066``, ``8.6e-6``), must be within half a
  unit of its last digit of one of those numbers;
* a *derived* number, a ratio ``3.9x`` or a percentage ``41%`` (also each end of a range ``1.2-3.9x``), must follow
  from two numbers (integers included) written in the same sentence, within the rounding of all three: ``a / b``,
  and as a percentage ``100 a / b``, ``100 (a / b - 1)`` or ``100 (1 - a / b)``, in either order; or be a ratio or
  percentage of those tables (written there with its ``x`` or ``%``);
* integers (strides, counts, grid sizes, seeds), numbers inside `code`, numbers glued to letters (``2D``, ``1.9M``,
  ``64x128``) and version numbers are not checked;
* a number that does not come from a table (the paper's text, a log line, a measurement made by hand) is declared
  in the reading with its source, in a comment that the rendered page does not show::

      <!-- not from a table: 182 (the paper's appendix, "Total parameters"), 7.6 (the run's wall clock) -->

A report names no absolute path of the machine that made it (``/work/...``, ``/tmp/...``, ``/root/...``, a home
folder): the scripts write paths inside the repository relative to it and any other as ``RUNS/...``
(:func:`portable_paths`, applied by :func:`write_keeping_reading`), and the check fails on one that is left.

``README.md`` and the documentation's pages (``docs/``) are checked the same way, paragraph by paragraph, against the
reports a paragraph names (:func:`check_readme_text`).

``python benchmarks/harness/readings.py [REPORT ...]`` prints every number that fails (all of ``reports/``, the README
and ``docs/`` by default) and exits 1 if there is one; ``tests/test_readings.py`` runs the same check on the committed
reports, the README and the documentation pages, with planted wrong numbers as negative controls.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

READING_HEADING = "## Reading"
#: put at the top of a reading whose numbers no longer match the tables (by :func:`write_keeping_reading`)
STALE_MARK = "> **Stale reading:**"
NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)")
EXEMPT = re.compile(r"<!--\s*not from a table:(.*?)-->", re.S)
REPORT_PATH = re.compile(r"((?:[\w.-]+/)*[\w.-]+\.md)\b")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z*(`\"'])")
#: an absolute path of the machine that made a report: its run folders, checkpoints, scratch and home folders
#: (``/tmp/site`` is exempt: the lent GPU machine's install target, an instruction in reports/gpu.md)
MACHINE_PATH = re.compile(r"(?<![\w.~/-])/(?!tmp/site\b)(?:work|tmp|root|home|mnt|scratch|Users|var)/[^\s`'\"|),;]*")
REPOSITORY = Path(__file__).resolve().parents[2]
#: the first line (a blockquote under the title) of a report whose UPAO rows predate the current selection (the
#: label-free guard, the same-batches selection): which commit made it and what changed since. It is hand-written in
#: the generated part, so a regeneration (a rerun under the current selection) drops it.
OLDER_MARK = "> **Older than the current UPAO selection:**"
#: what a README paragraph citing such a report must say of it
OLDER_SAID = re.compile(r"before the (?:label-free )?guard|predates? the (?:label-free )?guard")
#: the markers around the README's generated "What you get" table (``benchmarks/studies/what_you_get.py``)
WHAT_YOU_GET = ("<!-- what_you_get: begin -->", "<!-- what_you_get: end -->")


@dataclass(frozen=True)
class Number:
    """A number as written: its value, half a unit of its last digit, and its kind: ``cited`` (a value), ``ratio``
    (``3.9x``) or ``percent`` (``41%``)."""

    text: str
    value: float
    half_unit: float
    kind: str

    def interval(self) -> tuple[float, float]:
        return self.value - self.half_unit, self.value + self.half_unit

    def __str__(self) -> str:
        return self.text + {"cited": "", "ratio": "x", "percent": "%"}[self.kind]


@dataclass(frozen=True)
class Failure:
    report: str
    number: str
    reason: str
    context: str

    def __str__(self) -> str:
        return f"{self.report}: {self.number} {self.reason} (in: {self.context})"


def portable_paths(text: str, repository: Path = REPOSITORY) -> str:
    """``text`` with the machine's absolute paths replaced: those inside ``repository`` relative to it, any other
    as ``RUNS/`` followed by the path without its top folder (``/work/runs/s3/x`` -> ``RUNS/runs/s3/x``)."""
    for root in {str(repository), str(repository.resolve())}:
        text = re.sub(re.escape(root) + "/", "", text)
        text = re.sub(re.escape(root) + r"(?=[\s`'\"|),;]|$)", ".", text)
    return MACHINE_PATH.sub(lambda m: "RUNS/" + m.group(0).split("/", 2)[2], text)


def machine_paths(text: str) -> list[str]:
    """The absolute paths of the machine that made a report which ``text`` still names."""
    return MACHINE_PATH.findall(text)


def half_unit(text: str) -> float:
    """Half a unit of the last written digit: ``0.066`` -> 5e-4, ``8.6e-6`` -> 5e-8, ``12`` -> 0.5."""
    mantissa, _, exponent = text.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 0.5 * 10.0 ** (int(exponent or 0) - decimals)


def _suffix_kind(suffix: str) -> str | None:
    if re.match(r"\s?%", suffix):
        return "percent"
    if re.match(r"x(?![A-Za-z0-9])", suffix):
        return "ratio"
    return None


def numbers_in(text: str, mode: str = "stated") -> list[Number]:
    """The numbers of ``text`` (code spans removed), by ``mode``: ``stated``, those a reading is checked on (no bare
    integers, nothing glued to a letter other than a ratio's ``x``, no version numbers); ``inputs``, the cited ones a
    ratio may be computed from (bare integers included, exact); ``all``, every number (a source)."""
    text = re.sub(r"`[^`\n]*`", " ", text)  # inline code only: a fence line leaves a lone backtick
    found = []
    for match in NUMBER.finditer(text):
        token, after = match.group(1), text[match.end() : match.end() + 20]
        if after[:1] == "." and after[1:2].isdigit():  # a version number such as 0.21.7
            continue
        kind = _suffix_kind(after)
        if kind is None:  # the first end of a range whose second end is a ratio or percentage: 1.2-3.9x, 6-12%
            rest = re.match(r"(?:-|\u2013| to )\d+(?:\.\d+)?(.*)", after, re.S)
            kind = _suffix_kind(rest.group(1)) if rest else None
        kind = kind or "cited"
        integer = re.fullmatch(r"\d+", token) is not None
        glued = kind == "cited" and (after[:1].isalpha() or after[:1] == "^")
        if mode == "stated" and (glued or (kind == "cited" and integer)):
            continue
        if mode == "inputs" and (glued or kind != "cited"):
            continue
        exact = mode == "inputs" and integer  # a count: 2 trajectories of 20
        found.append(Number(token, float(token), 0.0 if exact else half_unit(token), kind))
    return found


def split_reading(text: str) -> tuple[str, str]:
    """(the generated part, the reading from ``## Reading`` on; empty when the report has none)."""
    if READING_HEADING not in text:
        return text, ""
    head, tail = text.split(READING_HEADING, 1)
    return head, READING_HEADING + tail


def paragraphs(reading: str) -> tuple[list[str], list[str], set[str]]:
    """The reading's prose paragraphs (bullets are paragraphs, lines joined), its tables and fenced blocks (pasted
    output: sources, not prose), and the numbers its comments declare as not from a table."""
    exempt = {n.text for block in EXEMPT.findall(reading) for n in numbers_in(block, "all")}
    reading = EXEMPT.sub("", reading)
    prose, sources, current, fenced = [], [], [], False
    for line in reading.splitlines():
        stripped = line.strip()
        starts_item = bool(re.match(r"([-*]|\d+\.) ", stripped))
        if stripped.startswith("```"):
            fenced = not fenced
        if fenced or stripped.startswith("```"):
            sources.append(stripped)
            continue
        if not stripped or stripped.startswith(("|", "#", "![", ">")) or starts_item:
            if current:
                prose.append(" ".join(current))
            current = []
            if stripped.startswith("|"):
                sources.append(stripped)
            if starts_item:
                current = [stripped]
            continue
        current.append(stripped)
    if current:
        prose.append(" ".join(current))
    return prose, sources, exempt


def source_values(report: Path, text: str) -> list[Number]:
    """Every number of the report outside its reading's prose: the generated part and the reading's tables and
    fenced blocks."""
    head, reading = split_reading(text)
    _, sources, _ = paragraphs(reading)
    return numbers_in(head + "\n" + "\n".join(sources), "all")


def _named_reports(paragraph: str, report: Path, root: Path) -> list[Path]:
    named = []
    for name in REPORT_PATH.findall(paragraph):
        for candidate in (root / name, report.parent / name):
            if candidate.is_file() and candidate.resolve() != report.resolve():
                named.append(candidate)
                break
    return named


def _cited(number: Number, values: list[Number]) -> bool:
    """Whether a source value rounds to ``number``: any source for a cited number, a ratio or percentage of a
    table for a ratio or percentage."""
    low, high = number.interval()
    slack = 1e-9 * max(abs(number.value), 1e-300)
    kinds = {number.kind} if number.kind != "cited" else {"cited", "ratio", "percent"}
    return any(v.kind in kinds and low - slack <= abs(v.value) <= high + slack for v in values)


def _derivable(number: Number, inputs: list[Number]) -> bool:
    """Whether ``number`` (a ratio, or a percentage) follows from two of ``inputs`` within their rounding."""
    low, high = number.interval()
    for a in inputs:
        for b in inputs:
            if a is b or b.interval()[0] <= 0:
                continue
            r_low, r_high = max(a.interval()[0], 0.0) / b.interval()[1], a.interval()[1] / b.interval()[0]
            candidates = [(r_low, r_high)]
            if number.kind == "percent":
                candidates = [(100 * r_low, 100 * r_high), (100 * (r_low - 1), 100 * (r_high - 1))]
                candidates.append((100 * (1 - r_high), 100 * (1 - r_low)))
            if any(c_low <= high and low <= c_high for c_low, c_high in candidates):
                return True
    return False


def check_text(report: Path, text: str, root: Path | None = None, paths: bool = True) -> list[Failure]:
    """Every number of the reading in ``text`` (the content of ``report``) that its tables do not back, and (with
    ``paths``) every absolute path of the machine that made it."""
    root = root or report.resolve().parent.parent
    failures = []
    if paths:
        for path in machine_paths(text):
            failures.append(Failure(report.name, path, "is an absolute path of the machine that made it", "RUNS/..."))
    _, reading = split_reading(text)
    if not reading:
        return failures
    own = source_values(report, text)
    prose, _, exempt = paragraphs(reading)
    if STALE_MARK in reading:
        failures.append(Failure(report.name, STALE_MARK, "is at the top of the reading", "a regeneration marked it"))
    for paragraph in prose:
        named = _named_reports(paragraph, report, root)
        values = own + [v for path in named for v in source_values(path, path.read_text())]
        failures += _check_paragraph(report.name, paragraph, values, exempt)
    return failures


def _check_paragraph(name: str, paragraph: str, values: list[Number], exempt: set[str]) -> list[Failure]:
    failures = []
    for sentence in SENTENCE_END.split(paragraph):
        stated = numbers_in(sentence)
        cited = numbers_in(sentence, "inputs")
        context = sentence if len(sentence) < 160 else sentence[:157] + "..."
        for number in stated:
            if number.text in exempt:
                continue
            if number.kind == "cited" and not _cited(number, values):
                failures.append(Failure(name, str(number), "is in no table", context))
            elif number.kind != "cited" and not (_derivable(number, cited) or _cited(number, values)):
                failures.append(Failure(name, str(number), "follows from no two numbers of its sentence", context))
    return failures


def check_readme_text(readme: Path, text: str, root: Path | None = None) -> list[Failure]:
    """The README's measured claims against the reports they cite: every prose paragraph (bullets are paragraphs)
    that names a report of ``reports/`` is checked as a reading is, against the tables and generated text of the
    reports it names (not against the README's own tables); a paragraph that names no report (configuration,
    usage) is not checked. A paragraph that names a report carrying :data:`OLDER_MARK` says that its numbers are from
    before the guard (:data:`OLDER_SAID`). The generated "What you get" block (:data:`WHAT_YOU_GET`) is left out:
    its test compares it with what ``benchmarks/studies/what_you_get.py`` makes from the reports."""
    root = root or readme.resolve().parent
    text = re.sub(re.escape(WHAT_YOU_GET[0]) + r".*?" + re.escape(WHAT_YOU_GET[1]), "", text, flags=re.S)
    prose, _, exempt = paragraphs(text)
    failures = []
    for paragraph in prose:
        named = [
            p for p in _named_reports(paragraph, readme, root) if p.resolve().parent == (root / "reports").resolve()
        ]
        if named:
            values = [v for path in named for v in source_values(path, path.read_text())]
            failures += _check_paragraph(readme.name, paragraph, values, exempt)
        for path in named:
            if OLDER_MARK in path.read_text() and not OLDER_SAID.search(paragraph):
                context = paragraph if len(paragraph) < 160 else paragraph[:157] + "..."
                failures.append(
                    Failure(
                        readme.name,
                        f"reports/{path.name}",
                        "predates the guard and the paragraph does not say so",
                        context,
                    )
                )
    return failures


def is_prose_page(path: Path) -> bool:
    """Whether ``path`` is checked paragraph by paragraph as the README is: ``README.md`` and the documentation's
    pages (``docs/**/*.md``), which quote the reports' numbers without tables of their own."""
    if path.name == "README.md":
        return True
    folders = path.resolve().parents
    return any(f.name == "docs" and (f.parent / "mkdocs.yml").is_file() for f in folders)


def documentation_pages(root: Path = REPOSITORY) -> list[Path]:
    """The documentation's markdown pages, ``docs/**/*.md`` (the linked ``docs/reports`` folder left out: those are
    the reports, checked as reports)."""
    docs = root / "docs"
    return sorted(p for p in docs.rglob("*.md") if not p.relative_to(docs).parts[0] == "reports")


def check_report(report: Path, root: Path | None = None) -> list[Failure]:
    """:func:`check_text` for a report, :func:`check_readme_text` for ``README.md`` and a documentation page (with
    the repository as the root its paragraphs name reports from)."""
    if is_prose_page(report):
        if root is None and report.name != "README.md":
            root = REPOSITORY
        return check_readme_text(report, report.read_text(), root)
    return check_text(report, report.read_text(), root)


def write_keeping_reading(report: Path, lines: list[str]) -> list[Failure]:
    """Write the generated ``lines`` to ``report``, keeping its hand-written reading (from ``## Reading`` on), and
    check the reading against the new tables. The tables are written either way (they may have cost hours); a
    reading that cites numbers they no longer hold gets :data:`STALE_MARK` and the failures listed at its top,
    and the failures are printed and returned (callers exit non-zero with :func:`exit_if_stale` once their last
    write is done)."""
    reading = ""
    if report.exists():
        _, reading = split_reading(report.read_text())
    reading = re.sub(r"\n\n" + re.escape(STALE_MARK) + r"[^\n]*(?:\n> [^\n]*)*", "", reading, count=1)  # earlier mark
    text = portable_paths("\n".join(lines) + "\n")
    failures = check_text(report, text + (f"\n{reading.rstrip()}\n" if reading else ""))
    if failures:
        mark = [f"{STALE_MARK} numbers this reading states that the tables above do not back; rewrite it."]
        mark += [f"> - {f.number} {f.reason}: {f.context}" for f in failures]
        reading = reading.replace(READING_HEADING, READING_HEADING + "\n\n" + "\n".join(mark), 1)
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(text + (f"\n{reading.rstrip()}\n" if reading else ""))
    print(f"wrote {report}")
    for failure in failures:
        print(f"stale reading: {failure}", file=sys.stderr)
    return failures


def exit_if_stale(report: Path) -> None:
    """Exit 1, naming them, if the reading of ``report`` states numbers its tables do not back."""
    failures = check_report(report)
    if failures:
        print(f"{report}: the reading states {len(failures)} numbers its tables do not back:", file=sys.stderr)
        for failure in failures:
            print(f"  {failure}", file=sys.stderr)
        raise SystemExit(1)


def main(argv: list[str] | None = None) -> int:
    paths = [Path(p) for p in (argv if argv is not None else sys.argv[1:])]
    paths = paths or [
        *sorted(REPOSITORY.joinpath("reports").glob("*.md")),
        REPOSITORY / "README.md",
        *documentation_pages(),
    ]
    failures = [failure for path in paths for failure in check_report(path)]
    for failure in failures:
        print(failure)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
