"""Proof that the autograder works: otter-grader, locally, without Docker or network.

Builds the matmul-cost assignment (``otter assign``, with its reference answers checked), "submits"
the student notebook filled in with the reference solutions (alice) and with some wrong, missing
and raising answers (bob), both files named ``matmul-cost.ipynb`` in their own folders, grades them
with ``coursework.grade`` (each in its own sandboxed process) and checks the gradebook: full marks,
the expected partial marks, two rows, hand-graded answers collected and counted in the maximum.
Then a hostile submission tries to write outside its folder, to read another submission, to
allocate without end and to run forever: the others' grades are untouched. The expected scores are
counted by hand from the answers below, not read from llmmath.check.
"""

from __future__ import annotations

import csv
import json
import os
import re
import warnings
from pathlib import Path

import nbformat
import pytest

from coursework.assign import as_student_code, build_assignment, master_notebook, question_name, reference_solutions
from coursework.exercises import ROOT, chapter_notebooks, exercise_pairs, read

pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword:DeprecationWarning",
                                        "ignore:The inplace keyword:FutureWarning",
                                        "ignore:Traits should be given as instances:DeprecationWarning")

SLUG = "matmul-cost"
# parts per exercise (see the chapter's exercises), and what the wrong submission gets right
POINTS = {"vecmat": 4, "mlp": 1, "count": 2, "chain": 3, "dp": 3, "attention": 2, "roofline": 4}
WRONG_SCORES = {"vecmat": 4, "mlp": 0, "count": 1, "chain": 2, "dp": 3, "attention": 0, "roofline": 2}

WRONG = {  # label -> code replacing the reference (answers wrong, missing or raising on purpose)
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
    # raises before assigning: the feedback must say so, not "no answer given"
    "matmul-cost-ex-attention": "crossover_s = 2 * cfg_that_does_not_exist.hidden_size\ncrossover_s_over_h = 2.5",
    "matmul-cost-ex-roofline": (  # intensity and MI300X right; H100 at the bare ridge, FP8 forgets 1-byte values
        "intensity_b64 = 2 * 64 * 8192 * 28672 / ((64 * 8192 + 8192 * 28672 + 64 * 28672) * 2)\n"
        "batch_h100 = 296\n"
        "batch_mi300x = next(b for b in range(1, 10**4)\n"
        "                    if llmmath.arithmetic_intensity(b, 8192, 28672, 2) >= llmmath.ridge_point('MI300X'))\n"
        "batch_h100_fp8 = 591"
    ),
}


@pytest.fixture(scope="module")
def assignment(tmp_path_factory):
    """The built assignment folder (``<tmp>/matmul-cost/``: master notebook and ``dist``)."""
    out = tmp_path_factory.mktemp("assign")
    build_assignment(ROOT / "chapters" / f"{SLUG}.ipynb", out)
    return out


def _submit(assignment: Path, folder: Path, replace: dict[str, str], written: str = "") -> Path:
    """The student notebook with each answer cell filled in, saved as ``folder/matmul-cost.ipynb``."""
    nb = nbformat.read(assignment / SLUG / "dist" / "student" / f"{SLUG}.ipynb", as_version=4)
    solutions = reference_solutions(SLUG)
    answers = iter(solutions)
    for cell in nb.cells:
        if "otter_answer_cell" not in cell.metadata.get("tags", []):
            continue
        if cell.cell_type == "code":
            label = next(answers)
            cell.source = replace.get(label, as_student_code(solutions[label]))
        else:
            cell.source = written
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    nbformat.write(nb, folder / f"{SLUG}.ipynb")
    return folder / f"{SLUG}.ipynb"


def _gradebook(path: Path) -> dict[str, dict[str, str]]:
    with path.open(newline="") as f:
        return {row["student"]: row for row in csv.DictReader(f)}


