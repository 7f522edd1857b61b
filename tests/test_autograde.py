"""Proof that the autograder works: otter-grader, locally, without Docker or network.

Builds the matmul-cost assignment (``otter assign``), "submits" the student notebook filled in with
the reference solutions and with some wrong and missing answers, grades both (``otter run``'s API)
and checks full marks and the expected partial marks. The expected scores are counted by hand from
the answers below, not read from llmmath.check.
"""

from __future__ import annotations

import os
import re
import warnings
from contextlib import contextmanager
from pathlib import Path

import nbformat
import pytest

with warnings.catch_warnings():  # otter imports ipywidgets, whose traitlets use is deprecated
    warnings.filterwarnings("ignore", "Traits should be given as instances", DeprecationWarning)
    import otter.api as otter_api  # otter-grader, pinned in requirements-test.txt
    import otter.assign as otter_assign

from coursework.assign import master_notebook, question_name, reference_solutions
from coursework.exercises import ROOT, chapter_notebooks, exercise_pairs, read

pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword:DeprecationWarning",
                                        "ignore:The inplace keyword:FutureWarning")

SLUG = "matmul-cost"
# parts per exercise (see the chapter's exercises), and what the wrong submission gets right
POINTS = {"vecmat": 4, "mlp": 1, "count": 2, "chain": 3, "dp": 3, "attention": 2, "roofline": 4}
WRONG_SCORES = {"vecmat": 4, "mlp": 0, "count": 1, "chain": 2, "dp": 3, "attention": 0, "roofline": 2}


@contextmanager
def _cwd(path: Path):
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def _as_student_code(reference: str) -> str:
    """Reference code with otter's markers removed: what a student who solved it would write."""
    lines = [ln for ln in reference.splitlines() if not re.match(r"\s*# (BEGIN|END) SOLUTION", ln)]
    return "\n".join(re.sub(r"\s*# SOLUTION\s*$", "", ln) for ln in lines)


WRONG = {  # label -> code replacing the reference (answers wrong or missing on purpose)
    "matmul-cost-ex-mlp": "mlp_flops = 32 * 2048 * 12288**2",  # twice the right count
    "matmul-cost-ex-count": (
        "def zero_acc_matmul(a, b):\n"
        "    m, n, p = len(a), len(b), len(b[0])\n"
        "    out = [[sum(a[i][k] * b[k][j] for k in range(n)) for j in range(p)] for i in range(m)]\n"
        "    return out, m * n * p  # counts the multiplications only\n"
        "naive_saving = 12"
    ),
    "matmul-cost-ex-chain": (
        "lora_right = llmmath.chain_flops([4096, 16, 4096, 8], 'right')\n"
        "lora_left = llmmath.chain_flops([4096, 16, 4096, 8], 'left')\n"
        "lora_ratio = lora_right / lora_left  # inverted"
    ),
    "matmul-cost-ex-attention": "crossover_s = ...\ncrossover_s_over_h = ...",  # not answered
    "matmul-cost-ex-roofline": (  # intensity and MI300X right; H100 at the bare ridge, FP8 forgets 1-byte values
        "intensity_b1 = 2 * 8192 * 28672 / ((8192 + 8192 * 28672 + 28672) * 2)\n"
        "batch_h100 = 296\n"
        "batch_mi300x = next(b for b in range(1, 10**4)\n"
        "                    if llmmath.arithmetic_intensity(b, 8192, 28672, 2) >= llmmath.ridge_point('MI300X'))\n"
        "batch_h100_fp8 = 591"
    ),
}


