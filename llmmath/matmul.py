"""The cost of a matrix multiply.

Derived in chapter :doc:`/chapters/matmul-cost`. Convention: ``A`` is ``m x n``, ``B`` is
``n x p`` (``n`` is the inner, contracted dimension) and ``C = A B`` is ``m x p``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ._validate import check_choice, check_int, check_positive

__all__ = [
    "OpCount",
    "matmul_flops",
    "batched_matmul_flops",
    "naive_matmul",
    "counted_matmul",
    "chain_flops",
    "optimal_chain_order",
    "arithmetic_intensity",
    "measure_matmul_flops_per_second",
    "measure_memory_bandwidth",
]


class OpCount(NamedTuple):
    """Scalar operations performed by a multiply: multiplications and additions."""

    mults: int
    adds: int

    @property
    def flops(self) -> int:
        """Total floating-point operations, ``mults + adds``."""
        return self.mults + self.adds


def matmul_flops(m: int, n: int, p: int, exact: bool = False) -> int:
    """FLOPs of ``(m x n) @ (n x p)``.

    Each of the ``m p`` outputs is a dot product of length ``n``: ``n`` multiplications and
    ``n - 1`` additions. So the exact count is ``m p (2 n - 1)`` (``exact=True``); the convention
    used throughout the literature and this book is ``2 m n p`` (a fused multiply-add counts as
    two FLOPs, and an accumulator starting at zero would make it exact). The relative error of the
    convention is ``1 / (2 n - 1)``.
    """
    m = check_int("m", m)
    n = check_int("n", n)
    p = check_int("p", p)
    if not isinstance(exact, bool):
        raise TypeError(f"exact must be True or False, got {exact!r}")
    return m * p * (2 * n - 1) if exact else 2 * m * n * p


def batched_matmul_flops(batch_shape: Sequence[int], m: int, n: int, p: int, exact: bool = False) -> int:
    """FLOPs of a batched product ``[*batch, m, n] @ [*batch, n, p]`` (or ``[*batch, m, n] @ [n, p]``).

    A batched product is ``prod(batch_shape)`` independent products, so its cost is
    ``prod(batch_shape) * matmul_flops(m, n, p)``. Example: ``[b, s, h] @ [h, h]`` is
    ``batched_matmul_flops([b], s, h, h) = 2 b s h^2``.
    """
    if isinstance(batch_shape, (str, bytes)) or not isinstance(batch_shape, Sequence):
        raise TypeError(f"batch_shape must be a sequence of integers, got {batch_shape!r}")
    count = 1
    for i, d in enumerate(batch_shape):
        count *= check_int(f"batch_shape[{i}]", d)
    return count * matmul_flops(m, n, p, exact=exact)


def naive_matmul(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]]) -> tuple[list[list[float]], OpCount]:
    """Multiply two matrices (nested lists) with the schoolbook triple loop, counting every operation.

    Each output element starts from its first product (no addition to a zero accumulator), so the
    counts are exactly ``m n p`` multiplications and ``m p (n - 1)`` additions. Slow on purpose: it
    is the reference that :func:`matmul_flops` is checked against.
    """
    a_arr, b_arr = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a_arr.ndim != 2 or b_arr.ndim != 2:
        raise ValueError(f"a and b must be 2-D matrices, got shapes {a_arr.shape} and {b_arr.shape}")
    m, n = a_arr.shape
    n2, p = b_arr.shape
    if n != n2:
        raise ValueError(f"inner dimensions must agree: a is {m}x{n} but b is {n2}x{p}")
    if 0 in (m, n, p):
        raise ValueError(f"matrices must be non-empty, got shapes {a_arr.shape} and {b_arr.shape}")
    mults = adds = 0
    out = [[0.0] * p for _ in range(m)]
    for i in range(m):
        for j in range(p):
            acc = float(a_arr[i, 0]) * float(b_arr[0, j])
            mults += 1
            for k in range(1, n):
                acc += float(a_arr[i, k]) * float(b_arr[k, j])
                mults += 1
                adds += 1
            out[i][j] = acc
    return out, OpCount(mults, adds)


def counted_matmul(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, int]:
    """Return ``a @ b`` and its FLOPs under the ``2 m n p`` convention (batched operands allowed).

    This is the multiply every hand-written backward pass in llmmath goes through, so that the
    FLOPs of a whole forward or backward pass are the sum of the products it actually performs.
    """
    a = np.asarray(a)
    b = np.asarray(b)
    if a.ndim < 2 or b.ndim < 2:
        raise ValueError(f"a and b must have at least 2 dimensions, got shapes {a.shape} and {b.shape}")
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"inner dimensions must agree: a is {a.shape} but b is {b.shape}")
    out = a @ b
    m, n, p = a.shape[-2], a.shape[-1], b.shape[-1]
    n_products = int(np.prod(out.shape[:-2], dtype=np.int64)) if out.ndim > 2 else 1
    return out, n_products * 2 * m * n * p


def chain_flops(dims: Sequence[int], order: str | tuple) -> int:
    """FLOPs (``2 m n p`` convention) of a matrix chain ``A_1 A_2 ... A_k`` in a given order.

    ``dims`` has ``k + 1`` entries: ``A_i`` is ``dims[i-1] x dims[i]``. ``order`` is
    ``"left"`` (``((A_1 A_2) A_3) ...``), ``"right"`` (``A_1 (A_2 (A_3 ...))``) or a nested tuple
    of 0-based matrix indices, e.g. ``(0, (1, 2))`` for ``A_1 (A_2 A_3)``.
    """
    dims = [check_int(f"dims[{i}]", d) for i, d in enumerate(dims)]
    k = len(dims) - 1
    if k < 1:
        raise ValueError(f"dims must have at least 2 entries (one matrix), got {len(dims)}")
    if isinstance(order, str):
        check_choice("order", order, ("left", "right"))
        tree: object = 0
        if order == "left":
            for i in range(1, k):
                tree = (tree, i)
        else:
            tree = k - 1
            for i in range(k - 2, -1, -1):
                tree = (i, tree)
    else:
        tree = order

    seen: list[int] = []

    def cost(node: object) -> tuple[int, int, int]:  # (rows, cols, flops)
        if isinstance(node, (int, np.integer)) and not isinstance(node, bool):
            if not 0 <= node < k:
                raise ValueError(f"order refers to matrix {node}, but there are only {k} (0..{k - 1})")
            seen.append(int(node))
            return dims[node], dims[node + 1], 0
        if not (isinstance(node, tuple) and len(node) == 2):
            raise ValueError(f"order must be 'left', 'right' or a nested pair of indices, got {node!r}")
        r1, c1, f1 = cost(node[0])
        r2, c2, f2 = cost(node[1])
        if c1 != r2:
            raise ValueError(f"order multiplies incompatible shapes {r1}x{c1} and {r2}x{c2}")
        return r1, c2, f1 + f2 + 2 * r1 * c1 * c2

    _, _, total = cost(tree)
    if sorted(seen) != list(range(k)):
        raise ValueError(f"order must use every matrix 0..{k - 1} exactly once, in order; got {order!r}")
    return total


def optimal_chain_order(dims: Sequence[int]) -> tuple[int, object]:
    """Cheapest parenthesisation of a matrix chain by dynamic programming (CLRS section 15.2).

    Returns ``(flops, order)`` with ``order`` a nested tuple accepted by :func:`chain_flops`.
    """
    dims = [check_int(f"dims[{i}]", d) for i, d in enumerate(dims)]
    k = len(dims) - 1
    if k < 1:
        raise ValueError(f"dims must have at least 2 entries (one matrix), got {len(dims)}")
    best: dict[tuple[int, int], tuple[int, object]] = {(i, i): (0, i) for i in range(k)}
    for length in range(2, k + 1):
        for i in range(0, k - length + 1):
            j = i + length - 1
            options = []
            for s in range(i, j):
                fl, fr = best[(i, s)][0], best[(s + 1, j)][0]
                flops = fl + fr + 2 * dims[i] * dims[s + 1] * dims[j + 1]
                options.append((flops, (best[(i, s)][1], best[(s + 1, j)][1])))
            best[(i, j)] = min(options, key=lambda t: t[0])
    return best[(0, k - 1)]


def arithmetic_intensity(m: int, n: int, p: int, bytes_per_value: float = 2) -> float:
    """FLOPs per byte of ``(m x n) @ (n x p)`` when each operand is read once and the result
    written once: ``2 m n p / ((m n + n p + m p) * bytes_per_value)``.

    The numerator is :func:`matmul_flops`; the denominator the bytes that must cross the memory
    bus at least once (``A``, ``B`` and ``C``, ``bytes_per_value`` each: 2 for 16-bit, 1 for
    8-bit, 0.5 for 4-bit values). For a batch of ``b`` tokens through a square ``h x h`` weight,
    ``2 b h^2 / ((2 b h + h^2) * 2) -> b`` for ``b << h``: the intensity grows with the batch,
    which is why decoding one token at a time is memory-bound. Derived in chapter
    :doc:`/chapters/matmul-cost`.
    """
    flops = matmul_flops(m, n, p)
    bytes_per_value = check_positive("bytes_per_value", bytes_per_value)
    return flops / ((m * n + n * p + m * p) * bytes_per_value)


def _best_seconds(run, repeats: int, min_time: float, max_calls: int) -> float:
    """The best of ``repeats`` measurements of one call of ``run``: each runs it ``k`` times in a
    row until ``time.perf_counter`` has advanced by at least ``min_time`` and takes
    ``elapsed / k``; a clock that does not advance within ``max_calls`` calls raises
    ``RuntimeError``."""
    best = float("inf")
    for _ in range(repeats):
        calls = 0
        start = time.perf_counter()
        while True:
            run()
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_time:
                break
            if calls >= max_calls:
                raise RuntimeError(
                    f"the clock advanced by only {elapsed!r} s in {calls} calls; it is too coarse to "
                    f"time them (raise max_calls or lower min_time, now {min_time!r} s)"
                )
        best = min(best, elapsed / calls)
    return best


def _check_timing(repeats: int, seed: int, min_time: float, max_calls: int) -> tuple[int, int, float, int]:
    return (check_int("repeats", repeats), check_int("seed", seed, minimum=0),
            check_positive("min_time", min_time), check_int("max_calls", max_calls))


# The floating-point types the measuring functions accept.
_MEASURE_DTYPES = ("float32", "float64")


def measure_matmul_flops_per_second(
    n: int = 512, repeats: int = 5, seed: int = 0, min_time: float = 1e-3, max_calls: int = 1_000_000,
    *, m: int | None = None, p: int | None = None, dtype: str = "float64",
) -> float:
    """Measured FLOP/s of ``numpy`` on an ``m x n`` by ``n x p`` product (``m = p = n`` unless
    given) of ``dtype`` (``float64`` or ``float32``).

    Each of ``repeats`` measurements runs the product ``k`` times in a row, until the clock
    (``time.perf_counter``) has advanced by at least ``min_time`` seconds, and takes
    ``elapsed / k`` as the time of one product; the result is ``2 m n p`` divided by the best of
    these. A coarse clock (browsers deliberately reduce the resolution of their timers) then
    still yields a finite rate instead of a division by zero; a clock that does not advance within
    ``max_calls`` products raises ``RuntimeError``. Machine-dependent by nature: an illustration,
    never a number the book's tests compare. Derived in chapter :doc:`/chapters/matmul-cost`.
    """
    n = check_int("n", n)
    m = n if m is None else check_int("m", m)
    p = n if p is None else check_int("p", p)
    repeats, seed, min_time, max_calls = _check_timing(repeats, seed, min_time, max_calls)
    check_choice("dtype", dtype, _MEASURE_DTYPES)
    rng = np.random.default_rng(seed)
    a, b = rng.random((m, n), dtype=dtype), rng.random((n, p), dtype=dtype)  # values do not matter
    out = np.empty((m, p), dtype=dtype)
    best = _best_seconds(lambda: np.matmul(a, b, out=out), repeats, min_time, max_calls)
    return matmul_flops(m, n, p) / best


def measure_memory_bandwidth(
    n_bytes: int = 2**27, repeats: int = 5, min_time: float = 1e-3, max_calls: int = 1_000_000,
) -> float:
    """Measured read bandwidth of main memory in bytes/s: ``n_bytes`` divided by the best time of
    summing a float64 array of ``n_bytes`` (a read-only stream, like the weight matrix a
    matrix-vector product streams through).

    Pick ``n_bytes`` well above the last-level cache (the default is 128 MiB) or the result is a
    cache bandwidth. Timing as in :func:`measure_matmul_flops_per_second`. Machine-dependent: an
    illustration, never a number the book's tests compare. Derived in chapter
    :doc:`/chapters/matmul-cost`.
    """
    n_bytes = check_int("n_bytes", n_bytes, minimum=8)
    repeats, _, min_time, max_calls = _check_timing(repeats, 0, min_time, max_calls)
    x = np.full(n_bytes // 8, 0.5)
    best = _best_seconds(x.sum, repeats, min_time, max_calls)
    return x.nbytes / best
