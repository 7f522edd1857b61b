"""Tests of llmmath.inference against transformers, brute force, sympy and published figures.

Independent references: ``FlopCounterMode`` on transformers models of ``tests/hf_reference.py``
(prefill with ``logits_to_keep=1`` as ``generate`` runs it, then one decode step with
``past_key_values``), the cache tensors transformers holds, the router choices it makes, per-rank
parameter shards cut from its weight tensors, enumeration of every routing of a tiny MoE, a
simulated ring all-reduce, sympy's solution of the compute-bound inequality, and figures printed by
kipply (2022) and How to Scale Your Model.
"""

from __future__ import annotations

import itertools
import math
import re
import warnings
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp

import llmmath
from llmmath import (
    allreduce_algorithms,
    allreduce_cost,
    allreduce_seconds,
    attention_flops_per_byte,
    decode_bytes,
    decode_flops,
    decode_flops_breakdown,
    decode_step_seconds,
    decode_step_times,
    decode_throughput,
    experts_touched,
    forward_weight_bytes,
    kv_bytes,
    max_decode_batch,
    param_count,
    prefill_flops,
    prefill_seconds,
    prefill_times,
    serving_memory_bytes,
    step_critical_batch,
    tp_allreduce_bytes,
    tp_decode_step_seconds,
    tp_shard,
    weight_critical_batch,
)
from llmmath.config import TransformerConfig, from_hf_config

hf_reference = pytest.importorskip("hf_reference")
torch = hf_reference.torch
CASES = hf_reference.CASES


def _run(d: dict, batch: int, context: int):
    """FLOPs of a prefill of ``context`` tokens (logits at the last position, as generate asks),
    FLOPs of the next decode step, the cache bytes after it, and the router choices of the step."""
    from torch.utils.flop_counter import FlopCounterMode

    torch.manual_seed(0)
    model = hf_reference.hf_model(d, device="cpu").eval()
    ids = torch.randint(2, d["vocab_size"], (batch, context))
    new = torch.randint(2, d["vocab_size"], (batch, 1))
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with FlopCounterMode(display=False) as pre:
            out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
        with FlopCounterMode(display=False) as step:
            out = model(input_ids=new, past_key_values=out.past_key_values, use_cache=True)
    cache = 0
    for layer in out.past_key_values.layers:
        cache += sum(t.numel() * t.element_size() for t in (layer.keys, layer.values))
    return pre.get_total_flops(), step.get_total_flops(), cache


# MHA, GQA, MQA, an MoE family, sliding windows (uniform and alternating) and MLA with transformers'
# re-expansion (the other families share these code paths; tests/test_families.py covers them all)
DECODE_CASES = ["llama-mha", "llama-gqa", "gemma-mqa", "mixtral-gqa",
                "mistral-mqa-window", "gemma2-local-global", "deepseek_v3-mla"]


@pytest.mark.parametrize("case", DECODE_CASES)
def test_prefill_decode_and_cache_equal_transformers(case):
    d = CASES[case]
    cfg = from_hf_config(d)
    b, n = 2, 9  # 9 > every sliding window of the cases
    pre, step, cache = _run(d, b, n)
    assert prefill_flops(cfg, b, n) == pre
    mla = "transformers" if cfg.kv_lora_rank else "absorbed"
    assert decode_flops(cfg, b, n, mla=mla) == step
    assert llmmath.kv_cache_bytes(cfg, b, n + 1, 4) == cache  # fp32 cache after the step


def test_prefill_with_every_logit_is_a_forward_pass():
    d = CASES["llama-gqa"]
    cfg = from_hf_config(d)
    assert prefill_flops(cfg, 2, 7, logits="all") == hf_reference.counted_flops(d, 2, 7, "forward")
    assert prefill_flops(cfg, 2, 7, logits="all") - prefill_flops(cfg, 2, 7) == 6 * 2 * 2 * 32 * 97


def test_decode_of_a_gpt_layer_is_two_flops_per_weight_plus_attention():
    cfg = llmmath.preset("gpt2")
    b, n, L, h, V = 3, 100, cfg.n_layers, cfg.hidden_size, cfg.vocab_size
    assert decode_flops(cfg, b, n) == b * (L * (24 * h * h + 4 * (n + 1) * h) + 2 * h * V)


def test_absorbed_mla_equals_the_expanded_attention_and_its_count():
    """Fold W_UK into the query and W_UV into the output: the same attention output, and the
    products FlopCounterMode counts are the per-layer attention of decode_flops_breakdown."""
    from torch.utils.flop_counter import FlopCounterMode

    d = CASES["deepseek_v3-mla"]
    cfg = from_hf_config(d)
    a, r, dr, dv = cfg.n_heads, cfg.kv_lora_rank, cfg.rope_head_dim, cfg.v_head_dim
    dn, n = cfg.head_dim - dr, 6
    g = torch.Generator().manual_seed(0)
    w = torch.randn(a * (dn + dv), r, generator=g, dtype=torch.float64)  # kv_b_proj.weight layout
    w_uk, w_uv = w.view(a, dn + dv, r).split([dn, dv], dim=1)  # [a, dn, r], [a, dv, r]
    latents, k_rope = torch.randn(n + 1, r, generator=g, dtype=torch.float64), torch.randn(n + 1, dr, generator=g,
                                                                                               dtype=torch.float64)
    q_nope, q_rope = torch.randn(a, dn, generator=g, dtype=torch.float64), torch.randn(a, dr, generator=g,
                                                                                        dtype=torch.float64)
    keys = torch.einsum("tr,hdr->htd", latents, w_uk)  # what transformers expands
    values = torch.einsum("tr,hdr->htd", latents, w_uv)
    scores = torch.einsum("hd,htd->ht", q_nope, keys) + q_rope @ k_rope.T
    expanded = torch.einsum("ht,htd->hd", scores.softmax(-1), values)
    with FlopCounterMode(display=False) as counter:
        q_latent = torch.bmm(q_nope[:, None], w_uk)[:, 0]  # [a, r]: absorb W_UK
        s_lat = q_latent @ latents.T + q_rope @ k_rope.T  # scores over r + d_r dims
        z = s_lat.softmax(-1) @ latents  # [a, r]: values in the latent space
        absorbed = torch.bmm(z[:, None], w_uv.transpose(1, 2))[:, 0]  # [a, dv]: apply W_UV
    torch.testing.assert_close(absorbed, expanded)
    bd = decode_flops_breakdown(cfg, 1, n, mla="absorbed")
    per_layer = (bd["attn_scores"] + bd["attn_values"]) // cfg.n_layers
    absorb = 2 * a * r * (dn + dv)  # the same as expanding the new token's own key and value
    assert counter.get_total_flops() == per_layer + absorb
    ref = decode_flops_breakdown(cfg, 1, n, mla="transformers")
    assert ref["k_proj"] - bd["k_proj"] == cfg.n_layers * 2 * n * r * a * dn


