"""The student edition: the book with solutions hidden, and notebooks without solutions.

* HTML: the whole book built by jupyter-book with sphinx-exercise's ``hide_solutions: true``, into
  ``_build/student/html`` (the committed sources are untouched: an overriding config is written
  to ``_build/student/_config.yml`` and passed with ``--config``).
* Notebooks: every chapter notebook with each solution removed (fenced ones and gated ones, with
  the code cells they hold) and replaced by a stub code cell, written to
  ``_build/student/notebooks/<slug>.ipynb``.
"""

from __future__ import annotations

import ast
import copy
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import yaml

from .exercises import ROOT, chapter_notebooks, directives, read
from .leaks import ANSWERS_TAG
from .markdown import glue_values, plain_notebook

STUDENT = ROOT / "_build" / "student"


def stub_cell(label: str) -> nbformat.NotebookNode:
    """The code cell a student fills in for exercise ``label``."""
    from llmmath.check import exercise_ids

    lines = [f"# Exercise {label}: your solution here."]
    if label in exercise_ids():
        lines += [
            "# Check your answer (describe() says what to compute):",
            f'#   from llmmath.check import check, describe; print(describe("{label}"))',
        ]
    cell = nbformat.v4.new_code_cell("\n".join(lines) + "\n...")
    cell.metadata["tags"] = ["student-stub"]
    return cell


def _md(source: str, like: nbformat.NotebookNode) -> nbformat.NotebookNode | None:
    if not source.strip():
        return None
    cell = nbformat.v4.new_markdown_cell(source.strip("\n"))
    cell.metadata = copy.deepcopy(like.metadata)
    cell.pop("id", None)
    return cell


def student_notebook(nb: nbformat.NotebookNode, stubs: bool = True, keep_glue: bool = False,
                     plain: bool | None = None, chapter: str | None = None) -> nbformat.NotebookNode:
    """A copy of ``nb`` with every solution removed and a stub code cell after each exercise.

    With ``plain`` (the default for the notebooks, i.e. with ``stubs``), MyST markup is rendered as
    plain Markdown (:func:`coursework.markdown.plain_notebook`: author-year citations, plain-text
    cross-references, exercise headings, glued values), since Jupyter shows MyST as raw text;
    ``chapter`` (the notebook's slug) numbers the cross-references as the book does.

    The cells between a gated ``solution-start`` and ``solution-end`` go, and so does a fenced
    solution block; markdown around a solution stays, split into cells so that each stub follows
    its exercise (no stub with ``stubs=False``: the HTML edition).

    Code cells tagged ``answers`` (:data:`coursework.leaks.ANSWERS_TAG`: they compute the numbers
    the solutions quote) go too, and so does every glue record (a ``glue(...)`` output, invisible to
    a reader) whose key the remaining text does not quote: those values serve only the solutions.
    A later cell that uses a name only an ``answers`` cell defines is an error (the student's
    notebook would fail there).

    With ``keep_glue`` (the HTML edition), a value that a removed cell glues and that the
    remaining text quotes is kept: a hidden cell (tag ``remove-cell``) at the end carries only that
    glue record, so the page still builds; no solution code, text or other output is kept.
    """
    pending = [d for d in directives(nb) if d.kind == "solution"]
    out = copy.deepcopy(nb)
    cells: list[nbformat.NotebookNode] = []
    removed: list[nbformat.NotebookNode] = []  # code cells of gated solutions
    i, pos = 0, 0  # next cell, and offset in it where the text still to copy starts
    while i < len(nb.cells):
        cell = nb.cells[i]
        if not pending or pending[0].cell != i:
            if pos == 0 and ANSWERS_TAG in cell.get("metadata", {}).get("tags", []):
                removed.append(cell)
            elif pos == 0:
                cells.append(copy.deepcopy(cell))
            elif (rest := _md(cell.source[pos:], cell)) is not None:
                cells.append(rest)
            i, pos = i + 1, 0
            continue
        sol = pending.pop(0)
        if (before := _md(cell.source[pos:sol.start], cell)) is not None:
            cells.append(before)
        if stubs:
            cells.append(stub_cell(sol.label))
        removed += [c for c in nb.cells[sol.cell + 1:sol.end_cell] if c.cell_type == "code"]
        i, pos = sol.end_cell, sol.end_offset
    _check_answers_cells(nb, cells)
    text = "\n".join(c.source for c in cells if c.cell_type == "markdown")

    def quoted(output: dict) -> bool:
        key = _glue_key(output)
        return bool(key) and quotes(text, key)

    for cell in cells:
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.get("outputs", []) if not _glue_key(o) or quoted(o)]
    if keep_glue:
        records = [o for c in removed for o in c.get("outputs", []) if quoted(o)]
        if records:
            cell = nbformat.v4.new_code_cell("")
            cell.outputs = copy.deepcopy(records)
            cell.metadata["tags"] = ["remove-cell"]
            cells.append(cell)
    out.cells = cells
    for j, cell in enumerate(out.cells):  # fresh, unique ids (nbformat >= 4.5)
        cell["id"] = f"cell-{j}"
    if stubs if plain is None else plain:
        plain_notebook(out, glue_values(nb), chapter)
    return out


