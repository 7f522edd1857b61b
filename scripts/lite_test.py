"""Run chapters in the book's JupyterLite edition (headless Chromium, offline) and check them.

    .venv/bin/python scripts/lite_test.py                  # matmul-cost (what `dev.py test` runs)
    .venv/bin/python scripts/lite_test.py memory optimizers
    .venv/bin/python scripts/lite_test.py --all            # every chapter (`python3 dev.py lite-all`)
    .venv/bin/python scripts/lite_test.py --visits 2 matmul-cost   # cold, then warm (the bench)

The built book (``_build/html``) is served on 127.0.0.1; every request to another host fails (no
host name resolves but the local server's) and is reported. For each chapter the test opens
``lite/notebooks/index.html?path=<slug>.ipynb`` (the page the "Run in the browser" button opens),
runs its first code cell (the time to the first executed cell is reported), then runs all cells
and reads every cell's outputs from the notebook model. A page with the live calculator
(``llmmath.live``) gets one of its controls driven: the GPU count is doubled, and every number it
then shows must be the one ``llmmath`` gives on this machine for the inputs it names.

Failures: an ``error`` output in any cell (cells tagged ``needs-torch`` print one line instead
of running, so a skipped reality check is no error), a cell left unexecuted, a request to
another host, a failed request, a console error or an uncaught page error, a live calculator
whose numbers do not follow its control.

``--visits 2`` opens the chapter twice in one browser profile (a fresh one, on disk): the first
visit is a reader's first (nothing cached), the second a return visit (the browser's HTTP cache,
its compiled code and the edition's service worker filled). Each visit reports the seconds to the
kernel being ready and to the first code cell's result, split into the app's start (until the
kernel's worker exists), the kernel's start (Pyodide and the packages the kernel imports), and
the first cell (loading the packages it imports, then running it); the requests and bytes
fetched; and the CPU seconds of all of the browser's processes (Chromium's own count: under load
a steadier measure than the clock).

``scripts/browser_test.py`` calls :func:`run_chapter` with its own browser (one browser for both
tests); this script is the standalone command.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
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


LIVE_INPUTS_JS = """
() => { const t = document.querySelector('table.llmmath-live');
        return t ? t.dataset.inputs : null; }
"""
LIVE_SHOWN_JS = """
() => Object.fromEntries(Array.from(document.querySelectorAll('table.llmmath-live [data-llmmath]'))
                         .map(td => [td.dataset.llmmath, td.textContent]))
