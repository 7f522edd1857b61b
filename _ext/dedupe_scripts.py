"""Write each inline script of a page once.

sphinx-thebe registers its inline configuration (``const THEBE_JS_URL = ...``) with
``add_js_file(None, body=...)`` after the HTML builder is initialised; Sphinx 7.4 then lists it
twice (once as ``None``, once as ``''``), and the second copy throws "Identifier 'THEBE_JS_URL'
has already been declared" in every page. The browser test (scripts/browser_test.py) fails on
such errors. This extension drops the later copy of any script identical to an earlier one.
"""

from __future__ import annotations

from sphinx.application import Sphinx


def _dedupe(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: object) -> None:
    scripts = context.get("script_files")
    if not isinstance(scripts, list):
        return
    seen, unique = set(), []
    for js in scripts:
        key = (getattr(js, "filename", js) or "", getattr(js, "priority", None),
               tuple(sorted(getattr(js, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            unique.append(js)
    context["script_files"] = unique


def setup(app: Sphinx) -> dict[str, object]:
    app.connect("html-page-context", _dedupe)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