def _routings(E: int, k: int, tokens: int):
    return itertools.product(itertools.combinations(range(E), k), repeat=tokens)


def test_experts_touched_by_enumerating_every_routing():
    cfg = TransformerConfig(n_layers=1, hidden_size=8, n_heads=2, vocab_size=11, max_position=8, n_experts=5,
                            experts_per_token=2)
    for tokens in (1, 2, 3):
        counts = [len(set(itertools.chain(*routing))) for routing in _routings(5, 2, tokens)]
        assert experts_touched(cfg, tokens, "max") == max(counts)
        assert experts_touched(cfg, tokens, "min") == min(counts)
        assert experts_touched(cfg, tokens, "expected") == pytest.approx(float(Fraction(sum(counts), len(counts))))


def test_weight_bytes_read_bracket_the_experts_transformers_routes_to():
    """Run a decode step of the tiny Mixtral, read which experts its router picked, and count the
    parameters that step touches from the model's own tensors."""
    d = CASES["mixtral-gqa"]
    cfg = from_hf_config(d)
    torch.manual_seed(0)
    model = hf_reference.hf_model(d, device="cpu").eval()
    b = 1
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = model(input_ids=torch.randint(2, 97, (b, 1)), output_router_logits=True)
    k = model.config.num_experts_per_tok
    unread = 0
    for i, logits in enumerate(out.router_logits):
        touched = set(logits.topk(k, dim=-1).indices.flatten().tolist())
        experts = model.model.layers[i].mlp.experts
        per_expert = sum(p[0].numel() for p in experts.parameters())  # stacked [E, ...] tensors
        unread += (model.config.num_local_experts - len(touched)) * per_expert
    if not model.config.tie_word_embeddings:
        unread += (97 - b) * model.config.hidden_size  # embedding rows not looked up
    read = sum(p.numel() for p in model.parameters()) - unread
    assert forward_weight_bytes(cfg, b, 1, "fp32", experts="min") <= 4 * read <= forward_weight_bytes(cfg, b, 1, "fp32")
    assert forward_weight_bytes(cfg, b, 1, "fp32", experts="min") == 4 * read  # b = 1: exactly k experts
    assert forward_weight_bytes(cfg, 64, 1, "fp32") == 4 * (param_count(cfg) - (97 - 64) * 32)  # all experts


def test_weight_bytes_of_dense_models():
    cfg = llmmath.preset("llama-3-8b")  # untied: the input table is read only where tokens look it up
    V, h = cfg.vocab_size, cfg.hidden_size
    assert forward_weight_bytes(cfg, 4, 1) == 2 * (param_count(cfg) - (V - 4) * h)
    gpt = llmmath.preset("gpt2")  # tied (the LM head reads it all); 1,024 learned positions, 1 used
    assert forward_weight_bytes(gpt, 4, 1, "fp32") == 4 * (param_count(gpt) - 1023 * 768)
    assert forward_weight_bytes(gpt, 1, 1024, "int4") == math.ceil(param_count(gpt) / 2)


def test_kv_bytes_against_published_figures():
    # kipply (2022), 52B model (64 layers, d_model 8192): "= 2,097,152 bytes" per token, 16-bit
    k52 = TransformerConfig(n_layers=64, hidden_size=8192, n_heads=64, vocab_size=65536, position="rotary")
    assert kv_bytes(k52, 1, 1) == 2_097_152
    # How to Scale Your Model, part 7: LLaMA 2-13B, one 8192-token sequence in bf16, "= 6.7 GB"
    assert kv_bytes(llmmath.preset("llama2-13b"), 1, 8192) == 8192 * 40 * 128 * 40 * 2 * 2
    assert round(kv_bytes(llmmath.preset("llama2-13b"), 1, 8192) / 1e9, 1) == 6.7
    # part 8: LLaMA 3-70B in int8, "2 * 8 * 128 * 80 = 160kB" per token
    assert kv_bytes(llmmath.preset("llama-3-70b"), 1, 1, "int8") == 2 * 8 * 128 * 80 == 163_840
    assert kv_bytes(llmmath.preset("llama-3-70b"), 1, 1, "int4") == 81_920


def test_kipply_latency_bounds():
    # kipply: a 52B model's forward over up to 208 tokens, "12 * 2 * n_layers * d_model^2 / 1.5e12
    # ~= 69 milliseconds"; Gopher-sized 260B on 16 A100s at batch 1: "~= 22ms" (2P / (N * 1.5e12))
    assert round(12 * 2 * 64 * 8192**2 / 1.5e12 * 1e3) == 69
    assert round(2 * 260e9 / (16 * 1.5e12) * 1e3) == 22


