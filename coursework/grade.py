"""Grading submitted notebooks into a gradebook that no build touches.

``python3 dev.py grade SLUG SUBMISSION_OR_FOLDER ... [--roster roster.csv] [--out DIR] [--force]
[--timeout S] [--memory GB] [--docker]`` grades each submission with the assignment's autograder zip
(``python3 dev.py assign SLUG`` first) and writes, under ``grading/<slug>/`` (git-ignored, outside
``_build``, so ``dev.py book``, ``dev.py test`` and ``dev.py assign`` never delete it):

* ``students/<student>/results.json`` and ``feedback.txt``: each question's score and otter's
  feedback; the student is named by the roster (``file,student`` columns, paths relative to the
  roster) or by the submission's path relative to the folder given (``alice/serving.ipynb`` ->
  ``alice``), so two students' files of the same name are two students;
* ``hand-graded/<student>.ipynb``: the student's answers to the questions graded by hand, with
  their prompts, for the instructor to read; the instructor writes the scores into
  ``hand_grades.csv`` (one row per student and question, kept when grading again);
* ``gradebook.csv``: a row per student, each question's score, the autograded and hand-graded
  sums, the total and the maximum (hand-graded points included), and a status column. It is
  rebuilt from the files above after every grading and by ``python3 dev.py gradebook SLUG``.

A student already graded is refused unless ``--force`` is given (before anything runs).

**Isolation.** Each submission runs in its own process (otter's grading, which starts a Jupyter
kernel) in a fresh temporary directory holding only a copy of it and of the autograder zip, with
a clean environment, a wall-clock limit (its processes killed when it passes), CPU, memory
(address space), file-size and (as root) process-count limits. The results are written by this
(parent) process from what the child prints; the child is never told where they are. Running as
root, the child drops to the unprivileged user ``nobody``: it cannot read or write the results,
the gradebook or any file not readable by every user (keep the submissions in a folder only you can
read: the grader warns otherwise). Without root it runs as you: it could read your files, and the
parent detects (and undoes) changes to the grading folder after each submission, but cannot stop
them. Either way a submission can fake its *own* score (otter runs the tests in the same Python
process as the student's code). ``--docker`` grades with otter's containers (``otter grade``) where
a Docker daemon answers.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import yaml

from .assign import OUT, autograder_zip
from .exercises import ROOT

GRADING = ROOT / "grading"
MARKER = "@@llmmath-grading-results@@"
NOBODY = 65534
_CHILD = r"""
import json, sys, warnings
warnings.simplefilter("ignore")
from otter.api import grade_submission
marker = sys.stdin.readline().strip()  # a secret: the submission's code never sees it
results = grade_submission(sys.argv[1], sys.argv[2], quiet=True)
out = {name: {"score": tf.score, "possible": tf.possible, "feedback": tf.summary()}
       for name, tf in results.results.items()}
