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
