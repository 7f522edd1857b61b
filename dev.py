#!/usr/bin/env python3
"""The project's single entry point. Needs only Python 3 (>= 3.10) to start.

    python3 dev.py book      set up .venv (book requirements) and build the book (zero warnings):
                             the English edition and, beside it, the Chinese one (_build/html/zh/)
    python3 dev.py test      set up .venv (test requirements) and run every test: ruff, then
                             pytest with nbval over every chapter notebook and, beside it, a clean
                             book build (zero warnings) followed by the browser test of every page
                             (scripts/browser_test.py; installs Debian's chromium first when it is
                             missing and we are root), which also runs one chapter in the
                             JupyterLite edition
    python3 dev.py execute   re-execute every chapter notebook in place (after an edit)
    python3 dev.py bench     time a clean book build, the browser test, nbval alone and the whole
                             test run; the time to the first executed cell in the browser
    python3 dev.py i18n ...  the translations: update, status, todo, check (scripts/i18n.py;
                             locales/TRANSLATING.md)
    python3 dev.py lite-all  run every chapter in the book's JupyterLite edition (headless chromium,
                             offline; a few minutes; CI's last step): scripts/lite_test.py --all

Each command creates ``.venv`` and installs what it needs first (skipped when the requirement
files have not changed since the last install). ``make book`` / ``make test`` call these.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"
CHROMIUM = Path("/usr/bin/chromium")  # Debian's package; scripts/browser_test.py drives it
# Debian packages of the browser test, each with a file that shows it is installed. The font
# renders the seeds' Chinese titles in the screenshots (without it they show as empty boxes).
BROWSER_PACKAGES = {"chromium": CHROMIUM,
                    "fonts-wqy-microhei": Path("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc")}

# Python's garbage collector runs less often in every process of a test run (pytest's workers, the
# notebooks' kernels, torch's ranks, the CLI runs): with its default thresholds it spent 10-20 % of
# their CPU time walking the heaps that torch, transformers and sympy leave (measured per notebook:
# 5.6 s -> 4.7 s). A .pth file in .venv applies LLMMATH_GC_THRESHOLD at every interpreter's start;
# the book build sets the same thresholds itself (_ext/gc_threshold.py).
GC_THRESHOLD = "50000,20,10"
GC_HOOK = ("import gc, os; v = os.environ.get('LLMMATH_GC_THRESHOLD'); "
           "v and gc.set_threshold(*map(int, v.split(',')))\n")


def numeric_env() -> dict[str, str]:
    """The environment of every run that executes notebooks (tests, execute, bench).

    The committed outputs must be reproducible on any x86-64 machine, but NumPy and OpenBLAS pick
    their kernels by CPU (an AVX-512 machine sums and exponentiates in another order than an AVX2
    one, which changes the last digits of a float). Pinning the kernels to AVX2 and BLAS to one
    thread makes every x86-64 machine compute the same bits; tests/nbval_sanitize.cfg compares
    floats to 6 decimals as a second line of defence (other architectures).
    """
    # One thread per process for PyTorch's (OpenMP) and MKL's pools too: the tests' tensors are
    # tiny, and two pytest workers, their notebook kernels and the spawned torch.distributed ranks
    # each starting a pool of 2 threads on 2 cores spent a third of the test run spinning (measured:
    # pytest + nbval 122 s with the default pools, 90 s with one thread).
    env = dict(os.environ, PYTHONHASHSEED="0", MPLBACKEND="Agg", OMP_NUM_THREADS="1",
               MKL_NUM_THREADS="1", LLMMATH_GC_THRESHOLD=GC_THRESHOLD)
    if platform.machine().lower() in ("x86_64", "amd64"):
        env.update(OPENBLAS_CORETYPE="Haswell", OPENBLAS_NUM_THREADS="1",
                   NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL AVX512_SPR", ATEN_CPU_CAPABILITY="avx2")
    return env


REQUIREMENTS = {
    "book": ["requirements.txt"],
    "test": ["requirements.txt", "requirements-test.txt"],
}


def run(*cmd: str | Path, env: dict[str, str] | None = None) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    result = subprocess.run([str(c) for c in cmd], cwd=ROOT, env=env)
    if result.returncode:
        sys.exit(result.returncode)


def setup(kind: str) -> None:
    """Create .venv and install the requirements of ``kind`` ("book" or "test") and llmmath."""
    if sys.version_info < (3, 10):  # noqa: UP036 - dev.py may be started by an older python3
        sys.exit(f"Python >= 3.10 is required, this is {sys.version.split()[0]}")
    if not PY.exists():
        print(f"creating {VENV.name}/", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    for site in [*VENV.glob("lib/python*/site-packages"), *VENV.glob("Lib/site-packages")]:
        hook = site / "llmmath_gc.pth"
        if not hook.is_file() or hook.read_text() != GC_HOOK:
            hook.write_text(GC_HOOK)
    files = ["constraints.txt", "pyproject.toml", *REQUIREMENTS[kind]]
    digest = hashlib.sha256(b"".join((ROOT / f).read_bytes() for f in files)).hexdigest()
    stamp = VENV / f".installed-{kind}"
    if stamp.exists() and stamp.read_text() == digest:
        return
    run(PY, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--upgrade", "pip")
    args = [a for f in REQUIREMENTS[kind][-1:] for a in ("-r", f)]
    run(PY, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *args,
        "-c", "constraints.txt", "-e", ".")
    stamp.write_text(digest)


# A clean build of both editions: the English one (jupyter-book) into _build/html and, beside it in
# a second process, the Chinese one into _build/html/zh; then the two are compared (the same glued
# values, math and links on every page, a language switch both ways). scripts/i18n.py.
BOOK_BUILD = ["scripts/i18n.py", "book"]


def build_book() -> None:
    """A clean build of the book (both editions) into _build/html; any Sphinx warning fails it."""
    shutil.rmtree(ROOT / "_build", ignore_errors=True)
    run(PY, *BOOK_BUILD)


def book() -> None:
    setup("book")
    build_book()
    print(f"\nThe book is at {ROOT / '_build' / 'html' / 'index.html'}"
          f" (the Chinese edition: {ROOT / '_build' / 'html' / 'zh' / 'index.html'})")


def ensure_chromium() -> bool:
    """Install Debian's chromium (and a CJK font) for the browser test when missing (idempotent).

    Needs root and apt-get (CI has both). Returns False, after saying why, only when chromium is
    missing and cannot be installed here; a failing apt-get fails the run.
    """
    missing = [name for name, path in BROWSER_PACKAGES.items() if not path.is_file()]
    if not missing:
        return True
    if getattr(os, "geteuid", lambda: -1)() == 0 and shutil.which("apt-get"):
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        run("apt-get", "update", "-qq", env=env)
        run("apt-get", "install", "-y", "-qq", *missing, env=env)
        if CHROMIUM.is_file():
            return True
        sys.exit(f"apt-get installed chromium but {CHROMIUM} does not exist")
    if CHROMIUM.is_file():
        return True  # without the font the screenshots show Chinese as boxes; the checks still hold
    print(f"\nSKIPPED the browser test: {CHROMIUM} is missing and cannot be installed here (that needs"
          " root and apt-get). Install Debian's chromium package to run it.\n", flush=True)
    return False


def test() -> None:
    setup("test")
    browser = ensure_chromium()
    run(BIN / "ruff", "check", ".")
    # The book build and the browser test read only committed files (no test writes _build/, no
    # build step reads what pytest writes), so they run beside pytest and its notebooks, their
    # output held back and printed after pytest's: on 2 cores the two halves overlap each other's
    # waits (process starts, the browser's page loads).
    with tempfile.TemporaryFile("w+") as log:
        book_status: list[int] = []
        book_job = threading.Thread(target=lambda: book_status.append(_book_then_browser(browser, log)))
        book_job.start()
        print("+ (beside pytest) scripts/i18n.py book (jupyter-book build . -W -n --keep-going, and the"
              " Chinese edition)"
              + (", then scripts/browser_test.py" if browser else ""), flush=True)
        tests = subprocess.run(
            [str(PY), "-m", "pytest", "-n", "2", "--dist", "loadscope", "--nbval", "--nbval-current-env",
             "--nbval-sanitize-with", "tests/nbval_sanitize.cfg", "-p", "no:cacheprovider"],
            cwd=ROOT, env=numeric_env()).returncode
        book_job.join()
        log.seek(0)
        print(log.read(), end="", flush=True)
    book_code = book_status[0] if book_status else 1  # no status: the thread itself failed
    failed = [name for name, code in (("pytest", tests), ("book build or browser test", book_code)) if code]
    if failed:
        sys.exit(f"FAILED: {' and '.join(failed)}")


def _book_then_browser(browser: bool, log) -> int:
    """A clean book build, then (when chromium is there) the browser test; output to ``log``."""
    shutil.rmtree(ROOT / "_build", ignore_errors=True)
    steps = [[str(PY), *BOOK_BUILD]]
    if browser:
        steps.append([str(PY), "scripts/browser_test.py"])
    for cmd in steps:
        log.write(f"+ {' '.join(cmd)}\n")
        log.flush()
        code = subprocess.run(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT).returncode
        if code:
            return code
    return 0


def execute() -> None:
    setup("test")
    run(PY, "scripts/execute.py", *sys.argv[2:], env=numeric_env())


def lite_all() -> None:
    """Every chapter in the JupyterLite edition of the built book (build it first if missing)."""
    setup("test")
    if not (ROOT / "_build" / "html" / "lite" / "files").is_dir():
        build_book()
    if not ensure_chromium():
        sys.exit(1)
    run(PY, "scripts/lite_test.py", "--all", *sys.argv[2:])


def i18n() -> None:
    """The translated editions' tool (scripts/i18n.py): update, status, todo, check, build..."""
    setup("test")
    run(PY, "scripts/i18n.py", *sys.argv[2:])


def bench() -> None:
    setup("test")
    run(PY, "benchmarks/run.py", env=numeric_env())


def coursework() -> None:
    setup("test")
    run(PY, "-m", "coursework", *sys.argv[1:])


COMMANDS = {"book": book, "test": test, "execute": execute, "bench": bench, "lite-all": lite_all,
            "student": coursework, "assign": coursework, "grade": coursework, "gradebook": coursework,
            "i18n": i18n}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        print(__doc__)
        sys.exit(2)
    # Let Python cache compiled modules (__pycache__/, git-ignored) even where the environment
    # forbids it: without the cache every test worker, notebook kernel and spawned rank compiles
    # llmmath, the tests and pytest's assertion rewrites again (about 2.5 s per pytest process).
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    COMMANDS[sys.argv[1]]()
