"""The Chinese edition's catalogs (locales/zh_CN/): complete where they must be, markup kept,
one Chinese term per glossary term. Fast: they read the .po files, nothing is built.

What needs a build is checked by the build itself (``python3 dev.py book``, also run by
``python3 dev.py test``): the Chinese edition is built with -W, and an untranslated, fuzzy or stale
message of a page of ``complete.txt`` is a warning there (_ext/book_i18n.py); then
``scripts/i18n.py`` compares every page of the two editions (the same glued values, math and links).
"""

from __future__ import annotations

import csv
import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LANG = "zh_CN"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


i18n = _load("i18n_tool", ROOT / "scripts" / "i18n.py")
book_i18n = _load("book_i18n", ROOT / "_ext" / "book_i18n.py")


def _toc_pages() -> set[str]:
    return set(re.findall(r"(?:file|root):\s*(\S+)", (ROOT / "_toc.yml").read_text(encoding="utf-8")))


CATALOGS = i18n.catalogs(LANG)
COMPLETE = i18n.complete_pages(LANG)


# --------------------------------------------------------------------------- the catalogs
def test_catalogs_and_complete_pages_are_pages_of_the_book():
    pages = _toc_pages()
    assert COMPLETE, "locales/zh_CN/complete.txt lists no page"
    assert set(CATALOGS) <= pages, f"catalogs of no page: {sorted(set(CATALOGS) - pages)}"
    assert set(COMPLETE) <= set(CATALOGS), \
        f"complete pages without a catalog: {sorted(set(COMPLETE) - set(CATALOGS))}"


@pytest.mark.parametrize("docname", COMPLETE)
def test_complete_page_has_no_untranslated_or_fuzzy_message(docname):
    catalog = i18n.load(CATALOGS[docname])
    assert not catalog.fuzzy, f"{docname}: the catalog's header is fuzzy"
    bad = [f"{'fuzzy' if m.fuzzy else 'untranslated'}: {m.id[:80]!r}" for m in catalog
           if m.id and (m.fuzzy or not m.string)]
    assert not bad, f"{docname} (python3 dev.py i18n todo {docname}):\n" + "\n".join(bad)


@pytest.mark.parametrize("docname", sorted(CATALOGS))
def test_translations_keep_markup_and_terminology(docname):
    """Every translated message keeps the glue roles (key and format), math, citations,
    cross-reference targets and code of its English, and translates each glossary term of
    terminology.csv by its Chinese term."""
    problems = i18n.catalog_problems(docname, CATALOGS[docname], LANG)
    assert not problems, "\n".join(problems)


