# Reference solutions of the matmul-cost assignment (instructor material, never given to students).
#
# One section per exercise, opened by "# %% <exercise label>". Otter-grader's markers apply:
# lines between "# BEGIN SOLUTION NO PROMPT" and "# END SOLUTION" are removed from the student
# notebook, and "name = value  # SOLUTION" becomes "name = ..." there. Each checkable part (see
# llmmath.check.describe) must be assigned by a "# SOLUTION" line. Run this file to check it.
import llmmath

# %% matmul-cost-ex-vecmat
# BEGIN SOLUTION NO PROMPT
m, n, p = 4096, 11008, 11008
# A v is the case p = 1: m (2n - 1) FLOPs; x y^T is the case n = 1: m p multiplications, no additions
# END SOLUTION
matvec_exact = llmmath.matmul_flops(m, n, 1, exact=True)  # SOLUTION
matvec_rel_error = 1 / (2 * n - 1)  # SOLUTION
outer_exact = m * p  # SOLUTION
outer_rel_error = (llmmath.matmul_flops(m, 1, p) - outer_exact) / outer_exact  # SOLUTION

# %% matmul-cost-ex-mlp
# BEGIN SOLUTION NO PROMPT
cfg = llmmath.preset("gpt3-175b")
b, s, h, f = 1, 2048, cfg.hidden_size, cfg.ffn_size
# END SOLUTION
mlp_flops = llmmath.batched_matmul_flops([b], s, h, f) + llmmath.batched_matmul_flops([b], s, f, h)  # SOLUTION

# %% matmul-cost-ex-count
def zero_acc_matmul(a, b):
    """Return (the product of the nested lists a and b, the number of FLOPs performed)."""
    # BEGIN SOLUTION
    m, n, p = len(a), len(b), len(b[0])
    flops = 0
    out = [[0.0] * p for _ in range(m)]
    for i in range(m):
        for j in range(p):
            acc = 0.0
            for k in range(n):
                acc += a[i][k] * b[k][j]
                flops += 2  # one multiplication, one addition
            out[i][j] = acc
    return out, flops
    # END SOLUTION


naive_saving = 3 * 4  # SOLUTION

# %% matmul-cost-ex-chain
# BEGIN SOLUTION NO PROMPT
h, r, b = 4096, 16, 8
# END SOLUTION
lora_right = llmmath.chain_flops([h, r, h, b], "right")  # SOLUTION
lora_left = llmmath.chain_flops([h, r, h, b], "left")  # SOLUTION
lora_ratio = lora_left / lora_right  # SOLUTION

# %% matmul-cost-ex-dp
# BEGIN SOLUTION NO PROMPT
dims = [30, 35, 15, 5, 10, 20, 25]


def trees(i, j):
    if i == j:
        yield i
        return
    for split in range(i, j):
        for left in trees(i, split):
            for right in trees(split + 1, j):
                yield (left, right)


all_costs = [llmmath.chain_flops(dims, t) for t in trees(0, 5)]
# END SOLUTION
dp_best = min(all_costs)  # SOLUTION
dp_left = llmmath.chain_flops(dims, "left")  # SOLUTION
dp_count = len(all_costs)  # SOLUTION

# %% matmul-cost-ex-attention
# BEGIN SOLUTION NO PROMPT
cfg = llmmath.preset("llama-65b")
# projections 8 s h^2 = attention 4 s^2 h  <=>  s = 2 h
# END SOLUTION
crossover_s = 2 * cfg.hidden_size  # SOLUTION
crossover_s_over_h = 2  # SOLUTION

# %% matmul-cost-ex-roofline
# BEGIN SOLUTION NO PROMPT


def first_compute_bound(gpu, precision, beta, n=8192, p=28672):
    ridge = llmmath.ridge_point(gpu, precision)  # peak FLOP/s / HBM bytes/s
    b = 1
    while llmmath.arithmetic_intensity(b, n, p, beta) < ridge:
        b += 1
    return b


# END SOLUTION
intensity_b64 = llmmath.arithmetic_intensity(64, 8192, 28672, 2)  # SOLUTION
batch_h100 = first_compute_bound("H100", "bf16_tensor", 2)  # SOLUTION
batch_mi300x = first_compute_bound("MI300X", "bf16_tensor", 2)  # SOLUTION
batch_h100_fp8 = first_compute_bound("H100", "fp8_tensor", 1)  # SOLUTION
