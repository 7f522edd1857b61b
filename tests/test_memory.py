"""Tests of llmmath.memory and llmmath.units.

Expected values come from published numbers (ZeRO, Megatron-LM, Korthikanti et al.), sympy
expressions of the papers' formulas, brute force, and PyTorch/transformers measurements.
"""

from __future__ import annotations

import pytest
import sympy as sp

from llmmath.config import TransformerConfig
from llmmath.memory import (
    ACTIVATION_TERMS,
    HF_ACTIVATION_SAVED_TENSORS,
    TRAINING_STATE_KEYS,
    activation_bytes,
    hf_layer_saved_bytes,
    kv_cache_bytes,
    largest_batch,
    recompute_flops,
    training_state_bytes,
    weight_bytes,
)
from llmmath.presets import PRESETS
from llmmath.units import GB, GiB, bytes_for, format_bytes, to_gb, to_gib


def _gpt(h=64, a=4, L=2, ff=None, act="gelu"):
    return TransformerConfig(n_layers=L, hidden_size=h, n_heads=a, vocab_size=100, ffn_size=ff,
                             activation=act, max_position=64)


def _llama(h=32, a=4, kv=2, ff=48, act="silu", hd=None, L=1, bias=False):
    return TransformerConfig(n_layers=L, hidden_size=h, n_heads=a, n_kv_heads=kv, head_dim=hd, vocab_size=50,
                             ffn_size=ff, ffn_kind="gated", norm="rmsnorm", position="rotary", activation=act,
                             qkv_bias=bias, out_bias=bias, mlp_bias=bias)


# ------------------------------------------------------------------------------------ units
def test_units_gb_vs_gib():
    # seed 002's 7B example: 20 * 7e9 bytes is 140 GB but 130.4 GiB (it divides by 1024^3 and says GB)
    assert to_gb(20 * 7 * 10**9) == 140.0
    assert to_gib(20 * 7 * 10**9) == pytest.approx(140e9 / 1073741824)
    assert format_bytes(20 * 7 * 10**9, "GiB") == "130.4 GiB"
    assert format_bytes(80 * GB, "GB", 0) == "80 GB"
    assert GiB == 1073741824 and GB == 1_000_000_000


def test_bytes_for_int4_rounds_up():
    assert bytes_for(7, "int4") == 4 and bytes_for(8, "int4") == 4 and bytes_for(3, "fp32") == 12


# ------------------------------------------------------------------------------------ weights
def test_weight_bytes_gpt2_small():
    # GPT-2 small has 124,439,808 parameters (tied embeddings), the number transformers reports
    n = 124_439_808
    assert weight_bytes(PRESETS["gpt2"], "fp32") == 4 * n
    assert weight_bytes(n, "bf16") == 2 * n
    assert weight_bytes(n, "int8") == n and weight_bytes(n, "int4") == n // 2


def test_weight_bytes_7b_fp16_is_14gb():
    assert weight_bytes(7 * 10**9, "fp16") == 14 * GB  # seed 002, inference


# ------------------------------------------------------------------------------------ training state
def test_zero_paper_figure1():
    # Rajbhandari et al. (2020), Figure 1: Psi = 7.5B, K = 12, N_d = 64 prints 120GB, 31.4GB, 16.6GB
    # and 1.9GB: the exact values agree at the printed digits
    P = 7_500_000_000
    printed = {0: "120", 1: "31.4", 2: "16.6", 3: "1.9"}
    for stage, text in printed.items():
        got = training_state_bytes(P, "mixed", "adam", zero_stage=stage, n_gpus=64)["total"] / GB
        decimals = len(text.partition(".")[2])
        assert f"{got:.{decimals}f}" == text


