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
* sympy, mpmath and comm as pure-Python wheels from PyPI (``pip download --require-hashes``);
* llmmath and the ``myst_nb`` shim (``lite/myst_nb``) written into wheels here, from the sources;
* the chapter notebooks, made for the browser (:func:`lite_notebook`): outputs cleared, a first
  cell on what differs from the book, cells tagged ``needs-torch`` (PyTorch or transformers) or
  ``not-in-browser`` (too heavy for Pyodide) replaced by one ``print`` that names the local
  command, MyST markup rendered as plain Markdown.
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


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


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
import compileall, os, py_compile
for name in sorted(os.listdir("/work/src")):
    ok = compileall.compile_dir(f"/work/src/{name}", quiet=1, workers=1, legacy=True,
                                invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    assert ok, name
`);
})().catch((err) => { console.error(err); process.exit(1); });
"""


def compiled_in_pyodide(core: Path, wheels: dict[str, Path]) -> dict[str, Path]:
    """The pure wheels compiled by Pyodide's Python (sourceless).

    Pyodide compiles a module that has no bytecode at every import: sympy's first import takes
    many seconds in the browser, most of it compiling. Its own packages come compiled; the PyPI
    wheels are compiled here once, in Pyodide under Node (``npm`` brings Node), into ``.pyc``
    files that replace the sources (as in Pyodide's own packages: smaller, and nothing to check
    against a source's time). Cached by the wheels' sha256.
    """
    parts = [core.name, NODE_SCRIPT, *sorted(sha256(p) for p in wheels.values())]
    key = hashlib.sha256("".join(parts).encode()).hexdigest()[:16]
    dest = CACHE / f"compiled-{key}"
    if (dest / ".complete").is_file():
        return {req: dest / p.name for req, p in wheels.items()}
    node = shutil.which("node")
    if node is None:
        raise BundleError("Node.js is needed once, to compile the pure wheels in Pyodide (it comes with npm)")
    _log(f"compiling {', '.join(wheels)} in Pyodide (once)")
    tmp = Path(tempfile.mkdtemp(dir=CACHE))
    for path in wheels.values():
        with zipfile.ZipFile(path) as z:
            z.extractall(tmp / "src" / path.stem)
    script = tmp / "compile.js"
    script.write_text(NODE_SCRIPT)
    done = subprocess.run([node, str(script), str(core), str(tmp)], capture_output=True, text=True)
    if done.returncode:
        shutil.rmtree(tmp, ignore_errors=True)
        raise BundleError(f"compiling in Pyodide failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    for path in wheels.values():  # sourceless, as Pyodide's own packages: module.pyc for module.py
        src = tmp / "src" / path.stem
        files = sorted(f for f in src.rglob("*") if f.is_file() and not (
            f.suffix == ".py" and f.with_suffix(".pyc").is_file()) and f.name != "RECORD"
            and "tests" not in f.relative_to(src).parts)  # test suites left out, as Pyodide does
        record = next(src.glob("*.dist-info")) / "RECORD"
        with zipfile.ZipFile(tmp / path.name, "w", zipfile.ZIP_DEFLATED) as z:
            for f in files:
                z.write(f, f.relative_to(src).as_posix())
            listed = [f.relative_to(src).as_posix() for f in files] + [record.relative_to(src).as_posix()]
            z.writestr(listed[-1], "".join(f"{name},,\n" for name in listed))
    shutil.rmtree(tmp / "src")
    script.unlink()
    (tmp / ".complete").write_text(key)
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    return {req: dest / p.name for req, p in wheels.items()}


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


def llmmath_wheel(dest: Path) -> Path:
    """llmmath (the working tree's sources and package data) as a wheel."""
    version = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    return write_wheel(dest, "llmmath", version, _package_files(ROOT / "llmmath", ("*.py", "*.json")),
                       ["numpy", "sympy"])


def shim_wheel(dest: Path) -> Path:
    """``lite/myst_nb``: ``glue`` that shows the value (Pyodide has no myst-nb)."""
    return write_wheel(dest, "myst-nb", "0.0.0+lite", _package_files(LITE_SRC / "myst_nb"), [])


def piplite_index(folder: Path) -> None:
    """``folder/all.json``: the wheels of ``folder`` in piplite's index format (``%pip install`` works)."""
    index: dict[str, dict] = {}
    for whl in sorted(folder.glob("*.whl")):
        name, version = whl.name.split("-")[:2]
        data = whl.read_bytes()
        index.setdefault(_norm(name), {"releases": {}})["releases"][version] = [{
            "comment_text": "", "digests": {"sha256": hashlib.sha256(data).hexdigest(),
                                            "md5": hashlib.md5(data).hexdigest()},  # noqa: S324 - index format
            "downloads": -1, "filename": whl.name, "has_sig": False, "packagetype": "bdist_wheel",
            "python_version": "py3", "requires_python": ">=3.10", "size": len(data),
            "upload_time": "1980-01-01T00:00:00Z", "upload_time_iso_8601": "1980-01-01T00:00:00Z",
            "url": f"./{whl.name}", "yanked": False, "yanked_reason": None}]
    (folder / "all.json").write_text(json.dumps(index, indent=1, sort_keys=True))


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


def build_site(out: Path, notebooks: list[Path], pyodide: str = "local") -> dict[str, float]:
    """Write the JupyterLite site into ``out`` (emptied first); return sizes in MB by part.

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
    ext_pkg = json.loads((ext / "package.json").read_text())
    build = ext_pkg["jupyterlab"]["_build"]
    federated = [{"name": ext_pkg["name"], "load": build["load"],
                  **{k: build[k] for k in ("extension", "mimeExtension", "style") if k in build}}]

    names = list(s["pyodide_packages"])
    pypi = out / "pypi"  # wheels installed at start (by URL) and offered to %pip
    pypi.mkdir(parents=True)
    own = [llmmath_wheel(pypi), shim_wheel(pypi)]
    if pyodide == "local":
        folder, files = pyodide_packages(s, lock)
        static = out / "static" / "pyodide"
        static.mkdir(parents=True)
        for name in s["pyodide"]["core_files"]:
            shutil.copy2(core / name, static / name)
        for name in files:
            shutil.copy2(folder / name, static / name)
        pyodide_url = "./static/pyodide/pyodide.js"
    else:
        pyodide_url = s["pyodide"]["cdn_url"] + "pyodide.js"
    # sympy and mpmath as the book pins them (Pyodide's own sympy is older), compiled
    pure = {r: p for r, p in wheels.items() if not r.startswith("comm==")}
    for path in compiled_in_pyodide(core, pure).values():
        shutil.copy2(path, pypi / path.name)
        own.append(pypi / path.name)
    comm = next(p for r, p in wheels.items() if r.startswith("comm=="))  # the kernel installs it (piplite)
    shutil.copy2(comm, pypi / comm.name)
    piplite_index(pypi)
    urls = [f"{WORKER_TO_LITE}pypi/{p.name}" for p in own]

    config_path = out / "jupyter-lite.json"
    config = json.loads(config_path.read_text())
    data = config["jupyter-config-data"]
    data.update({
        "appName": "llmmath (in the browser)",
        "exposeAppInBrowser": True,  # window.jupyterapp: the browser test drives the notebook with it
        "federated_extensions": federated,
        "fullLabextensionsUrl": "./extensions",
        "litePluginSettings": {f"{KERNEL_EXTENSION}:kernel": {
            "pyodideUrl": pyodide_url,
            "disablePyPIFallback": True,
            "pipliteUrls": [f"./extensions/{KERNEL_EXTENSION}/static/pypi/all.json", "./pypi/all.json"],
            "loadPyodideOptions": {"packages": names + urls},
        }},
    })
    config_path.write_text(json.dumps(config, indent=2))
    translations = out / "api" / "translations"
    translations.mkdir(parents=True)
    (translations / "all.json").write_text(json.dumps(
        {"data": {"en": {"displayName": "English", "nativeName": "English"}}, "message": ""}))
    (translations / "en.json").write_text(json.dumps({"data": {}, "message": ""}))
    (out / "build" / "schemas" / "all_federated.json").write_text("[]")  # the kernel has no settings schema
    favicons = out / "static" / "favicons"  # the notebook app swaps these while the kernel is busy
    favicons.mkdir(parents=True, exist_ok=True)
    for name in ("favicon", "favicon-busy-1", "favicon-busy-2", "favicon-busy-3", "favicon-file",
                 "favicon-notebook", "favicon-terminal"):
        shutil.copy2(out / "notebooks" / "favicon.ico", favicons / f"{name}.ico")

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

    return {"total": mb("."), "pyodide": mb("static") if (out / "static").exists() else 0.0,
            "app": mb("build", *APPS, "extensions"), "wheels": mb("pypi"), "notebooks": mb("files")}


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
    _log(f"JupyterLite edition: {len(notebooks)} notebooks, {sizes['total']:.1f} MB "
         f"(Pyodide {sizes['pyodide']:.1f}, app {sizes['app']:.1f}, wheels {sizes['wheels']:.1f}); "
         f"{time.perf_counter() - t0:.1f} s")


def setup(app) -> dict[str, object]:
    app.add_config_value("llmmath_lite", True, "html", types=[bool])
    app.add_config_value("llmmath_lite_pyodide", "local", "html", types=[str])
    app.connect("html-page-context", _button, priority=502)  # after sphinx-book-theme's buttons
    app.connect("build-finished", _build)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
