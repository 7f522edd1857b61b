"""Every numeric claim and formula of the seeds, with the value llmmath recomputes, judged by one rule.

Each :class:`Claim` holds what a seed states (evaluated as the seed writes it) and a function that
recomputes the correct value with llmmath. :func:`verdict` compares the two by one rule, which
depends only on how the seed *presents* the value:

- presented as **exact** (a formula written with "=", an integer printed in full): the claim is
  ``"correct"`` when it equals the recomputed value (relative difference at most
  :data:`EXACT_RTOL`, floating-point rounding only), otherwise ``"wrong"``;
- presented as **approximate** ("about", "≈", "约", a rounded figure such as "1.92B", the
  coefficient of an approximate formula such as the 12 of "≈ 12Lh²"): the claim is
  ``"correct as an approximation"`` when the recomputed value, rounded to the significant digits
  the seed prints, gives the seed's figure, i.e. ``|stated - correct| <= half a unit of the last
  significant digit printed``; otherwise ``"wrong"``.

Nothing here types a verdict by hand; ``tests/test_errata.py`` pins the verdict of every claim
independently. Used by the appendix :doc:`/chapters/errata`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

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
    derives the correct value, and ``key`` names the claim uniquely within its seed.
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
    """The rule of the appendix. ``"correct"`` when ``|stated - correct| <= EXACT_RTOL |correct|``;
    ``"correct as an approximation"`` when the seed presents the value as approximate and
    ``|stated - correct|`` is at most half a unit of the last significant digit it prints
    (:attr:`Claim.half_unit`); otherwise ``"wrong"``."""
    stated, correct = claim.value(), float(claim.correct())
    diff = abs(stated - correct)
    if diff <= EXACT_RTOL * abs(correct):
        return VERDICTS[0]
    if claim.approximate and diff <= claim.half_unit:
        return VERDICTS[1]
    return VERDICTS[2]


# ---- the models the seeds use ------------------------------------------------------------------

def _gpt2() -> TransformerConfig:
    return preset("gpt2")


def _gpt3() -> TransformerConfig:
    return preset("gpt3-175b")


def _per_layer(cfg: TransformerConfig, *keys: str) -> int:
    b = param_breakdown(cfg)
    return sum(b[k] for k in keys) // cfg.n_layers


#: The two models seed 001 names, as the fields of their published config.json
#: (meta-llama/Meta-Llama-3-8B and Qwen/Qwen2-72B on the Hugging Face Hub).
NAMED_MODELS: dict[str, dict[str, object]] = {
    "Llama-3-8B": {"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096,
                   "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
                   "vocab_size": 128256, "tie_word_embeddings": False},
    "Qwen2-72B": {"model_type": "qwen2", "num_hidden_layers": 80, "hidden_size": 8192,
                  "num_attention_heads": 64, "num_key_value_heads": 8, "intermediate_size": 29568,
                  "vocab_size": 152064, "tie_word_embeddings": False},
}


def _tied(name: str) -> int:
    """Parameters of preset ``name`` if its output matrix were the token embedding."""
    return param_count(preset(name).replace(tie_embeddings=True))


# Shapes used to evaluate FLOP and activation formulas: GPT-3 175B at its context, one sequence.
_B, _S = 1, 2048
_G3 = dict(h=12288, L=96, a=96, V=50257)
_SBH = _S * _B * 12288
_AS2B = 96 * _S**2 * _B


def _fb(key: str, cfg: TransformerConfig | None = None) -> int:
    """One component of the forward FLOPs of one layer (GPT-3, b = 1, s = 2048)."""
    cfg = cfg or _gpt3()
    return flops_breakdown(cfg, _B, _S)[key] // cfg.n_layers


def _per_param_token(flops: float, cfg: TransformerConfig | None = None) -> float:
    """FLOPs per parameter per token of GPT-3 (b = 1, s = 2048)."""
    return flops / (param_count(cfg or _gpt3()) * _B * _S)


def _selective_step() -> int:
    """A GPT-3 training step with selective recomputation (Korthikanti et al.): the backward
    re-runs only the attention core, whose products are ``QK^T`` and the attention over ``V``."""
    b = flops_breakdown(_gpt3(), _B, _S)
    return training_flops(_gpt3(), _B, _S) + b["attn_scores"] + b["attn_values"]


def _act(*terms: str) -> int:
    """Activation bytes of the named terms of one GPT-3 layer (Korthikanti's convention)."""
    t = activation_bytes(_gpt3(), _B, _S)["terms"]
    return sum(t[k] for k in terms)


def _outside_layers_bytes(cfg: TransformerConfig, b: int, s: int, value_bytes: int = 2) -> int:
    """Activations outside the layers (Korthikanti et al. 2023, section 4.3): the embedding
    dropout mask ``sbh`` (1 byte), the final norm's input and the LM head's input (``value_bytes``
    each per value) and the fp32 logits of the cross-entropy, ``4sbV``: ``5sbh + 4sbV`` in 16 bits."""
    sbh = s * b * cfg.hidden_size
    return sbh + 2 * value_bytes * sbh + 4 * s * b * cfg.vocab_size


def _activation_share(cfg: TransformerConfig, b: int, s: int, value_bytes: int = 2) -> float:
    """All activation bytes (layers and the rest, no recomputation) per parameter."""
    layers = activation_bytes(cfg, b, s, bytes_per_value=value_bytes)["total"]
    return (layers + _outside_layers_bytes(cfg, b, s, value_bytes)) / param_count(cfg)


_ATTN_TERMS = ("attn_norm_input", "qkv_input", "q", "k", "v", "softmax_output", "attn_dropout_mask",
               "attn_dropout_output", "out_proj_input", "attn_residual_dropout_mask")
_MLP_TERMS = ("mlp_norm_input", "fc1_input", "activation", "fc2_input", "mlp_dropout_mask")


# The seeds' formulas, evaluated as written -----------------------------------------------------

def _seed000_params(cfg: TransformerConfig) -> int:
    n_layers, h, V, S = cfg.n_layers, cfg.hidden_size, cfg.vocab_size, cfg.max_position
    return n_layers * (12 * h * h + 13 * h) + (V + S) * h


def _seed004_params(cfg: TransformerConfig, n_classes: int) -> int:
    L, d, a, dk, f, V = cfg.n_layers, cfg.hidden_size, cfg.n_heads, cfg.head_dim, cfg.ffn_size, cfg.vocab_size
    return V * d + L * (a * 3 * d * dk + d * d) + L * (2 * d * f) + L * 2 * d + d * n_classes


def _seed001_N(cfg: TransformerConfig) -> int:
    v, h, L = cfg.vocab_size, cfg.hidden_size, cfg.n_layers
    return (v + 2) * h + (4 + 13 * h) * h * L


def _adam_first_step(grad: float, eps_placement: str) -> float:
    """Size of Adam's first update (in units of the learning rate) for a gradient ``grad``."""
    hp = AdamConfig(lr=1.0, eps_placement=eps_placement)
    new, _ = adam_step([0.0], [grad], init_state(hp, [0.0]), hp)
    return float(-new[0])


def _momentum_after(steps: int, form: str, lr: float = 1.0) -> float:
    """Distance travelled after ``steps`` momentum steps with a constant unit gradient."""
    hp = MomentumConfig(lr=lr, momentum=0.9, form=form)
    p, state = [0.0], init_state(hp, [0.0])
    for _ in range(steps):
        p, state = momentum_step(p, [1.0], state, hp)
    return float(-p[0])


def _seed002_train_seconds(n_params: float) -> float:
    return 8 * 300e9 * n_params / (1024 * 312e12 * 0.45)


#: Classes of the sequence classifier on which seed 004's output layer ``d C`` is evaluated.
BERT_CLASSES = 2

GIB = 2**30

_C = Claim
CLAIMS: tuple[Claim, ...] = (
    # ---------------------------------------------------------------- seed 000
    _C("000", "attn-params", "参数量 (parameters)",
       "self-attention block: $4h^2 + 4h$ parameters (GPT-2, $h = 768$)",
       lambda: 4 * 768**2 + 4 * 768, lambda: _per_layer(_gpt2(), "attention", "attention_bias"),
       "", "params-shapes"),
    _C("000", "mlp-params", "参数量", "MLP block: $8h^2 + 5h$ parameters (GPT-2)",
       lambda: 8 * 768**2 + 5 * 768, lambda: _per_layer(_gpt2(), "mlp", "mlp_bias"), "", "params-shapes"),
    _C("000", "ln-params", "参数量", "two LayerNorms per layer: $4h$ parameters (GPT-2)",
       lambda: 4 * 768, lambda: _per_layer(_gpt2(), "layer_norms"), "", "params-shapes"),
    _C("000", "tied-llama-7b", "参数量",
       "the output matrix is usually the embedding matrix (shared): LLaMA-7B's count with its output "
       "layer counted once", lambda: _tied("llama-7b"), lambda: param_count(preset("llama-7b")),
       "LLaMA's output matrix is a separate $V \\times h$ matrix (`tie_word_embeddings = false`)",
       "errata-params-seed000"),
    _C("000", "tied-mistral-7b", "参数量", "the same for Mistral-7B",
       lambda: _tied("mistral-7b"), lambda: param_count(preset("mistral-7b")),
       "Mistral-7B does not share its output matrix either", "errata-params-seed000"),
    _C("000", "tied-qwen2-7b", "参数量", "the same for Qwen2-7B",
       lambda: _tied("qwen2-7b"), lambda: param_count(preset("qwen2-7b")),
       "Qwen2-7B does not share its output matrix (Qwen2-0.5B does)", "errata-params-seed000"),
    _C("000", "total-gpt2", "参数量", "total $l(12h^2 + 13h) + (V + S)h$ (GPT-2 small)",
       lambda: _seed000_params(_gpt2()), lambda: param_count(_gpt2()),
       "omits the final LayerNorm ($2h$) that GPT-2 applies after the last layer", "errata-params-seed000"),
    _C("000", "12lh2", "参数量", "total $\\approx 12lh^2$ for large $h$: the coefficient $N/(lh^2)$ "
       "(GPT-3 175B)", "12", lambda: param_count(_gpt3()) / (96 * 12288**2),
       "drops the biases, norms and the $(V + S)h$ embeddings", "params-12lh2"),
    _C("000", "layer-flops", "计算量 (FLOPs)",
       "one layer's forward pass: $24bsh^2 + 4bs^2h$ (GPT-3, $b = 1$, $s = 2048$)",
       lambda: 24 * _B * _S * 12288**2 + 4 * _B * _S**2 * 12288,
       lambda: layer_forward_flops(_gpt3(), _B, _S) // 96, "", "flops-layer"),
    _C("000", "logits", "计算量", "logits: $2bshV$ (GPT-3)", lambda: 2 * _B * _S * 12288 * 50257,
       lambda: flops_breakdown(_gpt3(), _B, _S)["lm_head"], "", "flops-layer"),
    _C("000", "backward-2x", "计算量", "the backward pass costs twice the forward pass (GPT-3)",
       lambda: 2 * forward_flops(_gpt3(), _B, _S),
       lambda: training_flops(_gpt3(), _B, _S) - forward_flops(_gpt3(), _B, _S),
       "exact when every product is computed as written (eager attention): each product has an input "
       "gradient and a weight (or second-operand) gradient of its own size", "flops-backward"),
    _C("000", "recompute-step", "计算量",
       "iteration with recomputation: $4l(24bsh^2 + 4bs^2h) + 6bshV$ (GPT-3)",
       lambda: 4 * 96 * (24 * _B * _S * 12288**2 + 4 * _B * _S**2 * 12288) + 6 * _B * _S * 12288 * 50257,
       lambda: training_flops(_gpt3(), _B, _S, recompute=True), "", "flops-backward"),
    _C("000", "megatron-identity", "计算量", "$= 96bslh^2(1 + s/6h + V/16lh)$ (GPT-3)",
       lambda: 96 * _B * _S * 96 * 12288**2 * (1 + _S / (6 * 12288) + 50257 / (16 * 96 * 12288)),
       lambda: training_flops(_gpt3(), _B, _S, recompute=True), "", "flops-backward"),
    _C("000", "96bslh2", "计算量", "for large $h$, $\\approx 96bslh^2$: the coefficient "
       "$C/(bslh^2)$ (GPT-3)", "96",
       lambda: training_flops(_gpt3(), _B, _S, recompute=True) / (_B * _S * 96 * 12288**2),
       "the attention term $s/6h$ and the logits $V/16lh$ are not small enough for GPT-3 at "
       "$s = 2048$: 96 needs $s \\ll 6h$ and $V \\ll 16lh$", "flops-backward"),
    _C("000", "8-per-param", "参数量和计算量的关系",
       "8 FLOPs per parameter per token with recomputation (GPT-3)", "8",
       lambda: _per_param_token(training_flops(_gpt3(), _B, _S, recompute=True)),
       "$96bslh^2 / (12lh^2 \\cdot bs)$ drops the attention-score and logit terms and the non-$12lh^2$ "
       "parameters", "flops-per-token"),
    _C("000", "qkv-flops", "计算量", "$Q, K, V$: $3 \\times 2bsh^2$ (GPT-3)", lambda: 3 * 2 * _SBH * 12288,
       lambda: _fb("q_proj") + _fb("k_proj") + _fb("v_proj"), "", "flops-layer"),
    _C("000", "scores-flops", "计算量", "attention scores $QK^T$: $2bs^2h$ (GPT-3)",
       lambda: 2 * _B * _S**2 * 12288, lambda: _fb("attn_scores"), "", "flops-layer"),
    _C("000", "values-flops", "计算量", "scores $\\times V$: $2bs^2h$ (GPT-3)",
       lambda: 2 * _B * _S**2 * 12288, lambda: _fb("attn_values"), "", "flops-layer"),
    _C("000", "out-proj-flops", "计算量", "output projection: $2bsh^2$ (GPT-3)", lambda: 2 * _SBH * 12288,
       lambda: _fb("o_proj"), "", "flops-layer"),
    _C("000", "mlp-flops", "计算量", "MLP: $8bsh^2 + 8bsh^2$ (GPT-3)", lambda: 16 * _SBH * 12288,
       lambda: _fb("mlp_up") + _fb("mlp_down"), "", "flops-layer"),
    _C("000", "attn-act", "Activation Memory",
       "attention block (with its LayerNorm): $13sbh + 5as^2b$ bytes (GPT-3)",
       lambda: 13 * _SBH + 5 * _AS2B, lambda: _act(*_ATTN_TERMS), "", "mem-act"),
    _C("000", "softmax-act", "Activation Memory", "softmax output, its dropout mask and the dropout "
       "output: $2as^2b + as^2b + 2as^2b$ (GPT-3)", lambda: 5 * _AS2B,
       lambda: _act("softmax_output", "attn_dropout_mask", "attn_dropout_output"), "", "mem-act"),
    _C("000", "mlp-act", "Activation Memory",
       "MLP block (with its LayerNorm): $2 + 2 + 8 + 8 + 1 = 21sbh$ bytes (GPT-3)",
       lambda: 21 * _SBH, lambda: _act(*_MLP_TERMS), "", "mem-act"),
    _C("000", "layer-act", "Activation Memory", "activations per layer: $sbh(34 + 5as/h)$ bytes (GPT-3)",
       lambda: _S * _B * 12288 * (34 + 5 * 96 * _S / 12288),
       lambda: activation_bytes(_gpt3(), _B, _S)["per_layer"], "", "mem-act"),
    # ---------------------------------------------------------------- seed 001
    _C("001", "matmul-exact", "矩阵乘法的时间复杂度和计算量",
       "$(N, M) \\times (M, P)$ costs $(2M - 1)NP$ FLOPs ($N, M, P = 3, 4, 5$)",
       lambda: (2 * 4 - 1) * 3 * 5, lambda: matmul_flops(3, 4, 5, exact=True), "", "matmul-cost-exact"),
    _C("001", "mlp-forward", "前向传播和反向传播计算量之间的关系",
       "$(N+1)$-layer MLP forward: $2NBM^2 + 2BMC$ ($N = 4$, $B = 32$, $M = 256$, $C = 10$)",
       lambda: 2 * 4 * 32 * 256**2 + 2 * 32 * 256 * 10,
       lambda: mlp_forward_flops(uniform_mlp_widths(4, 256, 10), 32), "", "fb-seed"),
    _C("001", "mlp-backward", "前向传播和反向传播计算量之间的关系",
       "MLP backward: $2(2N - 1)BM^2 + 6BMC$ (same MLP)",
       lambda: 2 * (2 * 4 - 1) * 32 * 256**2 + 6 * 32 * 256 * 10,
       lambda: mlp_backward_flops(uniform_mlp_widths(4, 256, 10), 32),
       "the output layer costs $2BMC$ for its weight gradient and $2BMC$ for its input gradient: "
       "$4BMC$, not $6BMC$", "fb-seed"),
    _C("001", "backward-2x-mlp", "前向传播和反向传播计算量之间的关系",
       "hence the backward pass costs about twice the forward pass (same MLP)", "2",
       lambda: mlp_backward_flops(uniform_mlp_widths(4, 256, 10), 32)
       / mlp_forward_flops(uniform_mlp_widths(4, 256, 10), 32),
       "below 2 because the first layer needs no input gradient; the ratio tends to 2 with depth, "
       "not with width", "fb-ratio"),
    _C("001", "gb", "大模型参数量及其训练所需显存之间的关系", "$1\\,\\text{GB} = 2^{30}$ bytes",
       lambda: 2**30, lambda: 10**9, "$2^{30}$ bytes is a GiB; a GB is $10^9$ bytes", "mem-units"),
    _C("001", "llama3-8b", "大模型参数量及其训练所需显存之间的关系",
       "Llama-3-8B has 80亿 (8 billion) parameters", "80e8",
       lambda: param_count(from_hf_config(NAMED_MODELS["Llama-3-8B"])),
       "the name rounds the count (untied embeddings of a large vocabulary, grouped-query attention)",
       "errata-params-seed001-names"),
    _C("001", "qwen2-72b", "大模型参数量及其训练所需显存之间的关系",
       "Qwen2-72B has 720亿 (72 billion) parameters", "720e8",
       lambda: param_count(from_hf_config(NAMED_MODELS["Qwen2-72B"])),
       "the name rounds the count down by more than half a billion; the two untied $V \\times h$ "
       "tables of its large vocabulary are a large share of it", "errata-params-seed001-names"),
    _C("001", "adam-8p", "大模型参数量及其训练所需显存之间的关系", "Adam keeps $8P$ bytes of fp32 state ($m_t, v_t$)",
       lambda: 8, lambda: state_bytes_per_param("adam"), "", "optim-memory"),
    _C("001", "momentum-4p", "大模型参数量及其训练所需显存之间的关系", "Momentum and RMSProp keep $4P$ bytes of state",
       lambda: 4, lambda: state_bytes_per_param("momentum"), "", "optim-memory"),
    _C("001", "states-always-fp32", "大模型参数量及其训练所需显存之间的关系",
       "optimizer states are always kept in fp32, whatever the precision of the weights: Adam's "
       "$8P$ bytes, against 8-bit Adam", lambda: 8, lambda: state_bytes_per_param("adam", bytes_per_value=1),
       "8-bit optimizers {cite:p}`dettmers2022optimizers` keep $m_t$ and $v_t$ in 8 bits with block-wise "
       "scales: about $2P$ bytes", "optim-memory"),
    _C("001", "model-states-16p", "大模型参数量及其训练所需显存之间的关系",
       "fp16 weights and gradients with Adam and an fp32 master copy: $2P + 2P + 12P = 16P$ bytes "
       "(bytes per parameter)", lambda: 16, lambda: training_state_bytes(1, "mixed", "adam")["total"],
       "", "mem-reconcile"),
    _C("001", "activations-2p-gpt3", "大模型参数量及其训练所需显存之间的关系",
       "activations $\\approx 2P$ bytes (bytes per parameter; GPT-3 175B, $b = 1$, $s = 2048$)", "2",
       lambda: _activation_share(_gpt3(), 1, 2048),
       "a guess, as the seed says: activations grow with $b$ and $s$; at $b = 1$ GPT-3 happens to need "
       "a little less than $2P$", "errata-act-seed001"),
    _C("001", "activations-2p-gpt2", "大模型参数量及其训练所需显存之间的关系",
       "activations $\\approx 2P$ bytes (bytes per parameter; GPT-2 small, $b = 1$, $s = 1024$)", "2",
       lambda: _activation_share(_gpt2(), 1, 1024),
       "activations do not scale with $P$: a small model at its full context needs several times "
       "$2P$", "errata-act-seed001"),
    _C("001", "total-18p", "大模型参数量及其训练所需显存之间的关系",
       "fp16 + Adam: $\\approx 2P + 2P + 12P + 2P = 18P$ bytes (bytes per parameter; GPT-3 175B, "
       "$b = 1$, $s = 2048$)", "18",
       lambda: training_state_bytes(1, "mixed", "adam")["total"] + _activation_share(_gpt3(), 1, 2048),
       "the model states are $16P$ (ZeRO); the activations are GPT-3's at $b = 1$", "errata-act-seed001"),
    _C("001", "total-24p", "大模型参数量及其训练所需显存之间的关系",
       "fp32 + Adam: $\\approx 4P + 4P + 12P + 4P = 24P$ bytes (bytes per parameter; GPT-3 175B, "
       "$b = 1$, $s = 2048$)", "24",
       lambda: training_state_bytes(1, "fp32", "adam")["total"] + _activation_share(_gpt3(), 1, 2048, 4),
       "an fp32 run needs no fp32 master copy: Adam adds $8P$, not $12P$", "errata-act-seed001"),
    _C("001", "adam-eps", "优化器状态 (optimizer states)",
       "Adam: $\\theta \\leftarrow \\theta - \\eta \\hat m / \\sqrt{\\hat v + \\epsilon}$: first step for a "
       "gradient coordinate $g = 1/\\sqrt{7 \\times 10^9}$ (a clipped gradient of norm 1 spread over a 7B "
       "model), $\\epsilon = 10^{-8}$, in units of $\\eta$",
       lambda: _adam_first_step(1 / math.sqrt(7e9), "inside"),
       lambda: _adam_first_step(1 / math.sqrt(7e9), "outside"),
       "$\\epsilon$ belongs outside the square root (Kingma & Ba, PyTorch); inside, it acts like "
       "$\\sqrt{\\epsilon}$ outside and damps small gradients", "optim-eps"),
    _C("001", "momentum-ema", "优化器状态 (optimizer states)",
       "Momentum as an average, $v_t = \\gamma v_{t-1} + (1 - \\gamma) g_t$, "
       "$\\theta \\leftarrow \\theta - \\eta v_t$, is momentum SGD: distance after 10 unit-gradient "
       "steps ($\\gamma = 0.9$, $\\eta = 1$) against PyTorch's $v = \\gamma v + g$ with learning rate "
       "$(1 - \\gamma)\\eta$", lambda: _momentum_after(10, "ema"), lambda: _momentum_after(10, "pytorch", 0.1),
       "a convention: the same method as PyTorch's (Polyak's) with the learning rate scaled by "
       "$1 - \\gamma$; with the same $\\eta$ it moves $1 - \\gamma$ times as far", "optim-momentum-forms"),
    _C("001", "act-table-rows", "激活值 (activations)",
       "per-layer table: rows sum to the stated $34bsh + 5bs^2a$ (GPT-3)",
       lambda: _S * _B * 12288 * (1 + 11 + 1 + 19) + 5 * _B * _S**2 * 96,
       lambda: activation_bytes(_gpt3(), _B, _S)["per_layer"],
       "the two LayerNorm rows list $bsh$ each; saving a 16-bit input costs $2bsh$, which the total "
       "$34bsh$ silently uses: the rows add to $32bsh + 5bs^2a$", "mem-act-seeds"),
    _C("001", "layer-act", "激活值 (activations)", "per layer: $34bsh + 5bs^2a$ bytes (GPT-3)",
       lambda: 34 * _SBH + 5 * _AS2B, lambda: activation_bytes(_gpt3(), _B, _S)["per_layer"],
       "", "mem-act-seeds"),
    _C("001", "attn-scale", "激活值 (activations)",
       "attention scale $1/\\sqrt{h}$ in $\\mathrm{softmax}(S/\\sqrt{h})$ (GPT-3)",
       lambda: 1 / math.sqrt(12288), lambda: 1 / math.sqrt(128),
       "the scale is $1/\\sqrt{d_\\text{head}} = 1/\\sqrt{h/a}$ (Vaswani et al.), not $1/\\sqrt{h}$",
       "flops-seed001"),
    _C("001", "self-attn-act", "激活值 (activations)", "self-attention: $8bsh + 5bs^2a$ bytes (GPT-3)",
       lambda: 8 * _SBH + 5 * _AS2B,
       lambda: _act("qkv_input", "q", "k", "v", "softmax_output", "attn_dropout_mask", "attn_dropout_output"),
       "", "mem-act-seeds"),
    _C("001", "attn-act", "激活值 (activations)",
       "attention with its linear layer and dropout: $11bsh + 5bs^2a$ (GPT-3)",
       lambda: 11 * _SBH + 5 * _AS2B,
       lambda: _act(*[t for t in _ATTN_TERMS if t != "attn_norm_input"]), "", "mem-act-seeds"),
    _C("001", "mlp-act", "激活值 (activations)", "MLP without its LayerNorm: $19bsh$ (GPT-3)",
       lambda: 19 * _SBH, lambda: _act(*[t for t in _MLP_TERMS if t != "mlp_norm_input"]), "",
       "mem-act-seeds"),
    _C("001", "ln-act", "激活值 (activations)",
       "a LayerNorm keeps $bsh + 2bs \\approx bsh$ bytes: the coefficient of $bsh$ (GPT-3)", "1",
       lambda: _act("attn_norm_input") / _SBH,
       "a LayerNorm must keep its input, $2bsh$ bytes in 16 bits; $\\mu, \\sigma^2$ are only $2bs$ values",
       "mem-act-seeds"),
    _C("001", "act-outside-layers", "激活值 (activations)",
       "outside the layers: embedding $bsh$, final LayerNorm $bsh + 2bs \\approx bsh$, output layer "
       "$2bsh$ (GPT-3)", lambda: 4 * _SBH, lambda: _outside_layers_bytes(_gpt3(), _B, _S),
       "the final LayerNorm keeps its 16-bit input ($2bsh$); the output layer maps $bsh \\to bsv$ and the "
       "cross-entropy keeps the fp32 logits, $4bsv$ ({cite:t}`korthikanti2023reducing`, section 4.3): "
       "$5bsh + 4bsv$",
       "errata-act-seed001"),
    _C("001", "self-attn-flops", "大模型缩放定律推导",
       "self-attention FLOPs $bs(8h^2 + 5sa + 2sh)$, matmul part $bs(8h^2 + 2sh)$ (GPT-3)",
       lambda: _B * _S * (8 * 12288**2 + 2 * _S * 12288),
       lambda: _fb("q_proj") + _fb("k_proj") + _fb("v_proj") + _fb("attn_scores") + _fb("attn_values"),
       "follows from the $QK^T$ typo: $bs(6h^2 + 4sh)$", "flops-seed001"),
    _C("001", "c-batch", "大模型缩放定律推导",
       "training FLOPs of a batch: $3L(\\dots) \\approx 6L \\cdot 13bsh^2$: the coefficient "
       "$C/(6Lbsh^2)$ (GPT-3)", "13", lambda: training_flops(_gpt3(), _B, _S) / (6 * 96 * _SBH * 12288),
       "13 instead of 12 (the double-counted $W_O$ and the $QK^T$ typo) overstates the layers by $1/12$",
       "scaling-laws-seed001"),
    _C("001", "n-formula", "大模型缩放定律推导", "$N = (v + 2)h + (4 + 13h)hL$ (GPT-3 175B)",
       lambda: _seed001_N(_gpt3()), lambda: param_count(_gpt3()),
       "the table counts the output projection twice (4h^2 for 'Self Attention' already includes $W_O$, "
       "then $h^2$ again for 'Linear'): $13h^2$ per layer instead of $12h^2$; no biases, no position "
       "table", "errata-params-seed001"),
    _C("001", "13h2l", "大模型缩放定律推导", "$N \\approx 13h^2L$: the coefficient $N/(h^2L)$ (GPT-3 175B)",
       "13", lambda: param_count(_gpt3()) / (96 * 12288**2),
       "the output projection counted twice: the coefficient is 12", "errata-params-seed001"),
    _C("001", "qkt-typo", "大模型缩放定律推导", "$QK^T$ costs $2bh^2s$ FLOPs (GPT-3)",
       lambda: 2 * _B * 12288**2 * _S, lambda: _fb("attn_scores"),
       "a typo in the shapes: $[b,s,h] \\times [b,h,s]$ costs $2bs^2h$", "flops-seed001"),
    _C("001", "layer-matmul-flops", "大模型缩放定律推导", "matmul FLOPs of a layer: $26bsh^2 + 2bs^2h$ (GPT-3)",
       lambda: 26 * _B * _S * 12288**2 + 2 * _B * _S**2 * 12288,
       lambda: layer_forward_flops(_gpt3(), _B, _S) // 96,
       "follows from the $QK^T$ typo: $24bsh^2 + 4bs^2h$", "flops-seed001"),
    _C("001", "6n", "大模型缩放定律推导", "$C_\\text{token} \\approx 6N$: the coefficient $C_\\text{token}/N$ (GPT-3)",
       "6", lambda: _per_param_token(training_flops(_gpt3(), _B, _S)),
       "the attention-score and logit FLOPs are left out; seed 001's own path to it overcounts both $N$ "
       "and $C$ by $13/12$", "scaling-laws-seed001"),
    # ---------------------------------------------------------------- seed 002
    _C("002", "layer-params", "参数量方面", "one decoder layer: $12h^2 + 13h$ (GPT-2)",
       lambda: 12 * 768**2 + 13 * 768, lambda: layer_param_count(_gpt2()), "", "params-shapes"),
    _C("002", "ln-after", "参数量方面",
       "a LayerNorm after the attention and after the MLP: LayerNorms in GPT-3 ($2L$)",
       lambda: 2 * 96, lambda: _gpt3().n_layers * _gpt3().norms_per_layer + int(_gpt3().final_norm),
       "GPT-2 and GPT-3 are pre-LN: a LayerNorm *before* each sub-layer and a final one after the last "
       "layer, $2L + 1$", "errata-params-seed002"),
    _C("002", "qwen-formula", "参数量方面",
       "Qwen-1.8B by $l(12h^2 + 13h) + Vh$ with $l = 24$, $h = 2048$, $V = 151851$: about 1.92B",
       "1.92e9", lambda: 24 * (12 * 2048**2 + 13 * 2048) + 151851 * 2048,
       "arithmetic: evaluated with these numbers the formula gives far less (the llmmath column)",
       "errata-params-seed002"),
    _C("002", "qwen-1.8b", "参数量方面", "Qwen-1.8B has about 1.92B parameters", "1.92e9",
       lambda: param_count(preset("qwen-1.8b")),
       "Qwen uses a SwiGLU MLP (three $h \\times d_\\text{ff}$ matrices), an untied LM head and a "
       "vocabulary padded to a multiple of 128", "errata-params-seed002"),
    _C("002", "model-total", "参数量和计算量的关系",
       "the model's total parameter count is $12h^2 + 13h$ (GPT-3)", lambda: 12 * 12288**2 + 13 * 12288,
       lambda: param_count(_gpt3()),
       "that is one layer; the ratio that follows is per layer, not per model", "errata-params-seed002"),
    _C("002", "7b-fp16", "显存占用 (memory)", "a 7B model in fp16 needs about $7 \\times 2 = 14$ GB",
       "14e9", lambda: 2 * 7e9, "", "mem-units"),
    _C("002", "inference-weights", "显存占用",
       "inference needs only the weights: Llama-2-7B in fp16, one sequence of 4096 tokens",
       lambda: weight_bytes(preset("llama2-7b"), "fp16"),
       lambda: weight_bytes(preset("llama2-7b"), "fp16") + kv_cache_bytes(preset("llama2-7b"), 1, 4096),
       "generation also keeps the KV cache, $2 L b s a_\\text{kv} d_\\text{head}$ values, which grows with "
       "batch and context", "mem-inference"),
    _C("002", "20phi", "显存占用", "fp16 training with Adam: $20\\Phi$ bytes", lambda: 20,
       lambda: training_state_bytes(1, "mixed-fp32-grads", "adam")["total"], "", "mem-reconcile"),
    _C("002", "130gb", "显存占用", "7B: about $20 \\times 7 \\times 10^9 / 1024^3 = 130$ GB", "130e9",
       lambda: 20 * 7e9, "the division by $1024^3$ gives GiB, not GB", "mem-units"),
    _C("002", "attn-scale", "计算量方面",
       "attention scale $1/\\sqrt{h}$ in $\\mathrm{softmax}(QK^T/\\sqrt{h})$ (GPT-3)",
       lambda: 1 / math.sqrt(12288), lambda: 1 / math.sqrt(128),
       "the scale is $1/\\sqrt{d_\\text{head}}$ (Vaswani et al.), not $1/\\sqrt{h}$", "flops-layer"),
    _C("002", "qkv-flops", "计算量方面", "$Q, K, V$: $3 \\times 2bLh^2 = 6bLh^2$ (GPT-3)",
       lambda: 6 * _SBH * 12288, lambda: _fb("q_proj") + _fb("k_proj") + _fb("v_proj"), "", "flops-layer"),
    _C("002", "scores-values-flops", "计算量方面", "$QK^T$ and $S \\cdot V$: $2bL^2h$ each (GPT-3)",
       lambda: 4 * _B * _S**2 * 12288, lambda: _fb("attn_scores") + _fb("attn_values"), "", "flops-layer"),
    _C("002", "self-attn-flops", "计算量方面", "self attention: $8bLh^2 + 4bL^2h$ (GPT-3)",
       lambda: 8 * _SBH * 12288 + 4 * _B * _S**2 * 12288,
       lambda: sum(_fb(k) for k in ("q_proj", "k_proj", "v_proj", "attn_scores", "attn_values", "o_proj")),
       "", "flops-layer"),
    _C("002", "mlp-flops", "计算量方面", "MLP: $16bLh^2$ (GPT-3)", lambda: 16 * _SBH * 12288,
       lambda: _fb("mlp_up") + _fb("mlp_down"), "", "flops-layer"),
    _C("002", "logits", "计算量方面", "logits: $2bLh\\lvert V \\rvert$ (GPT-3)", lambda: 2 * _SBH * 50257,
       lambda: flops_breakdown(_gpt3(), _B, _S)["lm_head"], "", "flops-layer"),
    _C("002", "p-additions", "计算量方面", "each entry of $AB$ needs $p$ additions and $p$ multiplications: "
       "$2mnp$ ($m, n, p = 3, 4, 5$, inner dimension $p$)", lambda: 2 * 3 * 4 * 5,
       lambda: matmul_flops(3, 5, 4, exact=True),
       "a dot product of length $p$ needs $p - 1$ additions; $2mnp$ is the multiply-add convention",
       "matmul-cost-exact"),
    _C("002", "layer-flops", "计算量方面", "one layer: $24bLh^2 + 4bL^2h$ ($L$ = sequence length; GPT-3)",
       lambda: 24 * _B * _S * 12288**2 + 4 * _B * _S**2 * 12288,
       lambda: layer_forward_flops(_gpt3(), _B, _S) // 96, "", "flops-layer"),
    _C("002", "ratio-per-layer", "参数量和计算量的关系",
       "$(24h + 4L)/(12h + 13) \\approx 2$ FLOPs per parameter per token, one layer (GPT-3)", "2",
       lambda: layer_forward_flops(_gpt3(), _B, _S) / (layer_param_count(_gpt3()) * _B * _S * 96),
       "exactly the seed's fraction; it is near 2 only while $s \\ll 6h$", "flops-per-token"),
    _C("002", "2-per-param", "参数量和计算量的关系", "forward: 2 FLOPs per parameter per token (GPT-3)", "2",
       lambda: _per_param_token(forward_flops(_gpt3(), _B, _S)),
       "ignores the attention products and counts the embedding as free", "flops-per-token"),
    _C("002", "backward-2x", "参数量和计算量的关系", "the backward pass costs twice the forward pass (GPT-3)",
       lambda: 2 * forward_flops(_gpt3(), _B, _S),
       lambda: training_flops(_gpt3(), _B, _S) - forward_flops(_gpt3(), _B, _S),
       "exact with attention computed as written (eager attention)", "flops-backward"),
    _C("002", "6-per-param", "参数量和计算量的关系",
       "forward and backward: 6 FLOPs per parameter per token (GPT-3)", "6",
       lambda: _per_param_token(training_flops(_gpt3(), _B, _S)),
       "three times the forward pass's 2: the attention products and the free embedding lookup are "
       "left out", "flops-per-token"),
    _C("002", "gpt3-params", "参数量和计算量的关系", "GPT-3 175B has 174600M parameters", "174600e6",
       lambda: param_count(_gpt3()),
       "the figure of Table D.1 of Brown et al. (2020), four significant digits", "flops-gpt3"),
    _C("002", "gpt3-flops", "参数量和计算量的关系",
       "GPT-3: $6 \\times 174600\\text{M} \\times 300\\text{B} \\approx 3.143 \\times 10^{23}$ FLOPs",
       "3.143e23", lambda: 6 * 174600e6 * 300e9, "the product rounded to four digits", "flops-gpt3"),
    _C("002", "8-with-recompute", "训练时间预估",
       "with recomputation, 8 FLOPs per parameter per token (GPT-3)", "8",
       lambda: _per_param_token(training_flops(_gpt3(), _B, _S, recompute=True)),
       "full recomputation re-runs every layer's forward pass; the logits are not recomputed",
       "flops-backward"),
    _C("002", "recompute-usual", "训练时间预估",
       "recomputation is usually done, so a step costs 8 FLOPs per parameter per token; against "
       "selective recomputation (GPT-3)", "8", lambda: _per_param_token(_selective_step()),
       "full recomputation is one option, not the rule: the selective recomputation of "
       "{cite:t}`korthikanti2023reducing` re-runs only the attention core and keeps the step near $6N$ "
       "per token", "mem-recompute"),
    _C("002", "train-seconds", "训练时间预估",
       "$8 \\cdot 300\\text{B} \\cdot 174600\\text{M} / (1024 \\cdot 312\\text{T} \\cdot 0.45) "
       "\\approx 2921340$ s", "2921340", lambda: _seed002_train_seconds(174600e6),
       "the printed figure is what $N = 175 \\times 10^9$ gives; with the 174600M written the time is "
       "slightly shorter, which leaves the 34 days of the next row unchanged", "flops-megatron"),
    _C("002", "train-days", "训练时间预估", "$\\approx 34$ days", "34",
       lambda: _seed002_train_seconds(174600e6) / 86400, "rounded to whole days", "flops-megatron", "days"),
    # ---------------------------------------------------------------- seed 003
    _C("003", "mha-layer", "1.1 BERT类模型",
       "BERT's attention sub-layer: $3h^2$ ($QKV$) $+ h^2$ (dense) $+ 2h$ (LayerNorm)",
       lambda: 4 * 768**2 + 2 * 768,
       lambda: _per_layer(preset("bert-base-chinese"), "attention", "attention_bias") + 2 * 768,
       "omits the biases of $Q$, $K$, $V$ and the dense layer ($4h$)", "errata-params-seed003"),
    _C("003", "ffn-layer", "1.1 BERT类模型", "BERT's FFN sub-layer: $h \\cdot 4h + 4h \\cdot h + 2h = 8h^2 + 2h$",
       lambda: 8 * 768**2 + 2 * 768,
       lambda: _per_layer(preset("bert-base-chinese"), "mlp", "mlp_bias") + 2 * 768,
       "omits the FFN's biases ($4h + h$)", "errata-params-seed003"),
    _C("003", "bert-layer", "1.1 BERT类模型", "BERT layer: $12h^2 + 4h$ parameters",
       lambda: 12 * 768**2 + 4 * 768, lambda: layer_param_count(preset("bert-base-chinese")),
       "omits the $9h$ biases of the six linear layers", "errata-params-seed003"),
    _C("003", "bert-12h2", "1.1 BERT类模型",
       "dropping the $4h$, a layer has $\\approx 12h^2$: the coefficient (layer)$/h^2$", "12",
       lambda: layer_param_count(preset("bert-base-chinese")) / 768**2,
       "the dropped vectors ($13h$ with the biases) are small next to $12h^2$", "errata-params-seed003"),
    _C("003", "bert-arithmetic", "1.2 BERT 模型结构",
       "arithmetic: $12(12 \\cdot 768^2 + 4 \\cdot 768) + 21128 \\cdot 768 = 101{,}197{,}824$",
       lambda: 101197824, lambda: 12 * (12 * 768**2 + 4 * 768) + 21128 * 768, "", "errata-params-seed003"),
    _C("003", "bert-count", "1.2 BERT 模型结构",
       "BERT (vocabulary 21128) has $12(12h^2 + 4h) + vh = 101{,}197{,}824$ parameters",
       lambda: 101197824, lambda: param_count(preset("bert-base-chinese")),
       "omits position and token-type embeddings, the embedding LayerNorm, all biases and the pooler",
       "errata-params-seed003"),
    _C("003", "bert-101m", "1.2 BERT 模型结构", "that is about 101M parameters", "101e6",
       lambda: param_count(preset("bert-base-chinese")), "the same omissions",
       "errata-params-seed003"),
    _C("003", "bert-110m", "1.2 BERT 模型结构",
       "the official 110M is this model (the gap: the classifier and the biases)", "110e6",
       lambda: param_count(preset("bert-base-chinese")),
       "110M is the English BERT-base (larger vocabulary); the gap is mostly the vocabulary, and BERT's "
       "110M includes no classifier", "errata-params-seed003"),
    _C("003", "llama-layer", "2.1 LLAMA-65B 参数量", "LLaMA layer: $4h^2 + 3hh_\\text{swi} + 4h$",
       lambda: 4 * 8192**2 + 3 * 8192 * 22016 + 4 * 8192, lambda: layer_param_count(preset("llama-65b")),
       "RMSNorm has a scale and no shift: $2h$ per layer, not $4h$", "errata-params-seed003-llama"),
    _C("003", "llama-arithmetic", "2.2 LLAMA-65B 模型结构",
       "arithmetic: $80(4 \\cdot 8192^2 + 3 \\cdot 8192 \\cdot 22016 + 4 \\cdot 8192) + 32000 \\cdot 8192 "
       "= 65{,}024{,}819{,}200$", lambda: 65024819200,
       lambda: 80 * (4 * 8192**2 + 3 * 8192 * 22016 + 4 * 8192) + 32000 * 8192, "",
       "errata-params-seed003-llama"),
    _C("003", "llama-65b-count", "2.2 LLAMA-65B 模型结构", "LLaMA-65B has 65,024,819,200 parameters",
       lambda: 65024819200, lambda: param_count(preset("llama-65b")),
       "omits the untied LM head ($Vh$) and the final norm; overcounts the norms by $2h$ per layer",
       "errata-params-seed003-llama"),
    _C("003", "llama-65b-about", "2.2 LLAMA-65B 模型结构", "that is about 65B parameters", "65e9",
       lambda: param_count(preset("llama-65b")),
       "the omissions of the previous row are smaller than the rounding", "errata-params-seed003-llama"),
    # ---------------------------------------------------------------- seed 004
    _C("004", "embedding", "1. 输入嵌入层", "embedding: $V \\times d$ (GPT-2)", lambda: 50257 * 768,
       lambda: param_breakdown(_gpt2())["token_embedding"], "", "errata-params-seed004"),
    _C("004", "attention", "2. 自注意力层",
       "multi-head attention: $h \\cdot 3 (d \\cdot d_k) + d \\cdot d$ (GPT-2, biases included)",
       lambda: 12 * 3 * 768 * 64 + 768**2, lambda: _per_layer(_gpt2(), "attention", "attention_bias"),
       "omits the biases of $Q$, $K$, $V$ and the output ($4d$); the weights alone are right",
       "errata-params-seed004"),
    _C("004", "w-o", "2. 自注意力层",
       "output projection: $d \\times d$, with $h\\,d_k \\ne d$ allowed (Gemma-7B: 16 heads of 256, $d = 3072$)",
       lambda: 3072**2, lambda: preset("gemma-7b").q_dim * preset("gemma-7b").hidden_size,
       "the projection maps the $h\\,d_k$ concatenated head outputs to $d$: $h\\,d_k \\times d$, which is "
       "$d \\times d$ only when $h\\,d_k = d$", "errata-params-seed004"),
    _C("004", "ffn", "3. 前馈网络层",
       "feed-forward network: $d \\cdot d_{ff} + d_{ff} \\cdot d$ (GPT-2, biases included)",
       lambda: 2 * 768 * 3072, lambda: _per_layer(_gpt2(), "mlp", "mlp_bias"),
       "omits the biases ($d_{ff} + d$); the weights alone are right", "errata-params-seed004"),
    _C("004", "layernorm", "4. 层规范化", "layer normalization: $L \\times 2d$ (GPT-2)", lambda: 12 * 2 * 768,
       lambda: param_breakdown(_gpt2())["layer_norms"], "a pre-LN or post-LN layer has two norms: $4d$",
       "errata-params-seed004"),
    _C("004", "total-gpt2", "汇总",
       "total: $Vd + L(3h\\,d\\,d_k + d^2) + L(2dd_{ff}) + 2Ld + dC$, output layer the LM head "
       "($C = V$; GPT-2)", lambda: _seed004_params(_gpt2(), _gpt2().vocab_size), lambda: param_count(_gpt2()),
       "counts the tied output embedding a second time and omits biases, position embeddings, a norm "
       "per layer and the final norm", "errata-params-seed004"),
    _C("004", "total-bert-classifier", "汇总",
       "the same total with a classifier of $C = 2$ classes (BERT-base for sequence classification)",
       lambda: _seed004_params(preset("bert-base"), BERT_CLASSES),
       lambda: param_count(preset("bert-base")) + (768 + 1) * BERT_CLASSES,
       "omits the biases, the position and token-type tables, the embedding LayerNorm, one norm per "
       "layer and the pooler", "errata-params-seed004"),
)

# Numbers the seeds use, for the notebook: GiB, and GPT-3's shapes.
SHAPES = {"b": _B, "s": _S, **_G3, "GiB": GIB}


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
    "parameters of one GPT-3 175B layer": (
        Statement("000", "$12h^2 + 13h$", lambda: 12 * 12288**2 + 13 * 12288,
                  "weights, biases and two LayerNorms of a GPT layer"),
        Statement("002", "$12h^2 + 13h$", lambda: 12 * 12288**2 + 13 * 12288, "same as seed 000"),
        Statement("001", "$13h^2 + 4h$", lambda: 13 * 12288**2 + 4 * 12288,
                  "no biases; the output projection counted twice"),
        Statement("003", "$12h^2 + 4h$", lambda: 12 * 12288**2 + 4 * 12288, "no biases"),
        Statement("004", "$4d^2 + 2dd_{ff} + 2d$", lambda: 4 * 12288**2 + 8 * 12288**2 + 2 * 12288,
                  "no biases, one norm per layer"),
    ),
    "matmul FLOPs of one GPT-3 layer (forward, $b = 1$, $s = 2048$)": (
        Statement("000", "$24bsh^2 + 4bs^2h$", lambda: 24 * _S * 12288**2 + 4 * _S**2 * 12288, "matmuls only"),
        Statement("002", "$24bLh^2 + 4bL^2h$", lambda: 24 * _S * 12288**2 + 4 * _S**2 * 12288,
                  "matmuls only ($L$ is the sequence length)"),
        Statement("001", "$26bsh^2 + bs^2(5a + 2h) + 18bsh$",
                  lambda: 26 * _S * 12288**2 + _S**2 * (5 * 96 + 2 * 12288) + 18 * _S * 12288,
                  "matmuls (with the $QK^T$ typo) plus softmax, dropout, norms, GeLU"),
    ),
    "bytes per parameter of mixed-precision Adam": (
        Statement("001", "$2 + 2 + 12 + 2 = 18$", lambda: 18,
                  "16-bit weights and gradients, fp32 $m, v$ and master weights, plus a guessed $2P$ of activations"),
        Statement("002", "$2 + 2 + 4 \\times 4 = 20$", lambda: 20,
                  "as seed 001 without activations, plus an fp32 copy of the gradients"),
    ),
    "activation bytes of one GPT-3 layer ($b = 1$, $s = 2048$)": (
        Statement("000", "$13sbh + 5as^2b$ (attention, with its LayerNorm) $+ 21sbh$ (MLP, with its LayerNorm)",
                  lambda: (13 + 21) * _S * 12288 + 5 * 96 * _S**2, "LayerNorm input $2sbh$ inside each block"),
        Statement("001", "rows: $sbh$ (LN) $+ 11sbh + 5bs^2a$ (attention) $+ sbh$ (LN) $+ 19bsh$ (MLP)",
                  lambda: (1 + 11 + 1 + 19) * _S * 12288 + 5 * 96 * _S**2,
                  "LayerNorm as $bsh$ (its mean and variance), yet a stated total of $34bsh + 5bs^2a$"),
    ),
    "a GB": (
        Statement("001", "$1\\,\\text{GB} = 2^{30}$ bytes", lambda: 2**30, "binary (that is a GiB)"),
        Statement("002", "$7 \\times 2 = 14$ GB", lambda: 10**9, "decimal in the inference example"),
        Statement("002", "$20 \\times 7 \\times 10^9 / 1024^3 = 130$ GB", lambda: 2**30,
                  "binary in the training example"),
    ),
}

#: The value llmmath computes for each topic of :data:`DISAGREEMENTS`.
DISAGREEMENT_REFERENCE: dict[str, Callable[[], float]] = {
    "parameters of one GPT-3 175B layer": lambda: layer_param_count(_gpt3()),
    "matmul FLOPs of one GPT-3 layer (forward, $b = 1$, $s = 2048$)": lambda: layer_forward_flops(_gpt3(), 1, _S) // 96,
    "bytes per parameter of mixed-precision Adam": lambda: training_state_bytes(1, "mixed", "adam")["total"],
    "activation bytes of one GPT-3 layer ($b = 1$, $s = 2048$)":
        lambda: activation_bytes(_gpt3(), 1, _S)["per_layer"],
    "a GB": lambda: 10**9,
}
