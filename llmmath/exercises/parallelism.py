"""Checkable exercises of the chapter ``parallelism``.

The chapter "Splitting a training step across GPUs" (``chapters/parallelism.ipynb``). Registered by
:mod:`llmmath.check` under the chapter's slug (this module's name with hyphens). Each part computes
its expected value with llmmath when an answer is checked: no answer is stored here.
"""

from __future__ import annotations

import math

from ..check import SIG3, Exercise, parts_of
from ..memory import training_state_bytes
from ..parallel import (
    Layout,
    collective_bytes,
    collective_seconds,
    fsdp_shard_numel,
    pipeline_bubble_fraction,
    stage_activation_bytes,
    step_collectives,
    tp_layer_comm_ratio,
)
from ..params import param_count
from ..presets import preset
from ..steptime import dp_hiding_tokens


def _parallelism(name: str) -> float:
    if name in ("ar_bytes", "ar_seconds"):
        grads = 2 * param_count(preset("llama2-7b"))
        if name == "ar_bytes":
            return collective_bytes("all_reduce", 64, grads)
        return collective_seconds("all_reduce", 64, grads, "H100")
    if name.startswith("hide_"):
        tokens = dp_hiding_tokens(7e9, "B200", zero_stage=1, precision="fp8_tensor")
        return tokens if name == "hide_tokens" else math.ceil(tokens / 8192)
    if name.startswith("tp_ratio"):
        return _tp_ratio(*{"tp_ratio_nvlink": (8, 8), "tp_ratio_split": (8, 16), "tp_ratio_16": (16, 16)}[name])
    if name == "m_1f1b":
        return next(m for m in range(16, 10**4) if pipeline_bubble_fraction(16, m) <= 0.05)
    if name == "m_interleaved":
        return next(m for m in range(16, 10**4, 16) if pipeline_bubble_fraction(16, m, "interleaved", 4) <= 0.05)
    if name.startswith("act_"):
        lay = Layout(tp=8, pp=16, dp=8, microbatches=64, sequence_parallel=True, recompute="selective")
        if name == "act_interleaved_gb":
            lay = lay.replace(schedule="interleaved", virtual_stages=2)
        return stage_activation_bytes(preset("gpt3-175b"), lay, 2048) / 1e9
    if name.startswith("state_zero"):
        return training_state_bytes(preset("llama2-70b"), zero_stage=int(name[-4]), n_gpus=64)["total"] / 1e9
    if name.startswith("cp_"):
        cfg = preset("llama-3-70b").replace(n_layers=1)
        c = [c for c in step_collectives(cfg, Layout(tp=8, cp=8, sequence_parallel=True), 65536)
             if c.parallelism == "cp" and c.phase == "forward"][0]
        return c.message if name == "cp_message_bytes" else collective_bytes("all_gather", 8, c.message)
    if name.startswith("a2a_"):
        c = [c for c in step_collectives(preset("deepseek-v3"), Layout(dp=64, ep=64), 4096)
             if c.parallelism == "ep"][0]
        return c.message if name == "a2a_message_bytes" else collective_bytes("all_to_all", 64, c.message)
    gpt2 = preset("gpt2")
    shape = (gpt2.vocab_size, gpt2.hidden_size)
    return fsdp_shard_numel(shape, 8) if name == "fsdp_padded" else fsdp_shard_numel(shape, 8, 7)


