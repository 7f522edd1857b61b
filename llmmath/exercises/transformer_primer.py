"""Checkable exercises of the chapter ``transformer-primer``.

The chapter "A transformer block, weight by weight" (``chapters/transformer-primer.ipynb``).
Registered by :mod:`llmmath.check` under the chapter's slug (this module's name with hyphens).
Each part computes its expected value with llmmath when an answer is checked: no answer is stored
here.
"""

from __future__ import annotations

from ..check import SIG3, Exercise, Part
from ..config import TransformerConfig
from ..inference import decode_flops, prefill_flops
from ..memory import kv_cache_bytes
from ..params import layer_param_count, param_breakdown, param_count
from ..presets import preset


def _per_layer(cfg: TransformerConfig, key: str) -> int:
    return param_breakdown(cfg)[key] // cfg.n_layers


def _attention_share() -> float:
    cfg = preset("llama2-70b")
    return _per_layer(cfg, "attention") / layer_param_count(cfg)


def _attention_mha() -> int:
    cfg = preset("llama2-70b")
    return _per_layer(cfg.replace(n_kv_heads=cfg.n_heads), "attention")


def _mlp_ratio() -> float:
    cfg = preset("qwen2.5-7b")
    return _per_layer(cfg, "mlp") / (8 * cfg.hidden_size**2)


def _tables_share() -> float:
    cfg = preset("gpt2-medium")
    bd = param_breakdown(cfg)
    return (bd["token_embedding"] + bd["position_embedding"]) / param_count(cfg)


def _kv(what: str) -> int:
    cfg = preset("llama-3-70b")
    if what == "values":  # per token, over all layers: the cache of one token in 1-byte values
        return kv_cache_bytes(cfg, 1, 1, 1)
    if what == "mha":
        cfg = cfg.replace(n_kv_heads=cfg.n_heads)
    return kv_cache_bytes(cfg, 8, 8192)


def _cache_ratio() -> float:
    cfg = preset("gpt2")
    return prefill_flops(cfg, 1, 1024) / decode_flops(cfg, 1, 1023)


EXERCISES = [
    Exercise("primer-ex-gpt2xl", "primer-stack", "A model is a stack of blocks",
             "GPT-2 XL: L = 48, h = 1600, a = 25, d_ff = 4h, biases, LayerNorm, V = 50257, S = 1024, tied.",
             (Part("block_params", "parameters of one block", lambda: layer_param_count(preset("gpt2-xl"))),
              Part("n_params", "parameters N of the whole model", lambda: param_count(preset("gpt2-xl"))))),
    Exercise("primer-ex-llama2-70b", "primer-attention", "Attention: what the heads share",
             "Llama 2 70B: h = 8192, a = 64, a_kv = 8, d_head = 128, SwiGLU d_ff = 28672, RMSNorm, no biases.",
             (Part("block_params", "parameters of one block", lambda: layer_param_count(preset("llama2-70b"))),
              Part("attention_share", "attention weights / parameters of the block (a fraction)",
                   _attention_share, SIG3),
              Part("attention_mha", "attention weights of one block with a_kv = a", _attention_mha))),
    Exercise("primer-ex-swiglu", "primer-mlp", "The MLP: why three matrices",
             "Qwen2.5-7B: h = 3584, SwiGLU MLP of width d_ff = 18944, no MLP biases.",
             (Part("mlp_ratio", "MLP weights / the 8h^2 weights of a 4h GeLU MLP", _mlp_ratio, SIG3),)),
    Exercise("primer-ex-tied", "primer-head", "The embedding, the LM head, and tying them",
             "Llama 3 70B (untied head) and GPT-2 medium (tied).",
             (Part("tied_saving", "parameters saved by tying Llama 3 70B's head",
                   lambda: param_breakdown(preset("llama-3-70b"))["lm_head"]),
              Part("tied_share", "that saving / N of Llama 3 70B (a fraction)",
                   lambda: param_breakdown(preset("llama-3-70b"))["lm_head"] / param_count(preset("llama-3-70b")),
                   SIG3),
              Part("tables_share", "GPT-2 medium's token and position tables / its N (a fraction)",
                   _tables_share, SIG3))),
    Exercise("primer-ex-kv70b", "primer-kv", "Generating text, and the KV cache",
             "Llama 3 70B: L = 80, a_kv = 8, d_head = 128; b = 8 sequences of n = 8192 tokens, BF16 (q = 2).",
             (Part("values_per_token", "values the cache holds per token, over all layers", lambda: _kv("values")),
              Part("cache_bytes", "bytes of the cache", lambda: _kv("bytes")),
              Part("cache_bytes_mha", "bytes of the cache with a_kv = a = 64", lambda: _kv("mha")))),
    Exercise("primer-ex-cache-flops", "primer-kv", "Generating text, and the KV cache",
             "GPT-2 generates its 1,024th token: prefill_flops(cfg, 1, 1024) / decode_flops(cfg, 1, 1023).",
             (Part("ratio", "FLOPs of the step without a cache / with it", _cache_ratio, SIG3),)),
]

# The chapter's exercises without a checkable part: graded by hand only.
HAND_GRADED = ("primer-ex-rope",)
