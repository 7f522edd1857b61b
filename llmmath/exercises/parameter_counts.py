"""Checkable exercises of the chapter ``parameter-counts``.

The chapter "Counting parameters" (``chapters/parameter-counts.ipynb``). Registered by
:mod:`llmmath.check` under the chapter's slug (this module's name with hyphens). Each part computes
its expected value with llmmath when an answer is checked: no answer is stored here.
"""

from __future__ import annotations

from typing import Any

from ..check import SIG3, Exercise, Part
from ..config import TransformerConfig, from_hf_config
from ..memory import kv_cache_bytes
from ..params import active_param_count, param_breakdown, param_count
from ..presets import preset


def _gptj() -> int:
    return param_count(TransformerConfig(
        n_layers=28, hidden_size=4096, n_heads=16, vocab_size=50400, position="rotary", norms_per_layer=1,
        qkv_bias=False, out_bias=False, tie_embeddings=False, lm_head_bias=True, parallel_block=True))


_LLAMA3 = {"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
           "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256}


def _llama3(kv_heads: int) -> int:
    return param_count(from_hf_config({**_LLAMA3, "num_key_value_heads": kv_heads}))


def _preset_params(name: str, **changes: Any) -> int:
    cfg = preset(name)
    return param_count(cfg.replace(**changes) if changes else cfg)


def _emb_depth() -> int:
    depth = 1
    while True:
        cfg = TransformerConfig(n_layers=depth, hidden_size=1024, n_heads=16, vocab_size=50257, max_position=2048)
        b = param_breakdown(cfg)
        if (b["token_embedding"] + b["position_embedding"]) / param_count(cfg) < 0.1:
            return depth
        depth += 1


def _moe_experts() -> int:
    base = preset("mistral-7b")
    return next(e for e in range(2, 256) if param_count(base.replace(n_experts=e, experts_per_token=2)) > 100e9)


def _moe_active() -> int:
    return active_param_count(preset("mistral-7b").replace(n_experts=_moe_experts(), experts_per_token=2))


def _mla_lite(what: str) -> float:
    cfg = preset("deepseek-v2-lite")
    if what == "weights":  # the matrices of one attention block, its latent norm aside
        return param_breakdown(cfg)["attention"] // cfg.n_layers
    latent = kv_cache_bytes(cfg, 1, 32768, 2)
    return latent if what == "cache" else kv_cache_bytes(cfg, 1, 32768, 2, mla="expanded") / latent


def _shared_expert(what: str) -> int:
    cfg = preset("qwen1.5-moe-a2.7b")
    b = param_breakdown(cfg)
    wide = cfg.shared_ffn_size // cfg.expert_ffn_size
    return {"block": (b["mlp"] + b["shared_experts"] + b["router"]) // cfg.n_layers,
            "active": active_param_count(cfg), "wide": wide, "k": cfg.experts_per_token + wide}[what]


def _v3_all_sparse(active: bool) -> int:
    cfg = preset("deepseek-v3").replace(mlp_types=())  # no layer pattern: every layer sparse
    return active_param_count(cfg) if active else param_count(cfg)


def _qk_norm_params(name: str) -> int:
    cfg = preset(name)
    return param_count(cfg) - param_count(cfg.replace(qk_norm="none"))


EXERCISES = [
    Exercise("params-ex-gptj", "params-exercises", "Exercises", "GPT-J-6B as described.",
             (Part("gptj_params", "its parameter count", _gptj),)),
    Exercise("params-ex-llama3", "params-exercises", "Exercises", "Llama-3-8B as described.",
             (Part("llama3_params", "its parameter count", lambda: _llama3(8)),
              Part("mha_extra", "how many more parameters with 32 key/value heads", lambda: _llama3(32) - _llama3(8)))),
    Exercise("params-ex-bert-large", "params-exercises", "Exercises", "BERT-large as described.",
             (Part("bert_large_params", "its exact parameter count", lambda: _preset_params("bert-large")),)),
    Exercise("params-ex-depth", "params-exercises", "Exercises", "V = 50257, S = 2048, h = 1024 (16 heads).",
             (Part("min_layers", "the smallest L with embeddings < 10% of the parameters", _emb_depth),)),
    Exercise("params-ex-moe", "params-exercises", "Exercises", "Mistral-7B with E experts, k = 2.",
             (Part("n_experts", "the smallest E with more than 100B parameters", _moe_experts),
              Part("active_params", "the active parameter count at that E", _moe_active))),
    Exercise("params-ex-tie", "params-exercises", "Exercises", "Qwen2-0.5B and Qwen2-7B.",
             (Part("qwen05_untied", "parameters of Qwen2-0.5B with an untied head",
                 lambda: _preset_params("qwen2-0.5b", tie_embeddings=False)),
              Part("qwen7_tied", "parameters of Qwen2-7B with a tied head",
                 lambda: _preset_params("qwen2-7b", tie_embeddings=True)))),
    Exercise("params-ex-mla", "params-mla", "Multi-head latent attention",
             "DeepSeek-V2-Lite; a 16-bit cache of one sequence of 32,768 tokens.",
             (Part("attention_weights", "weights of the matrices of one attention block (its norm aside)",
                 lambda: _mla_lite("weights")),
              Part("cache_bytes", "bytes of the latent cache over all layers", lambda: _mla_lite("cache")),
              Part("cache_ratio", "the cache with the heads decompressed / the latent cache",
                 lambda: _mla_lite("ratio"), SIG3))),
    Exercise("params-ex-shared", "params-moe", "Mixture of experts: shared experts, dense layers, active parameters",
             "Qwen1.5-MoE-A2.7B as described.",
             (Part("moe_block", "parameters of one sparse MLP block (experts, shared expert, router, gate)",
                 lambda: _shared_expert("block")),
              Part("shared_active", "the model's active parameter count", lambda: _shared_expert("active")),
              Part("shared_width", "the shared expert's width in routed experts", lambda: _shared_expert("wide")),
              Part("k_equivalent", "routed experts per token for the same MLP width without it",
                 lambda: _shared_expert("k")))),
    Exercise("params-ex-dense-first", "params-moe",
             "Mixture of experts: shared experts, dense layers, active parameters",
             "DeepSeek-V3 with first_k_dense_replace = 0.",
             (Part("total_all_sparse", "its parameter count", lambda: _v3_all_sparse(False)),
              Part("active_all_sparse", "its active parameter count", lambda: _v3_all_sparse(True)))),
    Exercise("params-ex-qknorm", "params-norms", "Where the norms sit: QK-norm and Gemma 2's four norms",
             "Qwen3-235B-A22B and OLMo-2-13B, all layers.",
             (Part("qwen3_qk", "QK-norm parameters of Qwen3-235B-A22B", lambda: _qk_norm_params("qwen3-235b-a22b")),
              Part("olmo2_qk", "QK-norm parameters of OLMo-2-13B", lambda: _qk_norm_params("olmo-2-13b")))),
]


# The questions of checkable exercises that are graded by hand (the assignments collect them).
WRITTEN = {
    'params-ex-gptj': (
        "Show your count by hand, term by term (embeddings, attention, MLP, norms, head).",
    ),
}

# The chapter's exercises without a checkable part: graded by hand only.
HAND_GRADED = ('params-ex-swiglu',)
