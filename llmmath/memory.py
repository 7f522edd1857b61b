"""Memory of training and inference: weights, optimizer state, activations and the KV cache.

Every function returns **bytes** (exact integers); :mod:`llmmath.units` converts to GB (``10^9``)
or GiB (``2^30``). Optimizer state sizes come from :func:`llmmath.optim.state_bytes_per_param`
(one source of truth). Derived in chapter :doc:`/chapters/memory`.

Symbols: ``s`` sequence length, ``b`` micro-batch, ``h`` hidden size, ``a`` heads, ``a_kv`` key/value
heads, ``d_q = a d_head``, ``d_kv = a_kv d_head``, ``d_ff`` MLP width, ``L`` layers, ``t`` tensor-parallel
size, ``P`` parameters, ``w`` sliding window.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from typing import Any

from ._validate import check_bool, check_choice, check_int
from .config import TransformerConfig
from .optim import OPTIMIZERS, state_bytes_per_param
from .units import DTYPES, bytes_for

__all__ = [
    "PRECISIONS",
    "TRAINING_STATE_KEYS",
    "RECOMPUTE_MODES",
    "ACTIVATION_IMPLEMENTATIONS",
    "ACTIVATION_TERMS",
    "HF_ACTIVATION_SAVED_TENSORS",
    "weight_bytes",
    "training_state_bytes",
    "activation_bytes",
    "recompute_flops",
    "kv_cache_bytes",
    "MLA_CACHES",
    "largest_batch",
    "saved_tensors_by_node",
    "hf_layer_saved_bytes",
]

# ---------------------------------------------------------------------------------------------
# weights and training state
# ---------------------------------------------------------------------------------------------

#: Precision recipes for training (bytes per parameter of each copy, see training_state_bytes).
PRECISIONS: tuple[str, ...] = ("fp32", "mixed", "mixed-fp32-grads", "mixed-fp32-main-grads")

#: Keys of :func:`training_state_bytes`, in order (every key is always present).
TRAINING_STATE_KEYS: tuple[str, ...] = (
    "parameters", "gradients", "master_weights", "master_gradients", "optimizer_states", "total",
)

# precision -> (parameters, gradients, fp32 master weights, fp32 master gradients), bytes per parameter
_PRECISION_BYTES: dict[str, tuple[int, int, int, int]] = {
    "fp32": (4, 4, 0, 0),
    "mixed": (2, 2, 4, 0),
    "mixed-fp32-grads": (2, 2, 4, 4),
    "mixed-fp32-main-grads": (2, 4, 4, 0),
}


def _n_params(model: TransformerConfig | int, name: str = "n_params") -> int:
    if isinstance(model, TransformerConfig):
        from .params import param_count

        return param_count(model)
    if isinstance(model, bool) or not isinstance(model, numbers.Integral):
        raise TypeError(f"{name} must be a TransformerConfig or an integer >= 1, got {type(model).__name__}")
    return check_int(name, model)


def weight_bytes(model: TransformerConfig | int, dtype: str = "bf16") -> int:
    """Bytes of the weights alone: ``ceil(P * bits(dtype) / 8)``.

    ``model`` is a :class:`~llmmath.TransformerConfig` (``P`` = :func:`llmmath.params.param_count`)
    or a parameter count. ``dtype`` in fp32, fp16, bf16, fp8, int8, int4; the scales of quantized
    formats are ignored. Derived in chapter :doc:`/chapters/memory`.
    """
    check_choice("dtype", dtype, DTYPES)
    return bytes_for(_n_params(model, "model"), dtype)


def training_state_bytes(
    n_params: TransformerConfig | int,
    precision: str = "mixed",
    optimizer: str = "adam",
    *,
    zero_stage: int = 0,
    n_gpus: int = 1,
    optimizer_bytes_per_value: int = 4,
) -> dict[str, int]:
    """Bytes per GPU of the model state of training (everything except activations and buffers).

    Per parameter (``K`` = :func:`llmmath.optim.state_bytes_per_param`, 8 for Adam in fp32), as
    parameters + gradients + fp32 master weights + fp32 master gradients + optimizer states:

    - ``fp32``: 4 + 4 + 0 + 0 + K;
    - ``mixed``: 2 + 2 + 4 + 0 + K;
    - ``mixed-fp32-grads``: 2 + 2 + 4 + 4 + K;
    - ``mixed-fp32-main-grads``: 2 + 4 + 4 + 0 + K (the gradients themselves are fp32).

    ``mixed`` is ZeRO's ``16P`` for Adam; ``mixed-fp32-grads`` the ``20P`` of seed 002 and of
    Megatron-LM with fp16 weights; ``mixed-fp32-main-grads`` (bf16 weights, gradients accumulated
    in fp32, no 16-bit gradient) Megatron-LM's ``18P``. ZeRO over ``n_gpus`` data-parallel ranks
    splits, per rank, ``ceil(P / n_gpus)`` parameters' worth of: the optimizer states, master
    weights and master gradients (stage >= 1), the gradients (stage >= 2), the parameters (stage 3).
    Derived in chapter :doc:`/chapters/memory`.
    """
    P = _n_params(n_params)
    check_choice("precision", precision, PRECISIONS)
    check_choice("optimizer", optimizer, OPTIMIZERS)
    zero_stage = check_int("zero_stage", zero_stage, minimum=0, maximum=3)
    n_gpus = check_int("n_gpus", n_gpus)
    k = state_bytes_per_param(optimizer, check_int("optimizer_bytes_per_value", optimizer_bytes_per_value))
    p_b, g_b, mw_b, mg_b = _PRECISION_BYTES[precision]
    shard = -(-P // n_gpus)  # ceil: each rank holds an equal, padded partition

    def n(stage: int) -> int:
        return shard if zero_stage >= stage else P

    out = {
        "parameters": p_b * n(3),
        "gradients": g_b * n(2),
        "master_weights": mw_b * n(1),
        "master_gradients": mg_b * n(1),
        "optimizer_states": k * n(1),
    }
    out["total"] = sum(out.values())
    return out


# ---------------------------------------------------------------------------------------------
# activations
# ---------------------------------------------------------------------------------------------

RECOMPUTE_MODES: tuple[str, ...] = ("none", "selective", "full")
#: ``korthikanti``: the paper's convention (16-bit values, 1-byte masks, norm statistics
#: neglected); ``hf-gpt2`` and ``hf-llama``: exactly what PyTorch keeps for a ``transformers``
#: ``GPT2Block`` / ``LlamaDecoderLayer`` (eager attention, or SDPA's fused kernel with
#: ``flash_attention=True``).
ACTIVATION_IMPLEMENTATIONS: tuple[str, ...] = ("korthikanti", "hf-gpt2", "hf-llama")

#: Keys of ``activation_bytes(...)["terms"]``, in the forward order of one layer.
ACTIVATION_TERMS: tuple[str, ...] = (
    "layer_input", "attn_norm_input", "attn_norm_stats", "attn_norm_normalized", "qkv_input", "q", "k",
    "v", "softmax_output", "attn_dropout_mask", "attn_dropout_output", "attn_lse", "out_proj_input",
    "attn_residual_dropout_mask", "mlp_norm_input", "mlp_norm_stats", "mlp_norm_normalized", "fc1_input",
    "activation", "fc2_input", "mlp_dropout_mask",
)

#: Distinct ``b x s x d_ff`` storages that a ``transformers`` GPT-2 MLP keeps for backward, by
#: activation, counting the input of the second linear layer (measured with
#: ``torch.autograd.graph.saved_tensors_hooks``, PyTorch 2.13, transformers 5.23; see the chapter).
#: ``relu`` and ``tanh`` save their output, which *is* the next layer's input, hence 1; the
#: ``gelu_new``/``gelu_fast`` Python formulas keep several intermediates.
HF_ACTIVATION_SAVED_TENSORS: dict[str, int] = {
    "gelu": 2, "gelu_pytorch_tanh": 2, "gelu_new": 5, "gelu_fast": 8, "quick_gelu": 3,
    "relu": 1, "tanh": 1, "silu": 2, "swish": 2,
}

_FP32 = 4  # bytes of the values an implementation keeps in FP32 whatever the model's dtype


def _check_hf(cfg: TransformerConfig, implementation: str, recompute: str, flash: bool, dropout: bool,
              t: int, norm_stat_bytes: int) -> None:
    """Raise ``ValueError`` listing what the measured ``transformers`` layer does not cover."""
    problems = []
    if recompute != "none":
        problems.append(f"recompute={recompute!r} (only 'none')")
    if t != 1:
        problems.append(f"tensor_parallel={t} (only 1)")
    if flash and dropout:
        problems.append("flash_attention=True with dropout (PyTorch's CPU fused kernel takes no dropout: "
                        "SDPA then runs its unfused math path)")
    if cfg.parallel_block or cfg.is_moe or cfg.kv_lora_rank or cfg.qk_norm != "none" or cfg.norms_per_layer != 2:
        problems.append("a parallel block, mixture of experts, latent attention, QK-norm or norms_per_layer != 2")
    if implementation == "hf-gpt2":
        if cfg.ffn_kind != "mlp" or cfg.norm != "layernorm":
            problems.append("a non-GPT-2 block (needs ffn_kind='mlp', norm='layernorm')")
        if cfg.n_kv_heads != cfg.n_heads or cfg.q_dim != cfg.hidden_size:
            problems.append("n_kv_heads != n_heads or n_heads * head_dim != hidden_size")
    else:
        if cfg.ffn_kind != "gated" or cfg.norm != "rmsnorm" or cfg.position != "rotary":
            problems.append("a non-Llama layer (needs ffn_kind='gated', norm='rmsnorm', position='rotary')")
        if norm_stat_bytes != _FP32:
            problems.append(f"bytes_per_norm_stat={norm_stat_bytes} (Llama's RMSNorm computes in FP32 on "
                            "every device: 4)")
    if problems:
        raise ValueError(f"implementation={implementation!r} does not support " + "; ".join(problems))


def _layer_terms(cfg: TransformerConfig, b: int, s: int, B: int, M: int, N: int, recompute: str,
                 flash: bool, drop: bool, t: int, rep: int, implementation: str) -> dict[str, int]:
    """The terms of one layer (see :func:`activation_bytes`)."""
    h, a, dq, dkv, dff = cfg.hidden_size, cfg.n_heads, cfg.q_dim, cfg.kv_dim, cfg.ffn_size
    sb, s2ab = s * b, a * s * s * b
    terms = dict.fromkeys(ACTIVATION_TERMS, 0)
    if recompute == "full":
        terms["layer_input"] = B * sb * h // rep
        return terms
    keep_scores = recompute == "none" and not flash
    gated = cfg.ffn_kind == "gated"
    act_values = 3 * dff if gated else dff
    terms.update(
        attn_norm_input=B * sb * h // rep,
        qkv_input=B * sb * h // rep,
        q=B * sb * dq // t,
        k=B * sb * dkv // t,
        v=B * sb * dkv // t,
        softmax_output=B * s2ab // t if keep_scores else 0,
        attn_dropout_mask=M * s2ab // t if keep_scores and drop else 0,
        attn_dropout_output=B * s2ab // t if keep_scores and drop else 0,
        attn_lse=_FP32 * a * sb // t if flash else 0,
        out_proj_input=B * sb * dq // t,
        attn_residual_dropout_mask=M * sb * h // rep if drop else 0,
        mlp_norm_input=B * sb * h // rep,
        fc1_input=B * sb * h // rep,
        activation=B * sb * act_values // t,
        fc2_input=B * sb * dff // t,
        mlp_dropout_mask=M * sb * h // rep if drop else 0,
    )
    if implementation == "hf-gpt2":
        terms.update(attn_norm_stats=2 * N * sb, mlp_norm_stats=2 * N * sb,
                     activation=B * sb * (HF_ACTIVATION_SAVED_TENSORS[cfg.activation] - 1) * dff)
    elif implementation == "hf-llama":
        # RMSNorm upcasts its input to FP32 (kept), keeps 1/rms (FP32) and the normalised x (model
        # dtype) for its gain; eager attention multiplies by K and V repeated to all a heads (copies
        # of d_q), keeps the FP32 softmax and the probabilities the product with V reads (the
        # dropout output, or the 16-bit cast of the FP32 softmax: none in FP32); the SwiGLU MLP keeps
        # the activation's own tensors, its output and the up projection, then the product.
        norm = dict(input=_FP32 * sb * h, stats=_FP32 * sb, normalized=B * sb * h)
        terms.update({f"{block}_norm_{k}": v for block in ("attn", "mlp") for k, v in norm.items()})
        terms.update(
            softmax_output=_FP32 * s2ab if keep_scores else 0,
            attn_dropout_output=B * s2ab if keep_scores and (drop or B != _FP32) else 0,
            attn_residual_dropout_mask=0,
            mlp_dropout_mask=0,
            activation=B * sb * (HF_ACTIVATION_SAVED_TENSORS[cfg.activation] + 1) * dff,
        )
        if not flash and not (cfg.n_kv_heads == 1 and b == 1):
            # repeat_kv expands K and V to a heads; the batched matmul copies them unless the
            # expansion is a view it can use (a single sequence with a single K/V head: stride 0)
            terms.update(k=B * sb * dq, v=B * sb * dq)
    return terms


def activation_bytes(
    cfg: TransformerConfig,
    batch: int,
    seq: int,
    *,
    bytes_per_value: int = 2,
    bytes_per_mask: int = 1,
    recompute: str = "none",
    flash_attention: bool = False,
    dropout: bool = True,
    tensor_parallel: int = 1,
    sequence_parallel: bool = False,
    implementation: str = "korthikanti",
    bytes_per_norm_stat: int = 4,
) -> dict[str, Any]:
    """Bytes of activations saved for backward, per transformer layer and for the ``L`` layers.

    ``implementation="korthikanti"`` (Korthikanti et al. 2023, per layer, no parallelism, MHA,
    ``d_ff = 4h``, 2-byte values, 1-byte masks): ``34 s b h + 5 a s^2 b``, i.e. norm inputs
    ``2 x 2sbh``, QKV input ``2sbh``, ``Q, K, V`` ``6sbh``, softmax output ``2as^2b``, its dropout
    mask ``as^2b`` and output ``2as^2b``, projection input ``2sbh``, two dropout masks ``2 x sbh``,
    MLP input ``2sbh``, activation input and second-linear input ``2 x 8sbh``; norm statistics are
    neglected. The terms use ``d_q``, ``d_kv``, ``d_ff`` of ``cfg`` (GQA/MQA aware); a gated MLP keeps
    the gate projection's output, the activation's output and the up projection's output
    (``activation``: ``3 s b d_ff`` values) plus their product (``fc2_input``).
    ``recompute="selective"`` drops the ``s^2`` terms; ``flash_attention`` (a fused kernel,
    FlashAttention-2 or PyTorch's SDPA) drops them too and keeps one FP32 log-sum-exp per query
    row and head instead (``attn_lse``: ``4 a s b`` bytes); ``"full"`` keeps only the layer input
    (``2sbh``). ``tensor_parallel = t`` divides the terms inside the tensor-parallel regions by
    ``t`` (``sbh(10 + 24/t + 5as/(ht))``); ``sequence_parallel`` divides the rest too
    (``sbh(34/t + 5as/(ht))``). ``dropout=False`` removes masks and the extra dropout output.

    ``implementation="hf-gpt2"``: exactly the storages PyTorch keeps for a ``transformers``
    ``GPT2Block`` (no recomputation, no parallelism): the terms above plus each LayerNorm's mean
    and reciprocal std (``2sb`` values of ``bytes_per_norm_stat`` bytes) and the activation's own
    intermediates (:data:`HF_ACTIVATION_SAVED_TENSORS`). On CPU pass ``bytes_per_mask =
    bytes_per_norm_stat = bytes_per_value`` (dropout keeps a scaled mask in the input's dtype;
    LayerNorm statistics are in the input's dtype).

    ``implementation="hf-llama"``: exactly the storages of a ``transformers`` ``LlamaDecoderLayer``
    (RMSNorm, rotary positions, gated MLP; Mistral's and Qwen2's layers are the same). Each RMSNorm
    keeps an FP32 copy of its input (``4sbh``), ``1/rms`` (``4sb``) and the normalised input
    (``B sbh``); eager attention keeps ``Q``, ``K`` and ``V`` repeated to all ``a`` heads (``3 B sb
    d_q``, whatever ``a_kv``; only MQA at ``b = 1`` keeps ``K``, ``V`` as broadcast views, ``B sb
    d_kv``), the FP32 softmax (``4as^2b``) and, unless the model is FP32 without
    dropout, the probabilities the product with ``V`` reads (``B as^2b``); with dropout (Llama's
    ``attention_dropout``) also its mask; the MLP keeps
    ``HF_ACTIVATION_SAVED_TENSORS[act] + 2`` storages of width ``d_ff`` (SwiGLU: gate output, SiLU
    output, up output, product). ``flash_attention=True`` is SDPA's fused CPU kernel: ``Q`` (``B sb
    d_q``), ``K``, ``V`` (``B sb d_kv`` each: GQA without copies), the output (which is the output
    projection's input) and the FP32 log-sum-exp ``4asb``; it takes no dropout.

    Returns ``{"terms": {name: bytes per layer}, "per_layer": int, "total": int}`` with
    ``total = L * per_layer`` (embeddings, final norm and logits are not included), per GPU.
    Derived in chapter :doc:`/chapters/memory`.
    """
    if not isinstance(cfg, TransformerConfig):
        raise TypeError(f"cfg must be a TransformerConfig, got {type(cfg).__name__}")
    b, s = check_int("batch", batch), check_int("seq", seq)
    B = check_int("bytes_per_value", bytes_per_value)
    M = check_int("bytes_per_mask", bytes_per_mask)
    N = check_int("bytes_per_norm_stat", bytes_per_norm_stat)
    check_choice("recompute", recompute, RECOMPUTE_MODES)
    flash = check_bool("flash_attention", flash_attention)
    drop = check_bool("dropout", dropout)
    t = check_int("tensor_parallel", tensor_parallel)
    sp = check_bool("sequence_parallel", sequence_parallel)
    check_choice("implementation", implementation, ACTIVATION_IMPLEMENTATIONS)
    if implementation != "korthikanti":
        _check_hf(cfg, implementation, recompute, flash, drop, t, N)
    for name, dim in (("n_heads", cfg.n_heads), ("n_kv_heads", cfg.n_kv_heads), ("ffn_size", cfg.ffn_size)):
        if dim % t:
            raise ValueError(f"tensor_parallel={t} must divide {name}={dim}")
    if sp and s % t:
        raise ValueError(f"sequence_parallel needs tensor_parallel={t} to divide seq={s}")
    rep = t if sp else 1  # divisor of the terms outside the tensor-parallel regions
    terms = _layer_terms(cfg, b, s, B, M, N, recompute, flash, drop, t, rep, implementation)
    per_layer = sum(terms.values())
    return {"terms": terms, "per_layer": per_layer, "total": cfg.n_layers * per_layer}


def recompute_flops(
    cfg: TransformerConfig, batch: int, seq: int, *, recompute: str = "selective", flash_attention: bool = False,
    skip_masked: bool = False,
) -> int:
    """Matrix-multiply FLOPs a training step runs a second time to save activation memory.

    From :func:`llmmath.flops.flops_breakdown` (summed over the layers):

    - ``recompute="none"``: 0, or with ``flash_attention`` the ``attn_scores`` ``Q K^T``, which a
      fused kernel recomputes in its backward pass (its probabilities were never stored);
    - ``"selective"`` (Megatron-LM checkpoints the attention core): its forward runs again,
      ``attn_scores + attn_values``; with ``flash_attention`` nothing is left to recompute but the
      fused kernel's own ``attn_scores``;
    - ``"full"``: the forward of every layer (:data:`llmmath.flops.LAYER_KEYS`), plus
      ``attn_scores`` again with ``flash_attention``.

    ``skip_masked`` counts only the query-key pairs the mask keeps (see
    :func:`llmmath.flops.attention_pairs`). Softmax, dropout and norms are not matrix multiplies
    and are not counted. Derived in chapter :doc:`/chapters/memory`.
    """
    from .flops import LAYER_KEYS, flops_breakdown

    check_choice("recompute", recompute, RECOMPUTE_MODES)
    flash = check_bool("flash_attention", flash_attention)
    bd = flops_breakdown(cfg, batch, seq, skip_masked=skip_masked)
    fused = bd["attn_scores"] if flash else 0
    if recompute == "full":
        return sum(bd[key] for key in LAYER_KEYS) + fused
    if recompute == "selective" and not flash:
        return bd["attn_scores"] + bd["attn_values"]
    return fused


#: What a multi-head-latent-attention cache holds per token and layer: ``latent`` (the compressed
#: ``r_kv`` latent and the shared ``d_r`` rotary key: what ``transformers``, vLLM, SGLang and the
#: "absorb" mode of DeepSeek's inference code keep) or ``expanded`` (every head's decompressed key
#: and value: the "naive" mode of DeepSeek's code, and what a cache of the heads would need).
MLA_CACHES: tuple[str, ...] = ("latent", "expanded")


def kv_cache_bytes(
    cfg: TransformerConfig, batch: int, context: int, bytes_per_value: int = 2, *, mla: str = "latent",
    encoder_seq: int | None = None,
) -> int:
    """Bytes of the key/value cache after ``context`` tokens of each of ``batch`` sequences.

    Per layer and cached token, one key of width ``d_kv = a_kv d_head`` and one value of width ``d_v
    = a_kv d_vh`` (``d_vh`` a value head's width, ``d_head`` in most models): ``2 L b context a_kv
    d_head bytes_per_value`` when every layer attends to every earlier token. GQA (``a_kv < a``) and
    MQA (``a_kv = 1``) shrink it by ``a / a_kv``.
    Read from the config's layer pattern:

    - a sliding-window layer keeps only the last ``w - 1`` tokens (the next token is the ``w``-th
      key it sees): ``min(context, w - 1)`` tokens, as ``transformers``' sliding-window cache (the
      rolling buffer of Jiang et al. 2023, Mistral 7B, has ``w`` slots: one token more);
    - multi-head latent attention keeps ``r_kv + d_r`` values per token and layer
      (``mla="latent"``, as ``transformers`` and serving engines do), or ``a (d_head + d_v)``
      (``mla="expanded"``, the decompressed heads);
    - an encoder-decoder also caches the cross-attention keys and values of the ``encoder_seq``
      encoder outputs in every decoder layer (``encoder_seq`` is then required).

    ``bytes_per_value``: 2 for a 16-bit cache, 1 for an 8-bit (int8/FP8) one (scales ignored).
    Derived in chapter :doc:`/chapters/memory`.
    """
    if not isinstance(cfg, TransformerConfig):
        raise TypeError(f"cfg must be a TransformerConfig, got {type(cfg).__name__}")
    b, n = check_int("batch", batch), check_int("context", context)
    B = check_int("bytes_per_value", bytes_per_value)
    check_choice("mla", mla, MLA_CACHES)
    if cfg.is_encoder_decoder:
        if encoder_seq is None:
            raise ValueError(f"encoder_seq is required for the encoder-decoder {cfg.name!r} (the cross-"
                             "attention caches the keys and values of every encoder output)")
        encoder_seq = check_int("encoder_seq", encoder_seq)
    elif encoder_seq is not None:
        raise ValueError(f"encoder_seq is only for encoder-decoders; {cfg.name!r} has no encoder stack")
    if cfg.kv_lora_rank and mla == "latent":
        per_token = cfg.kv_lora_rank + cfg.rope_head_dim
    else:
        per_token = cfg.kv_dim + cfg.v_dim
    tokens = 0
    for spec, count in cfg.layer_counts.items():
        kept = min(n, cfg.sliding_window - 1) if spec.attention == "sliding" else n
        tokens += count * kept
    cross = cfg.n_layers * encoder_seq * (cfg.kv_dim + cfg.v_dim) if encoder_seq else 0
    return b * (tokens * per_token + cross) * B


def largest_batch(
    cfg: TransformerConfig,
    seq: int,
    capacity_bytes: int,
    *,
    precision: str = "mixed",
    optimizer: str = "adam",
    zero_stage: int = 0,
    n_gpus: int = 1,
    **activation_options: Any,
) -> int:
    """Largest micro-batch ``b`` with ``state + b * act(1) <= capacity_bytes`` (0 if none fits).

    ``state`` = :func:`training_state_bytes` per GPU (``P`` = :func:`llmmath.params.param_count`,
    ZeRO ``zero_stage`` over ``n_gpus``) and
    ``act(1)`` = :func:`activation_bytes` total for ``b = 1`` (activations are linear in ``b``);
    ``activation_options`` are passed on to :func:`activation_bytes`. Buffers, fragmentation and
    the logits are ignored, so this is an upper bound. Derived in chapter :doc:`/chapters/memory`.
    """
    cap = check_int("capacity_bytes", capacity_bytes)
    state = training_state_bytes(cfg, precision, optimizer, zero_stage=zero_stage, n_gpus=n_gpus)["total"]
    per_sample = activation_bytes(cfg, 1, check_int("seq", seq), **activation_options)["total"]
    return max(0, (cap - state) // per_sample)


# ---------------------------------------------------------------------------------------------
# measurement with PyTorch (imported lazily: the formulas above do not need torch)
# ---------------------------------------------------------------------------------------------


def saved_tensors_by_node(output: Any, exclude: Iterable[Any] = ()) -> list[tuple[str, str, tuple, str, int]]:
    """The tensors autograd saved to compute ``output``'s backward, each storage counted once.

    Walks the graph from ``output.grad_fn`` and reads every ``_saved_*`` tensor attribute of every
    node; returns ``(node, attribute, shape, dtype, storage bytes)`` in forward order (by sequence
    number), skipping storages already listed, those of the tensors in ``exclude`` (parameters) and
    0-dimensional tensors (the Python scalars of ``x * 0.5``, which the pack hook never sees).
    Derived in chapter :doc:`/chapters/memory`.
    """
    import torch

    skip = {p.untyped_storage().data_ptr() for p in exclude}
    nodes, stack, seen_nodes = [], [output.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or node in seen_nodes:
            continue
        seen_nodes.add(node)
        nodes.append(node)
        stack.extend(nxt for nxt, _ in node.next_functions)
    nodes.sort(key=lambda n: n._sequence_nr())
    rows, seen = [], set(skip)
    for node in nodes:
        for attr in sorted(a for a in dir(node) if a.startswith("_saved_")):
            value = getattr(node, attr)
            if not isinstance(value, torch.Tensor) or value.dim() == 0:
                continue  # sizes, flags and wrapped Python scalars are not activations
            storage = value.untyped_storage()
            if storage.data_ptr() in seen:
                continue
            seen.add(storage.data_ptr())
            rows.append((node.name(), attr[len("_saved_"):], tuple(value.shape),
                         str(value.dtype).removeprefix("torch."), storage.nbytes()))
    return rows


def _hf_layer(cfg: TransformerConfig, implementation: str, seq: int, dropout: float, sdpa: bool) -> tuple[Any, dict]:
    """The ``transformers`` layer of ``cfg`` (``GPT2Block`` or ``LlamaDecoderLayer``) and the
    keyword arguments of its forward call other than the hidden states' mask."""
    from transformers import GPT2Config, LlamaConfig
    from transformers.models.gpt2.modeling_gpt2 import GPT2Block
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer

    if implementation == "hf-gpt2":
        hf_cfg = GPT2Config(
            n_embd=cfg.hidden_size, n_head=cfg.n_heads, n_inner=cfg.ffn_size, n_layer=1, n_positions=seq,
            activation_function=cfg.activation, attn_pdrop=dropout, resid_pdrop=dropout, embd_pdrop=dropout,
        )
        hf_cfg._attn_implementation = "sdpa" if sdpa else "eager"
        return GPT2Block(hf_cfg, layer_idx=0), hf_cfg
    hf_cfg = LlamaConfig(
        hidden_size=cfg.hidden_size, num_attention_heads=cfg.n_heads, num_key_value_heads=cfg.n_kv_heads,
        head_dim=cfg.head_dim, intermediate_size=cfg.ffn_size, hidden_act=cfg.activation, num_hidden_layers=1,
        attention_bias=cfg.qkv_bias, mlp_bias=cfg.mlp_bias, attention_dropout=dropout, vocab_size=cfg.vocab_size,
        max_position_embeddings=max(seq, cfg.max_position or 0),
    )
    hf_cfg._attn_implementation = "sdpa" if sdpa else "eager"
    return LlamaDecoderLayer(hf_cfg, layer_idx=0), hf_cfg


def hf_layer_saved_bytes(
    cfg: TransformerConfig, batch: int, seq: int, dtype: str = "fp32", *, implementation: str = "hf-gpt2",
    flash_attention: bool = False, dropout: float = 0.0, seed: int = 0,
) -> dict[str, Any]:
    """Measure the bytes PyTorch saves for backward in one ``transformers`` layer.

    Builds the layer of ``implementation`` with the shapes of ``cfg`` (``hf-gpt2``: a
    ``GPT2Block`` with ``attn_pdrop = resid_pdrop = dropout``; ``hf-llama``: a ``LlamaDecoderLayer``
    with ``attention_dropout = dropout``) in ``train()`` mode on the CPU, with eager attention or,
    with ``flash_attention``, ``attn_implementation="sdpa"`` (PyTorch's fused CPU kernel, causal
    through ``is_causal``). It runs the layer on a random ``(batch, seq, h)`` input (eager: with an
    additive causal mask) inside ``torch.autograd.graph.saved_tensors_hooks`` and sums the saved
    storages, each counted once (deduplicated by ``untyped_storage().data_ptr()``), the parameters
    and the rotary ``cos``/``sin`` tables (computed once by the model for all its layers) excluded.
    Returns ``{"total": bytes, "tensors": saved_tensors_by_node(...)}``; the two counts agree.
    Derived in chapter :doc:`/chapters/memory`.
    """
    import torch

    if not isinstance(cfg, TransformerConfig):
        raise TypeError(f"cfg must be a TransformerConfig, got {type(cfg).__name__}")
    check_choice("implementation", implementation, ACTIVATION_IMPLEMENTATIONS[1:])
    b, s = check_int("batch", batch), check_int("seq", seq)
    torch_dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[
        check_choice("dtype", dtype, ("fp32", "bf16", "fp16"))
    ]
    if not isinstance(dropout, numbers.Real) or isinstance(dropout, bool) or not 0 <= dropout < 1:
        raise ValueError(f"dropout must be a probability in [0, 1), got {dropout!r}")
    flash = check_bool("flash_attention", flash_attention)
    _check_hf(cfg, implementation, "none", flash, dropout > 0, 1, _FP32)
    torch.manual_seed(check_int("seed", seed, minimum=0))
    layer, hf_cfg = _hf_layer(cfg, implementation, s, float(dropout), flash)
    layer = layer.to(torch_dtype).train()
    x = torch.randn(b, s, cfg.hidden_size, dtype=torch_dtype, requires_grad=True)
    mask = None if flash else torch.full((s, s), float("-inf"), dtype=torch_dtype).triu(1)[None, None]
    kwargs: dict[str, Any] = {"attention_mask": mask}
    exclude = list(layer.parameters())
    if implementation == "hf-llama":
        from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

        cos, sin = LlamaRotaryEmbedding(hf_cfg)(x, torch.arange(s)[None])
        kwargs["position_embeddings"] = (cos, sin)
        exclude += [cos, sin]
    skip = {t.untyped_storage().data_ptr() for t in exclude}
    saved: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in skip:
            saved[storage.data_ptr()] = storage.nbytes()
        return tensor

    def unpack(tensor: torch.Tensor) -> torch.Tensor:
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = layer(x, **kwargs)
    y = y[0] if isinstance(y, tuple) else y
    rows = saved_tensors_by_node(y, exclude=exclude)
    return {"total": sum(saved.values()), "tensors": rows}
