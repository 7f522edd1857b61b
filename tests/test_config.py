"""TransformerConfig validation and from_hf_config defaults, checked against ``transformers``.

``from_hf_config({"model_type": mt})`` must describe the model that
``transformers.AutoConfig.for_model(mt)`` builds: same shapes and the same exact parameter count
(the ``transformers`` model is built on the ``meta`` device, so nothing is allocated).
"""

from __future__ import annotations

import logging
import math
from typing import Any

import pytest

from llmmath.config import MODEL_TYPE_CLASSES, SUPPORTED_MODEL_TYPES, TransformerConfig, from_hf_config
from llmmath.params import param_count

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
transformers.logging.set_verbosity_error()
logging.getLogger("transformers").setLevel(logging.ERROR)


hf_reference = pytest.importorskip("hf_reference")

#: The core shape fields, under the name every transformers configuration accepts.
_CORE = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
_FAMILIES = [mt for mt in SUPPORTED_MODEL_TYPES if mt != "gemma3"]  # gemma3 nests a text_config


def _core_only(mt: str) -> tuple[dict[str, Any], Any]:
    """The config dict of ``mt`` with only the core fields, taken from transformers' defaults."""
    config = transformers.AutoConfig.for_model(mt)
    d = {"model_type": mt, **{k: getattr(config, k) for k in _CORE}}
    if mt.startswith("deepseek"):  # llmmath requires it (DeepseekV2Config's default None cannot route)
        d["num_experts_per_tok"] = config.num_experts_per_tok or 6
    return d, config


@pytest.mark.parametrize("mt", _FAMILIES)
def test_defaults_match_transformers(mt: str) -> None:
    """Every optional field missing: llmmath applies the defaults transformers applies."""
    d, config = _core_only(mt)
    cfg = from_hf_config(d)
    assert param_count(cfg) == hf_reference.reference_counts(d)["total"]
    assert (cfg.hidden_size, cfg.n_layers, cfg.n_heads, cfg.vocab_size) == tuple(getattr(config, k) for k in _CORE)
    assert cfg.family == mt and cfg.causal == (mt not in hf_reference.ENCODERS)


@pytest.mark.parametrize("mt", _FAMILIES)
@pytest.mark.parametrize("field", _CORE)
def test_missing_core_field_is_an_error(mt: str, field: str) -> None:
    """No silent default for a field a real config always carries (a GPT-2 config without n_embd
    used to become 768 wide)."""
    d, _ = _core_only(mt)
    if mt == "gemma3_text" and field in ("num_attention_heads", "vocab_size"):
        pytest.skip("Gemma 3's published text_config omits them: Gemma3TextConfig's defaults define them")
    del d[field]
    with pytest.raises(ValueError, match="missing the required field"):
        from_hf_config(d)


def test_missing_core_field_names_the_family_spelling() -> None:
    with pytest.raises(ValueError, match="'n_embd'"):
        from_hf_config({"model_type": "gpt2", "n_layer": 2, "n_head": 2, "vocab_size": 10})
    with pytest.raises(ValueError, match="'num_attention_heads'"):
        from_hf_config({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 8, "vocab_size": 10,
                        "num_attention_heads": None})


def test_published_config_quirks() -> None:
    """Extra keys are ignored, null means absent (or "none" where the field allows it), the
    multimodal gemma3 config is read through its text_config."""
    base = {"model_type": "mistral", "num_hidden_layers": 2, "hidden_size": 16, "num_attention_heads": 4,
            "num_key_value_heads": 2, "vocab_size": 10, "architectures": ["MistralForCausalLM"],
            "quantization_config": {"bits": 4}, "rope_scaling": None, "head_dim": None}
    assert from_hf_config(base).sliding_window == 4096  # MistralConfig's default window
    assert from_hf_config({**base, "sliding_window": None}).sliding_window is None  # v0.2+: no window
    gemma3 = {"model_type": "gemma3", "text_config": {"hidden_size": 32, "num_hidden_layers": 7,
              "intermediate_size": 48, "model_type": "gemma3_text", "sliding_window": 16}, "vision_config": {}}
    cfg = from_hf_config(gemma3)
    assert cfg.family == "gemma3_text" and cfg.n_heads == 8 and cfg.vocab_size == 262208
    assert cfg.attention_types == ("sliding",) * 5 + ("full", "sliding")
    with pytest.raises(ValueError, match="text_config"):
        from_hf_config({"model_type": "gemma3"})


