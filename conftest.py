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
    _fork_kernels(config)


def _fork_kernels(config) -> None:
    """nbval's kernels are forked from a server that imported torch & co. once (tests/kernel_fork.py).

    The session's first process starts the server (xdist's workers inherit its socket's path);
    every process that runs notebooks gives nbval the kernel command that asks it for a kernel.
    """
    import importlib.util
    import os
    import sys
    from pathlib import Path

    option = config.option
    notebooks = getattr(option, "nbval", False) or getattr(option, "nbval_lax", False)
    current_env = getattr(option, "nbval_current_env", False) or getattr(option, "current_env", False)
    wanted = notebooks and current_env and os.environ.get("LLMMATH_FORK_KERNELS") != "0"
    if not wanted or not sys.platform.startswith("linux"):
        return
    spec = importlib.util.spec_from_file_location("kernel_fork", Path(__file__).parent / "tests" / "kernel_fork.py")
    kernel_fork = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kernel_fork)
    if not hasattr(config, "workerinput") and kernel_fork.SERVER_ENV not in os.environ:
        server = kernel_fork.start_server()
        config.add_cleanup(lambda: kernel_fork.stop_server(server))
    kernel_fork.use_in_nbval()


def pytest_collection_modifyitems(config, items):
    if config.getoption("--slow"):
        return
    import pytest

    skip = pytest.mark.skip(reason="slow: run with --slow (.ci/run does)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
