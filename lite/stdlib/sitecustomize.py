"""The JupyterLite edition's start-up additions to Pyodide's Python (written into its standard
library by ``_ext/jupyterlite_bundle.py``; ``site`` imports this module when Python starts).

The kernel's working folder is the browser's drive (``/drive``), and ``''`` (that folder) comes
first in ``sys.path``. Python's finder for a folder reads its listing once and then, at every
import of a top-level module, asks the folder's modification time to see whether the listing is
still good: on ``/drive`` each such question is a synchronous request that the page's main thread
answers (the kernel waits for it while the page is busy drawing the notebook). Starting the kernel
and importing numpy, sympy and matplotlib asked it more than a hundred times.

Here the working folder's finder reads the listing once per cell instead (once for the kernel's
start, before IPython runs a cell): a module written by one cell imports in the next, and in the
same cell after ``importlib.invalidate_caches()``, as Python's own documentation asks when a module
is created while the program runs. A name that is in the listing is looked up as Python does.
"""

import os
import sys
from importlib._bootstrap_external import _get_supported_file_loaders
from importlib.machinery import FileFinder, all_suffixes

_path_hook = FileFinder.path_hook(*_get_supported_file_loaders())


_cells = [0]  # cells IPython started to run (counted from when the first import asked)


def _count_cell(info=None) -> None:
    _cells[0] += 1


def _cell() -> int | None:
    """A number that changes at every cell IPython runs (None before its shell exists)."""
    shell = getattr(sys.modules.get("IPython.core.interactiveshell"), "InteractiveShell", None)
    shell = shell and shell._instance  # (the module may be half imported: no class yet)
    events = getattr(shell, "events", None)
    if events is None:
        return None
    if _count_cell not in events.callbacks["pre_run_cell"]:
        events.register("pre_run_cell", _count_cell)
    return _cells[0]


def _listing(path: str) -> set[str]:
    """The names in the folder ``path``: one request on the browser's drive (``os.listdir``
    would ask the page about each name as well)."""
    try:
        import pyodide_js

        return set(pyodide_js.FS.readdir(path).to_py())
    except Exception:  # noqa: BLE001 - not in Pyodide, or not a folder: as Python would
        return set(os.listdir(path))


class _WorkingFolderFinder:
    """The finder of ``''`` (the working folder) that reads the folder once per cell."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._names = self._finder = None
        self._key = -1

    def invalidate_caches(self) -> None:
        self._names = self._finder = None

    def find_spec(self, fullname, target=None):
        key = _cell()
        if self._names is None or key != self._key:
            try:
                self._names, self._key, self._finder = _listing(self._path), key, None
            except OSError:
                return None
        name = fullname.rpartition(".")[2]
        if name in self._names or any(name + suffix in self._names for suffix in all_suffixes()):
            if self._finder is None:  # Python's finder, for what the folder holds
                self._finder = _path_hook(self._path)
            return self._finder.find_spec(fullname, target)
        return None  # not in the listing read for this cell


def _working_folder_hook(path: str):
    try:  # Python looks the entry '' up under the working folder's name
        here = os.getcwd()
    except OSError:
        here = None
    if path not in ("", ".", here):
        raise ImportError("only the working folder")
    return _WorkingFolderFinder(path)


sys.path_hooks.insert(0, _working_folder_hook)
