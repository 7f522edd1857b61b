"""Tests of llmmath.chain: expected values from sympy, finite differences and PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from llmmath.chain import (
    jacobian_entries,
    jacobian_vjp,
    linear_grads,
    linear_jacobian,
    matmul_backward_flops,
    numerical_gradient,
)

SHAPES = [(1, 1, 1), (2, 3, 4), (3, 1, 2), (4, 2, 1)]


def _sym(name: str, r: int, c: int) -> sp.Matrix:
    return sp.Matrix(r, c, lambda i, j: sp.Symbol(f"{name}_{i}{j}"))


@pytest.mark.parametrize("shape", [(2, 3, 2), (1, 2, 3), (3, 2, 1)])
def test_general_loss_symbolic(shape):
    """For an undefined scalar function F of all entries of Y: dL/dX = A^T G and dL/dA = G X^T."""
    m, n, p = shape
    a, x, b, ys = _sym("a", m, n), _sym("x", n, p), _sym("b", m, p), _sym("y", m, p)
    y = a * x + b
    loss_of_y = sp.Function("F")(*ys)
    sub = dict(zip(ys, y, strict=True))
    loss = loss_of_y.subs(sub, simultaneous=True)
    g = ys.applyfunc(lambda v: sp.diff(loss_of_y, v)).subs(sub, simultaneous=True)
    assert sp.simplify(x.applyfunc(lambda v: sp.diff(loss, v)) - a.T * g) == sp.zeros(n, p)
    assert sp.simplify(a.applyfunc(lambda v: sp.diff(loss, v)) - g * x.T) == sp.zeros(m, n)
    assert sp.simplify(b.applyfunc(lambda v: sp.diff(loss, v)) - g) == sp.zeros(m, p)


@pytest.mark.parametrize("shape", [(1, 1, 1), (2, 3, 4), (3, 1, 2)])
def test_linear_grads_match_sympy_concrete_loss(shape):
    m, n, p = shape
    a, x, b = _sym("a", m, n), _sym("x", n, p), _sym("b", m, p)
    y = a * x + b
    t = sp.Symbol("t")
    f = sp.sin(t) * t**2 + t**4 / 7
    loss = sum(f.subs(t, v) for v in y)
    rng = np.random.default_rng(1)
    values = {
        s: float(v)
        for s, v in zip(list(a) + list(x) + list(b), rng.standard_normal(m * n + n * p + m * p), strict=True)
    }
    an = np.array(a.subs(values), dtype=float)
    xn = np.array(x.subs(values), dtype=float)
    dy = np.array(y.applyfunc(lambda v: sp.diff(f, t).subs(t, v)).subs(values), dtype=float)
    got = linear_grads(an, xn, dy)
    np.testing.assert_allclose(got.dx, np.array(x.applyfunc(lambda v: sp.diff(loss, v)).subs(values), dtype=float))
    np.testing.assert_allclose(got.da, np.array(a.applyfunc(lambda v: sp.diff(loss, v)).subs(values), dtype=float))
    np.testing.assert_allclose(got.db, np.array(b.applyfunc(lambda v: sp.diff(loss, v)).subs(values), dtype=float))
    assert got.flops == 2 * n * m * p + 2 * m * p * n


def test_numerical_gradient_known_function():
    x = np.random.default_rng(0).standard_normal((3, 4))
    g = numerical_gradient(lambda v: float(np.sum(v**3) + np.sum(np.sin(v))), x)
    np.testing.assert_allclose(g, 3 * x**2 + np.cos(x), rtol=1e-7, atol=1e-8)
    assert g.shape == x.shape
    np.testing.assert_allclose(numerical_gradient(lambda v: float(v[0] ** 2), np.array([3.0])), [6.0])


@pytest.mark.parametrize("shape", SHAPES)
def test_linear_grads_match_finite_differences(shape):
    m, n, p = shape
    rng = np.random.default_rng(2)
    a, x, b = rng.standard_normal((m, n)), rng.standard_normal((n, p)), rng.standard_normal((m, p))

    def loss(a_, x_, b_):
        return float(np.sum(np.tanh(a_ @ x_ + b_) ** 2))

    y = a @ x + b
    dy = 2 * np.tanh(y) * (1 - np.tanh(y) ** 2)
    got = linear_grads(a, x, dy)
    np.testing.assert_allclose(got.dx, numerical_gradient(lambda v: loss(a, v, b), x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got.da, numerical_gradient(lambda v: loss(v, x, b), a), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got.db, numerical_gradient(lambda v: loss(a, x, v), b), rtol=1e-6, atol=1e-8)


def _brute_jacobian(a, x, b, wrt):
    """dY[i, j]/dV[k, q] by perturbing one entry of V at a time (Y is linear: exact differences)."""
    base = {"a": a, "x": x, "b": b}
    v = base[wrt]
    y0 = a @ x + b
    jac = np.zeros(y0.shape + v.shape)
    for k in range(v.shape[0]):
        for q in range(v.shape[1]):
            pert = {key: val.copy() for key, val in base.items()}
            pert[wrt][k, q] += 1.0
            jac[:, :, k, q] = pert["a"] @ pert["x"] + pert["b"] - y0
    return jac


@pytest.mark.parametrize("wrt", ["x", "a", "b"])
@pytest.mark.parametrize("shape", SHAPES)
def test_linear_jacobian_and_vjp(shape, wrt):
    m, n, p = shape
    rng = np.random.default_rng(3)
    a, x, b = rng.standard_normal((m, n)), rng.standard_normal((n, p)), rng.standard_normal((m, p))
    jac = linear_jacobian(a, x, wrt=wrt)
    np.testing.assert_allclose(jac, _brute_jacobian(a, x, b, wrt), atol=1e-12)
    assert jac.size == jacobian_entries(m, n, p, wrt=wrt)
    dy = rng.standard_normal((m, p))
    expected = {"x": a.T @ dy, "a": dy @ x.T, "b": dy}[wrt]
    np.testing.assert_allclose(jacobian_vjp(jac, dy), expected, atol=1e-12)


def test_jacobian_entries_values():
    assert jacobian_entries(2, 3, 4, "x") == 2 * 4 * 3 * 4
    assert jacobian_entries(2, 3, 4, "a") == 2 * 4 * 2 * 3
    assert jacobian_entries(2, 3, 4, "b") == (2 * 4) ** 2


@pytest.mark.parametrize(("grad_a", "grad_b"), [(True, True), (True, False), (False, True)])
def test_matmul_backward_flops_match_torch(grad_a, grad_b):
    torch = pytest.importorskip("torch")
    from torch.utils.flop_counter import FlopCounterMode

    m, n, p = 3, 5, 7
    a = torch.randn(m, n, dtype=torch.float64, requires_grad=grad_a)
    b = torch.randn(n, p, dtype=torch.float64, requires_grad=grad_b)
    c = a @ b
    with FlopCounterMode(display=False) as counter:
        c.sum().backward()
    assert counter.get_total_flops() == matmul_backward_flops(m, n, p, grad_a=grad_a, grad_b=grad_b)
    assert matmul_backward_flops(m, n, p, False, False) == 0


def test_bad_input():
    a, x = np.ones((2, 3)), np.ones((3, 4))
    with pytest.raises(ValueError, match="x must have 3 rows"):
        linear_grads(a, np.ones((2, 4)), np.ones((2, 4)))
    with pytest.raises(ValueError, match="dy must have the shape"):
        linear_grads(a, x, np.ones((4, 2)))
    with pytest.raises(ValueError, match="a must be a 2-D"):
        linear_grads(np.ones(3), x, np.ones((2, 4)))
    with pytest.raises(ValueError, match="a must be non-empty"):
        linear_grads(np.ones((0, 3)), x, np.ones((0, 4)))
    with pytest.raises(TypeError, match="a must be"):
        linear_grads("a", x, np.ones((2, 4)))
    with pytest.raises(TypeError, match="f must be callable"):
        numerical_gradient(3, x)
    with pytest.raises(ValueError, match="eps must be > 0"):
        numerical_gradient(np.sum, x, eps=0.0)
    with pytest.raises(ValueError, match="x must be non-empty"):
        numerical_gradient(np.sum, np.ones(0))
    with pytest.raises(ValueError, match="wrt must be one of"):
        linear_jacobian(a, x, wrt="y")
    with pytest.raises(ValueError, match="x must have 3 rows"):
        linear_jacobian(a, np.ones((2, 2)))
    with pytest.raises(ValueError, match="jac must be a non-empty 4-D"):
        jacobian_vjp(np.ones((2, 3)), np.ones((2, 3)))
    with pytest.raises(TypeError, match="jac must be a 4-D numpy array"):
        jacobian_vjp([[1.0]], np.ones((1, 1)))
    with pytest.raises(ValueError, match="dy must have shape"):
        jacobian_vjp(np.ones((2, 3, 4, 5)), np.ones((3, 2)))
    for bad, exc in [
        (0, ValueError),
        (-1, ValueError),
        (2.0, TypeError),
        ("2", TypeError),
        (True, TypeError),
    ]:
        with pytest.raises(exc, match="m must be"):
            jacobian_entries(bad, 2, 2)
        with pytest.raises(exc, match="p must be"):
            matmul_backward_flops(2, 2, bad)
    with pytest.raises(TypeError, match="grad_a must be True or False"):
        matmul_backward_flops(2, 2, 2, grad_a=1)
