"""A pytest plugin that records the CPU seconds of every test (the bench's per-file table).

    LLMMATH_CPU_LOG=/tmp/cpu python -m pytest -p benchmarks.cpu_plugin ...

Each process (the controller and every xdist worker) appends one JSON line per test to
``$LLMMATH_CPU_LOG/<pid>.jsonl``: the test's node id, its wall seconds and the CPU seconds (user +
system) of the whole process tree during its setup, call and teardown: the worker itself, its
children that ended (notebook kernels, spawned ranks, subprocesses) and those still running. A
line ``{"collect": ...}`` gives the CPU of the worker's start and collection. Nothing is recorded
without the variable; the plugin never fails a test.
"""

from __future__ import annotations

import json
import os
import resource
import time
from pathlib import Path

import pytest

try:
    import psutil
except ImportError:  # pragma: no cover - psutil comes with ipykernel
    psutil = None

_DIR = os.environ.get("LLMMATH_CPU_LOG")
_START = time.perf_counter()


def tree_cpu() -> float:
    """CPU seconds of this process, its ended children and its live descendants (and theirs)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    total = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
    if psutil is not None:
        procs, server = psutil.Process().children(recursive=True), set()
        for proc in procs:  # tests/kernel_fork.py's server logs its kernels' CPU itself
            try:
                if "kernel_fork.py" in " ".join(proc.cmdline()[1:3]):
                    server.add(proc.pid)
            except psutil.Error:
                pass
        for proc in procs:
            try:
                if proc.pid in server or proc.ppid() in server:
                    continue
                t = proc.cpu_times()
                total += t.user + t.system + t.children_user + t.children_system
            except psutil.Error:  # ended meanwhile: counted by its parent once it is reaped
                pass
    return total


def _write(record: dict) -> None:
    if not _DIR:
        return
    Path(_DIR).mkdir(parents=True, exist_ok=True)
    with open(Path(_DIR) / f"{os.getpid()}.jsonl", "a") as f:
        f.write(json.dumps(record) + "\n")


def pytest_collection_finish(session) -> None:
    _write({"collect": tree_cpu(), "wall": time.perf_counter() - _START,
            "worker": os.environ.get("PYTEST_XDIST_WORKER", "main")})


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if not _DIR:
        yield
        return
    cpu, wall = tree_cpu(), time.perf_counter()
    yield
    record = {"test": item.nodeid, "cpu": tree_cpu() - cpu, "wall": time.perf_counter() - wall,
              "worker": os.environ.get("PYTEST_XDIST_WORKER", "main")}
    kernel = getattr(getattr(item.parent, "kernel", None), "km", None)  # nbval's notebook kernel
    if kernel is not None:  # forked by tests/kernel_fork.py, which logs its CPU under this name
        record["kernel"] = kernel.connection_file
    _write(record)


def pytest_sessionfinish(session) -> None:
    _write({"end": tree_cpu(), "wall": time.perf_counter() - _START,
            "worker": os.environ.get("PYTEST_XDIST_WORKER", "main")})


def summary(folder: Path) -> dict[str, dict[str, float]]:
    """CPU and wall seconds by test file (a notebook is a file, its kernel included), plus
    ``(start+collect)``, ``(finish)`` and the kernel server's imports, summed over the workers."""
    out: dict[str, dict[str, float]] = {}

    def add(key: str, cpu: float, wall: float, n: int = 0) -> None:
        row = out.setdefault(key, {"cpu": 0.0, "wall": 0.0, "tests": 0})
        row["cpu"] += cpu
        row["wall"] += wall
        row["tests"] += n

    kernels: dict[str, float] = {}  # tests/kernel_fork.py: connection file -> the kernel's CPU
    for path in sorted(Path(folder).glob("kernels-*.jsonl")):
        for line in path.read_text().splitlines():
            r = json.loads(line)
            if "kernel" in r:
                kernels[r["kernel"]] = r["cpu"]
            else:
                add("(kernel server: imports)", r["cpu"], 0.0)
    for path in sorted(Path(folder).glob("[0-9]*.jsonl")):
        tests = 0.0
        for line in path.read_text().splitlines():
            r = json.loads(line)
            if "collect" in r:
                add("(start+collect)", r["collect"], r["wall"])
            elif "test" in r:
                tests += r["cpu"]
                add(r["test"].split("::")[0], r["cpu"] + kernels.pop(r.get("kernel"), 0.0), r["wall"], 1)
            elif "end" in r and r["worker"] != "main":
                collected = next((json.loads(x)["collect"] for x in path.read_text().splitlines()
                                  if "collect" in x), 0.0)
                add("(finish)", r["end"] - collected - tests, 0.0)
    return out