def test_step_critical_batch_solves_the_inequality():
    """Composition: step_critical_batch solves the whole step's roofline inequality over
    decode_flops and decode_bytes (sympy here); the hand count of one case is
    tests/test_hand_counts.py::test_llama3_8b_serving_by_hand."""
    b = sp.symbols("b", positive=True)
    for name, gpu, n in [("llama-3-8b", "H100", 1), ("llama-3-8b", "A100", 64), ("gpt2", "TPU-v5e", 4),
                         ("qwen3-8b", "MI300X", 1), ("gpt2", "TPU-v5e", 32)]:
        cfg = llmmath.preset(name)
        spec = llmmath.GPUS[gpu]
        F1 = decode_flops(cfg, 1, n)  # linear in b
        C = decode_bytes(cfg, 2, n) - decode_bytes(cfg, 1, n)  # one more sequence: its cache (+ a row)
        W = decode_bytes(cfg, 1, n) - C
        P, B = spec.peak_flops["bf16_tensor"], spec.memory_bandwidth
        roots = sp.solve(sp.Eq(b * F1 / sp.Rational(P), (W + b * C) / sp.Rational(B)), b)
        if roots:
            assert step_critical_batch(cfg, n, gpu) == math.ceil(roots[0]), name
        else:  # no positive root: each sequence's cache takes longer to read than its FLOPs
            assert F1 * B < C * P and step_critical_batch(cfg, n, gpu) is None, name
        assert decode_flops(cfg, 7, n) == 7 * F1
    assert step_critical_batch(llmmath.preset("llama-3-8b"), 8192, "H100") is None


# Llama 3 8B by hand (tests/test_hand_counts.py): 8,030,261,248 parameters, V = 128,256 rows of
# h = 4096 in the untied input table, 7,504,658,432 weights in the products of a decode token
# (layers 6,979,321,856 + head 525,336,576), 32 layers of 32 query heads of d = 128 and 8 KV heads
_P, _V, _H, _MATMUL = 8_030_261_248, 128_256, 4096, 7_504_658_432
_PEAK, _BW = 989.4e12, 3.35e12  # H100 SXM: dense BF16, HBM3


def test_decode_step_is_two_kernels_by_hand():
    """Issue 27 item 3: at b = 476, n = 1024 the weight products (compute-bound) and the attention
    (memory-bound, 4 FLOPs per byte) are separate kernels: their rooflines add up to more than the
    single roofline of the whole step."""
    b, n = 476, 1024
    f_mm = b * 2 * _MATMUL
    weights = 2 * (_P - (_V - b) * _H)  # the b rows of the input table looked up, the rest not
    f_att = 32 * b * 4 * 32 * 128 * (n + 1)  # scores and values: 2 a d each, n + 1 keys, 32 layers
    kv = 32 * b * n * 2 * 8 * 128 * 2
    want = max(f_mm / _PEAK, weights / _BW) + max(f_att / _PEAK, kv / _BW)
    t = decode_step_times(llmmath.preset("llama-3-8b"), b, n, "H100")
    assert t["seconds"] == pytest.approx(want, rel=1e-12) and want == pytest.approx(26.29e-3, abs=1e-5)
    assert (t["matmul_compute"], t["kv_read"]) == (pytest.approx(f_mm / _PEAK), pytest.approx(kv / _BW))
    single = max((f_mm + f_att) / _PEAK, (weights + kv) / _BW)  # the old whole-step roofline
    assert single == pytest.approx(23.55e-3, abs=1e-5) and single < t["seconds"]
    assert decode_step_seconds(llmmath.preset("llama-3-8b"), b, n, "H100") == t["seconds"]


def test_weight_critical_batch_by_hand_and_independent_of_context():
    """Austin et al.'s critical batch: the weight products alone. b F / pi >= (2(P - V h) + 2 h b) / B
    (the step reads b rows of the input table) solved exactly; the whole-step quantity differs."""
    F = 2 * _MATMUL
    exact = Fraction(2 * (_P - _V * _H)) / (Fraction(F) * Fraction(_BW) / Fraction(_PEAK) - 2 * _H)
    cfg = llmmath.preset("llama-3-8b")
    assert weight_critical_batch(cfg, "H100") == math.ceil(exact) == 296
    assert step_critical_batch(cfg, 1, "H100") == 297 and step_critical_batch(cfg, 256, "H100") > 296
    # int8 weights (W8A16, the 16-bit peak) halve the bytes and so about halve the critical batch
    assert weight_critical_batch(cfg, "H100", dtype="int8") == math.ceil(
        Fraction(_P - _V * _H) / (Fraction(F) * Fraction(_BW) / Fraction(_PEAK) - _H))
    # a mixture of experts reads every expert but multiplies k: the ridge point times q / 2 times the
    # weights read over the weights multiplied (the untied input table is neither: V h out of both)
    for name, dtype, lo, hi in [("deepseek-v3", "fp8", 5300, 5500), ("qwen3-30b-a3b", "bf16", 2900, 3000)]:
        moe = llmmath.preset(name)
        ridge = llmmath.ridge_point("H100", "fp8_tensor" if dtype == "fp8" else "bf16_tensor")
        table = moe.vocab_size * moe.hidden_size
        ratio = (param_count(moe) - table) / (llmmath.active_param_count(moe) - table)
        got = weight_critical_batch(moe, "H100", dtype=dtype)
        assert lo < got < hi and got == pytest.approx(ridge * llmmath.dtype_bits(dtype) / 16 * ratio, rel=1e-3), name


