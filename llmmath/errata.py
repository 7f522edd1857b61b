"""Every numeric claim and formula of the seeds, with the value llmmath recomputes, judged by one rule.

The claims are data, ``llmmath/data/errata.json``: per claim the seed and its section, the
statement, how the seed gives the value, how the book recomputes it, the cause of any difference,
the section of the book that derives the correct value and the verdict that
``tests/test_errata.py`` pins. Values are short arithmetic expressions over the shapes of
:data:`SHAPES` (GPT-3 175B, one sequence of 2048 tokens), the models ``gpt2`` and ``gpt3``, llmmath's
functions and the named functions below (:data:`FUNCTIONS`); :func:`evaluate` evaluates one. This
module reads the file into :class:`Claim` objects and judges each by :func:`verdict`, a rule that
depends only on how the seed *presents* the value:

- presented as **exact** (a formula written with "=", an integer printed in full): the claim is
  ``"correct"`` when it equals the recomputed value (relative difference at most
  :data:`EXACT_RTOL`, floating-point rounding only), otherwise ``"wrong"``;
- presented as **approximate** ("about", "≈", "约", a rounded figure such as "1.92B", the
  coefficient of an approximate formula such as the 12 of "≈ 12Lh²"; the data's ``printed``):
  the claim is ``"correct as an approximation"`` when the recomputed value, rounded to the
  significant digits the seed prints, gives the seed's figure, i.e. ``|stated - correct| <= half
  a unit of the last significant digit printed``; otherwise ``"wrong"``.

Nothing here types a verdict: ``tests/test_errata.py`` compares each computed verdict with the one
the data pins. Used by the appendix :doc:`/chapters/errata`.
"""

from __future__ import annotations

import ast
import json
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from importlib import resources
from typing import Any

from .config import TransformerConfig, from_hf_config
from .flops import flops_breakdown, forward_flops, layer_forward_flops, training_flops
from .matmul import matmul_flops
from .memory import activation_bytes, kv_cache_bytes, training_state_bytes, weight_bytes
from .mlp import mlp_backward_flops, mlp_forward_flops, uniform_mlp_widths
from .optim import AdamConfig, MomentumConfig, adam_step, init_state, momentum_step, state_bytes_per_param
from .params import layer_param_count, param_breakdown, param_count
from .presets import preset

__all__ = ["Claim", "CLAIMS", "VERDICTS", "verdict", "relative_error", "Statement", "DISAGREEMENTS",
           "DISAGREEMENT_REFERENCE"]

#: The three verdicts, from best to worst.
VERDICTS = ("correct", "correct as an approximation", "wrong")

#: Largest relative difference between a value presented as exact and the recomputed one that
#: still counts as equal: floating-point rounding only.
EXACT_RTOL = 1e-12


def _half_unit(printed: str) -> float:
    """Half a unit of the last significant digit of a figure as printed.

    ``"1.92e9"`` (the seed prints 1.92B) -> ``0.005e9``; ``"130"`` -> 5 (trailing zeros of an
    integer are not significant); ``"34"`` -> 0.5; ``"1.50"`` -> 0.005 (zeros after the decimal
    point are).
    """
    try:
        d = Decimal(printed)
    except (ArithmeticError, TypeError, ValueError):
        raise ValueError(f"printed must be a number as printed, e.g. '1.92e9', got {printed!r}") from None
    if not d.is_finite() or d == 0:
        raise ValueError(f"printed must be a non-zero number as printed, got {printed!r}")
    mantissa = printed.lower().split("e")[0]
    exponent = d.as_tuple().exponent if "." in mantissa else d.normalize().as_tuple().exponent
    return float(Decimal(5).scaleb(int(exponent) - 1))


