"""Checkable exercises of the chapter ``matrix-chain-rule``.

The chapter "The matrix chain rule" (``chapters/matrix-chain-rule.ipynb``). Registered by
:mod:`llmmath.check` under the chapter's slug (this module's name with hyphens). Each part computes
its expected value with llmmath when an answer is checked: no answer is stored here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..chain import layer_norm, layer_norm_vjp, softmax, softmax_vjp
from ..check import SIG3, Exercise, Part
from ..matmul import chain_flops, matmul_flops
from ..mlp import mlp_backward_flops
from ..presets import preset


def _chain_two_layers(order: str) -> int:
    return chain_flops([10, 1000, 100, 1000], order)  # A2^T (r x m), G (m x p), X^T (p x n)


_FWD_MODE_WIDTHS, _FWD_MODE_BATCH = (784, 128, 128, 10), 32


def _forward_mode(what: str) -> int:
    w = _FWD_MODE_WIDTHS
    n_weights = sum(a * b for a, b in zip(w[:-1], w[1:], strict=True))
    jvp = mlp_backward_flops(w, _FWD_MODE_BATCH)  # one JVP costs one backward pass (derived in the chapter)
    return {"n": n_weights, "jvp": jvp, "total": n_weights * jvp}[what]


def _check_rows_function(
    func: Callable[..., Any], reference: Callable[..., Any], make_args: Callable[..., Any]
) -> str | None:
    rng = np.random.default_rng(0)
    for shape in [(1, 4), (3, 5), (2, 3, 6)]:
        args = make_args(rng, shape)
        out = func(*args)
        if np.shape(out) != shape:
            return f"it must return an array of the input's shape; for shape {shape} it returned shape {np.shape(out)}."
        if not np.allclose(np.asarray(out, dtype=float), reference(*args), rtol=1e-8, atol=1e-12):
            return f"the result is wrong for rows of shape {shape}."
    return None


def _check_softmax_vjp(func: Callable[..., Any]) -> str | None:
    return _check_rows_function(func, softmax_vjp, lambda rng, shape: (
        softmax(2 * rng.standard_normal(shape)), rng.standard_normal(shape)))


def _check_layer_norm_dx(func: Callable[..., Any]) -> str | None:
    def make_args(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
        x, gamma = 1 + 2 * rng.standard_normal(shape), 1 + 0.5 * rng.standard_normal(shape[-1])
        fwd = layer_norm(x, gamma, np.zeros(shape[-1]))
        return x, fwd.mean, fwd.inv_std, gamma, rng.standard_normal(shape)

    return _check_rows_function(func, lambda *args: layer_norm_vjp(*args).dx, make_args)


def _softmax_dense_ratio() -> float:
    n = 4096
    return matmul_flops(n, n, 1) / (4 * n)  # dense J^T u (2mnp convention) against the formula's 4n


def _layer_norm_bytes() -> int:
    h, s = preset("gpt2").hidden_size, 1024
    return 4 * (s * h + 2 * s)  # float32 input plus mean and 1/sigma per token


EXERCISES = [
    Exercise("chain-ex-two-layers", "chain-composition", "Several layers and the Hadamard step",
             "m = 1000, r = 10, n = 1000, p = 100.",
             (Part("bp_flops", "FLOPs of (A2^T G) X^T", lambda: _chain_two_layers("left")),
              Part("other_flops", "FLOPs of A2^T (G X^T)", lambda: _chain_two_layers("right")))),
    Exercise("chain-ex-forward-mode", "chain-modes", "Forward mode and reverse mode",
             "MLP widths (784, 128, 128, 10), no biases, batch b = 32, the input is data.",
             (Part("n_jvps", "JVPs forward mode needs for the gradient with respect to all weights",
                 lambda: _forward_mode("n")),
              Part("jvp_flops", "matmul FLOPs of one JVP", lambda: _forward_mode("jvp")),
              Part("forward_mode_flops", "matmul FLOPs of all of them together", lambda: _forward_mode("total")))),
    Exercise("chain-ex-softmax", "chain-vjps", "The VJPs of softmax and LayerNorm",
             "Rows are the last axis; n = 4096 for the FLOP ratio.",
             (Part("softmax_vjp", "softmax_vjp(y, dy) -> dL/dx for softmax outputs y = softmax(x) and upstream dy",
                   _check_softmax_vjp, kind="function"),
              Part("dense_ratio", "FLOPs of the dense J^T g (2 n^2) divided by the formula's 4 n",
                 _softmax_dense_ratio, SIG3))),
    Exercise("chain-ex-layernorm", "chain-vjps", "The VJPs of softmax and LayerNorm",
             "Rows are the last axis; GPT-2 small, s = 1024 tokens, float32.",
             (Part("layer_norm_dx", "layer_norm_dx(x, mean, inv_std, gamma, dy) -> dL/dx",
                   _check_layer_norm_dx, kind="function"),
              Part("saved_bytes", "bytes its backward pass keeps: the input and the two row statistics",
                 _layer_norm_bytes))),
    Exercise("chain-ex-eps", "chain-numerical", "Numerical check with central differences",
             "float64, u = 2^-53, |L| = |L'''|.",
             (Part("eps_opt", "the step that minimises the total error", lambda: (3 * 2.0**-53) ** (1 / 3), 1e-2),)),
]


# The questions of checkable exercises that are graded by hand (the assignments collect them).
WRITTEN = {
    'chain-ex-two-layers': (
        "Show $\\partial L/\\partial A_1 = A_2^\\top G X^\\top$. Which order does backpropagation use, and why?",
    ),
    'chain-ex-eps': (
        "Derive the truncation error $\\frac{\\varepsilon^2}{6}|L^{(3)}|$ and the step that minimises the total"
        " error; compare with the chapter's figure.",
    ),
    'chain-ex-forward-mode': (
        "(a) Write the JVP of the forward pass layer by layer and show that its matrix products cost as much "
        "as those of the backward pass.",
    ),
    'chain-ex-softmax': (
        "(a) Derive $\\partial y_i/\\partial s_j$ and the VJP. (b) Show that $\\operatorname{softmax}(s + "
        "c\\mathbf{1}) = \\operatorname{softmax}(s)$ and deduce that the entries of $\\partial L/\\partial s$ sum"
        " to zero.",
    ),
    'chain-ex-layernorm': (
        "(a) Derive the VJP for one row. (b) Show that $\\partial L/\\partial x$ is orthogonal to $\\mathbf{1}$ "
        "(and, for $\\varepsilon = 0$, to $\\hat x$); which properties of LayerNorm do these express?",
    ),
}

# The chapter's exercises without a checkable part: graded by hand only.
HAND_GRADED = ('chain-ex-rowmajor', 'chain-ex-bias', 'chain-ex-shapes', 'chain-ex-fd', 'chain-ex-kron')
