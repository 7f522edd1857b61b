"""Open every page of the built book in headless Chromium and check that it works.

Run by ``python3 dev.py test`` after the book is built (``.venv/bin/python scripts/browser_test.py``).
The book is served from ``_build/html`` on 127.0.0.1 (an ephemeral port, stopped at the end) and
opened with Playwright driving Debian's ``/usr/bin/chromium`` (no browser download, ever). Every
request that leaves the local server fails (no host name resolves) and is reported: the book
must read offline.

Failures (exit status 1):
  - a console error, an uncaught page error, a failed request or an HTTP status >= 400;
  - a request to another host (a CDN): the book must work offline;
  - a same-site link whose target file, or whose ``#anchor`` in that file, does not exist;
  - math not typeset (a ``.math`` element without MathJax output, a MathJax error, raw ``$...$``,
    ``\\(...\\)`` or ``\\[...\\]`` left in the visible text);
  - an image that does not load, or a content image whose alt text is empty or just a file name;
  - a glue placeholder or an empty glued value; the glued numbers of ``GLUED`` missing;
  - an exercise without a solution, or a solution dropdown that is not hidden at first and shown
    after a click on its title;
  - the search page returning nothing for ``SEARCH_TERM`` (and in each translated edition of
    ``EDITIONS``, for its term);
  - a page without its language switch (_ext/book_i18n.py) to the same page of the other edition;
  - a code cell that scrolls sideways at the default window size (``VIEWPORT``): chapter code
    lines are at most 88 characters and the book's CSS makes them fit;
  - in the JupyterLite edition (``_build/html/lite``), a chapter of ``LITE_DEFAULT`` (``--lite``)
    that does not run, or a live calculator whose numbers do not follow its control (the
    calculator chapter's): see scripts/lite_test.py (it runs in this browser, after the pages).

Advice (printed, exit status 0 unless ``--strict``): a code block or output wider than the
column, a content image without a caption,
narrower than half of the text column or shrunk below 80 % (its text shrinks with it); a numeric
table cell that is not right-aligned or a large integer without thousands separators; a numbered
chapter whose first two paragraphs ask no question, without a "Summary" section or with fewer
than 6 exercises.

With ``--screenshots`` (``_build/screenshots/``, or a folder named after it) it also saves the
first figure of every page, and the top, a table and an exercise of ``SHOT_PAGES``: look at them
after a change to the book's look. ``python3 dev.py test`` takes none (they cost about 13 s).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import http.server
import json
import os
import re
import shutil
import sys
import threading
import time
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage",
                 # no name resolves but the local server's: a request to a CDN fails at once
                 "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]
SEARCH_TERM, SEARCH_PAGE = "matrix", "chapters/matmul-cost.html"
# Translated editions (scripts/i18n.py builds them into these folders of the English one): a term
# their search must find, on which page. Every page of both editions is checked (html_pages).
EDITIONS = {"zh/": ("激活值", "zh/chapters/glossary.html")}
BUILT_EDITIONS: list[str] = []  # the folders of EDITIONS that the site has (set in main)
# (page, phrase): the paragraph containing the phrase must show a glued value with digits.
GLUED = [("chapters/matmul-cost.html", "by the convention")]
LINK_ONLY = ("a.", "link[canonical]", "link[alternate]", "link[license]", "link[author]")
SHOT_PAGES = ("chapters/preface.html", "chapters/matmul-cost.html")  # more screenshots of these
SKIP_DIRS = {"_static", "_sources", "_images", "_downloads", "lite"}  # lite/: the JupyterLite app
TIMEOUT_MS = 15_000
VIEWPORT = {"width": 1280, "height": 900}  # the default window size the book is checked at
# chapters run in the JupyterLite edition (scripts/lite_test.py): matmul-cost (the bench's), and the
# calculator, whose live calculator gets a control driven
LITE_DEFAULT = ["matmul-cost", "calculator"]
LITE_RESULTS: list[dict] = []


# --------------------------------------------------------------------------- static link check
class _LinkParser(HTMLParser):
    """Collects the ids (and a names) of a page and the links/resources it refers to."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[tuple[str, str]] = []  # (tag.attr, url)
        self.redirect: str | None = None  # the target of a <meta http-equiv="refresh">

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v for k, v in attrs if v is not None}
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "a" and "name" in a:
            self.ids.add(a["name"])
        if tag == "meta" and a.get("http-equiv", "").lower() == "refresh" and "url=" in a.get("content", ""):
            self.redirect = a["content"].split("url=", 1)[1].strip()
            self.links.append(("meta.refresh", self.redirect))
        name = f"link[{a.get('rel', '')}]" if tag == "link" else tag
        for attr in ("href", "src"):
            if attr in a and tag in ("a", "link", "img", "script", "iframe", "source"):
                self.links.append((f"{name}.{attr}", a[attr]))


