"""Checkable exercises of the chapter ``serving-systems``.

The chapter "Serving many users" (``chapters/serving-systems.ipynb``). Registered by
:mod:`llmmath.check` under the chapter's slug (this module's name with hyphens). Each part computes
its expected value with llmmath when an answer is checked: no answer is stored here.
"""

from __future__ import annotations

from .. import serving_systems as sv
from ..check import SIG3, Exercise, parts_of
from ..hardware import GPUS, gpu_peak_flops
from ..inference import kv_bytes
from ..presets import preset


def _steady(budget: int | None) -> tuple[sv.RequestCosts, float]:
    costs = sv.step_costs(preset("llama-3-8b"), "H100")
    req = sv.request_costs(costs, 1024, 256)
    return req, sv.saturation_rate(req, budget=budget)


def _answer(what: str) -> float:
    if what.startswith("util_"):
        return sv.static_batch_utilization(int(what.removeprefix("util_")))
    if what in ("sat_rate", "itl_ms", "batch"):
        req, sat = _steady(None)
        point = sv.load_steady_state(sv.step_costs(preset("llama-3-8b"), "H100"), 1024, 256, 0.6 * sat)
        return {"sat_rate": sat, "itl_ms": point.itl * 1e3, "batch": point.batch}[what]
    if what in ("sat_budget", "ttft_ms"):
        _, sat = _steady(256)
        if what == "sat_budget":
            return sat
        costs = sv.step_costs(preset("llama-3-8b"), "H100")
        return sv.load_steady_state(costs, 1024, 256, 0.6 * sat, budget=256).ttft * 1e3
    if what in ("blocks", "paged_waste", "contiguous_waste"):
        lengths = [100, 257, 1000, 4097]
        return {"blocks": lambda: sum(sv.kv_blocks(n, 16) for n in lengths),
                "paged_waste": lambda: sv.paged_kv_waste(lengths, 16),
                "contiguous_waste": lambda: sv.contiguous_kv_waste(lengths, 8192)}[what]()
    if what in ("shared_blocks", "unshared_blocks", "saved_mb"):
        shared = sv.shared_prefix_blocks(1000, [200] * 5, 16)
        unshared = 5 * sv.kv_blocks(1000 + 200 - 1, 16)
        return {"shared_blocks": shared, "unshared_blocks": unshared,
                "saved_mb": (unshared - shared) * 16 * kv_bytes(preset("llama-3-8b"), 1, 1) / 1e6}[what]
    if what in ("best_gamma", "speedup"):
        g = sv.optimal_draft_length(0.7, 0.1)
        return g if what == "best_gamma" else sv.speculative_speedup(0.7, g, 0.1)
    if what.startswith("implied_cost_"):
        theta = {"implied_cost_085": 0.85, "implied_cost_090": 0.90}[what]
        return sv.speculative_tokens_per_step(theta, 1) / 1.8
    if what in ("bits", "crit_h100", "crit_mi300x"):
        bits = sv.quantized_bits_per_weight(3, 32)
        if what == "bits":
            return bits
        gpu = "H100" if what == "crit_h100" else "MI300X"
        return gpu_peak_flops(gpu) * bits / 8 / (2 * GPUS[gpu].memory_bandwidth)
    if what in ("t_star", "per_gpu_16"):
        qwen, h200 = preset("qwen3-235b-a22b"), GPUS["H200"]
        t_star = qwen.n_experts / qwen.experts_per_token * h200.peak_flops["fp8_tensor"] / (2 * h200.memory_bandwidth)
        return t_star if what == "t_star" else t_star / 16
    if what.startswith("transfer_ms_"):
        kv = what.removeprefix("transfer_ms_")
        return sv.kv_transfer_seconds(preset("llama-3-70b"), 32768, 50e9, tp=8, kv_dtype=kv) * 1e3
    return sv.cost_per_million_tokens(14_800 / 8, 2.0)  # usd_per_mtok


_s = parts_of(_answer)

_STEADY = ("Llama-3-8B (llmmath.preset('llama-3-8b')) on one H100, BF16 weights and cache, requests of "
           "1,024 prompt and 256 answer tokens; the chapter's bounds (step_costs, request_costs)")