@dataclass(frozen=True)
class Claim:
    """One statement of a seed.

    ``stated`` is how the seed gives the value: a function evaluating it exactly as the seed
    writes it when the seed presents it as exact, or a string, the figure as the seed prints it
    (``"1.92e9"`` for "1.92B", ``"12"`` for the coefficient of "≈ 12Lh²"), when the seed presents
    it as approximate. ``correct`` recomputes the same quantity with llmmath. ``cause`` explains
    any difference (or notes a convention), ``ref`` is the label of the section of the book that
    derives the correct value, ``key`` names the claim uniquely within its seed, and ``pinned`` is
    the verdict the data file pins (checked by the tests).
    """

    seed: str
    key: str
    section: str
    claim: str
    stated: Callable[[], float] | str
    correct: Callable[[], float]
    cause: str
    ref: str
    unit: str = ""
    pinned: str = ""

    @property
    def id(self) -> str:
        """``"<seed>-<key>"``, e.g. ``"000-total-gpt2"``."""
        return f"{self.seed}-{self.key}"

    @property
    def approximate(self) -> bool:
        """Whether the seed presents the value as approximate (``stated`` is a printed figure)."""
        return isinstance(self.stated, str)

    def value(self) -> float:
        """The seed's value: the printed figure, or its formula evaluated as written."""
        return float(self.stated) if isinstance(self.stated, str) else float(self.stated())

    @property
    def half_unit(self) -> float:
        """Half a unit of the last digit the seed prints (0 for a value presented as exact)."""
        return _half_unit(self.stated) if isinstance(self.stated, str) else 0.0


def relative_error(claim: Claim) -> float:
    """``(stated - correct) / correct`` (signed: positive when the seed overstates)."""
    stated, correct = claim.value(), float(claim.correct())
    if correct == 0:
        return 0.0 if stated == 0 else math.inf
    return (stated - correct) / correct


def verdict(claim: Claim) -> str:
    """The rule of the appendix. A value presented as exact is ``"correct"`` when
    ``|stated - correct| <= EXACT_RTOL |correct|``; a value presented as approximate is
    ``"correct as an approximation"`` when ``|stated - correct|`` is at most half a unit of the last
    significant digit it prints (:attr:`Claim.half_unit`), even when it happens to be exact;
    otherwise the claim is ``"wrong"``."""
    stated, correct = claim.value(), float(claim.correct())
    diff = abs(stated - correct)
    if claim.approximate:
        return VERDICTS[1] if diff <= claim.half_unit else VERDICTS[2]
    return VERDICTS[0] if diff <= EXACT_RTOL * abs(correct) else VERDICTS[2]


# ---- the shapes and the named functions the data's expressions use ----------------------------

#: The shapes the seeds' general formulas are evaluated on: GPT-3 175B (hidden size ``h``, ``L``
#: layers, ``a`` heads, vocabulary ``V``) with one sequence (``b``) of ``s`` tokens; and a GiB.
SHAPES = {"b": 1, "s": 2048, "h": 12288, "L": 96, "a": 96, "V": 50257, "GiB": 2**30}

#: Classes of the sequence classifier on which seed 004's output layer ``d C`` is evaluated.
BERT_CLASSES = 2

_ATTN_TERMS = ("attn_norm_input", "qkv_input", "q", "k", "v", "softmax_output", "attn_dropout_mask",
               "attn_dropout_output", "out_proj_input", "attn_residual_dropout_mask")
_MLP_TERMS = ("mlp_norm_input", "fc1_input", "activation", "fc2_input", "mlp_dropout_mask")


def _gpt3() -> TransformerConfig:
    return preset("gpt3-175b")


def per_layer(cfg: TransformerConfig, *keys: str) -> int:
    """Parameters of the parts ``keys`` of :func:`param_breakdown` in one layer of ``cfg``."""
    b = param_breakdown(cfg)
    return sum(b[k] for k in keys) // cfg.n_layers


def tied(name: str) -> int:
    """Parameters of preset ``name`` if its output matrix were the token embedding."""
    return param_count(preset(name).replace(tie_embeddings=True))


