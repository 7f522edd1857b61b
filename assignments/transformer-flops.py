# Reference solutions of the transformer-flops assignment (instructor material, never given to
# students).
#
# One section per exercise, opened by "# %% <exercise label>". Otter-grader's markers apply:
# lines between "# BEGIN SOLUTION NO PROMPT" and "# END SOLUTION" are removed from the student
# notebook, and "name = value  # SOLUTION" becomes "name = ..." there. Each checkable part (see
# llmmath.check.describe) must be assigned by a "# SOLUTION" line. Exercises without a section get
# one "name = ..." line per part. Run this file to check it.
import llmmath

# %% flops-ex-llama
# BEGIN SOLUTION NO PROMPT
l7 = llmmath.preset("llama2-7b")
bd = llmmath.flops_breakdown(l7, 1, 4096)
# END SOLUTION
forward_flops = sum(bd.values())  # SOLUTION
excess_2n = forward_flops // 4096 - 2 * llmmath.param_count(l7)  # SOLUTION
attention_share = (bd["attn_scores"] + bd["attn_values"]) / forward_flops  # SOLUTION

# %% flops-ex-gqa
# BEGIN SOLUTION NO PROMPT
l70 = llmmath.preset("llama2-70b")
gqa = llmmath.training_flops_per_token(l70, seq=4096)
mha = llmmath.training_flops_per_token(l70.replace(n_kv_heads=l70.n_heads), seq=4096)
# END SOLUTION
saving = mha - gqa  # SOLUTION
saving_rel = 1 - gqa / mha  # SOLUTION

# %% flops-ex-chinchilla
# BEGIN SOLUTION NO PROMPT
N_CH, D_CH = 70e9, 1.4e12
a100, h100 = (llmmath.gpu_peak_flops(gpu, "bf16_tensor") for gpu in ("A100", "H100"))
# END SOLUTION
days_a100 = llmmath.training_days(D_CH, N_CH, 1024, a100, 0.4)  # SOLUTION
days_h100 = llmmath.training_days(D_CH, N_CH, 1024, h100, 0.4)  # SOLUTION

# %% flops-ex-mfu
# BEGIN SOLUTION NO PROMPT
l13, peak = llmmath.preset("llama2-13b"), llmmath.gpu_peak_flops("H100", "bf16_tensor")
# END SOLUTION
mfu = llmmath.mfu(2e6, l13, 512, peak, seq=4096)  # SOLUTION
hfu = llmmath.hfu(2e6, l13, 512, peak, seq=4096)  # SOLUTION

# %% flops-ex-fused
# BEGIN SOLUTION NO PROMPT
g3, ds3 = llmmath.preset("gpt3-175b"), llmmath.preset("deepseek-v3")
fused = llmmath.training_flops(g3, 1, 2048, attention="fused")
# the fused backward runs Q K^T again: (3 d_qk + 2 d_v) / (d_qk + d_v) of the forward
# END SOLUTION
gpt3_extra = fused / llmmath.training_flops(g3, 1, 2048) - 1  # SOLUTION
mla_ratio = (3 * ds3.head_dim + 2 * ds3.v_head_dim) / (ds3.head_dim + ds3.v_head_dim)  # SOLUTION

# %% flops-ex-tiles
fraction_2048 = (2048 + 128) / (2 * 2048)  # SOLUTION
# BEGIN SOLUTION NO PROMPT
pairs = llmmath.attention_pairs(8192, window=1024, skip_masked=True, tile=128)
# END SOLUTION
fraction_window = pairs / 8192**2  # SOLUTION

# %% flops-ex-deepseek
# BEGIN SOLUTION NO PROMPT
ds3 = llmmath.preset("deepseek-v3")
bd = llmmath.flops_breakdown(ds3, 1, 4096)
# END SOLUTION
flops_per_token = llmmath.training_flops(ds3, 1, 4096) // 4096  # SOLUTION
attention_per_token = (bd["attn_scores"] + bd["attn_values"]) // 4096  # SOLUTION
