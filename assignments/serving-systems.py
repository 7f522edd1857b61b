# Reference solutions of the serving-systems assignment (instructor material, never given to students).
#
# One section per exercise, opened by "# %% <exercise label>". Otter-grader's markers apply:
# lines between "# BEGIN SOLUTION NO PROMPT" and "# END SOLUTION" are removed from the student
# notebook, and "name = value  # SOLUTION" becomes "name = ..." there. Each checkable part (see
# llmmath.check.describe) must be assigned by a "# SOLUTION" line. Run this file to check it.
import llmmath

# %% sys-ex-static
# BEGIN SOLUTION NO PROMPT
# the longest of b exponential answers has mean mu H_b, so 1 / H_b of the slots are busy
# END SOLUTION
util_16 = 1 / sum(1 / i for i in range(1, 17))  # SOLUTION
util_256 = 1 / sum(1 / i for i in range(1, 257))  # SOLUTION

# %% sys-ex-steady
# BEGIN SOLUTION NO PROMPT
costs = llmmath.step_costs(llmmath.preset("llama-3-8b"), "H100")
req = llmmath.request_costs(costs, 1024, 256)
sat = llmmath.saturation_rate(req)
point = llmmath.load_steady_state(costs, 1024, 256, 0.6 * sat)
# END SOLUTION
sat_rate = sat  # SOLUTION
itl_ms = point.itl * 1e3  # SOLUTION
batch = point.batch  # SOLUTION

# %% sys-ex-budget
# BEGIN SOLUTION NO PROMPT
costs = llmmath.step_costs(llmmath.preset("llama-3-8b"), "H100")
req = llmmath.request_costs(costs, 1024, 256)
sat256 = llmmath.saturation_rate(req, budget=256)  # below saturation_rate(req): the budget binds
# END SOLUTION
sat_budget = sat256  # SOLUTION
ttft_ms = llmmath.load_steady_state(costs, 1024, 256, 0.6 * sat256, budget=256).ttft * 1e3  # SOLUTION

# %% sys-ex-blocks
# BEGIN SOLUTION NO PROMPT
lengths = [100, 257, 1000, 4097]
# END SOLUTION
blocks = sum(-(-n // 16) for n in lengths)  # SOLUTION
paged_waste = 16 * blocks - sum(lengths)  # SOLUTION
contiguous_waste = sum(8192 - n for n in lengths)  # SOLUTION

# %% sys-ex-cow
# BEGIN SOLUTION NO PROMPT
full = 1000 // 16  # full prompt blocks, shared
per_sample = -(-(1000 + 200 - 1) // 16)  # blocks of one sample's cache
per_token = llmmath.kv_bytes(llmmath.preset("llama-3-8b"), 1, 1)  # bytes of one cached token
# END SOLUTION
shared_blocks = full + 5 * (per_sample - full)  # SOLUTION
unshared_blocks = 5 * per_sample  # SOLUTION
saved_mb = (unshared_blocks - shared_blocks) * 16 * per_token / 1e6  # SOLUTION

# %% sys-ex-spec
# BEGIN SOLUTION NO PROMPT
def speedup_of(gamma, theta=0.7, kappa=0.1):
    return (1 - theta ** (gamma + 1)) / (1 - theta) / (gamma * kappa + 1)


# END SOLUTION
best_gamma = max(range(1, 65), key=speedup_of)  # SOLUTION
speedup = speedup_of(best_gamma)  # SOLUTION

# %% sys-ex-mtp
implied_cost_085 = (1 + 0.85) / 1.8  # SOLUTION
implied_cost_090 = (1 + 0.9) / 1.8  # SOLUTION

# %% sys-ex-quant
# BEGIN SOLUTION NO PROMPT
bits3 = 3 + (16 + 3) / 32
# END SOLUTION
bits = bits3  # SOLUTION
crit_h100 = llmmath.gpu_peak_flops("H100") * bits3 / 8 / (2 * llmmath.GPUS["H100"].memory_bandwidth)  # SOLUTION
crit_mi300x = llmmath.gpu_peak_flops("MI300X") * bits3 / 8 / (2 * llmmath.GPUS["MI300X"].memory_bandwidth)  # SOLUTION

# %% sys-ex-moe
# BEGIN SOLUTION NO PROMPT
qwen, h200 = llmmath.preset("qwen3-235b-a22b"), llmmath.GPUS["H200"]
ridge_half = h200.peak_flops["fp8_tensor"] * 1 / (2 * h200.memory_bandwidth)  # 1-byte weights
# END SOLUTION
t_star = qwen.n_experts / qwen.experts_per_token * ridge_half  # SOLUTION
per_gpu_16 = t_star / 16  # SOLUTION

# %% sys-ex-transfer
# BEGIN SOLUTION NO PROMPT
shard = llmmath.tp_shard(llmmath.preset("llama-3-70b"), 8)  # one KV head per GPU
# END SOLUTION
transfer_ms_bf16 = llmmath.kv_bytes(shard, 1, 32768, "bf16") / 50e9 * 1e3  # SOLUTION
transfer_ms_fp8 = llmmath.kv_bytes(shard, 1, 32768, "fp8") / 50e9 * 1e3  # SOLUTION

# %% sys-ex-cost
usd_per_mtok = 1e6 * 2.0 / (3600 * 14_800 / 8)  # SOLUTION
