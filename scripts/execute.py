"""Execute chapter notebooks in place, top to bottom, so their committed outputs are fresh.

Usage: python scripts/execute.py [NOTEBOOK ...]   (default: every notebook under chapters/)
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent


def execute(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    # drop volatile metadata so diffs stay small and outputs deterministic
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
    nbformat.write(nb, path)
    print(f"executed {path.relative_to(ROOT)}")


def main(argv: list[str]) -> int:
    paths = [Path(p).resolve() for p in argv] or sorted((ROOT / "chapters").rglob("*.ipynb"))
    for path in paths:
        if ".ipynb_checkpoints" not in path.parts:
            execute(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