def _parse(path: Path) -> _LinkParser:
    parser = _LinkParser()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    return parser


def html_pages(site: Path) -> list[str]:
    """Site-relative paths of every HTML page, outside the asset folders."""
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html")
                  if not SKIP_DIRS.intersection(p.relative_to(site).parts[:-1]))


def check_links(site: Path, pages: list[str]) -> tuple[list[str], int, set[str]]:
    """Every same-site href/src must name an existing file and, with #anchor, an existing id.

    Returns the problems, the number of links checked and the pages that only redirect.
    """
    problems, parsed, checked = [], {}, 0

    def parsed_page(rel: str) -> _LinkParser:
        if rel not in parsed:
            parsed[rel] = _parse(site / rel)
        return parsed[rel]

    for page in pages:
        base = f"http://site/{page}"
        for where, url in parsed_page(page).links:
            url = url.strip()
            scheme = urlsplit(url).scheme
            if scheme in ("mailto", "javascript", "data", "tel"):
                continue
            if scheme in ("http", "https") or url.startswith("//"):
                if not where.startswith(LINK_ONLY):  # a resource the page loads, not a link
                    problems.append(f"{page}: {where} loads an external resource {url} (not offline)")
                continue
            target = urlsplit(urljoin(base, url))
            rel = unquote(target.path).lstrip("/")
            file = site / rel
            if file.is_dir():
                file, rel = file / "index.html", f"{rel.rstrip('/')}/index.html".lstrip("/")
            checked += 1
            if not file.is_file():
                problems.append(f"{page}: {where}={url}: no file {rel}")
                continue
            if target.fragment and file.suffix == ".html":
                anchor = unquote(target.fragment)
                if anchor not in parsed_page(rel).ids:
                    problems.append(f"{page}: {where}={url}: no id '{anchor}' in {rel}")
    return problems, checked, {page for page in pages if parsed_page(page).redirect}


# --------------------------------------------------------------------------- local server
class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    """``python3 -m http.server``'s handler (Last-Modified, 304s, no Cache-Control), quiet, counting
    what it serves into ``served`` (requests, 304 answers, bytes of the files sent)."""

    served: dict[str, int] | None = None

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        pass

    def send_response(self, code: int, message: str | None = None) -> None:
        if self.served is not None:
            self.served["requests"] += 1
            self.served["not_modified"] += code == 304
        super().send_response(code, message)

    def copyfile(self, source, outputfile) -> None:  # noqa: ANN001 - stdlib signature
        if self.served is not None:
            self.served["bytes"] += os.fstat(source.fileno()).st_size
        super().copyfile(source, outputfile)


