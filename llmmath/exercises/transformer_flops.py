"""Checkable exercises of the chapter ``transformer-flops``.

The chapter "How many FLOPs does it take to train a transformer?" (``chapters/transformer-
flops.ipynb``). Registered by :mod:`llmmath.check` under the chapter's slug (this module's name with
hyphens). Each part computes its expected value with llmmath when an answer is checked: no answer is
stored here.
"""

from __future__ import annotations

from ..check import SIG3, Exercise, Part
from ..flops import attention_pairs, flops_breakdown, hfu, mfu, training_days, training_flops, training_flops_per_token
from ..hardware import gpu_peak_flops
from ..params import param_count
from ..presets import preset


def _llama2_7b_forward(what: str) -> float:
    cfg = preset("llama2-7b")
    bd = flops_breakdown(cfg, 1, 4096)
    fwd = sum(bd.values())
    if what == "forward":
        return fwd
    if what == "excess":  # an integer: every product's FLOPs are a multiple of s
        return fwd // 4096 - 2 * param_count(cfg)
    return (bd["attn_scores"] + bd["attn_values"]) / fwd


def _gqa_saving(relative: bool) -> float:
    cfg = preset("llama2-70b")
    gqa = training_flops_per_token(cfg, seq=4096)
    mha = training_flops_per_token(cfg.replace(n_kv_heads=cfg.n_heads), seq=4096)
    return 1 - gqa / mha if relative else mha - gqa


def _chinchilla_days(gpu: str) -> float:
    return training_days(1.4e12, 70e9, 1024, gpu_peak_flops(gpu, "bf16_tensor"), 0.4)


def _utilisation(kind: str) -> float:
    func = mfu if kind == "mfu" else hfu
    return func(2e6, preset("llama2-13b"), 512, gpu_peak_flops("H100", "bf16_tensor"), seq=4096)


def _fused(what: str) -> float:
    if what == "gpt3_extra":
        cfg = preset("gpt3-175b")
        return training_flops(cfg, 1, 2048, attention="fused") / training_flops(cfg, 1, 2048) - 1
    cfg = preset("deepseek-v3")  # the attention core's backward / forward, from whole-model counts
    bd = flops_breakdown(cfg, 1, 64)
    core_forward = bd["attn_scores"] + bd["attn_values"]
    recomputed = training_flops(cfg, 1, 64, attention="fused") - training_flops(cfg, 1, 64)
    return (2 * core_forward + recomputed) / core_forward


def _tile_fraction(seq: int, window: int | None) -> float:
    return attention_pairs(seq, window=window, skip_masked=True, tile=128) / seq**2


def _deepseek_v3(what: str) -> int:
    # counts, not ratios to 6N or shares: the reference page's zoo prints such ratios and shares
    # for every other preset, and some lie within three figures of DeepSeek-V3's
    cfg = preset("deepseek-v3")
    if what == "per_token":
        return training_flops(cfg, 1, 4096) // 4096
    bd = flops_breakdown(cfg, 1, 4096)
    return (bd["attn_scores"] + bd["attn_values"]) // 4096


EXERCISES = [
    Exercise("flops-ex-llama", "flops-exercises", "Exercises", "Llama 2 7B, one sequence of 4096 tokens.",
             (Part("forward_flops", "forward FLOPs", lambda: _llama2_7b_forward("forward")),
              Part("excess_2n", "forward FLOPs per token minus 2N", lambda: _llama2_7b_forward("excess")),
              Part("attention_share", "share of the two attention products",
                   lambda: _llama2_7b_forward("share"), SIG3))),
    Exercise("flops-ex-gqa", "flops-exercises", "Exercises", "Llama 2 70B, s = 4096, training FLOPs per token.",
             (Part("saving", "FLOPs per token saved by GQA", lambda: _gqa_saving(False), SIG3),
              Part("saving_rel", "the saving as a fraction of the MHA cost", lambda: _gqa_saving(True), SIG3))),
    Exercise("flops-ex-chinchilla", "flops-exercises", "Exercises", "N = 70e9, D = 1.4e12, 1024 GPUs, MFU 40%.",
             (Part("days_a100", "training days on A100s (BF16)", lambda: _chinchilla_days("A100"), SIG3),
              Part("days_h100", "training days on H100s (BF16)", lambda: _chinchilla_days("H100"), SIG3))),
    Exercise("flops-ex-mfu", "flops-exercises", "Exercises", "Llama 2 13B, s = 4096, 512 H100, 2e6 tokens/s.",
             (Part("mfu", "model FLOPs utilisation (a fraction, not %)", lambda: _utilisation("mfu"), SIG3),
              Part("hfu", "hardware FLOPs utilisation (a fraction)", lambda: _utilisation("hfu"), SIG3))),
    Exercise("flops-ex-fused", "flops-fused", "Fused attention: the backward pass recomputes the scores",
             "GPT-3 175B at s = 2048; DeepSeek-V3's attention core.",
             (Part("gpt3_extra", "training FLOPs with fused attention / with eager attention - 1",
                 lambda: _fused("gpt3_extra"), SIG3),
              Part("mla_ratio", "backward / forward FLOPs of DeepSeek-V3's fused attention core",
                 lambda: _fused("mla_ratio"), SIG3))),
    Exercise("flops-ex-tiles", "flops-tiles", "Tiles, not entries", "Causal mask, tiles of B = 128.",
             (Part("fraction_2048", "fraction of the s^2 pairs computed at s = 2048",
                   lambda: _tile_fraction(2048, None), SIG3),
              Part("fraction_window", "the fraction with a window of 1024 keys at s = 8192",
                 lambda: _tile_fraction(8192, 1024), SIG3))),
    Exercise("flops-ex-deepseek", "flops-moe-mla", "Mixtures of experts and latent attention: DeepSeek-V3",
             "DeepSeek-V3 at s = 4096, eager attention, no recomputation.",
             (Part("flops_per_token", "training FLOPs per token", lambda: _deepseek_v3("per_token")),
              Part("attention_per_token", "forward FLOPs per token in the two attention products",
                 lambda: _deepseek_v3("attention")))),
]


# The questions of checkable exercises that are graded by hand (the assignments collect them).
WRITTEN = {
    'flops-ex-gqa': (
        "Why does the saving not depend on $s$?",
    ),
    'flops-ex-mfu': (
        "Which of MFU and HFU should be used to compare against a run without recomputation, and why?",
    ),
    'flops-ex-fused': (
        "Derive the ratio of a fused attention's backward to its forward FLOPs from the five products of its "
        "backward pass.",
    ),
    'flops-ex-tiles': (
        "Show that the tiled kernel computes $(s + B)/(2s)$ of the $s^2$ pairs when $B$ divides $s$.",
    ),
}

# The chapter's exercises without a checkable part: graded by hand only.
HAND_GRADED = ('flops-ex-gated', 'flops-ex-moe', 'flops-ex-crossover', 'flops-ex-causal', 'flops-ex-recompute')