@pytest.fixture(scope="module")
def graded(assignment, tmp_path_factory):
    """alice (right) and bob (partly wrong), both ``matmul-cost.ipynb``, graded into one folder."""
    from coursework.grade import grade

    tmp = tmp_path_factory.mktemp("grading")
    subs = tmp / "submissions"
    subs.mkdir(mode=0o700)
    _submit(assignment, subs / "alice", {}, written="Alice's explanation: the zero accumulator adds 0.")
    _submit(assignment, subs / "bob", WRONG, written="Bob's explanation.")
    out = tmp / "grades"
    book = grade(SLUG, [subs], out=out, assignments=assignment, timeout=300, log=lambda *_: None)
    return out, book, subs


def _question(key: str) -> str:
    return question_name(f"{SLUG}-ex-{key}")


def test_student_version_has_no_solutions(assignment):
    student = (assignment / SLUG / "dist" / "student" / f"{SLUG}.ipynb").read_text()
    for label, code in reference_solutions(SLUG).items():
        for line in as_student_code(code).splitlines():
            if "=" in line and "..." not in line and len(line.strip()) > 20:
                assert line.strip() not in student, f"{label}: solution line in the student notebook"
    assert "Worked solution" not in student
    solutions = (assignment / SLUG / "dist" / "autograder" / f"{SLUG}.ipynb").read_text()
    assert "Worked solution" in solutions and ":class: dropdown" not in solutions  # no directive options
    assert "{cite:" not in student and "{ref}`" not in student and "{glue:text}`" not in student
    assert not re.search(r"\bseeds? \d{3}\b", student), "students cannot look the seeds' file names up"
    nb = nbformat.reads(student, as_version=4)
    answer_cells = [c for c in nb.cells if "otter_answer_cell" in c.metadata.get("tags", [])]
    code_cells = [c for c in answer_cells if c.cell_type == "code"]
    assert len(code_cells) == len(POINTS)
    assert all(c.source.strip().endswith("...") for c in code_cells)
    assert "def zero_acc_matmul(a, b):" in student  # the function part keeps its stub
    from llmmath.check import EXERCISES

    written = [label for label in EXERCISES if label.startswith(SLUG) and EXERCISES[label].written]
    assert len([c for c in answer_cells if c.cell_type == "markdown"]) == len(written) > 0


def test_prompts_number_cross_references_as_the_book_does(assignment):
    master = (assignment / SLUG / f"{SLUG}.ipynb").read_text()
    assert "(1." in master or "section 1." in master, "no chapter-numbered reference in the prompts"
    assert "Use the H100 (llmmath.GPUS['H100']): dense peak 989.4 TFLOP/s BF16" in master
    assert "3 significant figures" in master


def test_reference_answers_are_checked_when_building(monkeypatch, tmp_path):
    import coursework.assign as assign

    reference = reference_solutions(SLUG)
    reference["matmul-cost-ex-mlp"] = reference["matmul-cost-ex-mlp"].replace("# SOLUTION", "* 2  # SOLUTION")
    monkeypatch.setattr(assign, "reference_solutions", lambda slug, root=ROOT: reference)
    with pytest.raises(RuntimeError, match=r"matmul-cost-ex-mlp\.mlp_flops: the reference answer is wrong"):
        build_assignment(ROOT / "chapters" / f"{SLUG}.ipynb", tmp_path)


def test_correct_submission_gets_full_marks(graded):
    out, book, _ = graded
    row = _gradebook(book)["alice"]
    qs = json.loads((out / "questions.json").read_text())
    auto = sum(q["points"] for q in qs if not q["manual"])
    hand = sum(q["points"] for q in qs if q["manual"])
    assert auto == sum(POINTS.values()) and hand > 0
    assert float(row["autograded"]) == auto
    assert float(row["max"]) == auto + hand  # hand-graded points count in the maximum
    assert "hand-graded question(s) to score" in row["status"]