"""
SHOW_CELL_JS = """
async (text) => {
  const nb = window.jupyterapp.shell.currentWidget.content;
  const index = nb.widgets.findIndex(c => c.model.sharedModel.getSource().includes(text));
  nb.activeCellIndex = index;
  await nb.scrollToItem(index, 'start');
}
"""
# what the kernel lists in its folder (the notebook's, when the kernel has its drive)
LIST_FILES_JS = """
async () => {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  const future = kernel.requestExecute({code: "import os; print(sorted(os.listdir('.')))", store_history: false});
  let out = '';
  future.onIOPub = (m) => {
    if (m.header.msg_type === 'stream') { out += m.content.text; }
    else if (m.header.msg_type === 'error') { out += m.content.ename + ': ' + m.content.evalue; }
  };
  await future.done;
  return out;
}
"""

LIVE_CONTROL = "GPUs"  # the control the test drives (its label)
LIVE_CALL = "llmmath.live import calculator"  # a cell with it shows the live calculator
NO_DRIVE = "Pyodide contents will NOT be synced"  # the pyodide-kernel extension, when it mounts no drive


async def drive_live_calculator(page, where: str, problems: list[str]) -> None:
    """Double the GPU count of the live calculator on ``page`` (a cell of it calls it); every
    number it then shows must be the one ``llmmath`` (this machine's) gives for the inputs it names."""
    from llmmath.live import plan_rows

    try:  # the notebook draws only the cells in view: bring the calculator's into view
        await page.evaluate(SHOW_CELL_JS, LIVE_CALL)
        await page.wait_for_selector("table.llmmath-live", timeout=60_000)
    except Exception as err:  # noqa: BLE001 - Playwright's TimeoutError: report it
        problems.append(f"{where}: the live calculator's cell ran but no calculator is shown: {type(err).__name__}")
        return
    old = json.loads(await page.evaluate(LIVE_INPUTS_JS))["n_gpus"]
    box = page.locator(f".widget-text:has(> label:text-is('{LIVE_CONTROL}')) input")
    try:
        await box.fill(str(2 * old))
        await box.press("Enter")
        await page.wait_for_function(
            f"() => {{ const t = document.querySelector('table.llmmath-live');"
            f"         return t && JSON.parse(t.dataset.inputs).n_gpus === {2 * old}; }}", timeout=60_000)
    except Exception as err:  # noqa: BLE001 - Playwright's errors and timeouts: report them
        problems.append(f"{where}: the live calculator did not follow its {LIVE_CONTROL!r} control: "
                        f"{type(err).__name__}: {str(err)[:200]}")
        return
    inputs = json.loads(await page.evaluate(LIVE_INPUTS_JS))
    shown = await page.evaluate(LIVE_SHOWN_JS)
    expected = {key: value for key, _, value in plan_rows(**inputs)}
    if shown != expected:
        wrong = {k: (shown.get(k), v) for k, v in expected.items() if shown.get(k) != v}
        problems.append(f"{where}: the live calculator shows other numbers than llmmath for {LIVE_CONTROL} = "
                        f"{2 * old} (shown, llmmath): {wrong}")


async def run_chapter(context, base: str, slug: str, problems: list[str], log=print, cdp=None,
                      served: dict[str, int] | None = None) -> dict:
    """Open ``slug`` in the JupyterLite edition in ``context``, run it, append what is wrong.

    Returns timings (seconds): ``first`` (opening the page to the first code cell's result,
    Pyodide's start included), ``all`` (running every cell after that), and counts; with ``cdp``
    (a browser-level CDP session), also the phases, requests, bytes and CPU seconds of the start
    (``served``: the local server's counts, see ``browser_test.serve``).
    """
    page = await context.new_page()
    events: list[str] = []
    page.on("console", lambda m: m.type == "error" and _console_error(m, events))
    page.on("pageerror", lambda e: events.append(f"page error: {e}"))
    # the kernel without its drive (the notebook's folder not mounted: no file next to the notebook)
    page.on("console", lambda m: NO_DRIVE in m.text and events.append(f"kernel without its drive: {m.text[:80]}"))
    page.on("requestfailed", lambda r: events.append(f"request failed: {r.url} ({r.failure})"))
    page.on("response", lambda r: r.status >= 400 and events.append(f"HTTP {r.status}: {r.url}"))
    t0 = time.perf_counter()
    marks: dict[str, float] = {}
    requests: list = []
    page.on("worker", lambda w: marks.setdefault("worker", time.perf_counter() - t0))
    page.on("console", lambda m: m.text.startswith(("Loading ", "Loaded ")) and "kernel" in marks
            and marks.setdefault(m.text.split()[0].lower(), time.perf_counter() - t0))
    page.on("requestfinished", lambda r: requests.append(r))
    cpu0 = await _cpu_seconds(cdp)
    served0 = dict(served or {})
    result = {"slug": slug, "kernel": float("nan"), "first": float("nan"), "all": float("nan"), "cells": 0,
              "skipped": 0, "live": False}
    try:
        await page.goto(f"{base}lite/notebooks/index.html?path={slug}.ipynb", wait_until="load")
        await page.wait_for_function(KERNEL_JS, timeout=KERNEL_TIMEOUT_MS, polling=100)
        result["kernel"] = marks["kernel"] = time.perf_counter() - t0
        cpu1 = await _cpu_seconds(cdp)
        await asyncio.wait_for(page.evaluate(RUN_FIRST_JS), KERNEL_TIMEOUT_MS / 1000)
        result["first"] = time.perf_counter() - t0
        if cdp is not None:
            cpu2 = await _cpu_seconds(cdp)
            result.update(_phases(marks, result["first"]), cpu_kernel=cpu1 - cpu0, cpu_first=cpu2 - cpu0,
                          requests=len(requests))
            if served is not None:
                result.update(server_requests=served["requests"] - served0["requests"],
                              not_modified=served["not_modified"] - served0["not_modified"],
                              mb=(served["bytes"] - served0["bytes"]) / 1e6)
        t1 = time.perf_counter()
        cells = await asyncio.wait_for(page.evaluate(RUN_ALL_JS), RUN_TIMEOUT_S)
        result["all"] = time.perf_counter() - t1
        result["live"] = any(LIVE_CALL in cell["source"] for cell in cells)
        listed = await asyncio.wait_for(page.evaluate(LIST_FILES_JS), KERNEL_TIMEOUT_MS / 1000)
        if f"'{slug}.ipynb'" not in listed:
            problems.append(f"lite/{slug}: the kernel does not see the notebook's folder: os.listdir('.') "
                            f"gave {listed.strip()[:200]!r}")
        if result["live"]:
            await drive_live_calculator(page, f"lite/{slug}", problems)
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


async def _cpu_seconds(cdp) -> float:
    """CPU seconds of all of the browser's processes so far (Chromium's count), or NaN."""
    if cdp is None:
        return float("nan")
    info = await cdp.send("SystemInfo.getProcessInfo")
    return sum(p["cpuTime"] for p in info["processInfo"])


def _phases(marks: dict[str, float], first: float) -> dict[str, float]:
    """The start split in phases (seconds): the app's start (until the kernel's worker exists),
    the kernel's start, and the first cell: loading the packages it imports, then running it."""
    worker, kernel = marks.get("worker", float("nan")), marks["kernel"]
    loaded = marks.get("loaded", kernel)  # no package to load: the cell ran at once
    return {"app": worker, "kernel_start": kernel - worker, "packages": loaded - kernel, "run": first - loaded}


def describe(result: dict) -> str:
    """One line of timings of ``run_chapter``'s result."""
    text = f"kernel ready {result['kernel']:.1f} s, first code cell {result['first']:.1f} s"
    if "app" in result:
        text += (f" (app {result['app']:.1f} + kernel start {result['kernel_start']:.1f} + first cell's "
                 f"packages {result['packages']:.1f} + running it {result['run']:.1f}); the page made "
                 f"{result['requests']} requests, the server answered {result.get('server_requests', '?')} "
                 f"({result.get('not_modified', '?')} not modified) and sent {result.get('mb', float('nan')):.1f} MB; "
                 f"CPU {result['cpu_kernel']:.1f} s to the kernel, {result['cpu_first']:.1f} s to the first cell")
    return text


async def run_all(slugs: list[str], site: Path, chromium: str, problems: list[str], jobs: int = 1,
                  visits: int = 1) -> list[dict]:
    """Run ``slugs``, ``jobs`` at a time, each in a fresh browser context (storage, service worker:
    as a new reader) of one browser; ``visits`` > 1: each chapter that many times in one profile."""
    from playwright.async_api import async_playwright

    results: list[dict] = []
    slots = asyncio.Semaphore(max(1, jobs))
    served: dict[str, int] = {}
    with serve(site, served) as base:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)

            async def one(slug: str) -> None:
                async with slots:
                    if visits > 1:
                        results.extend(await _visits(pw, chromium, base, slug, visits, problems, served))
                        return
                    context = await new_lite_context(browser, base, problems)
                    try:
                        result = await asyncio.wait_for(run_chapter(context, base, slug, problems), CHAPTER_TIMEOUT_S)
                    except asyncio.TimeoutError:
                        problems.append(f"lite/{slug}: did not finish within {CHAPTER_TIMEOUT_S} s")
                        result = {"slug": slug, "kernel": float("nan"), "first": float("nan"),
                                  "all": float("nan"), "cells": 0, "skipped": 0, "live": False}
                    finally:
                        await context.close()
                    results.append(result)
                    print(f"  {slug}: {describe(result)}, all {result['cells']} code cells {result['all']:.1f} s "
                          f"({result['skipped']} skipped){'; live calculator driven' if result['live'] else ''}",
                          flush=True)

            try:
                await asyncio.gather(*(one(slug) for slug in slugs))
            finally:
                await browser.close()
    return results


