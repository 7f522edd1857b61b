"""Serving a decoder: prefill and decode FLOPs and bytes, weight formats, roofline latency per
kernel, batching, memory planning, tensor parallelism and its all-reduce algorithms, and the
steady state of a server.

Derived in chapter :doc:`/chapters/serving`. Everything builds on the counts of the earlier
chapters: :func:`llmmath.flops_breakdown` (matmul FLOPs), :func:`llmmath.kv_cache_bytes` (the KV
cache), :func:`llmmath.param_breakdown` and :func:`llmmath.active_param_count` (weights) and the
accelerator table of :mod:`llmmath.hardware`.

Conventions. A **prefill** runs the ``prompt`` tokens of ``batch`` sequences through the model at
once and fills the KV cache. A **decode step** gives each of ``batch`` sequences that already hold
``context`` tokens one new token: a forward pass of ``batch`` tokens whose attention reads
``context + 1`` keys per sequence (fewer in a sliding-window layer).

Two kinds of time, never mixed:

- **bounds** (the default): every kernel at the accelerator's peak and full memory bandwidth, the
  weight products and the attention as two separate kernels (as vLLM, SGLang and TensorRT-LLM run
  them), each its own roofline ``max(FLOPs / peak, bytes / bandwidth)``; tensor-parallel
  communication with the cheapest all-reduce algorithm the hardware offers, overlapped with the
  kernels; in a mixture of experts the fewest experts a batch can touch. Activations, kernel
  launches and non-matmul work are left out. A real step is slower: the bound is below every
  measured time of the same work (``tests/test_inference.py`` checks it on published
  measurements).
- **predictions** (``calibration=`` a :class:`ServingCalibration`): kernels at a measured
  fraction of peak compute and bandwidth, communication in series with the kernels, experts
  under uniform routing. A prediction names its calibration and that calibration's error.

Symbols: ``b`` batch, ``n`` context (cached tokens), ``s`` prompt, ``L`` layers, ``h`` hidden
size, ``a`` heads, ``a_kv`` key/value heads, ``d`` head dimension, ``E`` routed experts of which
``k`` per token, ``V`` vocabulary, ``t`` tensor-parallel size, ``r`` MLA's latent width, ``q``
bytes per stored value, ``W_mem`` memory bandwidth, ``pi`` peak FLOP/s.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping
from typing import Any

from ._validate import check_bool, check_choice, check_fraction, check_int, check_positive
from .config import TransformerConfig
from .flops import flops_breakdown
from .hardware import GPUS, Accelerator, accelerator, gpu_peak_flops
from .memory import kv_cache_bytes
from .params import active_param_count, param_breakdown, param_count
from .units import DTYPES, bytes_for, dtype_bits

__all__ = [
    "LOGITS",
    "MLA_DECODE",
    "EXPERT_BOUNDS",
    "ALLREDUCE_ALGORITHMS",
    "MEMORY_UTILIZATION",
    "WeightFormat",
    "weight_format",
    "weight_format_from_hf",
    "matmul_precision",
    "prefill_flops",
    "prefill_flops_breakdown",
    "decode_flops_breakdown",
    "decode_flops",
    "attention_flops_per_byte",
    "experts_touched",
    "forward_weight_bytes",
    "kv_bytes",
    "decode_bytes",
    "prefill_bytes",
    "serving_memory_bytes",
    "allocatable_memory_bytes",
    "usable_memory_bytes",
    "max_decode_batch",
    "tp_shard",
    "tp_allreduce_bytes",
    "allreduce_algorithms",
    "allreduce_cost",
    "allreduce_seconds",
    "ServingCalibration",
    "SERVING_CALIBRATION",
    "MEASUREMENT_METRICS",
    "serving_measurements",
    "measurement_bound",
    "measurement_prediction",
    "fit_serving_calibration",
    "decode_step_times",
    "decode_step_seconds",
    "tp_decode_step_seconds",
    "decode_throughput",
    "prefill_times",
    "prefill_seconds",
    "generation_seconds",
    "steady_state",
    "weight_critical_batch",
    "step_critical_batch",
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

#: All-reduce algorithms of :func:`allreduce_cost` (``t`` accelerators, ``M`` bytes each):
#: ``ring`` (reduce-scatter then all-gather around a ring: ``2(t-1)`` steps, ``2(t-1)M/t`` bytes
#: sent per accelerator; NCCL's bandwidth-optimal default) and ``tree`` (NCCL's double binary
#: tree: ``2 ceil(log2 t)`` steps, ``2M`` bytes), both as the parallelism chapter counts them;
#: ``one-shot`` (every accelerator reads every peer's whole buffer and adds: 1 step, ``(t-1)M``
#: bytes; vLLM's ``cross_device_reduce_1stage``, TensorRT-LLM's ``ONESHOT``), ``two-shot`` (a
#: reduce-scatter in which each accelerator reads its ``1/t`` slice from every peer, then an
#: all-gather of the reduced slices: 2 steps, ``2(t-1)M/t`` bytes; vLLM's
#: ``cross_device_reduce_2stage``) and ``nvls`` (NVLink SHARP: the NVSwitch adds the partial sums
#: and multicasts the result: 2 steps, each accelerator sends its ``M`` bytes into the switch and
#: its reduced slice ``M/t`` back, ``(t+1)M/t`` bytes; NCCL's NVLS algorithm on Hopper and later).
ALLREDUCE_ALGORITHMS = ("ring", "tree", "one-shot", "two-shot", "nvls")

#: The fraction of an accelerator's memory an engine lets itself fill with weights, KV cache and
#: activations: vLLM's default ``gpu_memory_utilization`` (0.9 in ``vllm/config/cache.py``; later
#: versions raised it to 0.92). :func:`max_decode_batch` keeps the rest as its default reserve.
MEMORY_UTILIZATION = 0.9

# accelerators whose scale-up domain lets every accelerator read every peer's memory directly
# (a switch or a full mesh: one-shot and two-shot all-reduce), and those whose switch reduces
# (NVLink SHARP, NVSwitch generation 3 on Hopper and later: NCCL's nvlsEfficiency is 0 before)
_PEER_TO_PEER = frozenset({"V100", "A100-40GB", "A100", "H100", "H100-PCIe", "H800", "H200", "B200", "MI300X"})
_IN_SWITCH_REDUCTION = frozenset({"H100", "H800", "H200", "B200"})

# memory the driver reports (nvidia-smi's total, MiB), where published: the H100 SXM 80 GB in the
# nvidia-smi output of NVIDIA/nccl issue 1264; the A100s in modal-labs/modal-client pull request
# 2797, which lists nvidia-smi's totals for its GPUs ("H100: 81559MiB (85.52 GB)")
_DRIVER_MEMORY_MIB = {"H100": 81_559, "A100": 81_920, "A100-40GB": 40_960}


# ---------------------------------------------------------------------------------------------
# weight formats
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class WeightFormat:
    """How a model's weights are stored and multiplied.

    The linear layers of the transformer blocks (attention and MLP, expert and shared-expert
    projections) are stored as ``dtype`` (one of :data:`llmmath.DTYPES`) with ``scale_bits`` more
    bits of scales and zero points per weight; every other parameter (embeddings, LM head, norms,
    biases, routers) as ``rest``. ``activations`` is what the products multiply the weights with:
    ``"fp8"`` (W8A8-FP8: both operands FP8, the FP8 tensor peak) or ``"16-bit"`` (weight-only
    quantization, W8A16 or W4A16: the weights are widened to 16 bits inside the kernel, which runs
    at the 16-bit peak and reads the narrow bytes). :func:`weight_format` builds the plain formats,
    :func:`weight_format_from_hf` reads a checkpoint's ``quantization_config``.
    Derived in chapter :doc:`/chapters/serving`.
    """

    name: str
    dtype: str
    scale_bits: float = 0.0
    rest: str = "bf16"
    activations: str = "16-bit"

    def __post_init__(self) -> None:
        check_choice("dtype", self.dtype, DTYPES)
        check_choice("rest", self.rest, DTYPES)
        check_positive("scale_bits", self.scale_bits, allow_zero=True)
        check_choice("activations", self.activations, ("fp8", "16-bit", "fp16", "bf16", "fp32"))


_PLAIN_ACTIVATIONS = {"fp8": "fp8", "int8": "16-bit", "int4": "16-bit", "bf16": "bf16", "fp16": "fp16",
                      "fp32": "fp32"}


def weight_format(dtype: str | WeightFormat) -> WeightFormat:
    """The :class:`WeightFormat` of ``dtype``: a :class:`WeightFormat` is returned as it is; a
    name of :data:`llmmath.DTYPES` stores **every** parameter in that format with no scales (the
    book's convention since :doc:`/chapters/memory`), multiplied as ``fp8`` -> W8A8-FP8,
    ``int8`` -> W8A16, ``int4`` -> W4A16, the 16- and 32-bit formats in themselves.
    Derived in chapter :doc:`/chapters/serving`.
    """
    if isinstance(dtype, WeightFormat):
        return dtype
    name = check_choice("dtype", dtype, DTYPES)
    return WeightFormat(name, name, 0.0, name, _PLAIN_ACTIVATIONS[name])


_TORCH_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "half": "fp16", "float": "fp32"}


def weight_format_from_hf(config: Mapping[str, Any]) -> WeightFormat:
    """The :class:`WeightFormat` of a Hugging Face ``config.json`` (the dictionary): its
    ``torch_dtype`` (or ``dtype``) for the unquantized parameters, and its ``quantization_config``:

    - ``quant_method: fp8`` (DeepSeek-V3's FP8 checkpoint): E4M3 weights with one FP32 scale per
      ``weight_block_size`` block (128 x 128: 32 bits per 16,384 weights), dynamic FP8
      activations: W8A8-FP8. Without a block size, one scale per tensor (not counted).
    - ``quant_method: fbgemm_fp8`` (Meta's Llama 3.1 405B FP8): FP8 weights, one scale per row
      (not counted: ``h`` values per ``h x f`` matrix), W8A8-FP8.
    - ``quant_method: gptq`` or ``awq``: ``bits``-bit integers with, per ``group_size`` weights of
      an output column, a 16-bit scale and a ``bits``-bit zero point (``(16 + bits) / g`` bits per
      weight; ``group_size: -1``, one group per column, is not counted): W4A16 or W8A16.

    No ``quantization_config``: every parameter in ``torch_dtype`` (default ``bf16``). Any other
    ``quant_method`` raises ``ValueError`` naming the field. Derived in chapter
    :doc:`/chapters/serving`.
    """
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a config.json dictionary, got {type(config).__name__}")
    text = config.get("text_config") if isinstance(config.get("text_config"), Mapping) else {}
    torch_dtype = config.get("torch_dtype") or config.get("dtype") or text.get("torch_dtype") or "bfloat16"
    if torch_dtype not in _TORCH_DTYPES:
        raise ValueError(f"torch_dtype must be one of {', '.join(_TORCH_DTYPES)}; got {torch_dtype!r}")
    rest = _TORCH_DTYPES[torch_dtype]
    quant = config.get("quantization_config")
    if quant is None:
        return weight_format(rest)
    if not isinstance(quant, Mapping):
        raise ValueError(f"quantization_config must be an object, got {quant!r}")
    method = quant.get("quant_method")
    if method == "fp8":
        block = quant.get("weight_block_size")
        if block is None:
            return WeightFormat("fp8 (per-tensor scales, W8A8)", "fp8", 0.0, rest, "fp8")
        if (not isinstance(block, (list, tuple)) or len(block) != 2
                or not all(isinstance(x, int) and x > 0 for x in block)):
            raise ValueError(f"quantization_config.weight_block_size must be two positive integers, got {block!r}")
        return WeightFormat(f"fp8 ({block[0]}x{block[1]} blocks, FP32 scales, W8A8)", "fp8",
                            32 / (block[0] * block[1]), rest, "fp8")
    if method == "fbgemm_fp8":
        return WeightFormat("fp8 (per-row scales, W8A8)", "fp8", 0.0, rest, "fp8")
    if method in ("gptq", "awq"):
        bits = quant.get("bits", quant.get("w_bit"))
        group = quant.get("group_size", quant.get("q_group_size", 128))
        if bits not in (4, 8):
            raise ValueError(f"quantization_config.bits must be 4 or 8 for {method}, got {bits!r}")
        if not isinstance(group, int) or (group < 1 and group != -1):
            raise ValueError(f"quantization_config.group_size must be a positive integer or -1, got {group!r}")
        scale = 0.0 if group == -1 else (16 + bits) / group
        what = "per column" if group == -1 else f"group {group}"
        return WeightFormat(f"int{bits} ({method}, {what}, W{bits}A16)", f"int{bits}", scale, rest, "16-bit")
    raise ValueError(f"quantization_config.quant_method must be one of fp8, fbgemm_fp8, gptq, awq; got {method!r}")


def matmul_precision(dtype: str | WeightFormat, gpu: str | Accelerator) -> str:
    """The peak (a key of :data:`llmmath.GPU_PRECISIONS`) at which the products of weights stored
    as ``dtype`` run on ``gpu``: W8A8-FP8 at ``fp8_tensor`` where the accelerator has FP8 tensor
    cores (elsewhere its weights are widened to 16 bits, as vLLM's FP8 Marlin kernels do on
    Ampere); weight-only formats (W8A16, W4A16) and 16-bit weights at ``bf16_tensor``
    (``fp16_tensor`` for FP16 weights, or where there is no BF16); FP32 at ``fp32``. An
    accelerator without the format's peak raises ``ValueError``.
    Derived in chapter :doc:`/chapters/serving`.
    """
    fmt = weight_format(dtype)
    spec = accelerator(gpu)
    peaks = spec.peak_flops
    if fmt.activations == "fp8" and "fp8_tensor" in peaks:
        return "fp8_tensor"
    if fmt.activations in ("fp8", "16-bit"):
        return "bf16_tensor" if "bf16_tensor" in peaks else "fp16_tensor"
    want = {"bf16": "bf16_tensor", "fp16": "fp16_tensor", "fp32": "fp32"}[fmt.activations]
    if want not in peaks:
        raise ValueError(f"dtype={fmt.name!r} multiplies at {want}, which the {spec.name} lacks (it has "
                         f"{', '.join(peaks)}): choose another dtype or pass precision")
    return want


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


def _check_weights(dtype: Any) -> WeightFormat:
    if not isinstance(dtype, (str, WeightFormat)):
        raise TypeError(f"dtype must be one of {', '.join(DTYPES)} or a WeightFormat, got {dtype!r}")
    return weight_format(dtype)


# ---------------------------------------------------------------------------------------------
# FLOPs
# ---------------------------------------------------------------------------------------------


def prefill_flops_breakdown(
    cfg: TransformerConfig, batch: int, prompt: int, *, logits: str = "last", skip_masked: bool = False
) -> dict[str, int]:
    """Exact matmul FLOPs of a prefill per component (the keys of :func:`llmmath.flops_breakdown`):
    the forward pass of ``batch`` sequences of ``prompt`` tokens, with the LM head ``2 b s e V`` at
    every position (``logits="all"``) or ``2 b e V`` at the last one only (``logits="last"``, what
    ``generate`` computes: transformers passes ``logits_to_keep=1``). ``skip_masked`` as in
    :func:`llmmath.flops_breakdown`: ``False`` counts every query-key pair (what eager attention
    computes, and what ``FlopCounterMode`` counts), ``True`` only the causal ones a fused kernel
    computes (what the time bounds use). Derived in chapter :doc:`/chapters/serving`.
    """
    cfg = _check_decoder(cfg)
    prompt = _check_positions(cfg, "prompt", prompt)
    check_choice("logits", logits, LOGITS)
    bd = flops_breakdown(cfg, batch, prompt, skip_masked=skip_masked)
    if logits == "last":
        bd["lm_head"] //= prompt
    return bd


def prefill_flops(
    cfg: TransformerConfig, batch: int, prompt: int, *, logits: str = "last", skip_masked: bool = False
) -> int:
    """Exact matmul FLOPs of a prefill: the sum of :func:`prefill_flops_breakdown` (every
    query-key pair by default, as eager attention computes them and ``FlopCounterMode`` counts
    them; ``skip_masked=True`` for the causal pairs of a fused kernel).
    Derived in chapter :doc:`/chapters/serving`.
    """
    return sum(prefill_flops_breakdown(cfg, batch, prompt, logits=logits, skip_masked=skip_masked).values())


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


def attention_flops_per_byte(cfg: TransformerConfig, kv_dtype: str = "bf16", *, mla: str = "absorbed") -> float:
    """FLOPs the attention of a decode step performs per byte of KV cache it reads: the same for
    every context and batch, since each sequence brings its own cache (every cached key costs
    ``2 a (d + d_v)`` FLOPs and ``2 a_kv d q`` bytes: ``a / a_kv`` for a 16-bit cache, ``q = 2``).
    Absorbed multi-head latent attention scores ``r + d_r`` and sums ``r`` latent values per head
    against one cached latent of ``r + d_r`` values: ``2 a (2 r + d_r) / ((r + d_r) q)``, about
    242 for DeepSeek-V3 with a 16-bit cache, above the ridge point of an H200: such attention
    can be **compute-bound**, unlike grouped-query attention. Computed from the exact counts
    (:func:`decode_flops_breakdown` over :func:`kv_bytes` of one sequence).
    Derived in chapter :doc:`/chapters/serving`.
    """
    cfg = _check_decoder(cfg)
    _check_dtype("kv_dtype", kv_dtype)
    context = 1 if cfg.position != "learned" else min(1, cfg.max_position - 1)
    bd = decode_flops_breakdown(cfg, 1, context, mla=mla)
    return (bd["attn_scores"] + bd["attn_values"]) / (kv_cache_bytes(cfg, 1, context + 1, 1)
                                                     * dtype_bits(kv_dtype) / 8)


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


_LINEAR_KEYS = ("attention", "mlp", "shared_experts", "embedding_projection")


def _format_bytes(linear: float, rest: float, fmt: WeightFormat) -> float:
    """Bytes of ``linear`` weights of the quantized layers and ``rest`` other parameters."""
    if fmt.dtype == fmt.rest and not fmt.scale_bits and isinstance(linear + rest, int):
        return bytes_for(linear + rest, fmt.dtype)  # one format: exact whole bytes
    quantized = linear * (dtype_bits(fmt.dtype) + fmt.scale_bits) / 8
    other = bytes_for(rest, fmt.rest) if isinstance(rest, int) else rest * dtype_bits(fmt.rest) / 8
    return math.ceil(quantized) + other if isinstance(linear, int) else quantized + other


def forward_weight_bytes(
    cfg: TransformerConfig, batch: int, seq: int, dtype: str | WeightFormat = "bf16", *, experts: str = "max"
) -> float:
    """Bytes of the weights one forward pass of ``batch`` sequences of ``seq`` new tokens reads,
    each weight once: :func:`llmmath.param_count` minus what it never touches,

    - in every mixture-of-experts layer the ``E - x`` routed experts no token chose, ``x`` from
      :func:`experts_touched` for the ``b s`` tokens (``experts`` picks the bound);
    - of an untied token-embedding table all but the ``min(V, b s)`` rows looked up (a tied table
      is read whole by the LM head), of a learned position table all but the ``seq`` rows used.

    Stored as ``dtype``: a name of :data:`llmmath.DTYPES` (every parameter in that format, no
    scales: ``ceil(P bits / 8)``) or a :class:`WeightFormat` (the linear layers of the blocks in
    its format plus its scale bits, the rest in its ``rest`` format). A decode step is ``seq = 1``.
    An int for ``experts="max"`` or ``"min"`` and a plain format, else a float.
    Derived in chapter :doc:`/chapters/serving`.
    """
    cfg = _check_decoder(cfg)
    b = check_int("batch", batch)
    s = _check_positions(cfg, "seq", seq)
    fmt = _check_weights(dtype)
    check_choice("experts", experts, EXPERT_BOUNDS)
    parts = param_breakdown(cfg)
    linear: float = sum(parts[k] for k in _LINEAR_KEYS)
    rest: float = sum(parts.values()) - linear
    if cfg.is_moe:
        E, k = cfg.n_experts, cfg.experts_per_token
        n_moe = sum(count for spec, count in cfg.layer_counts.items() if spec.mlp == "moe")
        if E > k:  # one routed expert's weights, from the parameter chapter's two counts
            per_expert = (param_count(cfg) - active_param_count(cfg)) // (n_moe * (E - k))
            linear -= n_moe * (E - experts_touched(cfg, b * s, experts)) * per_expert
    if not cfg.tie_embeddings:
        rest -= (cfg.vocab_size - min(cfg.vocab_size, b * s)) * cfg.embedding_dim
    if cfg.position == "learned":
        rest -= (cfg.max_position + cfg.position_offset - s) * cfg.hidden_size
    return _format_bytes(linear, rest, fmt)


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
# memory
# ---------------------------------------------------------------------------------------------


def serving_memory_bytes(
    cfg: TransformerConfig, batch: int, context: int, *, dtype: str | WeightFormat = "bf16", kv_dtype: str = "bf16",
    tp: int = 1,
) -> float:
    """Bytes one accelerator holds to serve ``batch`` sequences of up to ``context`` tokens: all
    weights of its tensor-parallel shard (:func:`tp_shard`; every expert, used or not) stored as
    ``dtype`` (a name of :data:`llmmath.DTYPES` or a :class:`WeightFormat`, whose scales count)
    plus the shard's KV cache (:func:`kv_bytes`). Activations, the CUDA context and allocator
    fragmentation are not included (the reserve of :func:`max_decode_batch`).
    Derived in chapter :doc:`/chapters/serving`.
    """
    shard = tp_shard(cfg, tp)
    return _weights_held(shard, dtype) + kv_bytes(shard, batch, context, kv_dtype)


def _weights_held(shard: TransformerConfig, dtype: str | WeightFormat) -> float:
    parts = param_breakdown(shard)
    linear = sum(parts[k] for k in _LINEAR_KEYS)
    return _format_bytes(linear, sum(parts.values()) - linear, _check_weights(dtype))


def allocatable_memory_bytes(gpu: str | Accelerator) -> int:
    """The memory an application on ``gpu`` can ask for: the total the driver reports where it
    is published (``nvidia-smi``: 81,559 MiB, 85.5e9 bytes, for an H100 SXM 80 GB, whose data sheet
    says 80 GB; 81,920 MiB for an A100 80 GB, 40,960 MiB for an A100 40 GB), else the data sheet's
    capacity (``llmmath.GPUS``, decimal bytes, smaller: the conservative reading). Part of
    it goes to the CUDA context and the engine's buffers: the reserve of :func:`max_decode_batch`.
    Derived in chapter :doc:`/chapters/serving`.
    """
    spec = accelerator(gpu)
    reported = _DRIVER_MEMORY_MIB.get(_gpu_key(spec) or "")
    return spec.memory_bytes if reported is None else reported * 2**20


def usable_memory_bytes(gpu: str | Accelerator, utilization: float = MEMORY_UTILIZATION) -> int:
    """The bytes an engine lets itself fill with weights and KV cache on ``gpu``:
    ``floor(utilization M)``, vLLM's budget (``total_gpu_memory x gpu_memory_utilization``) with
    ``M`` the memory the driver reports (:func:`allocatable_memory_bytes`) and ``utilization``
    vLLM's default (:data:`MEMORY_UTILIZATION`). The rest is the reserve for activations,
    communication buffers, CUDA graphs and fragmentation. Derived in chapter :doc:`/chapters/serving`.
    """
    utilization = check_fraction("utilization", utilization)
    return math.floor(utilization * allocatable_memory_bytes(gpu))


def _check_fits(shard: TransformerConfig, batch: int, context: int, spec: Accelerator, dtype: Any,
                kv_dtype: str, tp: int) -> None:
    need = _weights_held(shard, dtype) + kv_bytes(shard, batch, context, kv_dtype)
    if need > allocatable_memory_bytes(spec):
        per = "per accelerator " if tp > 1 else ""
        raise ValueError(
            f"batch={batch} with context={context} does not fit: weights and KV cache need {need / 1e9:,.3g} GB "
            f"{per}(tp={tp}, weights {weight_format(dtype).name}, cache {kv_dtype}), the {spec.name} has "
            f"{allocatable_memory_bytes(spec) / 1e9:,.3g} GB; lower batch or context, quantize, or raise tp "
            "(max_decode_batch gives the largest batch)")


def max_decode_batch(
    cfg: TransformerConfig, context: int, gpu: str, *, reserve_bytes: int | None = None,
    dtype: str | WeightFormat = "bf16", kv_dtype: str = "bf16", tp: int = 1,
) -> int:
    """The largest number of sequences of ``context`` tokens whose KV cache fits beside the
    weights: ``floor((M - W - R) / C_1)`` with ``M`` the memory an application can allocate
    (:func:`allocatable_memory_bytes`), ``W`` the accelerator's shard of the weights, ``R =
    reserve_bytes`` and ``C_1`` one sequence's cache (:func:`serving_memory_bytes`). The default
    reserve is what vLLM's default budget leaves, ``M - usable_memory_bytes(gpu)`` (10 % of
    ``M``); pass another one to state yours. For full-attention models ``batch x context`` is then
    fixed: the token capacity of the cache. 0 if not even one sequence fits; ``ValueError`` if the
    weights and reserve alone do not. Derived in chapter :doc:`/chapters/serving`.
    """
    spec = accelerator(gpu)
    memory = allocatable_memory_bytes(spec)
    if reserve_bytes is None:
        reserve_bytes = memory - usable_memory_bytes(spec)
    reserve_bytes = check_int("reserve_bytes", reserve_bytes, minimum=0)
    shard = tp_shard(cfg, tp)
    weights = _weights_held(shard, dtype)
    free = memory - weights - reserve_bytes
    if free < 0:
        raise ValueError(
            f"reserve_bytes={reserve_bytes} and the weights ({weights / 1e9:,.3g} GB per accelerator, tp={tp}, "
            f"{weight_format(dtype).name}) exceed the {memory / 1e9:,.3g} GB of the {spec.name}: "
            "raise tp or quantize")
    return int(free // kv_bytes(shard, 1, context, kv_dtype))


# ---------------------------------------------------------------------------------------------
# tensor parallelism and its all-reduce
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


def _gpu_key(spec: Accelerator) -> str | None:
    return next((key for key, value in GPUS.items() if value is spec), None)


def _check_tp(spec: Accelerator, tp: Any) -> int:
    t = check_int("tp", tp)
    if t > spec.domain_size or (spec.scale_up is None and t > 1):
        raise ValueError(f"tp must be an integer <= {spec.domain_size} (the scale-up domain of the {spec.name}), "
                         f"got {t}")
    return t


def allreduce_algorithms(gpu: str | Accelerator, tp: int) -> tuple[str, ...]:
    """The all-reduce algorithms (:data:`ALLREDUCE_ALGORITHMS`) ``tp`` accelerators of one
    scale-up domain of ``gpu`` can run: NCCL's ring and tree everywhere; one-shot and two-shot
    where every accelerator reads its peers' memory directly (an NVSwitch, AMD's Infinity Fabric
    mesh, a bridged pair: vLLM's and TensorRT-LLM's custom all-reduce), not on a TPU torus; NVLS
    where the switch itself reduces (NVLink SHARP, Hopper and later). ``tp`` must fit in the
    domain. Derived in chapter :doc:`/chapters/serving`.
    """
    spec = accelerator(gpu)
    t = _check_tp(spec, tp)
    key = _gpu_key(spec)
    offered = ["ring", "tree"]
    if key in _PEER_TO_PEER and t > 1:
        offered += ["one-shot", "two-shot"]
    if key in _IN_SWITCH_REDUCTION and t > 1:
        offered.append("nvls")
    return tuple(offered)


def allreduce_cost(algorithm: str, tp: int, message_bytes: float) -> tuple[int, float]:
    """``(steps, bytes)`` of one all-reduce of ``message_bytes`` (``M``) over ``tp`` (``t``)
    accelerators: the sequential steps that each pay the link's latency, and the bytes each
    accelerator sends (and receives) over its link. Ring ``2(t-1)``, ``2(t-1)M/t``, tree
    ``2 ceil(log2 t)``, ``2M`` and NVLS 2, ``(t+1)M/t`` (:func:`llmmath.collective_steps`,
    :func:`llmmath.collective_bytes`); one-shot 1, ``(t-1)M``; two-shot 2, ``2(t-1)M/t``
    (:data:`ALLREDUCE_ALGORITHMS`). ``t = 1``: ``(0, 0)``.
    Derived in chapter :doc:`/chapters/serving`.
    """
    from .parallel import collective_bytes, collective_steps

    check_choice("allreduce", algorithm, ALLREDUCE_ALGORITHMS)
    t = check_int("tp", tp)
    M = check_positive("message_bytes", message_bytes, allow_zero=True)
    if t == 1:
        return 0, 0.0
    if algorithm in ("ring", "tree", "nvls"):
        return (collective_steps("all_reduce", t, algorithm),
                float(collective_bytes("all_reduce", t, M, algorithm)))
    return {"one-shot": (1, (t - 1) * M), "two-shot": (2, 2 * (t - 1) * M / t)}[algorithm]


def allreduce_seconds(message_bytes: float, tp: int, gpu: str | Accelerator, algorithm: str) -> float:
    """Time of one all-reduce under the latency-bandwidth model, ``steps alpha + bytes / W_link``
    (:func:`allreduce_cost`) on the scale-up link of ``gpu`` (latency ``alpha``, per-direction
    bandwidth ``W_link``: ``llmmath.GPUS``; the latency is an assumption). The algorithm must
    be one the hardware offers (:func:`allreduce_algorithms`). At decode sizes (``M = 2bh`` bytes,
    kilobytes) the latency term decides: a ring pays ``2(t-1)`` of them, one-shot one.
    Derived in chapter :doc:`/chapters/serving`.
    """
    spec = accelerator(gpu)
    offered = allreduce_algorithms(spec, tp)
    if algorithm not in offered:
        check_choice("allreduce", algorithm, ALLREDUCE_ALGORITHMS)
        raise ValueError(f"allreduce={algorithm!r} is not offered by the {spec.name} at tp={tp}: it offers "
                         f"{', '.join(offered)}")
    steps, sent = allreduce_cost(algorithm, tp, message_bytes)
    if steps == 0:
        return 0.0
    return steps * spec.scale_up.latency + sent / spec.scale_up.bandwidth


def _communication(cfg: TransformerConfig, tokens: int, spec: Accelerator, t: int, allreduce: str,
                   activation_dtype: str) -> tuple[float, float, str]:
    """(seconds, latency part of them, algorithm) of the all-reduces of one forward pass of
    ``tokens`` tokens over ``t`` accelerators; ``allreduce="best"`` takes the fastest offered."""
    if t == 1:
        return 0.0, 0.0, "none"
    count = (1 if cfg.parallel_block else 2) * cfg.n_layers
    message = tp_allreduce_bytes(cfg, tokens, activation_dtype) / count
    offered = allreduce_algorithms(spec, t)
    if allreduce == "best":
        allreduce = min(offered, key=lambda a: allreduce_seconds(message, t, spec, a))
    seconds = count * allreduce_seconds(message, t, spec, allreduce)
    return seconds, count * allreduce_cost(allreduce, t, message)[0] * spec.scale_up.latency, allreduce


# ---------------------------------------------------------------------------------------------
# time: bounds and predictions
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ServingCalibration:
    """The constants of a serving **prediction**: the fraction of the peak FLOP/s
    (``compute_efficiency``) and of the memory bandwidth (``memory_efficiency``) the kernels reach,
    fitted to published measurements (``source``: what was fitted, on which rows), and the
    prediction's measured error on them (``error``: the median and largest relative error, and
    how it was measured). A prediction runs the kernels at these fractions and the all-reduces in
    series with them (what an engine without compute-communication overlap does, vLLM's default).
    Derived in chapter :doc:`/chapters/serving`.
    """

    name: str
    compute_efficiency: float
    memory_efficiency: float
    source: str
    error: str

    def __post_init__(self) -> None:
        check_fraction("compute_efficiency", self.compute_efficiency)
        check_fraction("memory_efficiency", self.memory_efficiency)


def _check_calibration(calibration: Any) -> ServingCalibration | None:
    if calibration is not None and not isinstance(calibration, ServingCalibration):
        raise TypeError(f"calibration must be a ServingCalibration or None, got {type(calibration).__name__}")
    return calibration


def _experts(experts: str | None, calibration: ServingCalibration | None) -> str:
    if experts is None:
        return "min" if calibration is None else "expected"
    return check_choice("experts", experts, EXPERT_BOUNDS)


def _setup(cfg: Any, gpu: Any, tp: Any, dtype: Any, precision: str | None, allreduce: str,
           calibration: Any) -> tuple[TransformerConfig, Accelerator, int, TransformerConfig, str, float, float]:
    cfg = _check_decoder(cfg)
    spec = accelerator(gpu)
    t = _check_tp(spec, tp)
    fmt = _check_weights(dtype)
    _check_calibration(calibration)
    if allreduce != "best":
        check_choice("allreduce", allreduce, ALLREDUCE_ALGORITHMS)
        if t > 1:
            allreduce_seconds(0, t, spec, allreduce)  # is it offered?
    precision = matmul_precision(fmt, spec) if precision is None else precision
    peak = gpu_peak_flops(spec, precision)
    calib = calibration or ServingCalibration("bound", 1.0, 1.0, "", "")
    return cfg, spec, t, tp_shard(cfg, t), precision, peak * calib.compute_efficiency, \
        spec.memory_bandwidth * calib.memory_efficiency


def _combine(times: dict[str, Any], memory_key: str, calibration: ServingCalibration | None) -> dict[str, Any]:
    kernels = (max(times["weights_read"], times["matmul_compute"])
               + max(times[memory_key], times["attention_compute"]))
    comm = times["communication"]
    times.update(kernels=kernels, mode="bound" if calibration is None else f"predicted ({calibration.name})",
                 seconds=max(kernels, comm) if calibration is None else kernels + comm)
    return times


def decode_step_times(
    cfg: TransformerConfig, batch: int, context: int, gpu: str, *, tp: int = 1, dtype: str | WeightFormat = "bf16",
    kv_dtype: str = "bf16", precision: str | None = None, experts: str | None = None, mla: str = "absorbed",
    activation_dtype: str = "bf16", allreduce: str = "best", calibration: ServingCalibration | None = None,
    check_memory: bool = True,
) -> dict[str, Any]:
    """One decode step of ``batch`` sequences holding ``context`` tokens each, on ``tp``
    accelerators of one scale-up domain (``tp = 1``: one), term by term (seconds):

    - ``weights_read``: the weights it touches (:func:`forward_weight_bytes`, one shard) over the
      memory bandwidth ``W_mem``; ``matmul_compute``: the FLOPs of the weight products over the
      peak ``pi`` of the weights' format (:func:`matmul_precision`, or ``precision``);
    - ``kv_read``: the shard's KV cache (:func:`kv_bytes`) over ``W_mem``;
      ``attention_compute``: the attention's FLOPs over ``pi``;
    - ``communication``: ``2L`` all-reduces of ``b h`` values (:func:`tp_allreduce_bytes`) with the
      algorithm ``allreduce`` (default ``"best"``: the fastest the hardware offers,
      :func:`allreduce_algorithms`), named in ``allreduce``;
    - ``kernels``: the weight products and the attention as two kernels, each its own roofline:
      ``max(weights_read, matmul_compute) + max(kv_read, attention_compute)``;
    - ``seconds``: the **bound** ``max(kernels, communication)`` (the all-reduces overlapped with
      the kernels, which a split batch or a fused all-reduce allows) or, with ``calibration``, the
      **prediction** ``kernels + communication`` at the calibration's efficiencies.

    Mixture of experts: the bound reads the fewest experts a batch can touch (``k`` per layer,
    ``experts="min"``), the prediction the expected number under uniform routing; pass
    ``experts="max"`` for the other end. A ``batch`` whose weights and cache exceed the memory
    (:func:`serving_memory_bytes` against :func:`allocatable_memory_bytes`) raises ``ValueError``,
    unless ``check_memory=False`` (a pipeline stage holds less than the whole shard: its caller
    checks). Derived in chapter :doc:`/chapters/serving`.
    """
    cfg, spec, t, shard, precision, peak, bandwidth = _setup(cfg, gpu, tp, dtype, precision, allreduce, calibration)
    b = check_int("batch", batch)
    n = _check_positions(cfg, "context", context, extra=1)
    _check_dtype("kv_dtype", kv_dtype)
    _check_dtype("activation_dtype", activation_dtype)
    if check_bool("check_memory", check_memory):
        _check_fits(shard, b, n, spec, dtype, kv_dtype, t)
    bd = decode_flops_breakdown(shard, b, n, mla=mla)
    attention = bd["attn_scores"] + bd["attn_values"]
    comm, latency, algorithm = _communication(cfg, b, spec, t, allreduce, activation_dtype)
    times = {
        "weights_read": forward_weight_bytes(shard, b, 1, dtype, experts=_experts(experts, calibration)) / bandwidth,
        "kv_read": kv_bytes(shard, b, n, kv_dtype) / bandwidth,
        "matmul_compute": (sum(bd.values()) - attention) / peak,
        "attention_compute": attention / peak,
        "communication": comm, "communication_latency": latency, "allreduce": algorithm, "precision": precision,
    }
    return _combine(times, "kv_read", calibration)


def decode_step_seconds(
    cfg: TransformerConfig, batch: int, context: int, gpu: str, *, precision: str | None = None,
    dtype: str | WeightFormat = "bf16", kv_dtype: str = "bf16", experts: str | None = None, mla: str = "absorbed",
    calibration: ServingCalibration | None = None,
) -> float:
    """Lower bound on the time of one decode step on one accelerator, the time per output token
    of every sequence: the two kernels' rooflines, ``max(F_mm / pi, W / W_mem) + max(F_att / pi,
    C / W_mem)`` (:func:`decode_step_times`); with ``calibration``, the prediction instead.
    Derived in chapter :doc:`/chapters/serving`.
    """
    return decode_step_times(cfg, batch, context, gpu, dtype=dtype, kv_dtype=kv_dtype, precision=precision,
                             experts=experts, mla=mla, calibration=calibration)["seconds"]


def tp_decode_step_seconds(
    cfg: TransformerConfig, batch: int, context: int, gpu: str, tp: int, *, precision: str | None = None,
    dtype: str | WeightFormat = "bf16", kv_dtype: str = "bf16", experts: str | None = None, mla: str = "absorbed",
    activation_dtype: str = "bf16", allreduce: str = "best", calibration: ServingCalibration | None = None,
) -> float:
    """Lower bound on a decode step over ``tp`` accelerators of one scale-up domain (NVLink,
    Infinity Fabric, ICI): one shard's kernels (:func:`tp_shard`) and the all-reduces of
    :func:`tp_allreduce_bytes` with the fastest algorithm offered (or ``allreduce``), overlapped:
    ``max(kernels, communication)`` (:func:`decode_step_times`); with ``calibration``, the
    prediction ``kernels + communication``. ``tp`` must fit in the scale-up domain.
    Derived in chapter :doc:`/chapters/serving`.
    """
    return decode_step_times(cfg, batch, context, gpu, tp=tp, dtype=dtype, kv_dtype=kv_dtype, precision=precision,
                             experts=experts, mla=mla, activation_dtype=activation_dtype, allreduce=allreduce,
                             calibration=calibration)["seconds"]


def decode_throughput(
    cfg: TransformerConfig, batch: int, context: int, gpu: str, *, tp: int = 1, **options: Any
) -> float:
    """Upper bound on the tokens per second a replica generates at ``batch`` and ``context``:
    ``batch / step time``, the step from :func:`decode_step_times` (``options`` are passed on). It
    rises with the batch while the weights dominate the bytes and flattens once compute (or the KV
    cache) does. Derived in chapter :doc:`/chapters/serving`.
    """
    return batch / decode_step_times(cfg, batch, context, gpu, tp=tp, **options)["seconds"]


def prefill_times(
    cfg: TransformerConfig, batch: int, prompt: int, gpu: str, *, tp: int = 1, dtype: str | WeightFormat = "bf16",
    kv_dtype: str = "bf16", precision: str | None = None, experts: str | None = None, logits: str = "last",
    activation_dtype: str = "bf16", allreduce: str = "best", calibration: ServingCalibration | None = None,
) -> dict[str, Any]:
    """A prefill of ``batch`` prompts of ``prompt`` tokens on ``tp`` accelerators, term by term
    as :func:`decode_step_times`: ``weights_read``, ``matmul_compute``, ``kv_write`` (the cache it
    writes), ``attention_compute`` (the **causal** pairs a fused kernel computes,
    ``skip_masked=True``; they are ``(s + 1) / (2 s)`` of all pairs, so counting every pair would
    overstate the attention of a lower bound ``2 s / (s + 1)``-fold), ``communication`` (``2L``
    all-reduces of ``b s h`` values: as large as the compute for a 70B model on eight GPUs),
    ``kernels`` and ``seconds``: the bound
    ``max(kernels, communication)``, all of the communication overlapped (a prompt split in chunks
    hides each chunk's all-reduces behind the next chunk's products; only the last chunk's stay
    exposed, which the bound neglects), or the prediction ``kernels + communication`` (vLLM's
    prefill does not overlap them). ``sequential``: ``kernels + communication`` at peak, what an
    engine without overlap cannot beat. Derived in chapter :doc:`/chapters/serving`.
    """
    cfg, spec, t, shard, precision, peak, bandwidth = _setup(cfg, gpu, tp, dtype, precision, allreduce, calibration)
    b = check_int("batch", batch)
    _check_dtype("kv_dtype", kv_dtype)
    _check_dtype("activation_dtype", activation_dtype)
    bd = prefill_flops_breakdown(shard, b, prompt, logits=logits, skip_masked=True)
    attention = bd["attn_scores"] + bd["attn_values"]
    comm, latency, algorithm = _communication(cfg, b * prompt, spec, t, allreduce, activation_dtype)
    times = {
        "weights_read": forward_weight_bytes(shard, b, prompt, dtype,
                                             experts=_experts(experts, calibration)) / bandwidth,
        "kv_write": kv_bytes(shard, b, prompt, kv_dtype) / bandwidth,
        "matmul_compute": (sum(bd.values()) - attention) / peak,
        "attention_compute": attention / peak,
        "communication": comm, "communication_latency": latency, "allreduce": algorithm, "precision": precision,
    }
    times = _combine(times, "kv_write", calibration)
    times["sequential"] = times["kernels"] + comm
    return times


def prefill_seconds(
    cfg: TransformerConfig, batch: int, prompt: int, gpu: str, *, tp: int = 1, precision: str | None = None,
    dtype: str | WeightFormat = "bf16", kv_dtype: str = "bf16", logits: str = "last", experts: str | None = None,
    allreduce: str = "best", calibration: ServingCalibration | None = None,
) -> float:
    """Lower bound on the time of a prefill (the time to first token of an idle server) on ``tp``
    accelerators: :func:`prefill_times`' ``seconds`` (causal attention pairs, the weights' peak,
    the all-reduces overlapped); with ``calibration``, the prediction.
    Derived in chapter :doc:`/chapters/serving`.
    """
    return prefill_times(cfg, batch, prompt, gpu, tp=tp, dtype=dtype, kv_dtype=kv_dtype, precision=precision,
                         experts=experts, logits=logits, allreduce=allreduce, calibration=calibration)["seconds"]


def _decode_sum(first: dict[str, Any], last: dict[str, Any], steps: int,
                calibration: ServingCalibration | None) -> float:
    """Time of ``steps`` decode steps whose contexts run from ``first``'s to ``last``'s. The
    weights' terms are the same every step; the cache and attention terms grow linearly with the
    context (concavely under a sliding window), so their sums are at least ``steps`` times the mean
    of the two ends; and a sum of maxima is at least the maximum of the sums."""
    if steps == 0:
        return 0.0
    weights = steps * max(first["weights_read"], first["matmul_compute"])
    kv = steps * (first["kv_read"] + last["kv_read"]) / 2
    attention = steps * (first["attention_compute"] + last["attention_compute"]) / 2
    kernels = weights + max(kv, attention)
    comm = steps * first["communication"]
    return max(kernels, comm) if calibration is None else kernels + comm


def generation_seconds(
    cfg: TransformerConfig, batch: int, prompt: int, output: int, gpu: str, *, tp: int = 1,
    calibration: ServingCalibration | None = None, **options: Any,
) -> dict[str, float]:
    """Time for ``batch`` sequences generated together (static batching) to read ``prompt``
    tokens and write ``output``: the prefill (:func:`prefill_times`, which gives the first output
    token) then ``output - 1`` decode steps at contexts ``prompt`` to ``prompt + output - 2``
    (:func:`decode_step_times`). Returns ``prefill``, ``decode`` and ``seconds``; with
    ``calibration`` the predictions. ``options`` (``dtype``, ``kv_dtype``, ``precision``,
    ``experts``, ``allreduce``) are passed on; the batch must fit at the last context.
    Derived in chapter :doc:`/chapters/serving`.
    """
    output = check_int("output", output)
    prefill = prefill_times(cfg, batch, prompt, gpu, tp=tp, calibration=calibration, **options)["seconds"]
    steps = output - 1
    kw = {k: v for k, v in options.items() if k != "logits"}
    first = decode_step_times(cfg, batch, prompt, gpu, tp=tp, calibration=calibration, **kw)
    last = decode_step_times(cfg, batch, prompt + max(steps - 1, 0), gpu, tp=tp, calibration=calibration, **kw)
    decode = _decode_sum(first, last, steps, calibration)
    return {"prefill": prefill, "decode": decode, "seconds": prefill + decode}


def steady_state(
    cfg: TransformerConfig, batch: int, prompt: int, output: int, gpu: str, *, tp: int = 1,
    dtype: str | WeightFormat = "bf16", kv_dtype: str = "bf16", precision: str | None = None,
    experts: str | None = None, mla: str = "absorbed", activation_dtype: str = "bf16", allreduce: str = "best",
    calibration: ServingCalibration | None = None, check_memory: bool = True,
) -> dict[str, float]:
    """A server that keeps ``batch`` requests in flight, each a ``prompt``-token prompt and
    ``output`` generated tokens (continuous batching, the prompts' prefill riding in the decode
    steps as chunks). Per request it must run its prefill (:func:`prefill_times` of one prompt)
    and ``output - 1`` decode tokens (contexts ``prompt`` to ``prompt + output - 2``), and it
    shares each decode step's weight reads with the ``batch - 1`` others: its share of the time is
    at least ``max(F_mm / pi, (output - 1) W / (batch W_mem)) + max(F_att / pi, Q_kv / W_mem)``
    (kernels as in :func:`decode_step_times`; ``Q_kv`` the cache it writes and reads), with the
    all-reduces overlapped (bound) or in series (``calibration``: the prediction).

    Returns ``request_seconds`` (that share), ``requests_per_second``, ``output_tokens_per_second``
    and ``input_tokens_per_second`` of the replica, ``tokens_per_second_per_gpu`` (output), and
    ``seconds_per_output_token``, the decode step of the steady state
    (``batch request_seconds / (output - 1)``). The batch must fit at the longest context.
    Derived in chapter :doc:`/chapters/serving`.
    """
    cfg, spec, t, shard, precision, peak, bandwidth = _setup(cfg, gpu, tp, dtype, precision, allreduce, calibration)
    b, p, o = check_int("batch", batch), _check_positions(cfg, "prompt", prompt), check_int("output", output)
    kw = dict(tp=t, dtype=dtype, kv_dtype=kv_dtype, precision=precision, experts=experts,
              activation_dtype=activation_dtype, allreduce=allreduce, calibration=calibration)
    pre = prefill_times(cfg, 1, p, spec, **kw)
    steps = o - 1
    share = steps / b
    if steps:
        first = decode_step_times(cfg, b, p, spec, mla=mla, check_memory=check_memory, **kw)
        last = decode_step_times(cfg, b, p + steps - 1, spec, mla=mla, check_memory=check_memory, **kw)
    else:
        first = last = dict.fromkeys(("weights_read", "kv_read", "matmul_compute", "attention_compute",
                                      "communication", "communication_latency"), 0.0)
    matmul = pre["matmul_compute"] + share * first["matmul_compute"]
    weights = share * first["weights_read"]  # the prompt's chunks ride in decode steps: no reads of their own
    kv = pre["kv_write"] + share * (first["kv_read"] + last["kv_read"]) / 2
    attention = pre["attention_compute"] + share * (first["attention_compute"] + last["attention_compute"]) / 2
    kernels = max(matmul, weights) + max(kv, attention)
    comm = (pre["communication"] - pre["communication_latency"]) + share * first["communication"]
    seconds = max(kernels, comm) if calibration is None else kernels + comm
    return {
        "request_seconds": seconds,
        "requests_per_second": 1 / seconds,
        "output_tokens_per_second": o / seconds,
        "input_tokens_per_second": p / seconds,
        "tokens_per_second_per_gpu": o / seconds / t,
        "seconds_per_output_token": b * seconds / steps if steps else 0.0,
    }


# ---------------------------------------------------------------------------------------------
# published measurements and the calibration of predictions
# ---------------------------------------------------------------------------------------------

#: What a row of :func:`serving_measurements` measures: the time to first token of one batch of
#: prompts (seconds) or the output tokens per second and per GPU of a static batch.
MEASUREMENT_METRICS = ("ttft_seconds", "output_tokens_per_second_per_gpu")


def serving_measurements() -> list[dict[str, Any]]:
    """Published serving measurements with their exact set-up, one dict per row: ``model`` (a
    preset), ``gpu``, ``tp``, ``weights`` and ``kv`` formats, ``batch``, ``input`` and ``output``
    tokens, ``metric`` (:data:`MEASUREMENT_METRICS`), ``value``, ``table`` (where in the source)
    and ``source`` (a key of the book's bibliography). Read from ``llmmath/data/serving_measurements.json``:
    TensorRT-LLM's performance tables (static batching, H100 in FP8, A100 in FP16).
    Derived in chapter :doc:`/chapters/serving`.
    """
    import json
    from importlib import resources

    data = json.loads(resources.files("llmmath").joinpath("data/serving_measurements.json").read_text("utf-8"))
    return [{**row, "source": data["source"]} for row in data["rows"]]


_ROW_FIELDS = ("model", "gpu", "tp", "weights", "kv", "batch", "input", "output", "metric")


def _row_terms(row: Mapping[str, Any]) -> tuple[tuple[tuple[float, float], ...], float]:
    """The work of a measurement row at peak: (compute seconds, memory seconds) per kernel class
    and phase, and the communication seconds; the row's bound and predictions combine them."""
    check_choice("metric", row["metric"], MEASUREMENT_METRICS)
    return _terms_of(*(row[k] for k in _ROW_FIELDS))


@functools.lru_cache(maxsize=256)
def _terms_of(model: str, gpu: str, tp: int, weights: str, kv: str, batch: int, prompt: int, output: int,
              metric: str) -> tuple[tuple[tuple[float, float], ...], float]:
    from .presets import preset

    cfg = preset(model)
    kw = dict(tp=tp, dtype=weights, kv_dtype=kv)
    pre = prefill_times(cfg, batch, prompt, gpu, **kw)
    pairs = [(pre["matmul_compute"], pre["weights_read"]), (pre["attention_compute"], pre["kv_write"])]
    comm = pre["communication"]
    steps = output - 1
    if metric == "output_tokens_per_second_per_gpu" and steps:
        first = decode_step_times(cfg, batch, prompt, gpu, **kw)
        last = decode_step_times(cfg, batch, prompt + steps - 1, gpu, **kw)
        pairs += [(steps * first["matmul_compute"], steps * first["weights_read"]),
                  (steps * (first["attention_compute"] + last["attention_compute"]) / 2,
                   steps * (first["kv_read"] + last["kv_read"]) / 2)]
        comm += steps * first["communication"]
    return tuple(pairs), comm


def _row_value(row: Mapping[str, Any], seconds: float) -> float:
    if row["metric"] == "ttft_seconds":
        return seconds
    return row["batch"] * row["output"] / (seconds * row["tp"])


def measurement_bound(row: Mapping[str, Any]) -> float:
    """The book's bound on what a row of :func:`serving_measurements` measured: a lower bound on
    its time to first token (:func:`prefill_seconds`), or an upper bound on its output tokens per
    second per GPU, ``batch output / (tp generation_seconds)`` (:func:`generation_seconds`).
    Derived in chapter :doc:`/chapters/serving`.
    """
    from .presets import preset

    check_choice("metric", row["metric"], MEASUREMENT_METRICS)
    args = (preset(row["model"]), row["batch"], row["input"])
    kw = dict(tp=row["tp"], dtype=row["weights"], kv_dtype=row["kv"])
    if row["metric"] == "ttft_seconds":
        return prefill_seconds(*args, row["gpu"], **kw)
    return _row_value(row, generation_seconds(*args, row["output"], row["gpu"], **kw)["seconds"])


def measurement_prediction(row: Mapping[str, Any], calibration: ServingCalibration) -> float:
    """The prediction of a row of :func:`serving_measurements` with ``calibration``: every kernel
    class at ``compute_efficiency`` of peak and ``memory_efficiency`` of the bandwidth, the
    all-reduces in series. Derived in chapter :doc:`/chapters/serving`.
    """
    calibration = _check_calibration(calibration)
    if calibration is None:
        raise TypeError("calibration must be a ServingCalibration")
    pairs, comm = _row_terms(row)
    eta_c, eta_m = calibration.compute_efficiency, calibration.memory_efficiency
    return _row_value(row, sum(max(c / eta_c, m / eta_m) for c, m in pairs) + comm)


def fit_serving_calibration(rows: list[Mapping[str, Any]], name: str = "fitted") -> ServingCalibration:
    """The :class:`ServingCalibration` whose predictions (:func:`measurement_prediction`) best
    match ``rows`` (of :func:`serving_measurements`): the compute and memory efficiencies, each a
    multiple of 0.01 in ``(0, 1]``, that minimize the sum of squared log ratios of predicted to
    measured values (an exhaustive search of the 100 x 100 grid); its ``error`` states the median
    and largest relative error on the rows. Derived in chapter :doc:`/chapters/serving`.
    """
    import numpy as np

    if not rows:
        raise ValueError("rows must hold at least one measurement")
    grid = np.arange(1, 101) / 100
    eta_c, eta_m = grid[:, None], grid[None, :]
    loss = np.zeros((grid.size, grid.size))
    terms = [_row_terms(row) for row in rows]
    for row, (pairs, comm) in zip(rows, terms, strict=False):
        seconds = sum(np.maximum(c / eta_c, m / eta_m) for c, m in pairs) + comm
        value = seconds if row["metric"] == "ttft_seconds" else row["batch"] * row["output"] / (seconds * row["tp"])
        loss += np.log(value / row["value"]) ** 2
    i, j = np.unravel_index(int(np.argmin(loss)), loss.shape)
    fitted = ServingCalibration(name, float(grid[i]), float(grid[j]), "", "")
    errors = [abs(measurement_prediction(row, fitted) / row["value"] - 1) for row in rows]
    return dataclasses.replace(
        fitted, source=f"least squares (log) on {len(rows)} rows of serving_measurements()",
        error=f"median {float(np.median(errors)):.0%}, largest {max(errors):.0%} on the rows fitted")


#: The placeholder calibration of serving predictions: :func:`fit_serving_calibration` on every
#: row of :func:`serving_measurements` (TensorRT-LLM's static-batching tables on H100 in FP8 and
#: A100 in FP16), until the step-time model's calibration (issue 34) covers serving. Its error is
#: large: two constants cannot tell a 2023 engine's 70B tensor-parallel runs (predicted up to
#: 2.35x too fast) from its single-GPU ones.
SERVING_CALIBRATION = ServingCalibration(
    "TensorRT-LLM tables", 0.54, 0.51,
    "least squares (log) on the 29 rows of serving_measurements(): TensorRT-LLM's performance tables "
    "(v0.5 first-token latency, v0.6.1 throughput; H100 FP8, A100 FP16)",
    "median 28%, largest 135% on the rows fitted; leave one out: median 30%, largest 142%")


# ---------------------------------------------------------------------------------------------
# critical batches
# ---------------------------------------------------------------------------------------------


def _smallest(predicate: Any, limit: int = 2**40) -> int | None:
    """The smallest ``b >= 1`` with ``predicate(b)`` for a predicate false then true."""
    hi = 1
    while not predicate(hi):
        hi *= 2
        if hi > limit:
            return None
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if predicate(mid) else (mid, hi)
    return hi


def weight_critical_batch(
    cfg: TransformerConfig, gpu: str, *, dtype: str | WeightFormat = "bf16", precision: str | None = None,
    experts: str = "max",
) -> int:
    """The critical batch of Austin et al. (2025): the smallest batch at which a decode step's
    **weight products** are compute-bound, ``b F_w / pi >= W(b) / W_mem``, with ``F_w`` the FLOPs
    of the weight products per token (two per weight it multiplies) and ``W(b)`` the weight bytes
    the step reads. The attention is another kernel and is left out, so the answer does not depend
    on the context. Dense: about the ridge point times ``q / 2`` (``q`` bytes per weight): about
    300 for 16-bit weights on an H100. A mixture of experts reads every expert once the batch is
    large (``experts="max"``, the default) but multiplies each token by ``k`` of them: the ridge
    point times ``q / 2`` times total over active parameters, several thousand for DeepSeek-V3.
    Found by bisection on the exact counts. Derived in chapter :doc:`/chapters/serving`.
    """
    cfg = _check_decoder(cfg)
    spec = accelerator(gpu)
    fmt = _check_weights(dtype)
    check_choice("experts", experts, EXPERT_BOUNDS)
    peak = gpu_peak_flops(spec, matmul_precision(fmt, spec) if precision is None else precision)
    bd = decode_flops_breakdown(cfg, 1, 1)
    per_token = sum(bd.values()) - bd["attn_scores"] - bd["attn_values"]

    def compute_bound(b: int) -> bool:
        return b * per_token / peak >= forward_weight_bytes(cfg, b, 1, fmt, experts=experts) / spec.memory_bandwidth

    found = _smallest(compute_bound)
    assert found is not None  # the bytes are bounded by the parameters, the FLOPs grow with b
    return found


def step_critical_batch(
    cfg: TransformerConfig, context: int, gpu: str, *, precision: str | None = None,
    dtype: str | WeightFormat = "bf16", kv_dtype: str = "bf16", experts: str = "max", mla: str = "absorbed",
) -> int | None:
    """The smallest batch at which a whole decode step at ``context`` has as much FLOP time as
    byte time, ``decode_flops / pi >= decode_bytes / W_mem`` (one roofline for the whole step,
    as if weights and cache streamed through one kernel); ``None`` if no batch does (when each
    sequence's cache takes longer to read than its FLOPs take to compute). Not the critical batch
    of :func:`weight_critical_batch`: the cache, which every sequence brings, pushes it up with the
    context. FLOPs grow as ``b F_1``, bytes as ``W + b C_1``: ``b* = ceil(W pi / (F_1 W_mem - C_1 pi))``.
    Found by bisection on the exact counts. Derived in chapter :doc:`/chapters/serving`.
    """
    cfg = _check_decoder(cfg)
    spec = accelerator(gpu)
    fmt = _check_weights(dtype)
    peak = gpu_peak_flops(spec, matmul_precision(fmt, spec) if precision is None else precision)

    def balanced(b: int) -> bool:
        flops = decode_flops(cfg, b, context, mla=mla)
        moved = decode_bytes(cfg, b, context, fmt, kv_dtype=kv_dtype, experts=experts)
        return flops / peak >= moved / spec.memory_bandwidth

    return _smallest(balanced)