def test_supported_model_types_are_known_to_transformers() -> None:
    assert set(SUPPORTED_MODEL_TYPES) <= set(transformers.CONFIG_MAPPING.keys())
    for cls, _ in MODEL_TYPE_CLASSES.values():
        assert hasattr(transformers, cls), cls


# ---- what from_hf_config reads (beyond the defaults) -------------------------------------------

def _d(mt: str, **kw: Any) -> dict[str, Any]:
    """A small config dict of ``mt`` with its core fields (canonical names), updated by ``kw``."""
    return {"model_type": mt, "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 4, "vocab_size": 10, **kw}


def test_opt_positions_offset_and_projection() -> None:
    cfg = from_hf_config(_d("opt", hidden_size=1024, num_attention_heads=16, word_embed_proj_dim=512,
                            do_layer_norm_before=False))
    assert cfg.position_offset == 2 and cfg.embedding_dim == 512 and not cfg.final_norm


@pytest.mark.parametrize("d, kv, norms, parallel", [
    ({"multi_query": True, "parallel_attn": True}, 1, 1, True),  # Falcon-7B
    ({"multi_query": False, "parallel_attn": False}, 4, 2, False),
    ({"new_decoder_architecture": True, "num_kv_heads": 8, "num_attention_heads": 128,
      "hidden_size": 8192}, 8, 2, True),  # Falcon-40B: ln_attn and ln_mlp
    ({"parallel_attn": True, "num_ln_in_parallel_attn": 2}, 1, 2, True),
])
def test_falcon_variants(d: dict[str, Any], kv: int, norms: int, parallel: bool) -> None:
    cfg = from_hf_config(_d("falcon", **d))
    assert (cfg.n_kv_heads, cfg.norms_per_layer, cfg.parallel_block) == (kv, norms, parallel)


@pytest.mark.parametrize("mt", [mt for mt in _FAMILIES if mt not in ("t5", "qwen3", "gemma", "gemma2",
                                                                     "gemma3_text", "deepseek_v2", "deepseek_v3")])
def test_hidden_size_not_divisible_by_heads_is_refused_in_every_family(mt: str) -> None:
    """One rule: without a head_dim the head size h / a must be an integer. transformers refuses
    such a config in some families (LlamaConfig, GPT-2, BERT, Falcon, ...) and in others (Qwen2,
    Mistral, Phi, Cohere, ...) builds heads of floor(h / a) that do not add up to h; llmmath
    refused the first kind and silently rounded the second. (T5, Qwen3, Gemma and DeepSeek always
    carry their head size: d_kv, head_dim, qk_nope_head_dim + qk_rope_head_dim.)"""
    d, _ = _core_only(mt)
    d.update(hidden_size=20, num_attention_heads=3, num_key_value_heads=1)
    with pytest.raises(ValueError, match=r"(num_attention_heads|n_head|n_heads) must divide") as err:
        from_hf_config(d)
    assert "20 % 3" in str(err.value)


def test_a_given_head_dim_need_not_divide_the_hidden_size() -> None:
    """T5 v1.1 small (google/t5-v1_1-small): d_model 512, 6 heads of d_kv 64 (6 x 64 = 384)."""
    cfg = from_hf_config({"model_type": "t5", "d_model": 512, "num_heads": 6, "d_kv": 64, "num_layers": 8,
                          "d_ff": 1024, "vocab_size": 32128, "feed_forward_proj": "gated-gelu"})
    assert cfg.q_dim == 384 and cfg.hidden_size == 512


# ---- errors ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("d, match", [
    ({"n_layer": 2}, "model_type"),
    ({"model_type": "xlnet"}, "model_type 'xlnet' is not supported; supported: gpt2, "),
    (_d("llama", hidden_act="swiglu2"), "'hidden_act' must be one of"),
    (_d("gpt2", activation_function="mish"), "'activation_function' must be one of"),
    (_d("llama", num_key_value_heads=3), "num_key_value_heads must divide num_attention_heads"),
    (_d("falcon", new_decoder_architecture=True, num_kv_heads=3), "num_kv_heads must divide num_attention_heads"),
    (_d("bert", position_embedding_type="relative_key"), "position_embedding_type"),
    (_d("bert", add_cross_attention=True), "add_cross_attention"),
    (_d("opt", layer_norm_elementwise_affine=False), "layer_norm_elementwise_affine"),
    (_d("phi", qk_layernorm=True), "qk_layernorm"),
    (_d("gpt2", n_layer=0), "'n_layer' must be an integer from 1"),
    (_d("deepseek_v3", num_experts_per_tok=2, num_key_value_heads=2), "num_key_value_heads"),
    (_d("deepseek_v2", num_experts_per_tok=2, mlp_bias=True), "mlp_bias"),
    (_d("olmo3", layer_types=["full_attention", "chunked_attention"]), "layer_types"),
    (_d("gemma2", layer_types=["full_attention"]), "layer_types"),
])
def test_from_hf_config_rejects(d: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        from_hf_config(d)


def test_from_hf_config_type_errors() -> None:
    with pytest.raises(TypeError, match="d must be a dict"):
        from_hf_config([("model_type", "gpt2")])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="'num_hidden_layers' must be an integer, got float"):
        from_hf_config(_d("gpt2", num_hidden_layers=2.0))
    with pytest.raises(TypeError, match="'hidden_size' must be an integer, got str"):
        from_hf_config(_d("llama", hidden_size="x"))


