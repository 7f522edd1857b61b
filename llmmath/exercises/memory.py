"""Checkable exercises of the chapter ``memory``.

The chapter "Memory: what a GPU must hold to train and to serve a transformer"
(``chapters/memory.ipynb``). Registered by :mod:`llmmath.check` under the chapter's slug (this
module's name with hyphens). Each part computes its expected value with llmmath when an answer is
checked: no answer is stored here.
"""

from __future__ import annotations

from typing import Any

from ..check import SIG3, Exercise, Part
from ..flops import training_flops
from ..memory import activation_bytes, kv_cache_bytes, recompute_flops, training_state_bytes
from ..presets import preset


def _state_bytes(optimizer: str, **kw: Any) -> float:
    n = 16 * 10**9  # many parameters, so that a sharded count divides evenly
    return training_state_bytes(n, "mixed", optimizer, **kw)["total"] / n


def _kv_cache_gb(kv_heads: int | None = None, window: bool = False) -> float:
    cfg = preset("mistral-7b")  # v0.1: a sliding window on every layer
    if not window:
        cfg = cfg.replace(sliding_window=None)  # v0.2 and later: no sliding window
    return kv_cache_bytes(cfg if kv_heads is None else cfg.replace(n_kv_heads=kv_heads), 4, 32768) / 1e9


def _llama_act_gb(fused: bool) -> float:
    # s = 2048, half the training length: the chapter works Llama 2 7B out at s = 4096
    act = activation_bytes(preset("llama2-7b"), 1, 2048, dropout=False, implementation="hf-llama",
                           flash_attention=fused)
    return act["total"] / 1e9


def _recompute_share(flash: bool) -> float:
    cfg = preset("llama2-7b")
    rerun = recompute_flops(cfg, 1, 4096, recompute="none" if flash else "selective", flash_attention=flash)
    return rerun / training_flops(cfg, 1, 4096)


def _gemma3_kv(what: str) -> float:
    cfg = preset("gemma-3-27b")
    every_global = cfg.replace(attention_types=(), sliding_window=None)
    if what == "same":
        return max(n for n in range(1, 4 * cfg.sliding_window)
                   if kv_cache_bytes(cfg, 1, n) == kv_cache_bytes(every_global, 1, n))
    return kv_cache_bytes(cfg if what == "kv" else every_global, 1, cfg.max_position) / 1e9


def _mla_cache(what: str) -> float:
    cfg = preset("deepseek-v3")
    if what == "groups":  # GQA heads of DeepSeek's d_h (the keys' width without rotary part)
        return (cfg.kv_lora_rank + cfg.rope_head_dim) / (2 * (cfg.head_dim - cfg.rope_head_dim))
    return kv_cache_bytes(cfg, 1, 1, mla=what)


def _kv_shrink(kv_heads: int | None) -> float:
    cfg = preset("llama2-70b")
    mha = kv_cache_bytes(cfg.replace(n_kv_heads=cfg.n_heads), 1, 4096)
    return mha / kv_cache_bytes(cfg if kv_heads is None else cfg.replace(n_kv_heads=kv_heads), 1, 4096)


EXERCISES = [
    Exercise("mem-ex-momentum", "mem-exercises", "Exercises", "Mixed precision, SGD with momentum.",
             (Part("bytes_per_param", "model-state bytes per parameter", lambda: _state_bytes("momentum")),
              Part("zero2_bytes", "bytes per parameter per GPU with ZeRO stage 2 over 16 GPUs",
                 lambda: _state_bytes("momentum", zero_stage=2, n_gpus=16), SIG3))),
    Exercise("mem-ex-mistral", "mem-kv-variants", "Sliding windows, local and global layers, latent attention",
             "Mistral 7B v0.2 (no sliding window), 16-bit cache, 4 sequences of 32768 tokens; then v0.1.",
             (Part("kv_gb", "KV cache in GB (1e9 bytes)", _kv_cache_gb, SIG3),
              Part("kv_mha_gb", "the same with 32 key/value heads, in GB", lambda: _kv_cache_gb(32), SIG3),
              Part("kv_v01_gb", "the cache of v0.1 (a 4096-token window on every layer) as transformers "
                 "keeps it, in GB", lambda: _kv_cache_gb(window=True), SIG3))),
    Exercise("mem-ex-8bit", "mem-exercises", "Exercises", "Mixed precision, Adam with 8-bit moments.",
             (Part("bytes_per_param", "model-state bytes per parameter",
                 lambda: _state_bytes("adam", optimizer_bytes_per_value=1)),)),
    Exercise("mem-ex-mqa", "mem-exercises", "Exercises", "Llama 2 70B.",
             (Part("mqa_factor", "MHA cache / MQA cache", lambda: _kv_shrink(1), SIG3),
              Part("gqa_factor", "MHA cache / the model's GQA cache", lambda: _kv_shrink(None), SIG3))),
    Exercise("mem-ex-llama-act", "mem-check", "Check against PyTorch: what a GPT-2 block really saves",
             "Llama 2 7B in transformers, BF16, no dropout, b = 1, s = 2048, all layers.",
             (Part("eager_gb", "activations with eager attention, in GB", lambda: _llama_act_gb(False), SIG3),
              Part("fused_gb", "activations with SDPA's fused kernel, in GB", lambda: _llama_act_gb(True), SIG3))),
    Exercise("mem-ex-recompute", "mem-recompute-flops", "What recomputation costs in FLOPs",
             "Llama 2 7B, b = 1, s = 4096, LM head included.",
             (Part("selective_share", "FLOPs re-run by selective recomputation / training_flops (a fraction)",
                 lambda: _recompute_share(False), SIG3),
              Part("flash_share", "FLOPs re-run by FlashAttention / training_flops (a fraction)",
                 lambda: _recompute_share(True), SIG3))),
    Exercise("mem-ex-gemma", "mem-kv-variants", "Sliding windows, local and global layers, latent attention",
             "Gemma 3 27B, 16-bit cache, one sequence of 131072 tokens.",
             (Part("kv_gb", "KV cache in GB (1e9 bytes)", lambda: _gemma3_kv("kv"), SIG3),
              Part("kv_global_gb", "the same if every layer were global, in GB", lambda: _gemma3_kv("global"), SIG3),
              Part("same_up_to", "the largest context (tokens) at which the two caches are equal",
                 lambda: _gemma3_kv("same")))),
    Exercise("mem-ex-mla", "mem-kv-variants", "Sliding windows, local and global layers, latent attention",
             "DeepSeek-V3, 16-bit KV cache.",
             (Part("latent_bytes", "bytes per token of the latent cache", lambda: _mla_cache("latent")),
              Part("expanded_bytes", "bytes per token of the expanded keys and values", lambda: _mla_cache("expanded")),
              Part("gqa_heads", "key/value heads of width 128 with the same cache per layer",
                 lambda: _mla_cache("groups"), SIG3))),
]


# The questions of checkable exercises that are graded by hand (the assignments collect them).
WRITTEN = {
    'mem-ex-llama-act': (
        "Which terms does the fused kernel remove, and what does it keep instead?",
    ),
    'mem-ex-recompute': (
        "Show that selective recomputation re-runs a share $s/(18h + 3s)$ of the step's matrix-multiply "
        "FLOPs, and FlashAttention half of it.",
    ),
}

# The chapter's exercises without a checkable part: graded by hand only.
HAND_GRADED = ('mem-ex-sstar', 'mem-ex-logits', 'mem-ex-relu', 'mem-ex-layernorm-rows', 'mem-ex-early-stop')