@pytest.mark.parametrize(
    ("precision", "full", "kept", "split"),
    # Megatron-LM README, distributed optimizer: fp16 20 = 4 + 16/d; bf16+fp32 grads 18 = 6 + 12/d;
    # fp32 16 = 8 + 8/d (bytes per parameter, d data-parallel ranks)
    [("mixed-fp32-grads", 20, 4, 16), ("mixed-fp32-main-grads", 18, 6, 12), ("fp32", 16, 8, 8)],
)
def test_megatron_distributed_optimizer_table(precision, full, kept, split):
    P, d = 1000, 8
    assert training_state_bytes(P, precision, "adam")["total"] == full * P
    assert training_state_bytes(P, precision, "adam", zero_stage=1, n_gpus=d)["total"] == kept * P + split * P // d


def test_seed_totals():
    # seed 002: 20 Phi; seed 001 without its 2P activation guess: 16P; its fp32 24P double counts
    assert training_state_bytes(1, "mixed-fp32-grads")["total"] == 20
    assert training_state_bytes(1, "mixed")["total"] == 16
    assert training_state_bytes(1, "fp32")["total"] == 16  # no separate master copy in fp32


def test_training_state_keys_and_sum():
    out = training_state_bytes(10**6, "mixed", "momentum", zero_stage=2, n_gpus=3)
    assert tuple(out) == TRAINING_STATE_KEYS
    assert out["total"] == sum(v for k, v in out.items() if k != "total")
    shard = -(-10**6 // 3)
    assert out == {"parameters": 2 * 10**6, "gradients": 2 * shard, "master_weights": 4 * shard,
                   "master_gradients": 0, "optimizer_states": 4 * shard, "total": 2 * 10**6 + 10 * shard}


def test_optimizer_state_bytes_match_torch_optim():
    torch = pytest.importorskip("torch")
    makers = {
        "sgd": lambda p: torch.optim.SGD(p, lr=0.1),
        "momentum": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
        "rmsprop": lambda p: torch.optim.RMSprop(p, lr=0.1),
        "adam": lambda p: torch.optim.Adam(p, lr=0.1),
        "adamw": lambda p: torch.optim.AdamW(p, lr=0.1),
    }
    for name, make in makers.items():
        layer = torch.nn.Linear(7, 5)
        opt = make(layer.parameters())
        layer(torch.ones(2, 7)).sum().backward()
        opt.step()
        n = sum(p.numel() for p in layer.parameters())
        state = sum(t.numel() * t.element_size() for s in opt.state.values() for k, t in s.items()
                    if torch.is_tensor(t) and k != "step")
        got = training_state_bytes(n, "fp32", name)
        assert got["optimizer_states"] == state, name


# ------------------------------------------------------------------------------------ activations
s_, b_, h_, a_, t_ = sp.symbols("s b h a t", positive=True, integer=True)


def _paper(expr, **vals):
    return int(expr.subs({s_: vals["s"], b_: vals["b"], h_: vals["h"], a_: vals["a"], t_: vals.get("t", 1)}))


@pytest.mark.parametrize(("s", "b", "h", "a"), [(16, 2, 64, 4), (128, 3, 96, 8), (2048, 1, 12288, 96)])
def test_korthikanti_table2(s, b, h, a):
    # Korthikanti et al. (2023), eq. (1) and Table 2, per layer, 2-byte values and 1-byte masks
    cfg = _gpt(h=h, a=a)
    v = dict(s=s, b=b, h=h, a=a)
    sbh = s_ * b_ * h_
    assert activation_bytes(cfg, b, s)["per_layer"] == _paper(sbh * (34 + 5 * a_ * s_ / h_), **v)
    assert activation_bytes(cfg, b, s, recompute="selective")["per_layer"] == _paper(34 * sbh, **v)
    # FlashAttention-2 keeps O (the projection's input) and one FP32 log-sum-exp per query row and head
    lse = 4 * a_ * s_ * b_
    assert activation_bytes(cfg, b, s, flash_attention=True)["per_layer"] == _paper(34 * sbh + lse, **v)
    assert activation_bytes(cfg, b, s, recompute="full")["per_layer"] == _paper(2 * sbh, **v)
    for t in (2, 4):
        v["t"] = t
        tp = activation_bytes(cfg, b, s, tensor_parallel=t)["per_layer"]
        assert tp == _paper(sbh * (10 + 24 / t_ + 5 * a_ * s_ / (h_ * t_)), **v)
        sp_ = activation_bytes(cfg, b, s, tensor_parallel=t, sequence_parallel=True)["per_layer"]
        assert sp_ == _paper(sbh * (34 / t_ + 5 * a_ * s_ / (h_ * t_)), **v)
        sel = activation_bytes(cfg, b, s, tensor_parallel=t, recompute="selective")["per_layer"]
        assert sel == _paper(sbh * (10 + 24 / t_), **v)
        both = activation_bytes(cfg, b, s, tensor_parallel=t, sequence_parallel=True, recompute="selective")
        assert both["per_layer"] == _paper(34 * sbh / t_, **v)
        fl = activation_bytes(cfg, b, s, tensor_parallel=t, sequence_parallel=True, flash_attention=True)
        assert fl["per_layer"] == _paper((34 * sbh + lse) / t_, **v)


def test_activation_total_is_layers_times_per_layer_and_terms_sum():
    """Composition: the returned totals are sums of the terms (the terms themselves are checked
    against Korthikanti et al. and against what PyTorch saves, below)."""
    cfg = _gpt(L=5)
    out = activation_bytes(cfg, 2, 16)
    assert tuple(out["terms"]) == ACTIVATION_TERMS
    assert out["per_layer"] == sum(out["terms"].values())
    assert out["total"] == 5 * out["per_layer"]


def test_activation_no_dropout_removes_masks():
    cfg = _gpt(h=64, a=4)
    s, b, h, a = 16, 2, 64, 4
    assert activation_bytes(cfg, b, s, dropout=False)["per_layer"] == 32 * s * b * h + 2 * a * s * s * b


MEASURE_CASES = [  # (b, s, h, a, d_ff, activation, dtype, dropout, flash)
    (2, 8, 16, 4, 64, "gelu", "fp32", 0.1, False),
    (2, 8, 16, 4, 64, "gelu", "bf16", 0.1, False),
    (1, 5, 24, 3, 40, "gelu_new", "fp32", 0.1, False),
    (3, 7, 32, 8, 128, "gelu_new", "bf16", 0.0, False),
    (2, 6, 16, 2, 48, "relu", "fp32", 0.2, False),
    (2, 4, 16, 4, 64, "quick_gelu", "bf16", 0.1, False),
    (1, 9, 12, 3, 20, "gelu_fast", "fp32", 0.1, False),
    (2, 8, 16, 4, 64, "gelu", "fp32", 0.0, True),
    (1, 7, 24, 3, 40, "gelu_new", "bf16", 0.0, True),
]


@pytest.mark.parametrize(("b", "s", "h", "a", "ff", "act", "dtype", "p", "flash"), MEASURE_CASES)
def test_hf_gpt2_formula_is_exact(b, s, h, a, ff, act, dtype, p, flash):
    pytest.importorskip("transformers")
    cfg = _gpt(h=h, a=a, ff=ff, act=act, L=1)
    measured = hf_layer_saved_bytes(cfg, b, s, dtype, dropout=p, flash_attention=flash)
    B = 4 if dtype == "fp32" else 2
    formula = activation_bytes(cfg, b, s, bytes_per_value=B, bytes_per_mask=B, bytes_per_norm_stat=B,
                               dropout=p > 0, flash_attention=flash, implementation="hf-gpt2")
    assert measured["total"] == formula["per_layer"]
    assert sum(row[-1] for row in measured["tensors"]) == measured["total"]


LLAMA_CASES = [  # (b, s, h, a, a_kv, head_dim, d_ff, activation, dtype, dropout, flash)
    (2, 8, 32, 4, 4, None, 48, "silu", "fp32", 0.0, False),  # MHA
    (2, 8, 32, 4, 4, None, 48, "silu", "bf16", 0.0, False),
    (2, 7, 32, 4, 2, None, 48, "silu", "fp32", 0.0, False),  # GQA: K, V repeated to 4 heads
    (1, 7, 32, 4, 2, None, 40, "silu", "bf16", 0.0, False),
    (1, 5, 32, 4, 1, None, 48, "silu", "fp32", 0.0, False),  # MQA at b = 1: broadcast views, no copy
    (2, 5, 32, 4, 1, None, 48, "silu", "bf16", 0.0, False),  # MQA at b = 2: copies
    (2, 6, 24, 6, 3, 8, 36, "gelu_new", "fp32", 0.1, False),  # head_dim override, attention dropout
    (2, 6, 32, 4, 2, None, 48, "relu", "bf16", 0.1, False),
    (2, 8, 32, 4, 2, None, 48, "silu", "fp32", 0.0, True),  # SDPA's fused kernel, GQA
    (2, 8, 32, 4, 2, None, 48, "silu", "bf16", 0.0, True),
    (1, 9, 24, 6, 1, 8, 40, "gelu", "bf16", 0.0, True),
    # d_q = a d_head != h in BF16 eager mode: K, V repeated to d_q (issue 31); wider and narrower
    (2, 6, 24, 6, 3, 8, 36, "silu", "bf16", 0.0, False),  # d_q = 48 > h, GQA
    (2, 7, 48, 4, 2, 8, 64, "silu", "bf16", 0.0, False),  # d_q = 32 < h, GQA
    (1, 5, 24, 6, 1, 8, 36, "silu", "bf16", 0.0, False),  # d_q > h, MQA at b = 1: views
    (2, 5, 48, 4, 1, 8, 64, "silu", "bf16", 0.0, False),  # d_q < h, MQA at b = 2: copies
    (2, 6, 24, 6, 3, 8, 36, "silu", "bf16", 0.1, False),  # d_q > h, attention dropout
    (2, 8, 48, 4, 2, 8, 64, "silu", "fp32", 0.0, True),  # d_q < h, fused kernel
]


@pytest.mark.parametrize(("b", "s", "h", "a", "kv", "hd", "ff", "act", "dtype", "p", "flash"), LLAMA_CASES)
def test_hf_llama_formula_is_exact(b, s, h, a, kv, hd, ff, act, dtype, p, flash):
    pytest.importorskip("transformers")
    cfg = _llama(h=h, a=a, kv=kv, hd=hd, ff=ff, act=act, bias=p > 0)
    measured = hf_layer_saved_bytes(cfg, b, s, dtype, implementation="hf-llama", dropout=p, flash_attention=flash)
    B = 4 if dtype == "fp32" else 2
    formula = activation_bytes(cfg, b, s, bytes_per_value=B, bytes_per_mask=B, dropout=p > 0,
                               flash_attention=flash, implementation="hf-llama")
    assert measured["total"] == formula["per_layer"]
    assert sum(row[-1] for row in measured["tensors"]) == measured["total"]


def test_fused_attention_keeps_output_and_logsumexp_not_scores():
    """SDPA's CPU flash kernel saves Q, K (a_kv heads), V, its output and an FP32 log-sum-exp of
    shape (b, a, s): no tensor of s x s scores, no dropout seed."""
    pytest.importorskip("transformers")
    b, s, a, kv, d = 2, 16, 4, 2, 8
    rows = hf_layer_saved_bytes(_llama(h=a * d, a=a, kv=kv), b, s, "bf16", implementation="hf-llama",
                                flash_attention=True)["tensors"]
    kernel = {attr: (shape, dtype) for node, attr, shape, dtype, _ in rows if "FlashAttention" in node}
    assert kernel == {"query": ((b, a, s, d), "bfloat16"), "key": ((b, kv, s, d), "bfloat16"),
                      "value": ((b, kv, s, d), "bfloat16"), "output": ((b, a, s, d), "bfloat16"),
                      "logsumexp": ((b, a, s), "float32")}
    assert all(shape[-2:] != (s, s) for _, _, shape, _, _ in rows)


def test_hf_llama_sympy_closed_form():
    # summed by hand from the layer's code: per layer, B-byte model dtype, MHA, no dropout, eager
    s, b, h, a, f = 16, 2, 32, 4, 48
    for B in (2, 4):
        cfg = _llama(h=h, a=a, kv=a, ff=f)
        got = activation_bytes(cfg, b, s, bytes_per_value=B, dropout=False, implementation="hf-llama")["per_layer"]
        norms = 2 * (4 * s * b * h + 4 * s * b + B * s * b * h)
        attn = B * s * b * h * (1 + 3 + 1) + 4 * a * s * s * b + (B * a * s * s * b if B == 2 else 0)
        mlp = B * s * b * h + 4 * B * s * b * f
        assert got == norms + attn + mlp


def test_hf_gpt2_activation_table_covers_config_activations():
    from llmmath.config import ACTIVATIONS

    assert set(HF_ACTIVATION_SAVED_TENSORS) == set(ACTIVATIONS)


def test_gqa_changes_k_and_v_only():
    mha = PRESETS["llama2-70b"].replace(n_kv_heads=64)
    gqa = PRESETS["llama2-70b"]
    t_mha, t_gqa = activation_bytes(mha, 1, 128)["terms"], activation_bytes(gqa, 1, 128)["terms"]
    assert t_mha["k"] == 8 * t_gqa["k"] and t_mha["v"] == 8 * t_gqa["v"] and t_mha["q"] == t_gqa["q"]


# ------------------------------------------------------------------------------------ recomputation FLOPs
def test_fused_recompute_equals_torch_sdpa_formulas():
    """PyTorch's registered SDPA FLOP formulas: the backward costs the forward's two products
    twice plus one more Q K^T, the recomputed scores."""
    pytest.importorskip("torch")
    from torch.utils.flop_counter import sdpa_backward_flop_count, sdpa_flop_count

    for cfg, b, s in ((PRESETS["gpt3-175b"], 1, 2048), (PRESETS["llama2-70b"], 2, 4096), (_llama(L=3), 2, 9)):
        q = (b, cfg.n_heads, s, cfg.head_dim)
        kv = (b, cfg.n_heads, s, cfg.head_dim)  # the kernel's formulas see K, V expanded to a heads
        extra = sdpa_backward_flop_count(q, q, kv, kv) - 2 * sdpa_flop_count(q, kv, kv)
        assert recompute_flops(cfg, b, s, recompute="none", flash_attention=True) == cfg.n_layers * extra


def _core_attention_flops(b, a, s, d, checkpointed, early_stop):
    import torch
    from torch.utils.checkpoint import checkpoint, set_checkpoint_early_stop
    from torch.utils.flop_counter import FlopCounterMode

    def core(q, k, v):
        return torch.softmax(q @ k.transpose(-1, -2) / d**0.5, dim=-1) @ v

    q, k, v = (torch.randn(b, a, s, d, requires_grad=True) for _ in range(3))
    with FlopCounterMode(display=False) as counter, set_checkpoint_early_stop(early_stop):
        out = checkpoint(core, q, k, v, use_reentrant=False) if checkpointed else core(q, k, v)
        out.sum().backward()
    return counter.get_total_flops()


def test_selective_recompute_equals_checkpointed_core_attention():
    # Megatron-LM's selective recomputation re-runs its whole attention core (QK^T, softmax, dropout,
    # attention over V): a checkpoint of the core without PyTorch's early stop
    pytest.importorskip("torch")
    cfg = _gpt(h=32, a=4, L=1)
    b, s, d = 2, 12, cfg.head_dim
    plain = _core_attention_flops(b, cfg.n_heads, s, d, False, True)
    full_rerun = _core_attention_flops(b, cfg.n_heads, s, d, True, False)
    early = _core_attention_flops(b, cfg.n_heads, s, d, True, True)
    assert full_rerun - plain == recompute_flops(cfg, b, s, recompute="selective")
    # PyTorch's default early stop re-runs only what the backward needs: QK^T, as a fused kernel does
    assert early - plain == recompute_flops(cfg, b, s, recompute="none", flash_attention=True)


def test_full_recompute_equals_gradient_checkpointing():
    hf_reference = pytest.importorskip("hf_reference")
    from llmmath.config import from_hf_config

    d = hf_reference.CASES["llama-gqa"]
    cfg = from_hf_config(d)
    measured = hf_reference.counted_flops(d, 2, 5, "recompute") - hf_reference.counted_flops(d, 2, 5, "train")
    assert recompute_flops(cfg, 2, 5, recompute="full") == measured


def test_recompute_flops_modes():
    cfg = PRESETS["gpt3-175b"]
    b, s, L, h = 1, 2048, cfg.n_layers, cfg.hidden_size
    scores = L * 2 * b * s * s * h  # QK^T over all heads, d_q = h
    assert recompute_flops(cfg, b, s, recompute="none") == 0
    assert recompute_flops(cfg, b, s, recompute="none", flash_attention=True) == scores
    assert recompute_flops(cfg, b, s) == 2 * scores
    assert recompute_flops(cfg, b, s, flash_attention=True) == scores
    layer_fwd = L * (24 * b * s * h * h + 4 * b * s * s * h)  # Megatron-LM's layer forward
    assert recompute_flops(cfg, b, s, recompute="full") == layer_fwd
    assert recompute_flops(cfg, b, s, recompute="full", flash_attention=True) == layer_fwd + scores


# ------------------------------------------------------------------------------------ KV cache
def test_kv_cache_matches_transformers_cache():
    torch = pytest.importorskip("torch")
    from transformers import LlamaConfig, LlamaForCausalLM

    for kv in (4, 2, 1):
        hf = LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=3, num_attention_heads=4,
                         num_key_value_heads=kv, vocab_size=50, max_position_embeddings=64)
        model = LlamaForCausalLM(hf).eval()
        with torch.no_grad():
            out = model(torch.zeros(2, 11, dtype=torch.long), use_cache=True)
        measured = sum(layer.keys.numel() * layer.keys.element_size() + layer.values.numel()
                       * layer.values.element_size() for layer in out.past_key_values.layers)
        cfg = TransformerConfig(n_layers=3, hidden_size=32, n_heads=4, n_kv_heads=kv, vocab_size=50,
                                ffn_size=64, ffn_kind="gated", norm="rmsnorm", position="rotary")
        assert kv_cache_bytes(cfg, 2, 11, bytes_per_value=4) == measured


