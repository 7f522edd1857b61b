"""Command line: ``python -m coursework {student,assign,grade}`` (see the package docstring)."""

from __future__ import annotations

import sys
from pathlib import Path

from . import __doc__ as USAGE


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("student", "assign", "grade"):
        print(USAGE)
        return 2
    command, args = argv[0], argv[1:]
    if command == "student":
        from .student import build_html, write_student_notebooks

        for path in write_student_notebooks():
            print(f"wrote {path}")
        if "--no-html" not in args:
            try:
                html = build_html(warnings_are_errors="--allow-warnings" not in args)
            except RuntimeError as exc:
                print(exc)
                return 1
            print(f"\nThe student edition is at {html / 'index.html'}")
        return 0
    if command == "assign":
        from .assign import build_all

        for dist in build_all(slugs=args or None):
            print(f"assignment: hand out {dist / 'student'}, grade with {next((dist / 'autograder').glob('*.zip'))}")
        return 0
    from .assign import OUT, otter

    if len(args) < 2:
        print("usage: python -m coursework grade SLUG SUBMISSION.ipynb ...")
        return 2
    slug, submissions = args[0], [Path(a).resolve() for a in args[1:]]
    zips = sorted((OUT / slug / "dist" / "autograder").glob("*.zip"))
    if not zips:
        print(f"no autograder for {slug}: run `python -m coursework assign {slug}` first")
        return 2
    for sub in submissions:
        out = OUT / slug / "graded" / sub.stem
        out.mkdir(parents=True, exist_ok=True)
        otter("run", "-a", zips[-1], "-o", out, sub)
        print(f"results: {out / 'results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