sys.stdout.write("\n%s%s\n" % (marker, json.dumps(out)))
sys.stdout.flush()
"""


@dataclass(frozen=True)
class Question:
    name: str
    points: float
    manual: bool


@dataclass(frozen=True)
class Submission:
    student: str
    path: Path


@dataclass
class Outcome:
    """What grading one submission gave, as the parent records it."""

    student: str
    submission: str
    scores: dict[str, float] = field(default_factory=dict)
    feedback: dict[str, str] = field(default_factory=dict)
    status: str = "graded"
    notes: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------------- questions
def questions(slug: str, assignments: Path = OUT) -> list[Question]:
    """The questions of the built assignment, in order, from its master notebook."""
    master = assignments / slug / f"{slug}.ipynb"
    if not master.is_file():
        raise FileNotFoundError(f"no assignment {slug}: run `python3 dev.py assign {slug}` first")
    found = []
    for cell in nbformat.read(master, as_version=4).cells:
        if cell.cell_type == "raw" and cell.source.startswith("# BEGIN QUESTION"):
            header = yaml.safe_load(cell.source.split("\n", 1)[1])
            found.append(Question(header["name"], float(header.get("points", 1)), bool(header.get("manual"))))
    return found


# ----------------------------------------------------------------------------------- submissions
def collect(slug: str, paths: list[Path], roster: Path | None = None) -> list[Submission]:
    """The submissions named by ``paths`` (notebooks, or folders searched for them), each with its
    student: from ``roster`` (a CSV with ``file`` and ``student`` columns) or from its path relative
    to the folder given (the notebook's own name dropped when it is the assignment's)."""
    files: list[tuple[Path, Path]] = []  # (notebook, base it is named relative to)
    for given in paths:
        given = Path(given).resolve()
        if given.is_dir():
            files += [(p, given) for p in sorted(given.rglob("*.ipynb")) if ".ipynb_checkpoints" not in p.parts]
        elif given.is_file() and given.suffix == ".ipynb":
            files.append((given, given.parent))
        else:
            raise ValueError(f"submission {str(given)!r} is neither a notebook (.ipynb) nor a folder")
    if not files:
        raise ValueError("no submitted notebook found in " + ", ".join(map(str, paths)))
    names = _roster(roster) if roster else {}
    subs, seen = [], {}
    for path, base in files:
        if roster:
            if path not in names:
                raise ValueError(f"submission {path} is not in the roster {roster}")
            student = names[path]
        else:
            parts = list(path.relative_to(base).with_suffix("").parts)
            if len(parts) > 1 and parts[-1] == slug:
                parts.pop()  # subs/alice/serving.ipynb -> alice
            elif parts == [slug]:
                parts = [base.name]  # alice/serving.ipynb given as a file: its folder names it
            student = "/".join(parts)
        if student in seen:
            raise ValueError(f"two submissions for student {student!r}: {seen[student]} and {path} "
                             "(use a roster to name them)")
        seen[student] = path
        subs.append(Submission(student, path))
    keys = {}
    for sub in subs:
        key = student_key(sub.student)
        if key in keys:
            raise ValueError(f"students {keys[key]!r} and {sub.student!r} map to the same folder {key!r}")
        keys[key] = sub.student
    return subs


def _roster(path: Path) -> dict[Path, str]:
    path = Path(path)
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if not rows or not {"file", "student"} <= set(rows[0]):
        raise ValueError(f"roster {path}: a CSV with the columns 'file' and 'student' is needed")
    names = {}
    for row in rows:
        file = Path(row["file"].strip())
        file = (file if file.is_absolute() else path.parent / file).resolve()
        if not row["student"].strip():
            raise ValueError(f"roster {path}: no student for {row['file']!r}")
        names[file] = row["student"].strip()
    return names


def student_key(student: str) -> str:
    """A folder name for a student: letters, digits, ``.``, ``-``, ``_``; ``/`` becomes ``__``."""
    key = re.sub(r"[^\w.-]+", "_", student.replace("/", "__")).strip("._")
    if not key:
        raise ValueError(f"student name {student!r} gives no usable folder name")
    return key


# -------------------------------------------------------------------------------------- grading
def grade(slug: str, paths: list[Path], *, roster: Path | None = None, out: Path | None = None,
          force: bool = False, timeout: float = 600, memory_gb: float = 4, docker: bool = False,
          assignments: Path = OUT, log=print) -> Path:
    """Grade the submissions of ``paths`` for assignment ``slug``; return the gradebook's path."""
    zip_path = autograder_zip(assignments / slug / "dist")
    qs = questions(slug, assignments)
    subs = collect(slug, paths, roster)
    out = Path(out or GRADING / slug).resolve()
    done = [s.student for s in subs if (out / "students" / student_key(s.student) / "results.json").exists()]
    if done and not force:
        raise FileExistsError(f"already graded in {out}: {', '.join(done)}; pass --force to grade them again")
    for folder in {s.path.parent for s in subs}:
        if _readable_by_others(folder):
            log(f"warning: {folder} is readable by every user: a sandboxed submission could read the "
                "submissions in it (chmod o-rwx it)")
    out.mkdir(parents=True, exist_ok=True)
    os.chmod(out, 0o700)
    (out / "questions.json").write_text(json.dumps([q.__dict__ for q in qs], indent=1))
    if docker:
        outcomes = _grade_in_docker(zip_path, subs, timeout)
    else:
        outcomes = []
        for sub in subs:
            log(f"grading {sub.student} ({sub.path})")
            outcomes.append(_grade_guarded(zip_path, sub, out, timeout, memory_gb, log))
    for outcome, sub in zip(outcomes, subs, strict=True):
        _write_outcome(out, outcome, qs)
        _write_hand_graded(out, sub, qs, slug)
    return write_gradebook(out, qs)


