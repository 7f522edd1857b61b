"""Command line: ``python -m coursework {student,assign,grade,gradebook}`` (see the package docstring)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import __doc__ as USAGE


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("student", "assign", "grade", "gradebook"):
        print(USAGE)
        return 2
    command, args = argv[0], argv[1:]
    try:
        if command == "student":
            return _student(args)
        if command == "assign":
            from .assign import autograder_zip, build_all

            for dist in build_all(slugs=args or None):
                print(f"assignment: hand out {dist / 'student'}, grade with {autograder_zip(dist)}")
            return 0
        if command == "gradebook":
            return _gradebook(args)
        return _grade(args)
    except (FileNotFoundError, FileExistsError, ValueError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def _student(args: list[str]) -> int:
    """Write the student notebooks (and the HTML); a chapter whose files give an answer away is
    reported, its notebook deleted, and the command fails: do not hand that edition out."""
    from .leaks import scan, summary
    from .student import STUDENT, build_html, write_student_notebooks

    paths = write_student_notebooks()
    leaks = scan([STUDENT / "notebooks"])
    for path in paths:
        if any(leak.chapter == path.stem for leak in leaks):
            path.unlink()
            print(f"NOT written (gives answers away): {path}")
        else:
            print(f"wrote {path}")
    if "--no-html" not in args:
        html = build_html(warnings_are_errors="--allow-warnings" not in args)
        leaks += scan([html])
        print(f"\nThe student edition is at {html / 'index.html'}")
    if leaks:
        print(f"\nerror: the student edition gives answers away (fix the chapters; see CONTRIBUTING):\n"
              f"{summary(leaks)}", file=sys.stderr)
        return 1
    return 0


def _grade(args: list[str]) -> int:
    from .grade import GRADING, grade

    parser = argparse.ArgumentParser(prog="python3 dev.py grade", description="Grade submitted notebooks.")
    parser.add_argument("slug", help="the assignment (chapter slug), built by `python3 dev.py assign SLUG`")
    parser.add_argument("submissions", nargs="+", type=Path, help="notebooks, or folders holding them")
    parser.add_argument("--roster", type=Path, help="CSV with columns file,student (paths relative to it)")
    parser.add_argument("--out", type=Path, help=f"grading folder (default {GRADING}/SLUG)")
    parser.add_argument("--force", action="store_true", help="grade again students already graded")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per submission (wall clock)")
    parser.add_argument("--memory", type=float, default=4, help="GB of address space per submission")
    parser.add_argument("--docker", action="store_true", help="grade in otter's Docker containers")
    ns = parser.parse_args(args)
    if ns.timeout <= 0 or ns.memory <= 0:
        parser.error("--timeout and --memory must be positive")
    book = grade(ns.slug, ns.submissions, roster=ns.roster, out=ns.out, force=ns.force, timeout=ns.timeout,
                 memory_gb=ns.memory, docker=ns.docker)
    print(f"gradebook: {book}\nhand-graded answers: {book.parent / 'hand-graded'} "
          f"(scores go into {book.parent / 'hand_grades.csv'}, then `python3 dev.py gradebook {ns.slug}`)")
    return 0


def _gradebook(args: list[str]) -> int:
    from .grade import GRADING, write_gradebook

    parser = argparse.ArgumentParser(prog="python3 dev.py gradebook",
                                     description="Rebuild a gradebook after hand grading.")
    parser.add_argument("slug")
    parser.add_argument("--out", type=Path, help=f"grading folder (default {GRADING}/SLUG)")
    ns = parser.parse_args(args)
    out = ns.out or GRADING / ns.slug
    if not (out / "questions.json").exists():
        raise FileNotFoundError(f"nothing graded in {out}")
    print(f"gradebook: {write_gradebook(out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
