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

from llmmath.config import TransformerConfig, from_hf_config
from llmmath.flops import (
    FLOPS_KEYS,
    approx_training_flops,
    attention_flops_share,
    attention_pairs,
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
    """Composition: forward_flops is the sum of the breakdown by definition (each part is checked
    against FlopCounterMode in tests/test_families.py); the expert MLP line is a hand count."""
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
    # the toy GPT's training FLOPs at s = 64 by hand: 3 x [L (24 s h^2 + 4 s^2 h) + 2 s h V] =
    # 3 x [3 (6,291,456 + 1,048,576) + 827,392] = 68,542,464 per 64 tokens = 1,070,976 per token
    assert mfu(1000, cfg, 2, 1e12, seq=64) == pytest.approx(1000 * 1_070_976 / 2e12, rel=1e-12)


def test_training_days_config_uses_exact_per_token():
    cfg = _gpt()
    days = training_days(1e9, cfg, 8, 1e14, 0.5, seq=128)
    # by hand at s = 128: 3 x [3 (12,582,912 + 4,194,304) + 1,654,784] = 155,959,296 per 128 tokens
    # = 1,218,432 per token
    assert days == pytest.approx(1e9 * 1_218_432 / (8 * 1e14 * 0.5) / 86400, rel=1e-12)


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


# ---------------------------------------------------------------------------------------------
# Masks and tiles: brute force on a boolean mask
# ---------------------------------------------------------------------------------------------

def _kept_mask(s: int, window: int | None) -> np.ndarray:
    """kept[q, k]: query q attends to key k (causal; within the last ``window`` keys)."""
    q, k = np.indices((s, s))
    kept = k <= q
    if window is not None:
        kept &= q - k < window
    return kept


def _tiled_pairs(kept: np.ndarray, tile: int) -> int:
    """Area of every tile (clipped at the edges) that holds at least one kept pair."""
    s = kept.shape[0]
    return sum(kept[i:i + tile, j:j + tile].size
               for i in range(0, s, tile) for j in range(0, s, tile) if kept[i:i + tile, j:j + tile].any())


@settings(max_examples=60, deadline=None)
@given(s=st.integers(1, 40), tile=st.integers(1, 12), window=st.one_of(st.none(), st.integers(1, 45)))
def test_attention_pairs_brute_force(s, tile, window):
    kept = _kept_mask(s, window)
    assert attention_pairs(s, window=window) == s * s  # eager: the whole matrix
    assert attention_pairs(s, window=window, skip_masked=True) == int(kept.sum())
    assert attention_pairs(s, window=window, skip_masked=True, tile=tile) == _tiled_pairs(kept, tile)
    assert attention_pairs(s, causal=False, window=window, skip_masked=True, tile=tile) == s * s


def test_tile_fraction_closed_form():
    # causal, B | s: n (n + 1) / 2 tiles of B^2 out of n^2, i.e. (s + B) / (2 s) (sympy)
    n, B, i = sp.symbols("n B i", positive=True, integer=True)
    tiles = sp.summation(i, (i, 1, n))  # query tile i meets key tiles 1 .. i
    frac = sp.simplify(tiles * B**2 / (n * B) ** 2)
    s_sym = sp.symbols("s", positive=True)
    assert sp.simplify(frac.subs(n, s_sym / B) - (s_sym + B) / (2 * s_sym)) == 0
    for s, b in [(2048, 128), (4096, 64), (1024, 1024), (512, 1)]:
        assert sp.Rational(attention_pairs(s, skip_masked=True, tile=b), s * s) == frac.subs({n: s // b, B: b})


def test_breakdown_with_tiles_and_layer_pattern():
    # two full and two sliding layers: each layer's products over its own tiled mask
    cfg = TransformerConfig(n_layers=4, hidden_size=32, n_heads=4, vocab_size=50, position="rotary",
                            sliding_window=5, attention_types=("full", "sliding") * 2)
    s, b, B = 23, 2, 4
    pairs = 2 * _tiled_pairs(_kept_mask(s, None), B) + 2 * _tiled_pairs(_kept_mask(s, 5), B)
    bd = flops_breakdown(cfg, b, s, skip_masked=True, tile=B)
    assert bd["attn_scores"] == bd["attn_values"] == 2 * b * 4 * 8 * pairs
    eager = flops_breakdown(cfg, b, s)
    assert eager["attn_scores"] == 4 * 2 * b * 4 * 8 * s * s  # eager ignores the window
    assert {k: v for k, v in bd.items() if not k.startswith("attn")} == \
        {k: v for k, v in eager.items() if not k.startswith("attn")}


def test_nonmatmul_moe_widths_deepseek_v3():
    # DeepSeek-AI (2024b), section 4.2: first 3 of 61 layers dense (d_ff 18432), then 1 shared + 8 of
    # 256 routed experts of width 2048 per token; SiLU (4) gated (+1) per hidden element
    cfg = preset("deepseek-v3")
    nm = nonmatmul_flops(cfg, 1, 16)
    assert nm["activation"] == 16 * (3 * 18432 + 58 * (8 * 2048 + 2048)) * 5
    assert nm["router"] == 58 * 16 * (5 * 256 + 8 * 7168)


# ---------------------------------------------------------------------------------------------
# Fused attention: PyTorch's registered SDPA formulas on the same shapes
# ---------------------------------------------------------------------------------------------

def _attention_calls(name: str, d: dict, s: int, s_dec: int | None) -> list[tuple[int, int, int, int, int, int, int]]:
    """(count, a, a_kv, s_q, s_k, d_qk, d_v) of every attention call of the model of ``d``, read
    from the config dict (independently of llmmath)."""
    if d["model_type"] == "t5":
        a, dk = d["num_heads"], d["d_kv"]
        n_dec = d.get("num_decoder_layers", d["num_layers"])
        return [(d["num_layers"], a, a, s, s, dk, dk), (n_dec, a, a, s_dec, s_dec, dk, dk),
                (n_dec, a, a, s_dec, s, dk, dk)]
    if d["model_type"] == "gpt2":
        a = d["n_head"]
        return [(d["n_layer"], a, a, s, s, d["n_embd"] // a, d["n_embd"] // a)]
    a, L = d["num_attention_heads"], d["num_hidden_layers"]
    if d["model_type"].startswith("deepseek"):  # MLA: keys of nope + rope features, narrower values
        return [(L, a, a, s, s, d["qk_nope_head_dim"] + d["qk_rope_head_dim"], d["v_head_dim"])]
    dh = d.get("head_dim", d["hidden_size"] // a)
    return [(L, a, d.get("num_key_value_heads", a), s, s, dh, dh)]


def _sdpa_registered(b: int, a: int, a_kv: int, s_q: int, s_k: int, d_qk: int, d_v: int) -> tuple[int, int]:
    """Forward and backward FLOPs of one SDPA call, from the formulas torch.utils.flop_counter
    registers for the flash-attention kernels (GQA shapes: a_kv key/value heads)."""
    torch = pytest.importorskip("torch")
    from torch.utils.flop_counter import flop_registry

    aten = torch.ops.aten
    q, k, v, out = (b, a, s_q, d_qk), (b, a_kv, s_k, d_qk), (b, a_kv, s_k, d_v), (b, a, s_q, d_v)
    fwd = flop_registry[aten._scaled_dot_product_flash_attention](q, k, v)
    bwd = flop_registry[aten._scaled_dot_product_flash_attention_backward](out, q, k, v)
    return fwd, bwd


def _eager_core_counted(b: int, a: int, s_q: int, s_k: int, d_qk: int, d_v: int, backward: bool) -> int:
    """FlopCounterMode on eager attention, softmax(Q K^T) V, forward (+ backward) (keys and values
    repeated to the a query heads, as transformers' eager attention does)."""
    torch = pytest.importorskip("torch")
    from torch.utils.flop_counter import FlopCounterMode

    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(b, a, n, dd, generator=g, requires_grad=True)
               for n, dd in ((s_q, d_qk), (s_k, d_qk), (s_k, d_v)))
    with FlopCounterMode(display=False) as counter:
        out = torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ v
        if backward:
            out.sum().backward()
    return counter.get_total_flops()


_FUSED_CASES = ["gpt2-mha", "llama-gqa", "deepseek_v3-mla", "gemma2-local-global", "t5-relu-tied"]


@pytest.mark.parametrize("case", _FUSED_CASES)
def test_fused_attention_equals_registered_sdpa_formulas(case):
    """The model counted with eager attention (FlopCounterMode on transformers), with every
    eager attention core swapped for what PyTorch's registered SDPA formulas charge."""
    hf_reference = pytest.importorskip("hf_reference")
    d = hf_reference.CASES[case]
    cfg = from_hf_config(d)
    b, s = 2, 6
    s_dec = 4 if d["model_type"] == "t5" else None
    want = hf_reference.counted_flops(d, b, s, "train", s_dec)
    for count, a, a_kv, s_q, s_k, d_qk, d_v in _attention_calls(case, d, s, s_dec):
        fwd, bwd = _sdpa_registered(b, a, a_kv, s_q, s_k, d_qk, d_v)
        want += count * (fwd + bwd - _eager_core_counted(b, a, s_q, s_k, d_qk, d_v, backward=True))
    assert training_flops(cfg, b, s, decoder_seq=s_dec, attention="fused") == want
    per_token = want / (b * (s_dec or s))
    assert hfu(1e3, cfg, 2, 1e12, recompute=False, seq=s, decoder_seq=s_dec, attention="fused") == \
        pytest.approx(1e3 * per_token / 2e12, rel=1e-12)


@pytest.mark.parametrize("case", ["gpt2-mha", "deepseek_v3-mla"])
def test_fused_attention_with_recompute(case):
    """Checkpointed layers: the recomputed forward runs the fused kernel's forward once more."""
    hf_reference = pytest.importorskip("hf_reference")
    d = hf_reference.CASES[case]
    b, s = 2, 6
    want = hf_reference.counted_flops(d, b, s, "recompute")
    for count, a, a_kv, s_q, s_k, d_qk, d_v in _attention_calls(case, d, s, None):
        fwd, bwd = _sdpa_registered(b, a, a_kv, s_q, s_k, d_qk, d_v)
        eager = _eager_core_counted(b, a, s_q, s_k, d_qk, d_v, backward=True) + \
            _eager_core_counted(b, a, s_q, s_k, d_qk, d_v, backward=False)
        want += count * (2 * fwd + bwd - eager)
    assert training_flops(from_hf_config(d), b, s, recompute=True, attention="fused") == want


def test_sdpa_backward_ratio_gpt3_and_mla():
    # torch's formulas: backward / forward = 5/2 when d_qk = d_v; (3 d_qk + 2 d_v) / (d_qk + d_v) for MLA
    for cfg, s in [(preset("gpt3-175b"), 2048), (preset("deepseek-v3"), 4096)]:
        a, d_qk, d_v, L = cfg.n_heads, cfg.head_dim, cfg.v_head_dim, cfg.n_layers
        fwd, bwd = _sdpa_registered(1, a, a, s, s, d_qk, d_v)
        eager, fused = training_flops(cfg, 1, s), training_flops(cfg, 1, s, attention="fused")
        assert fused - eager == L * (bwd - 2 * fwd)
        assert sp.Rational(bwd, fwd) == sp.Rational(3 * d_qk + 2 * d_v, d_qk + d_v)


def test_fused_and_tile_bad_input():
    cfg = _gpt()
    with pytest.raises(ValueError, match="attention"):
        training_flops(cfg, 1, 8, attention="flash")
    with pytest.raises(TypeError, match="attention"):
        training_flops(cfg, 1, 8, attention=None)
    with pytest.raises(ValueError, match="TransformerConfig"):
        training_flops_per_token(1e9, attention="fused")
    with pytest.raises(ValueError, match="TransformerConfig"):
        hfu(1e5, 1e9, 1, 1e15, skip_masked=True)
    with pytest.raises(ValueError, match="skip_masked"):
        forward_flops(cfg, 1, 8, tile=4)
    with pytest.raises(ValueError, match="skip_masked"):
        attention_pairs(8, tile=4)
    with pytest.raises(ValueError, match="tile"):
        attention_pairs(8, skip_masked=True, tile=0)
    with pytest.raises(TypeError, match="tile"):
        flops_breakdown(cfg, 1, 8, skip_masked=True, tile=2.0)
