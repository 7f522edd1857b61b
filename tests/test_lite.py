"""The JupyterLite edition's build (_ext/jupyterlite_bundle.py) and its rule for PyTorch cells.

Fast tests only: the browser run of a chapter is scripts/lite_test.py (run by the browser test).
"""

from __future__ import annotations

import ast
import base64
import hashlib
import json
import re
import sys
import zipfile
from pathlib import Path

import pytest

from coursework.exercises import ROOT, chapter_notebooks

sys.path.insert(0, str(ROOT / "_ext"))
import jupyterlite_bundle as bundle  # noqa: E402

# a code cell that needs PyTorch or transformers (or the tests' transformers helpers)
NEEDS_TORCH = re.compile(
    r"^\s*(?:import|from)\s+(?:torch|transformers|(?:tests\.)?(?:hf_reference|distributed_checks))\b", re.M)
TORCH_NAMES = {"torch", "transformers"}


def _needs_torch(source: str) -> bool:
    """The cell imports torch/transformers (or the tests' helpers), or uses one of the two by name
    (``if torch is not None:``, ``torch.tensor(...)`` after an import in an earlier cell)."""
    if NEEDS_TORCH.search(source):
        return True
    try:
        tree = ast.parse(source)
    except SyntaxError:  # IPython syntax: the import rule alone
        return False
    return any(isinstance(n, ast.Name) and n.id in TORCH_NAMES for n in ast.walk(tree))


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.stem)
def test_cells_needing_torch_are_tagged(path):
    """Every code cell importing or using torch/transformers carries the tag ``needs-torch``: in the
    browser (Pyodide has neither) it is replaced by one line naming the local command."""
    nb = json.loads(path.read_text())
    untagged = [i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"
                and _needs_torch("".join(c["source"]))
                and bundle.TORCH_TAG not in c.get("metadata", {}).get("tags", [])]
    assert not untagged, f"{path.name}: code cells {untagged} use torch/transformers without the tag"


def test_the_torch_rule_sees_imports_and_later_uses():
    assert _needs_torch("import torch") and _needs_torch("x = 1\nfrom transformers import GPT2Config")
    assert _needs_torch("    import distributed_checks as dc") and _needs_torch("import hf_reference")
    assert _needs_torch("if torch is not None:\n    pass") and _needs_torch("w = torch.zeros(3)")
    assert not _needs_torch('glue("x", 1)  # torch.zeros in a comment')
    assert not _needs_torch('s = "torch.tensor in a string"; torch_free = 1')


