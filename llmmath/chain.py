"""The matrix chain rule for a linear layer ``Y = A X + B``.

Derived in chapter :doc:`/chapters/matrix-chain-rule`. Conventions: ``A`` is ``m x n``, ``X`` is
``n x p``, ``B`` and ``Y`` are ``m x p``. A gradient of the scalar loss ``L`` has the shape of the
variable it is taken with respect to: ``(dL/dX)[k, q] = dL / dX[k, q]``. The Jacobian of ``Y``
with respect to ``X`` is the 4-index tensor ``J[i, j, k, q] = dY[i, j] / dX[k, q]``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ._validate import check_bool, check_choice, check_int, check_matrix, check_positive
from .matmul import counted_matmul

__all__ = [
    "LinearGrads",
    "linear_grads",
    "numerical_gradient",
    "linear_jacobian",
    "jacobian_vjp",
    "jacobian_entries",
    "matmul_backward_flops",
]


class LinearGrads(NamedTuple):
    """Gradients of a scalar loss through ``Y = A X + B`` and the matmul FLOPs spent on them."""

    dx: np.ndarray
    da: np.ndarray
    db: np.ndarray
    flops: int


def linear_grads(a: np.ndarray, x: np.ndarray, dy: np.ndarray) -> LinearGrads:
    """Backward pass of ``Y = A X + B``: ``dL/dX = A^T dL/dY``, ``dL/dA = dL/dY X^T``, ``dL/dB = dL/dY``.

    ``a`` is ``m x n``, ``x`` is ``n x p``, ``dy = dL/dY`` is ``m x p`` (any scalar loss ``L``).
    Both products go through :func:`llmmath.matmul.counted_matmul`, so ``flops = 2 n m p + 2 m p n
    = 4 m n p``: twice the forward product ``A X``. Derived in chapter
    :doc:`/chapters/matrix-chain-rule`.
    """
    a = check_matrix("a", a)
    x = check_matrix("x", x)
    dy = check_matrix("dy", dy)
    if a.shape[1] != x.shape[0]:
        raise ValueError(f"x must have {a.shape[1]} rows to match a of shape {a.shape}, got shape {x.shape}")
    expected = (a.shape[0], x.shape[1])
    if dy.shape != expected:
        raise ValueError(f"dy must have the shape of Y = A X, {expected}, got {dy.shape}")
    dx, f1 = counted_matmul(a.T, dy)
    da, f2 = counted_matmul(dy, x.T)
    return LinearGrads(dx, da, dy.copy(), f1 + f2)


def numerical_gradient(f: Callable[[np.ndarray], float], x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central finite differences: ``g[k] = (f(x + eps e_k) - f(x - eps e_k)) / (2 eps)``.

    ``x`` is any non-empty real array; ``g`` has its shape. The truncation error is
    ``O(eps^2)`` (the ``f'''`` term of the Taylor series), the rounding error ``O(u |f| / eps)``
    with ``u`` the unit roundoff, so ``eps ~ 1e-6`` suits float64. ``f`` is called ``2 x.size``
    times on copies of ``x``. Derived in chapter :doc:`/chapters/matrix-chain-rule`.
    """
    if not callable(f):
        raise TypeError(f"f must be callable (array -> float), got {type(f).__name__}")
    try:
        x = np.array(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"x must be an array of real numbers, got {x!r}") from exc
    if x.size == 0:
        raise ValueError("x must be non-empty")
    eps = check_positive("eps", eps)
    g = np.empty_like(x)
    flat = x.reshape(-1)
    for k in range(flat.size):
        old = flat[k]
        flat[k] = old + eps
        up = float(f(x))
        flat[k] = old - eps
        down = float(f(x))
        flat[k] = old
        g.reshape(-1)[k] = (up - down) / (2 * eps)
    return g


