"""The API appendix lists every public name of llmmath (regenerate with scripts/gen_api.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import llmmath

ROOT = Path(__file__).resolve().parent.parent


def test_api_page_is_up_to_date():
    spec = importlib.util.spec_from_file_location("gen_api", ROOT / "scripts" / "gen_api.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    page = (ROOT / "chapters" / "api.md").read_text(encoding="utf-8")
    assert page == gen.render(), "chapters/api.md is stale: run python scripts/gen_api.py"


def test_readme_families_table_is_up_to_date():
    spec = importlib.util.spec_from_file_location("gen_api", ROOT / "scripts" / "gen_api.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme == gen.render_readme(readme), "README.md's families table is stale: run python scripts/gen_api.py"
    assert "`deepseek_v3`" in readme and "`gemma3`" in readme


def test_every_public_name_exists():
    missing = [name for name in llmmath.__all__ if not hasattr(llmmath, name)]
    assert not missing


def test_top_level_names_are_unique_and_come_from_their_module():
    assert len(llmmath.__all__) == len(set(llmmath.__all__)), "two modules export the same name"
    for module in llmmath.MODULES:
        for name in module.__all__:
            assert getattr(llmmath, name) is getattr(module, name)
