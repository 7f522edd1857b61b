"""Otter-grader assignments built from the chapters' exercises.

For a chapter ``<slug>`` this writes an otter-assign master notebook (format v1) with one question
per exercise: the exercise text from the chapter, what to submit (from :mod:`llmmath.check`: each
part with its tolerance, and the accelerator figures to use), an answer cell, the chapter's worked
solution as the (instructor-only) solution, and one autograder test per checkable part that calls
:func:`llmmath.grading.check_part` (feedback: right/wrong, tolerance, section to revisit, or "your
answer cell raised ..."; never the answer). Reference code for the answer cells comes from
``assignments/<slug>.py`` (otter's ``# SOLUTION`` markers). Every question of an exercise that is
graded by hand (an exercise without a checkable part, and the ``written`` questions of a checkable
one) becomes a manual question with its own answer cell and points.

``otter assign`` then turns the master notebook into ``autograder/`` (the autograder zip for
``otter run`` or Gradescope, with a wheel of llmmath built from this tree that the zip's
environment installs, and the solutions notebook) and ``student/`` (the notebook to hand out).
Building an assignment fails when a reference answer is wrong (:func:`check_reference_answers`) or
when the student notebook gives an answer away (:mod:`coursework.leaks`).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import yaml

from .exercises import ROOT, chapter_notebooks, exercise_pairs, exercise_text, read
from .markdown import glue_values, notebook_context, render

ASSIGNMENTS = ROOT / "assignments"
OUT = ROOT / "_build" / "assignments"
#: where the autograder zip's environment finds the files shipped in the zip (Gradescope's layout)
AUTOGRADER_SOURCE = "/autograder/source"


def _raw(text: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_raw_cell(text)


def reference_solutions(slug: str, root: Path = ROOT) -> dict[str, str]:
    """Sections ``# %% <label>`` of ``assignments/<slug>.py``, by label (empty if there is no file)."""
    path = root / "assignments" / f"{slug}.py"
    if not path.exists():
        return {}
    parts = re.split(r"^# %% *(\S+)[ \t]*$", path.read_text(), flags=re.M)
    return {label: code.strip("\n") for label, code in zip(parts[1::2], parts[2::2], strict=True)}


def as_student_code(reference: str) -> str:
    """Reference code with otter's markers removed: what a student who solved it would write."""
    lines = [ln for ln in reference.splitlines() if not re.match(r"\s*# (BEGIN|END) SOLUTION", ln)]
    return "\n".join(re.sub(r"\s*# SOLUTION\s*$", "", ln) for ln in lines)


def question_name(label: str) -> str:
    """Otter question name for an exercise label: ``matmul-cost-ex-mlp`` -> ``matmul_cost_ex_mlp``."""
    return re.sub(r"\W", "_", label)


def written_name(label: str) -> str:
    """Otter question name of the hand-graded questions of a checkable exercise."""
    return question_name(label) + "_written"


def _test_cell(label: str, part) -> nbformat.NotebookNode:
    from llmmath.check import _tolerance_text

    form = "" if part.kind == "function" else f" ({_tolerance_text(part.rtol)})"
    config = yaml.safe_dump({"success_message": f"{part.name} is right{form}."}, width=1000).strip()
    return nbformat.v4.new_code_cell(
        f'""" # BEGIN TEST CONFIG\n{config}\n""" # END TEST CONFIG\n'
        f"def test_{part.name}(env):\n"
        f"    from llmmath.grading import check_part\n"
        f"    check_part({label!r}, {part.name!r}, env)\n"
    )


