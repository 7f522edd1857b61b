"""What the chapter *parallelism* shows of the distributed checks, as recorded by the tests.

The chapter does not start process groups (the whole test run is near its time budget): its
reference page reads ``distributed_record.json``, the measurements of ``distributed_checks.run``
that it shows, and compares them with ``llmmath``'s formulas. The record cannot go stale:
``tests/test_distributed.py::test_chapter_record_is_current`` measures again in its shared process
groups and requires :func:`record` of what it measured to equal the file
(``LLMMATH_RECORD=1 pytest tests/test_distributed.py -k record`` rewrites it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PATH = Path(__file__).with_name("distributed_record.json")
#: The world size whose measurements the chapter shows in full; the pipelines come from both.
WORLD = 2
#: What a run returns besides measurements of PyTorch (``seconds``: how long each check took).
_NOT_SHOWN = ("pipeline", "seconds")


def record(measured: dict[int, list[dict[str, Any]]]) -> dict[str, Any]:
    """The measurements the chapter shows, JSON-ready: every check of the ``WORLD``-rank group (per
    rank), and the pipeline schedules and the mixture of experts of every group."""
    pipelines = {}
    for world, ranks in sorted(measured.items()):
        cases = {}
        for key, case in ranks[0].get("pipeline", {}).items():
            cases[key] = {"schedule": case["schedule"], "virtual_stages": case["virtual_stages"],
                          "microbatches": case["microbatches"],
                          "actions": [r["pipeline"][key]["actions"] for r in ranks],
                          "peaks": [r["pipeline"][key]["peak"] for r in ranks],
                          "alive": [r["pipeline"][key]["alive"] for r in ranks]}
        pipelines[str(world)] = cases
    ranks = measured[WORLD]
    checks = {name: [r[name] for r in ranks] for name in ranks[0] if name not in _NOT_SHOWN}
    moe = {str(world): [r["moe"] for r in ranks] for world, ranks in sorted(measured.items())
           if "moe" in ranks[0]}  # four ranks make two "nodes" of two
    return json.loads(json.dumps({"world": WORLD, "checks": checks, "pipeline": pipelines, "moe": moe}))


def load() -> dict[str, Any]:
    """The committed record."""
    return json.loads(PATH.read_text())


def write(measured: dict[int, list[dict[str, Any]]]) -> None:
    PATH.write_text(json.dumps(record(measured), indent=1, sort_keys=True) + "\n")
