"""Building blocks checked against counts made by hand or by brute force, or against the running
reference implementation (issue 33): each expected value is a literal with its derivation in a
comment, a brute-force enumeration, or an operation count of PyTorch/transformers, never a call to
another llmmath function.

- the model state of one GPU under ZeRO with expert parallelism (the experts' ZeRO group is the
  ``dp * cp / ep`` ranks that hold the same experts), brute force over a toy rank layout;
- the data-parallel bytes on the wire of ZeRO 0-3 with several micro-batches (ZeRO-2 reduce-scatters
  the gradients once per micro-batch), and of the expert gradients over their smaller group;
- the elementwise operations per attention score of ``nonmatmul_flops``, against the aten operations
  that transformers' eager attention runs;
- one hand count for building blocks whose other tests compose llmmath functions: a pipeline
  stage's activations, the tokens that hide data-parallel traffic, and the serving bounds
  (decode bytes and step time, serving memory, the largest batch, the critical batch).
"""

from __future__ import annotations

import math

import pytest

from llmmath.config import TransformerConfig, from_hf_config
from llmmath.flops import nonmatmul_flops
from llmmath.parallel import PARALLELISMS, Layout, communication_bytes, memory_per_stage, stage_param_counts

# A toy mixture of experts (Mixtral layout): 2 layers, h = 16, 4 heads of 4 (no GQA), 4 experts of
# d_e = 8 with top-2 routing, vocabulary 10, untied embeddings, RMSNorm, no biases.
TOY_MOE = dict(model_type="mixtral", num_hidden_layers=2, hidden_size=16, num_attention_heads=4,
               num_key_value_heads=4, intermediate_size=8, num_local_experts=4, num_experts_per_tok=2,
               vocab_size=10, max_position_embeddings=32)
# Parameters counted by hand:
#   per layer, not experts: q, k, v, o 4 h^2 = 1024, router h E = 64, two RMSNorm weights 2 h = 32
#   -> 1120 per layer, 2240 for 2 layers; embedding V h = 160, LM head 160, final norm 16:
DENSE = 2240 + 160 + 160 + 16  # = 2576
#   one expert: gate, up, down 3 h d_e = 384; a GPU of ep = 2 holds 4 / 2 = 2 experts per layer:
EXPERT_PER_GPU = 2 * 2 * 384  # = 1536 (2 layers x 2 experts x 384)


def _toy_moe():
    return from_hf_config(TOY_MOE)


def test_toy_moe_parameters_by_hand():
    counts = stage_param_counts(_toy_moe(), Layout(dp=4, ep=2))
    assert counts == [{"dense": DENSE, "expert": EXPERT_PER_GPU}]


def _zero_groups(dp: int, ep: int) -> dict[str, int]:
    """Brute force over the ranks of a layout with dp data-parallel ranks of which ep form an
    expert-parallel group (ranks numbered tp-cp-ep-dp-pp as in Megatron-LM, tp = cp = pp = 1):
    rank r holds the expert shard r % ep. Returns how many ranks hold the same copy of a dense
    parameter and of an expert: the sizes of the groups ZeRO shards their state over."""
    ranks = range(dp)
    shard_of = {r: r % ep for r in ranks}
    expert_holders = {s: [r for r in ranks if shard_of[r] == s] for s in set(shard_of.values())}
    sizes = {len(holders) for holders in expert_holders.values()}
    assert len(sizes) == 1
    return {"dense": dp, "expert": sizes.pop()}


