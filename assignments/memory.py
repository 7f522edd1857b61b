# Reference solutions of the memory assignment (instructor material, never given to students).
#
# One section per exercise, opened by "# %% <exercise label>". Otter-grader's markers apply:
# lines between "# BEGIN SOLUTION NO PROMPT" and "# END SOLUTION" are removed from the student
# notebook, and "name = value  # SOLUTION" becomes "name = ..." there. Each checkable part (see
# llmmath.check.describe) must be assigned by a "# SOLUTION" line. Run this file to check it.
import llmmath

# %% mem-ex-momentum
# BEGIN SOLUTION NO PROMPT
n = 16 * 10**9  # many parameters, so that the shards divide evenly
# END SOLUTION
bytes_per_param = llmmath.training_state_bytes(1, "mixed", "momentum")["total"]  # SOLUTION
zero2_bytes = llmmath.training_state_bytes(n, "mixed", "momentum", zero_stage=2, n_gpus=16)["total"] / n  # SOLUTION

# %% mem-ex-mistral
# BEGIN SOLUTION NO PROMPT
v01 = llmmath.preset("mistral-7b")  # a sliding window on every layer
v02 = v01.replace(sliding_window=None)
# END SOLUTION
kv_gb = llmmath.kv_cache_bytes(v02, 4, 32768) / 1e9  # SOLUTION
kv_mha_gb = llmmath.kv_cache_bytes(v02.replace(n_kv_heads=v02.n_heads), 4, 32768) / 1e9  # SOLUTION
kv_v01_gb = llmmath.kv_cache_bytes(v01, 4, 32768) / 1e9  # SOLUTION

# %% mem-ex-8bit
bytes_per_param = llmmath.training_state_bytes(1, "mixed", "adam", optimizer_bytes_per_value=1)["total"]  # SOLUTION

# %% mem-ex-mqa
# BEGIN SOLUTION NO PROMPT
l70 = llmmath.preset("llama2-70b")
mha = llmmath.kv_cache_bytes(l70.replace(n_kv_heads=l70.n_heads), 1, 4096)
# END SOLUTION
mqa_factor = mha / llmmath.kv_cache_bytes(l70.replace(n_kv_heads=1), 1, 4096)  # SOLUTION
gqa_factor = mha / llmmath.kv_cache_bytes(l70, 1, 4096)  # SOLUTION

# %% mem-ex-llama-act
# BEGIN SOLUTION NO PROMPT
l7 = llmmath.preset("llama2-7b")
opts = dict(dropout=False, implementation="hf-llama")
# END SOLUTION
eager_gb = llmmath.activation_bytes(l7, 1, 2048, **opts)["total"] / 1e9  # SOLUTION
fused_gb = llmmath.activation_bytes(l7, 1, 2048, flash_attention=True, **opts)["total"] / 1e9  # SOLUTION

# %% mem-ex-recompute
# BEGIN SOLUTION NO PROMPT
l7 = llmmath.preset("llama2-7b")
step = llmmath.training_flops(l7, 1, 4096)
# END SOLUTION
selective_share = llmmath.recompute_flops(l7, 1, 4096, recompute="selective") / step  # SOLUTION
flash_share = llmmath.recompute_flops(l7, 1, 4096, recompute="none", flash_attention=True) / step  # SOLUTION

# %% mem-ex-gemma
# BEGIN SOLUTION NO PROMPT
g3 = llmmath.preset("gemma-3-27b")
every_global = g3.replace(attention_types=(), sliding_window=None)
# END SOLUTION
kv_gb = llmmath.kv_cache_bytes(g3, 1, 131072) / 1e9  # SOLUTION
kv_global_gb = llmmath.kv_cache_bytes(every_global, 1, 131072) / 1e9  # SOLUTION
same_up_to = g3.sliding_window - 1  # SOLUTION

# %% mem-ex-mla
# BEGIN SOLUTION NO PROMPT
v3 = llmmath.preset("deepseek-v3")
# END SOLUTION
latent_bytes = llmmath.kv_cache_bytes(v3, 1, 1)  # SOLUTION
expanded_bytes = llmmath.kv_cache_bytes(v3, 1, 1, mla="expanded")  # SOLUTION
gqa_heads = (v3.kv_lora_rank + v3.rope_head_dim) / (2 * 128)  # SOLUTION
