"""Exercises in every chapter, and a student edition without any solution (notebooks and HTML).

A "solution snippet" is a line of a solution (a run of plain words of its text, or a line of its
code) that occurs nowhere in the chapter outside solutions. None may survive in the student
notebooks or in the student HTML. The HTML is built once per session for a small book of (at most)
two chapters of the table of contents: one with fenced solutions and one with gated ones.
"""

from __future__ import annotations

import copy
import functools
import html
import json
import re
from pathlib import Path

import nbformat
import pytest

from coursework import leaks
from coursework.exercises import ROOT, chapter_notebooks, directives, exercise_pairs, exercise_text, read
from coursework.leaks import ANSWERS_TAG
from coursework.student import build_html, quotes, student_notebook
from llmmath.check import EXERCISES, exercise_ids

# the chapters proper: numbered parts of _toc.yml, and an unnumbered page with exercises (the primer)
CHAPTERS = list(dict.fromkeys(chapter_notebooks(numbered_only=True) + [
    p for p in chapter_notebooks() if exercise_pairs(read(p))]))
MIN_EXERCISES = 6


def _ids(paths):
    return [p.stem for p in paths]


def _words(text: str) -> list[str]:
    """Runs of >= 5 plain words (no markup, math or code inside): rendered verbatim in HTML."""
    runs = re.split(r"[$`{}\[\]()*_^|\\<>=/]+|\n", text)
    return [" ".join(r.split()) for r in runs if len(re.findall(r"[A-Za-z]{2,}", r)) >= 5]


def _code_lines(code: str) -> list[str]:
    return [" ".join(line.split()) for line in code.splitlines() if len(line.strip()) >= 25]


def _norm(text: str) -> str:
    return " ".join(text.split())


def md_outside_solutions(nb: nbformat.NotebookNode) -> str:
    """The markdown of ``nb`` without its solutions (what a student reads)."""
    return "\n".join(c.source for c in student_notebook(nb, stubs=False, plain=False).cells
                     if c.cell_type == "markdown")


def solution_snippets(nb: nbformat.NotebookNode) -> set[str]:
    """Snippets of the solutions of ``nb`` that occur nowhere else in the notebook."""
    sols = [d for d in directives(nb) if d.kind == "solution"]
    everything = _norm("\n".join(c.source for c in nb.cells))
    # a fenced solution's text holds its code; a gated one's code cells are apart from its text
    inside = _norm("\n".join([d.text for d in sols] + [c for d in sols if d.gated for c in d.code]))
    snippets = set()
    for d in sols:
        for snip in _words(d.text) + [line for c in d.code for line in _code_lines(c)]:
            if everything.count(snip) == inside.count(snip):
                snippets.add(snip)
    return snippets


@pytest.mark.parametrize("path", CHAPTERS, ids=_ids(CHAPTERS))
def test_chapter_has_six_exercises_each_followed_by_its_solution(path):
    nb = read(path)
    pairs = exercise_pairs(nb)
    assert len(pairs) >= MIN_EXERCISES, f"{path.name}: {len(pairs)} exercises, at least {MIN_EXERCISES} needed"
    missing = [ex.label for ex, sol in pairs if sol is None]
    assert not missing, f"{path.name}: exercises not followed by their solution: {missing}"
    # the parser saw every directive that is in the text
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert len(pairs) == len(re.findall(r"\{exercise(?:-start)?\}", text))
    assert len([d for d in directives(nb) if d.kind == "solution"]) == len(re.findall(r"\{solution(?:-start)?\}", text))


@functools.cache
def _student(path: Path) -> nbformat.NotebookNode:
    """The student notebook of a chapter, as `dev.py student` writes it (made once per session)."""
    return student_notebook(read(path), chapter=path.stem)


