"""The matrix chain rule for a linear layer ``Y = A X + B``, and the vector-Jacobian products
(VJPs) of softmax and LayerNorm.

Derived in chapter :doc:`/chapters/matrix-chain-rule`. Conventions: ``A`` is ``m x n``, ``X`` is
``n x p``, ``B`` and ``Y`` are ``m x p``. A gradient of the scalar loss ``L`` has the shape of the
variable it is taken with respect to: ``(dL/dX)[k, q] = dL / dX[k, q]``. The Jacobian of ``Y``
with respect to ``X`` is the 4-index tensor ``J[i, j, k, q] = dY[i, j] / dX[k, q]``. Softmax and
LayerNorm act on the last axis (rows); each VJP takes exactly the tensors that the backward pass
must have kept from the forward pass.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ._validate import check_array, check_bool, check_choice, check_int, check_matrix, check_positive
from .matmul import counted_matmul

__all__ = [
    "LinearGrads",
    "linear_grads",
    "numerical_gradient",
    "linear_jacobian",
    "jacobian_vjp",
    "jacobian_entries",
    "matmul_backward_flops",
    "LinearJVP",
    "linear_jvp",
    "softmax",
    "softmax_jacobian",
    "softmax_vjp",
    "LayerNormForward",
    "LayerNormGrads",
    "layer_norm",
    "layer_norm_vjp",
]


class LinearGrads(NamedTuple):
    """Gradients of a scalar loss through ``Y = A X + B`` and the matmul FLOPs spent on them."""

    #: gradient of the loss with respect to ``X``
    dx: np.ndarray
    #: gradient with respect to ``A``
    da: np.ndarray
    #: gradient with respect to ``B``
    db: np.ndarray
    #: matmul FLOPs of the two gradient products
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


def _same_shape(name: str, arr: np.ndarray, shape: tuple[int, ...], of: str) -> None:
    if arr.shape != shape:
        raise ValueError(f"{name} must have the shape {shape} of {of}, got {arr.shape}")


class LinearJVP(NamedTuple):
    """Tangent ``dY`` of ``Y = A X + B`` along a direction ``(dA, dX, dB)``, and its matmul FLOPs."""

    dy: np.ndarray
    flops: int


def linear_jvp(
    a: np.ndarray, x: np.ndarray, da: np.ndarray, dx: np.ndarray, db: np.ndarray | None = None
) -> LinearJVP:
    """Jacobian-vector product (forward mode) of ``Y = A X + B``: ``dY = dA X + A dX + dB``.

    ``da`` has the shape of ``a`` (``m x n``), ``dx`` that of ``x`` (``n x p``), ``db`` (optional)
    that of ``Y``. Both products go through :func:`llmmath.matmul.counted_matmul`: ``flops = 4 m n
    p``, the same as the vector-Jacobian product :func:`linear_grads`. Derived in chapter
    :doc:`/chapters/matrix-chain-rule`.
    """
    a = check_matrix("a", a)
    x = check_matrix("x", x)
    if a.shape[1] != x.shape[0]:
        raise ValueError(f"x must have {a.shape[1]} rows to match a of shape {a.shape}, got shape {x.shape}")
    da = check_matrix("da", da)
    dx = check_matrix("dx", dx)
    _same_shape("da", da, a.shape, "a")
    _same_shape("dx", dx, x.shape, "x")
    y1, f1 = counted_matmul(da, x)
    y2, f2 = counted_matmul(a, dx)
    dy = y1 + y2
    if db is not None:
        db = check_matrix("db", db)
        _same_shape("db", db, dy.shape, "Y = A X")
        dy = dy + db
    return LinearJVP(dy, f1 + f2)


def softmax(s: np.ndarray) -> np.ndarray:
    """Softmax over the last axis, ``y_i = exp(s_i) / sum_j exp(s_j)``.

    Computed as ``exp(s_i - max_j s_j) / sum_j exp(s_j - max_j s_j)``, which is the same number
    and never overflows. Derived in chapter :doc:`/chapters/matrix-chain-rule`.
    """
    s = check_array("s", s)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def softmax_jacobian(y: np.ndarray) -> np.ndarray:
    """Jacobian of softmax at output ``y`` (a 1-D probability vector): ``J = diag(y) - y y^T``.

    ``J[i, j] = dy_i / ds_j = y_i (delta_ij - y_j)``; symmetric, and ``J 1 = 0`` (adding a constant
    to every score changes nothing). Derived in chapter :doc:`/chapters/matrix-chain-rule`.
    """
    y = check_array("y", y)
    if y.ndim != 1:
        raise ValueError(f"y must be a 1-D vector, got shape {y.shape}")
    return np.diag(y) - np.outer(y, y)


def softmax_vjp(y: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """Vector-Jacobian product of softmax over the last axis: ``ds = y * (dy - sum(dy * y))``.

    The row sum runs over the last axis. This is ``J^T dy`` with ``J = diag(y) - y y^T``, in
    ``4 n`` FLOPs per row of length ``n`` (a dot product, a subtraction, a product) instead of
    the ``2 n^2`` of a dense ``J^T dy``. It needs only the softmax *output* ``y``: that is what the
    backward pass must keep. Derived in chapter :doc:`/chapters/matrix-chain-rule`.
    """
    y = check_array("y", y)
    dy = check_array("dy", dy)
    _same_shape("dy", dy, y.shape, "y")
    return y * (dy - np.sum(dy * y, axis=-1, keepdims=True))


class LayerNormForward(NamedTuple):
    """Output of :func:`layer_norm` and the per-row statistics its backward pass needs."""

    y: np.ndarray
    mean: np.ndarray  # mu, shape x.shape[:-1] + (1,)
    inv_std: np.ndarray  # 1 / sqrt(var + eps), same shape


class LayerNormGrads(NamedTuple):
    """Gradients of a scalar loss through LayerNorm: input, scale ``gamma`` and shift ``beta``."""

    dx: np.ndarray
    dgamma: np.ndarray
    dbeta: np.ndarray


def layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float = 1e-5) -> LayerNormForward:
    """LayerNorm over the last axis (length ``n``): ``y = gamma * (x - mu) / sigma + beta``.

    ``mu = mean(x)``, ``sigma = sqrt(mean((x - mu)^2) + eps)`` (the biased variance, as PyTorch's
    ``layer_norm``) per row; ``gamma`` and ``beta`` have shape ``(n,)``. Returns ``y`` and the
    statistics ``mu`` and ``1 / sigma`` that :func:`layer_norm_vjp` needs. Derived in chapter
    :doc:`/chapters/matrix-chain-rule`.
    """
    x = check_array("x", x)
    n = x.shape[-1]
    gamma = check_array("gamma", gamma)
    beta = check_array("beta", beta)
    _same_shape("gamma", gamma, (n,), "the last axis of x")
    _same_shape("beta", beta, (n,), "the last axis of x")
    eps = check_positive("eps", eps)
    mean = x.mean(axis=-1, keepdims=True)
    inv_std = 1.0 / np.sqrt(((x - mean) ** 2).mean(axis=-1, keepdims=True) + eps)
    return LayerNormForward(gamma * (x - mean) * inv_std + beta, mean, inv_std)


def layer_norm_vjp(
    x: np.ndarray, mean: np.ndarray, inv_std: np.ndarray, gamma: np.ndarray, dy: np.ndarray
) -> LayerNormGrads:
    """Vector-Jacobian product of :func:`layer_norm` (last axis of length ``n``).

    With ``x_hat = (x - mu) / sigma`` and ``g = gamma * dy``:
    ``dx = (1 / sigma) * (g - mean(g) - x_hat * mean(g * x_hat))`` (means over the last axis),
    ``dgamma = sum(dy * x_hat)`` and ``dbeta = sum(dy)`` (sums over every other axis). It needs
    the input ``x``, the row statistics ``mu`` and ``1 / sigma``, and ``gamma``: exactly what
    PyTorch's ``layer_norm`` saves for its backward pass. Derived in chapter
    :doc:`/chapters/matrix-chain-rule`.
    """
    x = check_array("x", x)
    stats_shape = x.shape[:-1] + (1,)
    mean = check_array("mean", mean)
    inv_std = check_array("inv_std", inv_std)
    _same_shape("mean", mean, stats_shape, "x with its last axis reduced to 1")
    _same_shape("inv_std", inv_std, stats_shape, "x with its last axis reduced to 1")
    if np.any(inv_std <= 0):
        raise ValueError("inv_std must be > 0 everywhere (it is 1 / sigma)")
    gamma = check_array("gamma", gamma)
    _same_shape("gamma", gamma, (x.shape[-1],), "the last axis of x")
    dy = check_array("dy", dy)
    _same_shape("dy", dy, x.shape, "x")
    x_hat = (x - mean) * inv_std
    g = gamma * dy
    dx = inv_std * (g - g.mean(axis=-1, keepdims=True) - x_hat * (g * x_hat).mean(axis=-1, keepdims=True))
    other = tuple(range(x.ndim - 1))
    return LayerNormGrads(dx, (dy * x_hat).sum(axis=other), dy.sum(axis=other))
