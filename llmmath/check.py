"""Check an exercise answer without a course set-up: ``check(exercise_id, answer)``.

A reader working through an exercise of the book calls, in any notebook::

    from llmmath.check import check, describe
    describe("matmul-cost-ex-mlp")          # what to compute, and in which form
    check("matmul-cost-ex-mlp", 1.2e12)     # right or wrong, the tolerance, a hint

The expected answers are never stored: each one is a small function that computes it with
llmmath when ``check`` is called. The feedback says right or wrong, the tolerance used and the
section (its label in the book) to revisit, never the expected value. The same function grades the
assignments built by ``python3 dev.py assign`` (otter-grader): every autograder test calls it.

An exercise has one or more *parts*. A one-part exercise takes the answer itself; a several-part
exercise takes a ``dict`` from part name to answer (a missing part is reported as missing). A part
is a number (compared with a relative tolerance; ``rtol=0`` asks for the exact integer) or a
function (called on a few seeded inputs and compared with llmmath's own result on them).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Part", "Exercise", "Feedback", "EXERCISES", "exercise_ids", "describe", "check"]


@dataclass(frozen=True)
class Part:
    """One answer of an exercise.

    ``expected`` computes the expected number with llmmath at check time (kind ``"number"``), or,
    for kind ``"function"``, returns ``None`` when the student's function (passed to it) is right
    and a feedback sentence that does not give the answer away when it is wrong.
    """

    name: str
    prompt: str
    expected: Callable[..., Any]
    rtol: float = 0.0
    kind: str = "number"

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"Part name must be a Python identifier, got {self.name!r}")
        if self.kind not in ("number", "function"):
            raise ValueError(f"Part kind must be 'number' or 'function', got {self.kind!r}")
        if not (isinstance(self.rtol, (int, float)) and 0 <= self.rtol < 1):
            raise ValueError(f"Part rtol must be a number in [0, 1), got {self.rtol!r}")


@dataclass(frozen=True)
class Exercise:
    """The checkable form of one exercise of the book: its label, what to submit, where to look."""

    label: str
    section: str  # label of the section that holds what is needed
    section_title: str
    task: str  # the concrete question the parts answer (the chapter's exercise may be more general)
    parts: tuple[Part, ...]

    @property
    def chapter(self) -> str:
        """The chapter (its notebook's name): from the label's prefix, the part before ``-ex-``."""
        prefix = self.label.split("-ex-")[0]
        return _CHAPTER_OF_PREFIX.get(prefix, prefix)


_CHAPTER_OF_PREFIX = {"chain": "matrix-chain-rule", "fb": "forward-backward-cost", "params": "parameter-counts",
                      "flops": "transformer-flops", "mem": "memory", "optim": "optimizers"}


@dataclass(frozen=True)
class Feedback:
    """The verdict of :func:`check`: ``correct`` for the whole exercise, one line per part."""

    exercise_id: str
    correct: bool
    parts: tuple[tuple[str, bool, str], ...]  # (part name, correct, message)
    hint: str

    @property
    def message(self) -> str:
        head = f"{self.exercise_id}: " + ("all correct." if self.correct else "not yet right.")
        lines = [head, *(f"  {'right' if ok else 'wrong'}: {msg}" for _, ok, msg in self.parts)]
        if not self.correct:
            lines.append(f"  Hint: {self.hint}")
        return "\n".join(lines)

    def part_correct(self, name: str) -> bool:
        """Whether the part ``name`` is right (``KeyError`` for an unknown part)."""
        for part, ok, _ in self.parts:
            if part == name:
                return ok
        raise KeyError(f"{self.exercise_id} has no part {name!r}; parts: {[p for p, _, _ in self.parts]}")

    def __bool__(self) -> bool:
        return self.correct

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return self.message


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) or (
        isinstance(value, np.ndarray) and value.shape == () and np.issubdtype(value.dtype, np.number)
    )


def _tolerance_text(rtol: float) -> str:
    return "exact integer required" if rtol == 0 else f"relative tolerance {rtol:g}"


def _check_number(part: Part, answer: Any) -> tuple[bool, str]:
    tol = _tolerance_text(part.rtol)
    if answer is None or answer is Ellipsis:
        return False, f"{part.name}: no answer given ({part.prompt}; {tol})."
    if not _is_number(answer):
        return False, f"{part.name}: expected a number, got {type(answer).__name__} ({tol})."
    expected = part.expected()
    value = float(answer)
    if not math.isfinite(value):
        return False, f"{part.name}: the answer is not finite ({tol})."
    if part.rtol == 0:  # exact: compare as integers (a float above 2**53 would lose digits)
        exact = int(answer) if isinstance(answer, numbers.Integral) else (int(value) if value.is_integer() else None)
        ok = exact is not None and float(expected).is_integer() and exact == int(expected)
    else:
        ok = math.isclose(value, float(expected), rel_tol=part.rtol, abs_tol=0.0)
    return ok, f"{part.name} ({tol})."


def _check_function(part: Part, answer: Any) -> tuple[bool, str]:
    if answer is None or answer is Ellipsis:
        return False, f"{part.name}: no function given ({part.prompt})."
    if not callable(answer):
        return False, f"{part.name}: expected a function, got {type(answer).__name__}."
    try:
        problem = part.expected(answer)
    except Exception as exc:  # the student's code raised: report it, it is feedback
        return False, f"{part.name}: calling it raised {type(exc).__name__}: {exc}"
    return (problem is None), (f"{part.name}." if problem is None else f"{part.name}: {problem}")


def check(exercise_id: str, answer: Any, part: str | None = None) -> Feedback:
    """Check ``answer`` to the exercise labelled ``exercise_id`` and return a :class:`Feedback`.

    ``answer`` is the value itself for a one-part exercise and a ``dict`` (part name -> value) for
    a several-part one; :func:`describe` lists the parts. Numbers are compared with the relative
    tolerance of each part (``rtol = 0``: the exact integer). The expected values are computed by
    llmmath at call time and never shown. With ``part``, ``answer`` is the value of that one part
    and only it is checked (the autograder grades each part on its own). Raises ``ValueError`` for
    an unknown exercise id or part.
    """
    ex = _exercise(exercise_id)
    if part is not None:
        names = [p.name for p in ex.parts]
        if part not in names:
            raise ValueError(f"part must be one of {names} for {exercise_id}; got {part!r}")
        ex = Exercise(ex.label, ex.section, ex.section_title, ex.task, tuple(p for p in ex.parts if p.name == part))
    if len(ex.parts) == 1 and not isinstance(answer, Mapping):
        answer = {ex.parts[0].name: answer}
    if not isinstance(answer, Mapping):
        names = ", ".join(p.name for p in ex.parts)
        raise TypeError(f"answer to {exercise_id} must be a dict with the keys {names}; got {type(answer).__name__}")
    unknown = set(answer) - {p.name for p in ex.parts}
    if unknown:
        raise ValueError(f"answer to {exercise_id} has unknown parts {sorted(unknown)}; "
                         f"its parts are {[p.name for p in ex.parts]}")
    results = []
    for part in ex.parts:
        checker = _check_number if part.kind == "number" else _check_function
        ok, msg = checker(part, answer.get(part.name))
        results.append((part.name, ok, msg))
    hint = f"revisit section '{ex.section_title}' (label {ex.section}) of chapter {ex.chapter}."
    return Feedback(exercise_id, all(ok for _, ok, _ in results), tuple(results), hint)


def describe(exercise_id: str) -> str:
    """What to compute for ``exercise_id``: the task and, per part, its name, form and tolerance."""
    ex = _exercise(exercise_id)
    lines = [f"{ex.label}: {ex.task}"]
    for p in ex.parts:
        form = "a function" if p.kind == "function" else _tolerance_text(p.rtol)
        lines.append(f"  {p.name}: {p.prompt} ({form})")
    if len(ex.parts) > 1:
        lines.append("  Pass a dict {part name: value} to check().")
    return "\n".join(lines)


def exercise_ids(chapter: str | None = None) -> list[str]:
    """Labels of the checkable exercises, of one chapter (slug) or of all."""
    if chapter is not None and not isinstance(chapter, str):
        raise TypeError(f"chapter must be a chapter slug (str) or None, got {chapter!r}")
    return [label for label, ex in EXERCISES.items() if chapter is None or ex.chapter == chapter]


def _exercise(exercise_id: str) -> Exercise:
    if not isinstance(exercise_id, str):
        raise TypeError(f"exercise_id must be an exercise label (str), got {exercise_id!r}")
    if exercise_id not in EXERCISES:
        raise ValueError(f"exercise_id must be one of the checkable exercises {sorted(EXERCISES)}; "
                         f"got {exercise_id!r}")
    return EXERCISES[exercise_id]


# ---------------------------------------------------------------------------------------------
# The exercises. Every expected value is a function evaluated at check time with llmmath.
# ---------------------------------------------------------------------------------------------

def _flops(*args: Any, **kwargs: Any) -> int:
    from .matmul import matmul_flops

    return matmul_flops(*args, **kwargs)


def _rel_error(m: int, n: int, p: int) -> float:
    exact = _flops(m, n, p, exact=True)
    return (_flops(m, n, p) - exact) / exact


def _gpt3_mlp() -> int:
    from .matmul import batched_matmul_flops
    from .presets import preset

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
        if count != _flops(m, n, p):
            return f"the FLOP count is wrong for shapes {m}x{n} @ {n}x{p}."
    return None


def _naive_saving() -> int:
    from .matmul import naive_matmul

    a, b = np.ones((3, 5)), np.ones((5, 4))
    return _flops(3, 5, 4) - naive_matmul(a, b)[1].flops


def _lora(order: str) -> int:
    from .matmul import chain_flops

    return chain_flops([4096, 16, 4096, 8], order)


_CLRS = [30, 35, 15, 5, 10, 20, 25]


def _clrs_best() -> int:
    from .matmul import optimal_chain_order

    return optimal_chain_order(_CLRS)[0]


def _clrs_left() -> int:
    from .matmul import chain_flops

    return chain_flops(_CLRS, "left")


def _n_parenthesizations(k: int) -> int:
    """Count the parenthesizations of a chain of ``k`` matrices by brute-force recursion."""
    return 1 if k == 1 else sum(_n_parenthesizations(i) * _n_parenthesizations(k - i) for i in range(1, k))


def _llama65_crossover() -> float:
    from .matmul import batched_matmul_flops
    from .presets import preset

    cfg = preset("llama-65b")
    h = cfg.hidden_size
    proj_per_token = 4 * batched_matmul_flops([1], 1, h, h)  # 8 h^2 per token: linear in s
    attn_per_token2 = 2 * batched_matmul_flops([cfg.n_heads], 1, cfg.head_dim, 1)  # 4 h: times s^2
    return proj_per_token / attn_per_token2


def _up_proj_intensity(b: int, beta: float) -> float:
    from .matmul import arithmetic_intensity

    return arithmetic_intensity(b, 8192, 28672, beta)


def _first_compute_bound(gpu: str, precision: str, beta: float) -> int:
    from .hardware import ridge_point

    b, ridge = 1, ridge_point(gpu, precision)
    while _up_proj_intensity(b, beta) < ridge:
        b += 1
    return b


def _llama65_h() -> int:
    from .presets import preset

    return preset("llama-65b").hidden_size


_MATMUL = [
    Exercise(
        "matmul-cost-ex-vecmat", "matmul-cost-exact", "The exact count",
        "A has shape 4096 x 11008; v is in R^11008, x in R^4096 and y in R^11008.",
        (
            Part("matvec_exact", "exact FLOPs of the product A v", lambda: _flops(4096, 11008, 1, exact=True)),
            Part("matvec_rel_error", "relative error (2mnp - exact) / exact of the 2mnp convention for A v",
                 lambda: _rel_error(4096, 11008, 1), rtol=1e-9),
            Part("outer_exact", "exact FLOPs of the outer product x y^T", lambda: _flops(4096, 1, 11008, exact=True)),
            Part("outer_rel_error", "relative error of the convention for x y^T",
                 lambda: _rel_error(4096, 1, 11008), rtol=1e-9),
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
        "h = 4096, r = 16, B = 8.",
        (
            Part("lora_right", "FLOPs of W2 (W1 x)", lambda: _lora("right")),
            Part("lora_left", "FLOPs of (W2 W1) x", lambda: _lora("left")),
            Part("lora_ratio", "lora_left / lora_right", lambda: _lora("left") / _lora("right"), rtol=1e-6),
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
                 "Q, K, V, O projections", _llama65_crossover, rtol=1e-9),
            Part("crossover_s_over_h", "that length divided by the hidden size h",
                 lambda: _llama65_crossover() / _llama65_h(), rtol=1e-9),
        ),
    ),
    Exercise(
        "matmul-cost-ex-roofline", "matmul-cost-roofline", "Arithmetic intensity and the roofline",
        "b tokens times an 8192 x 28672 weight (Llama-3-70B's up-projection).",
        (
            Part("intensity_b1", "arithmetic intensity in FLOPs per byte at b = 1 in BF16 (2 bytes per value)",
                 lambda: _up_proj_intensity(1, 2), rtol=1e-9),
            Part("batch_h100", "smallest b that is compute-bound on an H100 (dense BF16)",
                 lambda: _first_compute_bound("H100", "bf16_tensor", 2)),
            Part("batch_mi300x", "smallest b that is compute-bound on an MI300X (dense BF16)",
                 lambda: _first_compute_bound("MI300X", "bf16_tensor", 2)),
            Part("batch_h100_fp8", "smallest b that is compute-bound on an H100 with FP8 values (1 byte) at "
                 "the FP8 peak", lambda: _first_compute_bound("H100", "fp8_tensor", 1)),
        ),
    ),
]

#: Every checkable exercise by its label (the sphinx-exercise label in the chapter).
EXERCISES: dict[str, Exercise] = {ex.label: ex for ex in _MATMUL}


# --- the other chapters: the exercises with a numeric answer -----------------------------------

def _p(name: str, prompt: str, expected: Callable[..., Any], rtol: float = 0.0) -> Part:
    return Part(name, prompt, expected, rtol=rtol)


def _parts_of(compute: Callable[[str], Any]) -> Callable[..., Part]:
    """Parts whose expected value is ``compute(name)``: one chapter's answers by part name."""
    def part(name: str, prompt: str, rtol: float = 0.0) -> Part:
        return _p(name, prompt, lambda: compute(name), rtol)
    return part


def _chain_two_layers(order: str) -> int:
    from .matmul import chain_flops

    return chain_flops([10, 1000, 100, 1000], order)  # A2^T (r x m), G (m x p), X^T (p x n)


def _bottleneck_ratio() -> float:
    from .mlp import uniform_mlp_flops

    fl = uniform_mlp_flops(1, 1, 64, 10, n_in=4096)
    return fl.backward / fl.forward


def _depth_for_ratio() -> int:
    from .mlp import uniform_mlp_flops

    n = 1
    while (fl := uniform_mlp_flops(n, 1, 100, 100)).backward / fl.forward < 1.9:
        n += 1
    return n


def _gptj() -> int:
    from .config import TransformerConfig
    from .params import param_count

    return param_count(TransformerConfig(
        n_layers=28, hidden_size=4096, n_heads=16, vocab_size=50400, position="rotary", norms_per_layer=1,
        qkv_bias=False, out_bias=False, tie_embeddings=False, lm_head_bias=True, parallel_block=True))


_LLAMA3 = {"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
           "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256}


def _llama3(kv_heads: int) -> int:
    from .config import from_hf_config
    from .params import param_count

    return param_count(from_hf_config({**_LLAMA3, "num_key_value_heads": kv_heads}))


def _preset_params(name: str, **changes: Any) -> int:
    from .params import param_count
    from .presets import preset

    cfg = preset(name)
    return param_count(cfg.replace(**changes) if changes else cfg)


def _emb_depth() -> int:
    from .config import TransformerConfig
    from .params import param_breakdown, param_count

    depth = 1
    while True:
        cfg = TransformerConfig(n_layers=depth, hidden_size=1024, n_heads=16, vocab_size=50257, max_position=2048)
        b = param_breakdown(cfg)
        if (b["token_embedding"] + b["position_embedding"]) / param_count(cfg) < 0.1:
            return depth
        depth += 1


def _moe_experts() -> int:
    from .params import param_count
    from .presets import preset

    base = preset("mistral-7b")
    return next(e for e in range(2, 256) if param_count(base.replace(n_experts=e, experts_per_token=2)) > 100e9)


def _moe_active() -> int:
    from .params import active_param_count
    from .presets import preset

    return active_param_count(preset("mistral-7b").replace(n_experts=_moe_experts(), experts_per_token=2))


def _mla_lite(what: str) -> float:
    from .memory import kv_cache_bytes
    from .params import param_breakdown
    from .presets import preset

    cfg = preset("deepseek-v2-lite")
    if what == "weights":  # the matrices of one attention block, its latent norm aside
        return param_breakdown(cfg)["attention"] // cfg.n_layers
    latent = kv_cache_bytes(cfg, 1, 32768, 2)
    return latent if what == "cache" else kv_cache_bytes(cfg, 1, 32768, 2, mla="expanded") / latent


def _shared_expert(what: str) -> int:
    from .params import active_param_count, param_breakdown
    from .presets import preset

    cfg = preset("qwen1.5-moe-a2.7b")
    b = param_breakdown(cfg)
    wide = cfg.shared_ffn_size // cfg.expert_ffn_size
    return {"block": (b["mlp"] + b["shared_experts"] + b["router"]) // cfg.n_layers,
            "active": active_param_count(cfg), "wide": wide, "k": cfg.experts_per_token + wide}[what]


def _v3_all_sparse(active: bool) -> int:
    from .params import active_param_count, param_count
    from .presets import preset

    cfg = preset("deepseek-v3").replace(mlp_types=())  # no layer pattern: every layer sparse
    return active_param_count(cfg) if active else param_count(cfg)


def _qk_norm_params(name: str) -> int:
    from .params import param_count
    from .presets import preset

    cfg = preset(name)
    return param_count(cfg) - param_count(cfg.replace(qk_norm="none"))



def _llama2_7b_forward(what: str) -> float:
    from .flops import flops_breakdown
    from .params import param_count
    from .presets import preset

    cfg = preset("llama2-7b")
    bd = flops_breakdown(cfg, 1, 4096)
    fwd = sum(bd.values())
    if what == "forward":
        return fwd
    if what == "ratio":
        return fwd / 4096 / (2 * param_count(cfg))
    return (bd["attn_scores"] + bd["attn_values"]) / fwd


def _gqa_saving(relative: bool) -> float:
    from .flops import training_flops_per_token
    from .presets import preset

    cfg = preset("llama2-70b")
    gqa = training_flops_per_token(cfg, seq=4096)
    mha = training_flops_per_token(cfg.replace(n_kv_heads=cfg.n_heads), seq=4096)
    return 1 - gqa / mha if relative else mha - gqa


def _chinchilla_days(gpu: str) -> float:
    from .flops import training_days
    from .hardware import gpu_peak_flops

    return training_days(1.4e12, 70e9, 1024, gpu_peak_flops(gpu, "bf16_tensor"), 0.4)


def _utilisation(kind: str) -> float:
    from .flops import hfu, mfu
    from .hardware import gpu_peak_flops
    from .presets import preset

    func = mfu if kind == "mfu" else hfu
    return func(2e6, preset("llama2-13b"), 512, gpu_peak_flops("H100", "bf16_tensor"), seq=4096)


def _fused(what: str) -> float:
    from .flops import flops_breakdown, training_flops
    from .presets import preset

    if what == "gpt3_extra":
        cfg = preset("gpt3-175b")
        return training_flops(cfg, 1, 2048, attention="fused") / training_flops(cfg, 1, 2048) - 1
    cfg = preset("deepseek-v3")  # the attention core's backward / forward, from whole-model counts
    bd = flops_breakdown(cfg, 1, 64)
    core_forward = bd["attn_scores"] + bd["attn_values"]
    recomputed = training_flops(cfg, 1, 64, attention="fused") - training_flops(cfg, 1, 64)
    return (2 * core_forward + recomputed) / core_forward


def _tile_fraction(seq: int, window: int | None) -> float:
    from .flops import attention_pairs

    return attention_pairs(seq, window=window, skip_masked=True, tile=128) / seq**2


def _deepseek_v3(what: str) -> float:
    from .flops import flops_breakdown, training_flops_per_token
    from .params import active_param_count
    from .presets import preset

    cfg = preset("deepseek-v3")
    if what == "ratio":
        return training_flops_per_token(cfg, seq=4096) / (6 * active_param_count(cfg))
    bd = flops_breakdown(cfg, 1, 4096)
    return (bd["attn_scores"] + bd["attn_values"]) / sum(bd.values())


def _state_bytes(optimizer: str, **kw: Any) -> float:
    from .memory import training_state_bytes

    n = 16 * 10**9  # many parameters, so that a sharded count divides evenly
    return training_state_bytes(n, "mixed", optimizer, **kw)["total"] / n


def _kv_cache_gb(kv_heads: int | None = None, window: bool = False) -> float:
    from .memory import kv_cache_bytes
    from .presets import preset

    cfg = preset("mistral-7b")  # v0.1: a sliding window on every layer
    if not window:
        cfg = cfg.replace(sliding_window=None)  # v0.2 and later: no sliding window
    return kv_cache_bytes(cfg if kv_heads is None else cfg.replace(n_kv_heads=kv_heads), 4, 32768) / 1e9


def _llama_act_gb(fused: bool) -> float:
    from .memory import activation_bytes
    from .presets import preset

    act = activation_bytes(preset("llama2-7b"), 1, 4096, dropout=False, implementation="hf-llama",
                           flash_attention=fused)
    return act["total"] / 1e9


def _recompute_share(flash: bool) -> float:
    from .flops import training_flops
    from .memory import recompute_flops
    from .presets import preset

    cfg = preset("llama2-7b")
    rerun = recompute_flops(cfg, 1, 4096, recompute="none" if flash else "selective", flash_attention=flash)
    return rerun / training_flops(cfg, 1, 4096)


def _gemma3_kv(what: str) -> float:
    from .memory import kv_cache_bytes
    from .presets import preset

    cfg = preset("gemma-3-27b")
    every_global = cfg.replace(attention_types=(), sliding_window=None)
    if what == "same":
        return max(n for n in range(1, 4 * cfg.sliding_window)
                   if kv_cache_bytes(cfg, 1, n) == kv_cache_bytes(every_global, 1, n))
    return kv_cache_bytes(cfg if what == "kv" else every_global, 1, cfg.max_position) / 1e9


def _mla_cache(what: str) -> float:
    from .memory import kv_cache_bytes
    from .presets import preset

    cfg = preset("deepseek-v3")
    if what == "groups":  # GQA heads of DeepSeek's d_h (the keys' width without rotary part)
        return (cfg.kv_lora_rank + cfg.rope_head_dim) / (2 * (cfg.head_dim - cfg.rope_head_dim))
    return kv_cache_bytes(cfg, 1, 1, mla=what)


def _kv_shrink(kv_heads: int | None) -> float:
    from .memory import kv_cache_bytes
    from .presets import preset

    cfg = preset("llama2-70b")
    mha = kv_cache_bytes(cfg.replace(n_kv_heads=cfg.n_heads), 1, 4096)
    return mha / kv_cache_bytes(cfg if kv_heads is None else cfg.replace(n_kv_heads=kv_heads), 1, 4096)


def _adamw_memory(what: str) -> float:
    from .optim import state_bytes_per_param

    bpp = 2 + 2 + 4 + state_bytes_per_param("adamw")
    if what == "bpp":
        return bpp
    if what == "gib":
        return 7 * 10**9 * bpp / 2**30
    return 7 * 10**9 * (state_bytes_per_param("adamw") - state_bytes_per_param("adamw", 1)) / 2**30


def _first_step(beta2: float, at_max: bool) -> float:
    from .optim import bias_correction_factor

    ratios = [bias_correction_factor(0.9, t) / math.sqrt(bias_correction_factor(beta2, t)) for t in range(1, 5001)]
    return max(ratios) if at_max else ratios[0]


def _gpt3_h100_days(recompute: bool) -> float:
    from .flops import training_days
    from .hardware import gpu_peak_flops

    return training_days(300e9, 174.6e9, 1024, gpu_peak_flops("H100"), 0.40, recompute=recompute)


def _gopher_ratio() -> float:
    from .flops import approx_training_flops

    return approx_training_flops(70e9, 1.4e12) / approx_training_flops(280e9, 300e9)


def _kaplan_exponent() -> float:
    from .scaling import KAPLAN_2020

    return 1 / (1 + KAPLAN_2020.joint_alpha_n / KAPLAN_2020.joint_alpha_d)


_FWD_MODE_WIDTHS, _FWD_MODE_BATCH = (784, 128, 128, 10), 32


def _forward_mode(what: str) -> int:
    from .mlp import mlp_backward_flops

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
    from .chain import softmax, softmax_vjp

    return _check_rows_function(func, softmax_vjp, lambda rng, shape: (
        softmax(2 * rng.standard_normal(shape)), rng.standard_normal(shape)))


def _check_layer_norm_dx(func: Callable[..., Any]) -> str | None:
    from .chain import layer_norm, layer_norm_vjp

    def make_args(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
        x, gamma = 1 + 2 * rng.standard_normal(shape), 1 + 0.5 * rng.standard_normal(shape[-1])
        fwd = layer_norm(x, gamma, np.zeros(shape[-1]))
        return x, fwd.mean, fwd.inv_std, gamma, rng.standard_normal(shape)

    return _check_rows_function(func, lambda *args: layer_norm_vjp(*args).dx, make_args)


def _softmax_dense_ratio() -> float:
    n = 4096
    return _flops(n, n, 1) / (4 * n)  # dense J^T u (2mnp convention) against the formula's 4n


def _layer_norm_bytes() -> int:
    from .presets import preset

    h, s = preset("gpt2").hidden_size, 1024
    return 4 * (s * h + 2 * s)  # float32 input plus mean and 1/sigma per token


_OTHERS = [
    Exercise("chain-ex-two-layers", "chain-order", "Why the written order is not the multiplication order",
             "m = 1000, r = 10, n = 1000, p = 100.",
             (_p("bp_flops", "FLOPs of (A2^T G) X^T", lambda: _chain_two_layers("left")),
              _p("other_flops", "FLOPs of A2^T (G X^T)", lambda: _chain_two_layers("right")))),
    Exercise("chain-ex-forward-mode", "chain-modes", "Forward mode and reverse mode",
             "MLP widths (784, 128, 128, 10), no biases, batch B = 32, the input is data.",
             (_p("n_jvps", "JVPs forward mode needs for the gradient with respect to all weights",
                 lambda: _forward_mode("n")),
              _p("jvp_flops", "matmul FLOPs of one JVP", lambda: _forward_mode("jvp")),
              _p("forward_mode_flops", "matmul FLOPs of all of them together", lambda: _forward_mode("total")))),
    Exercise("chain-ex-softmax", "chain-vjps", "The VJPs of softmax and LayerNorm",
             "Rows are the last axis; n = 4096 for the FLOP ratio.",
             (Part("softmax_vjp", "softmax_vjp(y, dy) -> dL/ds for softmax outputs y and upstream dy",
                   _check_softmax_vjp, kind="function"),
              _p("dense_ratio", "FLOPs of the dense J^T u (2 n^2) divided by the formula's 4 n",
                 _softmax_dense_ratio, 1e-9))),
    Exercise("chain-ex-layernorm", "chain-vjps", "The VJPs of softmax and LayerNorm",
             "Rows are the last axis; GPT-2 small, s = 1024 tokens, float32.",
             (Part("layer_norm_dx", "layer_norm_dx(x, mean, inv_std, gamma, dy) -> dL/dx",
                   _check_layer_norm_dx, kind="function"),
              _p("saved_bytes", "bytes its backward pass keeps: the input and the two row statistics",
                 _layer_norm_bytes))),
    Exercise("chain-ex-eps", "chain-numerical", "Numerical check with central differences",
             "float64, u = 2^-53, |L| = |L'''|.",
             (_p("eps_opt", "the step that minimises the total error", lambda: (3 * 2.0**-53) ** (1 / 3), 1e-2),)),
    Exercise("fb-ex-bottleneck", "fb-ratio", "The ratio backward / forward",
             "D = 4096, N = 1 hidden layer of width M = 64, C = 10.",
             (_p("ratio", "backward FLOPs / forward FLOPs", _bottleneck_ratio, 1e-4),)),
    Exercise("fb-ex-depth", "fb-ratio", "The ratio backward / forward", "D = C = M.",
             (_p("n_hidden", "the smallest number of hidden layers with ratio >= 1.9", _depth_for_ratio),)),
    Exercise("params-ex-gptj", "params-exercises", "Exercises", "GPT-J-6B as described.",
             (_p("gptj_params", "its parameter count", _gptj),)),
    Exercise("params-ex-llama3", "params-exercises", "Exercises", "Llama-3-8B as described.",
             (_p("llama3_params", "its parameter count", lambda: _llama3(8)),
              _p("mha_extra", "how many more parameters with 32 key/value heads", lambda: _llama3(32) - _llama3(8)))),
    Exercise("params-ex-bert-large", "params-exercises", "Exercises", "BERT-large as described.",
             (_p("bert_large_params", "its exact parameter count", lambda: _preset_params("bert-large")),)),
    Exercise("params-ex-depth", "params-exercises", "Exercises", "V = 50257, S = 2048, h = 1024 (16 heads).",
             (_p("min_layers", "the smallest L with embeddings < 10% of the parameters", _emb_depth),)),
    Exercise("params-ex-moe", "params-exercises", "Exercises", "Mistral-7B with E experts, k = 2.",
             (_p("n_experts", "the smallest E with more than 100B parameters", _moe_experts),
              _p("active_params", "the active parameter count at that E", _moe_active))),
    Exercise("params-ex-tie", "params-exercises", "Exercises", "Qwen2-0.5B and Qwen2-7B.",
             (_p("qwen05_untied", "parameters of Qwen2-0.5B with an untied head",
                 lambda: _preset_params("qwen2-0.5b", tie_embeddings=False)),
              _p("qwen7_tied", "parameters of Qwen2-7B with a tied head",
                 lambda: _preset_params("qwen2-7b", tie_embeddings=True)))),
    Exercise("params-ex-mla", "params-mla", "Multi-head latent attention",
             "DeepSeek-V2-Lite; a 16-bit cache of one sequence of 32,768 tokens.",
             (_p("attention_weights", "weights of the matrices of one attention block (its norm aside)",
                 lambda: _mla_lite("weights")),
              _p("cache_bytes", "bytes of the latent cache over all layers", lambda: _mla_lite("cache")),
              _p("cache_ratio", "the cache with the heads decompressed / the latent cache",
                 lambda: _mla_lite("ratio"), 1e-6))),
    Exercise("params-ex-shared", "params-moe", "Mixture of experts: shared experts, dense layers, active parameters",
             "Qwen1.5-MoE-A2.7B as described.",
             (_p("moe_block", "parameters of one sparse MLP block (experts, shared expert, router, gate)",
                 lambda: _shared_expert("block")),
              _p("shared_active", "the model's active parameter count", lambda: _shared_expert("active")),
              _p("shared_width", "the shared expert's width in routed experts", lambda: _shared_expert("wide")),
              _p("k_equivalent", "routed experts per token for the same MLP width without it",
                 lambda: _shared_expert("k")))),
    Exercise("params-ex-dense-first", "params-moe",
             "Mixture of experts: shared experts, dense layers, active parameters",
             "DeepSeek-V3 with first_k_dense_replace = 0.",
             (_p("total_all_sparse", "its parameter count", lambda: _v3_all_sparse(False)),
              _p("active_all_sparse", "its active parameter count", lambda: _v3_all_sparse(True)))),
    Exercise("params-ex-qknorm", "params-norms", "Where the norms sit: QK-norm and Gemma 2's four norms",
             "Qwen3-32B and OLMo-2-13B, all layers.",
             (_p("qwen3_qk", "QK-norm parameters of Qwen3-32B", lambda: _qk_norm_params("qwen3-32b")),
              _p("olmo2_qk", "QK-norm parameters of OLMo-2-13B", lambda: _qk_norm_params("olmo-2-13b")))),
    Exercise("flops-ex-llama", "flops-exercises", "Exercises", "Llama 2 7B, one sequence of 4096 tokens.",
             (_p("forward_flops", "forward FLOPs", lambda: _llama2_7b_forward("forward")),
              _p("ratio_2n", "FLOPs per token / (2N)", lambda: _llama2_7b_forward("ratio"), 1e-3),
              _p("attention_share", "share of the two attention products", lambda: _llama2_7b_forward("share"), 1e-3))),
    Exercise("flops-ex-gqa", "flops-exercises", "Exercises", "Llama 2 70B, s = 4096, training FLOPs per token.",
             (_p("saving", "FLOPs per token saved by GQA", lambda: _gqa_saving(False), 1e-3),
              _p("saving_rel", "the saving as a fraction of the MHA cost", lambda: _gqa_saving(True), 1e-3))),
    Exercise("flops-ex-chinchilla", "flops-exercises", "Exercises", "N = 70e9, D = 1.4e12, 1024 GPUs, MFU 40%.",
             (_p("days_a100", "training days on A100s (BF16)", lambda: _chinchilla_days("A100"), 1e-3),
              _p("days_h100", "training days on H100s (BF16)", lambda: _chinchilla_days("H100"), 1e-3))),
    Exercise("flops-ex-mfu", "flops-exercises", "Exercises", "Llama 2 13B, s = 4096, 512 H100, 2e6 tokens/s.",
             (_p("mfu", "model FLOPs utilisation (a fraction, not %)", lambda: _utilisation("mfu"), 1e-3),
              _p("hfu", "hardware FLOPs utilisation (a fraction)", lambda: _utilisation("hfu"), 1e-3))),
    Exercise("flops-ex-fused", "flops-fused", "Fused attention: the backward pass recomputes the scores",
             "GPT-3 175B at s = 2048; DeepSeek-V3's attention core.",
             (_p("gpt3_extra", "training FLOPs with fused attention / with eager attention - 1",
                 lambda: _fused("gpt3_extra"), 1e-3),
              _p("mla_ratio", "backward / forward FLOPs of DeepSeek-V3's fused attention core",
                 lambda: _fused("mla_ratio"), 1e-6))),
    Exercise("flops-ex-tiles", "flops-tiles", "Tiles, not entries", "Causal mask, tiles of B = 128.",
             (_p("fraction_2048", "fraction of the s^2 pairs computed at s = 2048", lambda: _tile_fraction(2048, None),
                 1e-9),
              _p("fraction_window", "the fraction with a window of 1024 keys at s = 8192",
                 lambda: _tile_fraction(8192, 1024), 1e-6))),
    Exercise("flops-ex-deepseek", "flops-moe-mla", "Mixtures of experts and latent attention: DeepSeek-V3",
             "DeepSeek-V3 at s = 4096, eager attention, no recomputation.",
             (_p("ratio_active", "training FLOPs per token / (6 N_active)", lambda: _deepseek_v3("ratio"), 1e-3),
              _p("ds_attention_share", "share of the forward FLOPs in the two attention products",
                 lambda: _deepseek_v3("share"), 1e-3))),
    Exercise("mem-ex-momentum", "mem-exercises", "Exercises", "Mixed precision, SGD with momentum.",
             (_p("bytes_per_param", "model-state bytes per parameter", lambda: _state_bytes("momentum")),
              _p("zero2_bytes", "bytes per parameter per GPU with ZeRO stage 2 over 16 GPUs",
                 lambda: _state_bytes("momentum", zero_stage=2, n_gpus=16), 1e-6))),
    Exercise("mem-ex-mistral", "mem-kv-variants", "Sliding windows, local and global layers, latent attention",
             "Mistral 7B v0.2 (no sliding window), 16-bit cache, 4 sequences of 32768 tokens; then v0.1.",
             (_p("kv_gb", "KV cache in GB (1e9 bytes)", _kv_cache_gb, 1e-3),
              _p("kv_mha_gb", "the same with 32 key/value heads, in GB", lambda: _kv_cache_gb(32), 1e-3),
              _p("kv_v01_gb", "the cache of v0.1 (a 4096-token window on every layer) as transformers "
                 "keeps it, in GB", lambda: _kv_cache_gb(window=True), 1e-3))),
    Exercise("mem-ex-8bit", "mem-exercises", "Exercises", "Mixed precision, Adam with 8-bit moments.",
             (_p("bytes_per_param", "model-state bytes per parameter",
                 lambda: _state_bytes("adam", optimizer_bytes_per_value=1)),)),
    Exercise("mem-ex-mqa", "mem-exercises", "Exercises", "Llama 2 70B.",
             (_p("mqa_factor", "MHA cache / MQA cache", lambda: _kv_shrink(1), 1e-6),
              _p("gqa_factor", "MHA cache / the model's GQA cache", lambda: _kv_shrink(None), 1e-6))),
    Exercise("mem-ex-llama-act", "mem-llama", "A Llama layer, term by term",
             "Llama 2 7B in transformers, BF16, no dropout, b = 1, s = 4096, all layers.",
             (_p("eager_gb", "activations with eager attention, in GB", lambda: _llama_act_gb(False), 1e-3),
              _p("fused_gb", "activations with SDPA's fused kernel, in GB", lambda: _llama_act_gb(True), 1e-3))),
    Exercise("mem-ex-recompute", "mem-recompute-flops", "What recomputation costs in FLOPs",
             "Llama 2 7B, b = 1, s = 4096, LM head included.",
             (_p("selective_share", "FLOPs re-run by selective recomputation / training_flops (a fraction)",
                 lambda: _recompute_share(False), 1e-3),
              _p("flash_share", "FLOPs re-run by FlashAttention / training_flops (a fraction)",
                 lambda: _recompute_share(True), 1e-3))),
    Exercise("mem-ex-gemma", "mem-kv-variants", "Sliding windows, local and global layers, latent attention",
             "Gemma 3 27B, 16-bit cache, one sequence of 131072 tokens.",
             (_p("kv_gb", "KV cache in GB (1e9 bytes)", lambda: _gemma3_kv("kv"), 1e-3),
              _p("kv_global_gb", "the same if every layer were global, in GB", lambda: _gemma3_kv("global"), 1e-3),
              _p("same_up_to", "the largest context (tokens) at which the two caches are equal",
                 lambda: _gemma3_kv("same")))),
    Exercise("mem-ex-mla", "mem-kv-variants", "Sliding windows, local and global layers, latent attention",
             "DeepSeek-V3, 16-bit KV cache.",
             (_p("latent_bytes", "bytes per token of the latent cache", lambda: _mla_cache("latent")),
              _p("expanded_bytes", "bytes per token of the expanded keys and values", lambda: _mla_cache("expanded")),
              _p("gqa_heads", "key/value heads of width 128 with the same cache per layer",
                 lambda: _mla_cache("groups"), 1e-9))),
    Exercise("optim-ex-memory", "optim-memory", "State memory", "7e9 parameters, AdamW, mixed precision.",
             (_p("bytes_per_param", "bytes per parameter", lambda: _adamw_memory("bpp")),
              _p("gib", "total GiB (2^30 bytes)", lambda: _adamw_memory("gib"), 1e-3),
              _p("saved_gib", "GiB saved by 8-bit moments", lambda: _adamw_memory("saved"), 1e-3))),
    Exercise("optim-ex-first-step", "optim-bias", "Bias correction", "beta1 = 0.9, t = 1 ... 5000.",
             (_p("t1_0999", "the step / eta at t = 1 for beta2 = 0.999", lambda: _first_step(0.999, False), 1e-3),
              _p("max_0999", "its maximum over t for beta2 = 0.999", lambda: _first_step(0.999, True), 1e-3),
              _p("max_095", "its maximum over t for beta2 = 0.95", lambda: _first_step(0.95, True), 1e-3))),
    Exercise("scaling-laws-ex-h100", "scaling-laws-time", "From compute to days",
             "174.6e9 parameters, 300e9 tokens, 1024 H100 (BF16), 40% utilisation.",
             (_p("days", "training days with recomputation", lambda: _gpt3_h100_days(True), 1e-3),
              _p("days_no_recompute", "training days without it", lambda: _gpt3_h100_days(False), 1e-3))),
    Exercise("scaling-laws-ex-gopher", "scaling-laws-chinchilla", "Chinchilla: equal scaling",
             "Chinchilla 70e9 x 1.4e12 tokens, Gopher 280e9 x 300e9 tokens.",
             (_p("compute_ratio", "Chinchilla's 6ND / Gopher's 6ND", _gopher_ratio, 1e-3),)),
    Exercise("scaling-laws-ex-kaplan", "scaling-laws-kaplan", "Kaplan et al.: loss as a power law",
             "The joint law's Table 2 constants.",
             (_p("exponent", "the exponent of C in N*", _kaplan_exponent, 1e-3),)),
]

EXERCISES.update({ex.label: ex for ex in _OTHERS})

# --- optimizers and scaling laws: step sizes, schedules, clipping, data and inference ----------

def _hb_steps(kappa: float, method: str) -> float:
    from .optim import gd_optimal, heavy_ball_optimal

    rate = gd_optimal(1.0, kappa)[1] if method == "gd" else heavy_ball_optimal(1.0, kappa)[2]
    return math.log(1e6) / -math.log(rate)


def _hb_max_lr() -> float:
    from .optim import max_stable_lr

    return max_stable_lr(50.0, 0.9)


def _llama_schedule(kind: str, step: int) -> float:
    from .optim import cosine_schedule, wsd_schedule

    peak, total, warmup = 3e-4, 250_000, 2000
    if kind == "wsd":
        return wsd_schedule(step, peak, total, total // 10, warmup, 0.1 * peak)
    return cosine_schedule(step, peak, total, warmup, 0.1 * peak)


def _clip_example(what: str) -> float:
    from .optim import clip_grad_norm

    clipped, norm = clip_grad_norm([np.array([3.0, 4.0]), np.array([12.0])], 1.0)
    return norm if what == "norm" else float(clipped[0][0])


def _beta2(what: str) -> float:
    from .optim import adam_update_bound, ema_horizon

    return {"horizon_095": lambda: ema_horizon(0.95), "bound_095": lambda: adam_update_bound(0.9, 0.95),
            "bound_0999": lambda: adam_update_bound(0.9, 0.999), "growth_0999": lambda: 0.999 / 0.9}[what]()


def _epochs(what: str) -> float:
    from .scaling import MUENNIGHOFF_2023, effective_data

    if what == "effective":
        return effective_data(4e11, 1e11)
    return 1 + MUENNIGHOFF_2023.r_d_star * math.log(2)  # R_D with exp(-R_D / R_D*) = 1/2, plus 1


def _data_optimum(what: str) -> float:
    from .scaling import data_constrained_optimum

    plan = data_constrained_optimum(1e22, 5e10)
    return plan.n_params if what == "n" else plan.n_tokens / 5e10


def _sardana_30b(what: str) -> float:
    from .scaling import SARDANA_2024, chinchilla_loss, inference_optimal, optimal_tokens_for_params

    n0, d_inf = 30e9, 1e13
    d0 = optimal_tokens_for_params(n0, SARDANA_2024)
    opt = inference_optimal(chinchilla_loss(n0, d0, SARDANA_2024), d_inf, SARDANA_2024)
    baseline = 6 * n0 * d0 + 2 * n0 * d_inf
    return opt.n_params if what == "n" else 1 - opt.total_flops / baseline


def _frontier(what: str) -> float:
    from .scaling import BESIROGLU_2024, compute_for_loss

    law = BESIROGLU_2024
    return law.alpha * law.beta / (law.alpha + law.beta) if what == "gamma" else compute_for_loss(2.0, law)


def _llama2_breakeven() -> float:
    from .params import param_count
    from .presets import preset
    from .scaling import BESIROGLU_2024, implied_inference_tokens

    return implied_inference_tokens(param_count(preset("llama2-7b")), 2e12, BESIROGLU_2024)


_OPTIM_SCALING = [
    Exercise("optim-ex-hb-stability", "optim-quadratic", "How large a step, how much momentum",
             "The quadratic (x1^2 + 50 x2^2) / 2, momentum mu = 0.9.",
             (_p("max_lr", "the largest stable learning rate of the heavy ball", _hb_max_lr, 1e-9),)),
    Exercise("optim-ex-hb-steps", "optim-quadratic", "How large a step, how much momentum",
             "Best parameters for each method; steps = ln(1e6) / -ln(rate), not rounded.",
             (_p("steps_gd_50", "gradient descent, kappa = 50", lambda: _hb_steps(50.0, "gd"), 1e-6),
              _p("steps_hb_50", "heavy ball, kappa = 50", lambda: _hb_steps(50.0, "hb"), 1e-6),
              _p("steps_gd_1e4", "gradient descent, kappa = 1e4", lambda: _hb_steps(1e4, "gd"), 1e-6),
              _p("steps_hb_1e4", "heavy ball, kappa = 1e4", lambda: _hb_steps(1e4, "hb"), 1e-6))),
    Exercise("optim-ex-schedule", "optim-schedules", "Learning-rate schedules and gradient clipping",
             "Peak 3e-4, 2000 warmup steps, T = 250000, final rate 3e-5; WSD decays over the last 25000.",
             (_p("lr_cosine_mid", "cosine schedule at step 125000", lambda: _llama_schedule("cosine", 125_000), 1e-6),
              _p("lr_wsd_mid", "WSD at step 125000", lambda: _llama_schedule("wsd", 125_000), 1e-6),
              _p("lr_cosine_last", "cosine schedule at step 249999",
                 lambda: _llama_schedule("cosine", 249_999), 1e-6))),
    Exercise("optim-ex-clip", "optim-schedules", "Learning-rate schedules and gradient clipping",
             "Gradients (3, 4) and (12), max_norm = 1, PyTorch's eps = 1e-6.",
             (_p("norm", "the global norm before clipping", lambda: _clip_example("norm"), 1e-9),
              _p("first", "the first coordinate after clipping", lambda: _clip_example("first"), 1e-9))),
    Exercise("optim-ex-beta2", "optim-beta2", "Why large models use beta2 = 0.95", "beta1 = 0.9.",
             (_p("horizon_095", "averaging horizon for beta2 = 0.95", lambda: _beta2("horizon_095"), 1e-9),
              _p("bound_095", "largest step / eta for beta2 = 0.95", lambda: _beta2("bound_095"), 1e-6),
              _p("bound_0999", "largest step / eta for beta2 = 0.999", lambda: _beta2("bound_0999"), 1e-6),
              _p("growth_0999", "growth factor per step of the extremal gradient for beta2 = 0.999",
                 lambda: _beta2("growth_0999"), 1e-6))),
    Exercise("scaling-laws-ex-epochs", "scaling-laws-data", "Running out of data: repeated epochs",
             "Muennighoff et al.'s constants; 1e11 unique tokens.",
             (_p("effective_tokens", "D' for 4e11 training tokens (four epochs)", lambda: _epochs("effective"), 1e-6),
              _p("epochs_half", "epochs after which the next repetition is worth half a fresh token",
                 lambda: _epochs("half"), 1e-6))),
    Exercise("scaling-laws-ex-data-optimum", "scaling-laws-data", "Running out of data: repeated epochs",
             "Muennighoff et al.'s law, C = 1e22 FLOPs, 5e10 unique tokens.",
             (_p("dc_n_params", "the loss-minimising model size", lambda: _data_optimum("n"), 1e-3),
              _p("dc_epochs", "its number of epochs D / U", lambda: _data_optimum("epochs"), 1e-3))),
    Exercise("scaling-laws-ex-inference", "scaling-laws-inference", "Paying for inference",
             "Sardana et al.'s constants; the loss of a Chinchilla-optimal 30e9-parameter model; 1e13 "
             "inference tokens.",
             (_p("inf_n_params", "the parameters of the lifetime-optimal model", lambda: _sardana_30b("n"), 1e-4),
              _p("inf_saving", "its saving in total FLOPs, as a fraction of the 30B model's",
                 lambda: _sardana_30b("saving"), 1e-4))),
    Exercise("scaling-laws-ex-frontier", "scaling-laws-frontier", "The loss frontier",
             "Besiroglu et al.'s constants.",
             (_p("gamma", "the exponent gamma of L* - E = K (C/6)^-gamma", lambda: _frontier("gamma"), 1e-9),
              _p("compute", "the FLOPs whose optimum reaches a loss of 2.0", lambda: _frontier("compute"), 1e-6))),
    Exercise("scaling-laws-ex-breakeven", "scaling-laws-inference", "Paying for inference",
             "Llama 2 7B (the preset's parameter count), 2e12 training tokens, Besiroglu et al.'s constants.",
             (_p("inference_tokens", "the inference tokens for which its training is lifetime-optimal",
                 _llama2_breakeven, 1e-6),)),
]

EXERCISES.update({ex.label: ex for ex in _OPTIM_SCALING})


# --- serving: the KV cache, decode bounds, batching, memory planning, tensor parallelism --------

def _serving(what: str) -> float:
    from . import inference as inf
    from .hardware import GPUS, gpu_peak_flops
    from .params import param_count
    from .presets import preset

    l8 = preset("llama-3-8b")
    if what.startswith("kv_"):
        mha, gqa = preset("llama-65b"), preset("llama2-70b")
        return {"kv_mha_token": lambda: inf.kv_bytes(mha, 1, 1), "kv_gqa_token": lambda: inf.kv_bytes(gqa, 1, 1),
                "kv_mha_gb": lambda: inf.kv_bytes(mha, 1, 4096) / 1e9,
                "kv_gqa_gb": lambda: inf.kv_bytes(gqa, 1, 4096) / 1e9,
                "kv_ratio": lambda: inf.kv_bytes(mha, 1, 1) / inf.kv_bytes(gqa, 1, 1)}[what]()
    if what.startswith("dec_"):
        step = inf.decode_step_seconds(l8, 1, 2048, "A100")
        approx = 2 * param_count(l8) / GPUS["A100"].memory_bandwidth
        return {"dec_step_ms": step * 1e3, "dec_tokens_per_s": 1 / step, "dec_approx_error": approx / step - 1}[what]
    if what.startswith("crit_"):
        gpu, dtype = {"crit_h100": ("H100", "bf16"), "crit_h200": ("H200", "bf16"),
                      "crit_h100_int8": ("H100", "int8")}[what]
        return inf.critical_batch(l8, 1, gpu, dtype=dtype)
    if what.startswith("cap_"):
        ctx, kv = {"cap_bf16": (8192, "bf16"), "cap_fp8": (8192, "fp8"), "cap_fp8_32k": (32768, "fp8")}[what]
        return inf.max_decode_batch(preset("llama-3-70b"), ctx, "H100", reserve_bytes=8 * 10**9, tp=8, kv_dtype=kv)
    if what.startswith("moe_"):
        mx = preset("mixtral-8x7b")
        return {"moe_expected_4": lambda: inf.experts_touched(mx, 4, "expected"),
                "moe_gb_b1": lambda: inf.forward_weight_bytes(mx, 1, 1) / 1e9,
                "moe_gb_b4": lambda: inf.forward_weight_bytes(mx, 4, 1) / 1e9}[what]()
    if what == "mla_ratio":
        ds = preset("deepseek-v3")
        return inf.decode_flops(ds, 1, 32768, mla="transformers") / inf.decode_flops(ds, 1, 32768)
    if what.startswith("tp_best_"):
        algo = "ring" if what == "tp_best_ring" else "one-shot"
        times = {t: inf.tp_decode_step_seconds(l8, 1, 4096, "H100", t, allreduce=algo) for t in (1, 2, 4, 8)}
        return min(times, key=times.get)
    if what == "prefill_s_star":
        peak, bw, s = gpu_peak_flops("H100"), GPUS["H100"].memory_bandwidth, 1
        while inf.prefill_flops(l8, 1, s) / peak < inf.prefill_bytes(l8, 1, s) / bw:
            s += 1
        return s
    bd = inf.decode_flops_breakdown(l8, 1, 4096)  # gqa_flops_per_byte
    return (bd["attn_scores"] + bd["attn_values"]) / inf.kv_bytes(l8, 1, 4097)


_s = _parts_of(_serving)


_SERVING = [
    Exercise("serving-ex-kv", "serving-kv", "The KV cache by family",
             "Llama-65B (llmmath.preset('llama-65b')) and Llama-2-70B ('llama2-70b'), BF16 cache.",
             (_s("kv_mha_token", "Llama-65B's KV cache per token in bytes"),
              _s("kv_gqa_token", "Llama-2-70B's KV cache per token in bytes"),
              _s("kv_mha_gb", "Llama-65B's cache of one 4,096-token sequence in GB (10^9 bytes)", 1e-9),
              _s("kv_gqa_gb", "Llama-2-70B's cache of one 4,096-token sequence in GB", 1e-9),
              _s("kv_ratio", "the first per-token cache over the second", 1e-9))),
    Exercise("serving-ex-decode", "serving-latency", "Latency bounds",
             "Llama-3-8B on one A100 (80 GB), batch 1, 2,048 tokens of context, BF16.",
             (_s("dec_step_ms", "bound on the time per output token in milliseconds", 1e-6),
              _s("dec_tokens_per_s", "bound on tokens per second", 1e-6),
              _s("dec_approx_error", "relative error of 2P / bandwidth against that bound, approx / bound - 1",
                 1e-6))),
    Exercise("serving-ex-critical", "serving-batching", "Batch size, throughput and the critical batch",
             "Llama-3-8B, a one-token context, dense BF16 arithmetic.",
             (_s("crit_h100", "critical batch on an H100 with BF16 weights"),
              _s("crit_h200", "critical batch on an H200 with BF16 weights"),
              _s("crit_h100_int8", "critical batch on an H100 with INT8 weights"))),
    Exercise("serving-ex-capacity", "serving-memory", "Memory planning",
             "Llama-3-70B on 8 H100s (tp = 8), a reserve of 8 * 10**9 bytes per GPU, BF16 weights.",
             (_s("cap_bf16", "sequences of 8,192 tokens that fit with a BF16 cache"),
              _s("cap_fp8", "the same with an FP8 cache"),
              _s("cap_fp8_32k", "sequences of 32,768 tokens with an FP8 cache"))),
    Exercise("serving-ex-experts", "serving-examples", "Worked examples by size class",
             "Mixtral-8x7B, BF16 weights, one decode step.",
             (_s("moe_expected_4", "expected distinct experts per layer for 4 tokens, uniform routing", 1e-9),
              _s("moe_gb_b1", "GB of weights read at batch 1", 1e-9),
              _s("moe_gb_b4", "GB of weights read at batch 4, worst case (experts='max')", 1e-9))),
    Exercise("serving-ex-mla", "serving-kv", "The KV cache by family",
             "DeepSeek-V3, one sequence, a context of 32,768 tokens.",
             (_s("mla_ratio", "decode FLOPs re-expanded (mla='transformers') over absorbed", 1e-6),)),
    Exercise("serving-ex-tp", "serving-tp", "Tensor parallelism for latency",
             "Llama-3-8B, batch 1, context 4,096, H100s, tp in 1, 2, 4, 8.",
             (_s("tp_best_ring", "the tp with the lowest bound per token, ring all-reduce"),
              _s("tp_best_one_shot", "the tp with the lowest bound per token, one-shot all-reduce"))),
    Exercise("serving-ex-prefill", "serving-latency", "Latency bounds",
             "Llama-3-8B, one sequence, an H100, dense BF16, logits at the last position.",
             (_s("prefill_s_star", "the smallest prompt length whose prefill is compute-bound"),)),
    Exercise("serving-ex-gqa", "serving-batching", "Batch size, throughput and the critical batch",
             "Llama-3-8B, one sequence at a context of 4,096 tokens, a BF16 cache.",
             (_s("gqa_flops_per_byte", "attention FLOPs of a decode step per byte of cache read "
                 "(the n + 1 = 4,097 keys)", 1e-9),)),
]

EXERCISES.update({ex.label: ex for ex in _SERVING})


# --- parallelism: collectives, data/tensor/pipeline/context/expert parallelism -----------------

def _parallelism(name: str) -> float:
    from .memory import training_state_bytes
    from .parallel import (
        Layout,
        collective_bytes,
        collective_seconds,
        dp_hiding_tokens,
        fsdp_shard_numel,
        pipeline_bubble_fraction,
        stage_activation_bytes,
        step_collectives,
        tp_comm_compute_ratio,
    )
    from .params import param_count
    from .presets import preset

    if name in ("ar_bytes", "ar_seconds"):
        grads = 2 * param_count(preset("llama2-7b"))
        if name == "ar_bytes":
            return collective_bytes("all_reduce", 64, grads)
        return collective_seconds("all_reduce", 64, grads, "H100")
    if name.startswith("hide_tokens"):
        return dp_hiding_tokens(7e9, "B200", zero_stage=int(name[-1]))
    if name.startswith("tp_ratio"):
        link = "scale_up" if name.endswith("nvlink") else "scale_out"
        return tp_comm_compute_ratio(preset("llama-3-70b").hidden_size, 8, "H100", link=link)
    if name == "m_1f1b":
        return next(m for m in range(16, 10**4) if pipeline_bubble_fraction(16, m) <= 0.05)
    if name == "m_interleaved":
        return next(m for m in range(16, 10**4, 16) if pipeline_bubble_fraction(16, m, "interleaved", 4) <= 0.05)
    if name.startswith("act_"):
        lay = Layout(tp=8, pp=16, dp=8, microbatches=64, sequence_parallel=True, recompute="selective")
        if name == "act_interleaved_gb":
            lay = lay.replace(schedule="interleaved", virtual_stages=2)
        return stage_activation_bytes(preset("gpt3-175b"), lay, 2048) / 1e9
    if name.startswith("state_zero"):
        return training_state_bytes(preset("llama2-70b"), zero_stage=int(name[-4]), n_gpus=64)["total"] / 1e9
    if name.startswith("cp_"):
        cfg = preset("llama-3.1-405b").replace(n_layers=1)
        c = [c for c in step_collectives(cfg, Layout(tp=8, cp=16, sequence_parallel=True), 131072)
             if c.parallelism == "cp" and c.phase == "forward"][0]
        return c.message if name == "cp_message_bytes" else collective_bytes("all_gather", 16, c.message)
    if name.startswith("a2a_"):
        c = [c for c in step_collectives(preset("deepseek-v3"), Layout(dp=64, ep=64), 4096)
             if c.parallelism == "ep"][0]
        return c.message if name == "a2a_message_bytes" else collective_bytes("all_to_all", 64, c.message)
    gpt2 = preset("gpt2")
    shape = (gpt2.vocab_size, gpt2.hidden_size)
    return fsdp_shard_numel(shape, 8) if name == "fsdp_padded" else fsdp_shard_numel(shape, 8, 7)


_par = _parts_of(_parallelism)


_PARALLELISM = [
    Exercise("parallelism-ex-ring", "parallelism-collectives", "Collectives: what each GPU sends",
             "Llama 2 7B's BF16 gradients (2 bytes x the preset's parameter count), 64 H100s in 8 nodes.",
             (_par("ar_bytes", "bytes each GPU sends in a ring all-reduce", 1e-9),
              _par("ar_seconds", "its time under the latency-bandwidth model (collective_seconds)", 1e-6))),
    Exercise("parallelism-ex-hide", "parallelism-dp-hide", "When data-parallel communication hides",
             "B200, one 400 Gb/s NIC per GPU, BF16 gradients and parameters, the large-n limit.",
             (_par("hide_tokens_zero1", "tokens per replica and step to hide ZeRO-1's communication", 1e-6),
              _par("hide_tokens_zero3", "the same for ZeRO-3", 1e-6))),
    Exercise("parallelism-ex-tp", "parallelism-tp", "Tensor parallelism",
             "Llama 3 70B's hidden size, t = 8, BF16, H100 peak and llmmath.hardware's links.",
             (_par("tp_ratio_nvlink", "communication / compute time over NVLink", 1e-6),
              _par("tp_ratio_ib", "the same over InfiniBand", 1e-6))),
    Exercise("parallelism-ex-bubble", "parallelism-pp", "Pipeline parallelism",
             "16 stages, bubble at most 5% of the step.",
             (_par("m_1f1b", "the fewest micro-batches with 1F1B"),
              _par("m_interleaved", "the fewest (a multiple of 16) with interleaving, v = 4"))),
    Exercise("parallelism-ex-inflight", "parallelism-pp", "Pipeline parallelism",
             "GPT-3 175B, t = 8, p = 16, d = 8, 64 micro-batches of one 2048-token sequence, sequence "
             "parallelism, selective recomputation, Korthikanti's bytes (2-byte values, 1-byte masks, dropout).",
             (_par("act_1f1b_gb", "activation GB (10^9 bytes) on a first-stage GPU, 1F1B", 1e-6),
              _par("act_interleaved_gb", "the same with the interleaved schedule, v = 2", 1e-6))),
    Exercise("parallelism-ex-zero", "parallelism-dp", "Data parallelism, ZeRO and FSDP",
             "Llama 2 70B (the preset), Adam in mixed precision, 64 data-parallel GPUs.",
             (_par("state_zero1_gb", "model state per GPU in GB with ZeRO-1", 1e-6),
              _par("state_zero2_gb", "with ZeRO-2", 1e-6),
              _par("state_zero3_gb", "with ZeRO-3", 1e-6))),
    Exercise("parallelism-ex-cp", "parallelism-cp", "Context parallelism",
             "Llama 3 405B, one sequence of 131,072 tokens, t = 8, c = 16, BF16, one layer's forward.",
             (_par("cp_message_bytes", "the all-gather's message: the keys and values, bytes"),
              _par("cp_sent_bytes", "bytes each GPU sends in it", 1e-9))),
    Exercise("parallelism-ex-ep", "parallelism-ep", "Expert parallelism",
             "DeepSeek-V3, e = 64, one 4096-token sequence per GPU, BF16, one MoE layer, balanced routing.",
             (_par("a2a_message_bytes", "one dispatch all-to-all's message per GPU, bytes"),
              _par("a2a_sent_bytes", "bytes each GPU sends in it", 1e-9))),
    Exercise("parallelism-ex-fsdp", "parallelism-reality-fsdp", "Checked against PyTorch's distributed code",
             "GPT-2's token embedding (vocab_size x hidden_size of the preset), FSDP2 over 8 GPUs.",
             (_par("fsdp_padded", "elements every GPU allocates for it"),
              _par("fsdp_last", "elements GPU 7 holds"))),
]

EXERCISES.update({ex.label: ex for ex in _PARALLELISM})


# --- capstone: planning published runs end to end ---------------------------------------------

def _capstone(name: str) -> float:
    from .flops import megatron_training_flops, mfu, training_flops_per_token
    from .hardware import gpu_peak_flops
    from .parallel import tp_comm_compute_ratio
    from .params import active_param_count, param_count
    from .planning import layout_for, serving_run, training_run
    from .presets import preset
    from .steptime import model_flops

    if name.startswith("l13_"):  # Llama 2 13B: 2T tokens in 368,640 A100 GPU-hours (Table 2)
        cfg, per_gpu = preset("llama2-13b"), 2e12 / (368_640 * 3600)
        if name == "l13_mfu_exact":
            return mfu(per_gpu, cfg, 1, gpu_peak_flops("A100"), seq=4096)
        return per_gpu * 6 * param_count(cfg) / gpu_peak_flops("A100")
    if name.startswith("g3_"):  # GPT-3 on 1024 H100s at the MFU of Narayanan et al.'s 140 TFLOP/s
        g3, s, b = preset("gpt3-175b"), 2048, 1536
        lay = layout_for(g3, 1024, s, b * s, tp=8, pp=16, recompute="full", zero_stage=1)
        # the MFU of 140 TFLOP/s under training_run's count (model_flops: causal pairs)
        u = model_flops(g3, b, s) / megatron_training_flops(g3, b, s) * 140e12 / gpu_peak_flops("A100")
        run = training_run(g3, 300e9, "H100", lay, s, mfu=u, price_per_gpu_hour=2.0)
        return run["days"] if name == "g3_days" else run["cost"]
    if name.startswith("mem_pp"):  # Llama 3 70B on 64 H100s, t = 8
        l70 = preset("llama-3-70b")
        lay = layout_for(l70, 64, 8192, 2**22, tp=8, pp=int(name[6]), zero_stage=1, recompute="none")
        return training_run(l70, 15e12, "H100", lay, 8192, mfu=0.4, dropout=False)["memory"]["total"] / 1e9
    if name.startswith("ds_"):  # DeepSeek-V3: 180K H800 GPU-hours per trillion tokens
        ds, per_gpu = preset("deepseek-v3"), 1e12 / (180e3 * 3600)
        n = param_count(ds) if name == "ds_mfu_total" else active_param_count(ds)
        return per_gpu * 6 * n / gpu_peak_flops("H800")
    if name.startswith("serve_"):  # Llama 3 70B on 4 H100s, 16K contexts, FP8 cache, 4 GB reserve
        run = serving_run(preset("llama-3-70b"), "H100", 4, 2**14, kv_dtype="fp8", reserve_bytes=4 * 10**9)
        return run["max_batch"] if name == "serve_max_batch" else run["tokens_per_second"]
    if name == "budget_tokens":  # $1M at $2 per H100-hour, MFU 40%, Llama 3 8B at 8192 tokens
        seconds = 1e6 / 2.0 * 3600
        return seconds * gpu_peak_flops("H100") * 0.4 / training_flops_per_token(preset("llama-3-8b"), seq=8192)
    return tp_comm_compute_ratio(preset("deepseek-v3").hidden_size, 8, name.removeprefix("tp_ratio_").upper())


_cap = _parts_of(_capstone)


_CAPSTONE = [
    Exercise("capstone-ex-llama2", "capstone-llama2", "Llama 2: what the GPU-hours imply",
             "Llama 2 13B (the preset), 2e12 tokens in 368,640 GPU-hours of A100-80GB (dense BF16 peak).",
             (_cap("l13_mfu_exact", "the MFU with llmmath's training FLOPs per token at 4,096 tokens", 1e-6),
              _cap("l13_mfu_6n", "the MFU with 6N FLOPs per token", 1e-6))),
    Exercise("capstone-ex-gpt3-h100", "capstone-gpt3", "GPT-3 175B: the seeds' 34 days",
             "GPT-3 175B, 300e9 tokens, 1024 H100s, t = 8, p = 16, ZeRO-1, full recomputation, 1536 "
             "sequences of 2048 tokens per step, the MFU that Narayanan et al.'s 140 TFLOP/s on A100s "
             "implies (training_run with mfu=..., price 2 per GPU-hour).",
             (_cap("g3_days", "training days", 1e-6),
              _cap("g3_cost", "the cost at 2 per GPU-hour", 1e-6))),
    Exercise("capstone-ex-70b-memory", "capstone-recipe", "A plan in five numbers",
             "Llama 3 70B (the preset) on 64 H100s, 8192-token sequences, 2**22 tokens per step "
             "(layout_for), t = 8, ZeRO-1, no recomputation, no dropout, fused attention.",
             (_cap("mem_pp1_gb", "GB (10^9 bytes) on the busiest GPU with p = 1", 1e-6),
              _cap("mem_pp4_gb", "the same with p = 4", 1e-6))),
    Exercise("capstone-ex-deepseek", "capstone-deepseek", "DeepSeek-V3 on 2048 H800s",
             "DeepSeek-V3 (the preset), 180e3 GPU-hours per 1e12 tokens, the H800's dense BF16 peak.",
             (_cap("ds_mfu_total", "the 'MFU' with 6 N_total FLOPs per token", 1e-6),
              _cap("ds_mfu_active", "the MFU with 6 N_active FLOPs per token", 1e-6))),
    Exercise("capstone-ex-serve", "capstone-serving", "Serving Llama 3.1 405B",
             "Llama 3 70B (the preset) on 4 H100s (tp = 4), sequences of 2**14 tokens, BF16 weights, FP8 "
             "cache, a reserve of 4 * 10**9 bytes per GPU (serving_run).",
             (_cap("serve_max_batch", "the largest batch"),
              _cap("serve_tokens_per_second", "the bound on output tokens per second at that batch", 1e-6))),
    Exercise("capstone-ex-budget", "capstone-recipe", "A plan in five numbers",
             "A budget of 1e6 at 2 per H100-hour, MFU 0.4 (dense BF16 peak), Llama 3 8B (the preset) "
             "at 8192 tokens per sequence.",
             (_cap("budget_tokens", "the training tokens it buys", 1e-6),)),
    Exercise("capstone-ex-h800", "capstone-deepseek", "DeepSeek-V3 on 2048 H800s",
             "DeepSeek-V3's hidden size, t = 8, BF16, llmmath.hardware's NVLink of each GPU "
             "(tp_comm_compute_ratio).",
             (_cap("tp_ratio_h800", "communication / compute time of tensor parallelism on H800s", 1e-6),
              _cap("tp_ratio_h100", "the same on H100s", 1e-6))),
]

EXERCISES.update({ex.label: ex for ex in _CAPSTONE})