@pytest.mark.parametrize("path", CHAPTERS, ids=_ids(CHAPTERS))
def test_student_notebook_has_no_solution(path):
    nb = read(path)
    student = copy.deepcopy(_student(path))
    nbformat.validate(student)
    snippets = solution_snippets(nb)
    assert snippets, f"{path.name}: no solution snippet found, the test would prove nothing"
    text = _norm("\n".join(c.source for c in student.cells) + "\n" + nbformat.writes(student))
    leaked = sorted(s for s in snippets if s in text)
    assert not leaked, f"{path.name}: solution text in the student notebook: {leaked[:3]}"
    assert not re.search(r"\{solution(-start|-end)?\}", text)
    # MyST is rendered as plain Markdown: no role, directive or label is left as raw text
    md = "\n".join(c.source for c in student.cells if c.cell_type == "markdown")
    raw = re.findall(r"\{[\w:-]+\}`[^`]*`|^(?::{3,}|`{3,})\{[\w:-]+\}.*$|^\([\w.:-]+\)=[ \t]*$", md, re.M)
    assert not raw, f"{path.name}: MyST left as raw text in the student notebook: {raw[:3]}"
    # every exercise is still there, followed (after its text) by a stub code cell
    labels = [ex.label for ex, _ in exercise_pairs(nb)]
    stubs = [c for c in student.cells if "student-stub" in c.metadata.get("tags", [])]
    assert [re.search(r"Exercise (\S+):", c.source).group(1) for c in stubs] == labels
    for label in labels:  # the exercise is a plain Markdown heading naming its label
        heading = f"Exercise {labels.index(label) + 1} (`{label}`)"
        k = next(i for i, c in enumerate(student.cells) if heading in c.source)
        nxt = next(c for c in student.cells[k + 1:] if "student-stub" in c.metadata.get("tags", []))
        assert f"Exercise {label}:" in nxt.source
    # nothing but solutions and answers went: every code cell outside a gated solution and not
    # tagged "answers" survives with its outputs, less the glue records no remaining text quotes
    gated = {i for d in directives(nb) if d.gated for i in range(d.cell, d.end_cell + 1)}
    kept = [c for i, c in enumerate(nb.cells)
            if c.cell_type == "code" and i not in gated and ANSWERS_TAG not in c.metadata.get("tags", [])]
    student_code = [c for c in student.cells
                    if c.cell_type == "code" and "student-stub" not in c.metadata.get("tags", [])]
    assert [c.source for c in kept] == [c.source for c in student_code]
    remaining = md_outside_solutions(nb)
    for old, new in zip(kept, student_code, strict=True):
        assert all(o in old.outputs for o in new.outputs)
        dropped = [o for o in old.outputs if o not in new.outputs]
        assert all(o.get("metadata", {}).get("scrapbook") for o in dropped), "only glue records may go"
        assert not any(quotes(remaining, o["metadata"]["scrapbook"]["name"]) for o in dropped), "a quoted value went"


def _small_toc() -> tuple[dict, list[Path]]:
    fenced = next((p for p in CHAPTERS if any(not d.gated for d in directives(read(p)) if d.kind == "solution")), None)
    gated = next((p for p in CHAPTERS if any(d.gated for d in directives(read(p)))), None)
    chosen = list(dict.fromkeys(p for p in (fenced, gated) if p is not None))
    extra = [{"file": "chapters/bibliography"}] if (ROOT / "chapters" / "bibliography.md").exists() else []
    toc = {"format": "jb-book", "root": "chapters/preface",
           "chapters": [{"file": str(p.relative_to(ROOT).with_suffix(""))} for p in chosen] + extra}
    return toc, chosen


@pytest.fixture(scope="session")
def student_html(tmp_path_factory):
    toc, chosen = _small_toc()
    if not chosen:
        pytest.skip("no chapter with solutions in the table of contents")
    out = build_html(tmp_path_factory.mktemp("student"), toc=toc, warnings_are_errors=False, keep_sources=True)
    return out, chosen


def _html_text(path: Path) -> str:
    raw = path.read_text(encoding="utf-8")
    raw = re.sub(r"<(script|style)\b.*?</\1>", " ", raw, flags=re.S)
    return _norm(html.unescape(re.sub(r"<[^>]+>", "", raw)))


def test_student_html_has_no_solution(student_html):
    out, chosen = student_html
    for path in chosen:
        nb = read(path)
        page = out / path.relative_to(ROOT).with_suffix(".html")
        text = _html_text(page)
        leaked = sorted(s for s in solution_snippets(nb) if s in text)
        assert not leaked, f"{page.name}: solution text in the student HTML: {leaked[:3]}"
        # the exercises themselves are shown, and the snippet method does find rendered text
        shown = [w for ex, _ in exercise_pairs(nb) for w in _words(exercise_text(ex))]
        assert shown and sum(w in text for w in shown) >= len(shown) // 2, f"{page.name}: exercises not rendered"
        # every checkable exercise shows its check call (_ext/exercise_check.py), the others none
        labels = [ex.label for ex, _ in exercise_pairs(nb)]
        checkable = [label for label in labels if label in exercise_ids()]
        assert checkable, f"{page.name}: no checkable exercise, the test would prove nothing"
        for label in labels:
            assert (f'llmmath.check("{label}", answer)' in text) == (label in checkable), label