def _nb(cells):
    return {"cells": cells, "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}


def test_lite_notebook_replaces_tagged_cells_and_clears_outputs():
    glue_out = {"output_type": "display_data",  # as myst-nb writes glue(..., display=False)
                "data": {"application/papermill.record/text/plain": "4096"},
                "metadata": {"scrapbook": {"name": "x-n", "mime_prefix": "application/papermill.record/"}}}
    nb = _nb([
        {"cell_type": "markdown", "metadata": {},
         "source": "# T\n\nIt is {glue:text}`x-n:,.0f` {cite:p}`kaplan2020scaling`."},
        {"cell_type": "code", "metadata": {}, "source": "n = 4096", "outputs": [glue_out], "execution_count": 3},
        {"cell_type": "code", "metadata": {"tags": ["needs-torch"]}, "source": "import torch", "outputs": [],
         "execution_count": 4},
        {"cell_type": "code", "metadata": {"tags": ["not-in-browser"]}, "source": "measure()", "outputs": [],
         "execution_count": 5},
    ])
    out = bundle.lite_notebook(nb, "x", "NOTE")
    assert out["cells"][0]["source"] == "NOTE"
    assert out["cells"][1]["source"] == "# T\n\nIt is 4,096 (Kaplan et al., 2020)."
    code = [c for c in out["cells"] if c["cell_type"] == "code"]
    assert all(c["outputs"] == [] and c["execution_count"] is None for c in code)
    assert code[0]["source"] == "n = 4096"
    assert code[1]["source"].startswith("print(") and "python3 dev.py execute chapters/x.ipynb" in code[1]["source"]
    assert "import torch" not in code[1]["source"]
    assert code[2]["source"].startswith("print(") and "measure()" not in code[2]["source"]
    compile(code[1]["source"], "cell", "exec")  # the replacement is valid Python
    assert out["metadata"]["kernelspec"]["name"] == "python"  # JupyterLite's Pyodide kernel
    assert nb["cells"][1]["outputs"] == [glue_out]  # the chapter itself is untouched


def test_glue_shim_shows_the_value(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *objs, **kw: shown.append((objs, kw)))
    sys.path.insert(0, str(ROOT / "lite"))
    try:
        import myst_nb as shim
    finally:
        sys.path.remove(str(ROOT / "lite"))
    if not getattr(shim, "__version__", "").endswith("+lite"):  # the real myst_nb was imported first
        shim = _load(ROOT / "lite" / "myst_nb" / "__init__.py")
    shim.glue("slug-n", 12288, display=False)
    shim.glue("slug-fig", "FIGURE")
    assert shown[0] == (({"text/plain": "slug-n = 12288"},), {"raw": True})
    assert shown[1] == (("FIGURE",), {})


def _load(path: Path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("myst_nb_lite_shim", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_write_wheel_records_each_file_with_its_hash(tmp_path):
    path = bundle.write_wheel(tmp_path, "demo-pkg", "1.2", {"demo_pkg/__init__.py": b"X = 1\n"}, ["numpy"])
    assert path.name == "demo_pkg-1.2-py3-none-any.whl"
    with zipfile.ZipFile(path) as z:
        record = z.read("demo_pkg-1.2.dist-info/RECORD").decode()
        meta = z.read("demo_pkg-1.2.dist-info/METADATA").decode()
    digest = base64.urlsafe_b64encode(hashlib.sha256(b"X = 1\n").digest()).rstrip(b"=").decode()
    assert f"demo_pkg/__init__.py,sha256={digest},6" in record
    assert "Name: demo-pkg\nVersion: 1.2\n" in meta and "Requires-Dist: numpy" in meta


def test_llmmath_wheel_holds_every_module_and_the_configs(tmp_path):
    with zipfile.ZipFile(bundle.llmmath_wheel(tmp_path)) as z:
        names = set(z.namelist())
    expected = {p.relative_to(ROOT).as_posix() for p in (ROOT / "llmmath").rglob("*")
                if p.suffix in (".py", ".json") and "__pycache__" not in p.parts}
    assert expected and expected <= names


def test_a_bundled_file_without_the_official_sha256_fails_the_build(tmp_path, monkeypatch):
    good, bad = b"official bytes", b"tampered bytes"
    lock = {"info": {"version": "0.0.0"}, "packages": {
        "demo": {"file_name": "demo-1.0-py3-none-any.whl", "sha256": hashlib.sha256(good).hexdigest(),
                 "depends": []}}}
    source = tmp_path / "source.whl"
    with zipfile.ZipFile(source, "w") as z:
        z.writestr("assets/demo-1.0-py3-none-any.whl", bad)
    monkeypatch.setattr(bundle, "CACHE", tmp_path / "cache")
    monkeypatch.setattr(bundle, "pip_wheels", lambda pins: {req: source for req in pins})
    spec = {"pyodide_packages": ["demo"],
            "pyodide_packages_source": {"pip": "src==1", "sha256": "0" * 64, "folder": "assets/"}}
    with pytest.raises(bundle.BundleError, match="differs from Pyodide 0.0.0's lock"):
        bundle.pyodide_packages(spec, lock)
    with zipfile.ZipFile(source, "w") as z:  # the official file passes
        z.writestr("assets/demo-1.0-py3-none-any.whl", good)
    (tmp_path / "cache" / "pyodide-0.0.0-packages" / "demo-1.0-py3-none-any.whl").unlink()
    folder, files = bundle.pyodide_packages(spec, lock)
    assert files == ["demo-1.0-py3-none-any.whl"] and (folder / files[0]).read_bytes() == good


def test_lock_closure_follows_dependencies():
    lock = {"packages": {"a": {"depends": ["b_c"]}, "b-c": {"depends": ["d"]}, "d": {"depends": []},
                         "e": {"depends": []}}}
    assert bundle.lock_closure(lock, ["a"]) == ["a", "b-c", "d"]
    with pytest.raises(bundle.BundleError, match="not a package"):
        bundle.lock_closure(lock, ["zzz"])


# --------------------------------------------------------------------------- the lock, the start, the cache
def _wheel(tmp_path, name, files, requires=()):
    return bundle.write_wheel(tmp_path, name, "1.0", files, list(requires))


def test_wheel_metadata_reads_imports_and_the_requirements_pyodide_needs(tmp_path):
    path = _wheel(tmp_path, "demo-pkg", {"demo/__init__.py": b"", "demo_mod.pyc": b"", "demo/sub.py": b"",
                                         "data/README": b""},
                  ["numpy>=1", "pytest; extra == 'test'", "tomli; python_version < '3.11'", "Comm"])
    meta = bundle.wheel_metadata(path)
    assert meta == {"name": "demo-pkg", "version": "1.0", "imports": ["demo", "demo_mod"],
                    "requires": ["comm", "numpy"]}


def test_site_lock_lists_each_file_with_its_sha256_and_refuses_what_it_does_not_bundle(tmp_path):
    official = {"info": {"version": "0.0.0"}, "packages": {
        "numpy": {"name": "numpy", "version": "2", "file_name": "numpy-2.whl", "sha256": "0" * 64,
                  "imports": ["numpy"], "depends": [], "install_dir": "site", "package_type": "package"}}}
    numpy = tmp_path / "numpy-2.whl"
    numpy.write_bytes(b"compiled numpy")
    own = _wheel(tmp_path, "demo", {"demo/__init__.py": b""}, ["numpy", "widgetsnbextension"])
    lock = bundle.site_lock(official, {"numpy": numpy}, {"demo": own})
    assert lock["packages"]["numpy"]["sha256"] == hashlib.sha256(b"compiled numpy").hexdigest()
    assert lock["packages"]["numpy"]["file_name"] == "numpy-2.whl"  # Pyodide's metadata kept
    demo = lock["packages"]["demo"]
    assert demo["depends"] == ["numpy"] and demo["imports"] == ["demo"]  # the JS-only requirement dropped
    assert demo["sha256"] == hashlib.sha256(own.read_bytes()).hexdigest()
    with pytest.raises(bundle.BundleError, match="requires numpy, which the edition does not bundle"):
        bundle.site_lock(official, {}, {"demo": own})


def test_llmmath_loads_with_every_package_its_modules_import():
    by_import = {"numpy": "numpy", "matplotlib": "matplotlib", "IPython": "ipython", "ipywidgets": "ipywidgets",
                 "sympy": "sympy"}
    needed = bundle.llmmath_requires(by_import)
    # llmmath.plotting imports matplotlib and IPython, llmmath.live ipywidgets: a cell importing them
    # names only llmmath, which is all Pyodide sees
    assert {"numpy", "matplotlib", "ipython", "ipywidgets"} <= set(needed)
    with pytest.raises(bundle.BundleError, match="llmmath imports .*numpy"):
        bundle.llmmath_requires({k: v for k, v in by_import.items() if k != "numpy"})


def test_the_kernel_starts_without_installing_anything():
    """jupyterlite-pyodide-kernel installs each of these with micropip/piplite at start unless
    ``loadPyodideOptions.packages`` names it (its worker.ts, 0.6.1): every one is preloaded."""
    kernel_start = {"micropip", "piplite", "ssl", "sqlite3", "ipykernel", "comm", "pyodide_kernel", "jedi", "ipython"}
    assert kernel_start <= set(bundle.KERNEL_PACKAGES)


def test_the_service_worker_keeps_only_hashed_paths():
    pattern = re.compile(bundle.IMMUTABLE)
    kept = ["/lite/static/pyodide-0123456789ab/numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl",
            "/lite/build/jlab_core.8f86ffc.js", "/lite/extensions/x/static/352.cc74f63a8f779ace30b6.js"]
    network = ["/lite/jupyter-lite.json", "/lite/files/matmul-cost.ipynb", "/lite/build/bootstrap.js",
               "/lite/api/contents/all.json", "/lite/static/pyodide/pyodide.js", "/lite/notebooks/index.html",
               "/lite/static/pyodide-0123456789ab/sub/dir.js"]
    assert all(pattern.search(p) for p in kept)
    assert not any(pattern.search(p) for p in network)
    template = (ROOT / "lite" / "service-worker.js").read_text()
    assert template.count("__LLMMATH_VERSION__") == 1 and template.count("__LLMMATH_IMMUTABLE__") == 1


def test_the_kernel_worker_starts_early_under_a_hashed_name(tmp_path):
    static = tmp_path / "extensions" / bundle.KERNEL_EXTENSION / "static"
    static.mkdir(parents=True)
    (static / "592.dfd0b9431bfb4edbbcd2.js").write_text(
        "initWorker(e){return crossOriginIsolated?new Worker(new URL(n.p+n.u(620),n.b),{type:void 0}):"
        "new Worker(new URL(n.p+n.u(352),n.b),{type:void 0})}")
    (static / "352.cc74f63a8f779ace30b6.js").write_text("/* the kernel's worker */")
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "index.html").write_text("<html>\n  <head>\n  </head>\n</html>\n")
    (tmp_path / "jupyter-lite.json").write_text(json.dumps({"jupyter-config-data": {"appVersion": "9.9.9"}}))
    kernel = {"pyodideUrl": "./static/pyodide-0123456789ab/pyodide.js",
              "loadPyodideOptions": {"packages": bundle.KERNEL_PACKAGES}}
    name = bundle.kernel_prewarm(tmp_path, kernel)
    worker = (static / name).read_text()
    assert re.search(bundle.IMMUTABLE, f"/lite/extensions/x/static/{name}")
    assert '"352.cc74f63a8f779ace30b6.js"' in worker and "./static/pyodide-0123456789ab/pyodide.js" in worker
    assert "__LLMMATH_" not in worker and json.dumps(bundle.KERNEL_PACKAGES) in worker
    page = (tmp_path / "notebooks" / "index.html").read_text()
    assert name in page and "352.cc74f63a8f779ace30b6.js" in page and "__LLMMATH_" not in page
    assert 'localStorage.setItem(key, "9.9.9")' in page  # the app's version, as jupyterlite-core writes it
    (static / "592.dfd0b9431bfb4edbbcd2.js").write_text("another version of the extension")
    with pytest.raises(bundle.BundleError):
        bundle.kernel_prewarm(tmp_path, kernel)


def test_folder_version_changes_with_any_file(tmp_path):
    (tmp_path / "a").write_bytes(b"1")
    first = bundle.folder_version(tmp_path)
    (tmp_path / "a").write_bytes(b"2")
    assert bundle.folder_version(tmp_path) != first and re.fullmatch(r"[0-9a-f]{12}", first)


def test_repack_replaces_compiled_sources_and_keeps_the_rest(tmp_path):
    src = tmp_path / "src"
    (src / "pkg" / "tests").mkdir(parents=True)
    (src / "pkg-1.0.dist-info").mkdir()
    for name, data in {"pkg/a.py": b"x = 1", "pkg/a.pyc": b"BYTECODE", "pkg/bad.py": b"def (", "pkg/data.json": b"{}",
                       "pkg/tests/t.py": b"", "pkg/tests/t.pyc": b"", "pkg-1.0.dist-info/RECORD": b"old"}.items():
        (src / name).write_bytes(data)
    kept = bundle._repack(src, tmp_path / "out.whl", drop_tests=True)
    with zipfile.ZipFile(tmp_path / "out.whl") as z:
        names = set(z.namelist())
    assert names == {"pkg/a.pyc", "pkg/bad.py", "pkg/data.json", "pkg-1.0.dist-info/RECORD"}
    assert kept == ["pkg/bad.py"]  # a file that did not compile keeps its source
    bundle._repack(src, tmp_path / "keep.whl", drop_tests=False, keep_sources=True)
    with zipfile.ZipFile(tmp_path / "keep.whl") as z:
        assert {"pkg/a.py", "pkg/a.pyc", "pkg/tests/t.py"} <= set(z.namelist())


def test_the_service_worker_answers_what_jupyterlites_answers():
    """Ours replaces jupyterlite-core's: the paths it answers and its broadcast channel (the
    kernel's file system and stdin go through them) must be those of the pinned JupyterLite's."""
    theirs = (bundle._app_source() / "service-worker.js").read_text()
    ours = (ROOT / "lite" / "service-worker.js").read_text()
    literals = set(re.findall(r'"(/api/[\w/-]*|/sw-api[\w.]*)"', theirs))
    assert {"/api/service-worker-heartbeat", "/api/drive", "/api/stdin/", "/sw-api.v1"} <= literals
    literals.discard("/api/")  # theirs leaves other /api/ requests to the network: ours answers none
    assert all(f'"{lit}"' in ours for lit in literals), literals
