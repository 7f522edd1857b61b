# Reference solutions of the transformer-primer assignment (instructor material, never given to
# students).
#
# One section per exercise, opened by "# %% <exercise label>". Otter-grader's markers apply:
# lines between "# BEGIN SOLUTION NO PROMPT" and "# END SOLUTION" are removed from the student
# notebook, and "name = value  # SOLUTION" becomes "name = ..." there. Each checkable part (see
# llmmath.check.describe) must be assigned by a "# SOLUTION" line. Run this file to check it.
import llmmath

# %% primer-ex-gpt2xl
# BEGIN SOLUTION NO PROMPT
h, L, V, S = 1600, 48, 50257, 1024
# attention 4h^2, MLP 8h^2; biases 4h + 5h, two LayerNorms 4h
# END SOLUTION
block_params = 12 * h**2 + 13 * h  # SOLUTION
n_params = L * block_params + (V + S) * h + 2 * h  # SOLUTION

# %% primer-ex-llama2-70b
# BEGIN SOLUTION NO PROMPT
h, a, a_kv, d_head, d_ff = 8192, 64, 8, 128, 28672
attention = 2 * h * a * d_head + 2 * h * a_kv * d_head
# END SOLUTION
block_params = attention + 3 * h * d_ff + 2 * h  # SOLUTION
attention_share = attention / block_params  # SOLUTION
attention_mha = 4 * h * a * d_head  # SOLUTION

# %% primer-ex-swiglu
# BEGIN SOLUTION NO PROMPT
h, d_ff = 3584, 18944
# END SOLUTION
mlp_ratio = 3 * h * d_ff / (8 * h**2)  # SOLUTION

# %% primer-ex-tied
# BEGIN SOLUTION NO PROMPT
l70, medium = llmmath.preset("llama-3-70b"), llmmath.preset("gpt2-medium")
# END SOLUTION
tied_saving = l70.vocab_size * l70.hidden_size  # SOLUTION
tied_share = tied_saving / llmmath.param_count(l70)  # SOLUTION
tables_share = (50257 + 1024) * 1024 / llmmath.param_count(medium)  # SOLUTION

# %% primer-ex-kv70b
# BEGIN SOLUTION NO PROMPT
L, a_kv, d_head, b, n, q = 80, 8, 128, 8, 8192, 2
# END SOLUTION
values_per_token = 2 * L * a_kv * d_head  # SOLUTION
cache_bytes = 2 * b * n * L * a_kv * d_head * q  # SOLUTION
cache_bytes_mha = 2 * b * n * L * 64 * d_head * q  # SOLUTION

# %% primer-ex-cache-flops
# BEGIN SOLUTION NO PROMPT
gpt2 = llmmath.preset("gpt2")
# END SOLUTION
ratio = llmmath.prefill_flops(gpt2, 1, 1024) / llmmath.decode_flops(gpt2, 1, 1023)  # SOLUTION