def linear_jacobian(a: np.ndarray, x: np.ndarray, wrt: str = "x") -> np.ndarray:
    """4-index Jacobian of ``Y = A X + B``.

    ``wrt="x"``: ``J[i, j, k, q] = dY[i, j] / dX[k, q] = A[i, k] delta[j, q]``, shape ``(m, p, n, p)``.
    ``wrt="a"``: ``J[i, j, k, q] = dY[i, j] / dA[k, q] = delta[i, k] X[q, j]``, shape ``(m, p, m, n)``.
    ``wrt="b"``: ``J[i, j, k, q] = delta[i, k] delta[j, q]``, shape ``(m, p, m, p)``.
    Derived in chapter :doc:`/chapters/matrix-chain-rule`.
    """
    a = check_matrix("a", a)
    x = check_matrix("x", x)
    check_choice("wrt", wrt, ("x", "a", "b"))
    if a.shape[1] != x.shape[0]:
        raise ValueError(f"x must have {a.shape[1]} rows to match a of shape {a.shape}, got shape {x.shape}")
    m, p = a.shape[0], x.shape[1]
    if wrt == "x":
        return np.einsum("ik,jq->ijkq", a, np.eye(p))
    if wrt == "a":
        return np.einsum("ik,qj->ijkq", np.eye(m), x)
    return np.einsum("ik,jq->ijkq", np.eye(m), np.eye(p))


def jacobian_vjp(jac: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """Vector-Jacobian product ``g[k, q] = sum_{i, j} dy[i, j] J[i, j, k, q]`` (the chain rule).

    ``jac`` has shape ``(m, p, r, s)`` and ``dy = dL/dY`` shape ``(m, p)``; the result
    ``dL/dV`` has the shape ``(r, s)`` of the variable ``V``. Done densely this costs
    ``2 m p r s`` FLOPs (see :func:`jacobian_entries`). Derived in chapter
    :doc:`/chapters/matrix-chain-rule`.
    """
    if not isinstance(jac, np.ndarray):
        raise TypeError(f"jac must be a 4-D numpy array, got {type(jac).__name__}")
    if jac.ndim != 4 or 0 in jac.shape:
        raise ValueError(f"jac must be a non-empty 4-D numpy array, got shape {jac.shape}")
    dy = check_matrix("dy", dy)
    if dy.shape != jac.shape[:2]:
        raise ValueError(f"dy must have shape {jac.shape[:2]} (the first two axes of jac), got {dy.shape}")
    return np.tensordot(dy, jac, axes=([0, 1], [0, 1]))


def jacobian_entries(m: int, n: int, p: int, wrt: str = "x") -> int:
    """Number of entries of the 4-index Jacobian of ``Y = A X + B`` (``A`` ``m x n``, ``X`` ``n x p``).

    ``wrt="x"``: ``m p * n p``; ``wrt="a"``: ``m p * m n``; ``wrt="b"``: ``m p * m p``. The
    gradient itself has only ``n p`` (resp. ``m n``, ``m p``) entries: the Jacobian is larger by
    the factor ``m p``, and a dense vector-Jacobian product costs ``2 x`` its entry count. Derived
    in chapter :doc:`/chapters/matrix-chain-rule`.
    """
    m = check_int("m", m)
    n = check_int("n", n)
    p = check_int("p", p)
    check_choice("wrt", wrt, ("x", "a", "b"))
    return m * p * {"x": n * p, "a": m * n, "b": m * p}[wrt]


def matmul_backward_flops(m: int, n: int, p: int, grad_a: bool = True, grad_b: bool = True) -> int:
    """Backward FLOPs of ``C = A B`` (``A`` ``m x n``, ``B`` ``n x p``), ``2 m n p`` convention.

    ``dL/dA = (dL/dC) B^T`` is ``(m x p)(p x n)``: ``2 m p n`` FLOPs; ``dL/dB = A^T (dL/dC)`` is
    ``(n x m)(m x p)``: ``2 n m p`` FLOPs. Each operand that needs a gradient costs one forward
    product, so the backward pass is ``2x`` the forward when both do, ``1x`` when one does.
    Derived in chapter :doc:`/chapters/forward-backward-cost`.
    """
    m = check_int("m", m)
    n = check_int("n", n)
    p = check_int("p", p)
    grad_a = check_bool("grad_a", grad_a)
    grad_b = check_bool("grad_b", grad_b)
    return (int(grad_a) + int(grad_b)) * 2 * m * n * p
