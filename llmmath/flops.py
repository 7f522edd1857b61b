"""FLOPs of a transformer's forward and backward pass, and the training time they imply.

Derived in chapter :doc:`/chapters/transformer-flops`. Convention: a product of an ``m x k`` and a
``k x n`` matrix costs ``2 m k n`` FLOPs (:func:`llmmath.matmul_flops`); only matrix multiplies
are counted, as ``torch.utils.flop_counter.FlopCounterMode`` does, and ``tests/test_flops.py``
checks the counts against it exactly for every decoder family llmmath supports.

Symbols: ``b`` batch, ``s`` sequence length, ``T = b s`` tokens, ``L`` layers, ``h`` hidden size,
``e`` embedding width, ``a`` query heads, ``a_kv`` key/value heads, ``d`` head dimension,
``d_q = a d``, ``d_kv = a_kv d``, ``f`` MLP width, ``E`` experts of which ``k`` per token, ``V``
vocabulary.
"""

from __future__ import annotations

import numbers
from collections import Counter
from typing import Any

import numpy as np

from ._validate import (
    check_array_positive,
    check_bool,
    check_choice,
    check_fraction,
    check_int,
    check_positive,
)
from .config import TransformerConfig
from .params import non_embedding_param_count

__all__ = [
    "FLOPS_KEYS",
    "ACTIVATION_OPS",
    "attention_pairs",
    "ATTENTION_IMPLEMENTATIONS",
    "LAYER_KEYS",
    "flops_breakdown",
    "forward_flops",
    "layer_forward_flops",
    "training_flops",
    "training_flops_per_token",
    "approx_training_flops",
    "attention_flops_share",
    "kaplan_forward_flops_per_token",
    "megatron_training_flops",
    "palm_training_flops_per_token",
    "nonmatmul_flops",
    "training_days",
    "training_seconds",
    "mfu",
    "hfu",
]

SECONDS_PER_DAY = 86_400

#: The keys of :func:`flops_breakdown`, in order (every key is always present, 0 when absent).
FLOPS_KEYS = (
    "embedding",
    "embedding_projection",
    "q_proj",
    "k_proj",
    "v_proj",
    "attn_scores",
    "attn_values",
    "o_proj",
    "router",
    "mlp_gate",
    "mlp_up",
    "mlp_down",
    "shared_experts",
    "pooler",
    "lm_head",
)

#: The keys of :data:`FLOPS_KEYS` computed inside the transformer layers (what activation
#: recomputation re-runs).
LAYER_KEYS = FLOPS_KEYS[FLOPS_KEYS.index("q_proj") : FLOPS_KEYS.index("shared_experts") + 1]


def _check_cfg(cfg: Any) -> TransformerConfig:
    if not isinstance(cfg, TransformerConfig):
        raise TypeError(f"cfg must be a TransformerConfig, got {type(cfg).__name__}")
    return cfg


def _check_shape(cfg: TransformerConfig, batch: Any, seq: Any) -> tuple[int, int]:
    batch = check_int("batch", batch)
    seq = check_int("seq", seq)
    if cfg.position == "learned" and seq > cfg.max_position:
        raise ValueError(
            f"seq must be an integer <= {cfg.max_position} (the learned position table of "
            f"{cfg.name!r} has {cfg.max_position} positions), got {seq}"
        )
    return batch, seq


def _check_decoder_seq(cfg: TransformerConfig, decoder_seq: Any) -> int | None:
    if cfg.is_encoder_decoder:
        if decoder_seq is None:
            raise ValueError(f"decoder_seq is required for the encoder-decoder {cfg.name!r}: seq is the "
                             "encoder's input length, decoder_seq the decoder's")
        return check_int("decoder_seq", decoder_seq)
    if decoder_seq is not None:
        raise ValueError(f"decoder_seq is only for encoder-decoders; {cfg.name!r} has no encoder stack")
    return None