def layer_flops(*keys: str) -> int:
    """Forward FLOPs of the parts ``keys`` of :func:`flops_breakdown` in one GPT-3 layer (``SHAPES``)."""
    cfg = _gpt3()
    bd = flops_breakdown(cfg, SHAPES["b"], SHAPES["s"])
    return sum(bd[k] // cfg.n_layers for k in keys)


def act(*terms: str) -> int:
    """Activation bytes of the named terms of one GPT-3 layer (Korthikanti's convention, ``SHAPES``)."""
    t = activation_bytes(_gpt3(), SHAPES["b"], SHAPES["s"])["terms"]
    return sum(t[k] for k in terms)


def act_block(block: str, norm: bool = True) -> int:
    """Activation bytes of one GPT-3 layer's ``"attention"`` or ``"mlp"`` block, with or without
    the input of its LayerNorm."""
    terms = {"attention": _ATTN_TERMS, "mlp": _MLP_TERMS}[block]
    return act(*(terms if norm else terms[1:]))


def outside_layers_bytes(cfg: TransformerConfig, b: int, s: int, value_bytes: int = 2) -> int:
    """Activations outside the layers (Korthikanti et al. 2023, section 4.3): the embedding
    dropout mask ``sbh`` (1 byte), the final norm's input and the LM head's input (``value_bytes``
    each per value) and the fp32 logits of the cross-entropy, ``4sbV``: ``5sbh + 4sbV`` in 16 bits."""
    sbh = s * b * cfg.hidden_size
    return sbh + 2 * value_bytes * sbh + 4 * s * b * cfg.vocab_size


def activation_share(cfg: TransformerConfig, b: int, s: int, value_bytes: int = 2) -> float:
    """All activation bytes (layers and the rest, no recomputation) per parameter."""
    layers = activation_bytes(cfg, b, s, bytes_per_value=value_bytes)["total"]
    return (layers + outside_layers_bytes(cfg, b, s, value_bytes)) / param_count(cfg)


def selective_step() -> int:
    """A GPT-3 training step with selective recomputation (Korthikanti et al.): the backward
    re-runs only the attention core, whose products are ``QK^T`` and the attention over ``V``."""
    cfg, b, s = _gpt3(), SHAPES["b"], SHAPES["s"]
    bd = flops_breakdown(cfg, b, s)
    return training_flops(cfg, b, s) + bd["attn_scores"] + bd["attn_values"]


def adam_first_step(grad: float, eps_placement: str) -> float:
    """Size of Adam's first update (in units of the learning rate) for a gradient ``grad``."""
    hp = AdamConfig(lr=1.0, eps_placement=eps_placement)
    new, _ = adam_step([0.0], [grad], init_state(hp, [0.0]), hp)
    return float(-new[0])


def momentum_after(steps: int, form: str, lr: float = 1.0) -> float:
    """Distance travelled after ``steps`` momentum steps with a constant unit gradient."""
    hp = MomentumConfig(lr=lr, momentum=0.9, form=form)
    p, state = [0.0], init_state(hp, [0.0])
    for _ in range(steps):
        p, state = momentum_step(p, [1.0], state, hp)
    return float(-p[0])


def seed000_params(cfg: TransformerConfig) -> int:
    """Seed 000's count, evaluated as written: ``l(12h^2 + 13h) + (V + S)h``."""
    n_layers, h, V, S = cfg.n_layers, cfg.hidden_size, cfg.vocab_size, cfg.max_position
    return n_layers * (12 * h * h + 13 * h) + (V + S) * h


def seed001_params(cfg: TransformerConfig) -> int:
    """Seed 001's count, evaluated as written: ``N = (v + 2)h + (4 + 13h)hL``."""
    v, h, L = cfg.vocab_size, cfg.hidden_size, cfg.n_layers
    return (v + 2) * h + (4 + 13 * h) * h * L


def seed004_params(cfg: TransformerConfig, n_classes: int) -> int:
    """Seed 004's count, evaluated as written: ``Vd + L(3h d d_k + d^2) + L(2d d_ff) + 2Ld + dC``."""
    L, d, a, dk, f, V = cfg.n_layers, cfg.hidden_size, cfg.n_heads, cfg.head_dim, cfg.ffn_size, cfg.vocab_size
    return V * d + L * (a * 3 * d * dk + d * d) + L * (2 * d * f) + L * 2 * d + d * n_classes


#: What an expression of the data may call: llmmath's functions and the named functions above.
FUNCTIONS: dict[str, Callable[..., Any]] = {f.__name__: f for f in (
    param_count, layer_param_count, param_breakdown, preset, from_hf_config, matmul_flops, flops_breakdown,
    forward_flops, training_flops, layer_forward_flops, activation_bytes, training_state_bytes,
    state_bytes_per_param, weight_bytes, kv_cache_bytes, mlp_forward_flops, mlp_backward_flops,
    uniform_mlp_widths, per_layer, tied, layer_flops, act, act_block, outside_layers_bytes, activation_share,
    selective_step, adam_first_step, momentum_after, seed000_params, seed001_params, seed004_params,
)} | {"sqrt": math.sqrt, "int": int}

_DATA = json.loads(resources.files(__package__).joinpath("data", "errata.json").read_text(encoding="utf-8"))

#: The two models seed 001 names, as the fields of their published config.json
#: (meta-llama/Meta-Llama-3-8B and Qwen/Qwen2-72B on the Hugging Face Hub).
NAMED_MODELS: dict[str, dict[str, object]] = _DATA["named_models"]

_NAMES: dict[str, Any] = {**SHAPES, **FUNCTIONS, "BERT_CLASSES": BERT_CLASSES, "NAMED_MODELS": NAMED_MODELS,
                          "gpt2": preset("gpt2"), "gpt3": _gpt3()}
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow, ast.USub: operator.neg, ast.UAdd: operator.pos}
_NODES = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Name, ast.Call, ast.keyword, ast.Attribute,
          ast.Subscript, ast.Load, *_OPS)


