"""Coursework tooling for the book: student edition, otter-grader assignments, grading.

    python -m coursework student            book with solutions hidden -> _build/student/html,
                                            student notebooks -> _build/student/notebooks
    python -m coursework student --no-html  ... only the notebooks
    python -m coursework student --allow-warnings   ... do not fail on Sphinx warnings
    python -m coursework assign [SLUG ...]  otter assignments -> _build/assignments/<slug>/
    python -m coursework grade SLUG FILE... grade submitted notebooks with otter (no Docker)
"""