def attention_pairs(
    seq: int, *, causal: bool = True, window: int | None = None, skip_masked: bool = False, tile: int | None = None
) -> int:
    """Query-key pairs one head scores for one sequence of ``seq`` tokens.

    Eager attention computes the full ``s x s`` matrix and masks it afterwards: ``s^2``, whatever
    the mask. With ``skip_masked`` only the pairs the mask keeps: ``s (s + 1) / 2`` under a causal
    mask; with a sliding window of ``w`` keys (query ``i`` sees keys ``i - w + 1 .. i``, as
    ``transformers``' sliding-window mask) ``sum_i min(i + 1, w) = s (s + 1) / 2`` for ``s <= w``
    and ``w (w + 1) / 2 + (s - w) w`` beyond. A bidirectional (encoder) layer masks nothing.

    A tiled kernel (FlashAttention) skips whole ``B x B`` tiles, not single pairs: with
    ``tile=B`` (and ``skip_masked``) the count is the area of every tile of the ``s x s`` grid of
    tiles (the last row and column of tiles clipped at ``s``) that holds at least one kept pair.
    Query tile ``I`` (rows ``I B ..``, ``r_I = min(B, s - I B)`` of them) meets key tiles
    ``J_lo .. I`` with ``J_lo = max(0, floor((I B - w + 1) / B))`` (``J_lo = 0`` without a
    window), so it costs ``r_I (I B + r_I - J_lo B)``; causal without a window and ``B | s`` this
    is ``B^2 n (n + 1) / 2`` for ``n = s / B`` tiles, a fraction ``(s + B) / (2 s)`` of ``s^2``.
    Derived in chapter :doc:`/chapters/transformer-flops`.
    """
    s = check_int("seq", seq)
    check_bool("causal", causal)
    check_bool("skip_masked", skip_masked)
    if window is not None:
        window = check_int("window", window)
    if tile is not None:
        tile = check_int("tile", tile)
        if not skip_masked:
            raise ValueError("tile is the block size of a kernel that skips masked tiles: it needs skip_masked=True")
    if not skip_masked or not causal:
        return s * s
    if tile is None:
        if window is None or s <= window:
            return s * (s + 1) // 2
        return window * (window + 1) // 2 + (s - window) * window
    B, total = tile, 0
    for start in range(0, s, B):  # one query tile, rows start .. start + rows - 1
        rows = min(B, s - start)
        first = 0 if window is None else max(0, (start - window + 1) // B)
        total += rows * (start + rows - first * B)
    return total


def _attention_flops(cfg: TransformerConfig, b: int, T_q: int, T_kv: int, pairs: int) -> dict[str, int]:
    """The attention keys of one layer: ``T_q`` query tokens, ``T_kv`` key/value tokens (they
    differ in cross-attention), ``pairs`` scored query-key pairs per head and sequence."""
    h, a, d_qk, d_v = cfg.hidden_size, cfg.n_heads, cfg.head_dim, cfg.v_head_dim
    if cfg.kv_lora_rank:  # MLA: down to the latents, up to the heads
        r_q, r_kv, d_r = cfg.q_lora_rank, cfg.kv_lora_rank, cfg.rope_head_dim
        q = 2 * T_q * (h * r_q + r_q * a * d_qk) if r_q else 2 * T_q * h * a * d_qk
        k = 2 * T_kv * h * (r_kv + d_r) + 2 * T_kv * r_kv * a * (d_qk - d_r)
        v = 2 * T_kv * r_kv * a * d_v
    else:
        q, k, v = 2 * T_q * h * cfg.q_dim, 2 * T_kv * h * cfg.kv_dim, 2 * T_kv * h * cfg.v_dim
    return {"q_proj": q, "k_proj": k, "v_proj": v, "attn_scores": 2 * b * a * pairs * d_qk,
            "attn_values": 2 * b * a * pairs * d_v, "o_proj": 2 * T_q * a * d_v * h}


def _mlp_flops(cfg: TransformerConfig, mlp: str, T: int) -> dict[str, int]:
    """The MLP keys of one layer of ``T`` tokens: a dense MLP, or router + ``k`` routed experts
    per token + shared experts (+ their gate)."""
    h = cfg.hidden_size
    gated = cfg.ffn_kind == "gated"
    if mlp == "dense":
        f = cfg.ffn_size
        return {"mlp_gate": 2 * T * h * f * gated, "mlp_up": 2 * T * h * f, "mlp_down": 2 * T * f * h}
    f, k, n_in = cfg.expert_ffn_size, cfg.experts_per_token, 2 if gated else 1
    return {"router": 2 * T * h * (cfg.n_experts + cfg.shared_expert_gate),
            "mlp_gate": 2 * T * h * f * k * gated, "mlp_up": 2 * T * h * f * k, "mlp_down": 2 * T * f * h * k,
            "shared_experts": 2 * T * h * cfg.shared_ffn_size * (n_in + 1)}


def flops_breakdown(
    cfg: TransformerConfig, batch: int, seq: int, *, skip_masked: bool = False, tile: int | None = None,
    decoder_seq: int | None = None,
) -> dict[str, int]:
    """Exact matrix-multiply FLOPs of one forward pass, per component, summed over all layers.

    With ``T = b s`` tokens (keys in the order of :data:`FLOPS_KEYS`), per layer:

    - ``q_proj`` ``2 T h d_q``; ``k_proj`` ``2 T h d_kv``; ``v_proj`` ``2 T h d_v`` (GQA/MQA
      shrink ``d_kv`` and ``d_v``). MLA: ``q_proj`` ``2T (h r_q + r_q a d_head)``, ``k_proj`` the
      latent and shared rotary key ``2T h (r_kv + d_r)`` plus the keys' decompression
      ``2T r_kv a (d_head - d_r)``, ``v_proj`` ``2T r_kv a d_v``.
    - ``attn_scores`` ``2 b a P d_head`` and ``attn_values`` ``2 b a P d_v`` with ``P`` the
      query-key pairs of :func:`attention_pairs`: ``s^2`` as eager attention computes them (also in
      sliding-window layers: the mask is applied after the product); with ``skip_masked=True`` only
      the pairs the causal or sliding-window mask keeps, or with ``tile=B`` as well the whole
      ``B x B`` tiles a tiled kernel computes.
    - ``o_proj``: ``2 T a d_v h``.
    - dense MLP: ``mlp_up``, ``mlp_down`` (and ``mlp_gate`` if gated) ``2 T h d_ff`` each.
    - mixture of experts: ``router`` ``2 T h E`` (+ ``2 T h`` for a shared-expert gate); the routed
      experts ``2 T h d_e k`` per matrix (a token passes through its ``k`` experts only);
      ``shared_experts`` ``2 T h d_s m`` (every token).

    and once: ``embedding`` 0 (a table lookup multiplies nothing); ``embedding_projection``
    ``2 * 2 T e h`` when ``e != h`` (OPT-350m); ``pooler`` ``2 b h^2`` (BERT's pooler, first token
    only); ``lm_head`` ``2 T e V`` (logits at every position), 0 for an encoder (``BertModel``).

    An encoder-decoder (T5) takes ``seq`` tokens into the encoder and ``decoder_seq`` into the
    decoder: the encoder layers see ``b seq`` tokens (bidirectional, ``seq^2`` pairs), the decoder
    layers ``b decoder_seq`` (causal) plus a cross-attention whose queries are the decoder's tokens
    and whose keys and values are projected from the encoder's output in every decoder layer
    (``seq x decoder_seq`` pairs); the LM head runs on the decoder's tokens.
    Bias additions, norms, softmax and activations are not matrix multiplies (see
    :func:`nonmatmul_flops`). Derived in chapter :doc:`/chapters/transformer-flops`.
    """
    cfg = _check_cfg(cfg)
    b, s = _check_shape(cfg, batch, seq)
    check_bool("skip_masked", skip_masked)
    if skip_masked and not cfg.causal:
        raise ValueError("skip_masked=True needs a causal model (cfg.causal is False)")
    if tile is not None and not skip_masked:
        raise ValueError("tile is the block size of a kernel that skips masked tiles: it needs skip_masked=True")
    s_dec = _check_decoder_seq(cfg, decoder_seq)
    s_main = s if s_dec is None else s_dec  # the tokens of the n_layers (decoder) layers
    T = b * s_main
    h, e, V = cfg.hidden_size, cfg.embedding_dim, cfg.vocab_size
    out = dict.fromkeys(FLOPS_KEYS, 0)
    out["embedding_projection"] = 2 * (2 * T * e * h) if e != h else 0

    def add(part: dict[str, int], count: int) -> None:
        for key, value in part.items():
            out[key] += count * value

    for spec, count in cfg.layer_counts.items():
        window = cfg.sliding_window if spec.attention == "sliding" else None
        pairs = attention_pairs(s_main, causal=cfg.causal, window=window, skip_masked=skip_masked, tile=tile)
        add(_attention_flops(cfg, b, T, T, pairs), count)
        if s_dec is not None:  # cross-attention over the encoder's b * s outputs
            add(_attention_flops(cfg, b, T, b * s, s_dec * s), count)
        add(_mlp_flops(cfg, spec.mlp, T), count)
    if s_dec is not None:  # the encoder stack: bidirectional, dense
        add(_attention_flops(cfg, b, b * s, b * s, s * s), cfg.n_encoder_layers)
        add(_mlp_flops(cfg, "dense", b * s), cfg.n_encoder_layers)
    out["pooler"] = 2 * b * h * h if cfg.pooler else 0
    out["lm_head"] = 2 * T * e * V if cfg.causal else 0  # an encoder (BertModel) has no LM head
    return out


def forward_flops(
    cfg: TransformerConfig, batch: int, seq: int, *, skip_masked: bool = False, tile: int | None = None,
    decoder_seq: int | None = None,
) -> int:
    """Exact matrix-multiply FLOPs of one forward pass of ``batch`` sequences of ``seq`` tokens.

    The sum of :func:`flops_breakdown`. For a GPT-style model (``d_q = d_kv = h``, ``f = 4h``)
    this is ``L (24 b s h^2 + 4 b s^2 h) + 2 b s h V``. Derived in chapter
    :doc:`/chapters/transformer-flops`.
    """
    bd = flops_breakdown(cfg, batch, seq, skip_masked=skip_masked, tile=tile, decoder_seq=decoder_seq)
    return sum(bd.values())


def layer_forward_flops(
    cfg: TransformerConfig, batch: int, seq: int, *, skip_masked: bool = False, tile: int | None = None,
    decoder_seq: int | None = None,
) -> int:
    """Matrix-multiply FLOPs of the forward pass of the transformer layers only (the part
    activation recomputation runs again): the :data:`LAYER_KEYS` of :func:`flops_breakdown`.
    Derived in chapter :doc:`/chapters/transformer-flops`.
    """
    bd = flops_breakdown(cfg, batch, seq, skip_masked=skip_masked, tile=tile, decoder_seq=decoder_seq)
    return sum(bd[key] for key in LAYER_KEYS)


#: How the attention core ``softmax(Q K^T) V`` is computed: ``eager`` (the probabilities are
#: stored for the backward pass) or ``fused`` (FlashAttention / PyTorch's SDPA kernels: the scores
#: are recomputed in the backward pass).
ATTENTION_IMPLEMENTATIONS = ("eager", "fused")


def training_flops(
    cfg: TransformerConfig, batch: int, seq: int, recompute: bool = False, *, skip_masked: bool = False,
    tile: int | None = None, decoder_seq: int | None = None, attention: str = "eager",
) -> int:
    """Matrix-multiply FLOPs of one training step: forward + backward (+ recomputation).

    The backward pass of ``Y = X W`` computes ``dX = dY W^T`` and ``dW = X^T dY``, two products of
    the forward's size, so backward = 2 x forward for every product whose operands both need a
    gradient (all of them in a transformer): ``3 F``. With ``recompute=True`` (full activation
    checkpointing of every layer, as Megatron-LM and Hugging Face's gradient checkpointing do) the
    layers' forward runs once more during the backward: ``3 F + F_layers`` (the LM head is not
    recomputed).

    ``attention="fused"`` counts a fused attention kernel (FlashAttention, PyTorch's
    ``scaled_dot_product_attention``), which keeps no ``s x s`` probabilities and recomputes the
    scores ``Q K^T`` in its backward pass: the backward of the attention core is then
    ``2 b a P (3 d_head + 2 d_v)`` instead of ``2 b a P (2 d_head + 2 d_v)``, as PyTorch's
    registered formulas ``sdpa_flop_count`` / ``sdpa_backward_flop_count`` count it (``5/2`` of the
    forward when ``d_v = d_head``), i.e. ``attn_scores`` of :func:`flops_breakdown` once more.
    Derived in chapter :doc:`/chapters/transformer-flops`.
    """
    check_bool("recompute", recompute)
    check_choice("attention", attention, ATTENTION_IMPLEMENTATIONS)
    bd = flops_breakdown(cfg, batch, seq, skip_masked=skip_masked, tile=tile, decoder_seq=decoder_seq)
    fwd = sum(bd.values())
    extra = sum(bd[key] for key in LAYER_KEYS) if recompute else 0
    fused = bd["attn_scores"] if attention == "fused" else 0
    return 3 * fwd + extra + fused


def training_flops_per_token(
    model: TransformerConfig | int | float, *, recompute: bool = False, seq: int | None = None,
    decoder_seq: int | None = None, attention: str = "eager", skip_masked: bool = False, tile: int | None = None,
) -> float:
    """Training FLOPs per token.

    ``model`` a parameter count ``N``: ``6 N`` (``8 N`` with ``recompute``). ``model`` a
    :class:`TransformerConfig`: the exact ``training_flops(cfg, 1, seq, recompute, ...) / seq``
    (``seq`` is then required; an encoder-decoder also needs ``decoder_seq`` and counts per
    decoder token, the tokens its loss is computed on). ``attention``, ``skip_masked`` and
    ``tile`` are passed to :func:`training_flops` and need a config. Derived in chapter
    :doc:`/chapters/transformer-flops`.
    """
    check_bool("recompute", recompute)
    if isinstance(model, TransformerConfig):
        if seq is None:
            raise ValueError(
                "seq is required when model is a TransformerConfig (FLOPs per token depend on seq)"
            )
        seq = check_int("seq", seq)
        flops = training_flops(model, 1, seq, recompute=recompute, decoder_seq=decoder_seq, attention=attention,
                               skip_masked=skip_masked, tile=tile)
        return flops / (decoder_seq if model.is_encoder_decoder else seq)
    if isinstance(model, bool) or not isinstance(model, numbers.Real):
        raise TypeError(f"model must be a TransformerConfig or a parameter count, got {type(model).__name__}")
    check_choice("attention", attention, ATTENTION_IMPLEMENTATIONS)
    if attention != "eager" or skip_masked or tile is not None:
        raise ValueError("attention, skip_masked and tile describe the attention products: they need a "
                         "TransformerConfig, not a parameter count (6N has no attention term)")
    n = check_positive("model", model)
    return (8 if recompute else 6) * n


def approx_training_flops(n_params: Any, n_tokens: Any, flops_per_param_token: Any = 6) -> Any:
    """``C = k N D``: training compute from parameters ``N`` and tokens ``D``.

    ``k = 6`` (forward 2 + backward 4 FLOPs per parameter per token), ``8`` with activation
    recomputation, ``2`` for a forward pass only. Accepts numpy arrays (broadcast); returns a float
    for scalar input. Derived in chapter :doc:`/chapters/transformer-flops`.
    """
    n = check_array_positive("n_params", n_params)
    d = check_array_positive("n_tokens", n_tokens)
    k = check_positive("flops_per_param_token", flops_per_param_token)
    c = k * n * d
    return float(c) if np.ndim(c) == 0 else c


def attention_flops_share(
    cfg: TransformerConfig, seq: int, *, skip_masked: bool = False, tile: int | None = None,
    decoder_seq: int | None = None,
) -> float:
    """Fraction of forward FLOPs spent in the two ``s x s`` attention products,
    ``(attn_scores + attn_values) / forward_flops``; for a GPT layer without the LM head
    ``4 s^2 h / (24 s h^2 + 4 s^2 h) = s / (6 h + s)``. ``skip_masked``, ``tile`` and
    ``decoder_seq`` as in :func:`flops_breakdown`. Derived in chapter
    :doc:`/chapters/transformer-flops`.
    """
    bd = flops_breakdown(cfg, 1, seq, skip_masked=skip_masked, tile=tile, decoder_seq=decoder_seq)
    return (bd["attn_scores"] + bd["attn_values"]) / sum(bd.values())


def kaplan_forward_flops_per_token(cfg: TransformerConfig, seq: int) -> int:
    """Kaplan et al.'s forward FLOPs per token, ``C_fwd = 2 N + 2 L s d_attn`` (their Table 1),
    with ``N`` the non-embedding parameters and ``d_attn = d_q``; it leaves out the LM head.
    Derived in chapter :doc:`/chapters/transformer-flops`.
    """
    cfg = _check_cfg(cfg)
    _, s = _check_shape(cfg, 1, seq)
    return 2 * non_embedding_param_count(cfg) + 2 * cfg.n_layers * s * cfg.q_dim


def megatron_training_flops(cfg: TransformerConfig, batch: int, seq: int) -> int:
    """Megatron-LM's FLOPs of one training iteration with recomputation (Narayanan et al. 2021),
    ``96 B s L h^2 (1 + s / (6 h) + V / (16 L h))``: GPT layers (``f = 4h``, ``d_q = d_kv = h``),
    forward 1 + backward 2 + recompute 1 for the layers, 3 for the logits. Returned as the exact
    integer it expands to, ``96 B s L h^2 + 16 B s^2 L h + 6 B s h V`` (the factored form's
    divisions would add a floating-point rounding error). Derived in chapter
    :doc:`/chapters/transformer-flops`.
    """
    cfg = _check_cfg(cfg)
    b, s = _check_shape(cfg, batch, seq)
    L, h, V = cfg.n_layers, cfg.hidden_size, cfg.vocab_size
    return 96 * b * s * L * h**2 + 16 * b * s**2 * L * h + 6 * b * s * h * V


def palm_training_flops_per_token(
    n_params: Any, n_layers: int, n_heads: int, head_dim: int, seq: int
) -> float:
    """PaLM's model FLOPs per token, ``6 N + 12 L H Q T`` (Chowdhery et al. 2022, appendix B):
    ``6 N`` for the weights and ``12 L H Q T`` for the attention products (``H`` heads of size
    ``Q``, sequence length ``T``, full ``T x T`` matrix, no recomputation).
    Derived in chapter :doc:`/chapters/transformer-flops`.
    """
    n = check_positive("n_params", n_params)
    L = check_int("n_layers", n_layers)
    H = check_int("n_heads", n_heads)
    Q = check_int("head_dim", head_dim)
    T = check_int("seq", seq)
    return 6 * n + 12 * L * H * Q * T


#: Elementwise operations per element assumed by :func:`nonmatmul_flops` (an exp, tanh or
#: division counts as one FLOP; real hardware spends more on a transcendental function).
ACTIVATION_OPS = {
    "gelu": 8, "gelu_new": 8, "gelu_fast": 8, "gelu_pytorch_tanh": 8, "quick_gelu": 4,
    "relu": 1, "silu": 4, "swish": 4, "tanh": 1,
}


def nonmatmul_flops(cfg: TransformerConfig, batch: int, seq: int) -> dict[str, int]:
    """ESTIMATE of the forward pass's elementwise FLOPs that are not matrix multiplies.

    Counted per element (one FLOP per add, multiply, exp, tanh or division):

    - ``softmax``: scale 1 + mask 1 (causal) + max 1 + subtract 1 + exp 1 + sum 1 + divide 1
      per attention score, ``b a s^2`` scores per layer (ALiBi adds 1).
    - ``norms``: 7 per element for LayerNorm (mean, center, square, sum, normalise, gain, bias),
      4 for RMSNorm, ``T h`` elements per norm.
    - ``activation``: :data:`ACTIVATION_OPS` per MLP hidden element (+1 for the gate product),
      ``T m`` elements per layer: ``m = d_ff`` in a dense layer, ``k d_e + d_s`` in a
      mixture-of-experts layer (routed and shared experts).
    - ``rotary``: 3 per query/key element (2 multiplies, 1 add), ``T (d_q + d_kv)`` per layer.
    - ``residual_and_bias``: 1 per element of every residual add and every bias add.
    - ``router``: per mixture-of-experts layer a softmax over the ``E`` router logits (5 per
      logit) and the weighted sum of the ``k`` experts' outputs (``k h``), per token.
    - ``loss``: 5 per logit (the log-softmax's max, subtract, exp, sum and subtraction of the
      log-sum-exp, as PyTorch's cross-entropy runs them; the loss then picks one logit per token), ``T V``.

    Not exact: kernels fuse, recompute and approximate these; the point is their size next to
    :func:`forward_flops`. Only the ``n_layers`` (decoder) layers are counted. Derived in chapter
    :doc:`/chapters/transformer-flops`.
    """
    cfg = _check_cfg(cfg)
    b, s = _check_shape(cfg, batch, seq)
    T = b * s
    L, h, V = cfg.n_layers, cfg.hidden_size, cfg.vocab_size
    scores = b * cfg.n_heads * s * s
    per_score = 6 + (1 if cfg.causal else 0) + (1 if cfg.position == "alibi" else 0)
    norm_ops = 7 if cfg.norm == "layernorm" else 4
    n_norms = L * cfg.norms_per_layer + int(cfg.final_norm) + int(cfg.embedding_norm)
    act = ACTIVATION_OPS[cfg.activation] + (1 if cfg.ffn_kind == "gated" else 0)
    n_in = 2 if cfg.ffn_kind == "gated" else 1
    counts = Counter(spec.mlp for spec in cfg.layers)
    k = cfg.experts_per_token
    moe_width = k * cfg.expert_ffn_size + cfg.shared_ffn_size  # hidden elements per token
    hidden = counts["dense"] * cfg.ffn_size + counts["moe"] * moe_width  # summed over the layers
    bias = L * ((cfg.q_dim + 2 * cfg.kv_dim) * cfg.qkv_bias + h * cfg.out_bias)
    bias += (n_in * hidden + (counts["dense"] + counts["moe"] * k) * h) * cfg.mlp_bias
    return {
        "softmax": L * scores * per_score,
        "norms": n_norms * T * h * norm_ops,
        "activation": T * hidden * act,
        "rotary": L * T * (cfg.q_dim + cfg.kv_dim) * 3 if cfg.position == "rotary" else 0,
        "residual_and_bias": T * (2 * h * L + bias) + (T * V if cfg.lm_head_bias else 0),
        "router": counts["moe"] * T * (5 * cfg.n_experts + k * h),
        "loss": 5 * T * V,
    }


def training_seconds(
    tokens: Any,
    model: TransformerConfig | int | float,
    n_gpus: int,
    peak_flops: float,
    utilization: float,
    *,
    recompute: bool = False,
    seq: int | None = None,
) -> float:
    """Wall-clock seconds to train on ``tokens`` tokens: ``tokens * c / (n_gpus * peak * u)`` with
    ``c`` = :func:`training_flops_per_token` (``6N`` / ``8N`` or the exact count of a config).
    Derived in chapter :doc:`/chapters/transformer-flops`.
    """
    t = check_positive("tokens", tokens)
    n = check_int("n_gpus", n_gpus)
    peak = check_positive("peak_flops", peak_flops)
    u = check_fraction("utilization", utilization)
    c = training_flops_per_token(model, recompute=recompute, seq=seq)
    return t * c / (n * peak * u)


def training_days(
    tokens: Any,
    model: TransformerConfig | int | float,
    n_gpus: int,
    peak_flops: float,
    utilization: float,
    *,
    recompute: bool = False,
    seq: int | None = None,
) -> float:
    """Days to train: :func:`training_seconds` / 86400.

    With ``model`` a parameter count ``N`` this is ``k N D / (n X u)`` with ``k = 6`` (``8`` with
    ``recompute``), Megatron-LM's ``8 T P / (n X)`` when ``u = 1`` and ``X`` is the achieved
    FLOP/s per GPU. Derived in chapter :doc:`/chapters/transformer-flops`.
    """
    return training_seconds(
        tokens, model, n_gpus, peak_flops, utilization, recompute=recompute, seq=seq
    ) / SECONDS_PER_DAY


def _utilization(tokens_per_second: Any, flops_per_token: float, n_gpus: int, peak_flops: float) -> float:
    tps = check_positive("tokens_per_second", tokens_per_second)
    n = check_int("n_gpus", n_gpus)
    peak = check_positive("peak_flops", peak_flops)
    return tps * flops_per_token / (n * peak)


def mfu(
    tokens_per_second: float, model: TransformerConfig | int | float, n_gpus: int, peak_flops: float,
    *, seq: int | None = None, decoder_seq: int | None = None,
) -> float:
    """Model FLOPs utilization (Chowdhery et al. 2022): the FLOPs the model needs per token
    *without* recomputation times the measured throughput, over the peak,
    ``tokens/s * training_flops_per_token(model) / (n_gpus * peak)``. The model's FLOPs do not
    depend on how a kernel computes them: the full ``s x s`` attention products (``P = s^2``),
    eager backward. Derived in chapter :doc:`/chapters/transformer-flops`.
    """
    c = training_flops_per_token(model, seq=seq, decoder_seq=decoder_seq)
    return _utilization(tokens_per_second, c, n_gpus, peak_flops)


def hfu(
    tokens_per_second: float, model: TransformerConfig | int | float, n_gpus: int, peak_flops: float,
    *, recompute: bool = True, seq: int | None = None, decoder_seq: int | None = None, attention: str = "eager",
    skip_masked: bool = False, tile: int | None = None,
) -> float:
    """Hardware FLOPs utilization: like :func:`mfu` but counting the FLOPs the hardware actually
    executes: recomputation included (``8N`` instead of ``6N`` per token with full recompute), a
    fused attention's recomputed scores (``attention="fused"``) and only the tiles a kernel that
    skips masked tiles computes (``skip_masked``, ``tile``), as :func:`training_flops` counts them.
    Derived in chapter :doc:`/chapters/transformer-flops`.
    """
    c = training_flops_per_token(model, recompute=recompute, seq=seq, decoder_seq=decoder_seq, attention=attention,
                                 skip_masked=skip_masked, tile=tile)
    return _utilization(tokens_per_second, c, n_gpus, peak_flops)