def _grade_guarded(zip_path: Path, sub: Submission, out: Path, timeout: float, memory_gb: float, log) -> Outcome:
    """Grade one submission; whatever it changed in ``out`` is put back and reported."""
    before = _snapshot(out)
    outcome = run_sandboxed(zip_path, sub, timeout, memory_gb)
    changed = _restore(out, before)
    if changed:
        outcome.notes.append("changed files of the grading folder, undone: " + ", ".join(changed))
        outcome.status = "tampering undone"
        log(f"  {sub.student}: tried to change {', '.join(changed)} (undone)")
    return outcome


def run_sandboxed(zip_path: Path, sub: Submission, timeout: float, memory_gb: float) -> Outcome:
    """Grade ``sub`` in a child process, a private temporary directory and the limits above."""
    outcome = Outcome(sub.student, str(sub.path))
    root = os.geteuid() == 0
    with tempfile.TemporaryDirectory(prefix="llmmath-grade-") as tmp:
        box = Path(tmp) / "box"
        box.mkdir()
        notebook = box / "submission.ipynb"
        shutil.copyfile(sub.path, notebook)
        shutil.copyfile(zip_path, box / "autograder.zip")
        if root:
            for path in (box, *box.iterdir()):
                os.chown(path, NOBODY, NOBODY)
            os.chmod(tmp, 0o711)
        token = os.urandom(8).hex()
        env = _child_env(box, token)
        limits = _limits(memory_gb, timeout, root)
        marker = MARKER + os.urandom(8).hex()
        started = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(notebook), str(box / "autograder.zip")],
                                cwd=box, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True, preexec_fn=limits)
        try:
            stdout, stderr = proc.communicate(input=(marker + "\n").encode(), timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_tree(proc.pid, token)
            stdout, stderr = proc.communicate()
            outcome.status = "timed out"
            outcome.notes.append(f"stopped after {timeout:g} s (wall clock): no score")
            return outcome
        finally:
            _kill_tree(proc.pid, token)  # what it left running
        elapsed = time.monotonic() - started
    text = stdout.decode("utf-8", "replace")
    payload = [line[len(marker):] for line in text.splitlines() if line.startswith(marker)]
    if proc.returncode != 0 or not payload:
        outcome.status = "error"
        reason = {-signal.SIGXCPU: "the CPU-time limit", -signal.SIGKILL: "a kill (memory?)"}.get(proc.returncode)
        tail = stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        outcome.notes.append(f"grading failed (exit {proc.returncode}{', ' + reason if reason else ''}): "
                             + " | ".join(tail))
        return outcome
    try:
        results = json.loads(payload[-1])
    except ValueError:
        outcome.status = "error"
        outcome.notes.append("unreadable results")
        return outcome
    for name, r in results.items():
        if isinstance(r, dict) and isinstance(r.get("score"), (int, float)):
            outcome.scores[name] = float(r["score"])
            outcome.feedback[name] = str(r.get("feedback", ""))[:20000]
    outcome.notes.append(f"graded in {elapsed:.1f} s")
    return outcome


def _child_env(box: Path, token: str) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "SYSTEMROOT")}
    venv = str(Path(sys.executable).parent)
    return dict(keep, PATH=venv + os.pathsep + keep.get("PATH", "/usr/bin:/bin"), HOME=str(box), TMPDIR=str(box),
                JUPYTER_RUNTIME_DIR=str(box / ".jupyter"), JUPYTER_DATA_DIR=str(box / ".jupyter"),
                IPYTHONDIR=str(box / ".ipython"), MPLCONFIGDIR=str(box / ".mpl"), MPLBACKEND="Agg",
                PYTHONDONTWRITEBYTECODE="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
                MKL_NUM_THREADS="1", LLMMATH_GRADING_TOKEN=token)


def _limits(memory_gb: float, timeout: float, root: bool):
    import resource

    def apply() -> None:
        memory = int(memory_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        cpu = int(timeout) + 5
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
        resource.setrlimit(resource.RLIMIT_FSIZE, (2**28, 2**28))  # 256 MiB per file
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.umask(0o077)
        if root:
            resource.setrlimit(resource.RLIMIT_NPROC, (256, 256))
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)

    return apply


