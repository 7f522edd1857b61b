"""Time a clean book build, the browser test, nbval alone and the whole test run.

The browser test runs a chapter in the book's JupyterLite edition too: the bench prints the time
from opening it to the result of its first code cell (Pyodide's start, the packages' loading and
the imports included) and the time to run all its cells after that.

Run with ``python3 dev.py bench``. Prints seconds; the budgets (2 cores, installs excluded) are a
clean build <= 60 s and the whole test run <= 150 s (``dev.py test`` runs the book build and the
browser test beside pytest, so the whole run is less than the sum of the parts, which are timed
alone here). Timing lives here, never in the tests. The load average is printed too: on a busy
machine every figure is larger. The whole test run starts with the installs, which are no-ops
once done: run the bench twice (or after ``python3 dev.py test``) to exclude them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
BUDGETS = {"clean book build": 60.0, "whole test run": 150.0}
PYTEST = [str(BIN / "python"), "-m", "pytest", "-q", "-n", "2", "--dist", "loadscope",
          "--nbval-current-env", "--nbval-sanitize-with", "tests/nbval_sanitize.cfg",
          "-p", "no:cacheprovider"]


def timed(label: str, cmd: list[str], before=None) -> float:
    if before:
        before()
    t0 = time.perf_counter()
    result = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ))
    seconds = time.perf_counter() - t0
    status = "ok" if result.returncode == 0 else f"FAILED (exit {result.returncode})"
    budget = BUDGETS.get(label)
    note = f" (budget {budget:.0f} s)" if budget else ""
    print(f"{label:<20} {seconds:7.1f} s  {status}{note}", flush=True)
    return seconds


def host_speed() -> float:
    """Seconds for a fixed pure-Python loop (best of 3): how fast this host is right now.

    A shared virtual machine's speed varies from hour to hour (on the development machine the same
    test run took from 139 s to 175 s); the figures of two benches compare only next to this one.
    """
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        sum(range(10**7))
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> int:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{os.cpu_count()} cores, load average {load:.1f}; host speed: sum(range(10**7)) in "
          f"{host_speed():.3f} s")
    # both editions, as `dev.py book` builds them (English, and Chinese beside it: scripts/i18n.py)
    timed("clean book build", [str(BIN / "python"), "scripts/i18n.py", "book"],
          before=lambda: shutil.rmtree(ROOT / "_build", ignore_errors=True))
    if Path("/usr/bin/chromium").is_file():
        with tempfile.TemporaryDirectory() as tmp:
            lite = Path(tmp) / "lite.json"
            timed("browser test", [str(BIN / "python"), "scripts/browser_test.py", "--lite-json", str(lite)])
            for r in json.loads(lite.read_text()) if lite.is_file() else []:
                print(f"{'  in the browser':<20} {r['first']:7.1f} s  to the first executed cell of {r['slug']} "
                      f"(kernel ready {r['kernel']:.1f} s); all {r['cells']} code cells {r['all']:.1f} s more",
                      flush=True)
    else:
        print("browser test: skipped (/usr/bin/chromium missing: python3 dev.py test installs it)")
    timed("nbval alone", PYTEST + ["--nbval", "chapters"])
    timed("package tests", PYTEST + ["tests"])
    timed("whole test run", [sys.executable, str(ROOT / "dev.py"), "test"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