def test_incorrect_submission_gets_partial_marks_and_useful_feedback(graded):
    out, book, _ = graded
    row = _gradebook(book)["bob"]
    scores = {key: float(next(v for k, v in row.items() if k.startswith(_question(key) + " "))) for key in POINTS}
    assert scores == WRONG_SCORES
    assert float(row["autograded"]) == sum(WRONG_SCORES.values())
    report = (out / "students" / "bob" / "feedback.txt").read_text()
    assert "Hint: revisit section" in report and "exact integer required" in report
    assert "relative tolerance" in report and "matmul-cost-batched" in report
    assert "mlp_flops is wrong" in report and "lora_right is right" in report  # parts named
    assert "your answer cell raised NameError" in report and "cfg_that_does_not_exist" in report
    assert "Error at line" not in report and "assert feedback" not in report  # no otter noise
    for secret in ("25769803776", "16384", f"{16 * 2048 * 12288**2}"):  # LLaMA-65B's 2h, GPT-3's MLP
        assert secret not in report


def test_two_files_of_the_same_name_are_two_students_and_grades_are_kept(graded, assignment):
    from coursework.grade import grade

    out, book, subs = graded
    assert set(_gradebook(book)) == {"alice", "bob"}
    before = (out / "students" / "alice" / "results.json").read_bytes()
    with pytest.raises(FileExistsError, match="alice"):
        grade(SLUG, [subs / "alice"], out=out, assignments=assignment, log=lambda *_: None)
    assert (out / "students" / "alice" / "results.json").read_bytes() == before
    roster = subs.parent / "roster.csv"
    roster.write_text("file,student\nsubmissions/alice/matmul-cost.ipynb,Alice A.\n")
    from coursework.grade import collect

    assert [s.student for s in collect(SLUG, [subs / "alice"], roster)] == ["Alice A."]


def test_hand_graded_answers_are_collected_and_counted(graded):
    from coursework.grade import write_gradebook

    out, book, _ = graded
    collected = nbformat.read(out / "hand-graded" / "alice.ipynb", as_version=4)
    text = "\n".join(c.source for c in collected.cells)
    assert "Alice's explanation" in text and "written part" in text
    sheet = out / "hand_grades.csv"
    with sheet.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["student"] for r in rows} == {"alice", "bob"}
    for r in rows:
        if r["student"] == "alice":
            r["score"] = r["points"]  # the instructor gives full marks
    with sheet.open("w", newline="") as f:
        writer = csv.DictWriter(f, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    row = _gradebook(write_gradebook(out))["alice"]
    assert float(row["total"]) == float(row["max"]) and row["status"] == "graded"


@pytest.mark.slow
def test_hostile_submission_cannot_touch_other_grades_or_hang(graded, assignment, request):
    """Mallory's first cell tries to overwrite alice's results and the gradebook, to write beside
    its own folder and to read alice's submission, then allocates without end, then never stops."""
    import shutil
    import tempfile

    from coursework.grade import grade

    out, book, subs = graded
    report = Path(tempfile.mkdtemp(prefix="llmmath-hostile-"))  # in /tmp: reachable by every user
    os.chmod(report, 0o777)  # the only place it may tell what it managed
    request.addfinalizer(lambda: shutil.rmtree(report, ignore_errors=True))
    targets = {"results": out / "students" / "alice" / "results.json", "gradebook": out / "gradebook.csv",
               "beside": subs / "mallory-was-here.txt"}
    hostile = "\n".join([
        "import json, os",
        "done = {}",
        f"for key, path in {json.dumps({k: str(v) for k, v in targets.items()})}.items():",
        "    try:",
        "        open(path, 'w').write('owned')",
        "        done[key] = 'written'",
        "    except OSError as exc:",
        "        done[key] = type(exc).__name__",
        "try:",
        f"    open({str(subs / 'alice' / (SLUG + '.ipynb'))!r}).read()",
        "    done['read_alice'] = 'read'",
        "except OSError as exc:",
        "    done['read_alice'] = type(exc).__name__",
        "hog = []",
        "try:",
        "    while True:",
        "        hog.append(bytearray(10**8))",
        "except MemoryError:",
        "    done['memory'] = 'MemoryError after %d00 MB' % len(hog)",
        "del hog",
        f"open({str(report / 'done.json')!r}, 'w').write(json.dumps(done))",
        "while True:",
        "    pass",
    ])
    path = _submit(assignment, subs.parent / "hostile" / "mallory", {})
    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(hostile))
    nbformat.write(nb, path)
    before = {p: p.read_bytes() for p in (targets["results"], targets["gradebook"])}
    hand_before = (out / "hand_grades.csv").read_bytes()
    grade(SLUG, [subs.parent / "hostile"], out=out, assignments=assignment, timeout=15, memory_gb=2,
          log=lambda *_: None)
    done = json.loads((report / "done.json").read_text())  # its code ran
    assert "MemoryError" in done["memory"]
    assert targets["results"].read_bytes() == before[targets["results"]]  # alice's grade untouched
    book_rows = _gradebook(targets["gradebook"])
    assert {k: v for k, v in book_rows.items() if k != "mallory"} == {
        k: v for k, v in _gradebook_from_bytes(before[targets["gradebook"]]).items()}
    assert book_rows["mallory"]["status"].startswith(("timed out", "tampering undone"))
    assert float(book_rows["mallory"]["autograded"]) == 0
    assert (out / "hand_grades.csv").read_bytes().startswith(hand_before.rstrip(b"\r\n"))
    mallory = json.loads((out / "students" / "mallory" / "results.json").read_text())
    if os.geteuid() == 0:  # the child ran as nobody: every attempt was refused
        assert done == {**done, "results": "PermissionError", "gradebook": "PermissionError",
                        "beside": "PermissionError", "read_alice": "PermissionError"}
        assert not targets["beside"].exists()
    else:  # same user: the writes went through and were undone
        assert "undone" in " ".join(mallory["notes"])
    print(f"hostile submission: {done}; status {mallory['status']}")