@contextmanager
def serve(site: Path, served: dict[str, int] | None = None):
    """Serve ``site`` on 127.0.0.1 at an ephemeral port; yield the base URL; stop at the end.

    ``served``: a dict whose ``requests``, ``not_modified`` and ``bytes`` count what is served."""
    if served is not None:
        served.update(requests=0, not_modified=0, bytes=0)
    handler = functools.partial(type("Handler", (_QuietHandler,), {"served": served}), directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


# --------------------------------------------------------------------------- in-page checks
# One evaluation per page: returns the facts the checks below need.
PAGE_FACTS_JS = r"""
async () => {
  const article = document.querySelector('main article, article.bd-article, main') || document.body;
  // images: make lazy ones load, then wait for them
  const imgs = Array.from(document.images);
  for (const img of imgs) { img.loading = 'eager'; }
  await Promise.all(imgs.map(img => img.decode().catch(() => null)));
  const colWidth = article.getBoundingClientRect().width;
  const images = imgs.map(img => {
    const fig = img.closest('figure');
    const next = (img.closest('.cell_output, .output, p, div') || img).nextElementSibling;
    return {
      src: img.getAttribute('src') || '', alt: (img.getAttribute('alt') || '').trim(),
      ok: img.complete && img.naturalWidth > 0, content: article.contains(img),
      width: img.getBoundingClientRect().width, natural: img.naturalWidth, col: colWidth,
      caption: !!(fig && fig.querySelector('figcaption')) ||
               !!(next && /^(figure|fig\.)/i.test((next.textContent || '').trim())),
    };
  });
  // math
  const maths = Array.from(article.querySelectorAll('span.math, div.math'));
  const untypeset = maths.filter(m => !m.querySelector('mjx-container') &&
                                      !(m.tagName === 'MJX-CONTAINER')).map(m => m.textContent.slice(0, 80));
  const merrors = Array.from(document.querySelectorAll('mjx-merror, [data-mjx-error]'))
                       .map(e => (e.getAttribute('data-mjx-error') || e.textContent).slice(0, 80));
  const clone = article.cloneNode(true);
  clone.querySelectorAll('pre, code, script, style, textarea, mjx-container, .highlight, .cell_input, ' +
                         'mjx-assistive-mml').forEach(e => e.remove());
  const text = clone.textContent;
  // glue
  const glued = Array.from(article.querySelectorAll('.pasted-text, .pasted-inline'));
  const emptyGlue = glued.filter(g => !g.textContent.trim()).length;
  // exercises and solutions
  const exercises = Array.from(article.querySelectorAll('div.exercise')).map(e => e.id);
  const solutions = Array.from(article.querySelectorAll('div.solution')).map(s => {
    const a = s.querySelector('.admonition-title a[href^="#"]');
    return {id: s.id, target: a ? decodeURIComponent(a.getAttribute('href').slice(1)) : null,
            dropdown: s.classList.contains('dropdown')};
  });
  // tables: numeric cells
  const cells = Array.from(article.querySelectorAll('table td, table th')).map(c => ({
    text: c.textContent.trim(), align: getComputedStyle(c).textAlign,
  })).filter(c => /^[-+−]?[\d,.\s]*\d[\d,.\s]*%?$/.test(c.text));
  // code that scrolls sideways: code cells (their lines are <= 88 characters) and other blocks
  const wide = Array.from(article.querySelectorAll('div.highlight pre'))
    .filter(p => p.scrollWidth > p.clientWidth + 1)
    .map(p => ({cell: !!p.closest('div.cell_input'),
                line: p.textContent.split('\n').reduce((a, b) => (b.length > a.length ? b : a), '')}));
  const switches = Array.from(document.querySelectorAll('a[data-llmmath-language]'))
    .map(a => new URL(a.getAttribute('href'), document.baseURI).pathname);
  const h1 = article.querySelector('h1');
  const h2s = Array.from(article.querySelectorAll('h2')).map(h => h.textContent.replace('#', '').trim());
  const opening = Array.from(article.querySelectorAll('section > p')).slice(0, 2).map(p => p.textContent).join(' ');
  return {text, untypeset, merrors, mathCount: maths.length, images, emptyGlue, gluedCount: glued.length,
          exercises, solutions, cells, wide, switches, h1: h1 ? h1.textContent : '', h2s, opening,
          numbered: !!(h1 && h1.querySelector('.section-number'))};
}
"""

# Raw TeX left in the visible text: \( \) \[ \] anywhere, $$, or $...$ around TeX-looking content.
RAW_TEX = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$|\$[^$\s][^$\n]{0,200}?[\\^_{}][^$\n]{0,200}?\$|\$[A-Za-z]\$")
PLACEHOLDER = re.compile(r"\{glue(:\w+)?\}|glue:text|<glue|\bglue key\b|missing glue|\{eq\}|\{ref\}|\{doc\}")
FILE_NAME_ALT = re.compile(r"(^|/)[\w.-]+\.(png|jpe?g|svg|gif|webp)$", re.I)
BIG_INT = re.compile(r"(?<![\d,.])\d{5,}(?![\d,.]*\d)")


async def check_page(page, url: str, rel: str, shots: Path | None, problems: list[str],
               advice: list[tuple[str, str, str]], stats: dict[str, int]) -> None:
    """Open ``url`` in ``page`` (a Playwright page); append what is wrong to ``problems``
    (messages) and ``advice`` ((page, kind, example) triples).

    The tab may have shown another page before (tabs are reused: a new tab per page cost a fifth
    of the test's CPU): it is emptied first, so nothing that page still loads is reported here,
    and this page's listeners are removed at the end.
    """
    events: list[str] = []
    if page.url != "about:blank":
        await page.goto("about:blank")
    listeners = {
        "console": lambda m: m.type == "error" and _console_error(m, events),
        "pageerror": lambda e: events.append(f"page error: {e}"),
        "requestfailed": lambda r: events.append(f"request failed: {r.url} ({r.failure})"),
        "response": lambda r: r.status >= 400 and events.append(f"HTTP {r.status}: {r.url}"),
    }
    for event, listener in listeners.items():
        page.on(event, listener)
    try:
        await _check_page(page, url, rel, shots, problems, advice, stats, events)
    finally:
        for event, listener in listeners.items():
            page.remove_listener(event, listener)


async def _check_page(page, url: str, rel: str, shots: Path | None, problems: list[str],
                      advice: list[tuple[str, str, str]], stats: dict[str, int], events: list[str]) -> None:
    await page.goto(url, wait_until="load", timeout=TIMEOUT_MS)
    if await page.evaluate("() => !!document.querySelector('script[src*=\"mathjax\"]')"):
        await page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise",
                                     timeout=TIMEOUT_MS)
        await page.evaluate("() => MathJax.startup.promise.then(() => true)")
    facts = await page.evaluate(PAGE_FACTS_JS)
    say = functools.partial(_prefixed, rel)

    problems.extend(say(e) for e in events)
    stats["math"] += facts["mathCount"]
    if facts["mathCount"] and not await page.evaluate("() => !!window.MathJax"):
        problems.append(say("has math but MathJax did not load"))
    problems.extend(say(f"math not typeset: {t!r}") for t in facts["untypeset"][:5])
    problems.extend(say(f"MathJax error: {t!r}") for t in facts["merrors"][:5])
    for m in list(RAW_TEX.finditer(facts["text"]))[:5]:
        ctx = facts["text"][max(0, m.start() - 40):m.end() + 40].replace("\n", " ")
        problems.append(say(f"raw TeX left in the text: ...{ctx}..."))
    for m in list(PLACEHOLDER.finditer(facts["text"]))[:5]:
        ctx = facts["text"][max(0, m.start() - 40):m.end() + 40].replace("\n", " ")
        problems.append(say(f"unrendered role or glue placeholder: ...{ctx}..."))
    if facts["emptyGlue"]:
        problems.append(say(f"{facts['emptyGlue']} glued values are empty"))
    stats["glue"] += facts["gluedCount"]

    for img in facts["images"]:
        stats["images"] += 1
        if not img["ok"]:
            problems.append(say(f"image does not load: {img['src']}"))
        if not img["content"]:
            continue
        if not img["alt"] or FILE_NAME_ALT.search(img["alt"]) or img["alt"] == img["src"]:
            problems.append(say(f"image without alt text (alt={img['alt']!r}): {img['src']}"))
        if not img["caption"]:
            advice.append((rel, "images without a caption", img["src"]))
        if img["ok"] and img["width"] < 0.5 * img["col"] and img["natural"] >= 0.5 * img["col"]:
            advice.append((rel, "images shown at less than half the column width",
                           f"{img['src']} ({img['width']:.0f} of {img['col']:.0f} px)"))
        if img["ok"] and img["width"] and img["natural"] > 1.25 * img["width"]:  # text shrinks with it
            advice.append((rel, "images shrunk below 80 % (small text?)",
                           f"{img['src'].rsplit('/', 1)[-1][:12]}... to {img['width'] / img['natural']:.0%}"))
        if img["width"] > img["col"] + 1:
            advice.append((rel, "images wider than the column", f"{img['src']} ({img['width']:.0f} px)"))

    for block in facts["wide"]:
        line = block["line"].strip()
        if block["cell"]:
            problems.append(say(f"code cell scrolls sideways at {VIEWPORT['width']} px ({len(block['line'])} "
                                f"characters): {line[:60]!r}"))
        else:
            advice.append((rel, "code blocks or outputs wider than the column", f"{len(block['line'])} chars"))

    for cell in facts["cells"]:
        if re.fullmatch(r"0\d+", cell["text"]):  # an identifier such as seed "001", not a number
            continue
        if cell["align"] not in ("right", "end"):
            advice.append((rel, "numbers in tables not right-aligned", repr(cell["text"])))
        if BIG_INT.search(cell["text"].replace(" ", "")):
            advice.append((rel, "numbers in tables without thousands separators", repr(cell["text"])))

    for folder in BUILT_EDITIONS:  # the language switch leads to this page in the other edition
        other = rel[len(folder):] if rel.startswith(folder) else folder + rel
        if "/" + other not in facts["switches"]:
            problems.append(say(f"no language switch to {other} (links: {facts['switches']})"))

    await _check_solutions(page, rel, facts, problems)
    stats["exercises"] += len(facts["exercises"])
    if facts["numbered"]:
        if "?" not in facts["opening"]:
            advice.append((rel, "numbered chapter whose first paragraphs ask no question", ""))
        if not any(h.lower().startswith("summary") or "summary" in h.lower() for h in facts["h2s"]):
            advice.append((rel, "numbered chapter without a 'Summary' section", ""))
        if len(facts["exercises"]) < 6:
            advice.append((rel, "numbered chapter with fewer than 6 exercises", str(len(facts["exercises"]))))

    for page_rel, phrase in GLUED:
        if rel == page_rel:
            found = await page.evaluate(
                """(phrase) => Array.from(document.querySelectorAll('article p, article li'))
                     .filter(p => p.textContent.includes(phrase))
                     .map(p => Array.from(p.querySelectorAll('.pasted-text, .pasted-inline'))
                                    .map(g => g.textContent.trim()))""", phrase)
            if not found:
                problems.append(say(f"no paragraph contains {phrase!r}"))
            elif not any(re.search(r"\d", g) for glues in found for g in glues):
                problems.append(say(f"the paragraph with {phrase!r} shows no glued number: {found}"))

    if shots is not None:
        await _screenshots(page, rel, facts, shots)


