"""Run chapters in the book's JupyterLite edition (headless Chromium, offline) and check them.

    .venv/bin/python scripts/lite_test.py                  # matmul-cost (what `dev.py test` runs)
    .venv/bin/python scripts/lite_test.py memory optimizers
    .venv/bin/python scripts/lite_test.py --all            # every chapter (`python3 dev.py lite-all`)

The built book (``_build/html``) is served on 127.0.0.1; every request to another host fails (no
host name resolves but the local server's) and is reported. For each chapter the test opens
``lite/notebooks/index.html?path=<slug>.ipynb`` (the page the "Run in the browser" button opens),
runs its first code cell (the time to the first executed cell is reported), then runs all cells
and reads every cell's outputs from the notebook model.

Failures: an ``error`` output in any cell (cells tagged ``needs-torch`` print one line instead
of running, so a skipped reality check is no error), a cell left unexecuted, a request to
another host, a failed request, a console error or an uncaught page error.

``scripts/browser_test.py`` calls :func:`run_chapter` with its own browser (one browser for both
tests); this script is the standalone command.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from browser_test import CHROMIUM, CHROMIUM_ARGS, _console_error, serve  # noqa: E402

DEFAULT = ["matmul-cost"]
KERNEL_TIMEOUT_MS = 180_000  # Pyodide's start on a busy 2-core machine, then the cell
RUN_TIMEOUT_S = 300  # one chapter's cells, after the first
CHAPTER_TIMEOUT_S = 480

# The notebook panel of JupyterLite's notebook app, once the notebook is loaded and its kernel
# (Pyodide, with every package of the edition) has started.
KERNEL_JS = """
() => { const app = window.jupyterapp; const w = app && app.shell && app.shell.currentWidget;
        const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
        return !!(w && w.context && w.context.isReady && k && k.status === 'idle'); }
