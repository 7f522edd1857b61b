"""Find the exercises and solutions of the chapter notebooks (sphinx-exercise directives).

Two forms are recognised, both documented by sphinx-exercise:

* a fenced ``{exercise}`` / ``{solution} <label>`` pair in a markdown cell (the solution may hold
  code in a ``python`` fence);
* a gated solution: `` ```{solution-start} <label> `` in one markdown cell, code and markdown
  cells after it, and `` ```{solution-end} `` in a later markdown cell.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parent.parent

# ``:::{exercise}`` ... ``:::`` or ```` ```{exercise} ```` ... the same fence, at the start of a line
_FENCED = re.compile(
    r"^(?P<fence>:{3,}|`{3,})\{(?P<kind>exercise|solution)\}[ \t]*(?P<arg>[^\n]*)\n(?P<body>.*?)^(?P=fence)[ \t]*$\n?",
    re.M | re.S,
)
_GATE = re.compile(
    r"^(?P<fence>:{3,}|`{3,})\{(?P<kind>solution-start|solution-end|exercise-start|exercise-end)\}"
    r"[ \t]*(?P<arg>[^\n]*)\n(?P<body>.*?)^(?P=fence)[ \t]*$\n?",
    re.M | re.S,
)
_LABEL = re.compile(r"^:label:[ \t]*(\S+)", re.M)
_CODE = re.compile(r"^(`{3,})(?:python|ipython3?|\{code-cell\}[^\n]*)[ \t]*\n(.*?)^\1[ \t]*$", re.M | re.S)


@dataclass(frozen=True)
class Directive:
    """One exercise or solution directive found in a notebook, in reading order."""

    kind: str  # "exercise" | "solution" (a gated solution counts as one "solution")
    label: str  # the exercise's label (for a solution: the label it solves)
    cell: int  # index of the markdown cell where it starts
    start: int  # character offsets of the directive in that cell's source
    end: int
    end_cell: int  # index of the cell where it ends (== cell unless gated)
    end_offset: int  # character offset in end_cell just past the closing directive
    text: str  # markdown text of the directive (for a gated solution: all markdown inside)
    code: tuple[str, ...]  # code inside it: python fences, and code cells of a gated solution
    gated: bool = False


def chapter_notebooks(root: Path = ROOT, numbered_only: bool = False) -> list[Path]:
    """The ``.ipynb`` files listed in ``_toc.yml``, in book order.

    With ``numbered_only``, only those of numbered parts: the chapters proper (not the preface, the
    appendices, or a chapter's sub-pages listed under its ``sections``, such as its reference page).
    """
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files: list[str] = []

    def walk(node: object, numbered: bool) -> None:
        if isinstance(node, dict):
            numbered = bool(node.get("numbered", numbered))
            if "file" in node and (numbered or not numbered_only):
                files.append(node["file"])
            for key, value in node.items():
                if key in ("parts", "chapters") or (key == "sections" and not numbered_only):
                    walk(value, numbered)
        elif isinstance(node, list):
            for item in node:
                walk(item, numbered)

    walk(toc, bool(toc.get("numbered", False)))
    paths = [root / (f if f.endswith(".ipynb") else f + ".ipynb") for f in files]
    return [p for p in paths if p.exists()]


def directives(nb: nbformat.NotebookNode) -> list[Directive]:
    """Every exercise and solution directive of ``nb`` in reading order."""
    found: list[Directive] = []
    open_gate: dict | None = None
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            if open_gate is not None and cell.cell_type == "code":
                open_gate["code"].append(cell.source)
            continue
        src = cell.source
        events = [(m.start(), m.end(), m.group("kind"), m) for m in _FENCED.finditer(src)]
        events += [(m.start(), m.end(), m.group("kind"), m) for m in _GATE.finditer(src)]
        events.sort(key=lambda e: e[0])
        pos = 0
        for start, end, kind, m in events:
            if open_gate is not None:
                open_gate["text"].append(src[pos:start])
            if kind in ("exercise", "exercise-start"):
                label = _LABEL.search(m.group("body"))
                found.append(Directive("exercise", label.group(1) if label else "", i, start, end, i, end,
                                       m.group("body"), ()))
            elif kind == "solution":
                body = m.group("body")
                found.append(Directive("solution", m.group("arg").strip(), i, start, end, i, end, body,
                                       tuple(c.group(2) for c in _CODE.finditer(body))))
            elif kind == "solution-start":
                open_gate = {"label": m.group("arg").strip(), "cell": i, "start": start, "text": [], "code": []}
            elif kind == "solution-end" and open_gate is not None:
                text = "".join(open_gate["text"])
                code = [c.group(2) for c in _CODE.finditer(text)] + open_gate["code"]
                found.append(Directive("solution", open_gate["label"], open_gate["cell"], open_gate["start"],
                                       len(nb.cells[open_gate["cell"]].source), i, end, text, tuple(code),
                                       gated=True))
                open_gate = None
            pos = end
        if open_gate is not None:
            open_gate["text"].append(src[pos:] + "\n")
    return found


def exercise_pairs(nb: nbformat.NotebookNode) -> list[tuple[Directive, Directive | None]]:
    """Each exercise with the solution that immediately follows it (``None`` if it does not)."""
    ds = directives(nb)
    pairs = []
    for k, d in enumerate(ds):
        if d.kind == "exercise":
            nxt = ds[k + 1] if k + 1 < len(ds) else None
            ok = nxt is not None and nxt.kind == "solution" and nxt.label == d.label
            pairs.append((d, nxt if ok else None))
    return pairs


def exercise_text(d: Directive) -> str:
    """The exercise's statement without its option lines (``:label:``, ``:class:`` ...)."""
    return "\n".join(line for line in d.text.splitlines() if not re.match(r"^:\w[\w-]*:", line)).strip()


def read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)
