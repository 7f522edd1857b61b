"""Exactness of llmmath.params against the reference implementations in ``transformers``.

The expected counts are ``sum(p.numel() for p in model.parameters())`` of the ``transformers``
model built (on the ``meta`` device, so nothing is allocated) from the same configuration
dictionary that :func:`llmmath.from_hf_config` reads; the per-component expectations classify
each named parameter of that model by its module path.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from llmmath.config import TransformerConfig  # noqa: E402
from llmmath.params import (  # noqa: E402
    EMBEDDING_KEYS,
    QUOTED_SIZES,
    active_param_count,
    base_model_param_count,
    layer_param_count,
    non_embedding_param_count,
    param_breakdown,
    param_count,
)
from llmmath.presets import _RAW, PRESETS  # noqa: E402

hf_reference = pytest.importorskip("hf_reference")
reference_counts, hf_model = hf_reference.reference_counts, hf_reference.hf_model

transformers.logging.set_verbosity_error()
logging.getLogger("transformers").setLevel(logging.ERROR)


# ---- the reference: tests/hf_reference.py builds the transformers model and classifies its parameters

def _check(cfg: TransformerConfig, d: dict[str, Any]) -> None:
    ref = reference_counts(d)
    assert param_count(cfg) == ref["total"], (d, param_count(cfg), ref["total"])
    assert base_model_param_count(cfg) == ref["base"]
    assert layer_param_count(cfg) == ref["per_layer"][0]
    assert param_breakdown(cfg) == ref["breakdown"]
    assert non_embedding_param_count(cfg) == ref["total"] - sum(ref["breakdown"][k] for k in EMBEDDING_KEYS)
    assert active_param_count(cfg) == ref["active"]


# ---- presets ------------------------------------------------------------------------------------

HF_PRESETS = [name for name, (raw, _) in _RAW.items() if isinstance(raw, dict)]


@pytest.mark.parametrize("name", HF_PRESETS)
def test_hf_presets_exact(name: str) -> None:
    _check(PRESETS[name], _RAW[name][0])


@pytest.mark.parametrize("name", [n for n in PRESETS if n.startswith("gpt3-")])
def test_gpt3_presets_exact(name: str) -> None:
    cfg = PRESETS[name]
    d = {"model_type": "gpt2", "n_layer": cfg.n_layers, "n_embd": cfg.hidden_size,
         "n_head": cfg.n_heads, "n_positions": 2048, "vocab_size": 50257}
    _check(cfg, d)


# Brown et al. (2020), Table D.1, column "Params (M)", as printed.
GPT3_TABLE_D1 = {"gpt3-small": 125, "gpt3-medium": 356, "gpt3-large": 760, "gpt3-xl": 1_320,
                 "gpt3-2.7b": 2_650, "gpt3-6.7b": 6_660, "gpt3-13b": 12_850, "gpt3-175b": 174_600}


def _to_printed_digits(n_params: int, printed_millions: int) -> int:
    """``n_params`` in millions, rounded to the last non-zero digit of the printed figure."""
    digits = len(str(printed_millions)) - len(str(printed_millions).rstrip("0"))
    return round(n_params / 10**6, -digits)


@pytest.mark.parametrize("name", list(GPT3_TABLE_D1))
def test_gpt3_presets_match_table_d1(name: str) -> None:
    """Every GPT-3 preset rounds to Table D.1's parameter count at the digits the table prints."""
    assert _to_printed_digits(param_count(PRESETS[name]), GPT3_TABLE_D1[name]) == GPT3_TABLE_D1[name]


def test_table_d1_decides_gpt3_13b_width_and_xl_heads() -> None:
    """Table 2.1's literal shapes (13B: d_model 5140; XL: 24 heads of 128) miss Table D.1."""
    def gpt(L: int, h: int, heads: int, d_head: int) -> int:
        return param_count(TransformerConfig(n_layers=L, hidden_size=h, n_heads=heads, head_dim=d_head,
                                             vocab_size=50257, max_position=2048))
    assert _to_printed_digits(gpt(40, 5140, 40, 128), 12_850) != 12_850
    assert _to_printed_digits(gpt(24, 2048, 24, 128), 1_320) != 1_320
    assert QUOTED_SIZES["gpt3-13b"][0] == 12_850 * 10**6


