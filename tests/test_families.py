"""Every supported family, exact against ``transformers``: parameters, per-layer and active
parameters, forward / training / recomputation FLOPs.

Expected values come from ``tests/hf_reference.py``: the ``transformers`` model of the same
config dict, its parameters classified by module path (meta device), its matrix-multiply FLOPs
counted by ``torch.utils.flop_counter.FlopCounterMode`` (eager attention, eager experts: the
default ``grouped_mm`` experts and CPU SDPA have no FLOP formula in torch 2.13 and would count 0).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmmath.config import SUPPORTED_MODEL_TYPES, from_hf_config
from llmmath.flops import forward_flops, training_flops
from llmmath.memory import kv_cache_bytes
from llmmath.params import (
    active_param_count,
    base_model_param_count,
    layer_param_counts,
    param_breakdown,
    param_count,
)

hf_reference = pytest.importorskip("hf_reference")
CASES, SEQ2SEQ = hf_reference.CASES, hf_reference.SEQ2SEQ

#: Families that take part in the random tests (``gemma3`` is read through ``gemma3_text``).
FAMILIES = tuple(mt for mt in SUPPORTED_MODEL_TYPES if mt != "gemma3")


def _untied_t5_extra(d: dict) -> int:
    """transformers 5.23 always ties T5's lm_head to the shared embedding (configuration_t5.py
    forces tie_word_embeddings=True); a T5 v1.1 checkpoint with tie_word_embeddings=false has a
    separate lm_head of V x d_model, which llmmath counts."""
    if d["model_type"] == "t5" and d.get("tie_word_embeddings") is False:
        return d["vocab_size"] * d["d_model"]
    return 0


def _check_params(d: dict) -> None:
    cfg = from_hf_config(d)
    ref = hf_reference.reference_counts(d)
    extra = _untied_t5_extra(d)
    assert param_count(cfg) == ref["total"] + extra
    assert base_model_param_count(cfg) == ref["base"]
    assert layer_param_counts(cfg) == ref["per_layer"]
    assert active_param_count(cfg) == ref["active"] + extra
    breakdown = param_breakdown(cfg)
    breakdown["lm_head"] -= extra
    assert breakdown == ref["breakdown"]


def _decoder_seq(d: dict, seq: int) -> int | None:
    return seq + 2 if d["model_type"] in SEQ2SEQ else None


def test_every_family_has_a_case() -> None:
    covered = {d["model_type"] for d in CASES.values()}
    assert covered == set(FAMILIES)


@pytest.mark.parametrize("case", sorted(CASES))
def test_params_exact(case: str) -> None:
    _check_params(CASES[case])


@pytest.mark.parametrize("case", sorted(CASES))
def test_forward_and_training_flops_exact(case: str) -> None:
    d = CASES[case]
    cfg = from_hf_config(d)
    fwd_dec, train_dec = _decoder_seq(d, 7), _decoder_seq(d, 5)
    assert forward_flops(cfg, 2, 7, decoder_seq=fwd_dec) == hf_reference.counted_flops(d, 2, 7, "forward", fwd_dec)
    assert training_flops(cfg, 3, 5, decoder_seq=train_dec) == hf_reference.counted_flops(d, 3, 5, "train", train_dec)


@pytest.mark.parametrize("case", ["gpt2-mha", "mixtral-gqa", "gemma-mqa", "opt-proj-postln",
                                  "deepseek_v3-mla", "qwen2_moe-shared", "gemma2-local-global"])
def test_recompute_flops_exact(case: str) -> None:
    d = CASES[case]
    assert training_flops(from_hf_config(d), 2, 6, recompute=True) == hf_reference.counted_flops(d, 2, 6, "recompute")


@settings(max_examples=4 * len(FAMILIES), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_configs_params_exact(data: st.DataObject) -> None:
    family = data.draw(st.sampled_from(FAMILIES))
    _check_params(hf_reference.random_config(family, data.draw, st))


@settings(max_examples=len(FAMILIES), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_configs_flops_exact(data: st.DataObject) -> None:
    family = data.draw(st.sampled_from(FAMILIES))
    d = hf_reference.random_config(family, data.draw, st)
    cfg = from_hf_config(d)
    b, s = data.draw(st.integers(1, 2)), data.draw(st.integers(1, 6))
    dec = data.draw(st.integers(1, 5)) if d["model_type"] in SEQ2SEQ else None
    assert forward_flops(cfg, b, s, decoder_seq=dec) == hf_reference.counted_flops(d, b, s, "forward", dec)
    assert training_flops(cfg, b, s, decoder_seq=dec) == hf_reference.counted_flops(d, b, s, "train", dec)


_CAUSAL = sorted(name for name, d in CASES.items() if d["model_type"] not in hf_reference.ENCODERS)


@pytest.mark.parametrize("case", _CAUSAL)
def test_kv_cache_equals_transformers_cache(case: str) -> None:
    """The bytes of the key/value tensors transformers' cache holds after a prefill of 3 tokens
    (inside every sliding window of the cases) and of 9 (beyond them): sliding-window layers keep
    ``w - 1`` tokens, MLA its latent, T5 also the cross-attention keys and values."""
    d = CASES[case]
    cfg = from_hf_config(d)
    # transformers' Falcon with the new decoder architecture broadcasts the a_kv key/value heads
    # to all a heads *before* caching (FalconAttention._split_heads): its cache is a / a_kv times
    # the grouped one llmmath counts; the config says so (kv_broadcast), the serve command gives both
    assert cfg.kv_broadcast == (d["model_type"] == "falcon" and bool(d.get("new_decoder_architecture"))
                                and cfg.n_kv_heads < cfg.n_heads)
    if cfg.kv_broadcast:
        cfg = cfg.replace(n_kv_heads=cfg.n_heads)
    for seq in (3, 9):
        dec = 4 if d["model_type"] in SEQ2SEQ else None
        want = hf_reference.cache_bytes(d, 2, seq, dec)
        if dec:
            assert kv_cache_bytes(cfg, 2, dec, 4, encoder_seq=seq) == want
        else:
            assert kv_cache_bytes(cfg, 2, seq, 4) == want