def _init_cell(slug: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_code_cell(
        "# Set up the autograder: grader.check(\"<question>\") checks your answers. It finds this\n"
        "# notebook (its tests are stored in it) even if you rename or copy the file.\n"
        "import otter\n"
        "from llmmath.grading import notebook_path\n\n"
        f"grader = otter.Notebook(notebook_path({slug!r}))"
    )


def _submit_list(spec) -> str:
    from llmmath.check import _tolerance_text, constants

    lines = [f"**Submit** ({spec.task.rstrip('.')}):", ""]
    if given := constants(spec.label):
        lines[0] += f" {given}"
    for p in spec.parts:
        if p.kind == "function":
            lines.append(f"- `{p.name}`: a function; {p.prompt}")
        else:
            lines.append(f"- `{p.name}`: {p.prompt} ({_tolerance_text(p.rtol)})")
    return "\n".join(lines)


def master_notebook(chapter: Path) -> nbformat.NotebookNode:
    """The otter-assign master notebook of one chapter notebook."""
    from llmmath.check import EXERCISES

    slug = chapter.stem
    nb = read(chapter)
    solutions = reference_solutions(slug)
    # MyST (citations, cross-references, glued numbers) as plain Markdown: Jupyter shows MyST raw
    context = notebook_context([c.source for c in nb.cells if c.cell_type == "markdown"], glue_values(nb),
                               chapter=slug)
    title = next((line[2:].strip() for c in nb.cells if c.cell_type == "markdown"
                  for line in c.source.splitlines() if line.startswith("# ")), slug)
    config = {
        "name": slug,
        "init_cell": False,  # ours (_init_cell) survives renaming the notebook
        "check_all_cell": False,
        "export_cell": False,
        "run_tests": False,
        "requirements": [f"{AUTOGRADER_SOURCE}/files/{{wheel}}"],
        "autograder_files": ["{wheel}"],
        "generate": {"pdf": False, "filtering": False},
        "tests": {"files": False, "ok_format": False},
    }
    cells = [
        _raw("# ASSIGNMENT CONFIG\n" + yaml.safe_dump(config, sort_keys=False)),
        _init_cell(slug),
        nbformat.v4.new_markdown_cell(
            f"# Assignment: {title}\n\n"
            f"The exercises of the chapter *{title}* (`{slug}`). Fill in each answer cell; where a "
            "cell names variables (`name = ...`), assign them. Run `grader.check(\"<question>\")` "
            "after a question: it says which parts are right, the tolerance used and the section of "
            "the chapter to revisit, never the expected value. Questions marked *graded by hand* "
            "are answered in the Markdown cell provided; they count in the total."
        ),
        nbformat.v4.new_code_cell("import numpy as np\n\nimport llmmath"),
    ]
    for number, (exercise, solution) in enumerate(exercise_pairs(nb), start=1):
        label = exercise.label
        spec = EXERCISES.get(label)
        parts = spec.parts if spec else ()
        header = {"name": question_name(label)}
        header.update({"points": len(parts)} if parts else {"manual": True, "points": 1})
        cells.append(_raw("# BEGIN QUESTION\n" + yaml.safe_dump(header, sort_keys=False)))
        prompt = f"**Exercise {number} (`{label}`)**\n\n{render(exercise_text(exercise), context)}"
        if spec:
            prompt += "\n\n" + _submit_list(spec)
        else:
            prompt += "\n\n*Graded by hand*: answer in the Markdown cell below."
        cells.append(nbformat.v4.new_markdown_cell(prompt))
        worked = _worked_solution(solution, context)
        cells.append(_raw("# BEGIN SOLUTION"))
        if parts:
            code = solutions.get(label) or "\n".join(f"{p.name} = ...  # SOLUTION" for p in parts)
            _check_function_stubs(label, parts, code)
            cells.append(nbformat.v4.new_code_cell(code))
            if not spec.written:
                cells += worked
        else:
            cells += worked or [nbformat.v4.new_markdown_cell("(No worked solution in the chapter.)")]
        cells.append(_raw("# END SOLUTION"))
        if parts:
            cells.append(_raw("# BEGIN TESTS"))
            cells += [_test_cell(label, p) for p in parts]
            cells.append(_raw("# END TESTS"))
        cells.append(_raw("# END QUESTION"))
        if spec and spec.written:
            header = {"name": written_name(label), "manual": True, "points": len(spec.written)}
            cells.append(_raw("# BEGIN QUESTION\n" + yaml.safe_dump(header, sort_keys=False)))
            asked = "\n".join(f"{k}. {q}" for k, q in enumerate(spec.written, start=1))
            cells.append(nbformat.v4.new_markdown_cell(
                f"**Exercise {number} (`{label}`), written part** (*graded by hand*, "
                f"{len(spec.written)} point{'s' * (len(spec.written) > 1)}): answer in the Markdown cell "
                f"below.\n\n{asked}"))
            cells.append(_raw("# BEGIN SOLUTION"))
            cells += worked or [nbformat.v4.new_markdown_cell("(No worked solution in the chapter.)")]
            cells.append(_raw("# END SOLUTION"))
            cells.append(_raw("# END QUESTION"))
    master = nbformat.v4.new_notebook(cells=cells)
    master.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    master.metadata["language_info"] = {"name": "python"}
    return master


def _worked_solution(solution, context) -> list[nbformat.NotebookNode]:
    """The chapter's worked solution as instructor-only Markdown cells (no directive options)."""
    if solution is None:
        return []
    text = "\n".join(ln for ln in solution.text.strip().splitlines() if not re.match(r"^:\w[\w-]*:", ln))
    cells = [nbformat.v4.new_markdown_cell("**Worked solution (from the chapter).**\n\n" + render(text, context))]
    if solution.gated:  # its code cells, as text: a code cell here would become an answer cell
        cells.append(nbformat.v4.new_markdown_cell(
            "**Code of the worked solution.**\n\n"
            + "\n\n".join(f"```python\n{c.strip()}\n```" for c in solution.code)))
    return cells


def _check_function_stubs(label: str, parts, code: str) -> None:
    """A function part must keep its ``def`` line in the student's cell (not only in a block that
    otter removes): otherwise the student gets no stub and no signature."""
    hidden = "\n".join(re.findall(r"# BEGIN SOLUTION NO PROMPT\n(.*?)# END SOLUTION", code, re.S))
    for p in parts:
        if p.kind != "function":
            continue
        visible = re.sub(r"# BEGIN SOLUTION NO PROMPT\n.*?# END SOLUTION", "", code, flags=re.S)
        if not re.search(rf"^def {p.name}\(", visible, re.M):
            hidden_def = re.search(rf"def {p.name}\(", hidden)
            where = "only inside a BEGIN SOLUTION NO PROMPT block" if hidden_def else "nowhere"
            raise ValueError(f"assignments/*.py, section {label}: the function part {p.name!r} is defined {where}; "
                             f"keep its def line outside the hidden block and put its body in '# BEGIN SOLUTION' "
                             f"... '# END SOLUTION' so that the student gets the stub")


def check_reference_answers(slug: str) -> list[str]:
    """Run ``assignments/<slug>.py`` section by section and check every part with llmmath.check;
    return the problems (an empty list: every reference answer is right)."""
    from llmmath.check import EXERCISES, check

    problems, namespace = [], {}
    exec("import numpy as np\nimport llmmath", namespace)
    for label, code in reference_solutions(slug).items():
        if label not in EXERCISES:
            problems.append(f"{label}: assignments/{slug}.py has a section for an exercise that is not checkable")
            continue
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(as_student_code(code), f"assignments/{slug}.py [{label}]", "exec"), namespace)
        except Exception as exc:  # the reference itself is broken: say where
            problems.append(f"{label}: the reference code raised {type(exc).__name__}: {exc}")
            continue
        for part in EXERCISES[label].parts:
            feedback = check(label, namespace.get(part.name), part=part.name)
            if not feedback.correct:
                problems.append(f"{label}.{part.name}: the reference answer is wrong: {feedback.parts[0][2]}")
    return problems