def test_expert_state_under_zero_with_expert_parallelism():
    """Model state of one GPU, ZeRO-1, mixed precision, Adam, dp = 4, ep = 2.

    By brute force, a dense parameter is held by all 4 ranks and an expert by 2 (4 / 2): ZeRO-1
    shards the fp32 master weights (4 B) and Adam's two fp32 moments (8 B) over those groups and
    keeps the bf16 parameters and gradients (2 B + 2 B) whole. By hand:
      parameters        2 x (2576 + 1536)                = 8224
      gradients         2 x (2576 + 1536)                = 8224
      master weights    4 x (2576 / 4 + 1536 / 2) = 4 x (644 + 768) = 5648
      optimizer states  8 x (644 + 768)                  = 11296
      total                                              = 33392
    (Sharding the experts over all 4 data-parallel ranks would give 4 x (644 + 384) = 4112 and
    8 x 1028 = 8224 instead.)"""
    groups = _zero_groups(dp=4, ep=2)
    assert groups == {"dense": 4, "expert": 2}
    assert (DENSE // groups["dense"], EXPERT_PER_GPU // groups["expert"]) == (644, 768)
    (row,) = memory_per_stage(_toy_moe(), Layout(dp=4, ep=2, zero_stage=1), 8)
    assert (row["parameters"], row["gradients"], row["master_weights"], row["master_gradients"],
            row["optimizer_states"]) == (8224, 8224, 5648, 0, 11296)
    assert row["total"] - row["activations"] == 33392


def test_expert_gradients_travel_in_their_smaller_data_parallel_group():
    """ZeRO-1 bytes one GPU sends per step (ring: (n - 1)/n of the message per reduce-scatter or
    all-gather), bf16 gradients and parameters. Dense: group 4, message 2 x 2576 = 5152 B:
    3/4 x 5152 = 3864 B for the reduce-scatter and again for the all-gather. Experts: group 2,
    message 2 x 1536 = 3072 B: 1/2 x 3072 = 1536 B each. Total 2 x (3864 + 1536) = 10800 B.
    Expert all-to-alls (micro-batch of b = 1 sequence of s = 8 tokens): message b s k h 2 =
    8 x 2 x 16 x 2 = 512 B, 1/2 of it sent, dispatch + combine in the forward and again in the
    backward, 2 MoE layers: 8 x 256 = 2048 B."""
    sent = communication_bytes(_toy_moe(), Layout(dp=4, ep=2, zero_stage=1), 8)
    assert (sent["dp"], sent["ep"]) == (10800, 2048)
    assert sent["total"] == 10800 + 2048


# A toy GPT (learned positions, LayerNorm, biases, tied embeddings): L = 2, h = 8, 2 heads, V = 10,
# context 16. Parameters by hand: attention 4 h^2 + 4 h = 288, MLP 8 h^2 + 5 h = 552, two
# LayerNorms 4 h = 32 -> 872 per layer, 1744 for two; token embedding 80, positions 128, final
# LayerNorm 16: P = 1968.
TOY_GPT_PARAMS = 1968


def _toy_gpt():
    return TransformerConfig(n_layers=2, hidden_size=8, n_heads=2, vocab_size=10, max_position=16)


# dp = 4 ranks, m = 3 micro-batches, bf16 gradients and parameters (2 B each); ring collectives send
# (n - 1)/n = 3/4 of the message per reduce-scatter or all-gather, 2 x 3/4 per all-reduce. With
# M = 2 P = 3936 bytes, one reduce-scatter or all-gather sends 3/4 x 3936 = 2952 B.
ZERO_BYTES = {
    0: 2 * 2952,  # one all-reduce of the gradients per step: 5904
    1: 2952 + 2952,  # one reduce-scatter of the gradients + one all-gather of the parameters: 5904
    2: 3 * 2952 + 2952,  # a reduce-scatter per micro-batch (no full gradient is kept) + one all-gather: 11808
    3: 3 * 3 * 2952,  # per micro-batch: all-gather forward, all-gather backward, reduce-scatter: 26568
}


@pytest.mark.parametrize("stage", sorted(ZERO_BYTES))
def test_zero_data_parallel_bytes_with_three_microbatches(stage):
    from llmmath.params import param_count

    assert param_count(_toy_gpt()) == TOY_GPT_PARAMS
    sent = communication_bytes(_toy_gpt(), Layout(dp=4, zero_stage=stage, microbatches=3), 8)
    assert sent["dp"] == ZERO_BYTES[stage]
    assert sent["total"] == ZERO_BYTES[stage] and set(PARALLELISMS) < set(sent)


def test_zero1_moves_fp32_gradients_and_bf16_parameters():
    """Megatron-LM's bf16 weights with fp32 main gradients (precision "mixed-fp32-main-grads"):
    ZeRO-1 reduce-scatters 4-byte gradients, 3/4 x 4 x 1968 = 5904 B, and all-gathers the 2-byte
    updated parameters, 3/4 x 2 x 1968 = 2952 B: 8856 B per step."""
    sent = communication_bytes(_toy_gpt(), Layout(dp=4, zero_stage=1), 8, precision="mixed-fp32-main-grads")
    assert sent["dp"] == 5904 + 2952


# ---- elementwise operations of the reference implementations (aten traces) -------------------------


def _ops_on(fn, args, shape, decompose=()):
    """The aten operations ``fn(*args)`` runs that read or write a tensor of ``shape``, traced with
    make_fx (the aten operations in ``decompose`` split into their primitives), leaving out the
    matrix products and the operations that only move or view data (no arithmetic)."""
    torch = pytest.importorskip("torch")
    from torch._decomp import decomposition_table
    from torch.fx.experimental.proxy_tensor import make_fx

    aten = torch.ops.aten
    graph = make_fx(fn, decomposition_table={op: decomposition_table[op] for op in decompose})(*args).graph
    free = {aten.bmm.default, aten.mm.default, aten.view.default, aten._unsafe_view.default, aten.expand.default,
            aten.clone.default, aten.transpose.int, aten.slice.Tensor, aten.cat.default, aten.unsqueeze.default}
    ops = []
    for node in graph.nodes:
        if node.op != "call_function" or node.target in free:
            continue
        shapes = [tuple(x.meta["val"].shape) for x in node.args
                  if hasattr(x, "meta") and hasattr(x.meta.get("val"), "shape")]
        if shape in shapes or shape == tuple(getattr(node.meta.get("val"), "shape", ())):
            ops.append(node.target.__name__.split(".")[0])
    return ops


def _attention_ops_per_score(causal: bool) -> list[str]:
    """The operations transformers' eager attention (the Llama family's ``eager_attention_forward``)
    runs on the b x a x s x s scores, aten._softmax split into its primitives."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from transformers.models.llama.modeling_llama import eager_attention_forward

    b, a, s, d = 1, 3, 5, 4

    class Module(torch.nn.Module):
        num_key_value_groups = 1

    module = Module().eval()
    mask = torch.full((b, 1, s, s), float("-inf")).triu(1) if causal else None

    def attention(q, k, v):
        return eager_attention_forward(module, q, k, v, mask, scaling=d**-0.5)[0]

    qkv = [torch.randn(b, a, s, d) for _ in range(3)]
    return _ops_on(attention, qkv, (b, a, s, s), decompose=[torch.ops.aten._softmax.default])


@pytest.mark.parametrize("causal", [True, False], ids=["causal", "bidirectional"])
def test_softmax_operations_per_score_are_the_eager_attentions(causal):
    """The eager attention scales the scores (mul), adds the causal mask (add; none without a
    mask), and its softmax is max, subtract, exp, sum, divide: 7 operations per score, 6 without a
    mask. nonmatmul_flops counts the same per score (its reductions as one operation per element)."""
    ops = _attention_ops_per_score(causal)
    expected = ["mul", "add", "amax", "sub", "exp", "sum", "div"] if causal else \
        ["mul", "amax", "sub", "exp", "sum", "div"]
    assert ops == expected
    cfg = from_hf_config(dict(TOY_MOE, model_type="llama", intermediate_size=24)) if causal else \
        from_hf_config(dict(model_type="bert", num_hidden_layers=2, hidden_size=16, num_attention_heads=4,
                            intermediate_size=24, vocab_size=10, max_position_embeddings=32))
    b, s = 2, 6
    scores = cfg.n_layers * b * cfg.n_heads * s * s
    assert nonmatmul_flops(cfg, b, s)["softmax"] == len(ops) * scores


def test_rmsnorm_rotary_and_loss_operations_are_the_references():
    """Per element, as transformers' Llama runs them: LlamaRMSNorm squares, averages, multiplies by
    the reciprocal root and by the gain (4; the root and the epsilon act on one value per row);
    apply_rotary_pos_emb computes q cos + rotate_half(q) sin (2 multiplies and 1 add per element;
    rotate_half's negation of half the elements is not counted); cross-entropy's log-softmax takes
    the max, subtracts it, exponentiates, sums and subtracts the log-sum-exp (5 per logit; the loss
    then picks one logit per token). nonmatmul_flops counts 4, 3 and 5."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from transformers.models.llama.modeling_llama import LlamaRMSNorm, apply_rotary_pos_emb

    T, h, V, d = 6, 8, 10, 4
    norm = LlamaRMSNorm(h)
    assert _ops_on(norm, [torch.randn(T, h)], (T, h)) == ["pow", "mean", "mul", "mul"]
    cos, sin = torch.randn(1, T, d), torch.randn(1, T, d)
    q, k = torch.randn(1, 4, T, d), torch.randn(1, 2, T, d)  # 4 query heads, 2 key heads
    rotary = _ops_on(lambda q, k: apply_rotary_pos_emb(q, k, cos, sin), [q, k], (1, 4, T, d))
    assert rotary == ["mul", "mul", "add"]
    target = torch.randint(0, V, (T,))
    loss = _ops_on(lambda z: torch.nn.functional.cross_entropy(z, target), [torch.randn(T, V)], (T, V),
                   decompose=[torch.ops.aten._log_softmax.default])
    assert loss == ["amax", "sub", "exp", "sum", "sub", "nll_loss_forward"]  # the last reads 1 logit per token

    cfg = from_hf_config(dict(TOY_MOE, model_type="llama", intermediate_size=24, num_key_value_heads=2))
    b, s = 2, 6
    tokens, q_dim, kv_dim = b * s, 16, 8  # 4 query heads and 2 KV heads of 4
    got = nonmatmul_flops(cfg, b, s)
    n_norms = 2 * cfg.n_layers + 1  # two per layer and the final one
    assert got["norms"] == n_norms * tokens * cfg.hidden_size * 4
    assert got["rotary"] == cfg.n_layers * tokens * (q_dim + kv_dim) * len(rotary)
    assert got["loss"] == tokens * cfg.vocab_size * (len(loss) - 1)


def test_layernorm_operations_by_the_stated_convention():
    """LayerNorm by the convention nonmatmul_flops states, one operation per element for each of mean,
    center, square, sum, normalise, gain and bias: 7. (No trace settles it: torch's native_layer_norm
    computes the variance in one fused primitive, prims.var, and centers again for the output.)
    The toy GPT, b = 1, s = 8: 2 norms per layer x 2 layers + the final one = 5 norms of 8 x 8
    elements: 5 x 64 x 7 = 2240."""
    assert nonmatmul_flops(_toy_gpt(), 1, 8)["norms"] == 2240


# ---- other building blocks whose tests compose llmmath functions: one hand count each ---------------


def test_stage_activation_bytes_of_the_toy_gpt_by_hand():
    """One GPU, micro-batch b = 1 of s = 8 tokens, the toy GPT (h = 8, a = 2, L = 2, V = 10).
    Korthikanti et al.'s eq. (1) per layer: s b h (34 + 5 a s / h) = 64 x (34 + 10) = 2816 B, two
    layers 5632; the embedding dropout's 1-byte mask s b h = 64; the final LayerNorm's and the LM
    head's 2-byte inputs 2 x 2 x 64 = 256; the fp32 logits 4 b s V = 320. Total 6272 B."""
    from llmmath.parallel import stage_activation_bytes

    assert stage_activation_bytes(_toy_gpt(), Layout(), 8) == 5632 + 64 + 256 + 320


def test_dp_hiding_tokens_for_the_h100_by_hand():
    """ZeRO-0: an all-reduce moves ~2 x 2 bytes per parameter; the last micro-batch's backward,
    2/3 x 6 = 4 FLOPs per parameter and token, overlaps it: T = peak / bandwidth = 989.4e12 / 50e9 =
    19,788 tokens (H100 SXM dense BF16, a 400 Gb/s NIC). ZeRO-3 moves 1.5 times as much, but in two
    windows: the forward all-gather, 2 bytes per parameter, behind the forward's 2 FLOPs, and the
    backward's all-gather and reduce-scatter, 2 + 2 bytes, behind its 4 FLOPs: 1 byte per 1 FLOP in
    both, the same 19,788 tokens (not 1.5 x 19,788 = 29,682, which hides the whole step's bytes
    behind the backward alone)."""
    from llmmath.steptime import dp_hiding_tokens

    assert dp_hiding_tokens(7e9, "H100") == pytest.approx(19_788, rel=1e-12)
    assert dp_hiding_tokens(7e9, "H100", zero_stage=3) == pytest.approx(19_788, rel=1e-12)


def test_llama3_8b_serving_by_hand():
    """Llama 3 8B (config.json: L = 32, h = 4096, 32 query and 8 KV heads of 128, MLP 14336,
    V = 128256, untied), bf16, on an H100 SXM (80 GB, 3.35 TB/s, 989.4 TFLOP/s dense BF16).

    Parameters: per layer q, o 2 x 4096^2 = 33,554,432, k, v 2 x 4096 x 1024 = 8,388,608, MLP
    3 x 4096 x 14336 = 176,160,768, norms 8192: 218,112,000; x 32 = 6,979,584,000; embedding and
    head 2 x 128256 x 4096 = 1,050,673,152; final norm 4096: 8,030,261,248.
    KV cache: 2 x 32 x 8 x 128 x 2 B = 131,072 B per token.
    One decode step at batch 1 reads every weight but the 128,255 embedding rows it does not look
    up: 2 x (8,030,261,248 - 128,255 x 4096) = 15,009,857,536 B, plus 1024 tokens of cache,
    134,217,728 B: 15,144,075,264 B, which takes 15,144,075,264 / 3.35e12 s (memory-bound).
    Serving 8 sequences of 8192: 2 x 8,030,261,248 + 8 x 8192 x 131,072 = 24,650,457,088 B; the
    largest batch of 8192-token sequences in the 81,559 MiB = 85,520,809,984 B the driver reports:
    floor((85,520,809,984 - 16,060,522,496) / (8192 x 131,072)) = 64.
    Critical batch at context 1: per sequence F_1 = 2 x 7,504,658,432 matmul weights (layers'
    6,979,321,856 + head 525,336,576) + 4 x 32 x 4096 x 2 keys = 15,010,365,440 FLOPs and C_1 =
    131,072 + 8192 (its cache and its embedding row) = 139,264 B beside W = 15,009,849,344 B:
    b* = ceil(W P / (F_1 B - C_1 P))."""
    from llmmath.inference import (
        decode_bytes,
        decode_flops,
        decode_step_seconds,
        max_decode_batch,
        serving_memory_bytes,
        step_critical_batch,
    )
    from llmmath.params import param_count
    from llmmath.presets import preset

    cfg = preset("llama-3-8b")
    assert param_count(cfg) == 8_030_261_248
    assert decode_bytes(cfg, 1, 1024) == 15_144_075_264
    # batch 8: 8 embedding rows read, 128,248 not: 2 x (8,030,261,248 - 128,248 x 4096) = 15,009,914,880 B,
    # plus 8 caches of 1024 tokens, 8 x 134,217,728 = 1,073,741,824 B
    assert decode_bytes(cfg, 8, 1024) == 15_009_914_880 + 1_073_741_824
    assert decode_step_seconds(cfg, 1, 1024, "H100") == pytest.approx(15_144_075_264 / 3.35e12, rel=1e-12)
    assert serving_memory_bytes(cfg, 8, 8192) == 24_650_457_088
    assert max_decode_batch(cfg, 8192, "H100", reserve_bytes=0) == 64
    # with 85,520,809,984 - 16,060,522,496 - 64 x 1,073,741,824 = 740,810,752 B reserved, exactly 64 fit
    assert max_decode_batch(cfg, 8192, "H100", reserve_bytes=740_810_752) == 64
    assert max_decode_batch(cfg, 8192, "H100", reserve_bytes=740_810_753) == 63
    # vLLM's default budget, floor(0.9 x 85,520,809,984) = 76,968,728,985 B: (76,968,728,985 -
    # 16,060,522,496) // 1,073,741,824 = 56
    assert max_decode_batch(cfg, 8192, "H100") == 56
    f1, c1, w = 15_010_365_440, 139_264, 15_009_849_344
    assert decode_flops(cfg, 1, 1) == f1 and decode_bytes(cfg, 1, 1) == w + c1
    peak, bandwidth = 989.4e12, 3.35e12
    assert step_critical_batch(cfg, 1, "H100") == math.ceil(w * peak / (f1 * bandwidth - c1 * peak)) == 297


def test_tp_comm_compute_ratio_for_gpt3_on_a100_by_hand():
    """GPT-3 175B (h = 12288) with t = 8 on A100s: 4 all-reduces of b s h 2-byte values per layer,
    8 b s h x 2 x 7/8 bytes at NVLink's 300 GB/s each way, against 3 x 24 b s h^2 / 8 FLOPs at 312
    TFLOP/s: (7 x 2 x 312e12) / (9 x 12288 x 300e9) = 0.1317 (the tokens cancel)."""
    from llmmath.parallel import tp_comm_compute_ratio

    assert tp_comm_compute_ratio(12288, 8, "A100") == pytest.approx(7 * 2 * 312e12 / (9 * 12288 * 300e9), rel=1e-12)


def test_balanced_stage_layers_by_hand():
    """Llama 3 405B's 126 layers on 16 stages: 126 = 16 x 7 + 14, so the first 14 stages hold 8 and
    the last 2 hold 7; an even split is left to Layout (the empty tuple)."""
    from llmmath.parallel import balanced_stage_layers

    assert balanced_stage_layers(126, 16) == (8,) * 14 + (7,) * 2
    assert balanced_stage_layers(32, 4) == ()
