"""Plot defaults for the book's notebooks: PNG output (never SVG) and a fixed, readable style.

Importing this module is enough: ``import llmmath.plotting``. It has no public formula.

Used by the chapter notebooks only (their first code cell): ``import llmmath`` does not import it,
since it selects matplotlib's backend, and no module of the formula sheet depends on matplotlib.
It ships inside the package so that the same first cell works in every edition of a notebook
(locally, in the student notebooks and in JupyterLite).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # headless and deterministic; inline display still works in Jupyter

import matplotlib.pyplot as plt  # noqa: E402

plt.rcParams.update(
    {
        "figure.figsize": (6.4, 3.8),
        "figure.dpi": 100,
        "savefig.dpi": 100,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "font.size": 10,
        "svg.hashsalt": "llmmath",
    }
)

try:  # inside IPython: PNG figures only
    from IPython import get_ipython

    _ip = get_ipython()
    if _ip is not None:
        _ip.run_line_magic("matplotlib", "inline")
        _ip.run_line_magic("config", "InlineBackend.figure_formats = ['png']")
except ImportError:  # pragma: no cover - IPython is always present in the notebook environment
    pass
