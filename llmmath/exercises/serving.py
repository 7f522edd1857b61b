"""Checkable exercises of the chapter ``serving``.

The chapter "Serving a transformer: prefill, decode and the KV cache" (``chapters/serving.ipynb``).
Registered by :mod:`llmmath.check` under the chapter's slug (this module's name with hyphens). Each
part computes its expected value with llmmath when an answer is checked: no answer is stored here.
"""

from __future__ import annotations

from .. import inference as inf
from ..check import SIG3, Exercise, parts_of
from ..hardware import GPUS, gpu_peak_flops
from ..params import param_count
from ..presets import preset


def _serving(what: str) -> float:
    l8 = preset("llama-3-8b")
    if what.startswith("kv_"):
        mha, gqa = preset("llama2-7b"), preset("qwen2.5-7b")
        return {"kv_mha_token": lambda: inf.kv_bytes(mha, 1, 1), "kv_gqa_token": lambda: inf.kv_bytes(gqa, 1, 1),
                "kv_mha_gb": lambda: inf.kv_bytes(mha, 1, 4096) / 1e9,
                "kv_gqa_gb": lambda: inf.kv_bytes(gqa, 1, 4096) / 1e9,
                "kv_ratio": lambda: inf.kv_bytes(mha, 1, 1) / inf.kv_bytes(gqa, 1, 1)}[what]()
    if what.startswith("dec_"):
        step = inf.decode_step_seconds(l8, 1, 2048, "A100")
        approx = 2 * param_count(l8) / GPUS["A100"].memory_bandwidth
        return {"dec_step_ms": step * 1e3, "dec_tokens_per_s": 1 / step, "dec_approx_error": approx / step - 1}[what]
    if what.startswith("crit_"):
        qwen = preset("qwen2.5-7b")
        if what.startswith("crit_w_"):
            return inf.weight_critical_batch(qwen, "H200", dtype="int8" if what == "crit_w_int8" else "bf16")
        step = inf.step_critical_batch(qwen, {"crit_step_512": 512, "crit_step_1k": 1024}[what], "H200")
        assert step is not None  # a batch balances the step at these contexts
        return step
    if what.startswith("cap_"):
        kv, reserve = {"cap_bf16": ("bf16", None), "cap_fp8": ("fp8", None), "cap_fp8_no_reserve": ("fp8", 0)}[what]
        return inf.max_decode_batch(preset("qwen2.5-72b"), 3072, "H100", reserve_bytes=reserve, tp=4, kv_dtype=kv)
    if what.startswith("moe_"):
        mx = preset("mixtral-8x22b")
        return {"moe_expected_5": lambda: inf.experts_touched(mx, 5, "expected"),
                "moe_gb_b1": lambda: inf.forward_weight_bytes(mx, 1, 1) / 1e9,
                "moe_gb_b5": lambda: inf.forward_weight_bytes(mx, 5, 1) / 1e9}[what]()
    if what == "mla_ratio":
        ds = preset("deepseek-v3")
        return inf.decode_flops(ds, 1, 4096, mla="transformers") / inf.decode_flops(ds, 1, 4096)
    if what.startswith("tp_"):
        algo = "ring" if "ring" in what else "one-shot"
        times = {t: inf.tp_decode_step_seconds(l8, 1, 4096, "A100", t, allreduce=algo) for t in (1, 2, 4, 8)}
        return min(times, key=times.get) if what.startswith("tp_best_") else min(times.values()) * 1e3
    if what == "prefill_s_star":
        peak, bw, s = gpu_peak_flops("H100"), GPUS["H100"].memory_bandwidth, 1
        while inf.prefill_flops(l8, 1, s) / peak < inf.prefill_bytes(l8, 1, s) / bw:
            s += 1
        return s
    if what == "mla_flops_per_byte":
        return inf.attention_flops_per_byte(preset("deepseek-v2-lite"), "bf16")
    bd = inf.decode_flops_breakdown(l8, 1, 4096)  # gqa_flops_per_byte
    return (bd["attn_scores"] + bd["attn_values"]) / inf.kv_bytes(l8, 1, 4097)


_s = parts_of(_serving)


