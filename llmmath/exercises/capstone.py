"""Checkable exercises of the chapter ``capstone``.

The chapter "Putting it together: planning and checking real runs" (``chapters/capstone.ipynb``).
Registered by :mod:`llmmath.check` under the chapter's slug (this module's name with hyphens). Each
part computes its expected value with llmmath when an answer is checked: no answer is stored here.
"""

from __future__ import annotations

from ..check import SIG3, Exercise, parts_of
from ..flops import megatron_training_flops, mfu, training_flops_per_token
from ..hardware import gpu_peak_flops
from ..parallel import tp_comm_compute_ratio
from ..params import active_param_count, param_count
from ..planning import layout_for, serving_run, training_run
from ..presets import preset
from ..steptime import model_flops


def _capstone(name: str) -> float:
    if name.startswith("l65_"):  # LLaMA 65B: 1.4T tokens in 1,022,362 A100-80GB GPU-hours (Table 15)
        cfg, per_gpu = preset("llama-65b"), 1.4e12 / (1_022_362 * 3600)
        exact = mfu(per_gpu, cfg, 1, gpu_peak_flops("A100"), seq=2048)
        return exact if name == "l65_mfu_exact" else exact / (per_gpu * 6 * param_count(cfg) / gpu_peak_flops("A100"))
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
    if name.startswith("ds_"):  # DeepSeek-V2: 172.8K H800 GPU-hours per trillion tokens
        ds, per_gpu = preset("deepseek-v2"), 1e12 / (172.8e3 * 3600)
        n = param_count(ds) if name == "ds_mfu_total" else active_param_count(ds)
        return per_gpu * 6 * n / gpu_peak_flops("H800")
    if name.startswith("serve_"):  # Llama 3 70B on 4 H100s, its 8,192 positions, FP8 cache, 4 GB reserve
        run = serving_run(preset("llama-3-70b"), "H100", 4, 8192, kv_dtype="fp8", reserve_bytes=4 * 10**9)
        return run["max_batch"] if name == "serve_max_batch" else run["tokens_per_second"]
    if name == "budget_tokens":  # $1M at $2 per H100-hour, MFU 40%, Llama 3 8B at 8192 tokens
        seconds = 1e6 / 2.0 * 3600
        return seconds * gpu_peak_flops("H100") * 0.4 / training_flops_per_token(preset("llama-3-8b"), seq=8192)
    return tp_comm_compute_ratio(preset("deepseek-v3").hidden_size, 2, name.removeprefix("tp_ratio_").upper())


_cap = parts_of(_capstone)


EXERCISES = [
    Exercise("capstone-ex-llama65b", "capstone-llama2", "Llama 2: what the GPU-hours imply",
             "LLaMA 65B (llmmath.preset('llama-65b')), 1.4e12 tokens of 2,048-token sequences in 1,022,362 "
             "GPU-hours of A100-80GB (dense BF16 peak).",
             (_cap("l65_mfu_exact", "the MFU with llmmath's training FLOPs per token at 2,048 tokens", SIG3),
              _cap("l65_exact_over_6n", "that MFU over the MFU with 6N FLOPs per token", SIG3))),
    Exercise("capstone-ex-gpt3-h100", "capstone-gpt3", "GPT-3 175B: the seeds' 34 days",
             "GPT-3 175B, 300e9 tokens, 1024 H100s, t = 8, p = 16, ZeRO-1, full recomputation, 1536 "
             "sequences of 2048 tokens per step, the MFU that Narayanan et al.'s 140 TFLOP/s on A100s "
             "implies, counted as training_run counts it (model_flops: attention over the causal query-key "
             "pairs) (training_run with mfu=..., price 2 per GPU-hour).",
             (_cap("g3_days", "training days", SIG3),
              _cap("g3_cost", "the cost at 2 per GPU-hour", SIG3))),
    Exercise("capstone-ex-70b-memory", "capstone-recipe", "A plan in five numbers",
             "Llama 3 70B (the preset) on 64 H100s, 8192-token sequences, 2**22 tokens per step "
             "(layout_for), t = 8, ZeRO-1, no recomputation, no dropout, fused attention.",
             (_cap("mem_pp1_gb", "GB (10^9 bytes) on the busiest GPU with p = 1", SIG3),
              _cap("mem_pp4_gb", "the same with p = 4", SIG3))),
    Exercise("capstone-ex-deepseek", "capstone-deepseek", "DeepSeek-V3 on 2048 H800s",
             "DeepSeek-V2 (llmmath.preset('deepseek-v2')), 172.8e3 GPU-hours per 1e12 tokens, the H800's "
             "dense BF16 peak.",
             (_cap("ds_mfu_total", "the 'MFU' with 6 N_total FLOPs per token", SIG3),
              _cap("ds_mfu_active", "the MFU with 6 N_active FLOPs per token", SIG3))),
    Exercise("capstone-ex-serve", "capstone-serving", "Serving Llama 3.1 405B",
             "Llama 3 70B (the preset) on 4 H100s (tp = 4), requests of 8,192 tokens (its maximum positions; "
             "serving_run's default split, half prompt and half output), BF16 weights, FP8 cache, a reserve of "
             "4 * 10**9 bytes per GPU (serving_run: the memory the driver reports).",
             (_cap("serve_max_batch", "the largest batch"),
              _cap("serve_tokens_per_second", "the bound on output tokens per second at that batch", SIG3))),
    Exercise("capstone-ex-budget", "capstone-recipe", "A plan in five numbers",
             "A budget of 1e6 at 2 per H100-hour, MFU 0.4 (dense BF16 peak), Llama 3 8B (the preset) "
             "at 8192 tokens per sequence.",
             (_cap("budget_tokens", "the training tokens it buys", SIG3),)),
    Exercise("capstone-ex-h800", "capstone-deepseek", "DeepSeek-V3 on 2048 H800s",
             "DeepSeek-V3's hidden size, t = 2, BF16, llmmath.hardware's NVLink of each GPU "
             "(tp_comm_compute_ratio).",
             (_cap("tp_ratio_h800", "communication / compute time of tensor parallelism on H800s", SIG3),
              _cap("tp_ratio_h100", "the same on H100s", SIG3))),
]


# The questions of checkable exercises that are graded by hand (the assignments collect them).
WRITTEN = {
    'capstone-ex-llama65b': (
        "Why do the two MFUs differ?",
    ),
    'capstone-ex-gpt3-h100': (
        "Is assuming the same MFU on H100s reasonable? Decide with the step-time model's prediction for the "
        "same layout on H100s.",
    ),
    'capstone-ex-70b-memory': (
        "Why does the pipeline help less than its factor of 4?",
    ),
    'capstone-ex-deepseek': (
        "Which of the two is a possible MFU, and why?",
    ),
    'capstone-ex-serve': (
        "Which term of the bound dominates the step, and what does that tell you about the batch to choose?",
    ),
    'capstone-ex-budget': (
        "Derive the tokens D that a number of GPU-hours buys from the days formula.",
    ),
    'capstone-ex-h800': (
        "What do the two ratios say about tensor parallelism on H800s for this width?",
    ),
}

# The chapter's exercises without a checkable part: graded by hand only.
HAND_GRADED = ('capstone-ex-gap',)
