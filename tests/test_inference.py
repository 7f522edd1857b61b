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
    critical_batch,
    decode_bytes,
    decode_flops,
    decode_flops_breakdown,
    decode_step_seconds,
    decode_throughput,
    experts_touched,
    forward_weight_bytes,
    kv_bytes,
    max_decode_batch,
    param_count,
    prefill_flops,
    prefill_seconds,
    serving_memory_bytes,
    tp_allreduce_bytes,
    tp_decode_step_seconds,
    tp_shard,
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


def test_critical_batch_solves_the_inequality():
    """Composition: critical_batch solves the roofline inequality over decode_flops and decode_bytes
    (sympy here); the hand count of one case is tests/test_hand_counts.py::test_llama3_8b_serving_by_hand."""
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
            assert critical_batch(cfg, n, gpu) == math.ceil(roots[0]), name
        else:  # no positive root: each sequence's cache takes longer to read than its FLOPs
            assert F1 * B < C * P and critical_batch(cfg, n, gpu) is None, name
        assert decode_flops(cfg, 7, n) == 7 * F1
    cfg = llmmath.preset("llama-3-8b")
    assert critical_batch(cfg, 8192, "H100") is None  # its cache alone is read slower than computed


def test_decode_step_bound_and_throughput():
    """Composition: the step bounds are the roofline of decode_flops/decode_bytes and prefill_flops
    (hand-counted in tests/test_hand_counts.py::test_llama3_8b_serving_by_hand)."""
    cfg = llmmath.preset("llama-3-8b")
    spec = llmmath.GPUS["H100"]
    t = decode_step_seconds(cfg, 1, 1024, "H100")
    assert t == pytest.approx(decode_bytes(cfg, 1, 1024) / spec.memory_bandwidth)  # memory-bound
    b_star = critical_batch(cfg, 16, "H100")
    big = decode_step_seconds(cfg, 2 * b_star, 16, "H100")
    assert big == pytest.approx(decode_flops(cfg, 2 * b_star, 16) / spec.peak_flops["bf16_tensor"])
    assert decode_throughput(cfg, 8, 1024, "H100") == pytest.approx(8 / decode_step_seconds(cfg, 8, 1024, "H100"))
    assert prefill_seconds(cfg, 1, 4096, "H100") == pytest.approx(
        prefill_flops(cfg, 1, 4096) / spec.peak_flops["bf16_tensor"])


def test_max_decode_batch_by_brute_force():
    """Composition: brute force over serving_memory_bytes (hand-counted for Llama 3 8B in
    tests/test_hand_counts.py::test_llama3_8b_serving_by_hand)."""
    cfg = llmmath.preset("llama-3-8b")
    for tp, reserve, ctx in [(1, 0, 8192), (1, 5 * 10**9, 2048), (2, 10**9, 8192)]:
        best = max_decode_batch(cfg, ctx, "H100", reserve_bytes=reserve, tp=tp)
        fits = [b for b in range(1, 4 * best + 10)
                if serving_memory_bytes(cfg, b, ctx, tp=tp) + reserve <= llmmath.GPUS["H100"].memory_bytes]
        assert best == max(fits)
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


def test_ring_allreduce_time_matches_a_simulated_ring():
    rng = np.random.default_rng(0)
    t, m = 4, 64
    parts = [rng.standard_normal(m) for _ in range(t)]
    result, steps, sent = _ring_allreduce(parts)
    for r in result:
        np.testing.assert_allclose(r, sum(parts))
    M = parts[0].nbytes
    assert steps == 2 * (t - 1) and sent == 2 * (t - 1) * M // t
    cfg = llmmath.preset("llama-3-8b")
    spec = llmmath.GPUS["H100"]
    alpha, beta = spec.scale_up.latency, spec.scale_up.bandwidth
    b, n = 16, 512
    compute = decode_step_seconds(tp_shard(cfg, t), b, n, "H100")
    count = 2 * cfg.n_layers
    message = b * cfg.hidden_size * 2
    assert tp_allreduce_bytes(cfg, b) == count * message
    ring = count * (2 * (t - 1) * alpha + 2 * (t - 1) * message / t / beta)
    assert tp_decode_step_seconds(cfg, b, n, "H100", t) == pytest.approx(compute + ring)
    one_shot = count * (alpha + (t - 1) * message / beta)
    assert tp_decode_step_seconds(cfg, b, n, "H100", t, allreduce="one-shot") == pytest.approx(compute + one_shot)
    tree = count * (2 * math.ceil(math.log2(t)) * alpha + 2 * message / beta)  # NCCL's double binary tree
    assert tp_decode_step_seconds(cfg, b, n, "H100", t, allreduce="tree") == pytest.approx(compute + tree)
    assert tp_decode_step_seconds(cfg, b, n, "H100", t, overlap=True) == pytest.approx(max(compute, ring))
    assert tp_decode_step_seconds(cfg, b, n, "H100", 1) == decode_step_seconds(cfg, b, n, "H100")
    assert tp_allreduce_bytes(llmmath.preset("gpt-j-6b"), 1) == 28 * 4096 * 2  # parallel block: 1 per layer


# ---- bad input --------------------------------------------------------------------------------


def test_bad_input_names_the_argument():
    cfg, gpt = llmmath.preset("llama-3-8b"), llmmath.preset("gpt2")
    with pytest.raises(ValueError, match="gpu must be one of V100, .*TPU-v5p; got 'H20'"):
        decode_step_seconds(cfg, 1, 10, "H20")
    with pytest.raises(ValueError, match="precision must be one of fp64, fp32, fp16_tensor; got 'bf16_tensor'"):
        decode_step_seconds(gpt, 1, 10, "V100")
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
    with pytest.raises(TypeError, match="got unexpected|reserve_bytes"):
        max_decode_batch(cfg, 10, "H100")
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
    with pytest.raises(ValueError, match="allreduce must be one of ring, tree, one-shot"):
        tp_decode_step_seconds(cfg, 1, 10, "H100", 2, allreduce="butterfly")
    with pytest.raises(ValueError, match="serving formulas are for decoder-only models"):
        decode_flops(llmmath.preset("bert-base"), 1, 10)
    with pytest.raises(ValueError, match="serving formulas are for decoder-only models.*encoder-decoder"):
        kv_bytes(llmmath.preset("t5-base"), 1, 10)
    with pytest.raises(TypeError, match="cfg must be a TransformerConfig"):
        decode_flops("llama-3-8b", 1, 10)
