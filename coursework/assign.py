"""Otter-grader assignments built from the chapters' exercises.

For a chapter ``<slug>`` this writes an otter-assign master notebook (format v1) with one question
per exercise: the exercise text from the chapter, what to submit (from :mod:`llmmath.check`),
an answer cell, the chapter's worked solution as the (instructor-only) solution, and one autograder
test per checkable part that calls :func:`llmmath.check.check` (feedback: right/wrong, tolerance,
section to revisit; never the answer). Reference code for the answer cells comes from
``assignments/<slug>.py`` when it exists (otter's ``# SOLUTION`` markers). Exercises without a
checkable part become manually graded questions.

``otter assign`` then turns the master notebook into ``autograder/`` (the autograder zip for
``otter run`` or Gradescope, and the solutions notebook) and ``student/`` (the notebook to hand out).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import yaml

from .exercises import ROOT, chapter_notebooks, exercise_pairs, exercise_text, read
from .markdown import glue_values, notebook_context, render

ASSIGNMENTS = ROOT / "assignments"
OUT = ROOT / "_build" / "assignments"


def _raw(text: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_raw_cell(text)


def reference_solutions(slug: str, root: Path = ROOT) -> dict[str, str]:
    """Sections ``# %% <label>`` of ``assignments/<slug>.py``, by label (empty if there is no file)."""
    path = root / "assignments" / f"{slug}.py"
    if not path.exists():
        return {}
    parts = re.split(r"^# %% *(\S+)[ \t]*$", path.read_text(), flags=re.M)
    return {label: code.strip("\n") for label, code in zip(parts[1::2], parts[2::2], strict=True)}


def question_name(label: str) -> str:
    """Otter question name for an exercise label: ``matmul-cost-ex-mlp`` -> ``matmul_cost_ex_mlp``."""
    return re.sub(r"\W", "_", label)


def _test_cell(label: str, part: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_code_cell(
        f"def test_{part}({part}):\n"
        f"    from llmmath.check import check\n"
        f"    feedback = check({label!r}, {part}, part={part!r})\n"
        f"    assert feedback.correct, feedback.message\n"
    )


def master_notebook(chapter: Path) -> nbformat.NotebookNode:
    """The otter-assign master notebook of one chapter notebook."""
    from llmmath.check import EXERCISES

    slug = chapter.stem
    nb = read(chapter)
    solutions = reference_solutions(slug)
    # MyST (citations, cross-references, glued numbers) as plain Markdown: Jupyter shows MyST raw
    context = notebook_context([c.source for c in nb.cells if c.cell_type == "markdown"], glue_values(nb))
    title = next((line[2:].strip() for c in nb.cells if c.cell_type == "markdown"
                  for line in c.source.splitlines() if line.startswith("# ")), slug)
    config = {
        "name": slug,
        "init_cell": True,
        "check_all_cell": False,
        "export_cell": False,
        "run_tests": False,
        "generate": {"pdf": False, "filtering": False},
        "tests": {"files": False, "ok_format": False},
    }
    cells = [
        _raw("# ASSIGNMENT CONFIG\n" + yaml.safe_dump(config, sort_keys=False)),
        nbformat.v4.new_markdown_cell(
            f"# Assignment: {title}\n\n"
            f"The exercises of the chapter *{title}* (`{slug}`). Fill in each answer cell; where a "
            "cell names variables (`name = ...`), assign them. Run `grader.check(\"<question>\")` "
            "after a question: it says which parts are right, the tolerance used and the section of "
            "the chapter to revisit, never the expected value. Exercises without autograded parts "
            "are graded by hand: answer them in the cells provided."
        ),
        nbformat.v4.new_code_cell("import numpy as np\n\nimport llmmath"),
    ]
    for exercise, solution in exercise_pairs(nb):
        label = exercise.label
        spec = EXERCISES.get(label)
        parts = spec.parts if spec else ()
        header = {"name": question_name(label)}
        if parts:
            header["points"] = len(parts)
        else:
            header.update(manual=True, points=1)
        cells.append(_raw("# BEGIN QUESTION\n" + yaml.safe_dump(header, sort_keys=False)))
        prompt = f"**Exercise `{label}`**\n\n{render(exercise_text(exercise), context)}"
        if spec:
            prompt += f"\n\n**Submit** ({spec.task}):\n\n" + "\n".join(
                f"- `{p.name}`: {'a function' if p.kind == 'function' else p.prompt}"
                + (f": {p.prompt}" if p.kind == "function" else "") for p in parts)
        cells.append(nbformat.v4.new_markdown_cell(prompt))
        cells.append(_raw("# BEGIN SOLUTION"))
        if parts:
            code = solutions.get(label) or "\n".join(f"{p.name} = ...  # SOLUTION" for p in parts)
            cells.append(nbformat.v4.new_code_cell(code))
        if solution is not None:
            cells.append(nbformat.v4.new_markdown_cell(
                "**Worked solution (from the chapter).**\n\n" + render(solution.text.strip(), context)))
            if solution.gated:  # its code cells, as text: a code cell here would become an answer cell
                cells.append(nbformat.v4.new_markdown_cell(
                    "**Code of the worked solution.**\n\n"
                    + "\n\n".join(f"```python\n{c.strip()}\n```" for c in solution.code)))
        elif not parts:
            cells.append(nbformat.v4.new_markdown_cell("(No worked solution in the chapter.)"))
        cells.append(_raw("# END SOLUTION"))
        if parts:
            cells.append(_raw("# BEGIN TESTS"))
            cells += [_test_cell(label, p.name) for p in parts]
            cells.append(_raw("# END TESTS"))
        cells.append(_raw("# END QUESTION"))
    master = nbformat.v4.new_notebook(cells=cells)
    master.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    master.metadata["language_info"] = {"name": "python"}
    return master


def otter(*args: str | Path, cwd: Path = ROOT) -> None:
    """Run the otter command line of this environment."""
    subprocess.run([sys.executable, "-m", "otter", *map(str, args)], check=True, cwd=cwd)


def build_assignment(chapter: Path, out: Path = OUT) -> Path:
    """Write ``out/<slug>/<slug>.ipynb`` (master) and run ``otter assign`` into ``out/<slug>/dist``."""
    import shutil

    slug = chapter.stem
    folder = out / slug
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    master = folder / f"{slug}.ipynb"
    nbformat.write(master_notebook(chapter), master)
    otter("assign", "--no-pdfs", master, folder / "dist")
    return folder / "dist"


def build_all(out: Path = OUT, slugs: list[str] | None = None) -> list[Path]:
    """Build the assignment of every chapter with exercises (or of the chapters ``slugs``)."""
    chapters = [c for c in chapter_notebooks() if slugs is None or c.stem in slugs]
    if slugs is not None and len(chapters) < len(slugs):
        chapters += [ROOT / "chapters" / f"{s}.ipynb" for s in slugs if s not in {c.stem for c in chapters}]
    return [build_assignment(c, out) for c in chapters if exercise_pairs(read(c))]