_BASE = dict(n_layers=2, hidden_size=64, n_heads=4, vocab_size=100, max_position=16)


@pytest.mark.parametrize("changes, exc, match", [
    ({"hidden_size": 66}, ValueError, "n_heads must divide hidden_size"),
    ({"n_kv_heads": 3}, ValueError, "n_kv_heads"),
    ({"n_kv_heads": 8}, ValueError, "n_kv_heads"),
    ({"activation": "swiglu"}, ValueError, "activation"),
    ({"norm": "batchnorm"}, ValueError, "norm"),
    ({"ffn_kind": "moe"}, ValueError, "ffn_kind"),
    ({"position": "sinusoidal"}, ValueError, "position"),
    ({"max_position": None}, ValueError, "max_position"),
    ({"n_experts": 1}, ValueError, "n_experts"),
    ({"n_experts": 4, "experts_per_token": 5}, ValueError, "experts_per_token"),
    ({"experts_per_token": 2}, ValueError, "experts_per_token"),
    ({"norms_per_layer": 5}, ValueError, "norms_per_layer"),
    ({"n_layers": 2.0}, TypeError, "n_layers"),
    ({"tie_embeddings": 1}, TypeError, "tie_embeddings"),
    ({"head_dim": 0}, ValueError, "head_dim"),
])
def test_transformer_config_validation(changes: dict[str, Any], exc: type, match: str) -> None:
    with pytest.raises(exc, match=match):
        TransformerConfig(**{**_BASE, **changes})


def test_transformer_config_derived_fields() -> None:
    cfg = TransformerConfig(**_BASE)
    assert (cfg.head_dim, cfg.n_kv_heads, cfg.ffn_size, cfg.embedding_dim) == (16, 4, 256, 64)
    assert cfg.attention_kind == "MHA"
    assert cfg.replace(n_kv_heads=1).attention_kind == "MQA"
    assert cfg.replace(n_kv_heads=2).attention_kind == "GQA"
    # head_dim decoupled from h / a is allowed when given (Gemma-7B: 16 heads of 256, h = 3072)
    wide = TransformerConfig(**{**_BASE, "hidden_size": 66, "head_dim": 32})
    assert wide.q_dim == 128


# ---- issue 24: a typo in a config.json never gives a traceback, a hang or a silent wrong number ----

def _published(name: str) -> dict[str, Any]:
    from llmmath.presets import _RAW, _ZOO, _hf_json

    return _hf_json(name) if name in ("deepseek-v3", "qwen3-30b-a3b") else dict({**_RAW, **_ZOO}[name][0])


_T5 = {"model_type": "t5", "d_model": 512, "num_heads": 8, "num_layers": 6, "vocab_size": 32128}


