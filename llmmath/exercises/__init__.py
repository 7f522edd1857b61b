"""The checkable exercises of the book, one module per chapter.

``llmmath/exercises/<slug>.py`` (the chapter notebook's name with hyphens as underscores, for
example ``matmul_cost.py`` for ``chapters/matmul-cost.ipynb``) defines ``EXERCISES``, a list of
:class:`llmmath.check.Exercise` whose labels are the chapter's sphinx-exercise labels.
:mod:`llmmath.check` finds every module here and registers its exercises under the chapter's slug;
a new chapter adds its module and nothing else. Expected values are computed with llmmath when an
answer is checked, never stored.
"""