def _kill_tree(pid: int, token: str) -> None:
    """Kill ``pid``, its descendants and every process that carries the grading token (a kernel
    that left the process group, or whatever the submission started and orphaned)."""
    victims = {pid}
    parents: dict[int, int] = {}
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            stat = (proc / "stat").read_text()
            parents[int(proc.name)] = int(stat.rsplit(")", 1)[1].split()[1])
            if token.encode() in (proc / "environ").read_bytes():
                victims.add(int(proc.name))
        except (OSError, ValueError, IndexError):
            continue
    grown = True
    while grown:
        grown = False
        for child, parent in parents.items():
            if parent in victims and child not in victims:
                victims.add(child)
                grown = True
    for victim in victims:
        try:
            os.kill(victim, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _readable_by_others(folder: Path) -> bool:
    """Whether a user other than the owner can list ``folder`` (every parent searchable, it readable)."""
    folder = Path(folder).resolve()
    if not folder.stat().st_mode & 0o004:
        return False
    return all(p.stat().st_mode & 0o001 for p in folder.parents)


def _snapshot(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}


def _restore(out: Path, before: dict[str, bytes]) -> list[str]:
    """Put ``out`` back as it was; return what had changed."""
    changed = []
    now = {str(p.relative_to(out)): p for p in out.rglob("*") if p.is_file() or p.is_symlink()}
    for rel, path in now.items():
        if rel not in before:
            changed.append(rel)
            path.unlink()
        elif path.is_symlink() or path.read_bytes() != before[rel]:
            changed.append(rel)
            path.unlink()
            path.write_bytes(before[rel])
    for rel, data in before.items():
        if rel not in now:
            changed.append(rel)
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            (out / rel).write_bytes(data)
    return sorted(changed)


def _grade_in_docker(zip_path: Path, subs: list[Submission], timeout: float) -> list[Outcome]:
    """``otter grade``: each submission in a container (needs a running Docker daemon)."""
    if not docker_available():
        raise RuntimeError("--docker: no Docker daemon answers here (`docker info` fails); grade without it")
    outcomes = []
    with tempfile.TemporaryDirectory() as tmp:
        for sub in subs:
            folder = Path(tmp) / student_key(sub.student)
            folder.mkdir()
            shutil.copyfile(sub.path, folder / "submission.ipynb")
            result = subprocess.run([sys.executable, "-m", "otter", "grade", "-a", str(zip_path), "-p", str(folder),
                                     "-o", str(folder / "out"), "--ext", "ipynb", "--timeout", str(int(timeout))],
                                    capture_output=True, text=True)
            outcome = Outcome(sub.student, str(sub.path))
            csvs = list((folder / "out").rglob("final_grades.csv"))
            if result.returncode or not csvs:
                outcome.status = "error"
                outcome.notes.append(f"otter grade failed: {result.stderr.strip()[-300:]}")
            else:
                with csvs[0].open(newline="") as f:
                    row = next(csv.DictReader(f))
                outcome.scores = {k: float(v) for k, v in row.items()
                                  if k not in ("file", "total", "possible", "percent_correct") and v not in ("", None)}
            outcomes.append(outcome)
    return outcomes


def docker_available() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


# ------------------------------------------------------------------------------------- the files
def _write_outcome(out: Path, outcome: Outcome, qs: list[Question]) -> None:
    folder = out / "students" / student_key(outcome.student)
    folder.mkdir(parents=True, exist_ok=True)
    auto = {q.name: q for q in qs if not q.manual}
    scores = {name: min(max(score, 0.0), auto[name].points) for name, score in outcome.scores.items() if name in auto}
    record = {"student": outcome.student, "submission": outcome.submission, "status": outcome.status,
              "notes": outcome.notes, "scores": scores,
              "autograded": sum(scores.values()), "autograded_max": sum(q.points for q in auto.values())}
    (folder / "results.json").write_text(json.dumps(record, indent=1))
    lines = [f"{outcome.student}: {outcome.status}", *outcome.notes, ""]
    lines += [outcome.feedback[name] for name in auto if name in outcome.feedback]
    (folder / "feedback.txt").write_text("\n\n".join(lines))


def manual_answers(notebook: Path, qs: list[Question]) -> dict[str, list[nbformat.NotebookNode]]:
    """The cells of each hand-graded question in a submission: its prompt and the answer cells."""
    names = {q.name for q in qs if q.manual}
    try:
        nb = nbformat.read(notebook, as_version=4)
    except Exception:  # an unreadable submission has no answers to collect
        return {}
    found: dict[str, list] = {}
    current = None
    for cell in nb.cells:
        source = cell.get("source", "")
        if cell.cell_type == "markdown" and "<!-- BEGIN QUESTION -->" in source:
            m = re.search(r"\(`([\w.-]+)`\)(, written part)?", source)
            if m:
                from .assign import question_name, written_name

                name = (written_name if m.group(2) else question_name)(m.group(1))
                current = name if name in names else None
                if current:
                    found[current] = []
        if current:
            found[current].append(cell)
        if "<!-- END QUESTION -->" in source:
            current = None
    return found


def _write_hand_graded(out: Path, sub: Submission, qs: list[Question], slug: str) -> None:
    manual = [q for q in qs if q.manual]
    if not manual:
        return
    answers = manual_answers(sub.path, qs)
    cells = [nbformat.v4.new_markdown_cell(
        f"# {slug}: hand-graded answers of {sub.student}\n\nSubmission: `{sub.path}`. Enter the scores in "
        f"`{out / 'hand_grades.csv'}`, then run `python3 dev.py gradebook {slug}`.")]
    for q in manual:
        cells.append(nbformat.v4.new_markdown_cell(f"## {q.name} ({q.points:g} point{'s' * (q.points != 1)})"))
        got = answers.get(q.name)
        cells += [nbformat.v4.new_markdown_cell(c.source) if c.cell_type == "markdown"
                  else nbformat.v4.new_code_cell(c.source) for c in got] if got else [
            nbformat.v4.new_markdown_cell("*(no answer found in the submission)*")]
    folder = out / "hand-graded"
    folder.mkdir(exist_ok=True)
    nbformat.write(nbformat.v4.new_notebook(cells=cells), folder / f"{student_key(sub.student)}.ipynb")
    sheet = out / "hand_grades.csv"
    rows = _read_hand_grades(sheet)
    for q in manual:
        rows.setdefault((sub.student, q.name), {"student": sub.student, "question": q.name,
                                                 "points": f"{q.points:g}", "score": "", "comment": ""})
    with sheet.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, ["student", "question", "points", "score", "comment"])
        writer.writeheader()
        writer.writerows(rows.values())


