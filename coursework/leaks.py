"""Answer leaks: does anything a student receives give away a checkable answer or its solution code?

:func:`scan` reads every file of a student edition or of the assignments (notebooks, HTML pages,
their ``_sources``, the search index) and reports each place where

* a number equals a checkable answer of that chapter (:mod:`llmmath.check`'s number parts, computed
  here) within the part's tolerance or to the digits it shows, in any common formatting: plain,
  thousands separators (``2,621,440``, ``2{,}621{,}440``, thin spaces), scientific (``2.62e6``,
  ``2.62 \\times 10^{6}``), a percentage (``12.5%`` for 0.125). Only numbers shown with at least
  three significant digits count (a ``4`` or a ``0.5`` is everywhere); an answer that never has
  three is "not searchable" (:func:`unsearchable`), and the exercise must not print it either;
* a line of reference solution code (``assignments/<slug>.py`` and the code of the chapter's worked
  solutions) appears, unless the chapter shows that line to every reader anyway (in its visible
  text or code outside the solutions).

A file belongs to the chapter whose slug is its name (``serving.ipynb``, ``serving.html``,
``_sources/chapters/serving.ipynb``) or that lists it as a sub-page in ``_toc.yml``
(``memory-reference.ipynb`` belongs to ``memory``); the search index is split by document. The student edition
(``python -m coursework student``) and the assignments (``python -m coursework assign``) refuse to
finish when it finds anything; ``tests/test_student_edition.py`` runs it on a fresh build.
"""

from __future__ import annotations

import functools
import html
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

from .exercises import ROOT, directives, read

#: the tag of a code cell that computes the numbers the solutions quote: the student notebooks, the
#: student HTML and the assignments drop it (the book and nbval keep it)
ANSWERS_TAG = "answers"
#: tags whose cell input no reader of the book sees
HIDDEN_INPUT_TAGS = frozenset({"remove-input", "remove-cell", ANSWERS_TAG})
MIN_SIGNIFICANT = 3
MIN_CODE = 25  # characters of a normalized code line that make it specific enough to search
FLOAT_NOISE = 1e-12  # relative rounding error below which a computed answer is the integer next to it


@dataclass(frozen=True)
class Answer:
    """The expected value of one number part of a checkable exercise."""

    chapter: str
    label: str
    part: str
    value: float
    rtol: float


@dataclass(frozen=True)
class Leak:
    """One place where a student file gives something away."""

    file: str
    chapter: str
    what: str  # "answer <label>.<part> = <value>" or "solution code <snippet>"
    excerpt: str  # the text around it

    def __str__(self) -> str:
        return f"{self.file}: {self.what}: ...{self.excerpt}..."


# ------------------------------------------------------------------------------------ the answers
@functools.cache
def answers(chapter: str) -> tuple[Answer, ...]:
    """Every number part of the chapter's checkable exercises, computed with llmmath."""
    from llmmath.check import EXERCISES

    found = []
    for ex in EXERCISES.values():
        if ex.chapter != chapter:
            continue
        for part in ex.parts:
            if part.kind == "number":
                found.append(Answer(chapter, ex.label, part.name, _snap(float(part.expected())), part.rtol))
    return tuple(found)


def _snap(value: float) -> float:
    """``value``, or the integer it is up to floating-point rounding (``1 / (1 - 0.98)`` is
    49.99999999999996: the answer is 50, and no part's tolerance, 0 for an exact integer and
    otherwise at least 1e-8 relative, tells the two apart)."""
    nearest = round(value)
    return float(nearest) if abs(value - nearest) <= FLOAT_NOISE * max(1.0, abs(value)) else value


def unsearchable(chapter: str) -> list[Answer]:
    """The answers that no number with three significant digits can show (small integers, 0.5 ...)."""
    return [a for a in answers(chapter) if not _searchable(a)]


def _searchable(a: Answer) -> bool:
    """False for an integer below 100 (``4``, ``64``): written everywhere, it cannot be searched."""
    return a.value != 0 and not (float(a.value).is_integer() and abs(a.value) < 10 ** (MIN_SIGNIFICANT - 1))


# ------------------------------------------------------------------------------------ the numbers
@dataclass(frozen=True)
class Number:
    text: str
    value: float
    half_unit: float  # half a unit of the last digit shown
    significant: int  # digits shown, leading zeros not counted
    start: int
    integer: bool  # written as an integer: no decimal point, exponent or percent sign


_NUMBER = re.compile(
    r"(?<![\w.])(?P<mant>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d*|\.\d+|\d+)"
    r"(?:[eE](?P<e>[-+]?\d+)"
    r"|[ \t]*(?:\\times|×|\\cdot|·|x|\*)[ \t]*10[ \t]*(?:\^|\*\*)[ \t]*\{?[ \t]*(?P<p>[-+]?\d+)[ \t]*\}?)?"
    r"(?P<pct>[ \t]*\\?%)?"
)