def _gradebook_from_bytes(data: bytes) -> dict[str, dict[str, str]]:
    import io

    return {row["student"]: row for row in csv.DictReader(io.StringIO(data.decode()))}


def test_renamed_notebook_finds_its_tests(assignment, tmp_path):
    """The first cell uses notebook_path: a renamed copy of the notebook still finds its tests."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import otter

    from llmmath.grading import notebook_path

    student = assignment / SLUG / "dist" / "student" / f"{SLUG}.ipynb"
    renamed = tmp_path / "my copy of the homework.ipynb"
    renamed.write_bytes(student.read_bytes())
    (tmp_path / "unrelated.ipynb").write_text(nbformat.writes(nbformat.v4.new_notebook()))
    found = notebook_path(SLUG, tmp_path)
    assert found == str(renamed)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        grader = otter.Notebook(found)
    finally:
        os.chdir(cwd)
    assert _question("mlp") in grader._nbmeta_config.tests
    assert notebook_path("another-assignment", tmp_path) is None


@pytest.mark.parametrize("chapter", list(dict.fromkeys(chapter_notebooks(numbered_only=True) + [
    p for p in chapter_notebooks() if exercise_pairs(read(p))])), ids=lambda p: p.stem)  # + the primer
def test_every_chapter_gets_an_assignment(chapter):
    """One otter question per exercise (and one per exercise's hand-graded part); one autograder
    test per checkable part (otter not run: fast)."""
    from llmmath.check import EXERCISES

    master = master_notebook(chapter)
    raws = [c.source for c in master.cells if c.cell_type == "raw"]
    labels = [ex.label for ex, _ in exercise_pairs(read(chapter))]
    questions = [r for r in raws if r.startswith("# BEGIN QUESTION")]
    names = [re.search(r"name: (\S+)", q).group(1) for q in questions]
    manual = {}  # question -> graded by hand
    for x in labels:
        manual[question_name(x)] = x not in EXERCISES
        if x in EXERCISES and EXERCISES[x].written:
            manual[question_name(x) + "_written"] = True
    expected_names = list(manual)
    assert names == expected_names
    assert sum(r.startswith("# END QUESTION") for r in raws) == len(expected_names)
    tests = [c.source for c in master.cells if c.cell_type == "code" and "def test_" in c.source]
    expected = [(label, p.name) for label in labels if label in EXERCISES for p in EXERCISES[label].parts]
    assert len(tests) == len(expected)
    for (label, part), source in zip(expected, tests, strict=True):
        assert f"check_part({label!r}, {part!r}, env)" in source
    for q, name in zip(questions, names, strict=True):
        assert ("manual: true" in q) == manual[name], name
    # MyST roles and directives are rendered as plain Markdown (Jupyter shows MyST as raw text)
    text = "\n".join(c.source for c in master.cells if c.cell_type == "markdown")
    raw = re.findall(r"\{[\w:-]+\}`[^`]*`|^(?::{3,}|`{3,})\{[\w:-]+\}.*$|^\([\w.:-]+\)=|^:class:", text, re.M)
    assert not raw, f"{chapter.stem}: MyST left as raw text in the assignment: {raw[:3]}"
    assert not re.search(r"\bseeds? \d{3}\b", text), f"{chapter.stem}: a prompt names a seed by its number"


@pytest.mark.slow
def test_gradescope_zip_grades_in_a_fresh_environment(assignment, graded, tmp_path):
    """The autograder zip alone grades a submission: a fresh virtual environment (no llmmath), the
    zip's own requirements installed from its environment.yml (pip, from this machine's package
    index and wheels when offline; the llmmath wheel from the zip), and the zip's run_otter.py run
    on Gradescope's layout (source/, submission/, results/) under a temporary root."""
    import subprocess
    import sys
    import zipfile

    import yaml

    from coursework.assign import AUTOGRADER_SOURCE, autograder_zip

    _, _, subs = graded
    root = tmp_path / "autograder"
    with zipfile.ZipFile(autograder_zip(assignment / SLUG / "dist")) as zf:
        zf.extractall(root / "source")
    (root / "submission").mkdir()
    (root / "results").mkdir()
    (root / "submission" / f"{SLUG}.ipynb").write_bytes((subs / "alice" / f"{SLUG}.ipynb").read_bytes())
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(PATH=str(venv / "bin") + os.pathsep + env.get("PATH", ""), VIRTUAL_ENV=str(venv))
    no_llmmath = subprocess.run([python, "-c", "import llmmath"], cwd=root, env=env, capture_output=True)
    assert no_llmmath.returncode != 0, "the fresh environment already has llmmath: the test would prove nothing"
    spec = yaml.safe_load((root / "source" / "environment.yml").read_text())
    pip = next(d["pip"] for d in spec["dependencies"] if isinstance(d, dict))
    assert any(p.endswith(".whl") and "llmmath" in p for p in pip), "the zip does not install llmmath"
    pip = [p.replace(AUTOGRADER_SOURCE, str(root / "source")) for p in pip]
    conda_only = [d for d in spec["dependencies"] if isinstance(d, str) and d.split("=")[0] not in ("python", "pip")]
    subprocess.run([python, "-m", "pip", "install", "--quiet", *pip, *conda_only], check=True, cwd=root, env=env)
    runner = (root / "source" / "run_otter.py").read_text().replace('"/autograder"', repr(str(root)))
    (root / "run_otter.py").write_text(runner)
    subprocess.run([python, str(root / "run_otter.py")], check=True, cwd=root, env=env, capture_output=True)
    results = json.loads((root / "results" / "results.json").read_text())
    scores = {t["name"]: t.get("score") for t in results["tests"] if t.get("max_score")}
    assert sum(scores.values()) == sum(POINTS.values()), results["tests"][0].get("output", "")[:2000]
