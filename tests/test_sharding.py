"""Tests of llmmath.sharding (the running FSDP2 storages are checked in tests/test_distributed.py).

Expected values come from brute force (padding and cutting explicit lists of elements), sympy
(the minimum of the communication time) and llmmath's independent collective counts."""

from __future__ import annotations

import math

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from llmmath import Layout, preset
from llmmath.hardware import accelerator
from llmmath.parallel import communication_bytes, stage_param_counts
from llmmath.sharding import (
    MEMORY_RESERVE,
    SHARDING_IMPLEMENTATIONS,
    memory_reserve_bytes,
    optimal_fsdp_degree,
    zero_shard_numel,
)


def _cut(elements: int, n: int) -> list[int]:
    """Pad a list of `elements` real items to a multiple of n and cut it into n equal slices: the
    real items of each slice, and (last) the slice's length."""
    items = [1] * elements
    while len(items) % n:
        items.append(0)
    size = len(items) // n
    return [sum(items[r * size:(r + 1) * size]) for r in range(n)] + [size]


def _rows(shape: tuple[int, ...], n: int) -> list[int]:
    """torch.chunk along dimension 0, each rank padded to the first chunk's rows."""
    rows, rest = shape[0], math.prod(shape[1:])
    chunk = -(-rows // n)
    pieces = [list(range(rows))[i:i + chunk] for i in range(0, rows, chunk)]
    pieces += [[]] * (n - len(pieces))
    return [len(p) * rest for p in pieces] + [chunk * rest]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.lists(st.lists(st.integers(1, 9), min_size=1, max_size=2).map(tuple), min_size=1, max_size=3),
                min_size=1, max_size=3), st.integers(1, 5))
def test_zero_shard_numel_brute_force(units, n):
    total = sum(math.prod(s) for u in units for s in u)
    pieces = {"deepspeed": [_cut(math.prod(s), n) for u in units for s in u],
              "fsdp1": [_cut(sum(math.prod(s) for s in u), n) for u in units],
              "flat": [_cut(total, n)],
              "fsdp2": [_rows(s, n) for u in units for s in u]}
    for impl in SHARDING_IMPLEMENTATIONS:
        for r in range(n):
            assert zero_shard_numel(units, n, r, impl) == sum(p[r] for p in pieces[impl]), (impl, r)
        assert zero_shard_numel(units, n, None, impl) == sum(p[-1] for p in pieces[impl]), impl
        assert sum(zero_shard_numel(units, n, r, impl) for r in range(n)) == total


def test_padding_orders():
    # a 3x5 matrix and a bias of 5 in one module, over 4 ranks
    units = [[(3, 5), (5,)]]
    assert zero_shard_numel(units, 4, implementation="flat") == 5  # ceil(20 / 4)
    assert zero_shard_numel(units, 4, implementation="fsdp1") == 5
    assert zero_shard_numel(units, 4, implementation="deepspeed") == 4 + 2  # ceil(15/4) + ceil(5/4)
    assert zero_shard_numel(units, 4, implementation="fsdp2") == 5 + 2  # one row of 5, two of the bias
    with pytest.raises(ValueError, match="implementation must be one of"):
        zero_shard_numel(units, 4, implementation="fsdp3")
    with pytest.raises(TypeError, match="units\\[0\\]\\[1\\]"):
        zero_shard_numel([[(3, 5), 5]], 4)


def test_optimal_fsdp_degree_minimises_the_collectives():
    """The closed form against sympy, and against the best of llmmath's own byte counts of the
    FSDP x TP layouts of 64 GPUs."""
    X, N, B, h, P, r = sp.symbols("X N B h P r", positive=True)
    T = 3 * P * X / (N * r) + 8 * B * h / X  # seconds x W_Y / q
    (root,) = sp.solve(sp.diff(T, X), X)
    assert sp.simplify(root - sp.sqrt(8 * B * h * N * r / (3 * P))) == 0
    cfg, n, seq, batch = preset("llama-3-8b"), 64, 2048, 64
    L, hh = cfg.n_layers, cfg.hidden_size
    times = {}
    for x in (8, 16, 32, 64):  # tp = 8, 4, 2, 1 (tp must divide the 8 KV heads)
        y = n // x
        lay = Layout(tp=y, dp=x, zero_stage=3, microbatch_size=batch // x)
        got = communication_bytes(cfg, lay, seq)
        P_y = stage_param_counts(cfg, Layout(tp=y))[0]["dense"]
        assert got["dp"] == pytest.approx(3 * (x - 1) / x * 2 * P_y)  # gather, gather, scatter: 2 bytes each
        assert got["tp"] == pytest.approx(8 * L * (batch // x) * seq * hh * 2 * (y - 1) / y)
        times[x] = got["dp"] + got["tp"]  # equal link bandwidths
    best = min(times, key=times.get)
    x_star = optimal_fsdp_degree(cfg, batch * seq, n)
    assert 2 ** math.floor(math.log2(x_star)) <= best <= 2 ** math.ceil(math.log2(x_star))
    h, kv, f = cfg.hidden_size, cfg.kv_dim, cfg.ffn_size
    layer = 2 * h * h + 2 * h * kv + 3 * h * f + 2 * h  # q, o; k, v; gate, up, down; two RMSNorms
    assert x_star == pytest.approx(math.sqrt(8 * batch * seq * h * n / (3 * layer)))


def test_memory_reserve_breakdown():
    res = memory_reserve_bytes("H100")
    assert res["cuda_context"] == 400 * 2**20 and res["nccl"] == 4 * 688 * 2**20
    assert res["fragmentation"] == 0.05 * accelerator("H100").memory_bytes
    assert res["total"] == sum(v for k, v in res.items() if k != "total")
    assert abs(res["total"] / accelerator("H100").memory_bytes - MEMORY_RESERVE) < 0.01
    with pytest.raises(ValueError, match="fragmentation is a share"):
        memory_reserve_bytes("H100", fragmentation=1.0)