EXERCISES = [
    Exercise("serving-ex-kv", "serving-kv", "The KV cache and the intensity of attention",
             "Llama-2-7B (llmmath.preset('llama2-7b')) and Qwen2.5-7B ('qwen2.5-7b'), BF16 cache.",
             (_s("kv_mha_token", "Llama-2-7B's KV cache per token in bytes"),
              _s("kv_gqa_token", "Qwen2.5-7B's KV cache per token in bytes"),
              _s("kv_mha_gb", "Llama-2-7B's cache of one 4,096-token sequence in GB (10^9 bytes)", SIG3),
              _s("kv_gqa_gb", "Qwen2.5-7B's cache of one 4,096-token sequence in GB", SIG3),
              _s("kv_ratio", "the first per-token cache over the second", SIG3))),
    Exercise("serving-ex-decode", "serving-latency", "Latency bounds: one roofline per kernel",
             "Llama-3-8B on one A100 (80 GB), batch 1, 2,048 tokens of context, BF16.",
             (_s("dec_step_ms", "bound on the time per output token in milliseconds", SIG3),
              _s("dec_tokens_per_s", "bound on tokens per second", SIG3),
              _s("dec_approx_error", "relative error of 2P / bandwidth against that bound, approx / bound - 1",
                 SIG3))),
    Exercise("serving-ex-critical", "serving-batching", "Batching and the two critical batches",
             "Qwen2.5-7B (llmmath.preset('qwen2.5-7b')) on an H200, a BF16 cache, products at the BF16 peak "
             "(INT8 weights are W8A16: widened to 16 bits in the kernel).",
             (_s("crit_w_bf16", "the weight products' critical batch b*_w (weight_critical_batch), BF16 weights"),
              _s("crit_w_int8", "the same with INT8 weights (dtype='int8')"),
              _s("crit_step_512", "the step's balance batch b*_step (step_critical_batch), BF16 weights, a context "
                 "of 512 tokens"),
              _s("crit_step_1k", "the same at a context of 1,024 tokens"))),
    Exercise("serving-ex-capacity", "serving-memory", "Memory: the largest batch",
             "Qwen2.5-72B (llmmath.preset('qwen2.5-72b')) on 4 H100s (tp = 4), BF16 weights, sequences of 3,072 "
             "tokens; each H100's memory is the 81,559 MiB its driver reports (allocatable_memory_bytes), and "
             "vLLM's default reserve keeps 10% of it (max_decode_batch's default).",
             (_s("cap_bf16", "sequences that fit with a BF16 cache and the default reserve"),
              _s("cap_fp8", "the same with an FP8 cache"),
              _s("cap_fp8_no_reserve", "sequences that fit with an FP8 cache and no reserve (reserve_bytes=0)"))),
    Exercise("serving-ex-experts", "serving-examples", "Worked examples and the serve command",
             "Mixtral-8x22B (llmmath.preset('mixtral-8x22b')), BF16 weights, one decode step.",
             (_s("moe_expected_5", "expected distinct experts per layer for 5 tokens, uniform routing", SIG3),
              _s("moe_gb_b1", "GB of weights read at batch 1", SIG3),
              _s("moe_gb_b5", "GB of weights read at batch 5, worst case (experts='max')", SIG3))),
    Exercise("serving-ex-mla", "serving-kv", "The KV cache and the intensity of attention",
             "DeepSeek-V3, one sequence, a context of 4,096 tokens.",
             (_s("mla_ratio", "decode FLOPs re-expanded (mla='transformers') over absorbed", SIG3),)),
    Exercise("serving-ex-tp", "serving-tp", "Tensor parallelism and its all-reduce",
             "Llama-3-8B, batch 1, context 4,096, A100s, tp in 1, 2, 4, 8 (tp_decode_step_seconds: the bound, "
             "all-reduces overlapped with the kernels).",
             (_s("tp_best_ring", "the tp with the lowest bound per token, ring all-reduce"),
              _s("tp_best_one_shot", "the tp with the lowest bound per token, one-shot all-reduce"),
              _s("tp_ring_ms", "that lowest bound with a ring all-reduce, in ms", SIG3),
              _s("tp_one_shot_ms", "that lowest bound with a one-shot all-reduce, in ms", SIG3))),
    Exercise("serving-ex-prefill", "serving-latency", "Latency bounds: one roofline per kernel",
             "Llama-3-8B, one sequence, an H100, dense BF16, logits at the last position.",
             (_s("prefill_s_star", "the smallest prompt length whose prefill is compute-bound"),)),
    Exercise("serving-ex-gqa", "serving-kv", "The KV cache and the intensity of attention",
             "Llama-3-8B, one sequence at a context of 4,096 tokens, a BF16 cache; DeepSeek-V2-Lite "
             "(llmmath.preset('deepseek-v2-lite')), absorbed multi-head latent attention (the default), a BF16 "
             "cache.",
             (_s("gqa_flops_per_byte", "Llama-3-8B's attention FLOPs of a decode step per byte of cache read "
                 "(the n + 1 = 4,097 keys)", SIG3),
              _s("mla_flops_per_byte", "DeepSeek-V2-Lite's attention FLOPs per byte of cache read", SIG3))),
]


# The questions of checkable exercises that are graded by hand (the assignments collect them).
WRITTEN = {
    'serving-ex-kv': (
        "By what factor does grouped-query attention shrink the cache here, and why is that factor not $a / "
        "a_\\text{kv}$?",
    ),
    'serving-ex-decode': (
        "Which two errors of the approximation $2P/B$ partly cancel?",
    ),
    'serving-ex-critical': (
        "Explain why INT8 weights halve $b^*_w$, and why $b^*_\\text{step}$ depends on the context while $b^*_w$ "
        "does not.",
    ),
    'serving-ex-experts': (
        "Derive the expected number of distinct experts touched under independent uniform routing.",
    ),
    'serving-ex-mla': (
        "Where do the extra FLOPs of the re-expanded cache go?",
    ),
    'serving-ex-tp': (
        "Explain why the two all-reduce algorithms prefer different tensor-parallel sizes (or the same one).",
    ),
    'serving-ex-gqa': (
        "Show that the attention of a decode step does $a / a_\\text{kv}$ FLOPs per byte of a 16-bit cache "
        "whatever the context and the batch. Why can no batch size make attention compute-bound on an H100?",
        "Show that absorbed multi-head latent attention does $a(2r + d_r)/(r + d_r)$ FLOPs per byte of a 16-bit "
        "cache. Why is DeepSeek-V2-Lite's attention memory-bound on every accelerator of the chapter, while "
        "DeepSeek-V3's can be compute-bound?",
    ),
}
