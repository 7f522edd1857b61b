"""Resolve docstring references to llmmath's submodules against the API page.

The API appendix documents every public name at the top level (``llmmath.param_count``), while
docstrings may name a function by its defining module (``llmmath.params.param_count``) or without
a module (``HF_ACTIVATION_SAVED_TENSORS``). On a missing Python reference this extension retries
with ``llmmath.<last component>``; anything still unresolved is reported as usual.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.application import Sphinx


def _retry(app: Sphinx, env, node, contnode):
    if node.get("refdomain") != "py":
        return None
    target = node.get("reftarget", "")
    name = target.split(".")[-1]
    if not name:
        return None
    domain = env.get_domain("py")
    candidates = [f"llmmath.{name}"] + sorted(
        key for key in domain.objects if key.startswith("llmmath.") and key.endswith(f".{name}")
    )
    for candidate in candidates:
        if candidate == target or candidate not in domain.objects:
            continue
        retry = node.deepcopy()
        retry["reftarget"] = candidate
        try:
            found = domain.resolve_xref(env, node.get("refdoc", ""), app.builder, node["reftype"],
                                        candidate, retry, contnode)
        except nodes.NodeFound:  # pragma: no cover - defensive
            found = None
        if found is not None:
            return found
    return None


def setup(app: Sphinx) -> dict[str, object]:
    app.connect("missing-reference", _retry)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