def test_attention_flops_per_byte_gqa_and_absorbed_mla():
    """a / a_kv for grouped-query attention with a 16-bit cache; 2 a (2r + d_r) / ((r + d_r) q) for
    absorbed MLA: 128 x 1088 / 576 for DeepSeek-V3, between the H200's and the H100's ridge points."""
    assert attention_flops_per_byte(llmmath.preset("llama-3-8b")) == 32 / 8
    assert attention_flops_per_byte(llmmath.preset("llama-3-8b"), "fp8") == 2 * 32 / 8
    ds = llmmath.preset("deepseek-v3")
    want = Fraction(2 * 128 * (2 * 512 + 64), (512 + 64) * 2)
    assert attention_flops_per_byte(ds) == pytest.approx(float(want), rel=1e-15)
    assert llmmath.ridge_point("H200") < float(want) < llmmath.ridge_point("H100")
    assert attention_flops_per_byte(ds, "fp8") == pytest.approx(2 * float(want), rel=1e-15)


def test_prefill_bound_counts_causal_pairs():
    """Issue 27 item 1: the prefill bound times the causal pairs s(s+1)/2 a fused kernel computes;
    every pair would overstate the attention by 2s/(s+1)."""
    cfg = llmmath.preset("llama-3-8b")
    s = 4096
    t = prefill_times(cfg, 1, s, "H100")
    causal = 32 * 2 * 2 * 32 * 128 * s * (s + 1) // 2  # 32 layers, scores and values, a d each
    assert t["attention_compute"] * _PEAK == pytest.approx(causal, rel=1e-12)
    every = prefill_flops(cfg, 1, s)
    matmul = every - 32 * 4 * 32 * 128 * s * s
    assert t["matmul_compute"] * _PEAK == pytest.approx(matmul, rel=1e-12)
    kv = 32 * s * 2 * 8 * 128 * 2
    want = max(matmul / _PEAK, 2 * (_P - (_V - s) * _H) / _BW) + max(causal / _PEAK, kv / _BW)
    assert prefill_seconds(cfg, 1, s, "H100") == pytest.approx(want, rel=1e-12)
    assert every / (matmul + causal) > 1.05  # the old count's excess at 4K (x1.07 issue 27 quotes for the step)


def test_max_decode_batch_by_brute_force():
    """Composition: brute force over serving_memory_bytes against the memory the driver reports
    (hand-counted for Llama 3 8B in tests/test_hand_counts.py::test_llama3_8b_serving_by_hand)."""
    cfg = llmmath.preset("llama-3-8b")
    memory = 81_559 * 2**20  # nvidia-smi's total for an H100 SXM 80 GB
    for tp, reserve, ctx in [(1, 0, 8192), (1, 5 * 10**9, 2048), (2, 10**9, 8192)]:
        best = max_decode_batch(cfg, ctx, "H100", reserve_bytes=reserve, tp=tp)
        fits = [b for b in range(1, 4 * best + 10) if serving_memory_bytes(cfg, b, ctx, tp=tp) + reserve <= memory]
        assert best == max(fits)
    # the default reserve is what vLLM's default gpu_memory_utilization (0.9) leaves
    default = max_decode_batch(cfg, 8192, "H100")
    assert default == max_decode_batch(cfg, 8192, "H100", reserve_bytes=memory - math.floor(0.9 * memory))
    sliding = llmmath.preset("mistral-7b")  # a 4,096-token window: the cache stops growing
    assert max_decode_batch(sliding, 32000, "H100", reserve_bytes=0) == max_decode_batch(
        sliding, 4096, "H100", reserve_bytes=0)


# ---- tensor parallelism -----------------------------------------------------------------------

_COLUMN = re.compile(r"(q_proj|k_proj|v_proj|q_b_proj|kv_b_proj|gate_proj|up_proj|gate_up_proj)\.?(weight|bias)?$")
_ROW = re.compile(r"(o_proj|down_proj)(\.weight)?$")


