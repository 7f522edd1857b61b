"""TransformerConfig validation and from_hf_config defaults, checked against ``transformers``.

``from_hf_config({"model_type": mt})`` must describe the model that
``transformers.AutoConfig.for_model(mt)`` builds: same shapes and the same exact parameter count
(the ``transformers`` model is built on the ``meta`` device, so nothing is allocated).
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from llmmath.config import SUPPORTED_MODEL_TYPES, TransformerConfig, from_hf_config
from llmmath.params import param_count

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
transformers.logging.set_verbosity_error()
logging.getLogger("transformers").setLevel(logging.ERROR)


def _hf_default(mt: str) -> tuple[Any, int]:
    config = transformers.AutoConfig.for_model(mt)
    with torch.device("meta"):
        if mt == "bert":
            model = transformers.AutoModel.from_config(config)
        else:
            model = transformers.AutoModelForCausalLM.from_config(config)
    return config, sum(p.numel() for p in model.parameters())


# attribute names of the transformers configs, per TransformerConfig field
_HF_NAMES = {
    "n_layers": ("num_hidden_layers", "n_layer"),
    "hidden_size": ("hidden_size", "n_embd"),
    "n_heads": ("num_attention_heads", "n_head"),
    "vocab_size": ("vocab_size",),
}


@pytest.mark.parametrize("mt", SUPPORTED_MODEL_TYPES)
def test_defaults_match_transformers(mt: str) -> None:
    config, n_params = _hf_default(mt)
    cfg = from_hf_config({"model_type": mt})
    assert param_count(cfg) == n_params
    for field, names in _HF_NAMES.items():
        hf_value = next(getattr(config, n) for n in names if hasattr(config, n))
        assert getattr(cfg, field) == hf_value, field
    assert cfg.tie_embeddings == bool(config.tie_word_embeddings) or mt == "bert"
    assert cfg.family == mt and cfg.causal == (mt != "bert")


def test_supported_model_types_are_known_to_transformers() -> None:
    assert set(SUPPORTED_MODEL_TYPES) <= set(transformers.CONFIG_MAPPING.keys())


# ---- what from_hf_config reads (beyond the defaults) -------------------------------------------

def test_opt_positions_offset_and_projection() -> None:
    cfg = from_hf_config({"model_type": "opt", "hidden_size": 1024, "num_attention_heads": 16,
                          "word_embed_proj_dim": 512, "do_layer_norm_before": False})
    assert cfg.position_offset == 2 and cfg.embedding_dim == 512 and not cfg.final_norm


@pytest.mark.parametrize("d, kv, norms, parallel", [
    ({"multi_query": True, "parallel_attn": True}, 1, 1, True),  # Falcon-7B
    ({"multi_query": False, "parallel_attn": False}, 71, 2, False),
    ({"new_decoder_architecture": True, "num_kv_heads": 8, "num_attention_heads": 128,
      "hidden_size": 8192}, 8, 2, True),  # Falcon-40B: ln_attn and ln_mlp
    ({"parallel_attn": True, "num_ln_in_parallel_attn": 2}, 1, 2, True),
])
def test_falcon_variants(d: dict[str, Any], kv: int, norms: int, parallel: bool) -> None:
    cfg = from_hf_config({"model_type": "falcon", **d})
    assert (cfg.n_kv_heads, cfg.norms_per_layer, cfg.parallel_block) == (kv, norms, parallel)


def test_head_dim_floor_where_the_family_allows_it() -> None:
    # Qwen2, Mistral, Gemma, Phi take head_dim = h // a when a does not divide h; GPT-2 and LLaMA refuse.
    cfg = from_hf_config({"model_type": "qwen2", "hidden_size": 20, "num_attention_heads": 3,
                          "num_key_value_heads": 1})
    assert cfg.head_dim == 6 and cfg.q_dim == 18
    for d in ({"model_type": "gpt2", "n_embd": 20, "n_head": 3},
              {"model_type": "llama", "hidden_size": 20, "num_attention_heads": 3}):
        with pytest.raises(ValueError, match="n_heads"):
            from_hf_config(d)


# ---- errors ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("d, match", [
    ({"n_layer": 2}, "model_type"),
    ({"model_type": "t5"}, "model_type"),
    ({"model_type": "llama", "hidden_act": "swiglu2"}, "activation"),
    ({"model_type": "gpt2", "activation_function": "mish"}, "activation"),
    ({"model_type": "llama", "num_attention_heads": 32, "num_key_value_heads": 5}, "n_kv_heads"),
    ({"model_type": "falcon", "new_decoder_architecture": True, "num_kv_heads": 3}, "n_kv_heads"),
    ({"model_type": "bert", "position_embedding_type": "relative_key"}, "position_embedding_type"),
    ({"model_type": "bert", "add_cross_attention": True}, "add_cross_attention"),
    ({"model_type": "opt", "layer_norm_elementwise_affine": False}, "layer_norm_elementwise_affine"),
    ({"model_type": "phi", "qk_layernorm": True}, "qk_layernorm"),
    ({"model_type": "gpt2", "n_layer": 0}, "n_layers"),
])
def test_from_hf_config_rejects(d: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        from_hf_config(d)


def test_from_hf_config_type_errors() -> None:
    with pytest.raises(TypeError, match="d must be a dict"):
        from_hf_config([("model_type", "gpt2")])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="n_layers"):
        from_hf_config({"model_type": "gpt2", "n_layer": 2.0})


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