def _read_hand_grades(sheet: Path) -> dict[tuple[str, str], dict[str, str]]:
    if not sheet.exists():
        return {}
    with sheet.open(newline="", encoding="utf-8") as f:
        return {(r["student"], r["question"]): r for r in csv.DictReader(f)}


def write_gradebook(out: Path, qs: list[Question] | None = None) -> Path:
    """``out/gradebook.csv`` from the students' results and ``hand_grades.csv``: a row per student."""
    out = Path(out)
    if qs is None:
        qs = [Question(**q) for q in json.loads((out / "questions.json").read_text())]
    hand = _read_hand_grades(out / "hand_grades.csv")
    header = ["student", "submission",
              *[f"{q.name} ({'hand, ' if q.manual else ''}/{q.points:g})" for q in qs],
              "autograded", "hand_graded", "total", "max", "status"]
    rows = []
    for results in sorted((out / "students").glob("*/results.json")):
        r = json.loads(results.read_text())
        row = [r["student"], r["submission"]]
        auto_sum = hand_sum = 0.0
        missing_hand = 0
        for q in qs:
            if q.manual:
                score = hand.get((r["student"], q.name), {}).get("score", "").strip()
                if score:
                    value = float(score)
                    if not 0 <= value <= q.points:
                        raise ValueError(f"hand_grades.csv: {r['student']}, {q.name}: score {score} is not "
                                         f"between 0 and {q.points:g}")
                    hand_sum += value
                    row.append(f"{value:g}")
                else:
                    missing_hand += 1
                    row.append("")
            else:
                value = r["scores"].get(q.name, 0.0)
                auto_sum += value
                row.append(f"{value:g}")
        status = r["status"] + (f"; {missing_hand} hand-graded question(s) to score" if missing_hand else "")
        rows.append([*row, f"{auto_sum:g}", f"{hand_sum:g}", f"{auto_sum + hand_sum:g}",
                     f"{sum(q.points for q in qs):g}", status])
    path = out / "gradebook.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    return path