def _normalize_numbers(text: str) -> str:
    text = text.replace("{,}", ",").replace("\u2212", "-")
    return re.sub(r"(?<=\d)[\u2009\u202f\u00a0](?=\d{3}\b)", ",", text)


def numbers(text: str) -> Iterator[Number]:
    """Every number written in ``text``, with the precision it is shown to."""
    for m in _NUMBER.finditer(_normalize_numbers(text)):
        token = _token(m)
        if token is not None:
            yield token


def _token(m: re.Match) -> Number | None:
    # "128." is the integer 128 before a full stop (or NumPy's float 128.0), no rounding of 127.5
    mant = m.group("mant").replace(",", "").removesuffix(".") or "0"
    exp = int(m.group("e") or m.group("p") or 0)
    if abs(exp) > 300:
        return None
    decimals = len(mant.split(".")[1]) if "." in mant else 0
    digits = mant.replace(".", "").lstrip("0")
    scale = 10.0 ** exp / (100.0 if m.group("pct") else 1.0)
    try:
        value = float(mant) * scale
    except ValueError:
        return None
    integer = "." not in mant and scale == 1.0
    return Number(m.group(0), value, 0.5 * 10.0 ** -decimals * scale, len(digits), m.start(), integer)


def _matches(n: Number, a: Answer) -> bool:
    if n.significant < MIN_SIGNIFICANT or n.value == 0:
        return False
    if n.integer and not float(a.value).is_integer():
        return False  # "128" (a head width) is no rounding of 127.5 GB that anyone could tell
    v = abs(a.value)
    if abs(n.value - v) <= n.half_unit * (1 + 1e-9):
        return True  # the answer, rounded to the digits shown
    # shown more precisely than a rounding to three figures: any value within the part's tolerance
    return n.significant > MIN_SIGNIFICANT and abs(n.value - v) <= a.rtol * v * (1 + 1e-9)


def number_leaks(text: str, chapter: str, file: str) -> list[Leak]:
    """The numbers of ``text`` that show an answer of ``chapter``."""
    found, pending = [], [a for a in answers(chapter) if _searchable(a)]
    if not pending:
        return found
    norm = _normalize_numbers(text)
    for n in numbers(text):
        for a in pending:
            if _matches(n, a):
                excerpt = " ".join(norm[max(0, n.start - 60):n.start + len(n.text) + 40].split())
                found.append(Leak(file, chapter, f"answer {a.label}.{a.part} = {a.value:.6g} shown as {n.text!r}",
                                  excerpt))
    return found


# --------------------------------------------------------------------------------------- the code
def _norm_code(line: str) -> str:
    line = re.sub(r"#.*$", "", line)
    return re.sub(r"\s+", "", line.replace("llmmath.", ""))


def _reference_lines(chapter: str, root: Path) -> list[str]:
    from .assign import reference_solutions

    lines = []  # what otter removes from the student's cell: solution blocks, "# SOLUTION" values
    for code in reference_solutions(chapter, root).values():
        inside = False
        for line in code.splitlines():
            if re.match(r"\s*# BEGIN SOLUTION", line):
                inside = True
            elif re.match(r"\s*# END SOLUTION", line):
                inside = False
            elif inside:
                lines.append(line)
            elif line.rstrip().endswith("# SOLUTION"):
                lines.append(line.split("=", 1)[-1])
    return lines


@functools.cache
def solution_code(chapter: str, root: Path = ROOT) -> tuple[str, ...]:
    """Normalized lines of the chapter's reference and worked-solution code that no reader sees
    outside the solutions (whitespace, comments and ``llmmath.`` removed; at least ``MIN_CODE``
    characters)."""
    path = root / "chapters" / f"{chapter}.ipynb"
    nb = read(path) if path.exists() else None
    lines = _reference_lines(chapter, root)
    visible = ""
    if nb is not None:
        sols = [d for d in directives(nb) if d.kind == "solution"]
        lines += [line for d in sols for c in d.code for line in c.splitlines()]
        visible = _norm_code(_visible_text(nb, sols))
    snippets = {_norm_code(line) for line in lines}
    return tuple(sorted(s for s in snippets if len(s) >= MIN_CODE and s not in visible))


def _visible_text(nb, sols) -> str:
    """What every reader of the chapter sees outside its solutions: text, and code not hidden."""
    gated = {i for d in sols if d.gated for i in range(d.cell, d.end_cell + 1)}
    spans: dict[int, list[tuple[int, int]]] = {}
    for d in sols:
        if not d.gated:
            spans.setdefault(d.cell, []).append((d.start, d.end))
    parts = []
    for i, cell in enumerate(nb.cells):
        tags = set(cell.get("metadata", {}).get("tags", []))
        if i in gated or (cell.cell_type == "code" and tags & HIDDEN_INPUT_TAGS):
            continue
        text, pos = cell.source, 0
        for start, end in sorted(spans.get(i, [])):
            parts.append(text[pos:start])
            pos = end
        parts.append(text[pos:])
    return "\n".join(parts)