@pytest.fixture(scope="module")
def assignment(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("assign")
    master = tmp / f"{SLUG}.ipynb"
    nbformat.write(master_notebook(ROOT / "chapters" / f"{SLUG}.ipynb"), master)
    with _cwd(tmp):
        otter_assign.main(str(master), str(tmp / "dist"), no_pdfs=True, no_run_tests=True)
    return tmp / "dist"


def _submit(assignment: Path, name: str, replace: dict[str, str]) -> Path:
    """The student notebook with each answer cell filled in; returns the submission's path."""
    nb = nbformat.read(assignment / "student" / f"{SLUG}.ipynb", as_version=4)
    solutions = reference_solutions(SLUG)
    answers = iter(solutions)
    for cell in nb.cells:
        if cell.cell_type == "code" and "otter_answer_cell" in cell.metadata.get("tags", []):
            label = next(answers)
            cell.source = replace.get(label, _as_student_code(solutions[label]))
    path = assignment.parent / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


def _grade(assignment: Path, submission: Path):
    zip_path = next((assignment / "autograder").glob("*.zip"))
    with _cwd(submission.parent):
        return otter_api.grade_submission(str(submission), str(zip_path), quiet=True)


def test_student_version_has_no_solutions(assignment):
    student = (assignment / "student" / f"{SLUG}.ipynb").read_text()
    for label, code in reference_solutions(SLUG).items():
        for line in _as_student_code(code).splitlines():
            if "=" in line and "..." not in line and len(line.strip()) > 20:
                assert line.strip() not in student, f"{label}: solution line in the student notebook"
    assert "Worked solution" not in student
    assert "{cite:" not in student and "{ref}`" not in student and "{glue:text}`" not in student
    nb = nbformat.reads(student, as_version=4)
    answer_cells = [c for c in nb.cells if "otter_answer_cell" in c.metadata.get("tags", [])]
    assert len(answer_cells) == len(POINTS)
    assert all(c.source.strip().endswith("...") for c in answer_cells)


def test_correct_submission_gets_full_marks(assignment):
    results = _grade(assignment, _submit(assignment, "correct", {}))
    assert results.possible == sum(POINTS.values())
    assert results.total == results.possible


def test_incorrect_submission_gets_partial_marks_and_useful_feedback(assignment):
    results = _grade(assignment, _submit(assignment, "incorrect", WRONG))
    scores = {key: results.get_score(question_name(f"{SLUG}-ex-{key}")) for key in POINTS}
    assert scores == WRONG_SCORES
    assert results.total == sum(WRONG_SCORES.values())
    report = "\n".join(results.get_result(question_name(f"{SLUG}-ex-{key}")).summary() for key in POINTS)
    assert "Hint: revisit section" in report and "exact integer required" in report
    assert "relative tolerance" in report and "matmul-cost-batched" in report
    for secret in ("25769803776", "16384", f"{16 * 2048 * 12288**2}"):  # LLaMA-65B's 2h, GPT-3's MLP
        assert secret not in report


@pytest.mark.parametrize("chapter", list(dict.fromkeys(chapter_notebooks(numbered_only=True) + [
    p for p in chapter_notebooks() if exercise_pairs(read(p))])), ids=lambda p: p.stem)  # + the primer
def test_every_chapter_gets_an_assignment(chapter):
    """One otter question per exercise; one autograder test per checkable part (otter not run: fast)."""
    from llmmath.check import EXERCISES

    master = master_notebook(chapter)
    raws = [c.source for c in master.cells if c.cell_type == "raw"]
    labels = [ex.label for ex, _ in exercise_pairs(read(chapter))]
    questions = [r for r in raws if r.startswith("# BEGIN QUESTION")]
    assert [re.search(r"name: (\S+)", q).group(1) for q in questions] == [question_name(x) for x in labels]
    assert sum(r.startswith("# END QUESTION") for r in raws) == len(labels)
    tests = [c.source for c in master.cells if c.cell_type == "code" and c.source.startswith("def test_")]
    expected = [(label, p.name) for label in labels if label in EXERCISES for p in EXERCISES[label].parts]
    assert len(tests) == len(expected)
    for (label, part), source in zip(expected, tests, strict=True):
        assert f"check({label!r}, {part}, part={part!r})" in source
    for q, label in zip(questions, labels, strict=True):
        assert ("manual: true" in q) == (label not in EXERCISES)
    # MyST roles and directives are rendered as plain Markdown (Jupyter shows MyST as raw text)
    text = "\n".join(c.source for c in master.cells if c.cell_type == "markdown")
    raw = re.findall(r"\{[\w:-]+\}`[^`]*`|^(?::{3,}|`{3,})\{[\w:-]+\}.*$|^\([\w.:-]+\)=", text, re.M)
    assert not raw, f"{chapter.stem}: MyST left as raw text in the assignment: {raw[:3]}"
