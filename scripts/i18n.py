#!/usr/bin/env python3
"""The translated editions of the book: build them, and keep their catalogs in step with the English.

Run with the project's environment (``.venv/bin/python scripts/i18n.py ...``, or
``python3 dev.py i18n ...``, which sets the environment up first). Commands:

    book                 the English edition (jupyter-book) and every translated edition, built side
                         by side, each translated edition moved into the English one
                         (``_build/html/zh/``), then the editions compared (``check-editions``)
    build [LANG]         only the translated edition (default zh_CN) into _build/html/<folder>/
    extract              extract every page's messages into _build/gettext/<docname>.pot
    update DOC...        extract, then create or update locales/<LANG>/LC_MESSAGES/<doc>.po for the
                         pages named (docnames such as chapters/memory; --all: every page that has a
                         catalog): new messages come in empty, changed ones fuzzy with the old
                         translation, removed ones go
    status [DOC...]      per page: messages, translated, fuzzy, untranslated (from the catalogs;
                         --extract first also counts messages that the catalog lacks)
    todo DOC             the messages of a page that need work (untranslated or fuzzy, with the
                         previous English of a fuzzy one)
    check [DOC...]       the checks of tests/test_i18n.py on the catalogs: markup kept (glue, math,
                         citations, cross-references, code), terminology, complete pages complete
    check-editions       compare the built editions: same glued values, math, citations and links
                         on every page, and a language switch to the same page both ways
    count                messages per page in the whole book (from the extracted templates)
    pseudo               build the whole book in a pseudo-translation (every message prefixed) into
                         _build/pseudo/html and compare it with the English edition: proves that
                         every page survives translation (a development check, about a minute)

See locales/TRANSLATING.md for the translators' workflow.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "_build"
LOCALES = ROOT / "locales"
POT_DIR = BUILD / "gettext"
DEFAULT = "zh_CN"
# language -> what differs in its edition (the folder inside the English edition's HTML, the title)
EDITIONS = {
    "zh_CN": {"folder": "zh", "title": "llmmath：大语言模型训练中的数学", "author": "llmmath 作者"},
}
ENGLISH_BUILD = ["jupyter-book", "build", ".", "-W", "-n", "--keep-going"]


# --------------------------------------------------------------------------- building
def _sphinx_config() -> dict:
    """The ``sphinx: config:`` of _config.yml (for the options a translated edition follows)."""
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    return (config.get("sphinx") or {}).get("config") or {}


def overrides(language: str) -> dict:
    """Sphinx settings of a translated edition on top of _config.yml."""
    edition, english = EDITIONS[language], _sphinx_config()
    depth = "../" * len(Path(english["llmmath_editions"][language]).parts)
    over = {"language": language, "html_title": edition["title"], "author": edition["author"],
            # the JupyterLite edition is the English one's (built once): link to it
            "llmmath_lite": False,
            "llmmath_i18n_lite": f"{depth}lite/" if english.get("llmmath_lite", True) else ""}
    if english.get("offline_mathjax", True):  # MathJax is copied once, into the English edition
        over.update(offline_mathjax=False,
                    mathjax_path=f"{depth}../_static/mathjax/tex-mml-chtml.js")
    return over


def sphinx_build(outdir: Path, builder: str, confoverrides: dict, *, quiet: bool = True,
                 doctreedir: Path | None = None) -> int:
    """Jupyter Book's Sphinx build of this book (as ``jupyter-book build`` does it), with overrides;
    the doctrees go beside ``outdir`` (``.doctrees``) unless ``doctreedir`` is given."""
    from jupyter_book.sphinx import build_sphinx

    over = {"external_toc_path": (ROOT / "_toc.yml").as_posix(), "latex_individualpages": False,
            "nitpicky": True, **confoverrides}
    result = build_sphinx(ROOT, outdir, noconfig=True, path_config=str(ROOT / "_config.yml"),
                          confoverrides=over, builder=builder, warningiserror=True, keep_going=True,
                          quiet=quiet, doctreedir=doctreedir)
    return result if isinstance(result, int) else 1


def build(language: str = DEFAULT, *, extra: dict | None = None, dest: Path | None = None,
          place: bool = True) -> int:
    """Build the ``language`` edition into ``_build/<folder>/html`` (its own doctrees and myst-nb
    output folder, so it can run beside the English build), then (``place``) move it to ``dest``
    (default ``_build/html/<folder>``)."""
    folder = EDITIONS[language]["folder"]
    work = BUILD / folder
    shutil.rmtree(work, ignore_errors=True)
    t0, c0 = time.perf_counter(), _cpu()
    code = sphinx_build(work / "html", "html", {**overrides(language), **(extra or {})})
    dest = (dest or BUILD / "html" / folder) if place else work / "html"
    if code == 0 and place:
        shutil.rmtree(dest, ignore_errors=True)
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(work / "html", dest)
    print(f"[i18n] {language} edition: {'built into ' + str(dest.relative_to(ROOT)) if code == 0 else 'FAILED'}"
          f" in {time.perf_counter() - t0:.1f} s (CPU {_cpu() - c0:.1f} s)", flush=True)
    return code


def _cpu() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def book(languages: list[str]) -> int:
    """Every edition: the English one with jupyter-book, the translated ones beside it (one process
    each); then the translated ones are placed inside it and the editions compared."""
    t0 = time.perf_counter()
    shutil.rmtree(BUILD / "html", ignore_errors=True)
    bindir = Path(sys.executable).parent
    logs = {lang: tempfile.TemporaryFile("w+") for lang in languages}  # printed after the English
    jobs = {lang: subprocess.Popen([sys.executable, __file__, "build", lang, "--no-place"], cwd=ROOT,
                                   stdout=logs[lang], stderr=subprocess.STDOUT, text=True)
            for lang in languages}
    print("+ " + " ".join(ENGLISH_BUILD) + "  (beside it: " + ", ".join(
        f"scripts/i18n.py build {lang}" for lang in languages) + ")", flush=True)
    english = subprocess.run([str(bindir / ENGLISH_BUILD[0]), *ENGLISH_BUILD[1:]], cwd=ROOT).returncode
    codes = {}
    for lang, job in jobs.items():
        job.wait()
        logs[lang].seek(0)
        print(logs[lang].read(), end="", flush=True)
        logs[lang].close()
        codes[lang] = job.returncode
        folder = EDITIONS[lang]["folder"]
        if job.returncode == 0 and english == 0:
            shutil.rmtree(BUILD / "html" / folder, ignore_errors=True)
            os.replace(BUILD / folder / "html", BUILD / "html" / folder)
    failed = [name for name, code in [("en", english), *codes.items()] if code]
    if failed:
        print(f"[i18n] FAILED: the build of {', '.join(failed)}", flush=True)
        return 1
    problems = check_editions(BUILD / "html",
                              {lang: BUILD / "html" / EDITIONS[lang]["folder"] for lang in languages})
    for line in problems:
        print(f"FAIL: {line}")
    print(f"[i18n] editions {', '.join(['en', *languages])} built and compared in "
          f"{time.perf_counter() - t0:.1f} s (CPU of this process and its children {_cpu():.1f} s); "
          f"{len(problems)} problems", flush=True)
    return 1 if problems else 0


# --------------------------------------------------------------------------- catalogs
def po_path(docname: str, language: str = DEFAULT) -> Path:
    return LOCALES / language / "LC_MESSAGES" / f"{docname}.po"


def catalogs(language: str = DEFAULT) -> dict[str, Path]:
    """docname -> its catalog, for every catalog of ``language``."""
    base = LOCALES / language / "LC_MESSAGES"
    return {p.relative_to(base).with_suffix("").as_posix(): p for p in sorted(base.rglob("*.po"))}


def complete_pages(language: str = DEFAULT) -> list[str]:
    if str(ROOT / "_ext") not in sys.path:
        sys.path.insert(0, str(ROOT / "_ext"))
    from book_i18n import complete_pages as listed

    return listed(ROOT, language)


def load(path: Path):
    from sphinx_intl.catalog import load_po

    return load_po(str(path))


def extract() -> int:
    """Every page's messages into _build/gettext/<docname>.pot (Sphinx's gettext builder)."""
    t0 = time.perf_counter()
    shutil.rmtree(POT_DIR, ignore_errors=True)
    from myst_nb.core.render import base_render_priority

    # myst-nb renders no output for a builder it does not know (gettext): the images of
    # {glue:figure}, whose alt texts are messages, would be missing; render as for HTML
    as_html = [("gettext", mime, rank) for mime, rank in base_render_priority()["html"].items()]
    code = sphinx_build(POT_DIR, "gettext", {"project": "llmmath", "version": "", "release": "",
                                            "llmmath_lite": False,
                                            "nb_mime_priority_overrides": as_html},
                        doctreedir=BUILD / ".doctrees-gettext")  # not the HTML build's
    where = f"extracted into {POT_DIR.relative_to(ROOT)}/" if code == 0 else "NOT extracted (failed)"
    print(f"[i18n] messages {where} in {time.perf_counter() - t0:.1f} s", flush=True)
    if code:
        shutil.rmtree(POT_DIR, ignore_errors=True)
    return code


def _have_pots() -> bool:
    return POT_DIR.is_dir() and any(POT_DIR.rglob("*.pot"))


def _entries(catalog) -> dict[str, tuple[str, bool]]:
    return {m.id: (m.string, m.fuzzy) for m in catalog if m.id}


def update(docnames: list[str], language: str = DEFAULT) -> int:
    """Create or update the catalogs of ``docnames`` from the extracted templates (sphinx-intl's
    merge: new messages empty, changed ones fuzzy with the old translation, removed ones dropped)."""
    from sphinx_intl.catalog import dump_po, update_with_fuzzy

    code = 0
    for docname in docnames:
        pot = POT_DIR / f"{docname}.pot"
        if not pot.is_file():
            print(f"{docname}: no such page (no {pot.relative_to(ROOT)})", file=sys.stderr)
            code = 2
            continue
        path, template = po_path(docname, language), load(pot)
        if path.is_file():
            catalog = load(path)
            before = _entries(catalog)
            update_with_fuzzy(catalog, template)
            state = "updated" if _entries(catalog) != before else "unchanged"
        else:
            catalog, state = template, "created"
        if state != "unchanged":
            dump_po(str(path), _header(catalog, docname, language), width=WIDTH, ignore_obsolete=True)
        stats = counts(catalog)
        print(f"{docname}: {state}; {stats['messages']} messages, {stats['untranslated']} untranslated,"
              f" {stats['fuzzy']} fuzzy")
    return code


WIDTH = 100  # the .po files' line width (babel wraps at spaces: Chinese lines stay whole)


def _header(catalog, docname: str, language: str):
    """The catalog's header as this book writes it (a fuzzy header would count as a fuzzy message)."""
    catalog.locale, catalog.fuzzy = language, False
    catalog.project, catalog.version = "llmmath", ""
    catalog.header_comment = (f"# {language} translation of the llmmath book: {docname}.\n"
                              "# How to translate and check it: locales/TRANSLATING.md.")
    catalog.last_translator = catalog.language_team = "llmmath translators"
    return catalog