def test_kv_cache_llama2_70b_published_shape():
    # 80 layers, 8 KV heads of 128: 2 * 80 * 8 * 128 * 2 bytes = 327,680 bytes per token in 16 bit
    assert kv_cache_bytes(PRESETS["llama2-70b"], 1, 1) == 327_680


# ------------------------------------------------------------------------------------ largest batch
def test_largest_batch_brute_force():
    """Composition: largest_batch is the brute-force search over training_state_bytes and
    activation_bytes (each checked independently above)."""
    cfg = PRESETS["gpt2"]
    cap = 12 * GB
    state = training_state_bytes(cfg)["total"]
    best = 0
    for b in range(1, 200):
        if state + activation_bytes(cfg, b, 1024)["total"] <= cap:
            best = b
    assert largest_batch(cfg, 1024, cap) == best > 0
    assert largest_batch(cfg, 1024, 10**6) == 0


# ------------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: weight_bytes(10, "fp64"), "fp32, fp16, bf16, fp8, int8, int4"),
        (lambda: training_state_bytes(10, "fp16"), "fp32, mixed, mixed-fp32-grads"),
        (lambda: training_state_bytes(10, optimizer="lion"), "sgd, momentum, rmsprop, adam, adamw"),
        (lambda: training_state_bytes(10, zero_stage=4), "zero_stage"),
        (lambda: activation_bytes(_gpt(), 1, 8, recompute="partial"), "none, selective, full"),
        (lambda: activation_bytes(_gpt(), 1, 8, implementation="paper"), "korthikanti, hf-gpt2, hf-llama"),
        (lambda: activation_bytes(_gpt(), 1, 8, implementation="hf-llama"), "non-Llama layer"),
        (lambda: activation_bytes(_llama(), 1, 8, implementation="hf-gpt2"), "non-GPT-2 block"),
        (lambda: activation_bytes(_llama(), 1, 8, implementation="hf-llama", flash_attention=True),
         "with dropout"),
        (lambda: activation_bytes(_llama(), 1, 8, implementation="hf-llama", dropout=False,
                                  bytes_per_norm_stat=2), "bytes_per_norm_stat"),
        (lambda: activation_bytes(PRESETS["deepseek-v2-lite"], 1, 8, implementation="hf-llama", dropout=False),
         "latent attention"),
        (lambda: recompute_flops(_gpt(), 1, 8, recompute="partial"), "none, selective, full"),
        (lambda: recompute_flops(_gpt(), 1, 0), "seq"),
        (lambda: hf_layer_saved_bytes(_gpt(), 1, 8, implementation="korthikanti"), "hf-gpt2, hf-llama"),
        (lambda: hf_layer_saved_bytes(_gpt(), 1, 8, dropout=1.0), "dropout"),
        (lambda: hf_layer_saved_bytes(_gpt(), 1, 8, "fp64"), "fp32, bf16, fp16"),
        (lambda: activation_bytes(_gpt(), 0, 8), "batch"),
        (lambda: activation_bytes(_gpt(), 1, 8, tensor_parallel=3), "tensor_parallel"),
        (lambda: activation_bytes(_gpt(), 1, 7, tensor_parallel=2, sequence_parallel=True), "seq"),
        (lambda: activation_bytes(_gpt(), 1, 8, implementation="hf-gpt2", recompute="full"), "hf-gpt2"),
        (lambda: kv_cache_bytes(_gpt(), 1, 0), "context"),
        (lambda: bytes_for(3, "int2"), "int4"),
        (lambda: format_bytes(1, "gigabytes"), "GiB"),
        (lambda: to_gb(-1), "n_bytes"),
        (lambda: largest_batch(_gpt(), 8, 0), "capacity_bytes"),
        (lambda: training_state_bytes(10, optimizer_bytes_per_value=0), "optimizer_bytes_per_value"),
    ],
)
def test_bad_values(call, words):
    with pytest.raises(ValueError, match=words):
        call()


@pytest.mark.parametrize(
    "call",
    [
        lambda: weight_bytes(1.5e9, "bf16"),
        lambda: training_state_bytes("7B"),
        lambda: activation_bytes("gpt2", 1, 8),
        lambda: activation_bytes(_gpt(), 1, 8.0),
        lambda: kv_cache_bytes(_gpt(), 1, 8, bytes_per_value=2.0),
        lambda: activation_bytes(_gpt(), 1, 8, flash_attention=1),
        lambda: to_gib("1 GB"),
        lambda: kv_cache_bytes({"n_layers": 2}, 1, 8),
        lambda: recompute_flops("gpt2", 1, 8),
        lambda: recompute_flops(_gpt(), 1, 8, flash_attention="yes"),
        lambda: hf_layer_saved_bytes("gpt2", 1, 8),
    ],
)
def test_bad_types(call):
    with pytest.raises(TypeError):
        call()