def code_leaks(text: str, chapter: str, file: str) -> list[Leak]:
    norm = _norm_code_text(text)
    return [Leak(file, chapter, f"solution code {s!r}", s) for s in solution_code(chapter) if s in norm]


def _norm_code_text(text: str) -> str:
    return re.sub(r"\s+", "", text.replace("llmmath.", ""))


# -------------------------------------------------------------------------------------- the files
def chapter_slugs(root: Path = ROOT) -> set[str]:
    from llmmath.check import EXERCISES

    return {ex.chapter for ex in EXERCISES.values()}


def _strings(node, skip=("image/", "application/papermill.record/image/")) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, list):
        for item in node:
            yield from _strings(item, skip)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key == "id" and "cell_type" in node:
                continue  # a cell's id: 8 random hex digits (nbformat's), which no reader sees
            if not (isinstance(key, str) and key.startswith(skip)):
                yield from _strings(value, skip)


def _html_text(raw: str) -> str:
    raw = re.sub(r"<(script|style)\b.*?</\1>", " ", raw, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", raw))


@functools.cache
def sub_pages(root: Path = ROOT) -> dict[str, str]:
    """The pages listed under a chapter's ``sections`` in ``_toc.yml`` (its reference page), each
    with the chapter it belongs to: ``{"memory-reference": "memory", ...}``. A student receives
    them with the chapter, so the scan reads them as part of it."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    found: dict[str, str] = {}

    def walk(node: object, chapter: str | None) -> None:
        if isinstance(node, dict):
            here = Path(node["file"]).stem if "file" in node else None
            if here is not None and chapter is not None:
                found[here] = chapter
            for key, value in node.items():
                if key in ("parts", "chapters"):
                    walk(value, None)
                elif key == "sections":
                    walk(value, chapter or here)
        elif isinstance(node, list):
            for item in node:
                walk(item, chapter)

    walk(toc, None)
    return found


def _chapter_of(path: Path, slugs: set[str]) -> str | None:
    name = path.name
    for suffix in (".txt", ".ipynb", ".html", ".md"):
        name = name.removesuffix(suffix)
    name = sub_pages().get(name, name)
    return name if name in slugs else None


def file_texts(path: Path, slugs: set[str]) -> Iterator[tuple[str, str]]:
    """``(chapter, text)`` pairs of one file: what a reader of it can see, by chapter."""
    if path.name == "searchindex.js":
        raw = path.read_text(encoding="utf-8")
        index = json.loads(raw[raw.index("(") + 1:raw.rindex(")")])
        docs = index.get("docnames", [])
        words: dict[int, list[str]] = {}
        for kind in ("terms", "titleterms"):
            for term, where in index.get(kind, {}).items():
                for doc in (where if isinstance(where, list) else [where]):
                    words.setdefault(doc, []).append(term)
        for doc, terms in words.items():
            chapter = _chapter_of(Path(docs[doc]), slugs) if doc < len(docs) else None
            if chapter:
                yield chapter, " ".join(terms)
        return
    chapter = _chapter_of(path, slugs)
    if chapter is None:
        return
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.name.endswith((".ipynb", ".ipynb.txt")):
        try:
            text = "\n".join(_strings(json.loads(text)))
        except json.JSONDecodeError:
            pass
    elif path.suffix == ".html":
        text = _html_text(text)
    yield chapter, text


def student_files(folders: Iterable[Path]) -> list[Path]:
    """The files of ``folders`` a student reads (not Sphinx's static assets or images)."""
    suffixes = {".ipynb", ".html", ".txt", ".md", ".js", ".py", ".json"}
    files = []
    for folder in folders:
        for path in sorted(Path(folder).rglob("*")):
            if path.is_file() and "_static" not in path.parts and path.suffix in suffixes:
                if path.suffix != ".js" or path.name == "searchindex.js":
                    files.append(path)
    return files


def scan(folders: Iterable[Path], chapters: Iterable[str] | None = None) -> list[Leak]:
    """Every leak in the files of ``folders`` (of the chapters ``chapters``, or of all)."""
    slugs = chapter_slugs()
    if chapters is not None:
        slugs &= set(chapters)
    leaks = []
    for path in student_files(folders):
        for chapter, text in file_texts(path, slugs):
            leaks += number_leaks(text, chapter, str(path))
            leaks += code_leaks(text, chapter, str(path))
    return leaks


def summary(leaks: list[Leak], limit: int = 40) -> str:
    lines = [str(leak) for leak in leaks[:limit]]
    if len(leaks) > limit:
        lines.append(f"... and {len(leaks) - limit} more")
    return "\n".join(lines)