def counts(catalog) -> dict[str, int]:
    messages = [m for m in catalog if m.id]
    return {"messages": len(messages), "translated": sum(bool(m.string) and not m.fuzzy for m in messages),
            "fuzzy": sum(m.fuzzy for m in messages), "untranslated": sum(not m.string for m in messages)}


# --------------------------------------------------------------------------- checks of catalogs
ROLE = re.compile(r"(?<![_^])\{([A-Za-z][\w:+-]*)\}`([^`]*)`")  # not TeX such as ``M_{i-1}``
CODE = re.compile(r"(``+|`)(.+?)\1")
MATH = re.compile(r"(?<!\\)\$\$(.+?)(?<!\\)\$\$|(?<![\\$])\$(?!\$)(.+?)(?<!\\)\$")
EXPLICIT = re.compile(r"^(.*?)\s*<([^<>]+)>$", re.S)
XREF_ROLES = {"ref", "numref", "doc", "eq", "term", "any", "download", "py:func", "py:class",
              "py:mod", "py:attr", "py:meth", "py:data", "func", "class", "mod", "attr", "meth",
              "data"}


def markup(message: str) -> Counter:
    """What a translation must keep of ``message``, as a multiset: each glue role (key and format),
    citation (role and keys), cross-reference (role and target: the shown text may be translated),
    other role, inline code and math span."""
    found: Counter = Counter()

    def role(m: re.Match) -> str:
        name, content = m.group(1), m.group(2)
        if name.startswith("cite"):
            found[(name, ",".join(sorted(k.strip() for k in content.split(","))))] += 1
        elif name in XREF_ROLES:
            explicit = EXPLICIT.match(content)
            target = (explicit.group(2) if explicit else content).strip()
            found[(name, " ".join(target.lower().split()) if name == "term" else target)] += 1
        else:  # glue roles and anything else: kept exactly
            found[(name, content)] += 1
        return " "

    rest = ROLE.sub(role, message)

    def code(m: re.Match) -> str:
        found[("code", m.group(2).strip())] += 1
        return " "

    rest = CODE.sub(code, rest)
    for m in MATH.finditer(rest):
        found[("math", " ".join((m.group(1) or m.group(2)).split()))] += 1
    return found


