# Reference solutions of the parameter-counts assignment (instructor material, never given to
# students).
#
# One section per exercise, opened by "# %% <exercise label>". Otter-grader's markers apply:
# lines between "# BEGIN SOLUTION NO PROMPT" and "# END SOLUTION" are removed from the student
# notebook, a "# BEGIN SOLUTION" ... "# END SOLUTION" block becomes "..." there, and
# "name = value  # SOLUTION" becomes "name = ...". Each checkable part (see llmmath.check.describe)
# must be defined here. Every count is written from the shapes, as the chapter derives it; llmmath
# is used only where the exercise asks for it.
import llmmath

# %% params-ex-gptj
# BEGIN SOLUTION NO PROMPT
h, V, L = 4096, 50400, 28
# END SOLUTION
gptj_params = L * (12 * h**2 + 7 * h) + V * h + 2 * h + V * h + V  # SOLUTION

# %% params-ex-llama3
# BEGIN SOLUTION NO PROMPT
h, L, V, d_ff, d_head = 4096, 32, 128256, 14336, 128


def llama3_count(kv_heads):
    layer = 2 * h * h + 2 * h * kv_heads * d_head + 3 * h * d_ff + 2 * h
    return L * layer + 2 * V * h + h


# END SOLUTION
llama3_params = llama3_count(8)  # SOLUTION
mha_extra = llama3_count(32) - llama3_count(8)  # SOLUTION

# %% params-ex-bert-large
# BEGIN SOLUTION NO PROMPT
h = 1024
# END SOLUTION
bert_large_params = 24 * (12 * h**2 + 13 * h) + (30522 + 512 + 2) * h + 2 * h + h * h + h  # SOLUTION

# %% params-ex-depth
# BEGIN SOLUTION NO PROMPT
h, V, S = 1024, 50257, 2048


def total(n):
    return n * (12 * h**2 + 13 * h) + (V + S) * h + 2 * h


# END SOLUTION
min_layers = next(n for n in range(1, 1000) if (V + S) * h < 0.1 * total(n))  # SOLUTION

# %% params-ex-moe
# BEGIN SOLUTION NO PROMPT
mistral = llmmath.preset("mistral-7b")


def with_experts(e):
    return mistral.replace(n_experts=e, experts_per_token=2)


# END SOLUTION
n_experts = next(e for e in range(2, 100) if llmmath.param_count(with_experts(e)) > 100e9)  # SOLUTION
active_params = llmmath.active_param_count(with_experts(n_experts))  # SOLUTION

# %% params-ex-tie
# BEGIN SOLUTION NO PROMPT
small, big = llmmath.preset("qwen2-0.5b"), llmmath.preset("qwen2-7b")
# END SOLUTION
qwen05_untied = llmmath.param_count(small) + small.vocab_size * small.hidden_size  # SOLUTION
qwen7_tied = llmmath.param_count(big) - big.vocab_size * big.hidden_size  # SOLUTION

# %% params-ex-mla
# BEGIN SOLUTION NO PROMPT
h, a, r_kv, d_n, d_r, d_v, L, tokens = 2048, 16, 512, 128, 64, 128, 27, 32768
# END SOLUTION
attention_weights = h * a * (d_n + d_r) + h * (r_kv + d_r) + r_kv * a * (d_n + d_v) + a * d_v * h  # SOLUTION
cache_bytes = (r_kv + d_r) * L * tokens * 2  # SOLUTION
cache_ratio = a * (d_n + d_r + d_v) / (r_kv + d_r)  # SOLUTION

# %% params-ex-shared
# BEGIN SOLUTION NO PROMPT
h, L, V, a, E, k, d_e, d_s = 2048, 24, 151936, 16, 60, 4, 1408, 5632
attention = 4 * h * h + 3 * h  # W_Q, W_K, W_V, W_O and the Q, K, V biases
# END SOLUTION
moe_block = E * 3 * h * d_e + 3 * h * d_s + h * E + h  # SOLUTION
shared_active = L * (attention + 2 * h + moe_block - (E - k) * 3 * h * d_e) + 2 * V * h + h  # SOLUTION
shared_width = d_s // d_e  # SOLUTION
k_equivalent = k + shared_width  # SOLUTION

# %% params-ex-dense-first
# BEGIN SOLUTION NO PROMPT
v3 = llmmath.preset("deepseek-v3")
all_sparse = v3.replace(mlp_types=())  # no layer pattern: every layer is sparse
# END SOLUTION
total_all_sparse = llmmath.param_count(all_sparse)  # SOLUTION
active_all_sparse = llmmath.active_param_count(all_sparse)  # SOLUTION

# %% params-ex-qknorm
# BEGIN SOLUTION NO PROMPT
qwen3, olmo2 = llmmath.preset("qwen3-235b-a22b"), llmmath.preset("olmo-2-13b")
# END SOLUTION
qwen3_qk = qwen3.n_layers * 2 * qwen3.head_dim  # SOLUTION
olmo2_qk = olmo2.n_layers * (olmo2.q_dim + olmo2.kv_dim)  # SOLUTION
