"""Tests of llmmath.chain: expected values from sympy, finite differences and PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from llmmath.chain import (
    jacobian_entries,
    jacobian_vjp,
    layer_norm,
    layer_norm_vjp,
    linear_grads,
    linear_jacobian,
    linear_jvp,
    matmul_backward_flops,
    numerical_gradient,
    softmax,
    softmax_jacobian,
    softmax_vjp,
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


# --- forward mode, softmax and LayerNorm ---------------------------------------------------------


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")  # forward_ad's import
@pytest.mark.parametrize("shape", SHAPES)
def test_linear_jvp_matches_torch_forward_ad(shape):
    torch = pytest.importorskip("torch")
    m, n, p = shape
    rng = np.random.default_rng(5)
    a, x, b, da, dx, db = (rng.standard_normal(sh) for sh in [(m, n), (n, p), (m, p), (m, n), (n, p), (m, p)])
    import torch.autograd.forward_ad as fwad  # forward-mode AD: dual numbers

    with fwad.dual_level():
        ta, tx, tb = (fwad.make_dual(torch.from_numpy(v), torch.from_numpy(t))
                      for v, t in [(a, da), (x, dx), (b, db)])
        expected = fwad.unpack_dual(ta @ tx + tb).tangent
    got = linear_jvp(a, x, da, dx, db)
    np.testing.assert_allclose(got.dy, expected.numpy(), rtol=1e-12, atol=1e-12)
    assert got.flops == 2 * m * n * p + 2 * m * n * p  # dA X and A dX
    assert got.flops == linear_grads(a, x, rng.standard_normal((m, p))).flops  # a VJP costs the same
    np.testing.assert_allclose(linear_jvp(a, x, da, dx).dy, expected.numpy() - db, atol=1e-12)


def test_jvp_and_vjp_are_adjoint():
    """<G, J v> = <J^T G, v> for the linear layer: the two modes describe the same Jacobian."""
    rng = np.random.default_rng(6)
    a, x, da, dx, g = (rng.standard_normal(sh) for sh in [(3, 4), (4, 5), (3, 4), (4, 5), (3, 5)])
    vjp = linear_grads(a, x, g)
    assert np.isclose(np.sum(g * linear_jvp(a, x, da, dx).dy), np.sum(vjp.da * da) + np.sum(vjp.dx * dx))


def test_softmax_jacobian_and_vjp_symbolically():
    n = 3
    s = sp.Matrix(sp.symbols(f"s1:{n + 1}", real=True))
    u = sp.Matrix(sp.symbols(f"u1:{n + 1}", real=True))
    e = s.applyfunc(sp.exp)
    y = e / sum(e)
    jac = y.jacobian(s)
    assert sp.simplify(jac - (sp.diag(*y) - y * y.T)) == sp.zeros(n, n)
    vjp = sp.Matrix([y[i] * (u[i] - (u.T * y)[0]) for i in range(n)])
    assert sp.simplify(jac.T * u - vjp) == sp.zeros(n, 1)
    values = dict(zip(list(s) + list(u), [0.3, -1.2, 2.0, 0.5, 0.1, -0.7], strict=True))
    y_num = softmax(np.array([0.3, -1.2, 2.0]))
    np.testing.assert_allclose(softmax_jacobian(y_num), np.array(jac.subs(values), dtype=float), rtol=1e-12)
    np.testing.assert_allclose(softmax_vjp(y_num, np.array([0.5, 0.1, -0.7])),
                               np.array((jac.T * u).subs(values), dtype=float).ravel(), rtol=1e-12)


@pytest.mark.parametrize("shape", [(5,), (3, 7), (2, 3, 4)])
def test_softmax_and_its_vjp_match_torch(shape):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    s, dy = 3 * rng.standard_normal(shape), rng.standard_normal(shape)
    ts = torch.tensor(s, requires_grad=True)
    ty = torch.softmax(ts, dim=-1)
    ty.backward(torch.from_numpy(dy))
    y = softmax(s)
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(softmax_vjp(y, dy), ts.grad.numpy(), rtol=1e-10, atol=1e-12)
    # PyTorch's own backward kernel takes the output, not the input: the same inputs as ours
    kernel = torch.ops.aten._softmax_backward_data(torch.from_numpy(dy), ty.detach(), -1, torch.float64)
    np.testing.assert_allclose(softmax_vjp(y, dy), kernel.numpy(), rtol=1e-10, atol=1e-12)


def test_softmax_is_stable_and_shift_invariant():
    s = np.array([[1000.0, 1001.0, 999.0], [-1000.0, -1000.0, -1000.0]])
    y = softmax(s)
    np.testing.assert_allclose(y[1], [1 / 3] * 3)
    np.testing.assert_allclose(y[0], softmax(s[0] - 1000.0))
    assert np.allclose(softmax_jacobian(y[0]) @ np.ones(3), 0)


def test_layer_norm_vjp_symbolically():
    n = 3
    x = sp.Matrix(sp.symbols(f"x1:{n + 1}", real=True))
    gam = sp.Matrix(sp.symbols(f"g1:{n + 1}", real=True))
    bet = sp.Matrix(sp.symbols(f"b1:{n + 1}", real=True))
    u = sp.Matrix(sp.symbols(f"u1:{n + 1}", real=True))
    eps = sp.Symbol("epsilon", positive=True)
    mu = sum(x) / n
    sigma = sp.sqrt(sum((xi - mu) ** 2 for xi in x) / n + eps)
    x_hat = (x - sp.ones(n, 1) * mu) / sigma
    y = sp.Matrix([gam[i] * x_hat[i] + bet[i] for i in range(n)])
    vjp = y.jacobian(x).T * u
    values = dict(zip(list(x) + list(gam) + list(bet) + list(u) + [eps],
                      [0.4, -1.1, 2.3, 1.5, 0.7, -0.2, 0.1, 0.2, 0.3, -0.6, 1.3, 0.9, 1e-3], strict=True))
    xn, gn, bn, un = (np.array([values[v] for v in vec], dtype=float) for vec in (x, gam, bet, u))
    fwd = layer_norm(xn, gn, bn, eps=1e-3)
    np.testing.assert_allclose(fwd.y, np.array(y.subs(values), dtype=float).ravel(), rtol=1e-12)
    got = layer_norm_vjp(xn, fwd.mean, fwd.inv_std, gn, un)
    np.testing.assert_allclose(got.dx, np.array(vjp.subs(values), dtype=float).ravel(), rtol=1e-10)
    np.testing.assert_allclose(got.dgamma, np.array([sp.diff(sum(u[i] * y[i] for i in range(n)), g)
                                                     .subs(values) for g in gam], dtype=float), rtol=1e-10)
    np.testing.assert_allclose(got.dbeta, un)


@pytest.mark.parametrize("shape", [(6,), (4, 6), (2, 3, 5)])
def test_layer_norm_and_its_vjp_match_torch(shape):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(8)
    n = shape[-1]
    x, dy = 2 + 3 * rng.standard_normal(shape), rng.standard_normal(shape)
    gamma, beta = 1 + 0.5 * rng.standard_normal(n), rng.standard_normal(n)
    tx, tg, tb = (torch.tensor(v, requires_grad=True) for v in (x, gamma, beta))
    ty, t_mean, t_rstd = torch.ops.aten.native_layer_norm(tx, [n], tg, tb, 1e-5)
    ty.backward(torch.from_numpy(dy))
    fwd = layer_norm(x, gamma, beta, eps=1e-5)
    np.testing.assert_allclose(fwd.y, ty.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(fwd.mean, t_mean.detach().numpy().reshape(fwd.mean.shape), rtol=1e-12)
    np.testing.assert_allclose(fwd.inv_std, t_rstd.detach().numpy().reshape(fwd.inv_std.shape), rtol=1e-10)
    got = layer_norm_vjp(x, fwd.mean, fwd.inv_std, gamma, dy)
    np.testing.assert_allclose(got.dx, tx.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got.dgamma, tg.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got.dbeta, tb.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_what_torch_saves_is_what_the_vjps_take():
    """PyTorch keeps softmax's output and LayerNorm's input, mean, 1/sigma and weight."""
    torch = pytest.importorskip("torch")
    x = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    y = torch.softmax(x, dim=-1)
    assert torch.equal(y.grad_fn._saved_result, y)
    g, b = torch.randn(5, dtype=torch.float64), torch.randn(5, dtype=torch.float64)
    out = torch.nn.functional.layer_norm(x, (5,), g, b, 1e-5)
    fwd = layer_norm(x.detach().numpy(), g.numpy(), b.numpy(), eps=1e-5)
    fn = out.grad_fn
    assert torch.equal(fn._saved_input, x) and torch.equal(fn._saved_weight, g)
    np.testing.assert_allclose(fn._saved_result1.numpy().reshape(3, 1), fwd.mean, rtol=1e-12)
    np.testing.assert_allclose(fn._saved_result2.numpy().reshape(3, 1), fwd.inv_std, rtol=1e-10)


def test_layer_norm_vjp_matches_finite_differences():
    rng = np.random.default_rng(9)
    x, dy = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    gamma, beta = rng.standard_normal(4), rng.standard_normal(4)
    fwd = layer_norm(x, gamma, beta)
    got = layer_norm_vjp(x, fwd.mean, fwd.inv_std, gamma, dy)
    fd = numerical_gradient(lambda v: float(np.sum(dy * layer_norm(v, gamma, beta).y)), x)
    np.testing.assert_allclose(got.dx, fd, rtol=1e-6, atol=1e-8)
    assert np.allclose(got.dx.sum(axis=-1), 0)  # shifting a row does not change the output


def test_bad_input_to_the_new_functions():
    a, x = np.ones((2, 3)), np.ones((3, 4))
    with pytest.raises(ValueError, match="da must have the shape"):
        linear_jvp(a, x, np.ones((3, 2)), x)
    with pytest.raises(ValueError, match="dx must have the shape"):
        linear_jvp(a, x, a, np.ones((3, 3)))
    with pytest.raises(ValueError, match="db must have the shape"):
        linear_jvp(a, x, a, x, np.ones((4, 2)))
    with pytest.raises(ValueError, match="x must have 3 rows"):
        linear_jvp(a, np.ones((2, 4)), a, np.ones((2, 4)))
    with pytest.raises(TypeError, match="s must be an array"):
        softmax("abc")
    with pytest.raises(ValueError, match="s must be non-empty"):
        softmax(np.ones((2, 0)))
    with pytest.raises(ValueError, match="s must be finite"):
        softmax(np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="s must have at least 1 dimension"):
        softmax(np.array(1.0))
    with pytest.raises(ValueError, match="y must be a 1-D vector"):
        softmax_jacobian(np.ones((2, 2)) / 2)
    with pytest.raises(ValueError, match="dy must have the shape"):
        softmax_vjp(np.ones((2, 3)) / 3, np.ones((3, 2)))
    with pytest.raises(ValueError, match="gamma must have the shape"):
        layer_norm(np.ones((2, 3)), np.ones(2), np.ones(3))
    with pytest.raises(ValueError, match="beta must have the shape"):
        layer_norm(np.ones((2, 3)), np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="eps must be > 0"):
        layer_norm(np.ones((2, 3)), np.ones(3), np.ones(3), eps=0.0)
    fwd = layer_norm(np.arange(6.0).reshape(2, 3), np.ones(3), np.zeros(3))
    with pytest.raises(ValueError, match="mean must have the shape"):
        layer_norm_vjp(np.ones((2, 3)), np.ones((2, 3)), fwd.inv_std, np.ones(3), np.ones((2, 3)))
    with pytest.raises(ValueError, match="inv_std must be > 0"):
        layer_norm_vjp(np.ones((2, 3)), fwd.mean, -fwd.inv_std, np.ones(3), np.ones((2, 3)))
    with pytest.raises(ValueError, match="dy must have the shape"):
        layer_norm_vjp(np.ones((2, 3)), fwd.mean, fwd.inv_std, np.ones(3), np.ones((3, 2)))