# --------------------------------------------------------------------------- MyST as plain Markdown
def _plain(text: str, glued: dict | None = None) -> str:
    from coursework.markdown import plain_markdown

    return plain_markdown(text, glued=glued)


def test_citations_are_author_year_from_the_bibliography():
    # expected strings written by hand from references.bib (Kaplan et al. 2020: ten authors;
    # Hoffmann et al. 2022)
    assert _plain("as shown {cite:p}`kaplan2020scaling`.") == "as shown (Kaplan et al., 2020)."
    assert _plain("{cite:t}`kaplan2020scaling` found") == "Kaplan et al. (2020) found"
    assert _plain("{cite:p}`kaplan2020scaling,hoffmann2022chinchilla`") == \
        "(Kaplan et al., 2020; Hoffmann et al., 2022)"


def test_cross_references_become_plain_text():
    text = ("(sec-a)=\n## Counting products\n\nSee {ref}`sec-a`, {ref}`this part <sec-a>` and "
            "{eq}`eq-b`:\n\n$$\nx = 1\n$$ (eq-a)\n\n$$\ny = 2\n$$ (eq-b)\n\n{doc}`the chapter <matmul-cost>`")
    out = _plain(text)
    assert "(sec-a)=" not in out and "## Counting products" in out
    assert "See Counting products, this part and (2):" in out
    assert "\\tag{1}" in out and "\\tag{2}" in out and "(eq-a)" not in out
    assert "the chapter" in out and "{doc}" not in out


def test_glue_roles_show_the_committed_value_with_its_format():
    glued = {"n-params": "175000000000", "ratio": "0.123456"}
    out = _plain("{glue:text}`n-params:,.0f` and {glue:text}`ratio:.2%` and {glue:}`missing`", glued)
    assert out == "175,000,000,000 and 12.35% and `missing`"


def test_checkable_exercises_say_how_to_check_in_the_notebooks():
    """The student and browser notebooks show the book's line under each checkable exercise."""
    text = ":::{exercise}\n:label: matmul-cost-ex-dp\nOrder the chain.\n:::\n"
    out = _plain(text)
    assert 'Order the chain.\n\nCheck your answer: `llmmath.check("matmul-cost-ex-dp", answer)` with `answer` a dict ' \
           "of the parts `dp_best`, `dp_left`, `dp_count`" in out
    assert "Check your answer" not in _plain(":::{exercise}\n:label: x-ex-one\nCount it.\n:::\n")
    nb = student_notebook(read(ROOT / "chapters" / "matmul-cost.ipynb"))
    md = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    for label in exercise_ids("matmul-cost"):
        assert f'`llmmath.check("{label}", answer)`' in md, label


def test_exercises_solutions_and_admonitions_become_markdown():
    text = (":::{exercise}\n:label: x-ex-one\nCount it.\n:::\n\n::::{solution} x-ex-one\n:class: dropdown\n"
            "It is 6.\n::::\n\n```{admonition} Careful\n:class: warning\nBig numbers.\n```\n")
    out = _plain(text)
    assert "#### Exercise 1 (`x-ex-one`)\n\nCount it." in out
    assert "<details>\n<summary>Solution</summary>\n\nIt is 6." in out
    assert "> **Careful.**" in out and "> Big numbers." in out
    assert ":label:" not in out and ":class:" not in out and "{" not in out


# --------------------------------------------------------------------------------- answer leaks
# Chapters whose exercises still print their answers in the chapter: their leaks are listed by this
# test (strict xfail); remove a chapter once it passes. Empty: no chapter may leak.
LEAKY: set[str] = set()
CHECKABLE = sorted({p.stem for p in chapter_notebooks()} & {EXERCISES[k].chapter for k in exercise_ids()})


@pytest.fixture(scope="session")
def student_edition(tmp_path_factory):
    """What students receive, built once: the student notebook of every chapter (the ones
    test_student_notebook_has_no_solution made) and every chapter's otter student notebook."""
    from coursework.assign import build_all

    out = tmp_path_factory.mktemp("edition")
    (out / "notebooks").mkdir()
    sub_pages = [p for p in chapter_notebooks() if p.stem in leaks.sub_pages()]  # reference pages
    for path in CHAPTERS + sub_pages:
        nbformat.write(_student(path), out / "notebooks" / path.name)
    build_all(out / "assignments", check=False)  # leaks and reference answers are checked here
    return out


def _leak_params():
    return [pytest.param(slug, marks=pytest.mark.xfail(strict=True, reason="its exercises print answers: issue 32"))
            if slug in LEAKY else slug for slug in CHECKABLE]


