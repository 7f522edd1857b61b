"""Serving a decoder: prefill and decode FLOPs and bytes, roofline latency, batching, memory
planning and tensor parallelism.

Derived in chapter :doc:`/chapters/serving`. Everything builds on the counts of the earlier
chapters: :func:`llmmath.flops_breakdown` (matmul FLOPs), :func:`llmmath.kv_cache_bytes` (the KV
cache), :func:`llmmath.param_count` and :func:`llmmath.active_param_count` (weights) and the
accelerator table of :mod:`llmmath.hardware` (:func:`llmmath.roofline_seconds`).

Conventions. A **prefill** runs the ``prompt`` tokens of ``batch`` sequences through the model at
once and fills the KV cache. A **decode step** gives each of ``batch`` sequences that already hold
``context`` tokens one new token: a forward pass of ``batch`` tokens whose attention reads
``context + 1`` keys per sequence (fewer in a sliding-window layer). Time bounds are roofline
bounds (:func:`llmmath.roofline_seconds`): every weight read once per step, the KV cache read once,
compute and memory traffic overlapped, at peak; activations, kernel launches and the
non-matmul work are left out, so a real step is slower. Decoder-only models only.

Symbols: ``b`` batch, ``n`` context (cached tokens), ``s`` prompt, ``L`` layers, ``h`` hidden
size, ``a`` heads, ``a_kv`` key/value heads, ``d`` head dimension, ``E`` routed experts of which
``k`` per token, ``V`` vocabulary, ``t`` tensor-parallel size, ``r`` MLA's latent width.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ._validate import check_bool, check_choice, check_int
from .config import TransformerConfig
from .flops import flops_breakdown
from .hardware import accelerator, roofline_seconds
from .memory import kv_cache_bytes
from .params import active_param_count, param_count
from .units import DTYPES, bytes_for, dtype_bits

__all__ = [
    "LOGITS",
    "MLA_DECODE",
    "EXPERT_BOUNDS",
    "ALLREDUCE_ALGORITHMS",
    "prefill_flops",
    "decode_flops_breakdown",
    "decode_flops",
    "experts_touched",
    "forward_weight_bytes",
    "kv_bytes",
    "decode_bytes",
    "prefill_bytes",
    "prefill_seconds",
    "decode_step_seconds",
    "decode_throughput",
    "critical_batch",
    "serving_memory_bytes",
    "max_decode_batch",
    "tp_shard",
    "tp_allreduce_bytes",
    "tp_decode_step_seconds",
]

#: Where a prefill computes logits: at the ``last`` position only (what ``generate`` asks for,
#: ``logits_to_keep=1`` in transformers) or at ``all`` positions (a plain forward, scoring a text).
LOGITS = ("last", "all")

#: How a decode step runs multi-head latent attention: ``absorbed`` (serving engines and DeepSeek's
#: inference code fold the key and value up-projections into the query and the output, and attend
#: in the latent space) or ``transformers`` (transformers 5.23 re-expands every cached latent with
#: ``kv_b_proj`` at every step).
MLA_DECODE = ("absorbed", "transformers")

#: Which count of routed experts a batch touches per mixture-of-experts layer: ``max`` (every
#: token picks experts no other token picked, ``min(E, tokens k)``), ``min`` (all tokens pick the
#: same ``k``) or ``expected`` (independent uniform routing, ``E (1 - (1 - k/E)^tokens)``).
EXPERT_BOUNDS = ("max", "min", "expected")

#: All-reduce algorithms of :func:`tp_decode_step_seconds`: ``ring`` (reduce-scatter then
#: all-gather around a ring, ``2 (t - 1)`` steps of ``M / t`` bytes: bandwidth-optimal, NCCL's
#: default for large messages) and ``tree`` (NCCL's double binary tree), both timed by the
#: parallelism chapter's ``collective_seconds``, or ``one-shot`` (every accelerator sends its whole partial
#: sum to every other one at once and adds what it receives: one step of ``(t - 1) M`` bytes, the
#: latency-optimal choice of decoding engines on a switched scale-up domain).
ALLREDUCE_ALGORITHMS = ("ring", "tree", "one-shot")


# ---------------------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------------------


def _check_decoder(cfg: Any) -> TransformerConfig:
    if not isinstance(cfg, TransformerConfig):
        raise TypeError(f"cfg must be a TransformerConfig, got {type(cfg).__name__}")
    if not cfg.causal or cfg.is_encoder_decoder:
        kind = "an encoder-decoder" if cfg.is_encoder_decoder else "an encoder (cfg.causal is False)"
        raise ValueError(f"the serving formulas are for decoder-only models; {cfg.name!r} is {kind}")
    return cfg


def _check_positions(cfg: TransformerConfig, name: str, value: Any, extra: int = 0) -> int:
    """``value`` as an int >= 1; with learned positions ``value + extra <= max_position``."""
    value = check_int(name, value)
    if cfg.position == "learned" and value + extra > cfg.max_position:
        limit = cfg.max_position - extra
        what = "the new token's position must exist too" if extra else "one row per position"
        raise ValueError(f"{name} must be an integer <= {limit}: the learned position table of {cfg.name!r} "
                         f"has {cfg.max_position} rows ({what}), got {value}")
    return value


def _check_dtype(name: str, dtype: Any) -> str:
    return check_choice(name, dtype, DTYPES)


# ---------------------------------------------------------------------------------------------
# FLOPs
# ---------------------------------------------------------------------------------------------


def prefill_flops(
    cfg: TransformerConfig, batch: int, prompt: int, *, logits: str = "last", skip_masked: bool = False
) -> int:
    """Exact matmul FLOPs of a prefill: :func:`llmmath.forward_flops` of ``batch`` sequences of
    ``prompt`` tokens, with the LM head ``2 b s e V`` at every position (``logits="all"``) or
    ``2 b e V`` at the last one only (``logits="last"``, what ``generate`` computes: transformers
    passes ``logits_to_keep=1``). ``skip_masked`` as in :func:`llmmath.flops_breakdown` (a fused
    kernel skips the masked half of the scores; eager attention computes them).
    Derived in chapter :doc:`/chapters/serving`.
    """
    cfg = _check_decoder(cfg)
    prompt = _check_positions(cfg, "prompt", prompt)
    check_choice("logits", logits, LOGITS)
    bd = flops_breakdown(cfg, batch, prompt, skip_masked=skip_masked)
    if logits == "last":
        bd["lm_head"] //= prompt
    return sum(bd.values())


def decode_flops_breakdown(
    cfg: TransformerConfig, batch: int, context: int, *, mla: str = "absorbed"
) -> dict[str, int]:
    """Exact matmul FLOPs of one decode step, per component (the keys of
    :func:`llmmath.flops_breakdown`): ``batch`` sequences holding ``context`` cached tokens each
    get one new token.

    Every weight product is that of a forward pass of ``b`` tokens, ``flops_breakdown(cfg, b, 1)``
    (the LM head on the new tokens only). The attention products score each new query against
    ``K = n + 1`` keys (cached and new): ``attn_scores`` ``2 b a K d`` and ``attn_values``
    ``2 b a K d_v`` per layer, with ``K = min(n, w - 1) + 1`` in a sliding-window layer (its cache
    keeps ``w - 1`` tokens). Multi-head latent attention (``r`` latent, ``d_r`` rotary dims):

    - ``mla="transformers"``: the cache holds latents and every step re-expands all ``n`` cached
      ones, ``2 b n r a (d - d_r)`` more ``k_proj`` and ``2 b n r a d_v`` more ``v_proj`` per layer;
    - ``mla="absorbed"``: the key up-projection is folded into the query and the value
      up-projection into the output (the same ``2 a r (d - d_r + d_v)`` per new token as expanding
      its own key and value), and the scores and values run in the latent space:
      ``attn_scores`` ``2 b a K (r + d_r)``, ``attn_values`` ``2 b a K r``.

    Equal to ``FlopCounterMode`` on a transformers forward of one token per sequence with
    ``past_key_values`` (eager attention; ``mla="transformers"`` for DeepSeek).
    Derived in chapter :doc:`/chapters/serving`.
    """
    cfg = _check_decoder(cfg)
    b = check_int("batch", batch)
    n = _check_positions(cfg, "context", context, extra=1)
    check_choice("mla", mla, MLA_DECODE)
    bd = flops_breakdown(cfg, b, 1)
    a, d, dv = cfg.n_heads, cfg.head_dim, cfg.v_head_dim
    r, dr = cfg.kv_lora_rank, cfg.rope_head_dim
    latent = r and mla == "absorbed"
    d_scores, d_values = (r + dr, r) if latent else (d, dv)
    bd["attn_scores"] = bd["attn_values"] = 0
    for spec, count in cfg.layer_counts.items():
        cached = min(n, cfg.sliding_window - 1) if spec.attention == "sliding" else n
        bd["attn_scores"] += count * 2 * b * a * (cached + 1) * d_scores
        bd["attn_values"] += count * 2 * b * a * (cached + 1) * d_values
        if r and mla == "transformers":
            bd["k_proj"] += count * 2 * b * cached * r * a * (d - dr)
            bd["v_proj"] += count * 2 * b * cached * r * a * dv
    return bd


def decode_flops(cfg: TransformerConfig, batch: int, context: int, *, mla: str = "absorbed") -> int:
    """Exact matmul FLOPs of one decode step: the sum of :func:`decode_flops_breakdown`. For a
    GPT-style model ``b (2 N_matmul + 4 L (n + 1) h)``: two FLOPs per weight per token plus the
    attention over the cache. Derived in chapter :doc:`/chapters/serving`.
    """
    return sum(decode_flops_breakdown(cfg, batch, context, mla=mla).values())


# ---------------------------------------------------------------------------------------------
# bytes
# ---------------------------------------------------------------------------------------------


def experts_touched(cfg: TransformerConfig, tokens: int, bound: str = "max") -> float:
    """Distinct routed experts that ``tokens`` tokens reach in one mixture-of-experts layer, each
    token choosing ``k`` of ``E``: at most ``min(E, tokens k)`` (``bound="max"``; all ``E`` once
    ``tokens k >= E``), at least ``k`` (``"min"``: every token picks the same experts), and under
    independent uniform routing ``E (1 - (1 - k / E)^tokens)`` on average (``"expected"``, a
    float: an expert is missed by one token with probability ``1 - k/E``). Real routers are
    neither uniform nor independent; the two bounds hold for any router.
    Derived in chapter :doc:`/chapters/serving`.
    """
    if not isinstance(cfg, TransformerConfig):
        raise TypeError(f"cfg must be a TransformerConfig, got {type(cfg).__name__}")
    if not cfg.is_moe:
        raise ValueError(f"experts_touched needs a mixture-of-experts model; {cfg.name!r} is dense (n_experts = 0)")
    tokens = check_int("tokens", tokens)
    check_choice("bound", bound, EXPERT_BOUNDS)
    E, k = cfg.n_experts, cfg.experts_per_token
    if bound == "max":
        return min(E, tokens * k)
    if bound == "min":
        return k
    return E * (1 - (1 - k / E) ** tokens)


def forward_weight_bytes(
    cfg: TransformerConfig, batch: int, seq: int, dtype: str = "bf16", *, experts: str = "max"
) -> float:
    """Bytes of the weights one forward pass of ``batch`` sequences of ``seq`` new tokens reads,
    each weight once, stored as ``dtype``: :func:`llmmath.param_count` minus what it never
    touches,

    - in every mixture-of-experts layer the ``E - x`` routed experts no token chose, ``x`` from
      :func:`experts_touched` for the ``b s`` tokens (``experts`` picks the bound);
    - of an untied token-embedding table all but the ``min(V, b s)`` rows looked up (a tied table
      is read whole by the LM head), of a learned position table all but the ``seq`` rows used.

    A decode step is ``seq = 1``. An int for ``experts="max"`` or ``"min"``, a float for
    ``"expected"``. Quantization scales are ignored (:func:`llmmath.weight_bytes`).
    Derived in chapter :doc:`/chapters/serving`.
    """
    cfg = _check_decoder(cfg)
    b = check_int("batch", batch)
    s = _check_positions(cfg, "seq", seq)
    _check_dtype("dtype", dtype)
    check_choice("experts", experts, EXPERT_BOUNDS)
    unread: float = 0
    if cfg.is_moe:
        E, k = cfg.n_experts, cfg.experts_per_token
        n_moe = sum(count for spec, count in cfg.layer_counts.items() if spec.mlp == "moe")
        if E > k:  # one routed expert's weights, from the parameter chapter's two counts
            per_expert = (param_count(cfg) - active_param_count(cfg)) // (n_moe * (E - k))
            unread += n_moe * (E - experts_touched(cfg, b * s, experts)) * per_expert
    if not cfg.tie_embeddings:
        unread += (cfg.vocab_size - min(cfg.vocab_size, b * s)) * cfg.embedding_dim
    if cfg.position == "learned":
        unread += (cfg.max_position + cfg.position_offset - s) * cfg.hidden_size
    read = param_count(cfg) - unread
    if isinstance(read, int):
        return bytes_for(read, dtype)
    return read * dtype_bits(dtype) / 8


def kv_bytes(cfg: TransformerConfig, batch: int, context: int, kv_dtype: str = "bf16") -> int:
    """Bytes of the KV cache of ``batch`` sequences of ``context`` tokens stored as ``kv_dtype``
    (one of :data:`llmmath.DTYPES`, e.g. ``fp8`` for an 8-bit cache): the values of
    :func:`llmmath.kv_cache_bytes` (latent MLA cache, sliding windows kept at ``w - 1``) times the
    format's width, ``ceil(values bits / 8)``; the scales of a quantized cache are ignored.
    Derived in chapter :doc:`/chapters/serving`.
    """
    cfg = _check_decoder(cfg)
    context = _check_positions(cfg, "context", context)
    _check_dtype("kv_dtype", kv_dtype)
    return bytes_for(kv_cache_bytes(cfg, batch, context, 1), kv_dtype)


def decode_bytes(
    cfg: TransformerConfig, batch: int, context: int, dtype: str = "bf16", *, kv_dtype: str = "bf16",
    experts: str = "max",
) -> float:
    """Bytes one decode step must move from memory: the weights it touches
    (:func:`forward_weight_bytes` with ``seq = 1``) plus the KV cache of every sequence,
    :func:`kv_bytes` of ``batch`` x ``context``, each read once (an MLA cache as its latents; the
    new token's keys and values are written, ``kv_bytes(cfg, batch, 1)``, and not counted, nor are
    activations). Derived in chapter :doc:`/chapters/serving`.
    """
    cfg = _check_decoder(cfg)
    _check_positions(cfg, "context", context, extra=1)
    return forward_weight_bytes(cfg, batch, 1, dtype, experts=experts) + kv_bytes(cfg, batch, context, kv_dtype)


def prefill_bytes(
    cfg: TransformerConfig, batch: int, prompt: int, dtype: str = "bf16", *, kv_dtype: str = "bf16",
    experts: str = "max",
) -> float:
    """Bytes a prefill must move: the weights it touches (:func:`forward_weight_bytes` for
    ``batch`` x ``prompt`` tokens) read once, plus the KV cache it writes, :func:`kv_bytes` of
    ``batch`` x ``prompt``. Activations are left out (a fused attention kernel keeps the ``s x s``
    scores on chip). Derived in chapter :doc:`/chapters/serving`.
    """
    return forward_weight_bytes(cfg, batch, prompt, dtype, experts=experts) + kv_bytes(cfg, batch, prompt, kv_dtype)


# ---------------------------------------------------------------------------------------------
# latency and throughput bounds
# ---------------------------------------------------------------------------------------------


def prefill_seconds(
    cfg: TransformerConfig, batch: int, prompt: int, gpu: str, *, precision: str = "bf16_tensor",
    dtype: str = "bf16", kv_dtype: str = "bf16", logits: str = "last", experts: str = "max",
) -> float:
    """Lower bound on the time of a prefill (the time to first token) on one accelerator,
    ``max(prefill_flops / peak, prefill_bytes / bandwidth)`` (:func:`llmmath.roofline_seconds`).
    Derived in chapter :doc:`/chapters/serving`.
    """
    flops = prefill_flops(cfg, batch, prompt, logits=logits)
    moved = prefill_bytes(cfg, batch, prompt, dtype, kv_dtype=kv_dtype, experts=experts)
    return roofline_seconds(flops, moved, gpu, precision)


def serving_memory_bytes(
    cfg: TransformerConfig, batch: int, context: int, *, dtype: str = "bf16", kv_dtype: str = "bf16", tp: int = 1
) -> int:
    """Bytes one accelerator holds to serve ``batch`` sequences of up to ``context`` tokens: all
    weights of its tensor-parallel shard (:func:`tp_shard`; every expert, used or not) in
    ``dtype`` plus the shard's KV cache (:func:`kv_bytes`). Activations, the CUDA context and
    allocator fragmentation are not included (see ``reserve_bytes`` of :func:`max_decode_batch`).
    Derived in chapter :doc:`/chapters/serving`.
    """
    shard = tp_shard(cfg, tp)
    _check_dtype("dtype", dtype)
    return bytes_for(param_count(shard), dtype) + kv_bytes(shard, batch, context, kv_dtype)


def _check_fits(cfg: TransformerConfig, batch: int, context: int, gpu: str, dtype: str, kv_dtype: str,
                tp: int) -> None:
    spec = accelerator(gpu)
    need = serving_memory_bytes(cfg, batch, context, dtype=dtype, kv_dtype=kv_dtype, tp=tp)
    if need > spec.memory_bytes:
        per = "per accelerator " if tp > 1 else ""
        raise ValueError(
            f"batch={batch} with context={context} does not fit: weights and KV cache need {need / 1e9:,.1f} GB "
            f"{per}(tp={tp}, weights {dtype}, cache {kv_dtype}), the {spec.name} has "
            f"{spec.memory_bytes / 1e9:,.0f} GB; lower batch or context, quantize, or raise tp "
            "(max_decode_batch gives the largest batch)")


def decode_step_seconds(
    cfg: TransformerConfig, batch: int, context: int, gpu: str, *, precision: str = "bf16_tensor",
    dtype: str = "bf16", kv_dtype: str = "bf16", experts: str = "max", mla: str = "absorbed",
) -> float:
    """Lower bound on the time of one decode step on one accelerator, the time per output token
    of every sequence: ``max(decode_flops / peak, decode_bytes / bandwidth)``. A ``batch`` whose
    weights and KV cache of ``context`` tokens exceed the accelerator's memory
    (:func:`serving_memory_bytes`; the step's one new token per sequence is not counted, as in
    :func:`max_decode_batch`) raises ``ValueError``. Derived in chapter :doc:`/chapters/serving`.
    """
    cfg = _check_decoder(cfg)
    _check_fits(cfg, batch, context, gpu, dtype, kv_dtype, 1)
    flops = decode_flops(cfg, batch, context, mla=mla)
    moved = decode_bytes(cfg, batch, context, dtype, kv_dtype=kv_dtype, experts=experts)
    return roofline_seconds(flops, moved, gpu, precision)


def decode_throughput(
    cfg: TransformerConfig, batch: int, context: int, gpu: str, *, tp: int = 1, **options: Any
) -> float:
    """Upper bound on the tokens per second a replica generates at ``batch`` and ``context``:
    ``batch / step time``, the step time from :func:`decode_step_seconds` (``tp = 1``) or
    :func:`tp_decode_step_seconds`; ``options`` are passed on. It rises with the batch while the
    weights dominate the bytes and flattens once compute (or the KV cache) does.
    Derived in chapter :doc:`/chapters/serving`.
    """
    tp = check_int("tp", tp)
    step = (decode_step_seconds(cfg, batch, context, gpu, **options) if tp == 1
            else tp_decode_step_seconds(cfg, batch, context, gpu, tp, **options))
    return batch / step


def critical_batch(
    cfg: TransformerConfig, context: int, gpu: str, *, precision: str = "bf16_tensor", dtype: str = "bf16",
    kv_dtype: str = "bf16", experts: str = "max", mla: str = "absorbed",
) -> int | None:
    """The smallest batch at which a decode step at ``context`` is compute-bound,
    ``decode_flops / peak >= decode_bytes / bandwidth``; ``None`` if no batch is (when each
    sequence's own bytes, its KV cache, already take longer to read than its FLOPs take to
    compute, a larger batch cannot help).

    FLOPs grow as ``b F_1``, bytes as ``W + b C_1`` (weights once, one cache per sequence), so
    for a dense model ``b* = ceil(W P / (F_1 B - C_1 P))`` with ``P`` the peak and ``B`` the
    bandwidth: the ridge point times bytes per parameter over two when the cache is small. Memory
    capacity is not checked (compare :func:`max_decode_batch`). Found by bisection on the exact
    counts. Derived in chapter :doc:`/chapters/serving`.
    """
    cfg = _check_decoder(cfg)
    spec = accelerator(gpu)

    def bound(b: int) -> bool:
        flops = decode_flops(cfg, b, context, mla=mla)
        moved = decode_bytes(cfg, b, context, dtype, kv_dtype=kv_dtype, experts=experts)
        return roofline_seconds(flops, 0, spec, precision) >= roofline_seconds(0, moved, spec, precision)

    hi = 1
    while not bound(hi):
        hi *= 2
        if hi > 2**40:
            return None
    lo = hi // 2  # bound(lo) is False (or lo = 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if bound(mid) else (mid, hi)
    return hi


def max_decode_batch(
    cfg: TransformerConfig, context: int, gpu: str, *, reserve_bytes: int, dtype: str = "bf16",
    kv_dtype: str = "bf16", tp: int = 1,
) -> int:
    """The largest number of sequences of ``context`` tokens whose KV cache fits beside the
    weights: ``floor((M - W - R) / C_1)`` with ``M`` the accelerator's memory, ``W`` its shard of
    the weights, ``R = reserve_bytes`` (activations, CUDA context, fragmentation: no default, say
    what you assume) and ``C_1`` one sequence's cache (:func:`serving_memory_bytes`). For
    full-attention models ``batch x context`` is then fixed: it is the token capacity of the
    cache. 0 if not even one sequence fits; ``ValueError`` if the weights and reserve alone do
    not. Derived in chapter :doc:`/chapters/serving`.
    """
    spec = accelerator(gpu)
    reserve_bytes = check_int("reserve_bytes", reserve_bytes, minimum=0)
    weights = serving_memory_bytes(cfg, 1, 1, dtype=dtype, kv_dtype=kv_dtype, tp=tp)
    weights -= kv_bytes(tp_shard(cfg, tp), 1, 1, kv_dtype)
    free = spec.memory_bytes - weights - reserve_bytes
    if free < 0:
        raise ValueError(
            f"reserve_bytes={reserve_bytes} and the weights ({weights / 1e9:,.1f} GB per accelerator, tp={tp}, "
            f"{dtype}) exceed the {spec.memory_bytes / 1e9:,.0f} GB of the {spec.name}: raise tp or quantize")
    return free // kv_bytes(tp_shard(cfg, tp), 1, context, kv_dtype)


# ---------------------------------------------------------------------------------------------
# tensor parallelism
# ---------------------------------------------------------------------------------------------


def tp_shard(cfg: TransformerConfig, tp: int) -> TransformerConfig:
    """The model one of ``tp`` accelerators holds under Megatron-style tensor parallelism, as a
    :class:`~llmmath.TransformerConfig` (so every count of the book applies to it per accelerator).

    Split ``tp`` ways: the query heads (``a / t``), the MLP, expert and shared-expert widths, the
    vocabulary of the embedding and the LM head (``ceil(V / t)`` rows; frameworks pad ``V`` to a
    multiple of ``t`` and of 64 or 128, which is ignored). Key/value heads: ``a_kv / t`` each if
    ``t`` divides ``a_kv``; when ``t > a_kv`` every accelerator keeps one KV head, so each head
    (its projection weights and its cache) is **replicated** ``t / a_kv`` times, as vLLM does.
    Replicated whole: the hidden size ``h``, norms, biases added after an all-reduce, the
    router, learned positions, and MLA's latent down-projections and latent cache (every
    accelerator needs all of ``r`` for its heads). ``tp = 1`` returns ``cfg``.
    Derived in chapter :doc:`/chapters/serving`.
    """
    cfg = _check_decoder(cfg)
    t = check_int("tp", tp)
    if t == 1:
        return cfg
    a, a_kv = cfg.n_heads, cfg.n_kv_heads
    problems = [f"n_heads={a}"] if a % t else []
    if a_kv % t and t % a_kv:
        problems.append(f"n_kv_heads={a_kv} (tp must divide it or be a multiple of it)")
    widths = [("ffn_size", cfg.ffn_size)]
    if cfg.is_moe:
        widths.append(("expert_ffn_size", cfg.expert_ffn_size))
        if cfg.shared_ffn_size:
            widths.append(("shared_ffn_size", cfg.shared_ffn_size))
    problems += [f"{name}={value}" for name, value in widths if value % t]
    if problems:
        raise ValueError(f"tp={t} must divide " + ", ".join(problems) + f" of {cfg.name!r}")
    changes: dict[str, Any] = dict(
        name=f"{cfg.name} (tp={t} shard)", n_heads=a // t, n_kv_heads=max(a_kv // t, 1),
        ffn_size=cfg.ffn_size // t, vocab_size=-(-cfg.vocab_size // t),
    )
    if cfg.is_moe:
        changes.update(expert_ffn_size=cfg.expert_ffn_size // t, shared_ffn_size=cfg.shared_ffn_size // t)
    return dataclasses.replace(cfg, **changes)


def tp_allreduce_bytes(cfg: TransformerConfig, tokens: int, dtype: str = "bf16") -> int:
    """Bytes all-reduced in one forward pass of ``tokens`` tokens under Megatron-style tensor
    parallelism: after the attention output projection and after the MLP's down projection each
    accelerator holds a partial sum of the ``tokens x h`` activations, so two all-reduces of
    ``tokens h`` values per layer (one when attention and MLP run in parallel and are summed
    first, ``parallel_block``): ``2 L tokens h`` values of ``dtype``. The vocabulary-parallel
    embedding and LM head add one collective each per step, not counted.
    Derived in chapter :doc:`/chapters/serving`.
    """
    cfg = _check_decoder(cfg)
    tokens = check_int("tokens", tokens)
    _check_dtype("dtype", dtype)
    per_layer = 1 if cfg.parallel_block else 2
    return bytes_for(per_layer * cfg.n_layers * tokens * cfg.hidden_size, dtype)


def tp_decode_step_seconds(
    cfg: TransformerConfig, batch: int, context: int, gpu: str, tp: int, *, precision: str = "bf16_tensor",
    dtype: str = "bf16", kv_dtype: str = "bf16", experts: str = "max", mla: str = "absorbed",
    activation_dtype: str = "bf16", allreduce: str = "ring", overlap: bool = False,
) -> float:
    """Lower bound on a decode step over ``tp`` accelerators of one scale-up domain (NVLink,
    Infinity Fabric, ICI): the roofline time of one accelerator's shard (:func:`tp_shard`, via
    :func:`decode_step_seconds`, which also checks that the shard fits) plus the all-reduces of
    :func:`tp_allreduce_bytes` (``batch`` tokens of ``activation_dtype``, ``M`` bytes each), timed
    with the scale-up link's latency ``alpha`` and per-direction bandwidth ``beta``:
    ``2 (t - 1) (alpha + M / (t beta))`` for a ring and ``2 ceil(log2 t) alpha + 2 M / beta`` for a
    tree (``collective_seconds`` of ``llmmath.parallel``), ``alpha + (t - 1) M / beta`` one-shot
    (:data:`ALLREDUCE_ALGORITHMS`). With ``overlap=True`` communication hides behind compute
    (``max`` instead of the sum); a decode step can hardly overlap, each all-reduce feeding the
    next product. ``tp`` must fit in the scale-up domain. Derived in chapter
    :doc:`/chapters/serving`.
    """
    spec = accelerator(gpu)
    t = check_int("tp", tp)
    check_choice("allreduce", allreduce, ALLREDUCE_ALGORITHMS)
    check_bool("overlap", overlap)
    if t > spec.domain_size or (spec.scale_up is None and t > 1):
        raise ValueError(f"tp must be an integer <= {spec.domain_size} (the scale-up domain of the {spec.name}), "
                         f"got {t}")
    compute = decode_step_seconds(tp_shard(cfg, t), batch, context, spec, precision=precision, dtype=dtype,
                                  kv_dtype=kv_dtype, experts=experts, mla=mla)
    if t == 1:
        return compute
    count = (1 if cfg.parallel_block else 2) * cfg.n_layers
    message = tp_allreduce_bytes(cfg, batch, activation_dtype) / count
    if allreduce == "one-shot":
        one = spec.scale_up.latency + (t - 1) * message / spec.scale_up.bandwidth
    else:
        from .parallel import collective_seconds

        one = collective_seconds("all_reduce", t, message, spec, link="scale_up", algorithm=allreduce)
    comms = count * one
    return max(compute, comms) if overlap else compute + comms