def test_terminology_covers_the_glossary():
    """Every term of chapters/glossary.md has one Chinese term, and no English term has two."""
    with open(ROOT / "locales" / LANG / "terminology.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    english = [r["english"].strip() for r in rows]
    assert len(english) == len(set(english)), "an English term is listed twice"
    assert all(r["chinese"].strip() for r in rows), "an English term without its Chinese term"
    glossary = (ROOT / "chapters" / "glossary.md").read_text(encoding="utf-8")
    block = glossary.split("```{glossary}", 1)[1].split("```", 1)[0]
    terms = {line.strip() for line in block.splitlines() if line.strip() and not line.startswith(" ")}
    missing = sorted(terms - set(english))
    assert not missing, f"glossary terms missing from terminology.csv: {missing}"


# --------------------------------------------------------------------------- the checkers
def test_markup_check_catches_what_a_translation_must_keep():
    msgid = ("Llama has {glue:text}`n-params:,d` parameters ($N$, {cite:p}`a2020,b2021`); see "
             "{ref}`sec-x`, {term}`activations <activation>` and `param_count`.")
    good = ("Llama 有 {glue:text}`n-params:,d` 个参数（$N$，{cite:p}`b2021,a2020`）；见 {ref}`第 x 节 "
            "<sec-x>`、{term}`激活值 <Activation>` 和 `param_count`。")
    assert i18n.markup_problems(msgid, good) == []
    for wrong, lost in [
        (good.replace(":,d`", ":.2f`"), "glue:text"),  # another format: another number shown
        (good.replace("{glue:text}`n-params:,d`", "8,030,261,248"), "glue:text"),  # hand-typed
        (good.replace("$N$", "N"), "math"),
        (good.replace("a2020", "a2021"), "cite:p"),
        (good.replace("<sec-x>", "<sec-y>"), "ref"),
        (good.replace("<Activation>", "<activations>"), "term"),
        (good.replace("`param_count`", "param_count"), "code"),
    ]:
        problems = i18n.markup_problems(msgid, wrong)
        assert any(p.startswith("lost") and lost in p for p in problems), (wrong, problems)


def test_tex_in_a_literal_is_no_role():
    """``M_{i-1}`` followed by the literal's closing backticks is TeX, not a MyST role: read as one,
    it paired the wrong backticks and asked a translation to repeat English prose as "code" (the
    API page's backward-FLOPs docstrings), and a role right after Chinese text was still a role."""
    msgid = ("Backward matmul FLOPs: ``sum_{i=1}^L 2 B M_{i-1} M_i`` (weight gradients) plus "
             "``sum_{i=2}^L 2 B M_i M_{i-1}`` (activation gradients), plus ``2 B M_0 M_1`` if "
             "``input_grad``.")
    good = ("反向矩阵乘法 FLOPs：``sum_{i=1}^L 2 B M_{i-1} M_i`` （权重梯度）加上 "
            "``sum_{i=2}^L 2 B M_i M_{i-1}`` （激活值梯度），带 ``input_grad`` 时再加上 "
            "``2 B M_0 M_1``。")
    assert i18n.markup_problems(msgid, good) == []
    assert i18n.markup("见{ref}`sec-x`") == i18n.markup("see {ref}`sec-x`")


def test_terminology_check():
    terms = [t for t in i18n.terminology(LANG)
             if t.english in ("activation", "activation function", "optimizer state", "token")]
    assert i18n.term_problems("d", "the optimizer states and activations", "优化器状态和激活值", terms, []) == []
    problems = i18n.term_problems("d", "the optimizer states and activations", "优化器的状态和激活", terms, [])
    assert len(problems) == 2, problems
    # the longer term is matched first: "activation function" is not "activation"
    assert i18n.term_problems("d", "an activation function", "一个激活函数", terms, []) == []
    # a term in a {term} role's shown text counts, its target does not
    assert i18n.term_problems("d", "{term}`tokens <token>`", "{term}`token <token>`", terms, []) == []
    assert i18n.term_problems("d", "see {doc}`token`", "见 {doc}`token`", terms, []) == []
    # an allowed exception, and a message kept in English on purpose
    allowed = [{"docname": "d", "english": "activation", "msgid_contains": "early"}]
    assert i18n.term_problems("d", "early activation", "早期激活", terms, allowed) == []
    assert i18n.term_problems("d", "activation", "activation", terms, []) == []


def test_word_less_messages_are_not_messages():
    assert book_i18n.nothing_to_translate("{doc}`matmul-cost`, {doc}`memory` ($C \\approx 6ND$)")
    assert book_i18n.nothing_to_translate("12,288")
    assert not book_i18n.nothing_to_translate("{term}`HBM`")  # a term's shown text is prose
    assert not book_i18n.nothing_to_translate("{doc}`memory` for the bytes of the state")


def _page(glue: list[str], switch: str) -> str:
    spans = "".join(f'<span class="pasted-text">{g}</span> ' for g in glue)
    return (f'<html><body><a data-llmmath-language="x" href="{switch}">switch</a><article>'
            f'<p>{spans}<span class="math">\\(h\\)</span> <a class="reference internal" '
            f'href="memory.html#mem-act">link</a></p></article></body></html>')


def test_edition_comparison_catches_another_glued_value(tmp_path):
    english, chinese = tmp_path / "en", tmp_path / "en" / "zh"
    (english / "chapters").mkdir(parents=True)
    (chinese / "chapters").mkdir(parents=True)
    (english / "chapters" / "a.html").write_text(
        _page(["1,234", "5.6"], "../zh/chapters/a.html").replace('"x"', '"zh_CN"'))
    (chinese / "chapters" / "a.html").write_text(
        _page(["5.6", "1,234"], "../../chapters/a.html").replace('"x"', '"en"'))
    assert i18n.check_editions(english, {"zh_CN": chinese}) == []
    (chinese / "chapters" / "a.html").write_text(
        _page(["5.6", "1,235"], "../../chapters/a.html").replace('"x"', '"en"'))
    problems = i18n.check_editions(english, {"zh_CN": chinese})
    assert any("glue '1,234'" in p and "missing" in p for p in problems), problems
    (chinese / "chapters" / "a.html").write_text(_page(["5.6", "1,234"], "a.html"))
    problems = i18n.check_editions(english, {"zh_CN": chinese})
    assert any("no language switch" in p for p in problems), problems
