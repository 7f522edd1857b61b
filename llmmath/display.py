"""Tables for the book's notebooks: one Markdown-table renderer instead of one per chapter.

Presentation only, no formula. Integers get thousands separators and columns of numbers are
right-aligned, as the book's style asks for tables of model numbers.

Used by the chapter notebooks only (``from llmmath.display import show_table``): no module of
the formula sheet imports it and its names are not part of ``llmmath``'s top level. It stays a
module of the package, rather than of the book's tooling, because the notebooks import it in
every edition (locally, in the student notebooks and in JupyterLite, where only the ``llmmath``
wheel is installed).
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Sequence
from typing import Any

__all__ = ["markdown_table", "show_table"]

#: A cell that reads as a number: optional sign, digits with separators, exponent, percent.
NUMBER = re.compile(r"[-+−]?[\d,.]*\d[\d,.]*([eE][+-]?\d+)?\s?%?")
#: Cells that stand for "no value" and do not decide a column's alignment.
PLACEHOLDERS = ("", "-", "—")
_ALIGN = {"l": ":--", "r": "--:", "c": ":-:"}


def _text(cell: Any) -> str:
    if isinstance(cell, numbers.Integral) and not isinstance(cell, bool):
        return f"{cell:,}"
    return str(cell)


def _is_number(cell: Any) -> bool:
    if isinstance(cell, numbers.Number) and not isinstance(cell, bool):
        return True
    return NUMBER.fullmatch(str(cell).strip().strip("*")) is not None


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]], align: str | None = None) -> str:
    """A Markdown pipe table of ``rows`` under ``header``.

    ``align`` gives one of ``l``, ``r``, ``c`` per column; by default a column is right-aligned when
    every cell in it is a number (placeholders ``-``, ``—`` and empty cells aside), else left.
    Integers are written with thousands separators; other cells with ``str``.
    """
    n = len(header)
    if any(len(row) != n for row in rows):
        raise ValueError(f"every row must have {n} cells, like header; got lengths {sorted({len(r) for r in rows})}")
    if align is None:
        align = "".join(
            "r" if any(_is_number(r[j]) for r in rows if str(r[j]).strip() not in PLACEHOLDERS)
            and all(str(r[j]).strip() in PLACEHOLDERS or _is_number(r[j]) for r in rows) else "l"
            for j in range(n)
        )
    if len(align) != n or any(a not in _ALIGN for a in align):
        raise ValueError(f"align must have one of l, r, c for each of the {n} columns, got {align!r}")
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(_ALIGN[a] for a in align) + " |"]
    lines += ["| " + " | ".join(_text(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def show_table(header: Sequence[str], rows: Sequence[Sequence[Any]], align: str | None = None) -> None:
    """Display :func:`markdown_table` in a notebook (IPython's ``display``)."""
    from IPython.display import Markdown, display

    display(Markdown(markdown_table(header, rows, align)))
