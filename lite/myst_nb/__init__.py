"""A stand-in for ``myst_nb`` in the book's JupyterLite edition (Pyodide has no myst-nb).

The chapters call ``glue(key, value, display=False)`` to hand a computed number to the book's
text. In the browser there is no book around the notebook, so ``glue`` shows what it would hand
over: the value itself when ``display`` is true (as myst-nb does), and one line ``key = value``
otherwise, so the reader sees every number the text quotes.
"""

from __future__ import annotations

__version__ = "0.0.0+lite"
__all__ = ["glue"]


def glue(name: str, variable: object, display: bool = True) -> None:
    """Show ``variable`` under the name ``name`` (the book's text quotes it by that name)."""
    from IPython.display import display as show

    if display:
        show(variable)
    else:
        show({"text/plain": f"{name} = {variable!r}"}, raw=True)
