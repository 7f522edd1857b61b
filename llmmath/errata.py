"""Every numeric claim and formula of the seeds, with the value llmmath recomputes.

Each :class:`Claim` holds what a seed states (evaluated as the seed writes it) and a function that
recomputes the correct value with llmmath. :func:`verdict` compares the two; nothing here types a
verdict by hand. Used by the appendix :doc:`/chapters/errata`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from .config import TransformerConfig
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


@dataclass(frozen=True)
class Claim:
    """One statement of a seed.

    ``stated`` evaluates the claim exactly as the seed writes it (its formula on its own numbers,
    or the number it prints); ``correct`` recomputes the quantity with llmmath. ``tolerance`` is
    the relative error up to which the seed's value counts as *correct as an approximation*
    (0 when the seed presents the value as exact); ``cause`` explains any difference and ``ref``
    is the label of the section of the book that derives the correct value.
    """

    seed: str
    section: str
    claim: str
    stated: Callable[[], float]
    correct: Callable[[], float]
    cause: str
    ref: str
    tolerance: float = 0.0
    unit: str = ""


def relative_error(claim: Claim) -> float:
    """``(stated - correct) / correct`` (signed: positive when the seed overstates)."""
    stated, correct = float(claim.stated()), float(claim.correct())
    if correct == 0:
        return 0.0 if stated == 0 else math.inf
    return (stated - correct) / correct


def verdict(claim: Claim) -> str:
    """``"correct"`` (relative error below 1e-9), ``"correct as an approximation"`` (within the
    claim's ``tolerance``), otherwise ``"wrong"``."""
    err = abs(relative_error(claim))
    if err <= 1e-9:
        return VERDICTS[0]
    if err <= claim.tolerance:
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


# Shapes used to evaluate FLOP and activation formulas: GPT-3 175B at its context, one sequence.
_B, _S = 1, 2048
_G3 = dict(h=12288, L=96, a=96, V=50257)


def _act_per_layer(cfg: TransformerConfig, b: int, s: int) -> int:
    return activation_bytes(cfg, b, s)["per_layer"]


def _fb(key: str, cfg: TransformerConfig | None = None) -> int:
    """One component of the forward FLOPs of one layer (GPT-3, b = 1, s = 2048)."""
    cfg = cfg or _gpt3()
    return flops_breakdown(cfg, _B, _S)[key] // cfg.n_layers


def _act(*terms: str) -> int:
    """Activation bytes of the named terms of one GPT-3 layer (Korthikanti's convention)."""
    t = activation_bytes(_gpt3(), _B, _S)["terms"]
    return sum(t[k] for k in terms)


_SBH = _S * _B * 12288
_AS2B = 96 * _S**2 * _B
_ATTN_TERMS = ("attn_norm_input", "qkv_input", "q", "k", "v", "softmax_output", "attn_dropout_mask",
               "attn_dropout_output", "out_proj_input", "attn_residual_dropout_mask")
_MLP_TERMS = ("mlp_norm_input", "fc1_input", "activation", "fc2_input", "mlp_dropout_mask")


# The seeds' formulas, evaluated as written -----------------------------------------------------

def _seed000_params(cfg: TransformerConfig) -> int:
    n_layers, h, V, S = cfg.n_layers, cfg.hidden_size, cfg.vocab_size, cfg.max_position
    return n_layers * (12 * h * h + 13 * h) + (V + S) * h


def _seed004_params(cfg: TransformerConfig) -> int:
    L, d, a, dk, f, V = cfg.n_layers, cfg.hidden_size, cfg.n_heads, cfg.head_dim, cfg.ffn_size, cfg.vocab_size
    return V * d + L * (a * 3 * d * dk + d * d) + L * (2 * d * f) + L * 2 * d + d * V


def _seed001_N(cfg: TransformerConfig) -> int:
    v, h, L = cfg.vocab_size, cfg.hidden_size, cfg.n_layers
    return (v + 2) * h + (4 + 13 * h) * h * L


def _adam_first_step(grad: float, eps_placement: str) -> float:
    """Size of Adam's first update (in units of the learning rate) for a gradient ``grad``."""
    hp = AdamConfig(lr=1.0, eps_placement=eps_placement)
    new, _ = adam_step([0.0], [grad], init_state(hp, [0.0]), hp)
    return float(-new[0])


def _momentum_after(steps: int, form: str) -> float:
    """Distance travelled after ``steps`` momentum steps with a constant unit gradient (lr 1)."""
    hp = MomentumConfig(lr=1.0, momentum=0.9, form=form)
    p, state = [0.0], init_state(hp, [0.0])
    for _ in range(steps):
        p, state = momentum_step(p, [1.0], state, hp)
    return float(-p[0])


def _seed002_train_seconds(n_params: float) -> float:
    return 8 * 300e9 * n_params / (1024 * 312e12 * 0.45)


GIB = 2**30

CLAIMS: tuple[Claim, ...] = (
    # ---------------------------------------------------------------- seed 000
    Claim("000", "参数量 (parameters)", "self-attention block: $4h^2 + 4h$ parameters (GPT-2, $h = 768$)",
          lambda: 4 * 768**2 + 4 * 768, lambda: _per_layer(_gpt2(), "attention", "attention_bias"),
          "", "params-shapes"),
    Claim("000", "参数量", "MLP block: $8h^2 + 5h$ parameters (GPT-2)",
          lambda: 8 * 768**2 + 5 * 768, lambda: _per_layer(_gpt2(), "mlp", "mlp_bias"), "", "params-shapes"),
    Claim("000", "参数量", "two LayerNorms per layer: $4h$ parameters (GPT-2)",
          lambda: 4 * 768, lambda: _per_layer(_gpt2(), "layer_norms"), "", "params-shapes"),
    Claim("000", "参数量", "total $l(12h^2 + 13h) + (V + S)h$ (GPT-2 small)",
          lambda: _seed000_params(_gpt2()), lambda: param_count(_gpt2()),
          "omits the final LayerNorm ($2h$) that GPT-2 applies after the last layer", "params-shapes", 1e-4),
    Claim("000", "参数量", "total $\\approx 12lh^2$ for large $h$ (GPT-3 175B)",
          lambda: 12 * 96 * 12288**2, lambda: param_count(_gpt3()),
          "drops the biases, norms and the $(V + S)h$ embeddings", "params-12lh2", 0.01),
    Claim("000", "计算量 (FLOPs)", "one layer's forward pass: $24bsh^2 + 4bs^2h$ (GPT-3, $b = 1$, $s = 2048$)",
          lambda: 24 * _B * _S * 12288**2 + 4 * _B * _S**2 * 12288,
          lambda: layer_forward_flops(_gpt3(), _B, _S) // 96, "", "flops-layer"),
    Claim("000", "计算量", "logits: $2bshV$ (GPT-3)", lambda: 2 * _B * _S * 12288 * 50257,
          lambda: flops_breakdown(_gpt3(), _B, _S)["lm_head"], "", "flops-layer"),
    Claim("000", "计算量", "iteration with recomputation: $4l(24bsh^2 + 4bs^2h) + 6bshV$ (GPT-3)",
          lambda: 4 * 96 * (24 * _B * _S * 12288**2 + 4 * _B * _S**2 * 12288) + 6 * _B * _S * 12288 * 50257,
          lambda: training_flops(_gpt3(), _B, _S, recompute=True), "", "flops-backward"),
    Claim("000", "计算量", "$= 96bslh^2(1 + s/6h + V/16lh)$ (GPT-3)",
          lambda: 96 * _B * _S * 96 * 12288**2 * (1 + _S / (6 * 12288) + 50257 / (16 * 96 * 12288)),
          lambda: training_flops(_gpt3(), _B, _S, recompute=True), "", "flops-backward", 1e-12),
    Claim("000", "参数量和计算量的关系", "8 FLOPs per parameter per token with recomputation (GPT-3)",
          lambda: 8, lambda: training_flops(_gpt3(), _B, _S, recompute=True) / (param_count(_gpt3()) * _B * _S),
          "$96bslh^2 / (12lh^2 \\cdot bs)$ drops the attention-score and logit terms and the non-$12lh^2$ "
          "parameters", "flops-per-token", 0.05),
    Claim("000", "计算量", "$Q, K, V$: $3 \\times 2bsh^2$ (GPT-3)", lambda: 3 * 2 * _SBH * 12288,
          lambda: _fb("q_proj") + _fb("k_proj") + _fb("v_proj"), "", "flops-layer"),
    Claim("000", "计算量", "attention scores $QK^T$: $2bs^2h$ (GPT-3)", lambda: 2 * _B * _S**2 * 12288,
          lambda: _fb("attn_scores"), "", "flops-layer"),
    Claim("000", "计算量", "scores $\\times V$: $2bs^2h$ (GPT-3)", lambda: 2 * _B * _S**2 * 12288,
          lambda: _fb("attn_values"), "", "flops-layer"),
    Claim("000", "计算量", "output projection: $2bsh^2$ (GPT-3)", lambda: 2 * _SBH * 12288,
          lambda: _fb("o_proj"), "", "flops-layer"),
    Claim("000", "计算量", "MLP: $8bsh^2 + 8bsh^2$ (GPT-3)", lambda: 16 * _SBH * 12288,
          lambda: _fb("mlp_up") + _fb("mlp_down"), "", "flops-layer"),
    Claim("000", "Activation Memory", "attention block (with its LayerNorm): $13sbh + 5as^2b$ bytes (GPT-3)",
          lambda: 13 * _SBH + 5 * _AS2B, lambda: _act(*_ATTN_TERMS), "", "mem-act"),
    Claim("000", "Activation Memory", "softmax output, its dropout mask and the dropout output: "
          "$2as^2b + as^2b + 2as^2b$ (GPT-3)", lambda: 5 * _AS2B,
          lambda: _act("softmax_output", "attn_dropout_mask", "attn_dropout_output"), "", "mem-act"),
    Claim("000", "Activation Memory", "MLP block (with its LayerNorm): $2 + 2 + 8 + 8 + 1 = 21sbh$ bytes (GPT-3)",
          lambda: 21 * _SBH, lambda: _act(*_MLP_TERMS), "", "mem-act"),
    Claim("000", "Activation Memory", "activations per layer: $sbh(34 + 5as/h)$ bytes (GPT-3)",
          lambda: _S * _B * 12288 * (34 + 5 * 96 * _S / 12288), lambda: _act_per_layer(_gpt3(), _B, _S),
          "", "mem-act"),
    # ---------------------------------------------------------------- seed 001
    Claim("001", "矩阵乘法的时间复杂度和计算量",
          "$(N, M) \\times (M, P)$ costs $(2M - 1)NP$ FLOPs ($N, M, P = 3, 4, 5$)",
          lambda: (2 * 4 - 1) * 3 * 5, lambda: matmul_flops(3, 4, 5, exact=True), "", "matmul-cost-exact"),
    Claim("001", "前向传播和反向传播计算量之间的关系",
          "$(N+1)$-layer MLP forward: $2NBM^2 + 2BMC$ ($N = 4$, $B = 32$, $M = 256$, $C = 10$)",
          lambda: 2 * 4 * 32 * 256**2 + 2 * 32 * 256 * 10,
          lambda: mlp_forward_flops(uniform_mlp_widths(4, 256, 10), 32), "", "fb-seed"),
    Claim("001", "前向传播和反向传播计算量之间的关系", "MLP backward: $2(2N - 1)BM^2 + 6BMC$ (same MLP)",
          lambda: 2 * (2 * 4 - 1) * 32 * 256**2 + 6 * 32 * 256 * 10,
          lambda: mlp_backward_flops(uniform_mlp_widths(4, 256, 10), 32),
          "the output layer costs $2BMC$ for its weight gradient and $2BMC$ for its input gradient: "
          "$4BMC$, not $6BMC$", "fb-seed"),
    Claim("001", "大模型参数量及其训练所需显存之间的关系", "$1\\,\\text{GB} = 2^{30}$ bytes",
          lambda: 2**30, lambda: 10**9, "$2^{30}$ bytes is a GiB; a GB is $10^9$ bytes", "mem-units"),
    Claim("001", "大模型参数量及其训练所需显存之间的关系", "Adam keeps $8P$ bytes of fp32 state ($m_t, v_t$)",
          lambda: 8, lambda: state_bytes_per_param("adam"), "", "optim-memory"),
    Claim("001", "大模型参数量及其训练所需显存之间的关系", "Momentum and RMSProp keep $4P$ bytes of state",
          lambda: 4, lambda: state_bytes_per_param("momentum"), "", "optim-memory"),
    Claim("001", "大模型参数量及其训练所需显存之间的关系",
          "fp16 + Adam: $2P + 2P + 12P + 2P = 18P$ bytes (bytes per parameter)",
          lambda: 18, lambda: training_state_bytes(1, "mixed", "adam")["total"],
          "the model states are $16P$ (ZeRO); the last $2P$ is a guessed activation term, which really "
          "depends on $b$ and $s$, not on $P$", "mem-reconcile", 0.15),
    Claim("001", "大模型参数量及其训练所需显存之间的关系",
          "fp32 + Adam: $4P + 4P + 12P + 4P = 24P$ bytes (bytes per parameter, without the activation guess: $20P$)",
          lambda: 20, lambda: training_state_bytes(1, "fp32", "adam")["total"],
          "an fp32 run needs no fp32 master copy: the $12P$ counts it anyway ($4P$ too many)", "mem-reconcile"),
    Claim("001", "优化器状态 (optimizer states)",
          "Adam: $\\theta \\leftarrow \\theta - \\eta \\hat m / \\sqrt{\\hat v + \\epsilon}$: first step for a "
          "gradient coordinate $g = 1/\\sqrt{7 \\times 10^9}$ (a clipped gradient of norm 1 spread over a 7B "
          "model), $\\epsilon = 10^{-8}$, in units of $\\eta$",
          lambda: _adam_first_step(1 / math.sqrt(7e9), "inside"),
          lambda: _adam_first_step(1 / math.sqrt(7e9), "outside"),
          "$\\epsilon$ belongs outside the square root (Kingma & Ba, PyTorch); inside, it acts like "
          "$\\sqrt{\\epsilon}$ outside and damps small gradients", "optim-eps"),
    Claim("001", "优化器状态 (optimizer states)",
          "Momentum $v_t = \\gamma v_{t-1} + (1 - \\gamma) g_t$: distance after 10 unit-gradient steps, "
          "$\\gamma = 0.9$ (in units of $\\eta$)",
          lambda: _momentum_after(10, "ema"), lambda: _momentum_after(10, "pytorch"),
          "a convention, not a slip: PyTorch (and Polyak, Sutskever et al.) accumulate $v = \\mu v + g$ "
          "without $(1 - \\gamma)$; the seed's form needs a learning rate $1/(1-\\gamma)$ times larger",
          "optim-momentum-forms"),
    Claim("001", "激活值 (activations)", "per-layer table: rows sum to the stated $34bsh + 5bs^2a$ (GPT-3)",
          lambda: _S * _B * 12288 * (1 + 11 + 1 + 19) + 5 * _B * _S**2 * 96,
          lambda: _act_per_layer(_gpt3(), _B, _S),
          "the two LayerNorm rows list $bsh$ each; saving a 16-bit input costs $2bsh$, which the total "
          "$34bsh$ silently uses: the rows add to $32bsh + 5bs^2a$", "mem-act-seeds"),
    Claim("001", "激活值 (activations)", "attention scale $1/\\sqrt{h}$ in $\\mathrm{softmax}(S/\\sqrt{h})$ (GPT-3)",
          lambda: 1 / math.sqrt(12288), lambda: 1 / math.sqrt(128),
          "the scale is $1/\\sqrt{d_\\text{head}} = 1/\\sqrt{h/a}$ (Vaswani et al.), not $1/\\sqrt{h}$",
          "flops-seed001"),
    Claim("001", "激活值 (activations)", "self-attention: $8bsh + 5bs^2a$ bytes (GPT-3)",
          lambda: 8 * _SBH + 5 * _AS2B,
          lambda: _act("qkv_input", "q", "k", "v", "softmax_output", "attn_dropout_mask", "attn_dropout_output"),
          "", "mem-act-seeds"),
    Claim("001", "激活值 (activations)", "attention with its linear layer and dropout: $11bsh + 5bs^2a$ (GPT-3)",
          lambda: 11 * _SBH + 5 * _AS2B,
          lambda: _act(*[t for t in _ATTN_TERMS if t != "attn_norm_input"]), "", "mem-act-seeds"),
    Claim("001", "激活值 (activations)", "MLP without its LayerNorm: $19bsh$ (GPT-3)", lambda: 19 * _SBH,
          lambda: _act(*[t for t in _MLP_TERMS if t != "mlp_norm_input"]), "", "mem-act-seeds"),
    Claim("001", "激活值 (activations)", "a LayerNorm keeps $bsh + 2bs \\approx bsh$ bytes (GPT-3)",
          lambda: _SBH, lambda: _act("attn_norm_input"),
          "a LayerNorm must keep its input, $2bsh$ bytes in 16 bits; $\\mu, \\sigma^2$ are only $2bs$ values",
          "mem-act-seeds"),
    Claim("001", "大模型缩放定律推导",
          "self-attention FLOPs $bs(8h^2 + 5sa + 2sh)$, matmul part $bs(8h^2 + 2sh)$ (GPT-3)",
          lambda: _B * _S * (8 * 12288**2 + 2 * _S * 12288),
          lambda: _fb("q_proj") + _fb("k_proj") + _fb("v_proj") + _fb("attn_scores") + _fb("attn_values"),
          "follows from the $QK^T$ typo: $bs(6h^2 + 4sh)$", "flops-seed001"),
    Claim("001", "大模型缩放定律推导", "training FLOPs of a batch: $3L(\\dots) \\approx 6L \\cdot 13bsh^2$ (GPT-3)",
          lambda: 6 * 96 * 13 * _SBH * 12288, lambda: training_flops(_gpt3(), _B, _S),
          "13 instead of 12 (the double-counted $W_O$ and the $QK^T$ typo) overstates the layers by $1/12$; "
          "the LM head is left out", "scaling-laws-seed001"),
    Claim("001", "大模型缩放定律推导", "$N = (v + 2)h + (4 + 13h)hL \\approx 13h^2L$ (GPT-3 175B)",
          lambda: _seed001_N(_gpt3()), lambda: param_count(_gpt3()),
          "the table counts the output projection twice (4h^2 for 'Self Attention' already includes $W_O$, "
          "then $h^2$ again for 'Linear'): $13h^2$ per layer instead of $12h^2$", "params-seed001"),
    Claim("001", "大模型缩放定律推导", "$QK^T$ costs $2bh^2s$ FLOPs (GPT-3)",
          lambda: 2 * _B * 12288**2 * _S, lambda: flops_breakdown(_gpt3(), _B, _S)["attn_scores"] // 96,
          "a typo in the shapes: $[b,s,h] \\times [b,h,s]$ costs $2bs^2h$", "flops-seed001"),
    Claim("001", "大模型缩放定律推导", "matmul FLOPs of a layer: $26bsh^2 + 2bs^2h$ (GPT-3)",
          lambda: 26 * _B * _S * 12288**2 + 2 * _B * _S**2 * 12288,
          lambda: layer_forward_flops(_gpt3(), _B, _S) // 96,
          "follows from the $QK^T$ typo: $24bsh^2 + 4bs^2h$", "flops-seed001"),
    Claim("001", "大模型缩放定律推导", "$C_\\text{token} \\approx 6N$ (GPT-3, per token)",
          lambda: 6 * param_count(_gpt3()), lambda: training_flops(_gpt3(), _B, _S) / (_B * _S),
          "an approximation: the attention-score and logit FLOPs are left out; seed 001's own path to it "
          "overcounts both $N$ and $C$ by $13/12$", "scaling-laws-seed001", 0.05),
    # ---------------------------------------------------------------- seed 002
    Claim("002", "参数量方面", "one decoder layer: $12h^2 + 13h$ (GPT-2)",
          lambda: 12 * 768**2 + 13 * 768, lambda: layer_param_count(_gpt2()), "", "params-shapes"),
    Claim("002", "参数量方面", "Qwen-1.8B by $l(12h^2 + 13h) + Vh$ with $l = 24$, $h = 2048$, $V = 151851$: 1.92B",
          lambda: 1.92e9, lambda: 24 * (12 * 2048**2 + 13 * 2048) + 151851 * 2048,
          "arithmetic: evaluated with these numbers the formula gives far less (the correct column)",
          "params-seed002"),
    Claim("002", "参数量方面", "Qwen-1.8B has about 1.92B parameters",
          lambda: 1.92e9, lambda: param_count(preset("qwen-1.8b")),
          "Qwen uses a SwiGLU MLP (three $h \\times d_\\text{ff}$ matrices), an untied LM head and a "
          "vocabulary padded to a multiple of 128", "params-seed002", 0.01),
    Claim("002", "显存占用 (memory)", "a 7B model in fp16 needs $7 \\times 2 = 14$ GB", lambda: 14e9,
          lambda: 2 * 7e9, "", "mem-units"),
    Claim("002", "显存占用", "inference needs only the weights: Llama-2-7B in fp16, one sequence of 4096 tokens",
          lambda: weight_bytes(preset("llama2-7b"), "fp16"),
          lambda: weight_bytes(preset("llama2-7b"), "fp16") + kv_cache_bytes(preset("llama2-7b"), 1, 4096),
          "generation also keeps the KV cache, $2 L b s a_\\text{kv} d_\\text{head}$ values, which grows with "
          "batch and context", "mem-inference"),
    Claim("002", "显存占用", "fp16 training with Adam: $20\\Phi$ bytes", lambda: 20,
          lambda: training_state_bytes(1, "mixed-fp32-grads", "adam")["total"],
          "", "mem-reconcile"),
    Claim("002", "显存占用", "7B: $20 \\times 7 \\times 10^9 / 1024^3 = 130$ GB", lambda: 130e9,
          lambda: 20 * 7e9, "the division by $1024^3$ gives GiB, not GB", "mem-units", 0.0),
    Claim("002", "计算量方面", "attention scale $1/\\sqrt{h}$ in $\\mathrm{softmax}(QK^T/\\sqrt{h})$ (GPT-3)",
          lambda: 1 / math.sqrt(12288), lambda: 1 / math.sqrt(128),
          "the scale is $1/\\sqrt{d_\\text{head}}$ (Vaswani et al.), not $1/\\sqrt{h}$", "flops-layer"),
    Claim("002", "计算量方面", "$Q, K, V$: $3 \\times 2bLh^2 = 6bLh^2$ (GPT-3)", lambda: 6 * _SBH * 12288,
          lambda: _fb("q_proj") + _fb("k_proj") + _fb("v_proj"), "", "flops-layer"),
    Claim("002", "计算量方面", "$QK^T$ and $S \\cdot V$: $2bL^2h$ each (GPT-3)", lambda: 4 * _B * _S**2 * 12288,
          lambda: _fb("attn_scores") + _fb("attn_values"), "", "flops-layer"),
    Claim("002", "计算量方面", "self attention: $8bLh^2 + 4bL^2h$ (GPT-3)",
          lambda: 8 * _SBH * 12288 + 4 * _B * _S**2 * 12288,
          lambda: sum(_fb(k) for k in ("q_proj", "k_proj", "v_proj", "attn_scores", "attn_values", "o_proj")),
          "", "flops-layer"),
    Claim("002", "计算量方面", "MLP: $16bLh^2$ (GPT-3)", lambda: 16 * _SBH * 12288,
          lambda: _fb("mlp_up") + _fb("mlp_down"), "", "flops-layer"),
    Claim("002", "计算量方面", "logits: $2bLh|V|$ (GPT-3)", lambda: 2 * _SBH * 50257,
          lambda: flops_breakdown(_gpt3(), _B, _S)["lm_head"], "", "flops-layer"),
    Claim("002", "计算量方面", "each entry of $AB$ needs $p$ additions and $p$ multiplications: $2mnp$ "
          "($m, n, p = 3, 4, 5$, inner dimension $p$)", lambda: 2 * 3 * 4 * 5,
          lambda: matmul_flops(3, 5, 4, exact=True),
          "a dot product of length $p$ needs $p - 1$ additions; $2mnp$ is the multiply-add convention",
          "matmul-cost-exact"),
    Claim("002", "计算量方面", "one layer: $24bLh^2 + 4bL^2h$ ($L$ = sequence length; GPT-3)",
          lambda: 24 * _B * _S * 12288**2 + 4 * _B * _S**2 * 12288,
          lambda: layer_forward_flops(_gpt3(), _B, _S) // 96, "", "flops-layer"),
    Claim("002", "参数量和计算量的关系", "forward: 2 FLOPs per parameter per token (GPT-3)",
          lambda: 2, lambda: forward_flops(_gpt3(), _B, _S) / (param_count(_gpt3()) * _B * _S),
          "approximation: ignores the attention products and counts the embedding as free", "flops-per-token",
          0.05),
    Claim("002", "参数量和计算量的关系",
          "GPT-3: $6 \\times 174600\\text{M} \\times 300\\text{B} = 3.143 \\times 10^{23}$ FLOPs",
          lambda: 3.143e23, lambda: 6 * 174600e6 * 300e9, "rounded to four digits", "flops-gpt3", 1e-3),
    Claim("002", "训练时间预估",
          "$8 \\cdot 300\\text{B} \\cdot 174600\\text{M} / (1024 \\cdot 312\\text{T} \\cdot 0.45) "
          "\\approx 2921340$ s", lambda: 2921340, lambda: _seed002_train_seconds(174600e6),
          "the printed result uses $175 \\times 10^9$ parameters, not the $174600\\text{M}$ written",
          "flops-megatron"),
    Claim("002", "训练时间预估", "$\\approx 34$ days", lambda: 34, lambda: _seed002_train_seconds(174600e6) / 86400,
          "rounded to whole days", "flops-megatron", 0.02, "days"),
    # ---------------------------------------------------------------- seed 003
    Claim("003", "1.1 BERT类模型", "BERT attention weights ($QKV$ and dense): $4h^2$ per layer", lambda: 4 * 768**2,
          lambda: param_breakdown(preset("bert-base-chinese"))["attention"] // 12, "", "params-seed003"),
    Claim("003", "1.1 BERT类模型", "BERT FFN: $h \\cdot 4h + 4h \\cdot h + 2h = 8h^2 + 2h$ per layer",
          lambda: 8 * 768**2 + 2 * 768,
          lambda: _per_layer(preset("bert-base-chinese"), "mlp", "mlp_bias") + 2 * 768,
          "omits the FFN's biases ($4h + h$)", "params-seed003", 0.01),
    Claim("003", "1.1 BERT类模型", "BERT layer: $12h^2 + 4h$ parameters",
          lambda: 12 * 768**2 + 4 * 768, lambda: layer_param_count(preset("bert-base-chinese")),
          "omits the $9h$ biases of the six linear layers", "params-seed003", 0.01),
    Claim("003", "1.2 BERT 模型结构", "BERT (vocabulary 21128): $12(12h^2 + 4h) + vh = 101{,}197{,}824$",
          lambda: 101197824, lambda: param_count(preset("bert-base-chinese")),
          "omits position and token-type embeddings, the embedding LayerNorm, all biases and the pooler",
          "params-seed003"),
    Claim("003", "1.2 BERT 模型结构", "the official 110M is this model (gap: classifier and biases)",
          lambda: 110e6, lambda: param_count(preset("bert-base-chinese")),
          "110M is the English BERT-base (larger vocabulary); the gap is mostly the vocabulary, and BERT's "
          "110M includes no classifier", "params-seed003", 0.01),
    Claim("003", "2.1 LLAMA-65B 参数量", "LLaMA layer: $4h^2 + 3hh_\\text{swi} + 4h$",
          lambda: 4 * 8192**2 + 3 * 8192 * 22016 + 4 * 8192, lambda: layer_param_count(preset("llama-65b")),
          "RMSNorm has a scale and no shift: $2h$ per layer, not $4h$", "params-seed003-llama", 1e-4),
    Claim("003", "2.2 LLAMA-65B 模型结构", "LLaMA-65B: 65,024,819,200 parameters",
          lambda: 65024819200, lambda: param_count(preset("llama-65b")),
          "omits the untied LM head ($Vh$) and the final norm; overcounts the norms by $2h$ per layer",
          "params-seed003-llama", 0.0),
    # ---------------------------------------------------------------- seed 004
    Claim("004", "2. 自注意力层", "multi-head attention: $h \\cdot 3 (d \\cdot d_k) + d \\cdot d$ (GPT-2)",
          lambda: 12 * 3 * 768 * 64 + 768**2, lambda: _per_layer(_gpt2(), "attention"),
          "", "params-seed004"),
    Claim("004", "3. 前馈网络层", "feed-forward network: $d \\cdot d_{ff} + d_{ff} \\cdot d$ (GPT-2)",
          lambda: 2 * 768 * 3072, lambda: _per_layer(_gpt2(), "mlp", "mlp_bias"),
          "omits the biases ($d_{ff} + d$)", "params-seed004", 0.01),
    Claim("004", "1. 输入嵌入层", "embedding: $V \\times d$ (GPT-2)", lambda: 50257 * 768,
          lambda: param_breakdown(_gpt2())["token_embedding"], "", "params-seed004"),
    Claim("004", "4. 层规范化", "layer normalization: $L \\times 2d$ (GPT-2)", lambda: 12 * 2 * 768,
          lambda: param_breakdown(_gpt2())["layer_norms"], "a pre-LN or post-LN layer has two norms: $4d$",
          "params-seed004"),
    Claim("004", "汇总", "total: $Vd + L(4d^2) + L(2dd_{ff}) + 2Ld + dC$ with $C = V$ (GPT-2)",
          lambda: _seed004_params(_gpt2()), lambda: param_count(_gpt2()),
          "counts the tied output embedding twice and omits biases, position embeddings, a norm per layer "
          "and the final norm", "params-seed004"),
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
    "activation bytes of one GPT-3 layer ($b = 1$, $s = 2048$)": lambda: _act_per_layer(_gpt3(), 1, _S),
    "a GB": lambda: 10**9,
}