async def _visits(pw, chromium: str, base: str, slug: str, visits: int, problems: list[str],
                  served: dict[str, int]) -> list[dict]:
    """``slug`` opened ``visits`` times in one fresh browser profile (on disk, as a reader's)."""
    out = []
    with tempfile.TemporaryDirectory() as profile:
        context = await pw.chromium.launch_persistent_context(profile, executable_path=chromium, args=CHROMIUM_ARGS,
                                                              headless=True, viewport={"width": 1280, "height": 900})
        _report_other_hosts(context, base, problems)
        cdp = await (context.browser.new_browser_cdp_session() if context.browser
                     else context.new_cdp_session(context.pages[0] if context.pages else await context.new_page()))
        try:
            for visit in range(visits):
                result = await asyncio.wait_for(run_chapter(context, base, slug, problems, cdp=cdp, served=served),
                                                CHAPTER_TIMEOUT_S)
                result["visit"] = "cold" if visit == 0 else "warm"
                out.append(result)
                print(f"  {slug}, {result['visit']}: {describe(result)}", flush=True)
        finally:
            await context.close()
    return out


async def new_lite_context(browser, base: str, problems: list[str]):
    """A browser context for JupyterLite: service workers allowed, requests to other hosts reported."""
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    _report_other_hosts(context, base, problems)
    return context


