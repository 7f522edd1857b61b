"""Tests of llmmath.matmul: exact counts by brute force, the convention by PyTorch's FLOP counter."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import llmmath
from llmmath import (
    batched_matmul_flops,
    chain_flops,
    counted_matmul,
    matmul_flops,
    naive_matmul,
    optimal_chain_order,
)

dim = st.integers(min_value=1, max_value=9)
SMALL_DIMS = range(1, 8)  # every shape with 1 <= m, n, p <= 7: 343 products


def _check_counting_multiply(m, n, p, rng):
    a, b = rng.standard_normal((m, n)), rng.standard_normal((n, p))
    product, ops = naive_matmul(a.tolist(), b.tolist())
    np.testing.assert_allclose(product, a @ b, rtol=1e-12, atol=1e-12)
    assert ops.mults == m * n * p  # one multiplication per (i, j, k)
    assert ops.adds == m * p * (n - 1)  # n - 1 additions per entry
    assert ops.flops == matmul_flops(m, n, p, exact=True)


def test_counting_multiply_equals_exact_formula_on_every_small_shape():
    rng = np.random.default_rng(0)
    for m, n, p in itertools.product(SMALL_DIMS, repeat=3):
        _check_counting_multiply(m, n, p, rng)


@settings(max_examples=25, deadline=None)
@given(m=st.integers(1, 32), n=st.integers(8, 32), p=st.integers(1, 32), seed=st.integers(0, 2**16))
def test_counting_multiply_equals_exact_formula_on_random_larger_shapes(m, n, p, seed):
    _check_counting_multiply(m, n, p, np.random.default_rng(seed))


@given(m=dim, n=dim, p=dim)
def test_convention_overcounts_by_one_addition_per_entry(m, n, p):
    assert matmul_flops(m, n, p) - matmul_flops(m, n, p, exact=True) == m * p


def test_relative_error_is_one_over_2n_minus_1_symbolically():
    import sympy as sp

    m, n, p = sp.symbols("m n p", positive=True, integer=True)
    exact = m * n * p + m * p * (n - 1)
    assert sp.simplify((2 * m * n * p - exact) / exact - 1 / (2 * n - 1)) == 0


@pytest.mark.parametrize(
    "shape_a, shape_b",
    [((3, 4), (4, 5)), ((2, 3, 4), (4, 6)), ((2, 3, 4, 5), (2, 3, 5, 7)), ((1, 7, 1), (1, 1))],
)
def test_counted_matmul_matches_pytorch_flop_counter(shape_a, shape_b):
    torch = pytest.importorskip("torch")
    from torch.utils.flop_counter import FlopCounterMode

    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(shape_a), rng.standard_normal(shape_b)
    out, flops = counted_matmul(a, b)
    with FlopCounterMode(display=False) as counter:
        expected = torch.from_numpy(a) @ torch.from_numpy(b)
    assert flops == counter.get_total_flops()
    np.testing.assert_allclose(out, expected.numpy())


def test_batched_flops_of_transformer_shapes():
    b, s, h, a = 2, 16, 64, 4
    assert batched_matmul_flops([b], s, h, h) == 2 * b * s * h * h
    assert batched_matmul_flops([b, a], s, h // a, s) == 2 * b * s * s * h


def _all_orders(i, j):
    if i == j:
        yield i
        return
    for split in range(i, j):
        yield from itertools.product(_all_orders(i, split), _all_orders(split + 1, j))


@settings(max_examples=60, deadline=None)
@given(dims=st.lists(st.integers(1, 40), min_size=2, max_size=7))
def test_optimal_chain_order_is_the_brute_force_minimum(dims):
    k = len(dims) - 1
    costs = [chain_flops(dims, order) for order in _all_orders(0, k - 1)]
    best, order = optimal_chain_order(dims)
    assert best == min(costs)
    assert chain_flops(dims, order) == best


def test_chain_flops_left_and_right_orders():
    # CLRS section 15.2: 10x100, 100x5, 5x50 -> 7500 vs 75000 scalar multiplications
    assert chain_flops([10, 100, 5, 50], "left") == 2 * 7500
    assert chain_flops([10, 100, 5, 50], "right") == 2 * 75000


def test_chain_flops_matches_multiplying_for_real():
    rng = np.random.default_rng(3)
    dims = [3, 5, 2, 4]
    a, b, c = (rng.standard_normal((dims[i], dims[i + 1])) for i in range(3))
    ab, f1 = counted_matmul(a, b)
    _, f2 = counted_matmul(ab, c)
    assert chain_flops(dims, "left") == f1 + f2


@pytest.mark.parametrize(
    "args, exc, field",
    [
        ((0, 2, 3), ValueError, "m"),
        ((2, -1, 3), ValueError, "n"),
        ((2, 2, 2.0), TypeError, "p"),
        ((True, 2, 2), TypeError, "m"),
    ],
)
def test_matmul_flops_rejects_bad_dimensions(args, exc, field):
    with pytest.raises(exc, match=rf"^{field} must"):
        matmul_flops(*args)


def test_bad_inputs_name_the_argument():
    with pytest.raises(ValueError, match="inner dimensions"):
        naive_matmul([[1, 2]], [[1, 2]])
    with pytest.raises(ValueError, match="inner dimensions"):
        counted_matmul(np.ones((2, 3)), np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"batch_shape\[1\]"):
        batched_matmul_flops([2, 0], 1, 1, 1)
    with pytest.raises(ValueError, match="order"):
        chain_flops([2, 3, 4], (0, 0))
    with pytest.raises(ValueError, match="order"):
        chain_flops([2, 3, 4], "middle")
    with pytest.raises(ValueError, match="dims"):
        optimal_chain_order([5])
    with pytest.raises(TypeError, match="exact"):
        matmul_flops(1, 2, 3, exact="yes")


def test_measured_rate_is_positive():
    assert llmmath.measure_matmul_flops_per_second(32, repeats=1) > 0


class _CoarseClock:
    """A stand-in for the ``time`` module whose ``perf_counter`` advances by ``tick`` seconds only
    on every ``every``-th read (a browser-like timer): reads 0 .. every-1 return 0.0."""

    def __init__(self, tick: float, every: int):
        self.tick, self.every, self.reads = tick, every, 0

    def perf_counter(self) -> float:
        value = self.tick * (self.reads // self.every)
        self.reads += 1
        return value


def test_measured_rate_survives_a_coarse_clock(monkeypatch):
    import llmmath.matmul as mm

    n, tick, every = 4, 1 / 64, 5
    monkeypatch.setattr(mm, "time", _CoarseClock(tick, every))
    # the first read starts the clock at 0; it first shows a difference (one tick) at read `every`,
    # i.e. after `every` products, so one product is timed at tick / every seconds
    rate = mm.measure_matmul_flops_per_second(n, repeats=1, min_time=1e-3)
    assert rate == 2 * n**3 * every / tick


def test_a_clock_that_never_advances_is_a_clear_error(monkeypatch):
    import llmmath.matmul as mm

    monkeypatch.setattr(mm, "time", _CoarseClock(1.0, 10**9))
    with pytest.raises(RuntimeError, match="too coarse"):
        mm.measure_matmul_flops_per_second(4, repeats=1, max_calls=20)


@pytest.mark.parametrize(
    "kwargs, exc, field",
    [({"min_time": 0.0}, ValueError, "min_time"), ({"min_time": "1"}, TypeError, "min_time"),
     ({"max_calls": 0}, ValueError, "max_calls"), ({"repeats": 0}, ValueError, "repeats"),
     ({"seed": -1}, ValueError, "seed")],
)
def test_measure_rejects_bad_arguments(kwargs, exc, field):
    with pytest.raises(exc, match=rf"^{field} must"):
        llmmath.measure_matmul_flops_per_second(4, **kwargs)
