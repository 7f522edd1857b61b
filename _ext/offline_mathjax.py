"""Serve MathJax 3 from the built book instead of a CDN, so math typesets offline.

The copy comes from the PyPI package ``django-static-mathjax`` (MathJax 3.2.2's ``es5`` files, no
Django needed at run time). With ``offline_mathjax: true`` (the default) this extension points
``mathjax_path`` at ``_static/mathjax/tex-mml-chtml.js`` and copies the files that page needs
(the bundle, its fonts and the components it may load on demand) into the HTML output. Set
``offline_mathjax: false`` under ``sphinx: config:`` in ``_config.yml`` to load MathJax from
Sphinx's default CDN instead.
"""

from __future__ import annotations

import shutil
from importlib.resources import files
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import ExtensionError

BUNDLE = "tex-mml-chtml.js"
# What the bundle may load at run time: TeX extensions (autoload, \require), the CommonHTML
# fonts, the contextual menu and its accessibility components.
PARTS = ("input/tex/extensions", "output/chtml", "ui", "a11y", "adaptors", "sre")


def mathjax_source() -> Path:
    """The ``es5`` directory of the installed MathJax 3 copy; ExtensionError if it is missing."""
    try:
        root = Path(str(files("mathjax"))) / "static" / "mathjax" / "es5"
    except ModuleNotFoundError as err:
        raise ExtensionError("offline_mathjax: install django-static-mathjax (see requirements.txt)"
                             " or set offline_mathjax: false") from err
    if not (root / BUNDLE).is_file():
        raise ExtensionError(f"offline_mathjax: {root / BUNDLE} not found; the installed 'mathjax'"
                             " package is not django-static-mathjax")
    return root


def _configure(app: Sphinx, config: Config) -> None:
    if config.offline_mathjax:
        mathjax_source()  # fail early, before any page is written
        config.mathjax_path = f"mathjax/{BUNDLE}"


def _copy(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or not app.config.offline_mathjax or app.builder.format != "html":
        return
    source, target = mathjax_source(), Path(app.outdir) / "_static" / "mathjax"
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source / BUNDLE, target / BUNDLE)
    shutil.copy2(source.parent / "LICENSE", target / "LICENSE")  # Apache-2.0
    for part in PARTS:
        shutil.copytree(source / part, target / part, dirs_exist_ok=True)


def setup(app: Sphinx) -> dict[str, object]:
    app.add_config_value("offline_mathjax", True, "html", types=[bool])
    app.connect("config-inited", _configure)
    app.connect("build-finished", _copy)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
