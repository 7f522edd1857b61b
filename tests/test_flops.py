"""Tests of llmmath.flops and llmmath.hardware.

Expected values come from PyTorch's FLOP counter run on ``transformers`` models, from the papers'
own formulas and published numbers, from sympy and from brute-force counting.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from llmmath.config import TransformerConfig
from llmmath.flops import (
    FLOPS_KEYS,
    approx_training_flops,
    attention_flops_share,
    flops_breakdown,
    forward_flops,
    hfu,
    kaplan_forward_flops_per_token,
    megatron_training_flops,
    mfu,
    nonmatmul_flops,
    palm_training_flops_per_token,
    training_days,
    training_flops,
    training_flops_per_token,
)
from llmmath.hardware import GPUS, gpu_peak_flops
from llmmath.params import non_embedding_param_count
from llmmath.presets import preset

# Exactness against torch.utils.flop_counter on transformers models of every family, and random
# configs of every family, is tested in tests/test_families.py.

# ---------------------------------------------------------------------------------------------
# Closed forms (sympy) and papers' formulas
# ---------------------------------------------------------------------------------------------

def _gpt(L=3, h=64, a=4, V=101, S=128) -> TransformerConfig:
    return TransformerConfig(n_layers=L, hidden_size=h, n_heads=a, vocab_size=V, max_position=S)


def test_gpt_forward_matches_seed_closed_form():
    b, s, h, L, V = sp.symbols("b s h L V", positive=True, integer=True)
    qkv, out, mlp = 3 * 2 * b * s * h**2, 2 * b * s * h**2, 2 * 8 * b * s * h**2
    scores = values = 2 * b * s**2 * h
    per_layer = qkv + scores + values + out + mlp
    closed = L * per_layer + 2 * b * s * h * V
    assert sp.expand(L * per_layer - L * (24 * b * s * h**2 + 4 * b * s**2 * h)) == 0
    cfg = _gpt()
    for bb, ss in [(1, 1), (2, 17), (5, 128)]:
        want = closed.subs({b: bb, s: ss, h: 64, L: 3, V: 101})
        assert forward_flops(cfg, bb, ss) == int(want)


def test_megatron_formula_is_exact_matmul_count_with_recompute():
    # Narayanan et al. (2021): 96 B s l h^2 (1 + s/6h + V/16lh) = 96Bslh^2 + 16Bs^2lh + 6BshV
    cfg = preset("gpt3-175b")
    B, s, L, h, V = 4, 2048, 96, 12288, 50257
    want = 96 * B * s * L * h**2 + 16 * B * s**2 * L * h + 6 * B * s * h * V
    assert training_flops(cfg, B, s, recompute=True) == want
    assert megatron_training_flops(cfg, B, s) == want


def test_palm_formula_with_matmul_weights():
    # 6N + 12 L H Q T per token is exact when N counts the weights that multiply (layers + LM head)
    cfg = _gpt()
    L, h, a, d, V, s = 3, 64, 4, 16, 101, 40
    n_matmul = 12 * L * h**2 + h * V
    assert palm_training_flops_per_token(n_matmul, L, a, d, s) * s == training_flops(cfg, 1, s)


def test_kaplan_forward_per_token():
    cfg = _gpt()
    n = non_embedding_param_count(cfg)
    assert kaplan_forward_flops_per_token(cfg, 32) == 2 * n + 2 * 3 * 32 * 64


def test_skip_masked_counts_lower_triangle_brute_force():
    cfg = _gpt(L=2, h=32, a=4)
    s = 9
    kept = int(np.tril(np.ones((s, s))).sum())  # entries a causal mask keeps
    full = flops_breakdown(cfg, 1, s)
    half = flops_breakdown(cfg, 1, s, skip_masked=True)
    assert half["attn_scores"] * s * s == full["attn_scores"] * kept
    assert half["q_proj"] == full["q_proj"]


def test_breakdown_keys_and_sum():
    cfg = preset("mixtral-8x7b")
    bd = flops_breakdown(cfg, 1, 16)
    assert tuple(bd) == FLOPS_KEYS
    assert sum(bd.values()) == forward_flops(cfg, 1, 16)
    assert bd["embedding"] == 0
    # each token goes through 2 of 8 experts: 3 matrices 4096 x 14336
    assert bd["mlp_up"] + bd["mlp_gate"] + bd["mlp_down"] == 32 * 16 * 2 * 3 * 2 * 4096 * 14336


def test_attention_share_gpt_layer():
    cfg = _gpt(V=1)  # LM head 2bsh: share = 4s^2h L / (L(24sh^2 + 4s^2h) + 2sh)
    s, h, L = 64, 64, 3
    want = 4 * s**2 * h * L / (L * (24 * s * h**2 + 4 * s**2 * h) + 2 * s * h)
    assert attention_flops_share(cfg, s) == pytest.approx(want, rel=1e-12)


def test_nonmatmul_is_small_for_gpt3():
    cfg = preset("gpt3-175b")
    assert sum(nonmatmul_flops(cfg, 1, 2048).values()) < 0.01 * forward_flops(cfg, 1, 2048)


# ---------------------------------------------------------------------------------------------
# Published numbers
# ---------------------------------------------------------------------------------------------

def test_gpt3_training_compute_brown_et_al():
    # Brown et al. (2020), Table D.1: 3.14e23 FLOPs for GPT-3 175B on 300B tokens
    assert approx_training_flops(174.6e9, 300e9) == pytest.approx(3.14e23, rel=2e-3)
    assert training_flops_per_token(preset("gpt3-175b"), seq=2048) * 300e9 == pytest.approx(3.14e23, rel=0.03)


def test_megatron_training_time_estimates():
    # Narayanan et al. (2021), section 5.1: 8TP/(nX); 175B: ~34 days, 1T: ~84 days
    assert round(training_days(300e9, 175e9, 1024, 140e12, 1.0, recompute=True)) == 34
    assert round(training_days(450e9, 1e12, 3072, 163e12, 1.0, recompute=True)) in (83, 84)


def test_seed_002_training_time():
    # seed 002: 8 * 300e9 * 175e9 / (1024 * 312e12 * 0.45) = 2921340 s (it used 175e9, not 174.6e9)
    days = training_days(300e9, 175e9, 1024, 312e12, 0.45, recompute=True)
    assert days * 86400 == pytest.approx(2921340, abs=1)


def test_approx_accepts_arrays():
    out = approx_training_flops(np.array([1e9, 2e9]), np.array([[1e10], [2e10]]))
    assert out.shape == (2, 2)
    assert out[1, 1] == pytest.approx(6 * 2e9 * 2e10)
    assert approx_training_flops(1e9, 1e10, 8) == pytest.approx(8e19)


def test_mfu_hfu():
    # 1 GPU at 1e15 FLOP/s peak, N = 1e9, 100k tokens/s: MFU = 6e14/1e15, HFU = 8e14/1e15
    assert mfu(1e5, 1e9, 1, 1e15) == pytest.approx(0.6)
    assert hfu(1e5, 1e9, 1, 1e15) == pytest.approx(0.8)
    cfg = _gpt()
    assert mfu(1000, cfg, 2, 1e12, seq=64) == pytest.approx(1000 * training_flops(cfg, 1, 64) / 64 / 2e12)


def test_training_days_config_uses_exact_per_token():
    cfg = _gpt()
    days = training_days(1e9, cfg, 8, 1e14, 0.5, seq=128)
    assert days == pytest.approx(1e9 * training_flops(cfg, 1, 128) / 128 / (8 * 1e14 * 0.5) / 86400)


def test_gpu_table():
    # NVIDIA whitepapers: V100 125 TFLOP/s FP16 tensor; A100 312 BF16; H100 SXM5 989.4 BF16 dense
    assert gpu_peak_flops("V100", "fp16_tensor") == 125e12
    assert gpu_peak_flops("A100") == 312e12
    assert gpu_peak_flops("H100", "bf16_tensor") == pytest.approx(989.4e12)
    assert all(g.source for g in GPUS.values())
    with pytest.raises(ValueError, match="precision"):
        gpu_peak_flops("V100", "bf16_tensor")
    with pytest.raises(ValueError, match="gpu"):
        gpu_peak_flops("B300")


# ---------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "kw,name", [(dict(batch=0), "batch"), (dict(seq=0), "seq"), (dict(batch=-1), "batch"), (dict(seq=1025), "seq")]
)
def test_bad_shape(kw, name):
    args = dict(batch=1, seq=8) | kw
    cfg = preset("gpt2")  # learned position table of 1024
    for fn in (forward_flops, flops_breakdown, training_flops):
        with pytest.raises(ValueError, match=name):
            fn(cfg, **args)


def test_bad_types_and_options():
    cfg = _gpt()
    with pytest.raises(TypeError, match="cfg"):
        forward_flops({"model_type": "gpt2"}, 1, 8)
    with pytest.raises(TypeError, match="batch"):
        forward_flops(cfg, 1.0, 8)
    with pytest.raises(TypeError, match="recompute"):
        training_flops(cfg, 1, 8, recompute="yes")
    with pytest.raises(ValueError, match="skip_masked"):
        forward_flops(preset("bert-base"), 1, 8, skip_masked=True)
    with pytest.raises(ValueError, match="seq"):
        training_days(1e9, cfg, 1, 1e12, 0.5)


@pytest.mark.parametrize("u", [0, -0.1, 1.01, float("nan")])
def test_bad_utilization(u):
    with pytest.raises(ValueError, match="utilization"):
        training_days(1e9, 1e9, 1, 1e12, u)


@pytest.mark.parametrize("kw,name", [(dict(n_gpus=0), "n_gpus"), (dict(peak_flops=0), "peak_flops"),
                                     (dict(tokens=-1), "tokens"), (dict(model=0), "model")])
def test_bad_training_days(kw, name):
    args = dict(tokens=1e9, model=1e9, n_gpus=1, peak_flops=1e12, utilization=0.5) | kw
    with pytest.raises(ValueError, match=name):
        training_days(**args)


def test_bad_approx():
    with pytest.raises(ValueError, match="n_params"):
        approx_training_flops(np.array([1e9, 0]), 1e9)
    with pytest.raises(ValueError, match="flops_per_param_token"):
        approx_training_flops(1e9, 1e9, 0)


# ---------------------------------------------------------------------------------------------
# Brute force: enumerate every product, head by head and expert by expert
# ---------------------------------------------------------------------------------------------

def _brute_force_forward(cfg: TransformerConfig, batch: int, seq: int) -> int:
    """Sum matmul_flops over every individual 2-D product of one forward pass."""
    from llmmath.matmul import matmul_flops

    h, e, d = cfg.hidden_size, cfg.embedding_dim, cfg.head_dim
    total = 0
    for _ in range(batch):
        if e != h:
            total += matmul_flops(seq, e, h) + matmul_flops(seq, h, e)  # project_in, project_out
        for _ in range(cfg.n_layers):
            for _ in range(cfg.n_heads):
                total += matmul_flops(seq, h, d)  # this head's slice of W_Q
                total += matmul_flops(seq, d, seq) + matmul_flops(seq, seq, d)  # Q K^T, P V
                total += matmul_flops(seq, d, h)  # this head's rows of W_O
            for _ in range(cfg.n_kv_heads):
                total += 2 * matmul_flops(seq, h, d)  # this K/V head's slices of W_K, W_V
            n_mat = 3 if cfg.ffn_kind == "gated" else 2
            if cfg.is_moe:
                total += matmul_flops(seq, h, cfg.n_experts)  # router
                for _ in range(seq):  # each token through its k experts
                    for _ in range(cfg.experts_per_token):
                        total += n_mat * matmul_flops(1, h, cfg.ffn_size)
            else:
                total += n_mat * matmul_flops(seq, h, cfg.ffn_size)
        total += matmul_flops(seq, e, cfg.vocab_size)
    return total


@settings(max_examples=40, deadline=None)
@given(
    layers=st.integers(1, 3), heads=st.sampled_from([1, 2, 4]), group=st.sampled_from([1, 2, 4]),
    d=st.integers(1, 8), ffn=st.integers(1, 24), vocab=st.integers(2, 50), gated=st.booleans(),
    experts=st.sampled_from([0, 2, 4]), e=st.integers(1, 16), batch=st.integers(1, 3), seq=st.integers(1, 9),
)
def test_forward_flops_equals_brute_force(layers, heads, group, d, ffn, vocab, gated, experts, e, batch, seq):
    a = heads * group
    cfg = TransformerConfig(
        n_layers=layers, hidden_size=a * d, n_heads=a, n_kv_heads=heads, head_dim=d, vocab_size=vocab,
        ffn_size=ffn, ffn_kind="gated" if gated else "mlp", position="rotary", embedding_dim=e,
        n_experts=experts, experts_per_token=min(2, experts),
    )
    fwd = forward_flops(cfg, batch, seq)
    assert fwd == _brute_force_forward(cfg, batch, seq)
    assert training_flops(cfg, batch, seq) == 3 * fwd
