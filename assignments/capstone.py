# Reference solutions of the capstone assignment (instructor material, never given to students).
#
# One section per exercise, opened by "# %% <exercise label>". Otter-grader's markers apply:
# lines between "# BEGIN SOLUTION NO PROMPT" and "# END SOLUTION" are removed from the student
# notebook, and "name = value  # SOLUTION" becomes "name = ...". Each checkable part (see
# llmmath.check.describe) must be assigned by a "# SOLUTION" line. Run this file to check it.
import llmmath

# %% capstone-ex-llama65b
# BEGIN SOLUTION NO PROMPT
l65 = llmmath.preset("llama-65b")
rate = 1.4e12 / (1_022_362 * 3600)  # tokens per GPU and second
a100 = llmmath.gpu_peak_flops("A100")
# END SOLUTION
l65_mfu_exact = llmmath.mfu(rate, l65, 1, a100, seq=2048)  # SOLUTION
l65_exact_over_6n = l65_mfu_exact / (rate * 6 * llmmath.param_count(l65) / a100)  # SOLUTION

# %% capstone-ex-gpt3-h100
# BEGIN SOLUTION NO PROMPT
g3 = llmmath.preset("gpt3-175b")
lay = llmmath.layout_for(g3, 1024, 2048, 1536 * 2048, tp=8, pp=16, recompute="full", zero_stage=1)
step = llmmath.megatron_training_flops(g3, 1536, 2048) / (1024 * 140e12)
u = llmmath.model_flops(g3, 1536, 2048) / (1024 * llmmath.gpu_peak_flops("A100") * step)  # causal pairs
run = llmmath.training_run(g3, 300e9, "H100", lay, 2048, mfu=u, price_per_gpu_hour=2.0)
# END SOLUTION
g3_days = run["days"]  # SOLUTION
g3_cost = run["cost"]  # SOLUTION

# %% capstone-ex-70b-memory
# BEGIN SOLUTION NO PROMPT
l70 = llmmath.preset("llama-3-70b")


def busiest_gb(pp):
    lay = llmmath.layout_for(l70, 64, 8192, 2**22, tp=8, pp=pp, zero_stage=1, recompute="none")
    return llmmath.training_run(l70, 15e12, "H100", lay, 8192, mfu=0.4, dropout=False)["memory"]["total"] / 1e9


# END SOLUTION
mem_pp1_gb = busiest_gb(1)  # SOLUTION
mem_pp4_gb = busiest_gb(4)  # SOLUTION

# %% capstone-ex-deepseek
# BEGIN SOLUTION NO PROMPT
ds = llmmath.preset("deepseek-v2")
rate = 1e12 / (172.8e3 * 3600)
h800 = llmmath.gpu_peak_flops("H800")
# END SOLUTION
ds_mfu_total = rate * 6 * llmmath.param_count(ds) / h800  # SOLUTION
ds_mfu_active = rate * 6 * llmmath.active_param_count(ds) / h800  # SOLUTION

# %% capstone-ex-serve
# BEGIN SOLUTION NO PROMPT
sv = llmmath.serving_run(llmmath.preset("llama-3-70b"), "H100", 4, 8192, kv_dtype="fp8", reserve_bytes=4 * 10**9)
# END SOLUTION
serve_max_batch = sv["max_batch"]  # SOLUTION
serve_tokens_per_second = sv["tokens_per_second"]  # SOLUTION

# %% capstone-ex-budget
# BEGIN SOLUTION NO PROMPT
hours = 1e6 / 2.0
per_token = llmmath.training_flops_per_token(llmmath.preset("llama-3-8b"), seq=8192)
# END SOLUTION
budget_tokens = hours * 3600 * llmmath.gpu_peak_flops("H100") * 0.4 / per_token  # SOLUTION

# %% capstone-ex-h800
# BEGIN SOLUTION NO PROMPT
h = llmmath.preset("deepseek-v3").hidden_size
# END SOLUTION
tp_ratio_h800 = llmmath.tp_comm_compute_ratio(h, 2, "H800")  # SOLUTION
tp_ratio_h100 = llmmath.tp_comm_compute_ratio(h, 2, "H100")  # SOLUTION
