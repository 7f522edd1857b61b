"""Check an exercise answer without a course set-up: ``check(exercise_id, answer)``.

A reader working through an exercise of the book calls, in any notebook::

    from llmmath.check import check, describe
    describe("matmul-cost-ex-mlp")          # what to compute, and in which form
    check("matmul-cost-ex-mlp", 1.2e12)     # right or wrong, the tolerance, a hint

The expected answers are never stored: each one is a small function that computes it with
llmmath when ``check`` is called. The feedback says right or wrong, the tolerance used and the
section (its label in the book) to revisit, never the expected value. The same function grades the
assignments built by ``python3 dev.py assign`` (otter-grader): every autograder test calls it.

An exercise has one or more *parts*. A one-part exercise takes the answer itself; a several-part
exercise takes a ``dict`` from part name to answer (a missing part is reported as missing). A part
is a number (compared with a relative tolerance; ``rtol=0`` asks for the exact integer) or a
function (called on a few seeded inputs and compared with llmmath's own result on them).

This module is the machinery only. Each chapter's checkable exercises live in
``llmmath/exercises/<slug>.py`` (the chapter notebook's name, hyphens as underscores), a list
``EXERCISES`` of :class:`Exercise`; every module of that package is registered here under its
chapter's slug when ``llmmath`` is imported.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import numbers
import pkgutil
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Part", "Exercise", "Feedback", "EXERCISES", "HAND_GRADED", "SIG3", "exercise_ids", "describe", "check"]


@dataclass(frozen=True)
class Part:
    """One answer of an exercise.

    ``expected`` computes the expected number with llmmath at check time (kind ``"number"``), or,
    for kind ``"function"``, returns ``None`` when the student's function (passed to it) is right
    and a feedback sentence that does not give the answer away when it is wrong.
    """

    name: str
    prompt: str
    expected: Callable[..., Any]
    rtol: float = 0.0
    kind: str = "number"

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"Part name must be a Python identifier, got {self.name!r}")
        if self.kind not in ("number", "function"):
            raise ValueError(f"Part kind must be 'number' or 'function', got {self.kind!r}")
        if not (isinstance(self.rtol, (int, float)) and 0 <= self.rtol < 1):
            raise ValueError(f"Part rtol must be a number in [0, 1), got {self.rtol!r}")


@dataclass(frozen=True)
class Exercise:
    """The checkable form of one exercise of the book: its label, what to submit, where to look."""

    label: str
    section: str  # label of the section that holds what is needed
    section_title: str
    task: str  # the concrete question the parts answer (the chapter's exercise may be more general)
    parts: tuple[Part, ...]
    chapter: str = ""  # the chapter's slug (its notebook's name): set when the exercise is registered
    #: the questions of the exercise that are graded by hand (an explanation, a derivation): the
    #: assignments give each an answer cell and collect it for the instructor; check() never sees them
    written: tuple[str, ...] = ()


@dataclass(frozen=True)
class Feedback:
    """The verdict of :func:`check`: ``correct`` for the whole exercise, one line per part."""

    exercise_id: str
    correct: bool
    parts: tuple[tuple[str, bool, str], ...]  # (part name, correct, message)
    hint: str

    @property
    def message(self) -> str:
        head = f"{self.exercise_id}: " + ("all correct." if self.correct else "not yet right.")
        lines = [head, *(f"  {msg}" for _, _, msg in self.parts)]
        if not self.correct:
            lines.append(f"  Hint: {self.hint}")
        return "\n".join(lines)

    def part_correct(self, name: str) -> bool:
        """Whether the part ``name`` is right (``KeyError`` for an unknown part)."""
        for part, ok, _ in self.parts:
            if part == name:
                return ok
        raise KeyError(f"{self.exercise_id} has no part {name!r}; parts: {[p for p, _, _ in self.parts]}")

    def __bool__(self) -> bool:
        return self.correct

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return self.message


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) or (
        isinstance(value, np.ndarray) and value.shape == () and np.issubdtype(value.dtype, np.number)
    )


#: The relative tolerance of an answer given to three significant figures: rounding to three
#: figures moves a number by at most half a unit of the third, 0.5% of it (at 1.00). Parts whose
#: prompt asks for three significant figures use it; a student who computes with a data sheet's
#: rounded figure (989 TFLOP/s for 989.4) stays well inside it.
SIG3 = 5e-3


def _tolerance_text(rtol: float) -> str:
    if rtol == 0:
        return "exact integer required"
    if rtol == SIG3:
        return "3 significant figures: relative tolerance 0.005"
    return f"relative tolerance {rtol:g}"


def _check_number(part: Part, answer: Any) -> tuple[bool, str]:
    tol = _tolerance_text(part.rtol)
    if answer is None or answer is Ellipsis:
        return False, f"{part.name}: no answer given ({part.prompt}; {tol})."
    if not _is_number(answer):
        return False, f"{part.name}: expected a number, got {type(answer).__name__} ({tol})."
    expected = part.expected()
    value = float(answer)
    if not math.isfinite(value):
        return False, f"{part.name}: the answer is not finite ({tol})."
    if part.rtol == 0:  # exact: compare as integers (a float above 2**53 would lose digits)
        exact = int(answer) if isinstance(answer, numbers.Integral) else (int(value) if value.is_integer() else None)
        ok = exact is not None and float(expected).is_integer() and exact == int(expected)
    else:
        ok = math.isclose(value, float(expected), rel_tol=part.rtol, abs_tol=0.0)
    return ok, (f"{part.name} is right ({tol})." if ok else f"{part.name} is wrong ({tol}).")


def _check_function(part: Part, answer: Any) -> tuple[bool, str]:
    if answer is None or answer is Ellipsis:
        return False, f"{part.name}: no function given ({part.prompt})."
    if not callable(answer):
        return False, f"{part.name}: expected a function, got {type(answer).__name__}."
    try:
        problem = part.expected(answer)
    except Exception as exc:  # the student's code raised: report it, it is feedback
        return False, f"{part.name}: calling it raised {type(exc).__name__}: {exc}"
    return (problem is None), (f"{part.name} is right." if problem is None else f"{part.name}: {problem}")


def check(exercise_id: str, answer: Any, part: str | None = None) -> Feedback:
    """Check ``answer`` to the exercise labelled ``exercise_id`` and return a :class:`Feedback`.

    ``answer`` is the value itself for a one-part exercise and a ``dict`` (part name -> value) for
    a several-part one; :func:`describe` lists the parts. Numbers are compared with the relative
    tolerance of each part (``rtol = 0``: the exact integer). The expected values are computed by
    llmmath at call time and never shown. With ``part``, ``answer`` is the value of that one part
    and only it is checked (the autograder grades each part on its own). Raises ``ValueError`` for
    an unknown exercise id or part.
    """
    ex = _exercise(exercise_id)
    if part is not None:
        names = [p.name for p in ex.parts]
        if part not in names:
            raise ValueError(f"part must be one of {names} for {exercise_id}; got {part!r}")
        ex = dataclasses.replace(ex, parts=tuple(p for p in ex.parts if p.name == part))
    if len(ex.parts) == 1 and not isinstance(answer, Mapping):
        answer = {ex.parts[0].name: answer}
    if not isinstance(answer, Mapping):
        names = ", ".join(p.name for p in ex.parts)
        raise TypeError(f"answer to {exercise_id} must be a dict with the keys {names}; got {type(answer).__name__}")
    unknown = set(answer) - {p.name for p in ex.parts}
    if unknown:
        raise ValueError(f"answer to {exercise_id} has unknown parts {sorted(unknown)}; "
                         f"its parts are {[p.name for p in ex.parts]}")
    results = []
    for part in ex.parts:
        checker = _check_number if part.kind == "number" else _check_function
        ok, msg = checker(part, answer.get(part.name))
        results.append((part.name, ok, msg))
    hint = f"revisit section '{ex.section_title}' (label {ex.section}) of chapter {ex.chapter}."
    return Feedback(exercise_id, all(ok for _, ok, _ in results), tuple(results), hint)


def constants(exercise_id: str) -> str:
    """The accelerator figures an exercise's task uses, as ``llmmath.hardware`` stores them (one
    sentence; empty when the task names no accelerator). The expected values are computed with
    exactly these numbers, so a student who uses them meets the tolerance."""
    from .hardware import GPUS

    ex = _exercise(exercise_id)
    task = " ".join([ex.task, *(p.prompt for p in ex.parts)])
    named, rest = [], task
    for key in sorted(GPUS, key=len, reverse=True):  # "H100-PCIe" before "H100"
        pattern = rf"(?<![\w-]){re.escape(key)}(?:s|-80GB|-hours?)?(?![\w-])"
        if re.search(pattern, rest):
            named.append(key)
            rest = re.sub(pattern, " ", rest)
    if not named:
        return ""
    return "Use " + "; ".join(_gpu_constants(key, GPUS[key]) for key in sorted(named, key=task.find)) + "."


def _gpu_constants(key: str, spec: Any) -> str:
    peaks = ", ".join(f"{spec.peak_flops[p] / 1e12:g} TFLOP/s {p.split('_')[0].upper()}"
                      for p in ("bf16_tensor", "fp16_tensor", "fp8_tensor")
                      if p in spec.peak_flops and not (p == "fp16_tensor" and "bf16_tensor" in spec.peak_flops))
    text = f"the {key} (llmmath.GPUS[{key!r}]): dense peak {peaks}"
    if spec.memory_bytes:
        text += f", {spec.memory_bytes / 1e9:g} GB of memory at {spec.memory_bandwidth / 1e12:g} TB/s"
    for what, link in (("scale-up link", spec.scale_up), ("network", spec.scale_out)):
        if link is not None:
            text += f", {what} {link.bandwidth / 1e9:g} GB/s per direction with {link.latency * 1e6:g} us per message"
    return text


def describe(exercise_id: str) -> str:
    """What to compute for ``exercise_id``: the task, the accelerator figures it uses and, per
    part, its name, form and tolerance."""
    ex = _exercise(exercise_id)
    lines = [f"{ex.label}: {ex.task}"]
    if given := constants(exercise_id):
        lines.append(f"  {given}")
    for p in ex.parts:
        form = "a function" if p.kind == "function" else _tolerance_text(p.rtol)
        lines.append(f"  {p.name}: {p.prompt} ({form})")
    if len(ex.parts) > 1:
        lines.append("  Pass a dict {part name: value} to check().")
    for question in ex.written:
        lines.append(f"  (graded by hand, not by check()): {question}")
    return "\n".join(lines)


def exercise_ids(chapter: str | None = None) -> list[str]:
    """Labels of the checkable exercises, of one chapter (slug) or of all."""
    if chapter is not None and not isinstance(chapter, str):
        raise TypeError(f"chapter must be a chapter slug (str) or None, got {chapter!r}")
    return [label for label, ex in EXERCISES.items() if chapter is None or ex.chapter == chapter]


def how_to_check(exercise_id: str) -> str:
    """The line the book, the student notebooks and the browser edition show under a checkable
    exercise (Markdown, code in backticks): the call of :func:`check` and, for several parts, their
    names. Raises ``ValueError`` for an exercise that is not checkable."""
    ex = _exercise(exercise_id)
    line = f'Check your answer: `llmmath.check("{ex.label}", answer)`'
    if len(ex.parts) > 1:
        names = ", ".join(f"`{p.name}`" for p in ex.parts)
        return line + f' with `answer` a dict of the parts {names}; `llmmath.describe("{ex.label}")` says what each is.'
    return line + f'; `llmmath.describe("{ex.label}")` says what to compute.'


def _exercise(exercise_id: str) -> Exercise:
    if not isinstance(exercise_id, str):
        raise TypeError(f"exercise_id must be an exercise label (str), got {exercise_id!r}")
    if exercise_id in HAND_GRADED:
        raise ValueError(f"exercise_id {exercise_id!r} is an exercise graded by hand (chapter "
                         f"{HAND_GRADED[exercise_id]}): it has no number or function to check; compare "
                         "your answer with its worked solution in the book")
    if exercise_id not in EXERCISES:
        import difflib

        close = difflib.get_close_matches(exercise_id, [*EXERCISES, *HAND_GRADED], n=3, cutoff=0.6)
        hint = (f"did you mean {' or '.join(repr(c) for c in close)}?" if close else
                "exercise_ids() lists the checkable exercises, exercise_ids('<chapter>') those of one chapter")
        raise ValueError(f"exercise_id {exercise_id!r} is not an exercise of the book: {hint}")
    return EXERCISES[exercise_id]


def parts_of(compute: Callable[[str], Any]) -> Callable[..., Part]:
    """A factory of number parts whose expected value is ``compute(name)``: one chapter's answers by part name."""
    def part(name: str, prompt: str, rtol: float = 0.0) -> Part:
        return Part(name, prompt, lambda: compute(name), rtol)
    return part


