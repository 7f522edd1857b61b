"""Look each pybtex plugin up once per build.

sphinxcontrib-bibtex asks pybtex for its style and backend plugins at every citation it resolves
(``pybtex.plugin.find_plugin``), and pybtex answers each time by scanning the entry points of
every installed distribution (``importlib.metadata.entry_points``): with this book's 250-odd
citations and the test environment's packages that scan was about 3 s of a 28 s build. The
answer cannot change during a build, so this extension memoises pybtex's lookup once the builder
is initialised (after every extension has registered its runtime plugins). Only a successful
lookup is remembered: a missing plugin still raises ``PluginNotFound`` every time.
"""

from __future__ import annotations

import functools

from sphinx.application import Sphinx


def _memoise(app: Sphinx) -> None:
    import pybtex.plugin

    lookup = pybtex.plugin._load_entry_point
    if not hasattr(lookup, "cache_info"):
        pybtex.plugin._load_entry_point = functools.lru_cache(maxsize=None)(lookup)


def setup(app: Sphinx) -> dict[str, object]:
    app.connect("builder-inited", _memoise)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
