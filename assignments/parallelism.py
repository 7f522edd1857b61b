# Reference solutions of the parallelism assignment (instructor material, never given to students).
#
# One section per exercise, opened by "# %% <exercise label>". Otter-grader's markers apply:
# lines between "# BEGIN SOLUTION NO PROMPT" and "# END SOLUTION" are removed from the student
# notebook, and "name = value  # SOLUTION" becomes "name = ..." there. Each checkable part (see
# llmmath.check.describe) must be assigned by a "# SOLUTION" line. Run this file to check it.
import llmmath

# %% parallelism-ex-ring
# BEGIN SOLUTION NO PROMPT
grads = 2 * llmmath.param_count(llmmath.preset("llama2-7b"))
# END SOLUTION
ar_bytes = llmmath.collective_bytes("all_reduce", 64, grads)  # SOLUTION
ar_seconds = llmmath.collective_seconds("all_reduce", 64, grads, "H100")  # SOLUTION

# %% parallelism-ex-hide
hide_tokens = llmmath.dp_hiding_tokens(7e9, "B200", zero_stage=1, precision="fp8_tensor")  # SOLUTION
hide_sequences = -(-hide_tokens // 8192)  # SOLUTION

# %% parallelism-ex-tp
# BEGIN SOLUTION NO PROMPT
l70 = llmmath.preset("llama-3-70b")
# END SOLUTION
tp_ratio_nvlink = llmmath.tp_layer_comm_ratio(l70, 8, "H100", 8192)  # SOLUTION
tp_ratio_split = llmmath.tp_layer_comm_ratio(l70, 8, "H100", 8192, tp_per_node=4)  # SOLUTION
tp_ratio_16 = llmmath.tp_layer_comm_ratio(l70, 16, "H100", 8192, tp_per_node=8)  # SOLUTION

# %% parallelism-ex-bubble
# BEGIN SOLUTION NO PROMPT
bubble = llmmath.pipeline_bubble_fraction
# END SOLUTION
m_1f1b = next(m for m in range(16, 10**4) if bubble(16, m) <= 0.05)  # SOLUTION
m_interleaved = next(m for m in range(16, 10**4, 16) if bubble(16, m, "interleaved", 4) <= 0.05)  # SOLUTION

# %% parallelism-ex-inflight
# BEGIN SOLUTION NO PROMPT
gpt3 = llmmath.preset("gpt3-175b")
lay = llmmath.Layout(tp=8, pp=16, dp=8, microbatches=64, sequence_parallel=True, recompute="selective")
inter = lay.replace(schedule="interleaved", virtual_stages=2)
# END SOLUTION
act_1f1b_gb = llmmath.stage_activation_bytes(gpt3, lay, 2048) / 1e9  # SOLUTION
act_interleaved_gb = llmmath.stage_activation_bytes(gpt3, inter, 2048) / 1e9  # SOLUTION

# %% parallelism-ex-zero
# BEGIN SOLUTION NO PROMPT
l70 = llmmath.preset("llama2-70b")
# END SOLUTION
state_zero1_gb = llmmath.training_state_bytes(l70, zero_stage=1, n_gpus=64)["total"] / 1e9  # SOLUTION
state_zero2_gb = llmmath.training_state_bytes(l70, zero_stage=2, n_gpus=64)["total"] / 1e9  # SOLUTION
state_zero3_gb = llmmath.training_state_bytes(l70, zero_stage=3, n_gpus=64)["total"] / 1e9  # SOLUTION

# %% parallelism-ex-cp
# BEGIN SOLUTION NO PROMPT
l70 = llmmath.preset("llama-3-70b").replace(n_layers=1)
cp = [c for c in llmmath.step_collectives(l70, llmmath.Layout(tp=8, cp=8, sequence_parallel=True), 65536)
      if c.parallelism == "cp" and c.phase == "forward"][0]
# END SOLUTION
cp_message_bytes = cp.message  # SOLUTION
cp_sent_bytes = llmmath.collective_bytes("all_gather", 8, cp.message)  # SOLUTION

# %% parallelism-ex-ep
# BEGIN SOLUTION NO PROMPT
ds = llmmath.preset("deepseek-v3")
a2a = [c for c in llmmath.step_collectives(ds, llmmath.Layout(dp=64, ep=64), 4096) if c.parallelism == "ep"][0]
# END SOLUTION
a2a_message_bytes = a2a.message  # SOLUTION
a2a_sent_bytes = llmmath.collective_bytes("all_to_all", 64, a2a.message)  # SOLUTION

# %% parallelism-ex-fsdp
# BEGIN SOLUTION NO PROMPT
gpt2 = llmmath.preset("gpt2")
shape = (gpt2.vocab_size, gpt2.hidden_size)
# END SOLUTION
fsdp_padded = llmmath.fsdp_shard_numel(shape, 8)  # SOLUTION
fsdp_last = llmmath.fsdp_shard_numel(shape, 8, 7)  # SOLUTION
