"""Root pytest configuration: what nbval must not compare.

nbval (strict mode, ``--nbval``) compares every output of every chapter notebook with the output
committed in it. It already skips ``image/png``; here we also skip the PNG copies that myst-nb's
``glue`` stores under its own mimetype (pixels vary with the installed fonts, the numbers do not).
Everything textual is compared, so every number a reader sees is checked.
"""

from __future__ import annotations

collect_ignore_glob = [".venv/*", "_build/*", "benchmarks/*", "scripts/*", ".cache/*", "lite/*"]

try:  # hypothesis draws the same examples on every run: CI never meets a new case by chance
    from hypothesis import settings

    settings.register_profile("llmmath", derandomize=True, database=None)
    settings.load_profile("llmmath")
except ImportError:  # pragma: no cover - hypothesis is a test requirement
    pass

SKIP_MIMETYPES = (
    "application/papermill.record/image/png",
    "application/papermill.record/image/jpeg",
    "image/jpeg",
)


def pytest_collectstart(collector):
    path = getattr(collector, "path", None)
    if path is not None and path.suffix == ".ipynb" and hasattr(collector, "skip_compare"):
        collector.skip_compare = tuple(collector.skip_compare) + SKIP_MIMETYPES