@contextlib.contextmanager
def _cwd(path: Path):
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


WHEELS = ROOT / ".cache" / "wheels"


def build_wheel(dest: Path = WHEELS) -> Path:
    """A wheel of llmmath built from the working tree (not the installed copy), into ``dest``.

    Built from a copy of ``pyproject.toml``, ``README.md`` and ``llmmath/`` (no build files in the
    tree), without network; reused while those files are unchanged (the folder carries their hash).
    """
    sources = sorted(p for p in (ROOT / "llmmath").rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    digest = hashlib.sha256()
    for path in [ROOT / "pyproject.toml", ROOT / "README.md", *sources]:
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    stamp = dest / f"llmmath-wheel-{digest.hexdigest()[:16]}"
    if stamp.is_dir() and (wheels := list(stamp.glob("*.whl"))):
        return wheels[0]
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        shutil.copy2(ROOT / "pyproject.toml", src)
        shutil.copy2(ROOT / "README.md", src)
        shutil.copytree(ROOT / "llmmath", src / "llmmath", ignore=shutil.ignore_patterns("__pycache__"))
        out = Path(tmp) / "wheel"
        result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                                 "--no-index", "-w", str(out), str(src)], capture_output=True, text=True)
        if result.returncode:
            raise RuntimeError(f"building the llmmath wheel failed:\n{result.stdout}\n{result.stderr}")
        wheel = next(out.glob("*.whl"))
        ready = Path(tmp) / "ready"
        ready.mkdir()
        shutil.copy2(wheel, ready / wheel.name)
        try:  # atomic: another process may be building the same wheel
            os.replace(ready, stamp)
        except OSError:
            if not (stamp / wheel.name).is_file():
                raise
    return stamp / wheel.name


