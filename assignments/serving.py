# Reference solutions of the serving assignment (instructor material, never given to students).
#
# One section per exercise, opened by "# %% <exercise label>". Otter-grader's markers apply:
# lines between "# BEGIN SOLUTION NO PROMPT" and "# END SOLUTION" are removed from the student
# notebook, and "name = value  # SOLUTION" becomes "name = ..." there. Each checkable part (see
# llmmath.check.describe) must be assigned by a "# SOLUTION" line. Run this file to check it.
import llmmath

# %% serving-ex-kv
# BEGIN SOLUTION NO PROMPT
mha, gqa = llmmath.preset("llama2-7b"), llmmath.preset("qwen2.5-7b")
# per token and layer: 2 a_kv d values of 2 bytes; the two models differ in depth too
# END SOLUTION
kv_mha_token = llmmath.kv_bytes(mha, 1, 1)  # SOLUTION
kv_gqa_token = llmmath.kv_bytes(gqa, 1, 1)  # SOLUTION
kv_mha_gb = llmmath.kv_bytes(mha, 1, 4096) / 1e9  # SOLUTION
kv_gqa_gb = llmmath.kv_bytes(gqa, 1, 4096) / 1e9  # SOLUTION
kv_ratio = kv_mha_token / kv_gqa_token  # SOLUTION

# %% serving-ex-decode
# BEGIN SOLUTION NO PROMPT
cfg = llmmath.preset("llama-3-8b")
step = llmmath.decode_step_seconds(cfg, 1, 2048, "A100")  # memory-bound: bytes / bandwidth
approx = 2 * llmmath.param_count(cfg) / llmmath.GPUS["A100"].memory_bandwidth
# END SOLUTION
dec_step_ms = step * 1e3  # SOLUTION
dec_tokens_per_s = 1 / step  # SOLUTION
dec_approx_error = approx / step - 1  # SOLUTION

# %% serving-ex-critical
# BEGIN SOLUTION NO PROMPT
cfg = llmmath.preset("qwen2.5-7b")
# b*_w: the weight products alone, whatever the context; b*_step: the whole step, cache included
# END SOLUTION
crit_w_bf16 = llmmath.weight_critical_batch(cfg, "H200")  # SOLUTION
crit_w_int8 = llmmath.weight_critical_batch(cfg, "H200", dtype="int8")  # SOLUTION
crit_step_512 = llmmath.step_critical_batch(cfg, 512, "H200")  # SOLUTION
crit_step_1k = llmmath.step_critical_batch(cfg, 1024, "H200")  # SOLUTION

# %% serving-ex-capacity
# BEGIN SOLUTION NO PROMPT
cfg = llmmath.preset("qwen2.5-72b")
# the memory the driver reports, less vLLM's default reserve (10% of it), unless reserve_bytes is given
# END SOLUTION
cap_bf16 = llmmath.max_decode_batch(cfg, 3072, "H100", tp=4)  # SOLUTION
cap_fp8 = llmmath.max_decode_batch(cfg, 3072, "H100", tp=4, kv_dtype="fp8")  # SOLUTION
cap_fp8_no_reserve = llmmath.max_decode_batch(cfg, 3072, "H100", tp=4, kv_dtype="fp8", reserve_bytes=0)  # SOLUTION

# %% serving-ex-experts
# BEGIN SOLUTION NO PROMPT
cfg = llmmath.preset("mixtral-8x22b")
# a token misses an expert with probability 1 - k/E = 3/4, five tokens with (3/4)^5
# END SOLUTION
moe_expected_5 = cfg.n_experts * (1 - (1 - cfg.experts_per_token / cfg.n_experts) ** 5)  # SOLUTION
moe_gb_b1 = llmmath.forward_weight_bytes(cfg, 1, 1) / 1e9  # SOLUTION
moe_gb_b5 = llmmath.forward_weight_bytes(cfg, 5, 1) / 1e9  # SOLUTION

# %% serving-ex-mla
# BEGIN SOLUTION NO PROMPT
cfg = llmmath.preset("deepseek-v3")
# END SOLUTION
mla_ratio = llmmath.decode_flops(cfg, 1, 4096, mla="transformers") / llmmath.decode_flops(cfg, 1, 4096)  # SOLUTION

# %% serving-ex-tp
# BEGIN SOLUTION NO PROMPT
cfg = llmmath.preset("llama-3-8b")


def bounds(algo):
    return {t: llmmath.tp_decode_step_seconds(cfg, 1, 4096, "A100", t, allreduce=algo) for t in (1, 2, 4, 8)}


ring, one_shot = bounds("ring"), bounds("one-shot")
# END SOLUTION
tp_best_ring = min(ring, key=ring.get)  # SOLUTION
tp_best_one_shot = min(one_shot, key=one_shot.get)  # SOLUTION
tp_ring_ms = min(ring.values()) * 1e3  # SOLUTION
tp_one_shot_ms = min(one_shot.values()) * 1e3  # SOLUTION

# %% serving-ex-prefill
# BEGIN SOLUTION NO PROMPT
cfg = llmmath.preset("llama-3-8b")
peak, bw = llmmath.gpu_peak_flops("H100"), llmmath.GPUS["H100"].memory_bandwidth
s = 1
while llmmath.prefill_flops(cfg, 1, s) / peak < llmmath.prefill_bytes(cfg, 1, s) / bw:
    s += 1
# END SOLUTION
prefill_s_star = s  # SOLUTION

# %% serving-ex-gqa
# BEGIN SOLUTION NO PROMPT
cfg = llmmath.preset("llama-3-8b")
bd = llmmath.decode_flops_breakdown(cfg, 1, 4096)
lite = llmmath.preset("deepseek-v2-lite")
bd_lite = llmmath.decode_flops_breakdown(lite, 1, 4096)  # absorbed MLA: attention in the latent space
# END SOLUTION
gqa_flops_per_byte = (bd["attn_scores"] + bd["attn_values"]) / llmmath.kv_bytes(cfg, 1, 4097)  # SOLUTION
mla_flops_per_byte = (bd_lite["attn_scores"] + bd_lite["attn_values"]) / llmmath.kv_bytes(lite, 1, 4097)  # SOLUTION