def _console_error(message, events: list[str]) -> None:
    """Record a console error, except the browser's own 404 for a /favicon.ico the book lacks."""
    where = (message.location or {}).get("url", "")
    if not where.endswith("/favicon.ico"):
        events.append(f"console error: {message.text} (at {where or 'page'})")


def _prefixed(rel: str, message: str) -> str:
    return f"{rel}: {message}"


TOGGLE_JS = r"""
(ids) => ids.map(id => {
  const box = document.getElementById(id);
  const body = box && box.querySelector(':scope > :not(.admonition-title)');
  const title = box && box.querySelector(':scope > .admonition-title');
  if (!body || !title) return 'has no title or no body';
  const shown = () => body.getClientRects().length > 0 && getComputedStyle(body).visibility !== 'hidden';
  if (shown()) return 'is shown before a click';
  title.click();
  return shown() ? '' : 'does not open when its title is clicked';
})
"""


async def _check_solutions(page, rel: str, facts: dict, problems: list[str]) -> None:
    """Each exercise has a solution; each solution is a dropdown, hidden, then shown by a click.

    The first solution of a page is clicked like a reader would (Playwright's click: visible,
    enabled, not covered); the others through the DOM, which is much faster.
    """
    solved = {s["target"] for s in facts["solutions"]}
    problems.extend(f"{rel}: exercise {e} has no solution" for e in facts["exercises"] if e not in solved)
    problems.extend(f"{rel}: solution {s['id']} is not a dropdown" for s in facts["solutions"]
                    if not s["dropdown"])
    ids = [s["id"] for s in facts["solutions"] if s["dropdown"]]
    if not ids:
        return
    first = page.locator(f"[id='{ids[0]}']")
    body = first.locator(":scope > :not(.admonition-title)").first
    rest = ids[1:]
    if await body.count() and not await body.is_visible():
        await first.locator(":scope > .admonition-title").click(timeout=TIMEOUT_MS)
        try:
            await body.wait_for(state="visible", timeout=2_000)
        except Exception:  # noqa: BLE001 - Playwright's TimeoutError: report, go on
            problems.append(f"{rel}: solution {ids[0]} does not open when clicked")
    else:
        rest = ids  # the DOM check below says what is wrong with the first one
    for sol_id, result in zip(rest, await page.evaluate(TOGGLE_JS, rest), strict=True):
        if result:
            problems.append(f"{rel}: solution {sol_id} {result}")


