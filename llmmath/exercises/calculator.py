"""Exercises of the chapter ``calculator``.

The chapter "A calculator for your model" (``chapters/calculator.ipynb``) asks for plans and judgements, not for
one number: every exercise is graded by hand (its worked solution is in the book). Registered by
:mod:`llmmath.check` under the chapter's slug, which then says so for these labels.
"""

from __future__ import annotations

EXERCISES: list = []

# The chapter's exercises without a checkable part: graded by hand only.
HAND_GRADED = ("calculator-ex-tie", "calculator-ex-dense", "calculator-ex-seq", "calculator-ex-fp8",
               "calculator-ex-gpus", "calculator-ex-mfu")