EXERCISES = [
    Exercise("sys-ex-static", "sys-batching", "Continuous batching and chunked prefill",
             "Static batches of 16 and 256 requests with independent exponential answer lengths.",
             (_s("util_16", "share of the decode slots doing useful work at b = 16", SIG3),
              _s("util_256", "the same at b = 256", SIG3))),
    Exercise("sys-ex-steady", "sys-batching", "Continuous batching and chunked prefill",
             _STEADY + ", no token budget and no memory limit.",
             (_s("sat_rate", "saturation rate in requests per second", SIG3),
              _s("itl_ms", "inter-token latency at 60% of it, in ms", SIG3),
              _s("batch", "mean number of sequences decoding at 60% of it", SIG3))),
    Exercise("sys-ex-budget", "sys-batching", "Continuous batching and chunked prefill",
             _STEADY + ", a token budget of 256 tokens per step.",
             (_s("sat_budget", "saturation rate in requests per second", SIG3),
              _s("ttft_ms", "time to first token at 60% of it, in ms", SIG3))),
    Exercise("sys-ex-blocks", "sys-paged", "Paged KV cache and prefix caching",
             "Sequences of 100, 257, 1,000 and 4,097 cached tokens, blocks of 16 tokens; a contiguous "
             "allocator reserving 8,192 tokens per sequence.",
             (_s("blocks", "blocks the paged cache allocates"),
              _s("paged_waste", "token slots the paged cache leaves empty"),
              _s("contiguous_waste", "token slots the contiguous allocator leaves empty"))),
    Exercise("sys-ex-cow", "sys-paged", "Paged KV cache and prefix caching",
             "Five samples of one 1,000-token prompt, each generating 200 tokens, blocks of 16 tokens; "
             "Llama-3-8B, BF16 cache.",
             (_s("shared_blocks", "blocks held with copy-on-write sharing of the prompt's full blocks"),
              _s("unshared_blocks", "blocks held without sharing"),
              _s("saved_mb", "MB (10^6 bytes) of cache saved by sharing", SIG3))),
    Exercise("sys-ex-spec", "sys-spec", "Speculative decoding",
             "Acceptance probability 0.7, a draft step costing 0.1 of a target step, verification at the "
             "cost of a plain step.",
             (_s("best_gamma", "the draft length with the largest speed-up"),
              _s("speedup", "that speed-up", SIG3))),
    Exercise("sys-ex-mtp", "sys-spec", "Speculative decoding",
             "One drafted token accepted with probability 0.85 or 0.9, a measured speed-up of 1.8.",
             (_s("implied_cost_085", "implied cost of a speculative step (plain steps) at 0.85", SIG3),
              _s("implied_cost_090", "the same at 0.9", SIG3))),
    Exercise("sys-ex-quant", "sys-quant", "Quantized weights and caches",
             "Weights of 3 bits in groups of 32 with a 16-bit scale and a 3-bit zero point per group, "
             "multiplied at the dense BF16 peak.",
             (_s("bits", "bits per weight", SIG3),
              _s("crit_h100", "weight critical batch on an H100", SIG3),
              _s("crit_mi300x", "weight critical batch on an MI300X", SIG3))),
    Exercise("sys-ex-moe", "sys-moe", "Serving a mixture of experts",
             "Qwen3-235B-A22B (llmmath.preset('qwen3-235b-a22b')), FP8 weights at the H200's dense FP8 peak; "
             "expert parallelism over 16 accelerators.",
             (_s("t_star", "tokens a decode step must gather for the experts to be compute-bound", SIG3),
              _s("per_gpu_16", "sequences per accelerator over 16", SIG3))),
    Exercise("sys-ex-transfer", "sys-disagg", "Disaggregated prefill and decode",
             "Llama-3-70B, tensor parallelism 8, a 32,768-token prompt, 50 GB/s per GPU, latency ignored.",
             (_s("transfer_ms_bf16", "transfer time of one GPU's shard in ms, BF16 cache", SIG3),
              _s("transfer_ms_fp8", "the same with an FP8 cache", SIG3))),
    Exercise("sys-ex-cost", "sys-frontier", "The latency-throughput frontier and the price of a token",
             "14,800 output tokens per second on 8 GPUs at 2 dollars per GPU-hour.",
             (_s("usd_per_mtok", "dollars per million output tokens", SIG3),)),
]