def build_assignment(chapter: Path, out: Path = OUT, wheel: Path | None = None, check: bool = True) -> Path:
    """Write ``out/<slug>/<slug>.ipynb`` (master) and run ``otter assign`` into ``out/<slug>/dist``.

    With ``check`` (the default), the reference answers must be right and the student notebook must
    not give an answer away (:mod:`coursework.leaks`): otherwise ``RuntimeError`` and no assignment.
    """
    import otter.assign as otter_assign

    from .leaks import scan, summary

    slug = chapter.stem
    if check and (problems := check_reference_answers(slug)):
        raise RuntimeError(f"assignment {slug}: wrong reference answers in assignments/{slug}.py:\n  "
                           + "\n  ".join(problems))
    wheel = wheel or build_wheel()
    folder = out / slug
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    shutil.copy2(wheel, folder / wheel.name)
    master = folder / f"{slug}.ipynb"
    text = nbformat.writes(master_notebook(chapter)).replace("{wheel}", wheel.name)
    master.write_text(text, encoding="utf-8")
    with _cwd(folder), contextlib.redirect_stdout(io.StringIO()) as log, _quiet_otter_logs():
        try:
            otter_assign.main(str(master), str(folder / "dist"), no_pdfs=True, no_run_tests=True)
        except Exception as exc:
            raise RuntimeError(f"otter assign failed for {slug}: {exc}\n{log.getvalue()}") from exc
    (folder / "dist" / "student" / wheel.name).unlink(missing_ok=True)  # the zip's copy is enough
    if check and (leaks := scan([folder / "dist" / "student"], chapters=[slug])):
        shutil.rmtree(folder / "dist" / "student")
        raise RuntimeError(f"assignment {slug}: the student notebook gives answers away:\n{summary(leaks)}")
    return folder / "dist"


@contextlib.contextmanager
def _quiet_otter_logs():
    import logging
    import warnings

    levels = {name: logging.getLogger(name).level for name in ("otter", "otter.assign")}
    for name in levels:
        logging.getLogger(name).setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            yield
        finally:
            for name, level in levels.items():
                logging.getLogger(name).setLevel(level)


def autograder_zip(dist: Path) -> Path:
    zips = sorted((dist / "autograder").glob("*.zip"))
    if not zips:
        raise FileNotFoundError(f"no autograder zip in {dist / 'autograder'}")
    return zips[-1]


def build_all(out: Path = OUT, slugs: list[str] | None = None, check: bool = True) -> list[Path]:
    """Build the assignment of every chapter with exercises (or of the chapters ``slugs``)."""
    chapters = [c for c in chapter_notebooks() if slugs is None or c.stem in slugs]
    if slugs is not None and len(chapters) < len(slugs):
        missing = [s for s in slugs if s not in {c.stem for c in chapters}]
        chapters += [ROOT / "chapters" / f"{s}.ipynb" for s in missing]
        if unknown := [s for s in missing if not (ROOT / "chapters" / f"{s}.ipynb").exists()]:
            raise ValueError(f"no chapter notebook chapters/<slug>.ipynb for {unknown}")
    wheel = build_wheel()
    built, failed = [], []
    for chapter in chapters:
        if not exercise_pairs(read(chapter)):
            continue
        try:
            built.append(build_assignment(chapter, out, wheel, check))
        except RuntimeError as exc:  # the others are still built; this one is not handed out
            failed.append(str(exc))
    if failed:
        raise RuntimeError(f"{len(failed)} assignment(s) not built ({len(built)} built):\n" + "\n".join(failed))
    return built
