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
    hf_gpt2_block_saved_bytes,
    kv_cache_bytes,
    largest_batch,
    training_state_bytes,
    weight_bytes,
)
from llmmath.presets import PRESETS
from llmmath.units import GB, GiB, bytes_for, format_bytes, to_gb, to_gib


def _gpt(h=64, a=4, L=2, ff=None, act="gelu"):
    return TransformerConfig(n_layers=L, hidden_size=h, n_heads=a, vocab_size=100, ffn_size=ff,
                             activation=act, max_position=64)


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
    # Rajbhandari et al. (2020), Figure 1: Psi = 7.5B, K = 12, N_d = 64 -> 120, 31.4, 16.6, 1.88 GB
    P = 7_500_000_000
    expected = {0: 120.0, 1: 31.4, 2: 16.6, 3: 1.88}
    for stage, gb in expected.items():
        got = training_state_bytes(P, "mixed", "adam", zero_stage=stage, n_gpus=64)["total"] / GB
        assert got == pytest.approx(gb, abs=0.06)


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
    assert activation_bytes(cfg, b, s, flash_attention=True)["per_layer"] == _paper(34 * sbh, **v)
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


def test_activation_total_is_layers_times_per_layer_and_terms_sum():
    cfg = _gpt(L=5)
    out = activation_bytes(cfg, 2, 16)
    assert tuple(out["terms"]) == ACTIVATION_TERMS
    assert out["per_layer"] == sum(out["terms"].values())
    assert out["total"] == 5 * out["per_layer"]


def test_activation_no_dropout_removes_masks():
    cfg = _gpt(h=64, a=4)
    s, b, h, a = 16, 2, 64, 4
    assert activation_bytes(cfg, b, s, dropout=False)["per_layer"] == 32 * s * b * h + 2 * a * s * s * b


MEASURE_CASES = [  # (b, s, h, a, d_ff, activation, dtype, dropout)
    (2, 8, 16, 4, 64, "gelu", "fp32", 0.1),
    (2, 8, 16, 4, 64, "gelu", "bf16", 0.1),
    (1, 5, 24, 3, 40, "gelu_new", "fp32", 0.1),
    (3, 7, 32, 8, 128, "gelu_new", "bf16", 0.0),
    (2, 6, 16, 2, 48, "relu", "fp32", 0.2),
    (2, 4, 16, 4, 64, "quick_gelu", "bf16", 0.1),
    (1, 9, 12, 3, 20, "gelu_fast", "fp32", 0.1),
]


@pytest.mark.parametrize(("b", "s", "h", "a", "ff", "act", "dtype", "p"), MEASURE_CASES)
def test_hf_gpt2_formula_is_exact(b, s, h, a, ff, act, dtype, p):
    pytest.importorskip("transformers")
    cfg = _gpt(h=h, a=a, ff=ff, act=act, L=1)
    measured = hf_gpt2_block_saved_bytes(cfg, b, s, dtype, dropout=p)
    B = 4 if dtype == "fp32" else 2
    formula = activation_bytes(cfg, b, s, bytes_per_value=B, bytes_per_mask=B, bytes_per_norm_stat=B,
                               dropout=p > 0, implementation="hf-gpt2")
    assert measured["total"] == formula["per_layer"]
    assert sum(row[-1] for row in measured["tensors"]) == measured["total"]


def test_hf_gpt2_activation_table_covers_config_activations():
    from llmmath.config import ACTIVATIONS

    assert set(HF_ACTIVATION_SAVED_TENSORS) == set(ACTIVATIONS)


def test_gqa_changes_k_and_v_only():
    mha = PRESETS["llama2-70b"].replace(n_kv_heads=64)
    gqa = PRESETS["llama2-70b"]
    t_mha, t_gqa = activation_bytes(mha, 1, 128)["terms"], activation_bytes(gqa, 1, 128)["terms"]
    assert t_mha["k"] == 8 * t_gqa["k"] and t_mha["v"] == 8 * t_gqa["v"] and t_mha["q"] == t_gqa["q"]


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
        (lambda: activation_bytes(_gpt(), 1, 8, implementation="paper"), "korthikanti, hf-gpt2"),
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
    ],
)
def test_bad_types(call):
    with pytest.raises(TypeError):
        call()