async def _screenshots(page, rel: str, facts: dict, shots: Path) -> None:
    """The first figure of every page; the top, first table and first exercise of SHOT_PAGES."""
    name = rel.removesuffix(".html").replace("/", "_")
    views = [("figure", "article figure, article .cell_output img")]
    if rel in SHOT_PAGES:
        await page.evaluate("() => window.scrollTo(0, 0)")
        await page.screenshot(path=str(shots / f"{name}-top.png"))
        views += [("table", "article table"), ("exercise", "article div.exercise")]
    for kind, selector in views:
        target = page.locator(selector).first
        if not await target.count():
            continue
        if kind == "exercise":  # the viewport: the exercise and its (opened) solution below it
            await target.scroll_into_view_if_needed()
            await page.evaluate("() => window.scrollBy(0, -80)")
            await page.screenshot(path=str(shots / f"{name}-{kind}.png"))
        else:
            await target.screenshot(path=str(shots / f"{name}-{kind}.png"))


async def check_search(context, base: str, problems: list[str], shots: Path | None,
                       edition: str = "", term: str = SEARCH_TERM, page_found: str = SEARCH_PAGE) -> int:
    """Search for ``term`` in the edition in folder ``edition``; ``page_found`` must be a result."""
    page = await context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: m.type == "error" and _console_error(m, errors))
    await page.goto(f"{base}{edition}search.html?q={term}", wait_until="load", timeout=TIMEOUT_MS)
    try:
        await page.wait_for_function(
            # Sphinx adds the (empty) summary when the search starts, its text when the last
            # result is shown: wait for the text, or the results are read half displayed
            "() => { const s = document.querySelector('#search-results p.search-summary');"
            " return s && s.textContent.trim() !== ''; }",
            timeout=TIMEOUT_MS)
    except Exception:  # noqa: BLE001 - Playwright's TimeoutError: report it
        problems.append(f"search: no search summary for {term!r} within {TIMEOUT_MS} ms")
    hits = await page.eval_on_selector_all("#search-results ul.search li a", "as => as.map(a => a.href)")
    if not hits:
        problems.append(f"search: no results for {term!r}")
    elif not any(page_found in h for h in hits):
        problems.append(f"search: {page_found} not among the results for {term!r}")
    problems.extend(f"search: {e}" for e in errors)
    if shots is not None:
        await page.screenshot(path=str(shots / f"search{'-' + edition.strip('/') if edition else ''}.png"))
    await page.close()
    return len(hits)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--site", type=Path, default=ROOT / "_build" / "html", help="the built HTML")
    ap.add_argument("--screenshots", type=Path, nargs="?", const=ROOT / "_build" / "screenshots",
                    default=None, help="save screenshots (default folder: _build/screenshots)")
    ap.add_argument("--chromium", default=CHROMIUM, help="the Chromium executable")
    ap.add_argument("--strict", action="store_true", help="treat advice as failures")
    ap.add_argument("-v", "--verbose", action="store_true", help="print the seconds spent per page")
    ap.add_argument("--workers", type=int, default=2, help="pages checked at a time (default 2)")
    ap.add_argument("--lite", nargs="*", default=None, metavar="SLUG",
                    help=f"chapters to run in the JupyterLite edition (default: {' '.join(LITE_DEFAULT)}; "
                         "none: --lite with no slug)")
    ap.add_argument("--lite-json", type=Path, help="write the JupyterLite timings here (for the bench)")
    args = ap.parse_args(argv)
    if args.lite is None:
        args.lite = LITE_DEFAULT if (args.site / "lite" / "files").is_dir() else []

    t0 = time.perf_counter()
    site = args.site.resolve()
    if not (site / "index.html").is_file():
        print(f"browser test: no book at {site} (build it first)", file=sys.stderr)
        return 1
    if not Path(args.chromium).is_file():
        print(f"browser test: {args.chromium} not found (apt-get install chromium)", file=sys.stderr)
        return 1
    shots = args.screenshots
    if shots is not None:
        shutil.rmtree(shots, ignore_errors=True)
        shots.mkdir(parents=True)

    BUILT_EDITIONS[:] = [folder for folder in EDITIONS if (site / folder / "index.html").is_file()]
    pages = html_pages(site)
    problems, checked, redirects = check_links(site, pages)
    if args.verbose:
        print(f"  link check: {time.perf_counter() - t0:.2f} s", flush=True)
    to_open = [rel for rel in pages if rel not in redirects]  # a redirect's target is checked above
    to_open.sort(key=lambda rel: -(site / rel).stat().st_size)  # largest first: a short tail at the end
    advice: list[tuple[str, str, str]] = []
    stats = dict.fromkeys(("math", "glue", "images", "exercises"), 0)
    with serve(site) as base:
        hits = asyncio.run(check_in_browser(to_open, base, args, shots, problems, advice, stats, t0))

    seconds = time.perf_counter() - t0
    grouped: dict[tuple[str, str], list[str]] = {}
    for rel, kind, example in advice:
        grouped.setdefault((rel, kind), []).append(example)
    for (rel, kind), examples in sorted(grouped.items()):
        shown = ", ".join(e for e in examples[:4] if e) + (", ..." if len(examples) > 4 else "")
        print(f"advice: {rel}: {len(examples)} {kind}" + (f": {shown}" if shown else ""))
    for line in sorted(problems):
        print(f"FAIL: {line}")
    print(f"browser test: {len(to_open)} pages, {checked} same-site links, {stats['math']} math expressions, "
          f"{stats['glue']} glued values, {stats['images']} images, {stats['exercises']} exercises, "
          f"{hits} search hits for {SEARCH_TERM!r}; {len(problems)} problems, {len(grouped)} advice; "
          f"{seconds:.1f} s" + (f"; screenshots in {shots}" if shots else ""))
    if args.lite_json:
        args.lite_json.write_text(json.dumps(LITE_RESULTS, indent=1))
    # one check per page (and one for the search, one per JupyterLite chapter); a page fails if
    # any problem names it
    checked_pages = to_open + ["search"] + [f"lite/{slug}" for slug in args.lite]
    flagged = problems + ([f"{rel}: {kind}" for rel, kind in grouped] if args.strict else [])
    bad = {rel for rel in checked_pages if any(line.startswith(f"{rel}:") for line in flagged)}
    unattributed = [line for line in flagged if not any(line.startswith(f"{rel}:") for rel in checked_pages)]
    failed = len(bad) + len(unattributed)
    print(f"browser: {len(checked_pages) - len(bad)} passed, {failed} failed")
    return 1 if failed else 0


