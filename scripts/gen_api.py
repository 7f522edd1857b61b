"""Write chapters/api.md: every public name of llmmath, grouped by the module (chapter) it lives in.

Run after adding a public name to ``llmmath.__all__``; ``tests/test_api_page.py`` fails when the
page is out of date.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import llmmath  # noqa: E402

TITLES = {
    "llmmath.config": "Models: configurations",
    "llmmath.presets": "Models: published presets",
    "llmmath.matmul": "The cost of a matrix multiply ({doc}`matmul-cost`)",
    "llmmath.chain": "The matrix chain rule ({doc}`matrix-chain-rule`)",
    "llmmath.mlp": "Forward and backward cost ({doc}`forward-backward-cost`)",
    "llmmath.params": "Parameter counts ({doc}`parameter-counts`)",
    "llmmath.flops": "FLOPs and training time ({doc}`transformer-flops`)",
    "llmmath.hardware": "Accelerators ({doc}`transformer-flops`)",
    "llmmath.memory": "Memory ({doc}`memory`)",
    "llmmath.units": "Units of memory ({doc}`memory`)",
    "llmmath.optim": "Optimizers ({doc}`optimizers`)",
    "llmmath.scaling": "Scaling laws ({doc}`scaling-laws`)",
    "llmmath.errata": "Errata ({doc}`errata`)",
    "llmmath.check": "Checking exercise answers",
}

HEAD = """(api)=
# The `llmmath` package

Every formula of the book lives in the package `llmmath`, exactly once; the chapters explain and
call it. Each entry states the formula, its assumptions and the chapter that derives it. Every
name below is importable from the top level, e.g. `from llmmath import matmul_flops`.
The command line `python -m llmmath NAME_OR_CONFIG_JSON` prints a summary of a model.
"""


def module_of(name: str) -> str:
    obj = getattr(llmmath, name)
    mod = getattr(obj, "__module__", None) if (inspect.isfunction(obj) or inspect.isclass(obj)) else None
    if mod is None:  # data: find the submodule that defines it
        for sub in TITLES:
            m = sys.modules.get(sub)
            if m is not None and name in vars(m) and vars(m)[name] is obj:
                return sub
        return "llmmath"
    return mod


def render() -> str:
    groups: dict[str, list[str]] = {}
    for name in llmmath.__all__:
        groups.setdefault(module_of(name), []).append(name)
    order = [m for m in TITLES if m in groups] + sorted(set(groups) - set(TITLES))
    parts = [HEAD]
    for mod in order:
        parts.append(f"\n## {TITLES.get(mod, mod)}\n\n```{{eval-rst}}\n.. currentmodule:: llmmath\n")
        for name in groups[mod]:
            obj = getattr(llmmath, name)
            if inspect.isclass(obj):
                directive = "autoclass"
                extra = "   :members:\n"
            elif callable(obj):
                directive, extra = "autofunction", ""
            else:  # data: document it where its ``#:`` comment is
                parts.append(f"\n.. autodata:: {mod}.{name}\n   :no-value:\n")
                continue
            parts.append(f"\n.. {directive}:: {name}\n{extra}")
        parts.append("```\n")
    return "".join(parts)


if __name__ == "__main__":
    (ROOT / "chapters" / "api.md").write_text(render(), encoding="utf-8")
    print("wrote chapters/api.md")
