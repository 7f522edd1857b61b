"""Let Python's cyclic garbage collector run less often during a book build.

A Sphinx build keeps a large heap (the environment, every extension's modules) and allocates
millions of docutils nodes, which are cyclic (each node points at its parent). With Python's
default thresholds (700, 10, 10) the collector ran so often over that heap that it took about
half of the build's CPU time: unpickling a page's doctree (Sphinx does it once per ``numref``
and once per solution title) cost ten times more inside the build than alone. With the first
threshold at 50,000 allocations the build does the same work in about 12 s of CPU instead of
22 s (``benchmarks/build_phases.py``), for about 30 MB more memory at its peak; nothing a page
shows changes. ``GC_THRESHOLD`` is also what ``dev.py`` gives the test run's processes (the
``LLMMATH_GC_THRESHOLD`` variable: pytest's workers, the notebooks' kernels, the spawned ranks).
"""

from __future__ import annotations

import gc

from sphinx.application import Sphinx

GC_THRESHOLD = (50_000, 20, 10)


def setup(app: Sphinx) -> dict[str, object]:
    if gc.get_threshold()[0] < GC_THRESHOLD[0]:
        gc.set_threshold(*GC_THRESHOLD)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
