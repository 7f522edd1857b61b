"""The two pieces of the book's otter-grader assignments that run where the student's code runs.

``python3 dev.py assign`` (the ``coursework`` package, not installed with llmmath) builds the
assignments; what runs later, in the student's Jupyter and in the grader (local, or Gradescope's
autograder, which installs llmmath from the wheel in its zip), is here:

* :func:`check_part`, the body of every autograder test: it checks one part with
  :func:`llmmath.check.check` and fails with a message a student can act on: the part is wrong,
  missing, or *its answer cell raised* (``NameError: ...``), never the expected value and never
  otter's "Error at line 18 ... assert" (see :func:`_plain_otter_messages`);
* :func:`notebook_path`, used by the notebook's first cell, which finds the notebook's own file (the
  autograder tests are stored in its metadata) even after the student renamed it.
"""

from __future__ import annotations

import functools
import json
import linecache
import os
import re
import sys
from pathlib import Path
from typing import Any

from .check import check

__all__ = ["WrongAnswer", "check_part", "notebook_path"]


class WrongAnswer(AssertionError):
    """A part of an answer is wrong or missing; the message says which and why, never the answer."""


def check_part(exercise_id: str, part: str, env: dict[str, Any]) -> None:
    """Check the value the student assigned to ``part`` (a name in ``env``, the notebook's global
    namespace); raise :class:`WrongAnswer` with the feedback when it is not right."""
    _plain_otter_messages()
    value = env.get(part, None)
    if value is None or value is Ellipsis:
        raised = _answer_cell_error(part)
        if raised is not None:
            raise WrongAnswer(f"{part}: your answer cell raised {raised}; fix it and run it again.")
    feedback = check(exercise_id, value, part=part)
    if not feedback.correct:
        raise WrongAnswer(feedback.message)


def _answer_cell_error(name: str) -> str | None:
    """``"NameError: ..."`` when the last cell that raised in this IPython kernel assigns ``name``."""
    error, trace = getattr(sys, "last_value", None), getattr(sys, "last_traceback", None)
    if error is None or trace is None:
        return None
    assigns = re.compile(rf"^\s*(?:[\w\s,]*,\s*)?{re.escape(name)}\s*(?:,[\w\s,]*)?=(?!=)", re.M)
    while trace is not None:
        source = "".join(linecache.getlines(trace.tb_frame.f_code.co_filename))
        if source and assigns.search(source):
            return f"{type(error).__name__}: {error}"
        trace = trace.tb_next
    return None


@functools.cache
def _plain_otter_messages() -> None:
    """Make otter report a :class:`WrongAnswer` as its message alone.

    otter 7 formats a failing exception-based test as "Error at line N in test q:", the test's
    source line and the exception; for a wrong answer the student needs only the feedback. The
    replacement keeps otter's format for every other exception (a broken test is still shown whole).
    """
    try:
        from otter.test_files.exception_test import ExceptionTestFile
    except ImportError:  # not graded by otter: nothing to adjust
        return
    original = ExceptionTestFile._generate_error_message

    def message(self, excp: Exception, context: int = 0) -> str:
        if isinstance(excp, WrongAnswer):
            return str(excp)
        return original(self, excp, context)

    ExceptionTestFile._generate_error_message = message


def notebook_path(assignment: str, folder: str | os.PathLike = ".") -> str | None:
    """The path of the running notebook of ``assignment`` (otter's assignment name), or ``None``.

    Jupyter's kernels know their notebook's path (``JPY_SESSION_NAME``, VS Code's
    ``__vsc_ipynb_file__``); otherwise the notebook of ``folder`` whose metadata is this
    assignment's (the most recently saved, when a student keeps copies): any copy carries the same
    tests, so a renamed notebook still finds them.
    """
    candidates = [os.environ.get("JPY_SESSION_NAME", "")]
    try:
        candidates.append(get_ipython().user_ns.get("__vsc_ipynb_file__", ""))  # type: ignore[name-defined]  # noqa: F821
    except NameError:
        pass
    for path in candidates:
        if path and path.endswith(".ipynb") and _is_assignment(Path(path), assignment):
            return str(path)
    found = sorted((p for p in Path(folder).glob("*.ipynb") if _is_assignment(p, assignment)),
                   key=lambda p: p.stat().st_mtime, reverse=True)
    return str(found[0]) if found else None


def _is_assignment(path: Path, assignment: str) -> bool:
    try:
        meta = json.loads(path.read_text(encoding="utf-8")).get("metadata", {})
    except (OSError, ValueError):
        return False
    return meta.get("otter", {}).get("assignment_name") == assignment
