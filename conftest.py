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


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true", default=False,
                     help="also run the tests marked slow (a fresh virtual environment, a hostile submission "
                          "left to time out): .ci/run runs them after the README's test command")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: minutes of work, skipped unless --slow is given (see .ci/run)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--slow"):
        return
    import pytest

    skip = pytest.mark.skip(reason="slow: run with --slow (.ci/run does)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
