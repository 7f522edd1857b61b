"""Checkable exercises of the chapter ``matmul-cost``.

The chapter "The cost of a matrix multiply" (``chapters/matmul-cost.ipynb``). Registered by
:mod:`llmmath.check` under the chapter's slug (this module's name with hyphens). Each part computes
its expected value with llmmath when an answer is checked: no answer is stored here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..check import SIG3, Exercise, Part
from ..hardware import ridge_point
from ..matmul import (
    arithmetic_intensity,
    batched_matmul_flops,
    chain_flops,
    matmul_flops,
    naive_matmul,
    optimal_chain_order,
)
from ..presets import preset


def _rel_error(m: int, n: int, p: int) -> float:
    exact = matmul_flops(m, n, p, exact=True)
    return (matmul_flops(m, n, p) - exact) / exact


def _gpt3_mlp() -> int:
    cfg = preset("gpt3-175b")
    h, f = cfg.hidden_size, cfg.ffn_size
    return batched_matmul_flops([1], 2048, h, f) + batched_matmul_flops([1], 2048, f, h)


def _check_zero_acc_matmul(func: Callable[..., Any]) -> str | None:
    rng = np.random.default_rng(0)
    for m, n, p in [(1, 1, 1), (2, 3, 4), (3, 1, 2), (4, 5, 1)]:
        a, b = rng.standard_normal((m, n)), rng.standard_normal((n, p))
        result = func(a.tolist(), b.tolist())
        if not (isinstance(result, tuple) and len(result) == 2):
            return "it must return a pair (product, flop count)."
        out, count = result
        if np.shape(out) != (m, p) or not np.allclose(np.asarray(out, dtype=float), a @ b):
            return f"the product is wrong for shapes {m}x{n} @ {n}x{p}."
        if count != matmul_flops(m, n, p):
            return f"the FLOP count is wrong for shapes {m}x{n} @ {n}x{p}."
    return None


def _naive_saving() -> int:
    a, b = np.ones((3, 5)), np.ones((5, 4))
    return matmul_flops(3, 5, 4) - naive_matmul(a, b)[1].flops


def _lora(order: str) -> int:
    return chain_flops([4096, 16, 4096, 8], order)


_CLRS = [30, 35, 15, 5, 10, 20, 25]


def _clrs_best() -> int:
    return optimal_chain_order(_CLRS)[0]


def _clrs_left() -> int:
    return chain_flops(_CLRS, "left")


def _n_parenthesizations(k: int) -> int:
    """Count the parenthesizations of a chain of ``k`` matrices by brute-force recursion."""
    return 1 if k == 1 else sum(_n_parenthesizations(i) * _n_parenthesizations(k - i) for i in range(1, k))


def _llama65_crossover() -> float:
    cfg = preset("llama-65b")
    h = cfg.hidden_size
    proj_per_token = 4 * batched_matmul_flops([1], 1, h, h)  # 8 h^2 per token: linear in s
    attn_per_token2 = 2 * batched_matmul_flops([cfg.n_heads], 1, cfg.head_dim, 1)  # 4 h: times s^2
    return proj_per_token / attn_per_token2


def _up_proj_intensity(b: int, beta: float) -> float:
    return arithmetic_intensity(b, 8192, 28672, beta)


def _first_compute_bound(gpu: str, precision: str, beta: float) -> int:
    b, ridge = 1, ridge_point(gpu, precision)
    while _up_proj_intensity(b, beta) < ridge:
        b += 1
    return b


def _llama65_h() -> int:
    return preset("llama-65b").hidden_size


EXERCISES = [
    Exercise(
        "matmul-cost-ex-vecmat", "matmul-cost-exact", "The exact count",
        "A has shape 4096 x 11008; v is in R^11008, x in R^4096 and y in R^11008.",
        (
            Part("matvec_exact", "exact FLOPs of the product A v", lambda: matmul_flops(4096, 11008, 1, exact=True)),
            Part("matvec_rel_error", "relative error (2mnp - exact) / exact of the 2mnp convention for A v",
                 lambda: _rel_error(4096, 11008, 1), rtol=SIG3),
            Part("outer_exact", "exact FLOPs of the outer product x y^T",
                 lambda: matmul_flops(4096, 1, 11008, exact=True)),
            Part("outer_rel_error", "relative error of the convention for x y^T",
                 lambda: _rel_error(4096, 1, 11008), rtol=SIG3),
        ),
    ),
    Exercise(
        "matmul-cost-ex-mlp", "matmul-cost-batched", "Batched products and the shapes of a transformer",
        "GPT-3 175B, one sequence of s = 2048 tokens.",
        (Part("mlp_flops", "FLOPs (2mnp convention) of the two MLP products of one layer", _gpt3_mlp),),
    ),
    Exercise(
        "matmul-cost-ex-count", "matmul-cost-exact", "The exact count",
        "Write zero_acc_matmul(a, b) for nested lists a (m x n) and b (n x p).",
        (
            Part("zero_acc_matmul", "returns (product as nested lists, number of FLOPs performed)",
                 _check_zero_acc_matmul, kind="function"),
            Part("naive_saving", "how many fewer FLOPs llmmath.naive_matmul performs than zero_acc_matmul "
                 "for a 3 x 5 times 5 x 4 product", _naive_saving),
        ),
    ),
    Exercise(
        "matmul-cost-ex-chain", "matmul-cost-chain", "The order of a chain of products",
        "h = 4096, r = 16, b = 8.",
        (
            Part("lora_right", "FLOPs of W2 (W1 x)", lambda: _lora("right")),
            Part("lora_left", "FLOPs of (W2 W1) x", lambda: _lora("left")),
            Part("lora_ratio", "lora_left / lora_right", lambda: _lora("left") / _lora("right"), rtol=SIG3),
        ),
    ),
    Exercise(
        "matmul-cost-ex-dp", "matmul-cost-chain", "The order of a chain of products",
        "The chain with dimensions [30, 35, 15, 5, 10, 20, 25].",
        (
            Part("dp_best", "FLOPs of the cheapest order", _clrs_best),
            Part("dp_left", "FLOPs of the left-to-right order", _clrs_left),
            Part("dp_count", "number of parenthesizations of the six matrices", lambda: _n_parenthesizations(6)),
        ),
    ),
    Exercise(
        "matmul-cost-ex-attention", "matmul-cost-batched", "Batched products and the shapes of a transformer",
        "LLaMA-65B, one sequence.",
        (
            Part("crossover_s", "sequence length at which the attention products cost as much as the "
                 "Q, K, V, O projections", _llama65_crossover, rtol=SIG3),
            Part("crossover_s_over_h", "that length divided by the hidden size h",
                 lambda: _llama65_crossover() / _llama65_h(), rtol=SIG3),
        ),
    ),
    Exercise(
        "matmul-cost-ex-roofline", "matmul-cost-roofline", "Arithmetic intensity and the roofline",
        "b tokens times an 8192 x 28672 weight (Llama-3-70B's up-projection).",
        (
            Part("intensity_b64", "arithmetic intensity in FLOPs per byte at b = 64 in BF16 (2 bytes per value)",
                 lambda: _up_proj_intensity(64, 2), rtol=SIG3),
            Part("batch_h100", "smallest b that is compute-bound on an H100 (dense BF16)",
                 lambda: _first_compute_bound("H100", "bf16_tensor", 2)),
            Part("batch_mi300x", "smallest b that is compute-bound on an MI300X (dense BF16)",
                 lambda: _first_compute_bound("MI300X", "bf16_tensor", 2)),
            Part("batch_h100_fp8", "smallest b that is compute-bound on an H100 with FP8 values (1 byte) at "
                 "the FP8 peak", lambda: _first_compute_bound("H100", "fp8_tensor", 1)),
        ),
    ),
]


# The questions of checkable exercises that are graded by hand (the assignments collect them).
WRITTEN = {
    'matmul-cost-ex-vecmat': (
        "What does the $2mnp$ convention say for each product, and why is its relative error so different for"
        " the two?",
    ),
    'matmul-cost-ex-mlp': (
        "Show that your count equals $16bsh^2$ when $d_\\text{ff} = 4h$.",
    ),
    'matmul-cost-ex-count': (
        "How many additions does your multiply perform? Show that its count is exactly $2mnp$, and explain "
        "why `naive_matmul` performs fewer.",
    ),
    'matmul-cost-ex-chain': (
        "Does merging $W_2W_1$ pay off for large $k$? After how many batches does merging the adapter into a "
        "frozen dense weight $W$ pay off?",
    ),
    'matmul-cost-ex-attention': (
        "Derive the crossover length in terms of $h$.",
    ),
}
