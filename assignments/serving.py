# Reference solutions of the serving assignment (instructor material, never given to students).
#
# One section per exercise, opened by "# %% <exercise label>". Otter-grader's markers apply:
# lines between "# BEGIN SOLUTION NO PROMPT" and "# END SOLUTION" are removed from the student
# notebook, and "name = value  # SOLUTION" becomes "name = ..." there. Each checkable part (see
# llmmath.check.describe) must be assigned by a "# SOLUTION" line. Run this file to check it.
import llmmath

# %% serving-ex-kv
# BEGIN SOLUTION NO PROMPT
mha, gqa = llmmath.preset("llama-65b"), llmmath.preset("llama2-70b")
# per token and layer: 2 a_kv d values of 2 bytes; GQA keeps a_kv = 8 of the 64 heads
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
cfg = llmmath.preset("llama-3-8b")
# END SOLUTION
crit_h100 = llmmath.critical_batch(cfg, 1, "H100")  # SOLUTION
crit_h200 = llmmath.critical_batch(cfg, 1, "H200")  # SOLUTION
crit_h100_int8 = llmmath.critical_batch(cfg, 1, "H100", dtype="int8")  # SOLUTION

# %% serving-ex-capacity
# BEGIN SOLUTION NO PROMPT
cfg = llmmath.preset("llama-3-70b")
kw = dict(reserve_bytes=8 * 10**9, tp=8)
# END SOLUTION
cap_bf16 = llmmath.max_decode_batch(cfg, 8192, "H100", **kw)  # SOLUTION
cap_fp8 = llmmath.max_decode_batch(cfg, 8192, "H100", kv_dtype="fp8", **kw)  # SOLUTION
cap_fp8_32k = llmmath.max_decode_batch(cfg, 32768, "H100", kv_dtype="fp8", **kw)  # SOLUTION

# %% serving-ex-experts
# BEGIN SOLUTION NO PROMPT
cfg = llmmath.preset("mixtral-8x7b")
# a token misses an expert with probability 1 - k/E = 3/4, four tokens with (3/4)^4
# END SOLUTION
moe_expected_4 = cfg.n_experts * (1 - (1 - cfg.experts_per_token / cfg.n_experts) ** 4)  # SOLUTION
moe_gb_b1 = llmmath.forward_weight_bytes(cfg, 1, 1) / 1e9  # SOLUTION
moe_gb_b4 = llmmath.forward_weight_bytes(cfg, 4, 1) / 1e9  # SOLUTION

# %% serving-ex-mla
# BEGIN SOLUTION NO PROMPT
cfg = llmmath.preset("deepseek-v3")
# END SOLUTION
mla_ratio = llmmath.decode_flops(cfg, 1, 32768, mla="transformers") / llmmath.decode_flops(cfg, 1, 32768)  # SOLUTION

# %% serving-ex-tp
# BEGIN SOLUTION NO PROMPT
cfg = llmmath.preset("llama-3-8b")


def best_tp(algo):
    times = {t: llmmath.tp_decode_step_seconds(cfg, 1, 4096, "H100", t, allreduce=algo) for t in (1, 2, 4, 8)}
    return min(times, key=times.get)


# END SOLUTION
tp_best_ring = best_tp("ring")  # SOLUTION
tp_best_one_shot = best_tp("one-shot")  # SOLUTION

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
# END SOLUTION
gqa_flops_per_byte = (bd["attn_scores"] + bd["attn_values"]) / llmmath.kv_bytes(cfg, 1, 4097)  # SOLUTION