def quotes(text: str, key: str) -> bool:
    """Whether ``text`` quotes the glue key ``key``: a glue role or directive names it
    (``{glue:text}`key:fmt` ``, ``{glue:md}`key` ``, ``{glue:figure} key``), not as a part of a
    longer key. The key spelled elsewhere, e.g. as the label of the exercise whose solution glues
    it (``:label: params-ex-gptj``), is no quotation."""
    return re.search(r"\{glue(?::\w*)?\}(?:`|[ \t]+)" + re.escape(key) + r"(?=[:`\s]|$)", text) is not None


def _check_answers_cells(nb: nbformat.NotebookNode, kept: list[nbformat.NotebookNode]) -> None:
    """Raise ``ValueError`` when a kept code cell uses a name that only an ``answers`` cell defines."""
    answers = [c for c in nb.cells if c.cell_type == "code" and ANSWERS_TAG in c.get("metadata", {}).get("tags", [])]
    if not answers:
        return
    only = set().union(*(_assigned(c.source) for c in answers))
    only -= set().union(*(_assigned(c.source) for c in kept if c.cell_type == "code"))
    for cell in kept:
        if cell.cell_type == "code" and (used := only & _used(cell.source)):
            raise ValueError(f"a cell tagged {ANSWERS_TAG!r} defines {sorted(used)}, which a later cell uses: "
                             f"the student edition drops that cell, so move the definition out of it "
                             f"(cell: {cell.source[:80]!r})")


def _assigned(source: str) -> set[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:  # IPython magics: no names we can read
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def _used(source: str) -> set[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _glue_key(output: dict) -> str | None:
    return output.get("metadata", {}).get("scrapbook", {}).get("name")


def write_student_notebooks(dest: Path = STUDENT / "notebooks", paths: list[Path] | None = None) -> list[Path]:
    """Write the student notebook of every chapter (or of ``paths``) to ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for path in paths or chapter_notebooks():
        target = dest / path.name
        nbformat.write(student_notebook(read(path), chapter=path.stem), target)
        written.append(target)
    return written


def student_config(root: Path = ROOT) -> dict:
    """The book's ``_config.yml`` with solutions hidden, and paths made absolute (it is read from elsewhere)."""
    config = yaml.safe_load((root / "_config.yml").read_text())
    sphinx = config.setdefault("sphinx", {})
    sphinx.setdefault("config", {})["hide_solutions"] = True
    sphinx["config"]["llmmath_lite"] = False  # no JupyterLite edition (with solutions) in it
    local = sphinx.get("local_extensions") or {}
    sphinx["local_extensions"] = {name: str((root / path).resolve()) for name, path in local.items()}
    config["title"] = str(config.get("title", "")) + " (student edition)"
    return config


_NOT_BOOK = ("_build", ".git", ".venv", ".cache", "lite", ".hypothesis", ".ruff_cache", ".pytest_cache", "__pycache__",
             "*.egg-info", ".helpers", "student", "assignments", "tests", "benchmarks", ".ipynb_checkpoints")


def build_html(out: Path = STUDENT, *, toc: dict | None = None, warnings_are_errors: bool = True,
               keep_sources: bool = False) -> Path:
    """Build the book with solutions hidden into ``out/html``; return the html directory.

    The sources are copied to ``out/src`` with every solution removed from the chapter notebooks
    (:func:`student_notebook`, no stubs), and built with sphinx-exercise's ``hide_solutions: true``
    as well. (Hiding alone is not enough: sphinx-exercise 1.2.1 crashes on gated solutions when it
    hides them.) ``toc`` replaces ``_toc.yml`` (the tests build a book of one or two chapters);
    ``keep_sources`` keeps ``out/src`` (the tests search its student notebooks of every chapter).
    """
    src = out / "src"
    shutil.rmtree(src, ignore_errors=True)
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(*_NOT_BOOK))
    for path in (ROOT / "chapters").glob("*.ipynb"):
        nbformat.write(student_notebook(read(path), stubs=False, keep_glue=True), src / "chapters" / path.name)
    (src / "_config.yml").write_text(yaml.safe_dump(student_config(src), sort_keys=False))
    if toc is not None:
        (src / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
    work = out / "jb"
    shutil.rmtree(work, ignore_errors=True)
    cmd = [str(Path(sys.executable).parent / "jupyter-book"), "build", str(src), "--path-output", str(work)]
    if warnings_are_errors:
        cmd += ["-W", "-n", "--keep-going"]
    result = subprocess.run(cmd, cwd=src)
    html = out / "html"
    shutil.rmtree(html, ignore_errors=True)
    if (work / "_build" / "html").exists():
        shutil.move(str(work / "_build" / "html"), html)
    shutil.rmtree(work, ignore_errors=True)
    if not keep_sources:
        shutil.rmtree(src, ignore_errors=True)
    if result.returncode:
        raise RuntimeError(f"the student edition's build failed or warned (exit status {result.returncode}); "
                           "`python3 dev.py book` shows the same warnings")
    return html
