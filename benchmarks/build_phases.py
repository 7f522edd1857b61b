"""Run ``jupyter-book build`` and print the CPU seconds of each phase of the Sphinx build.

    .venv/bin/python benchmarks/build_phases.py [jupyter-book build arguments]

(default: ``. -W -n --keep-going``, a clean build: ``_build`` is removed first). The phases:
start (imports, configuration, extensions), reading the sources (notebooks and Markdown),
resolving (consistency checks, references), writing the HTML pages, the search index and the
``build-finished`` handlers (the JupyterLite edition, MathJax's copy, ...), each handler timed on
its own. CPU seconds are user + system of this process and its ended children; the bench
(``benchmarks/run.py``) prints them.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cpu() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


PHASES: dict[str, float] = {}
_mark = [0.0]  # from the process start


def _lap(name: str) -> None:
    now = cpu()
    PHASES[name] = PHASES.get(name, 0.0) + now - _mark[0]
    _mark[0] = now


def _instrument() -> None:
    """Time Sphinx's phases through its events and wrap each build-finished handler."""
    from sphinx.application import Sphinx
    from sphinx.builders.html import StandaloneHTMLBuilder as Builder

    init = Sphinx.__init__

    def patched_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        _lap("start (Python, imports, config, extensions)")
        self.connect("env-before-read-docs", lambda *a: _lap("start (Python, imports, config, extensions)"), priority=0)
        self.connect("env-updated", lambda *a: _lap("read sources"), priority=0)
        self.connect("env-check-consistency", lambda *a: _lap("resolve"), priority=999)
        listeners = self.events.listeners.get("build-finished", [])
        for i, listener in enumerate(listeners):  # EventListener(id, handler, priority)
            handler = listener.handler
            name = f"{getattr(handler, '__module__', '?')}.{getattr(handler, '__name__', '?')}"

            def timed(app, exc, _handler=handler, _name=name):
                _lap("other")
                try:
                    return _handler(app, exc)
                finally:
                    _lap(f"build-finished: {_name}")

            listeners[i] = listener._replace(handler=timed)

    Sphinx.__init__ = patched_init
    finish = Builder.finish

    def patched_finish(self):
        _lap("write (pages)")
        finish(self)
        _lap("finish (search index, static files, images)")

    Builder.finish = patched_finish


def main(argv: list[str]) -> int:
    args = argv or [".", "-W", "-n", "--keep-going"]
    if not argv:
        shutil.rmtree(ROOT / "_build", ignore_errors=True)
    os.chdir(ROOT)
    _instrument()
    from jupyter_book.cli.main import main as jb

    t0 = time.perf_counter()
    try:
        jb(["build", *args], standalone_mode=False)
        code = 0
    except SystemExit as err:
        code = err.code or 0
    _lap("end")
    total = sum(PHASES.values())
    report = {"phases": PHASES, "cpu": total, "wall": time.perf_counter() - t0, "exit": code}
    if os.environ.get("LLMMATH_PHASES_JSON"):
        Path(os.environ["LLMMATH_PHASES_JSON"]).write_text(json.dumps(report, indent=1))
    for name, seconds in PHASES.items():
        print(f"  {name:<60} {seconds:6.1f} s CPU", file=sys.stderr)
    print(f"  {'total':<60} {total:6.1f} s CPU, {report['wall']:.1f} s wall", file=sys.stderr)
    return int(code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