def _megatron_shard_numel(model, tp: int) -> int:
    """Parameters of one rank, cut from the transformers model's tensors by Megatron's rules."""
    cfg = model.config
    d = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    a_kv = getattr(cfg, "num_key_value_heads", cfg.num_attention_heads)
    total = 0
    for name, p in model.named_parameters():
        shape = list(p.shape)
        if re.search(r"embed_tokens|lm_head", name):
            shape[0] = -(-shape[0] // tp)  # vocabulary-parallel rows
        elif re.search(r"(k_proj|v_proj)\.(weight|bias)$", name) and tp > a_kv:
            shape[0] = d  # one replicated KV head per rank
        elif _COLUMN.search(name):
            axis = 1 if name.endswith("gate_up_proj") else 0  # experts: [E, 2f, h]
            shape[axis] //= tp
        elif _ROW.search(name):
            shape[-1] //= tp  # [out, in] or experts [E, h, f]
        total += math.prod(shape)
    return total


@pytest.mark.parametrize("case, tp", [("llama-gqa", 2), ("llama-gqa", 4), ("mixtral-gqa", 2),
                                      ("deepseek_v3-mla", 4), ("qwen2-gqa", 4)])
def test_tp_shard_equals_megatron_slicing(case, tp):
    d = CASES[case]
    model = hf_reference.hf_model(d)  # meta device: shapes only
    assert param_count(tp_shard(from_hf_config(d), tp)) == _megatron_shard_numel(model, tp)


@pytest.mark.parametrize("name, tp", [("llama-3-70b", 8), ("mixtral-8x7b", 2), ("deepseek-v3", 8), ("gpt2", 4),
                                      ("qwen3-30b-a3b", 4)])
def test_tp_shard_agrees_with_the_training_layouts_count(name, tp):
    """llmmath.parallel counts a tensor-parallel GPU's parameters term by term (Megatron-LM's split,
    written independently for the parallelism chapter); tp_shard builds the shard as a model."""
    from llmmath.parallel import Layout, stage_param_counts

    cfg = llmmath.preset(name)
    assert param_count(tp_shard(cfg, tp)) == sum(stage_param_counts(cfg, Layout(tp=tp))[0].values())


def test_tp_flops_split_exactly_unless_heads_are_replicated():
    cfg = llmmath.preset("llama-3-8b")  # 32 query heads, 8 KV heads, V = 128,256 = 8 * 16,032
    for tp in (2, 4, 8):
        assert tp * decode_flops(tp_shard(cfg, tp), 4, 100) == decode_flops(cfg, 4, 100)
        assert tp * kv_bytes(tp_shard(cfg, tp), 4, 100) == kv_bytes(cfg, 4, 100)
    mqa = llmmath.preset("gemma-2b")  # one KV head: every rank keeps a copy of it
    tp, b = 4, 3
    extra = tp * decode_flops(tp_shard(mqa, tp), b, 50) - decode_flops(mqa, b, 50)
    assert extra == mqa.n_layers * (tp - 1) * 2 * b * mqa.hidden_size * 2 * mqa.head_dim  # K and V projections
    assert kv_bytes(tp_shard(mqa, tp), b, 50) == kv_bytes(mqa, b, 50)
    ds = llmmath.preset("deepseek-v3")  # the MLA latent cache is replicated on every rank
    assert kv_bytes(tp_shard(ds, 8), 1, 1000) == kv_bytes(ds, 1, 1000)


def _ring_allreduce(parts: list[np.ndarray]) -> tuple[list[np.ndarray], int, int]:
    """Reduce-scatter then all-gather around a ring: the results, the steps, and the bytes one
    rank sends."""
    t = len(parts)
    chunks = [np.array_split(p.copy(), t) for p in parts]
    steps = sent = 0
    for phase in ("reduce", "gather"):
        for s in range(t - 1):
            moves = []
            for rank in range(t):
                c = (rank - s + (0 if phase == "reduce" else 1)) % t
                moves.append(((rank + 1) % t, c, chunks[rank][c].copy()))
            for dst, c, data in moves:
                chunks[dst][c] = chunks[dst][c] + data if phase == "reduce" else data
            steps += 1
            sent += moves[0][2].nbytes
    return [np.concatenate(c) for c in chunks], steps, sent


def _one_shot(parts: list[np.ndarray]) -> tuple[list[np.ndarray], int, int]:
    """vLLM's cross_device_reduce_1stage: after one barrier every rank reads every peer's whole
    buffer and adds (its own is local)."""
    t = len(parts)
    received = sum(p.nbytes for p in parts[1:])  # rank 0 reads t - 1 peers
    return [sum(parts[(r + i) % t] for i in range(t)) for r in range(t)], 1, received


def _two_shot(parts: list[np.ndarray]) -> tuple[list[np.ndarray], int, int]:
    """cross_device_reduce_2stage: each rank reads its slice from every peer and reduces it
    (reduce-scatter), a barrier, then reads the other ranks' reduced slices (all-gather)."""
    t = len(parts)
    slices = [np.array_split(p, t) for p in parts]
    reduced = [sum(slices[peer][r] for peer in range(t)) for r in range(t)]
    received = sum(slices[peer][0].nbytes for peer in range(1, t))  # rank 0, stage 1
    received += sum(reduced[r].nbytes for r in range(1, t))  # stage 2
    return [np.concatenate(reduced) for _ in range(t)], 2, received


def _nvls(parts: list[np.ndarray]) -> tuple[list[np.ndarray], int, int]:
    """NVLink SHARP: every rank sends its slices into the switch (M bytes), the switch sums slice
    r and returns it to rank r (multimem.ld_reduce), rank r sends it back for the switch to
    multicast to every rank (multimem.st): rank 0 sends M + M/t."""
    t = len(parts)
    slices = [np.array_split(p, t) for p in parts]
    sent = parts[0].nbytes  # every slice of its buffer into the switch
    reduced = [sum(slices[peer][r] for peer in range(t)) for r in range(t)]  # in the switch
    sent += reduced[0].nbytes  # its reduced slice back into the switch for the multicast
    return [np.concatenate(reduced) for _ in range(t)], 2, sent


@pytest.mark.parametrize("algorithm, simulate", [("ring", _ring_allreduce), ("one-shot", _one_shot),
                                                  ("two-shot", _two_shot), ("nvls", _nvls)])
def test_allreduce_cost_matches_a_simulation(algorithm, simulate):
    rng = np.random.default_rng(0)
    t, m = 4, 64
    parts = [rng.standard_normal(m) for _ in range(t)]
    result, steps, sent = simulate(parts)
    for r in result:
        np.testing.assert_allclose(r, sum(parts))
    assert allreduce_cost(algorithm, t, parts[0].nbytes) == (steps, pytest.approx(sent))


def test_allreduce_algorithms_offered_and_timed():
    h100, alpha, beta = llmmath.GPUS["H100"], 3e-6, 450e9
    assert allreduce_algorithms("H100", 8) == ("ring", "tree", "one-shot", "two-shot", "nvls")
    assert allreduce_algorithms("A100", 8) == ("ring", "tree", "one-shot", "two-shot")  # no NVLink SHARP
    assert allreduce_algorithms("TPU-v5e", 8) == ("ring", "tree")  # a torus: no direct peer reads
    assert (h100.scale_up.latency, h100.scale_up.bandwidth) == (alpha, beta)
    M = 2 * 8192  # one token of Llama 3 70B in BF16
    assert allreduce_seconds(M, 8, "H100", "ring") == pytest.approx(14 * alpha + 14 / 8 * M / beta)
    assert allreduce_seconds(M, 8, "H100", "one-shot") == pytest.approx(alpha + 7 * M / beta)
    assert allreduce_seconds(M, 8, "H100", "nvls") == pytest.approx(2 * alpha + 9 / 8 * M / beta)
    big = 4096 * M  # a 4,096-token prefill: bandwidth decides, the switch's reduction wins
    times = {a: allreduce_seconds(big, 8, "H100", a) for a in allreduce_algorithms("H100", 8)}
    assert min(times, key=times.get) == "nvls"
    assert min((allreduce_seconds(M, 8, "H100", a), a) for a in times)[1] == "one-shot"


def test_tp_decode_bound_overlaps_the_cheapest_allreduce_by_hand():
    """Issue 27 item 2: Llama 3 70B on 8 H100s at b = 1: one shard's kernels (a 1/8 of the 80
    layers' weights, its one KV head) against 160 one-shot all-reduces of 16,384 bytes, overlapped;
    a ring in series would add 160 x 14 latencies."""
    cfg = llmmath.preset("llama-3-70b")
    t = decode_step_times(cfg, 1, 1024, "H100", tp=8)
    one_shot = 160 * (3e-6 + 7 * 16_384 / 450e9)
    assert t["allreduce"] == "one-shot" and t["communication"] == pytest.approx(one_shot)
    shard = tp_shard(cfg, 8)
    weights = llmmath.forward_weight_bytes(shard, 1, 1) / _BW
    assert t["weights_read"] == pytest.approx(weights) and t["seconds"] == t["kernels"] > one_shot
    ring = decode_step_times(cfg, 1, 1024, "H100", tp=8, allreduce="ring")
    assert ring["communication"] == pytest.approx(160 * (14 * 3e-6 + 14 / 8 * 16_384 / 450e9))
    assert ring["seconds"] == ring["communication"] > t["seconds"]  # even overlapped, 6.7 ms of latency
    assert tp_decode_step_seconds(cfg, 1, 1024, "H100", 8) == t["seconds"]
    assert tp_allreduce_bytes(cfg, 1) == 160 * 16_384
    assert tp_allreduce_bytes(llmmath.preset("gpt-j-6b"), 1) == 28 * 4096 * 2  # parallel block: 1 per layer
    pred = decode_step_times(cfg, 1, 1024, "H100", tp=8, calibration=llmmath.SERVING_CALIBRATION)
    assert pred["seconds"] == pytest.approx(pred["kernels"] + pred["communication"])  # in series


def test_tp_prefill_bound_includes_its_allreduce():
    """Issue 27 item 7: a 4,096-token prefill of Llama 3 70B over 8 H100s all-reduces 160 x 4096 x
    8192 x 2 bytes, about 40 % of the compute: NVLS, overlapped in the bound, in series in
    'sequential'."""
    cfg = llmmath.preset("llama-3-70b")
    t = prefill_times(cfg, 1, 4096, "H100", tp=8)
    M = 4096 * 8192 * 2
    assert t["allreduce"] == "nvls"
    assert t["communication"] == pytest.approx(160 * (2 * 3e-6 + 9 / 8 * M / 450e9))
    assert 0.3 < t["communication"] / t["kernels"] < 0.5
    assert t["seconds"] == t["kernels"] and t["sequential"] == pytest.approx(t["kernels"] + t["communication"])


def test_precision_follows_the_weights():
    """Issue 27 item 5: W8A8-FP8 at the FP8 peak where there is one; W8A16 and W4A16 at 16 bits."""
    assert llmmath.matmul_precision("fp8", "H100") == "fp8_tensor"
    assert llmmath.matmul_precision("fp8", "A100") == "bf16_tensor"  # no FP8 tensor cores: weight-only
    assert llmmath.matmul_precision("int4", "H100") == llmmath.matmul_precision("int8", "H100") == "bf16_tensor"
    assert llmmath.matmul_precision("fp16", "V100") == "fp16_tensor"
    cfg = llmmath.preset("llama-3-8b")
    t8 = prefill_times(cfg, 1, 4096, "H100", dtype="fp8")
    t16 = prefill_times(cfg, 1, 4096, "H100")
    assert t8["precision"] == "fp8_tensor"
    assert t8["matmul_compute"] == pytest.approx(t16["matmul_compute"] * 989.4 / 1978.9, rel=1e-12)


# published configs: DeepSeek-V3's (llmmath/hf_configs), TheBloke/Llama-2-7B-GPTQ's quantize block
_GPTQ = {"model_type": "llama", "torch_dtype": "float16",
         "quantization_config": {"bits": 4, "group_size": 128, "damp_percent": 0.01, "desc_act": False,
                                 "sym": True, "true_sequential": True, "quant_method": "gptq"}}


def test_weight_formats_read_from_quantization_config():
    import json
    from importlib import resources

    ds = json.loads(resources.files("llmmath").joinpath("hf_configs/deepseek-v3.json").read_text())
    fp8 = llmmath.weight_format_from_hf(ds)
    assert (fp8.dtype, fp8.rest, fp8.activations, fp8.scale_bits) == ("fp8", "bf16", "fp8", 32 / (128 * 128))
    gptq = llmmath.weight_format_from_hf(_GPTQ)
    assert (gptq.dtype, gptq.rest, gptq.activations, gptq.scale_bits) == ("int4", "fp16", "16-bit", 20 / 128)
    # Llama 2 7B by hand: 32 layers of 4 h^2 + 3 h f linear weights; embeddings, head and norms in FP16
    cfg = llmmath.preset("llama2-7b")
    h, f = 4096, 11008
    linear = 32 * (4 * h * h + 3 * h * f)
    rest = 2 * 32000 * h + 32 * 2 * h + h
    assert linear + rest == param_count(cfg)
    held = math.ceil(linear * (4 + 20 / 128) / 8) + 2 * rest
    assert serving_memory_bytes(cfg, 1, 1, dtype=gptq) - kv_bytes(cfg, 1, 1) == held
    read = math.ceil(linear * (4 + 20 / 128) / 8) + 2 * (rest - (32000 - 3) * h)  # 3 embedding rows
    assert forward_weight_bytes(cfg, 3, 1, gptq) == read
    assert llmmath.matmul_precision(gptq, "H100") == "bf16_tensor"
    assert llmmath.weight_format_from_hf({"model_type": "llama"}).dtype == "bf16"
    with pytest.raises(ValueError, match="quantization_config.quant_method must be one of .*got 'bitsandbytes'"):
        llmmath.weight_format_from_hf({"quantization_config": {"quant_method": "bitsandbytes"}})
    with pytest.raises(ValueError, match="quantization_config.bits must be 4 or 8"):
        llmmath.weight_format_from_hf({"quantization_config": {"quant_method": "awq", "bits": 3}})


def test_moe_bounds_give_both_ends():
    """Issue 27 item 6: the bound reads k experts per layer; 'max' every expert the batch can touch."""
    mx = llmmath.preset("mixtral-8x7b")
    low = decode_step_times(mx, 4, 1024, "H200")
    high = decode_step_times(mx, 4, 1024, "H200", experts="max")
    assert low["weights_read"] * _4_of_8(mx) == pytest.approx(high["weights_read"], rel=0.02)
    assert low["seconds"] < high["seconds"]


def _4_of_8(cfg) -> float:
    """Weights read with 4 tokens x 2 experts (8 of 8) over with 2 experts, from the parameter counts."""
    per_expert = (param_count(cfg) - llmmath.active_param_count(cfg)) / (cfg.n_layers * 6)
    base = llmmath.active_param_count(cfg) - (cfg.vocab_size - 4) * cfg.hidden_size
    return (base + cfg.n_layers * 6 * per_expert) / base


def test_generation_and_steady_state_sum_the_steps():
    """The closed forms over the decode steps (linear in the context: the mean of the two ends)
    against the brute-force sum of every step's bound."""
    cfg = llmmath.preset("llama-3-8b")
    b, p, o = 8, 512, 33
    steps = [decode_step_times(cfg, b, p + j, "H100") for j in range(o - 1)]
    brute = sum(s["seconds"] for s in steps)
    g = llmmath.generation_seconds(cfg, b, p, o, "H100")
    assert g["decode"] == pytest.approx(brute, rel=1e-9)  # memory-bound every step: no max to split
    assert g["prefill"] == prefill_seconds(cfg, b, p, "H100")
    for p, o in ((512, 33), (4096, 9)):  # decode-dominated, then prefill-dominated
        steps = [decode_step_times(cfg, b, p + j, "H100") for j in range(o - 1)]
        st = llmmath.steady_state(cfg, b, p, o, "H100")
        pre = prefill_times(cfg, 1, p, "H100")
        weights = sum(s["weights_read"] for s in steps) / b
        matmul = pre["matmul_compute"] + sum(s["matmul_compute"] for s in steps) / b
        kv = pre["kv_write"] + sum(s["kv_read"] for s in steps) / b
        attention = pre["attention_compute"] + sum(s["attention_compute"] for s in steps) / b
        want = max(matmul, weights) + max(kv, attention)
        assert st["request_seconds"] == pytest.approx(want, rel=1e-9)
        assert st["output_tokens_per_second"] == pytest.approx(o / want)
        assert st["seconds_per_output_token"] == pytest.approx(b * want / (o - 1))


# ---- published measurements: every bound below (or above) what was measured ----------------------

_ROWS = llmmath.serving_measurements()


def _kw(row):
    return dict(tp=row["tp"], dtype=row["weights"], kv_dtype=row["kv"])


def test_every_published_measurement_respects_its_bound():
    """TensorRT-LLM's tables (llmmath/data/serving_measurements.json, cited per row): no time bound
    above a measured time, no throughput bound below a measured throughput. Passing the calibrated
    prediction instead of the bound fails this test (it is 1.1-2.4x too fast on some rows)."""
    assert len(_ROWS) == 29 and all(r["source"] == "nvidia2023trtllmperf" for r in _ROWS)
    for row in _ROWS:
        bound = llmmath.measurement_bound(row)
        if row["metric"] == "ttft_seconds":
            assert bound <= row["value"], row["id"]
        else:
            assert bound >= row["value"], row["id"]


@pytest.mark.parametrize("quantity", ["prefill_seconds", "seconds_per_output_token", "tokens_per_second",
                                      "steady_state"])
def test_each_bound_has_a_tighter_measured_figure(quantity):
    """For each bound serve prints, a published measurement of the same work that it does not
    exceed (times) or undercut (throughputs). TensorRT-LLM's H100 FP8 Llama 2 7B rows: the first
    token of a 2,048-token prompt in 36 ms; batch 112 of 128 + 2,048 tokens at 6,818 output tokens/s
    (a token every 112 / 6,818 s per sequence, prefill included)."""
    cfg = llmmath.preset("llama2-7b")
    ttft = next(r for r in _ROWS if r["id"] == "h100-fp8-llama7b-ttft-2048")
    row = next(r for r in _ROWS if r["id"] == "h100-fp8-llama7b-b112-128-2048")
    b, p, o = row["batch"], row["input"], row["output"]
    per_token = b / row["value"]
    if quantity == "prefill_seconds":
        assert prefill_seconds(cfg, 1, ttft["input"], "H100", **_kw(ttft)) < ttft["value"]
    elif quantity == "seconds_per_output_token":
        assert decode_step_seconds(cfg, b, p, "H100", dtype="fp8", kv_dtype="fp8") < per_token
    elif quantity == "tokens_per_second":
        assert decode_throughput(cfg, b, p, "H100", dtype="fp8", kv_dtype="fp8") > row["value"]
    else:
        steady = llmmath.steady_state(cfg, b, p, o, "H100", dtype="fp8", kv_dtype="fp8")
        assert steady["tokens_per_second_per_gpu"] > row["value"]


def test_the_placeholder_calibration_is_the_fit_of_the_table():
    """SERVING_CALIBRATION holds the least-squares fit of the stored rows and the error it states."""
    fitted = llmmath.fit_serving_calibration(_ROWS)
    cal = llmmath.SERVING_CALIBRATION
    assert (cal.compute_efficiency, cal.memory_efficiency) == (fitted.compute_efficiency, fitted.memory_efficiency)
    assert cal.error.startswith(fitted.error.split(" on the rows")[0])
    loo = []
    for i, row in enumerate(_ROWS):
        others = llmmath.fit_serving_calibration(_ROWS[:i] + _ROWS[i + 1:])
        loo.append(abs(llmmath.measurement_prediction(row, others) / row["value"] - 1))
    assert f"leave one out: median {np.median(loo):.0%}, largest {max(loo):.0%}" in cal.error


# ---- bad input --------------------------------------------------------------------------------


def test_bad_input_names_the_argument():
    cfg, gpt = llmmath.preset("llama-3-8b"), llmmath.preset("gpt2")
    with pytest.raises(ValueError, match="gpu must be one of V100, .*TPU-v5p; got 'H20'"):
        decode_step_seconds(cfg, 1, 10, "H20")
    with pytest.raises(ValueError, match="dtype='bf16' multiplies at bf16_tensor, which the Tesla V100 SXM2 32 GB "
                                         r"lacks \(it has fp64, fp32, fp16_tensor\)"):
        decode_step_seconds(gpt, 1, 10, "V100")
    with pytest.raises(ValueError, match="precision must be one of fp64, fp32, fp16_tensor; got 'bf16_tensor'"):
        decode_step_seconds(gpt, 1, 10, "V100", dtype="fp16", precision="bf16_tensor")
    with pytest.raises(ValueError, match=r"context must be an integer <= 1023: the learned position table"):
        decode_flops(gpt, 1, 1024)
    with pytest.raises(ValueError, match=r"prompt must be an integer <= 1024"):
        prefill_flops(gpt, 1, 1025)
    assert decode_flops(gpt, 1, 1023) > 0 and kv_bytes(gpt, 1, 1024) > 0
    with pytest.raises(ValueError, match="batch must be an integer >= 1"):
        decode_flops(cfg, 0, 10)
    with pytest.raises(ValueError, match="context must be an integer >= 1"):
        decode_bytes(cfg, 1, -5)
    with pytest.raises(TypeError, match="batch must be an integer"):
        decode_flops(cfg, 2.0, 10)
    with pytest.raises(ValueError, match=r"batch=512 with context=8192 does not fit: .* lower batch"):
        decode_step_seconds(cfg, 512, 8192, "H100")
    with pytest.raises(ValueError, match="batch=1 with context=10 does not fit"):
        decode_step_seconds(llmmath.preset("llama-3-70b"), 1, 10, "H100")
    with pytest.raises(ValueError, match="reserve_bytes=90000000000 and the weights"):
        max_decode_batch(cfg, 10, "H100", reserve_bytes=90 * 10**9)
    with pytest.raises(ValueError, match="reserve_bytes must be an integer >= 0"):
        max_decode_batch(cfg, 10, "H100", reserve_bytes=-1)
    with pytest.raises(ValueError, match=r"allreduce='nvls' is not offered by the A100 SXM4 80 GB at tp=8: it "
                                         "offers ring, tree, one-shot, two-shot"):
        tp_decode_step_seconds(cfg, 1, 10, "A100", 8, allreduce="nvls")
    with pytest.raises(TypeError, match="calibration must be a ServingCalibration or None"):
        decode_step_seconds(cfg, 1, 10, "H100", calibration=0.5)
    with pytest.raises(ValueError, match="compute_efficiency must lie in"):
        llmmath.ServingCalibration("x", 1.5, 0.5, "", "")
    with pytest.raises(ValueError, match="tp=3 must divide n_heads=32, n_kv_heads=8"):
        tp_shard(cfg, 3)
    with pytest.raises(ValueError, match=r"tp must be an integer <= 8 \(the scale-up domain"):
        tp_decode_step_seconds(cfg, 1, 10, "H100", 16)
    with pytest.raises(ValueError, match="dtype must be one of fp32, fp16, bf16, fp8, int8, int4"):
        decode_bytes(cfg, 1, 10, "fp6")
    with pytest.raises(ValueError, match="kv_dtype must be one of"):
        kv_bytes(cfg, 1, 10, "e4m3")
    with pytest.raises(ValueError, match="logits must be one of last, all"):
        prefill_flops(cfg, 1, 10, logits="first")
    with pytest.raises(ValueError, match="mla must be one of absorbed, transformers"):
        decode_flops(cfg, 1, 10, mla="naive")
    with pytest.raises(ValueError, match="experts must be one of max, min, expected"):
        forward_weight_bytes(cfg, 1, 1, experts="all")
    with pytest.raises(ValueError, match="experts_touched needs a mixture-of-experts model"):
        experts_touched(cfg, 4)
    with pytest.raises(ValueError, match="allreduce must be one of ring, tree, one-shot, two-shot, nvls"):
        tp_decode_step_seconds(cfg, 1, 10, "H100", 2, allreduce="butterfly")
    with pytest.raises(ValueError, match="serving formulas are for decoder-only models"):
        decode_flops(llmmath.preset("bert-base"), 1, 10)
    with pytest.raises(ValueError, match="serving formulas are for decoder-only models.*encoder-decoder"):
        kv_bytes(llmmath.preset("t5-base"), 1, 10)
    with pytest.raises(TypeError, match="cfg must be a TransformerConfig"):
        decode_flops("llama-3-8b", 1, 10)