def _tp_ratio(t: int, span: int) -> float:
    """A Llama 3 70B layer's four tensor-parallel all-reduces (one 8192-token sequence, BF16, the
    group spread over ``span`` consecutive H100s, 8 per node) over its weight products at the peak."""
    return tp_layer_comm_ratio(preset("llama-3-70b"), t, "H100", 8192, tp_per_node=t * 8 // span)


_par = parts_of(_parallelism)


EXERCISES = [
    Exercise("parallelism-ex-ring", "parallelism-collectives", "Collectives: what each GPU sends",
             "Llama 2 7B's BF16 gradients (2 bytes x the preset's parameter count), 64 H100s in 8 nodes.",
             (_par("ar_bytes", "bytes each GPU sends in a ring all-reduce", SIG3),
              _par("ar_seconds", "its time under the latency-bandwidth model (collective_seconds)", SIG3))),
    Exercise("parallelism-ex-hide", "parallelism-dp-hide", "When data-parallel communication hides",
             "B200 computing at its dense FP8 peak, one 400 Gb/s NIC per GPU, BF16 gradients and parameters, "
             "ZeRO-1, every byte over the network, the large-d limit; sequences of 8192 tokens.",
             (_par("hide_tokens", "tokens the last micro-batch of a replica must hold to hide the reduction",
                   SIG3),
              _par("hide_sequences", "the fewest 8192-token sequences in that micro-batch"))),
    Exercise("parallelism-ex-tp", "parallelism-tp", "Tensor parallelism",
             "Llama 3 70B (the preset: hidden size, layer_param_count), one 8192-token sequence, BF16, "
             "H100 peak and llmmath.hardware's links; four all-reduces per layer timed with "
             "collective_seconds, latencies included (tp_layer_comm_ratio).",
             (_par("tp_ratio_nvlink", "all-reduce / weight-product time, t = 8 inside a node", SIG3),
              _par("tp_ratio_split", "the same, t = 8 split 4 + 4 over two nodes (span 16)", SIG3),
              _par("tp_ratio_16", "the same, t = 16 over two nodes", SIG3))),
    Exercise("parallelism-ex-bubble", "parallelism-pp", "Pipeline parallelism",
             "16 stages, bubble at most 5% of the step.",
             (_par("m_1f1b", "the fewest micro-batches with 1F1B"),
              _par("m_interleaved", "the fewest (a multiple of 16) with interleaving, v = 4"))),
    Exercise("parallelism-ex-inflight", "parallelism-pp", "Pipeline parallelism",
             "GPT-3 175B, t = 8, p = 16, d = 8, 64 micro-batches of one 2048-token sequence, sequence "
             "parallelism, selective recomputation, Korthikanti's bytes (2-byte values, 1-byte masks, dropout).",
             (_par("act_1f1b_gb", "activation GB (10^9 bytes) on a first-stage GPU, 1F1B", SIG3),
              _par("act_interleaved_gb", "the same with the interleaved schedule, v = 2", SIG3))),
    Exercise("parallelism-ex-zero", "parallelism-dp", "Data parallelism, ZeRO and FSDP",
             "Llama 2 70B (the preset), Adam in mixed precision, 64 data-parallel GPUs.",
             (_par("state_zero1_gb", "model state per GPU in GB with ZeRO-1", SIG3),
              _par("state_zero2_gb", "with ZeRO-2", SIG3),
              _par("state_zero3_gb", "with ZeRO-3", SIG3))),
    Exercise("parallelism-ex-cp", "parallelism-cp", "Context parallelism",
             "Llama 3 70B, one sequence of 65,536 tokens, t = 8, c = 8, BF16, one layer's forward.",
             (_par("cp_message_bytes", "the all-gather's message: the keys and values, bytes"),
              _par("cp_sent_bytes", "bytes each GPU sends in it", SIG3))),
    Exercise("parallelism-ex-ep", "parallelism-ep", "Expert parallelism",
             "DeepSeek-V3, e = 64, one 4096-token sequence per GPU, BF16, one MoE layer, balanced routing.",
             (_par("a2a_message_bytes", "one dispatch all-to-all's message per GPU, bytes"),
              _par("a2a_sent_bytes", "bytes each GPU sends in it", SIG3))),
    Exercise("parallelism-ex-fsdp", "parallelism-ref-fsdp", "Checked against PyTorch's distributed code",
             "GPT-2's token embedding (vocab_size x hidden_size of the preset), FSDP2 over 8 GPUs.",
             (_par("fsdp_padded", "elements every GPU allocates for it"),
              _par("fsdp_last", "elements GPU 7 holds"))),
]


# The questions of checkable exercises that are graded by hand (the assignments collect them).
WRITTEN = {
    'parallelism-ex-ring': (
        "Derive the bytes each GPU sends in a ring all-reduce of $M$ bytes over $n$ GPUs.",
    ),
    'parallelism-ex-hide': (
        "Derive the tokens the last micro-batch must hold for the reduction to hide.",
        "Why can the reduction not hide behind the whole step's backward, and why does ZeRO-3 need no more "
        "tokens?",
    ),
    'parallelism-ex-tp': (
        "Derive the ratio of tensor parallelism's communication to its compute time for c_w h^2 weights per layer.",
        "Is tensor parallelism across nodes worth it for this model? What would you do instead?",
    ),
    'parallelism-ex-zero': (
        "Which ZeRO stages leave room for activations with 10% reserved, and at what price? What would hybrid "
        "sharding over the 8 GPUs of a node hold?",
    ),
    'parallelism-ex-cp': (
        "Compare the all-gather of the keys and values with one of the queries. What does the backward send if "
        "the forward kept them, and what does keeping them cost?",
    ),
    'parallelism-ex-ep': (
        "What change FP8 dispatch and routing limited to 4 nodes, and why does the second matter most for "
        "InfiniBand?",
    ),
    'parallelism-ex-bubble': (
        "What does the smaller number of micro-batches buy, and what does it cost?",
    ),
}

# The chapter's exercises without a checkable part: graded by hand only.
HAND_GRADED = ('parallelism-ex-plan',)