def _parse(text: str, where: str) -> ast.Expression:
    """``text`` as an expression of the data, checked: arithmetic, constants, the names of
    :data:`SHAPES` and :data:`FUNCTIONS`, ``gpt2``, ``gpt3``, attributes and ``[key]``."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"{where} must be an expression, got {text!r} ({exc.msg})") from None
    for node in ast.walk(tree):
        if not isinstance(node, _NODES):
            raise ValueError(f"{where}: {type(node).__name__} is not allowed in {text!r}")
        if isinstance(node, ast.Name) and node.id not in _NAMES:
            raise ValueError(f"{where}: unknown name {node.id!r} in {text!r}; known: {sorted(_NAMES)}")
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            raise ValueError(f"{where}: private attribute {node.attr!r} in {text!r}")
    return tree


def _eval(node: ast.AST) -> Any:
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return _NAMES[node.id]
    if isinstance(node, ast.BinOp):
        return _OPS[type(node.op)](_eval(node.left), _eval(node.right))
    if isinstance(node, ast.UnaryOp):
        return _OPS[type(node.op)](_eval(node.operand))
    if isinstance(node, ast.Attribute):
        return getattr(_eval(node.value), node.attr)
    if isinstance(node, ast.Subscript):
        return _eval(node.value)[_eval(node.slice)]
    assert isinstance(node, ast.Call)
    return _eval(node.func)(*map(_eval, node.args), **{k.arg: _eval(k.value) for k in node.keywords})


def evaluate(expression: str) -> Any:
    """The value of one expression of the data, e.g. ``evaluate("param_count(gpt3) / (L * h**2)")``."""
    return _eval(_parse(expression, "expression"))


def _lazy(text: str, where: str) -> Callable[[], Any]:
    tree = _parse(text, where)  # checked when the data is read, evaluated when asked
    return lambda: _eval(tree)


def _claim(row: dict[str, str]) -> Claim:
    where = f"claim {row.get('seed')}-{row.get('key')} of llmmath/data/errata.json"
    if ("stated" in row) == ("printed" in row):
        raise ValueError(f"{where} must have exactly one of 'stated' (exact) and 'printed' (approximate)")
    if row.get("verdict") not in VERDICTS:
        raise ValueError(f"{where}: verdict must be one of {VERDICTS}, got {row.get('verdict')!r}")
    stated = row["printed"] if "printed" in row else _lazy(row["stated"], f"{where}, stated")
    if isinstance(stated, str):
        _half_unit(stated)  # a printed figure must be a number
    return Claim(row["seed"], row["key"], row["section"], row["claim"], stated,
                 _lazy(row["recomputed"], f"{where}, recomputed"), row.get("cause", ""), row["ref"],
                 row.get("unit", ""), row["verdict"])


#: Every claim of the data file, in its order (seed by seed, as each seed states them).
CLAIMS: tuple[Claim, ...] = tuple(_claim(row) for row in _DATA["claims"])


@dataclass(frozen=True)
class Statement:
    """How one seed states a quantity that several seeds state differently."""

    seed: str
    statement: str
    value: Callable[[], float]
    convention: str


#: Quantities the seeds state differently, side by side: topic -> statements. The reference value
#: of each topic is computed by llmmath (see :data:`DISAGREEMENT_REFERENCE`).
DISAGREEMENTS: dict[str, tuple[Statement, ...]] = {
    q["quantity"]: tuple(Statement(s["seed"], s["statement"], _lazy(s["value"], f"{q['quantity']!r}, seed {s['seed']}"),
                                   s["convention"]) for s in q["statements"])
    for q in _DATA["disagreements"]
}

#: The value llmmath computes for each topic of :data:`DISAGREEMENTS`.
DISAGREEMENT_REFERENCE: dict[str, Callable[[], float]] = {
    q["quantity"]: _lazy(q["recomputed"], f"{q['quantity']!r}, recomputed") for q in _DATA["disagreements"]
}