def _registry() -> tuple[dict[str, Exercise], dict[str, str]]:
    """Every chapter's exercises (the modules of :mod:`llmmath.exercises`), by label, chapter set;
    and the labels of the exercises graded by hand, with their chapter."""
    from . import exercises

    registry: dict[str, Exercise] = {}
    by_hand: dict[str, str] = {}
    for info in sorted(pkgutil.iter_modules(exercises.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{exercises.__name__}.{info.name}")
        slug = info.name.replace("_", "-")
        written = dict(getattr(module, "WRITTEN", {}))
        for ex in module.EXERCISES:
            if ex.label in registry:
                raise ValueError(f"exercise label {ex.label!r} is registered twice ({slug} and "
                                 f"{registry[ex.label].chapter})")
            registry[ex.label] = dataclasses.replace(ex, chapter=slug,
                                                     written=ex.written + tuple(written.pop(ex.label, ())))
        STRAY_WRITTEN.update({label: slug for label in written})  # tests/test_check.py reports these
        for label in getattr(module, "HAND_GRADED", ()):
            by_hand[label] = slug
    return registry, by_hand


#: Labels in a module's ``WRITTEN`` that are none of its exercises (a renamed exercise): label -> chapter.
STRAY_WRITTEN: dict[str, str] = {}
#: Every checkable exercise by its label (the sphinx-exercise label in the chapter).
EXERCISES: dict[str, Exercise]
#: The exercises graded by hand (no part to check), label -> chapter: each module's ``HAND_GRADED``.
HAND_GRADED: dict[str, str]
EXERCISES, HAND_GRADED = _registry()