"""

RUN_FIRST_JS = """
async () => {
  const panel = window.jupyterapp.shell.currentWidget, nb = panel.content;
  const index = nb.widgets.findIndex(c => c.model.type === 'code');
  nb.activeCellIndex = index;
  await window.jupyterapp.commands.execute('notebook:run-cell');
  return index;
}
"""

RUN_ALL_JS = """
async () => {
  const panel = window.jupyterapp.shell.currentWidget;
  await window.jupyterapp.commands.execute('notebook:run-all-cells');
  // runAll resolves when the last cell is done; wait for the kernel to be idle as well
  for (let i = 0; i < 100 && panel.sessionContext.session.kernel.status !== 'idle'; i++)
    await new Promise(r => setTimeout(r, 100));
  return panel.content.widgets.filter(c => c.model.type === 'code').map(c => {
    const j = c.model.toJSON();
    return {source: typeof j.source === 'string' ? j.source : j.source.join(''),
            count: j.execution_count, outputs: j.outputs,
            tags: (j.metadata && j.metadata.tags) || []};
  });
}
"""


async def run_chapter(context, base: str, slug: str, problems: list[str], log=print) -> dict:
    """Open ``slug`` in the JupyterLite edition in ``context``, run it, append what is wrong.

    Returns timings (seconds): ``first`` (opening the page to the first code cell's result,
    Pyodide's start included), ``all`` (running every cell after that), and counts.
    """
    page = await context.new_page()
    events: list[str] = []
    page.on("console", lambda m: m.type == "error" and _console_error(m, events))
    page.on("pageerror", lambda e: events.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: events.append(f"request failed: {r.url} ({r.failure})"))
    page.on("response", lambda r: r.status >= 400 and events.append(f"HTTP {r.status}: {r.url}"))
    t0 = time.perf_counter()
    result = {"slug": slug, "kernel": float("nan"), "first": float("nan"), "all": float("nan"), "cells": 0,
              "skipped": 0}
    try:
        await page.goto(f"{base}lite/notebooks/index.html?path={slug}.ipynb", wait_until="load")
        await page.wait_for_function(KERNEL_JS, timeout=KERNEL_TIMEOUT_MS, polling=200)
        result["kernel"] = time.perf_counter() - t0
        await asyncio.wait_for(page.evaluate(RUN_FIRST_JS), KERNEL_TIMEOUT_MS / 1000)
        result["first"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        cells = await asyncio.wait_for(page.evaluate(RUN_ALL_JS), RUN_TIMEOUT_S)
        result["all"] = time.perf_counter() - t1
    except Exception as err:  # noqa: BLE001 - Playwright's errors and timeouts: report them
        problems.append(f"lite/{slug}: did not run: {type(err).__name__}: {str(err)[:300]}")
        cells = []
    finally:
        await page.close()
    result["cells"] = len(cells)
    for i, cell in enumerate(cells):
        where = f"lite/{slug}: code cell {i + 1}"
        if "Skipped in the browser" in cell["source"]:
            result["skipped"] += 1
        errors = [o for o in cell["outputs"] if o.get("output_type") == "error"]
        for o in errors:
            hint = ""
            if re.search(r"No module named '(torch|transformers|distributed_checks|hf_reference)", o.get("evalue", "")):
                hint = " -- give this cell the tag needs-torch (README: Running the book in the browser)"
            problems.append(f"{where}: {o.get('ename')}: {o.get('evalue', '')[:200]} "
                            f"(first line: {cell['source'].splitlines()[0][:80] if cell['source'] else ''!r}){hint}")
        if cell["count"] is None and not errors and not any(p.startswith(f"lite/{slug}: code cell") for p in problems):
            problems.append(f"{where}: not executed")
        for o in cell["outputs"]:
            if o.get("output_type") == "stream" and o.get("name") == "stderr":
                text = o.get("text", "")
                log(f"  note: {where} wrote to stderr: {(text if isinstance(text, str) else ''.join(text))[:160]!r}")
    problems.extend(f"lite/{slug}: {e}" for e in events)
    return result


async def run_all(slugs: list[str], site: Path, chromium: str, problems: list[str]) -> list[dict]:
    from playwright.async_api import async_playwright

    results = []
    with serve(site) as base:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
            try:
                for slug in slugs:  # a fresh context (storage, service worker) per chapter, as a new reader
                    context = await new_lite_context(browser, base, problems)
                    try:
                        result = await asyncio.wait_for(run_chapter(context, base, slug, problems), CHAPTER_TIMEOUT_S)
                    except asyncio.TimeoutError:
                        problems.append(f"lite/{slug}: did not finish within {CHAPTER_TIMEOUT_S} s")
                        result = {"slug": slug, "kernel": float("nan"), "first": float("nan"),
                                  "all": float("nan"), "cells": 0, "skipped": 0}
                    finally:
                        await context.close()
                    results.append(result)
                    print(f"  {slug}: kernel ready {result['kernel']:.1f} s, first cell {result['first']:.1f} s, "
                          f"all {result['cells']} code cells {result['all']:.1f} s ({result['skipped']} skipped)",
                          flush=True)
            finally:
                await browser.close()
    return results


async def new_lite_context(browser, base: str, problems: list[str]):
    """A browser context for JupyterLite: service workers allowed, requests to other hosts reported."""
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    context.on("request", lambda r: r.url.startswith((base, "data:", "blob:")) or problems.append(
        f"lite: request to another host (the edition must work offline): {r.url}"))
    return context


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("slugs", nargs="*", help=f"chapters to run (default: {' '.join(DEFAULT)})")
    ap.add_argument("--all", action="store_true", help="every chapter of the JupyterLite edition")
    ap.add_argument("--site", type=Path, default=ROOT / "_build" / "html", help="the built HTML")
    ap.add_argument("--chromium", default=CHROMIUM)
    ap.add_argument("--json", type=Path, help="write the timings here")
    args = ap.parse_args(argv)
    files = args.site / "lite" / "files"
    if not files.is_dir():
        print(f"lite test: no JupyterLite edition at {files.parent} (build the book first)", file=sys.stderr)
        return 1
    slugs = sorted(p.stem for p in files.glob("*.ipynb")) if args.all else (args.slugs or DEFAULT)
    t0 = time.perf_counter()
    problems: list[str] = []
    results = asyncio.run(run_all(slugs, args.site.resolve(), args.chromium, problems))
    for line in problems:
        print(f"FAIL: {line}")
    bad = {s for s in slugs if any(p.startswith((f"lite/{s}:", "lite:")) for p in problems)}
    print(f"lite test: {len(slugs)} chapters in {time.perf_counter() - t0:.1f} s")
    print(f"lite: {len(slugs) - len(bad)} passed, {len(bad)} failed")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