@pytest.mark.parametrize("slug", _leak_params())
def test_no_answer_leaks(student_edition, student_html, slug):
    """No file a student receives shows a checkable answer (within its tolerance, in any common
    formatting) or reference solution code: the student notebook of the chapter and of its
    sub-pages (its reference page), the HTML's sources and, for the chapters of the small HTML
    build, the pages, their ``_sources`` and the search index."""
    from coursework.leaks import scan, summary

    html_out, chosen = student_html
    folders = [student_edition / "notebooks", html_out.parent / "src" / "chapters",  # the HTML's sources
               student_edition / "assignments" / slug / "dist" / "student"]
    if any(p.stem == slug for p in chosen):
        folders.append(html_out)
    assert (student_edition / "assignments" / slug / "dist" / "student" / f"{slug}.ipynb").is_file()
    leaks = scan(folders, chapters=[slug])
    assert not leaks, f"{slug}: answers given away\n{summary(leaks)}"


def test_leak_scan_finds_answers_in_every_format():
    """The scan can fail: an answer written plainly, with thousands separators, in scientific or
    LaTeX notation, as a percentage or rounded to what a table shows is found; other numbers and
    roundings to other digits are not."""
    from coursework.leaks import answers, number_leaks

    by_part = {a.part: a for a in answers("parallelism")}
    exact = by_part["ar_bytes"].value  # an integer number of bytes
    assert float(exact).is_integer() and exact > 1e9
    for text in (f"{exact:.0f}", f"{exact:,.0f}", f"{exact:.4e}", f"{exact / 1e9:.3f}e9",
                 f"${exact / 1e9:.3f} \\times 10^{{9}}$", f"{exact:,.0f}".replace(",", "{,}")):
        assert number_leaks(f"it sends {text} bytes", "parallelism", "x"), text
    ratio = by_part["tp_ratio_nvlink"].value  # a ratio below 1
    for text in (f"{ratio:.3f}", f"{100 * ratio:.1f}%", f"{ratio:.17g}", f"{ratio:.4f}"):
        assert number_leaks(f"the ratio is {text}", "parallelism", "x"), text
    for text in (f"{exact * 1.02:,.0f}", f"{ratio * 1.2:.3f}", f"{exact / 1e9 * 1.03:.1f}e9", "1,024", "4", "0.5"):
        assert not number_leaks(f"unrelated: {text}", "parallelism", "x"), text


def test_leak_scan_reads_sub_pages_as_their_chapter(tmp_path):
    """A chapter's reference page (listed under its ``sections`` in ``_toc.yml``) is handed out with
    the chapter: an answer printed there is a leak of that chapter."""
    assert leaks.sub_pages()["memory-reference"] == "memory"
    assert "memory" not in leaks.sub_pages() and "memory-reference" not in leaks.chapter_slugs()
    answer = next(a for a in leaks.answers("memory") if a.value > 1000 and float(a.value).is_integer())
    (tmp_path / "memory-reference.md").write_text(f"a table row: {answer.value:,.0f} bytes\n")
    (tmp_path / "unrelated-reference.md").write_text(f"a table row: {answer.value:,.0f} bytes\n")
    found = leaks.scan([tmp_path], chapters=["memory"])
    assert [Path(leak.file).name for leak in found] == ["memory-reference.md"]


def test_leak_scan_tells_apart_what_it_can_and_only_that():
    """Two refinements of the number search, each shown to matter. "128." ends a sentence (or is
    NumPy's float 128.0): it is the integer 128, no rounding of 127.5, which "127.5" and "128.0"
    are. An answer that is an integer up to floating-point rounding (``1 / (1 - 0.98)``) is that
    integer: below 100 it is written everywhere and cannot be searched, like any such answer."""
    from coursework.leaks import Answer, _matches, numbers

    gb = Answer("x", "x-ex", "gb", 127.5, 5e-3)
    hits = {n.text for n in numbers("heads of width 128. Then 127.5 GB, or 128.0 GB, or 128 GB.")
            if _matches(n, gb)}
    assert hits == {"127.5", "128.0"}
    assert 1 / (1 - 0.98) != 50  # what the part computes
    horizon = {a.part: a for a in leaks.answers("optimizers")}["horizon_098"]
    assert horizon.value == 50 and horizon in leaks.unsearchable("optimizers")
    assert not leaks.number_leaks("a condition number of 50.0", "optimizers", "x")
    assert leaks._snap(50.000001) == 50.000001  # a real difference is kept