@pytest.mark.parametrize("name, changes, exc, key", [
    # tracebacks: a zero divisor (heads, a layer-pattern step), a non-string feed_forward_proj
    *[(name, {"num_attention_heads": 0}, ValueError, "num_attention_heads")
      for name in ("mistral-7b", "mixtral-8x7b", "qwen2-7b", "qwen3-8b", "qwen3-30b-a3b", "deepseek-v3",
                   "gemma-2-9b", "phi-2", "phi-3-mini", "starcoder2-3b", "command-r")],
    ("qwen3-30b-a3b", {"decoder_sparse_step": 0}, ValueError, "decoder_sparse_step"),
    ("deepseek-v3", {"moe_layer_freq": 0}, ValueError, "moe_layer_freq"),
    ("gemma-3-1b", {"sliding_window_pattern": 0}, ValueError, "sliding_window_pattern"),
    (None, {**_T5, "feed_forward_proj": 1}, TypeError, "feed_forward_proj"),
    (None, {**_T5, "feed_forward_proj": ["relu"]}, TypeError, "feed_forward_proj"),
    (None, {**_T5, "feed_forward_proj": "gelu-gated"}, ValueError, "feed_forward_proj"),
    # hangs and overflows: 10**30 layers, a size above 1e308
    *[(name, {"num_hidden_layers": 10**30}, ValueError, "num_hidden_layers")
      for name in ("gemma-2-9b", "qwen3-30b-a3b", "deepseek-v3", "llama-3-8b")],
    ("llama-3-8b", {"intermediate_size": 10**309}, ValueError, "intermediate_size"),
    ("llama-3-8b", {"hidden_size": 1e309}, TypeError, "hidden_size"),
    # booleans read by truthiness
    *[("llama-3-8b", {"tie_word_embeddings": v}, TypeError, "tie_word_embeddings")
      for v in ("False", math.nan, -1, 1.5, 0, None)],
    ("falcon-7b", {"new_decoder_architecture": "False"}, TypeError, "new_decoder_architecture"),
    # layer-pattern fields: floats, NaN, negatives
    ("deepseek-v3", {"first_k_dense_replace": math.nan}, TypeError, "first_k_dense_replace"),
    ("deepseek-v3", {"first_k_dense_replace": -1}, ValueError, "first_k_dense_replace"),
    ("deepseek-v3", {"moe_layer_freq": 2.5}, TypeError, "moe_layer_freq"),
    ("qwen3-30b-a3b", {"decoder_sparse_step": 1.5}, TypeError, "decoder_sparse_step"),
    ("qwen3-30b-a3b", {"mlp_only_layers": [1.5]}, TypeError, "mlp_only_layers"),
    # the key as the file spells it; qk_nope_head_dim: 0 does not blame rope_head_dim
    ("gpt2", {"n_layer": -1}, ValueError, "'n_layer'"),
    ("gpt2", {"n_head": 7}, ValueError, "n_head must divide n_embd"),
    ("deepseek-v3", {"qk_nope_head_dim": 0}, ValueError, "'qk_nope_head_dim'"),
    ("llama-3-8b", {"num_attention_heads": 4}, ValueError, "num_key_value_heads \\(8\\) must be <= "
                                                             "num_attention_heads \\(4\\)"),
    ("deepseek-v3", {"num_experts_per_tok": 300}, ValueError, "num_experts_per_tok \\(300\\) must be <= "
                                                               "n_routed_experts \\(256\\)"),
    # null where transformers' configuration refuses it
    ("llama-3-8b", {"intermediate_size": None}, TypeError, "intermediate_size"),
])
def test_issue_24_cases_are_refused_naming_the_key(name: str | None, changes: dict[str, Any], exc: type,
                                                   key: str) -> None:
    d = {**(_published(name) if name else {}), **changes}
    with pytest.raises(exc, match=key) as err:
        from_hf_config(d)
    assert "\n" not in str(err.value)


def test_null_means_what_transformers_makes_of_it() -> None:
    """Where transformers' configuration accepts null, llmmath reads it the same way: GPT-2's
    n_inner: null is 4h, a null window is no window, Llama's null num_key_value_heads is one KV
    head per query head, DeepSeek-V2-Lite's null q_lora_rank a full query projection."""
    gpt2 = from_hf_config({**_published("gpt2"), "n_inner": None})
    assert gpt2.ffn_size == 4 * 768
    assert from_hf_config({**_published("mistral-7b"), "sliding_window": None}).sliding_window is None
    assert from_hf_config({**_published("llama-3-8b"), "num_key_value_heads": None}).n_kv_heads == 32
    assert from_hf_config({**_published("gemma-2-9b"), "sliding_window": None}).attention_types == ()
    with pytest.raises(TypeError, match="'num_key_value_heads' must be an integer, got null"):
        from_hf_config({**_published("gemma-2-9b"), "num_key_value_heads": None})  # Gemma2Config: int


def test_qwen_moe_without_experts_is_the_dense_model() -> None:
    """num_experts: 0 makes every Qwen MoE layer a dense MLP of intermediate_size (as
    Qwen3MoeDecoderLayer decides); tests/test_fuzz_configs.py checks the count against transformers."""
    cfg = from_hf_config({**_published("qwen3-30b-a3b"), "num_experts": 0})
    assert not cfg.is_moe and cfg.layer_counts == {("full", "dense"): 48} and cfg.ffn_size == 6144
