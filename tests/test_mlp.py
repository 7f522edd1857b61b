"""Tests of llmmath.mlp: expected values from finite differences, sympy sums and PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from llmmath.chain import numerical_gradient
from llmmath.mlp import (
    MLPParams,
    MLPSpec,
    init_mlp,
    mlp_backward,
    mlp_backward_flops,
    mlp_forward,
    mlp_forward_flops,
    mlp_loss_and_grads,
    mse_loss,
    training_step_flops,
    uniform_mlp_flops,
    uniform_mlp_widths,
)

CASES = [
    ((3, 4, 2), "identity", False),
    ((2, 5, 5, 3), "relu", True),
    ((4, 3, 6, 2, 1), "tanh", True),
    ((1, 1), "tanh", False),
]


def _data(spec: MLPSpec, batch: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((batch, spec.widths[0])), rng.standard_normal((batch, spec.widths[-1]))


def _with(params: MLPParams, kind: str, i: int, value: np.ndarray) -> MLPParams:
    ws, bs = list(params.weights), list(params.biases)
    (ws if kind == "w" else bs)[i] = value
    return MLPParams(tuple(ws), tuple(bs))


@pytest.mark.parametrize(("widths", "act", "bias"), CASES)
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_grads_match_finite_differences(widths, act, bias, reduction):
    spec = MLPSpec(widths, act, bias)
    params = init_mlp(spec, seed=1)
    x, y = _data(spec, batch=3)
    step = mlp_loss_and_grads(spec, params, x, y, input_grad=True, reduction=reduction)

    def loss_of(p, xx=x):
        return mse_loss(mlp_forward(spec, p, xx).y_hat, y, reduction=reduction)[0]

    assert step.loss == pytest.approx(loss_of(params))
    for i in range(spec.n_layers):
        num = numerical_gradient(lambda w, i=i: loss_of(_with(params, "w", i, w)), params.weights[i])
        np.testing.assert_allclose(step.grads.weights[i], num, rtol=1e-5, atol=1e-8)
        if bias:
            num = numerical_gradient(lambda b, i=i: loss_of(_with(params, "b", i, b)), params.biases[i])
            np.testing.assert_allclose(step.grads.biases[i], num, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(step.grads.dx, numerical_gradient(lambda v: loss_of(params, v), x), rtol=1e-5, atol=1e-8)


def test_mse_loss_values():
    y_hat, y = np.array([[1.0, 2.0], [3.0, 5.0]]), np.array([[0.0, 2.0], [1.0, 1.0]])
    loss, grad = mse_loss(y_hat, y)
    assert loss == pytest.approx((1 + 0 + 4 + 16) / 4)
    np.testing.assert_allclose(grad, 2 * (y_hat - y) / 4)
    assert mse_loss(y_hat, y, reduction="sum")[0] == pytest.approx(21.0)


@pytest.mark.parametrize(("widths", "act", "bias"), CASES)
@pytest.mark.parametrize("input_grad", [False, True])
def test_against_torch(widths, act, bias, input_grad):
    torch = pytest.importorskip("torch")
    from torch.utils.flop_counter import FlopCounterMode

    spec = MLPSpec(widths, act, bias)
    params = init_mlp(spec, seed=2)
    batch = 5
    x, y = _data(spec, batch, seed=3)
    layers = []
    for i, w in enumerate(params.weights):
        lin = torch.nn.Linear(w.shape[0], w.shape[1], bias=bias, dtype=torch.float64)
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(w.T))
            if bias:
                lin.bias.copy_(torch.from_numpy(params.biases[i]))
        layers.append(lin)
        if i < len(params.weights) - 1:
            layers.append({"identity": torch.nn.Identity, "relu": torch.nn.ReLU, "tanh": torch.nn.Tanh}[act]())
    net = torch.nn.Sequential(*layers)
    xt = torch.from_numpy(x).requires_grad_(input_grad)
    with FlopCounterMode(display=False) as fwd_counter:
        loss = torch.nn.functional.mse_loss(net(xt), torch.from_numpy(y))
    with FlopCounterMode(display=False) as bwd_counter:
        loss.backward()
    step = mlp_loss_and_grads(spec, params, x, y, input_grad=input_grad)
    assert step.loss == pytest.approx(loss.item(), rel=1e-12)
    linears = [m for m in net if isinstance(m, torch.nn.Linear)]
    for i, lin in enumerate(linears):
        np.testing.assert_allclose(step.grads.weights[i], lin.weight.grad.numpy().T, rtol=1e-10, atol=1e-13)
        if bias:
            np.testing.assert_allclose(step.grads.biases[i], lin.bias.grad.numpy(), rtol=1e-10, atol=1e-13)
    if input_grad:
        np.testing.assert_allclose(step.grads.dx, xt.grad.numpy(), rtol=1e-10, atol=1e-13)
    else:
        assert step.grads.dx is None
    # three counts, one number: torch's counter, llmmath's counted multiply, the closed form
    assert fwd_counter.get_total_flops() == step.forward_flops == mlp_forward_flops(widths, batch)
    assert bwd_counter.get_total_flops() == step.backward_flops
    assert step.backward_flops == mlp_backward_flops(widths, batch, input_grad=input_grad)


def test_closed_form_matches_sympy_sum():
    n, b, m, c, d = sp.symbols("N B M C D", positive=True, integer=True)
    i = sp.Symbol("i", integer=True)
    # per-layer terms: layer 1 (D x M), layers 2..N (M x M), layer N+1 (M x C)
    fwd = 2 * b * d * m + sp.summation(2 * b * m * m, (i, 2, n)) + 2 * b * m * c
    bwd = 2 * b * d * m + sp.summation(2 * 2 * b * m * m, (i, 2, n)) + 2 * 2 * b * m * c
    assert sp.expand(fwd.subs(d, m) - (2 * n * b * m**2 + 2 * b * m * c)) == 0  # seed 001's forward claim
    assert sp.expand(bwd.subs(d, m) - (2 * (2 * n - 1) * b * m**2 + 4 * b * m * c)) == 0
    assert sp.expand(bwd.subs(d, m) - (2 * (2 * n - 1) * b * m**2 + 6 * b * m * c)) != 0  # seed's 6BMC
    for vals in [(1, 2, 3, 4, 5), (3, 1, 7, 2, 7), (5, 4, 2, 9, 1)]:
        nv, bv, mv, cv, dv = vals
        sub = {n: nv, b: bv, m: mv, c: cv, d: dv}
        got = uniform_mlp_flops(nv, bv, mv, cv, n_in=dv)
        assert got.forward == fwd.subs(sub)
        assert got.backward == bwd.subs(sub)
        assert uniform_mlp_flops(nv, bv, mv, cv, n_in=dv, input_grad=True).backward == bwd.subs(sub) + 2 * bv * dv * mv
        widths = uniform_mlp_widths(nv, mv, cv, n_in=dv)
        assert len(widths) == nv + 2
        assert mlp_forward_flops(widths, bv) == got.forward
        assert mlp_backward_flops(widths, bv) == got.backward


def test_counted_flops_uniform_mlp():
    spec = MLPSpec(uniform_mlp_widths(3, 6, 2), "relu")
    x, y = _data(spec, batch=4)
    step = mlp_loss_and_grads(spec, init_mlp(spec), x, y)
    # brute force: 2 m n p for every product, written out for 4 layers 6->6->6->6->2, batch 4
    assert step.forward_flops == 2 * 4 * (6 * 6 * 3 + 6 * 2)
    assert step.backward_flops == 2 * 4 * (6 * 6 * 3 + 6 * 2) + 2 * 4 * (6 * 6 * 2 + 6 * 2)


def test_training_step_flops_transformer_block_torch():
    """A block whose every matmul needs both gradients: backward = 2F, with recomputation 3F.

    Reentrant checkpointing reruns the whole forward; non-reentrant checkpointing stops the
    recomputation once every saved tensor is back, so the segment's last matmul is not redone.
    """
    torch = pytest.importorskip("torch")
    from torch.utils.checkpoint import checkpoint
    from torch.utils.flop_counter import FlopCounterMode

    gen = torch.Generator().manual_seed(0)
    b, s, h = 2, 5, 8
    ws = [
        torch.randn(*shape, generator=gen, dtype=torch.float64, requires_grad=True)
        for shape in [(h, h)] * 4 + [(h, 4 * h), (4 * h, h)]
    ]

    def block(x):
        q, k, v = x @ ws[0], x @ ws[1], x @ ws[2]
        att = torch.softmax(q @ k.transpose(-1, -2) / h**0.5, dim=-1) @ v
        y = x + att @ ws[3]
        return y + torch.relu(y @ ws[4]) @ ws[5]

    x = torch.randn(b, s, h, generator=gen, dtype=torch.float64, requires_grad=True)
    totals = {}
    for recompute in (False, True, "early-stop"):
        with FlopCounterMode(display=False) as fwd:
            if recompute is False:
                out = block(x)
            else:
                out = checkpoint(block, x, use_reentrant=recompute is True)
        with FlopCounterMode(display=False) as bwd:
            out.square().sum().backward()
        totals[recompute] = (fwd.get_total_flops(), bwd.get_total_flops())
    forward = 2 * b * s * h * h * 4 + 2 * 2 * b * s * s * h + 2 * 2 * b * s * h * 4 * h
    assert totals[False][0] == totals[True][0] == forward
    assert sum(totals[False]) == training_step_flops(forward)
    assert sum(totals[True]) == training_step_flops(forward, recompute=True)
    assert sum(totals["early-stop"]) == training_step_flops(forward, recompute=True) - 2 * b * s * 4 * h * h


def test_spec_is_frozen_and_normalised():
    spec = MLPSpec([2, 3])
    assert spec.widths == (2, 3) and spec.n_layers == 1
    assert MLPSpec(np.array([4, 5, 6])).widths == (4, 5, 6)
    with pytest.raises(AttributeError):
        spec.widths = (1, 1)  # type: ignore[misc]


def test_init_is_deterministic():
    spec = MLPSpec((3, 4, 2), "relu", True)
    p1, p2 = init_mlp(spec, seed=5), init_mlp(spec, seed=5)
    for a, b in zip(p1.weights + p1.biases, p2.weights + p2.biases, strict=True):
        np.testing.assert_array_equal(a, b)


def test_bad_input():
    with pytest.raises(ValueError, match=r"widths\[1\] must be an integer >= 1"):
        MLPSpec((3, 0))
    with pytest.raises(ValueError, match=r"widths\[0\] must be an integer >= 1"):
        MLPSpec((-2, 3))
    with pytest.raises(TypeError, match=r"widths\[1\] must be an integer"):
        MLPSpec((3, 2.5))
    with pytest.raises(ValueError, match="widths must have at least 2"):
        MLPSpec((3,))
    with pytest.raises(TypeError, match="widths must be a sequence"):
        MLPSpec(3)
    with pytest.raises(ValueError, match="activation must be one of"):
        MLPSpec((2, 2), "gelu")
    with pytest.raises(TypeError, match="bias must be True or False"):
        MLPSpec((2, 2), bias=1)
    spec = MLPSpec((3, 4, 2), "relu")
    params = init_mlp(spec)
    with pytest.raises(TypeError, match="spec must be an MLPSpec"):
        init_mlp((3, 4))
    with pytest.raises(ValueError, match="seed must be"):
        init_mlp(spec, seed=-1)
    with pytest.raises(ValueError, match="x must have shape"):
        mlp_forward(spec, params, np.ones((2, 4)))
    with pytest.raises(TypeError, match="x must be a 2-D array"):
        mlp_forward(spec, params, "x")
    with pytest.raises(TypeError, match="x must be a 2-D array of real numbers"):
        mlp_forward(spec, params, [[1.0, 2.0, 3.0], [1.0]])
    with pytest.raises(ValueError, match=r"params.weights\[1\] must have shape"):
        mlp_forward(spec, MLPParams((params.weights[0], np.ones((3, 2)))), np.ones((2, 3)))
    with pytest.raises(ValueError, match="params.biases must have 0"):
        mlp_forward(spec, MLPParams(params.weights, (np.ones(4), np.ones(2))), np.ones((2, 3)))
    with pytest.raises(TypeError, match="params must be an MLPParams"):
        mlp_forward(spec, params.weights, np.ones((2, 3)))
    fwd = mlp_forward(spec, params, np.ones((2, 3)))
    with pytest.raises(ValueError, match="dy_hat must have 2 rows"):
        mlp_backward(spec, params, fwd, np.ones((3, 2)))
    with pytest.raises(ValueError, match="dy_hat must have shape"):
        mlp_backward(spec, params, fwd, np.ones((2, 3)))
    with pytest.raises(TypeError, match="input_grad must be True or False"):
        mlp_backward(spec, params, fwd, np.ones((2, 2)), input_grad="yes")
    with pytest.raises(ValueError, match="y must have shape"):
        mse_loss(np.ones((2, 2)), np.ones((2, 3)))
    with pytest.raises(ValueError, match="y must have the shape of y_hat"):
        mse_loss(np.ones((2, 2)), np.ones((3, 2)))
    with pytest.raises(ValueError, match="reduction must be one of"):
        mse_loss(np.ones((2, 2)), np.ones((2, 2)), reduction="max")
    with pytest.raises(ValueError, match="batch must be an integer >= 1"):
        mlp_forward_flops((2, 3), 0)
    with pytest.raises(TypeError, match="batch must be an integer"):
        mlp_backward_flops((2, 3), 1.5)
    for bad, exc in [(0, ValueError), (-3, ValueError), (2.0, TypeError), (None, TypeError)]:
        with pytest.raises(exc, match="n_hidden must be"):
            uniform_mlp_flops(bad, 1, 2, 3)
        with pytest.raises(exc, match="width must be"):
            uniform_mlp_widths(2, bad, 3)
        with pytest.raises(exc, match="forward_flops must be"):
            training_step_flops(bad)
    with pytest.raises(ValueError, match="n_in must be"):
        uniform_mlp_flops(2, 1, 2, 3, n_in=0)
    with pytest.raises(TypeError, match="recompute must be True or False"):
        training_step_flops(10, recompute="full")


def test_forward_backward_chapter_says_hfu_is_about_four_thirds_of_mfu():
    """Issue 31: with full recomputation HFU/MFU is not 4/3, because the LM head is not
    recomputed. The chapter glues the exact ratio of its small GPT-2 (2 layers, h = 64, V = 96,
    b = 2, s = 16), here recomputed by hand from the GPT layer formula (4 passes for the blocks,
    3 for the logits), and no longer states the equality."""
    import json
    import re
    from pathlib import Path

    b, s, h, n_layers, vocab = 2, 16, 64, 2, 96
    blocks = n_layers * (24 * b * s * h**2 + 4 * b * s**2 * h)
    head = 2 * b * s * h * vocab
    exact = (4 * blocks + 3 * head) / (3 * (blocks + head))
    assert abs(exact - 4 / 3) > 0.01
    nb = json.loads((Path(__file__).parent.parent / "chapters" / "forward-backward-cost.ipynb").read_text())
    glued = {
        out["metadata"]["scrapbook"]["name"]: out["data"].get("application/papermill.record/text/plain")
        for cell in nb["cells"] for out in cell.get("outputs", [])
        if out.get("metadata", {}).get("scrapbook")
    }
    assert float(glued["fb-gpt2-hfu-mfu"]) == pytest.approx(exact, rel=1e-12)
    text = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert "{glue:text}`fb-gpt2-hfu-mfu" in text
    assert not re.search(r"HFU \$= \\tfrac43\$ MFU", text)
