"""Coursework tooling for the book: student edition, otter-grader assignments, grading.

    python -m coursework student            book with solutions hidden -> _build/student/html,
                                            student notebooks -> _build/student/notebooks
    python -m coursework student --no-html  ... only the notebooks
    python -m coursework student --allow-warnings   ... do not fail on Sphinx warnings
    python -m coursework assign [SLUG ...]  otter assignments -> _build/assignments/<slug>/
                                            (fails on a wrong reference answer or an answer leak)
    python -m coursework grade SLUG SUBMISSION_OR_FOLDER ... [--roster CSV] [--out DIR] [--force]
                                            [--timeout S] [--memory GB] [--docker]
                                            grade, each submission sandboxed -> grading/<slug>/
                                            (results per student, hand-graded answers, gradebook.csv)
    python -m coursework gradebook SLUG     rebuild grading/<slug>/gradebook.csv (after hand grading)
"""