def _report_other_hosts(context, base: str, problems: list[str]) -> None:
    context.on("request", lambda r: r.url.startswith((base, "data:", "blob:")) or problems.append(
        f"lite: request to another host (the edition must work offline): {r.url}"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("slugs", nargs="*", help=f"chapters to run (default: {' '.join(DEFAULT)})")
    ap.add_argument("--all", action="store_true", help="every chapter of the JupyterLite edition")
    ap.add_argument("--site", type=Path, default=ROOT / "_build" / "html", help="the built HTML")
    ap.add_argument("--chromium", default=CHROMIUM)
    ap.add_argument("--json", type=Path, help="write the timings here")
    ap.add_argument("--jobs", type=int, default=2, help="chapters run at a time, each in its own context (default 2)")
    ap.add_argument("--visits", type=int, default=1, help="open each chapter this many times in one fresh browser "
                                                         "profile: cold, then warm (default 1)")
    args = ap.parse_args(argv)
    files = args.site / "lite" / "files"
    if not files.is_dir():
        print(f"lite test: no JupyterLite edition at {files.parent} (build the book first)", file=sys.stderr)
        return 1
    slugs = sorted(p.stem for p in files.glob("*.ipynb")) if args.all else (args.slugs or DEFAULT)
    t0 = time.perf_counter()
    problems: list[str] = []
    load = os.getloadavg()[0]
    results = asyncio.run(run_all(slugs, args.site.resolve(), args.chromium, problems, args.jobs, args.visits))
    for line in problems:
        print(f"FAIL: {line}")
    bad = {s for s in slugs if any(p.startswith((f"lite/{s}:", "lite:")) for p in problems)}
    print(f"lite test: {len(slugs)} chapters in {time.perf_counter() - t0:.1f} s, {args.jobs} at a time "
          f"(load average {load:.1f} before, {os.getloadavg()[0]:.1f} after)")
    print(f"lite: {len(slugs) - len(bad)} passed, {len(bad)} failed")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
