"""Under every checkable exercise, the line that says how to check an answer.

For each sphinx-exercise ``exercise`` whose label is registered in :mod:`llmmath.check` (the
modules of ``llmmath/exercises/``), this extension appends to the exercise's body the line of
:func:`llmmath.check.how_to_check`, e.g. "Check your answer: ``llmmath.check("matmul-cost-ex-mlp",
answer)``." (for several parts, their names), so the page shows each exercise's check id without
the chapter typing it. The student and browser notebooks get the same line from
``coursework/markdown.py``.
"""

from __future__ import annotations

import sys

from docutils import nodes
from sphinx.application import Sphinx


def _paragraph(markdown: str) -> nodes.paragraph:
    """``markdown`` (plain text with code in single backticks) as a docutils paragraph."""
    para = nodes.paragraph(classes=["llmmath-check"])
    for i, piece in enumerate(markdown.split("`")):
        if piece:
            para += nodes.literal(piece, piece) if i % 2 else nodes.Text(piece)
    return para


def _add_check_lines(app: Sphinx, doctree: nodes.document) -> None:
    from sphinx_exercise.nodes import exercise_enumerable_node, exercise_node

    from llmmath.check import EXERCISES, how_to_check

    for node in doctree.findall(lambda n: isinstance(n, (exercise_node, exercise_enumerable_node))):
        label = node.get("label", "")
        if label not in EXERCISES:
            continue
        body = next((c for c in node.children if isinstance(c, nodes.section)), node)
        body += _paragraph(how_to_check(label))
        # an incremental build reads the page again when its exercises or the wording change
        module = sys.modules[f"llmmath.exercises.{EXERCISES[label].chapter.replace('-', '_')}"]
        for path in (module.__file__, sys.modules["llmmath.check"].__file__):
            app.env.note_dependency(path)


def setup(app: Sphinx) -> dict[str, object]:
    app.connect("doctree-read", _add_check_lines)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