def test_qwen_1_8b_exact() -> None:
    cfg = PRESETS["qwen-1.8b"]
    d = {"model_type": "qwen2", "num_hidden_layers": 24, "hidden_size": 2048, "num_attention_heads": 16,
         "num_key_value_heads": 16, "intermediate_size": 5504, "vocab_size": 151936,
         "tie_word_embeddings": False}
    _check(cfg, d)


# ---- derived counts ------------------------------------------------------------------------------

def test_active_params_mixtral_brute_force() -> None:
    d = _RAW["mixtral-8x7b"][0]
    model = hf_model(d)
    E, k = d["num_local_experts"], d["num_experts_per_tok"]
    expert = sum(p.numel() for n, p in model.named_parameters() if ".experts." in n)
    total = sum(p.numel() for p in model.parameters())
    assert expert % E == 0
    assert active_param_count(PRESETS["mixtral-8x7b"]) == total - expert // E * (E - k)


@pytest.mark.parametrize("name", ["gpt2", "llama-7b", "bert-base", "falcon-7b"])
def test_active_equals_total_for_dense(name: str) -> None:
    assert active_param_count(PRESETS[name]) == param_count(PRESETS[name])


# Biderman et al. (2023), Table 1: "Non-Embedding Params" of the Pythia suite (embed_in and the
# untied embed_out both excluded), a published independent figure.
PYTHIA_NON_EMBEDDING = {
    "pythia-160m": 85_056_000,
    "pythia-1.4b": 1_208_602_624,
    "pythia-6.9b": 6_444_163_072,
    "pythia-12b": 11_327_027_200,
}


@pytest.mark.parametrize("name", list(PYTHIA_NON_EMBEDDING))
def test_non_embedding_matches_pythia_table(name: str) -> None:
    assert non_embedding_param_count(PRESETS[name]) == PYTHIA_NON_EMBEDDING[name]


def test_gpt_layer_closed_form() -> None:
    """A GPT-2 layer has 12 h^2 + 13 h parameters (the seeds' formula, which is right here)."""
    for h, a in [(768, 12), (1600, 25), (64, 4)]:
        cfg = TransformerConfig(n_layers=3, hidden_size=h, n_heads=a, vocab_size=100, max_position=10)
        assert layer_param_count(cfg) == 12 * h * h + 13 * h
        assert param_count(cfg) == 3 * (12 * h * h + 13 * h) + (100 + 10) * h + 2 * h


def test_quoted_sizes_cover_presets_and_are_close() -> None:
    """Every quoted size belongs to a preset and is within 15% of the exact count or of the
    non-embedding count (Gemma's "2B" names the latter; Gemma-7B has 7.75B of it)."""
    assert len(QUOTED_SIZES) >= 20
    for name, (quoted, source) in QUOTED_SIZES.items():
        assert name in PRESETS and source
        cfg = PRESETS[name]
        close = [abs(n / quoted - 1) < 0.15 for n in (param_count(cfg), non_embedding_param_count(cfg))]
        assert any(close), name


# Gemma Team (2024), Table 2: embedding and non-embedding parameters. The published embedding
# count uses 256,128 rows (the tokenizer's full table); the released checkpoints have 256,000.
GEMMA_TABLE_2 = {"gemma-2b": (524_550_144, 1_981_884_416), "gemma-7b": (786_825_216, 7_751_248_896)}


@pytest.mark.parametrize("name", list(GEMMA_TABLE_2))
def test_non_embedding_matches_gemma_table(name: str) -> None:
    cfg = PRESETS[name]
    embedding, non_embedding = GEMMA_TABLE_2[name]
    assert non_embedding_param_count(cfg) == non_embedding
    assert embedding == 256_128 * cfg.hidden_size
    assert param_breakdown(cfg)["token_embedding"] == 256_000 * cfg.hidden_size


def test_mixtral_quoted_active() -> None:
    """Jiang et al. (2024): 47B parameters, 13B active per token."""
    cfg = PRESETS["mixtral-8x7b"]
    assert round(param_count(cfg) / 1e9) == 47
    assert round(active_param_count(cfg) / 1e9) == 13


@pytest.mark.parametrize("fn", [param_count, param_breakdown, active_param_count,
                                non_embedding_param_count, layer_param_count, base_model_param_count])
def test_bad_input(fn: Any) -> None:
    with pytest.raises(TypeError, match="cfg"):
        fn({"model_type": "gpt2"})
    with pytest.raises(TypeError, match="cfg"):
        fn("gpt2")