def test_leak_scan_skips_random_cell_ids(tmp_path):
    """nbformat gives each new cell 8 random hex digits as its id; now and then they are all decimal
    digits, and one landed within the tolerance of parallelism's 62,914,560 bytes ('63099348' in
    an otter student notebook). An id is no text a reader sees: the scan skips it, not the source."""
    answer = next(a for a in leaks.answers("parallelism") if a.part == "cp_sent_bytes")
    digits = f"{answer.value * 1.001:.0f}"
    cell = {"cell_type": "markdown", "id": digits, "metadata": {}, "source": "Compare the two."}
    nb = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "parallelism.ipynb").write_text(json.dumps(nb))
    assert not leaks.scan([tmp_path], chapters=["parallelism"])
    cell["source"] = f"It sends {digits} bytes."
    (tmp_path / "parallelism.ipynb").write_text(json.dumps(nb))
    assert leaks.scan([tmp_path], chapters=["parallelism"])


def test_a_glue_key_spelled_like_a_label_is_no_quotation():
    """The HTML edition keeps a value glued inside a solution only when the remaining text quotes
    it with a glue role; an exercise's label spelled like the key (``params-ex-gptj`` glued by its
    own solution) is no quotation, and the value does not reach the student's page sources."""
    assert quotes("is {glue:text}`x-ex-a:,d` and", "x-ex-a") and quotes("```{glue:figure} x-fig\n", "x-fig")
    assert quotes("{glue:md}`x-ex-a`", "x-ex-a") and not quotes("{glue:text}`x-ex-a-b`", "x-ex-a")
    assert not quotes(":::{exercise}\n:label: x-ex-a\nCount it.\n:::\n", "x-ex-a")

    def glued(key, value):
        cell = nbformat.v4.new_code_cell(f"glue({key!r}, {value}, display=False)")
        cell.outputs = [nbformat.v4.new_output(
            "display_data", data={"application/papermill.record/text/plain": str(value)},
            metadata={"scrapbook": {"name": key, "mime_prefix": "application/papermill.record/"}})]
        return cell

    md = nbformat.v4.new_markdown_cell
    nb = nbformat.v4.new_notebook(cells=[
        md(":::{exercise}\n:label: x-ex-a\nCount the parameters of {glue:text}`x-in`.\n:::\n"
           "```{solution-start} x-ex-a\n:class: dropdown\n```\n"),
        glued("x-ex-a", 6050882784), glued("x-in", 28),
        md("It has {glue:text}`x-ex-a:,d` parameters.\n```{solution-end}\n```\n")])
    out = nbformat.writes(student_notebook(nb, stubs=False, keep_glue=True))
    assert "6050882784" not in out and '"x-in"' in out  # the exercise's own datum stays


def test_answers_cell_is_dropped_and_would_leak(tmp_path):
    """A cell tagged ``answers`` (code a later cell needs, whose output shows an answer) is handed
    out without the tag, and the scan finds the answer it prints; with the tag the student notebook
    drops it, and nothing leaks. No chapter needs the tag today (each computes its answers inside
    its solutions), so the cell is planted in the capstone: the last answers cell the book had."""

    answer = next(a for a in leaks.answers("capstone") if leaks._searchable(a))
    nb = read(ROOT / "chapters" / "capstone.ipynb")
    planted = nbformat.v4.new_code_cell(f"answer = {answer.value!r}\nprint(answer)",
                                        metadata={"tags": [ANSWERS_TAG]})
    planted.outputs = [nbformat.v4.new_output("stream", name="stdout",
                                              text=f"{answer.value:,.6g}\n")]
    nb.cells.append(planted)
    for name in ("without", "with"):
        (tmp_path / name).mkdir()
    nbformat.write(student_notebook(nb, chapter="capstone"), tmp_path / "with" / "capstone.ipynb")
    assert not any(c.source == planted.source for c in student_notebook(nb, chapter="capstone").cells)
    planted.metadata["tags"] = []
    without = student_notebook(nb, chapter="capstone")
    assert any(c.source == planted.source for c in without.cells)  # handed out
    without.cells = list(nb.cells)  # and its output with it, as the book shows it
    nbformat.write(without, tmp_path / "without" / "capstone.ipynb")
    found = leaks.scan([tmp_path / "without"], chapters=["capstone"])
    assert any(leak.what.startswith(f"answer {answer.label}.{answer.part}") for leak in found)
    assert not leaks.scan([tmp_path / "with"], chapters=["capstone"])


def test_a_later_cell_may_not_need_an_answers_cell():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("secret = 42", metadata={"tags": [ANSWERS_TAG]}),
        nbformat.v4.new_code_cell("print(secret)")])
    with pytest.raises(ValueError, match="secret"):
        student_notebook(nb)