async def check_in_browser(pages: list[str], base: str, args: argparse.Namespace, shots: Path | None,
                           problems: list[str], advice: list[tuple[str, str, str]], stats: dict[str, int],
                           t0: float) -> int:
    """Check ``pages`` (in this order) and the search in one browser, ``args.workers`` at a time.

    Returns the number of search hits. One browser (one Playwright driver: starting it costs
    seconds) with a fresh profile (user data dir); the pages run concurrently to use both cores.
    """
    from playwright.async_api import async_playwright  # imported late: only this script needs it

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS, headless=True)
        try:
            context = await browser.new_context(viewport=VIEWPORT, service_workers="block")
            if args.verbose:
                print(f"  browser started: {time.perf_counter() - t0:.2f} s", flush=True)
            external: list[str] = []
            context.on("request", lambda r: r.url.startswith((base, "data:", "blob:")) or external.append(r.url))
            tabs: asyncio.Queue = asyncio.Queue()  # one tab per worker, reused from page to page
            for _ in range(max(1, args.workers)):
                tabs.put_nowait(await context.new_page())

            async def one(rel: str) -> None:
                page = await tabs.get()
                t_page = time.perf_counter()
                try:
                    await check_page(page, base + rel, rel, shots, problems, advice, stats)
                    if args.verbose:
                        print(f"  {rel}: {time.perf_counter() - t_page:.2f} s", flush=True)
                except Exception as err:  # noqa: BLE001 - one broken page must not hide the others
                    problems.append(f"{rel}: check aborted: {type(err).__name__}: {err}")
                    await page.close()  # it may hang: the next page gets a fresh tab
                    page = await context.new_page()
                finally:
                    tabs.put_nowait(page)

            async def pages_then_search() -> int:
                await asyncio.gather(*(one(rel) for rel in pages))
                for folder in BUILT_EDITIONS:
                    await check_search(context, base, problems, shots, folder, *EDITIONS[folder])
                return await check_search(context, base, problems, shots)

            hits = await pages_then_search()
            # then the JupyterLite chapters, in the same browser but a context of their own (service
            # workers allowed, as for a reader); after the pages, not beside them: run together they
            # took longer than one after the other (Pyodide's start starves beside MathJax)
            await run_lite(browser, base, args, problems)
        finally:
            await browser.close()
    problems.extend(f"request to another host (the book must work offline): {u}" for u in sorted(set(external)))
    return hits


async def run_lite(browser, base: str, args: argparse.Namespace, problems: list[str]) -> None:
    """Run ``args.lite`` (chapter slugs) in the book's JupyterLite edition (scripts/lite_test.py)."""
    if not args.lite:
        return
    from lite_test import describe, new_lite_context, run_chapter

    context = await new_lite_context(browser, base, problems)
    try:
        for slug in args.lite:
            result = await run_chapter(context, base, slug, problems)
            LITE_RESULTS.append(result)
            print(f"  lite/{slug}: {describe(result)}, all {result['cells']} code cells {result['all']:.1f} s "
                  f"({result['skipped']} skipped: need PyTorch)"
                  + ("; live calculator driven" if result["live"] else ""), flush=True)
    finally:
        await context.close()


if __name__ == "__main__":
    sys.exit(main())