def markup_problems(msgid: str, msgstr: str) -> list[str]:
    source, translation = markup(msgid), markup(msgstr)
    lost, added = source - translation, translation - source
    problems = [f"lost {kind} {value!r}" for (kind, value), n in sorted(lost.items()) for _ in range(n)]
    problems += [f"added {kind} {value!r}" for (kind, value), n in sorted(added.items()) for _ in range(n)]
    return problems


@dataclass(frozen=True)
class Term:
    english: str
    chinese: str
    pattern: re.Pattern


def terminology(language: str = DEFAULT) -> list[Term]:
    """The rows of locales/<language>/terminology.csv, longest English term first."""
    terms = []
    with open(LOCALES / language / "terminology.csv", encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            english = row["english"].strip()
            words = r"[\s-]+".join(re.escape(w) for w in re.split(r"[\s-]+", english))
            plural = r"(?:s|es)?" if english[-1].isalpha() else ""
            flags = 0 if any(c.isupper() for c in english) else re.IGNORECASE
            terms.append(Term(english, row["chinese"].strip(),
                              re.compile(rf"(?<![\w-]){words}{plural}(?![\w-])", flags)))
    return sorted(terms, key=lambda t: -len(t.english))


def prose(message: str) -> str:
    """The words of a message: roles replaced by the text they show when it is prose ({term}),
    dropped otherwise, and code and math dropped."""
    def role(m: re.Match) -> str:
        if m.group(1) != "term":
            return " \0 "
        explicit = EXPLICIT.match(m.group(2))
        return explicit.group(1) if explicit else m.group(2)

    rest = CODE.sub(" \0 ", ROLE.sub(role, message))
    return MATH.sub(" \0 ", rest)


def exceptions(language: str = DEFAULT) -> list[dict[str, str]]:
    path = LOCALES / language / "terminology-exceptions.csv"
    if not path.is_file():
        return []
    with open(path, encoding="utf-8", newline="") as f:
        return [{k: (v or "").strip() for k, v in row.items()} for row in csv.DictReader(f)]


def term_problems(docname: str, msgid: str, msgstr: str, terms: list[Term],
                  allowed: list[dict[str, str]]) -> list[str]:
    """Each glossary term in the English message must appear as its Chinese term in the translation
    (longer terms first: "activation function" is not checked as "activation"). A message kept in
    English on purpose (translated by itself: a name, a table column of English terms) is exempt,
    and so are the (docname, term, part of the message) of terminology-exceptions.csv."""
    if msgstr == msgid:
        return []
    text, problems = prose(msgid), []
    for term in terms:
        if not term.pattern.search(text):
            continue
        text = term.pattern.sub(" \0 ", text)
        if term.chinese.casefold() in msgstr.casefold():
            continue
        if any(a["english"] == term.english and a["docname"] in (docname, "*")
               and a["msgid_contains"] in msgid for a in allowed):
            continue
        problems.append(f"{term.english!r} is not translated as {term.chinese!r}")
    return problems


def catalog_problems(docname: str, path: Path, language: str = DEFAULT,
                     terms: list[Term] | None = None, allowed=None) -> list[str]:
    """Every problem of one catalog: fuzzy or untranslated messages (for a complete page), markup
    lost or added, terminology."""
    terms = terminology(language) if terms is None else terms
    allowed = exceptions(language) if allowed is None else allowed
    complete = docname in complete_pages(language)
    problems = []
    for m in load(path):
        if not m.id:
            continue
        where = f"{docname}: {m.id[:70]!r}"
        if m.fuzzy:
            if complete:
                problems.append(f"{where}: fuzzy (check the translation, then delete the '#, fuzzy' line)")
            continue
        if not m.string:
            if complete:
                problems.append(f"{where}: untranslated")
            continue
        problems += [f"{where}: {p}" for p in markup_problems(m.id, m.string)]
        problems += [f"{where}: {p}" for p in term_problems(docname, m.id, m.string, terms, allowed)]
    return problems


# --------------------------------------------------------------------------- checks of the editions
class _Facts(HTMLParser):
    """What must be the same in two editions of a page: glued values, math, citations and internal
    links of the article; and the language-switch links of the page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.facts: Counter = Counter()
        self.switch: dict[str, str] = {}
        self.redirect = False  # a page that only forwards (index.html)
        self._stack: list[tuple[str, str | None]] = []  # (tag, kind of fact collected inside)
        self._text: list[str] = []
        self._article = 0

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        classes = set(a.get("class", "").split())
        if tag == "article":
            self._article += 1
        if tag == "meta" and a.get("http-equiv", "").lower() == "refresh":
            self.redirect = True
        if tag == "a" and a.get("data-llmmath-language"):
            self.switch[a["data-llmmath-language"]] = a.get("href", "")
        kind = None
        if self._article and tag in ("span", "div"):
            if classes & {"pasted-text", "pasted-inline", "pasted-math"}:
                kind = "glue"
            elif "math" in classes:
                kind = "math"
        if self._article and tag == "a" and "internal" in classes:
            href = a.get("href", "")
            self.facts[("link", href)] += 1
        if tag not in ("br", "img", "input", "meta", "link", "hr"):
            self._stack.append((tag, kind))
            if kind:
                self._text = []

    def handle_endtag(self, tag):
        if tag == "article":
            self._article -= 1
        while self._stack:
            open_tag, kind = self._stack.pop()
            if kind:
                self.facts[(kind, " ".join("".join(self._text).split()))] += 1
            if open_tag == tag:
                break

    def handle_data(self, data):
        if any(kind for _, kind in self._stack):
            self._text.append(data)


def page_facts(path: Path) -> _Facts:
    parser = _Facts()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def _pages(site: Path, editions: set[str]) -> set[str]:
    skip = {"_static", "_sources", "_images", "lite"} | editions
    return {p.relative_to(site).as_posix() for p in site.rglob("*.html")
            if not skip & set(p.relative_to(site).parts[:-1])}


def check_editions(english: Path, editions: dict[str, Path], switch: bool = True) -> list[str]:
    """Every page of each translated edition (``{language: its HTML folder}``) against the English
    page: the same glued values, math and internal links (the targets of cross-references and
    citations) in the article; with ``switch``, a language switch on both pages that leads to the
    other one."""
    problems = []
    for language, edition in editions.items():
        folder = edition.relative_to(english).as_posix() if edition.is_relative_to(english) else ""
        label = f"{folder or edition.name}/"

        translated = _pages(edition, set())
        original = _pages(english, {e["folder"].split("/")[0] for e in EDITIONS.values()})
        if translated != original:
            problems.append(f"{label}: other pages than the English edition's: "
                            f"{sorted(translated ^ original)[:5]}")
        for page in sorted(translated & original):
            en, tr = page_facts(english / page), page_facts(edition / page)
            for (kind, value), _ in sorted((en.facts - tr.facts).items()):
                problems.append(f"{label}{page}: {kind} {value[:60]!r} of the English page is missing")
            for (kind, value), _ in sorted((tr.facts - en.facts).items()):
                problems.append(f"{label}{page}: {kind} {value[:60]!r} is not on the English page")
            if not switch or en.redirect:
                continue
            if en.switch.get(language) != "../" * page.count("/") + f"{folder}/{page}":
                problems.append(f"{page}: no language switch to {folder}/{page} ({en.switch})")
            back = "../" * (page.count("/") + len(Path(folder).parts))
            if tr.switch.get("en") != f"{back}{page}":
                problems.append(f"{label}{page}: no language switch to the English {page} ({tr.switch})")
    return problems


# --------------------------------------------------------------------------- pseudo-translation
PSEUDO_PREFIX = "【译】 "  # a space: reStructuredText inline markup needs one after 】


def pseudo(language: str = DEFAULT) -> int:
    """The whole book in a pseudo-translation: proves every message of every page can be
    translated (every page complete, -W) and keeps its glue, math and links (check_editions)."""
    from sphinx_intl.catalog import dump_po

    if not _have_pots() and extract():
        return 1
    base = BUILD / "pseudo" / "locales"
    shutil.rmtree(BUILD / "pseudo", ignore_errors=True)
    docnames = []
    for pot in sorted(POT_DIR.rglob("*.pot")):
        docname = pot.relative_to(POT_DIR).with_suffix("").as_posix()
        catalog = load(pot)
        for m in catalog:
            if m.id:
                m.string = PSEUDO_PREFIX + m.id
        catalog.fuzzy = False
        dump_po(str(base / language / "LC_MESSAGES" / f"{docname}.po"), catalog)
        docnames.append(docname)
    dest = BUILD / "pseudo" / "html"
    code = build(language, dest=dest, extra={"locale_dirs": [str(base)],
                                             "llmmath_i18n_complete": docnames})
    if code:
        return code
    if not (BUILD / "html" / "index.html").is_file():
        print("[i18n] no English edition in _build/html to compare with (python3 dev.py book)")
        return 1
    problems = check_editions(BUILD / "html", {language: dest}, switch=False)
    for line in problems:
        print(f"FAIL: {line}")
    print(f"[i18n] pseudo-translation of {len(docnames)} pages: {len(problems)} problems")
    return 1 if problems else 0


# --------------------------------------------------------------------------- command line
def _docnames(args_docs: list[str], language: str, every: bool) -> list[str]:
    docs = [d.removesuffix(".ipynb").removesuffix(".md").removesuffix(".po") for d in args_docs]
    return sorted(catalogs(language)) if every or not docs else docs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 2)[2])
    ap.add_argument("command", choices=["book", "build", "extract", "update", "status", "todo", "check",
                                        "check-editions", "count", "pseudo"])
    ap.add_argument("docs", nargs="*", help="docnames (chapters/memory) or, for build, a language")
    ap.add_argument("--lang", default=DEFAULT, choices=sorted(EDITIONS))
    ap.add_argument("--all", action="store_true", help="update: every page that has a catalog")
    ap.add_argument("--extract", action="store_true", help="status: extract the messages first")
    ap.add_argument("--no-extract", action="store_true", help="update: use _build/gettext as it is")
    ap.add_argument("--no-place", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    lang = args.lang
    if args.command == "book":
        return book(sorted(EDITIONS))
    if args.command == "build":
        lang = args.docs[0] if args.docs else lang
        # --no-place: run by `book`, which places it once the English edition exists
        return build(lang, place=not args.no_place)
    if args.command == "extract":
        return extract()
    if args.command == "update":
        if not args.no_extract and extract():
            return 1
        docs = _docnames(args.docs, lang, args.all)
        if not docs:
            ap.error("update: name the pages (e.g. chapters/memory) or give --all")
        return update(docs, lang)
    if args.command == "status":
        return status(_docnames(args.docs, lang, False), lang, args.extract)
    if args.command == "todo":
        return todo(_docnames(args.docs, lang, False), lang)
    if args.command == "check":
        problems = []
        terms, allowed = terminology(lang), exceptions(lang)
        for doc in _docnames(args.docs, lang, False):
            problems += catalog_problems(doc, po_path(doc, lang), lang, terms, allowed)
        for line in problems:
            print(line)
        print(f"{len(problems)} problems")
        return 1 if problems else 0
    if args.command == "check-editions":
        problems = check_editions(BUILD / "html", {lang: BUILD / "html" / EDITIONS[lang]["folder"]})
        for line in problems:
            print(f"FAIL: {line}")
        print(f"{len(problems)} problems")
        return 1 if problems else 0
    if args.command == "count":
        return count()
    if args.command == "pseudo":
        return pseudo(lang)
    return 2


def status(docnames: list[str], language: str, fresh: bool) -> int:
    if fresh and extract():
        return 1
    complete = set(complete_pages(language))
    print(f"{'page':34} {'messages':>8} {'done':>6} {'fuzzy':>6} {'empty':>6} {'new':>5}  complete?")
    for doc in docnames:
        path = po_path(doc, language)
        stats = counts(load(path)) if path.is_file() else dict.fromkeys(
            ("messages", "translated", "fuzzy", "untranslated"), 0)
        pot = POT_DIR / f"{doc}.pot"
        new = "?"
        if pot.is_file():
            have = {m.id for m in load(path) if m.id} if path.is_file() else set()
            new = str(sum(1 for m in load(pot) if m.id and m.id not in have))
        print(f"{doc:34} {stats['messages']:8} {stats['translated']:6} {stats['fuzzy']:6} "
              f"{stats['untranslated']:6} {new:>5}  {'listed' if doc in complete else '-'}")
    return 0


def todo(docnames: list[str], language: str) -> int:
    for doc in docnames:
        for m in load(po_path(doc, language)):
            if m.id and (m.fuzzy or not m.string):
                print(f"--- {doc}: {'FUZZY' if m.fuzzy else 'UNTRANSLATED'}")
                if m.fuzzy and m.previous_id:
                    print(f"    was: {m.previous_id[0] if isinstance(m.previous_id, list) else m.previous_id}")
                print(f"    msgid: {m.id}")
                if m.string:
                    print(f"    msgstr: {m.string}")
    return 0


def count() -> int:
    """Messages per page in the whole book (run ``extract`` first)."""
    if not _have_pots() and extract():
        return 1
    total_messages = total_words = 0
    print(f"{'page':34} {'messages':>8} {'words':>7}")
    for pot in sorted(POT_DIR.rglob("*.pot")):
        ids = [m.id for m in load(pot) if m.id]
        words = sum(len(re.findall(r"[A-Za-z]+", prose(i))) for i in ids)
        total_messages, total_words = total_messages + len(ids), total_words + words
        print(f"{pot.relative_to(POT_DIR).with_suffix('').as_posix():34} {len(ids):8} {words:7}")
    print(f"{'total':34} {total_messages:8} {total_words:7}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
