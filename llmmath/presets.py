"""Published configurations of the models the book discusses.

Models with a Hugging Face implementation are stored as the relevant fields of their published
``config.json`` and read with :func:`llmmath.from_hf_config`, so a preset is exactly what the
reference implementation builds. The others (GPT-3, Qwen-1.8B) are written as
:class:`~llmmath.TransformerConfig` with the shapes their papers publish.
Each preset's ``source`` field names where the numbers come from. The 2023-2026 models (Llama 3,
Qwen2.5/3 and their MoE, Gemma 2/3, Phi-3/4, DeepSeek-V2/V3, OLMo 2, StarCoder 2, Command-R, T5,
RoBERTa, ...) include four whole published ``config.json`` files (``llmmath/hf_configs``).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from importlib import resources
from types import MappingProxyType
from typing import Any

from .config import TransformerConfig, from_hf_config

__all__ = ["PRESETS", "preset", "preset_names"]

_HUB = "config.json of the Hugging Face checkpoint"


def _gpt2(n_layer: int, n_embd: int, n_head: int) -> dict[str, Any]:
    return {"model_type": "gpt2", "n_layer": n_layer, "n_embd": n_embd, "n_head": n_head,
            "vocab_size": 50257, "n_positions": 1024}


def _gpt3(name: str, n_layers: int, d_model: int, n_heads: int, d_head: int) -> TransformerConfig:
    # GPT-3 follows GPT-2's architecture: learned positions (context 2048), LayerNorm, biases,
    # d_ff = 4 d_model, tied embeddings, vocabulary 50257 (Brown et al. 2020, section 2.1, Table 2.1).
    return TransformerConfig(
        name=name, family="gpt3", n_layers=n_layers, hidden_size=d_model, n_heads=n_heads,
        head_dim=d_head, vocab_size=50257, ffn_size=4 * d_model, activation="gelu",
        max_position=2048, source="Brown et al. (2020), Table 2.1",
    )


def _bert(layers: int, h: int, heads: int, vocab: int = 30522) -> dict[str, Any]:
    return {"model_type": "bert", "num_hidden_layers": layers, "hidden_size": h, "num_attention_heads": heads,
            "intermediate_size": 4 * h, "vocab_size": vocab, "max_position_embeddings": 512,
            "type_vocab_size": 2}


def _neox(layers: int, h: int, heads: int, vocab: int = 50304) -> dict[str, Any]:
    return {"model_type": "gpt_neox", "num_hidden_layers": layers, "hidden_size": h,
            "num_attention_heads": heads, "intermediate_size": 4 * h, "vocab_size": vocab,
            "max_position_embeddings": 2048, "rotary_pct": 0.25, "use_parallel_residual": True,
            "tie_word_embeddings": False}


def _opt(layers: int, h: int, heads: int, **extra: Any) -> dict[str, Any]:
    return {"model_type": "opt", "num_hidden_layers": layers, "hidden_size": h,
            "num_attention_heads": heads, "ffn_dim": 4 * h, "vocab_size": 50272,
            "max_position_embeddings": 2048, "word_embed_proj_dim": h, **extra}


def _llama(layers: int, h: int, heads: int, ffn: int, *, kv: int | None = None, vocab: int = 32000,
           ctx: int = 2048, model_type: str = "llama", **extra: Any) -> dict[str, Any]:
    d = {"model_type": model_type, "num_hidden_layers": layers, "hidden_size": h,
         "num_attention_heads": heads, "num_key_value_heads": kv or heads, "intermediate_size": ffn,
         "vocab_size": vocab, "max_position_embeddings": ctx, "tie_word_embeddings": False}
    d.update(extra)
    return d


# name -> (config.json fields or a TransformerConfig, source)
_RAW: dict[str, tuple[Any, str]] = {
    # GPT-2 (Radford et al. 2019, Table 2; config.json of openai-community/gpt2*)
    "gpt2": (_gpt2(12, 768, 12), f"Radford et al. (2019), Table 2; {_HUB} gpt2"),
    "gpt2-medium": (_gpt2(24, 1024, 16), f"Radford et al. (2019), Table 2; {_HUB} gpt2-medium"),
    "gpt2-large": (_gpt2(36, 1280, 20), f"Radford et al. (2019), Table 2; {_HUB} gpt2-large"),
    "gpt2-xl": (_gpt2(48, 1600, 25), f"Radford et al. (2019), Table 2; {_HUB} gpt2-xl"),
    # The GPT-3 paper's eight sizes (Brown et al. 2020, Table 2.1). GPT-3 13B is listed there with
    # d_model = 5140 but 40 heads of d_head = 128 (= 5120); the same paper's Table D.1 gives it
    # 12,850M parameters, which is d_model = 5120 (5140 would make 12,936M): 5120 is used.
    "gpt3-small": (_gpt3("gpt3-small", 12, 768, 12, 64), ""),
    "gpt3-medium": (_gpt3("gpt3-medium", 24, 1024, 16, 64), ""),
    "gpt3-large": (_gpt3("gpt3-large", 24, 1536, 16, 96), ""),
    # GPT-3 XL is listed with 24 heads of d_head = 128 (= 3072 != d_model = 2048), which would make
    # 1.52B parameters, not the 1.3B of the same table (Table D.1: 1,320M): the attention width
    # is d_model, i.e. 16 heads of 128 (2048 / 24 is not an integer). See chapter
    # parameter-counts.
    "gpt3-xl": (_gpt3("gpt3-xl", 24, 2048, 16, 128), ""),
    "gpt3-2.7b": (_gpt3("gpt3-2.7b", 32, 2560, 32, 80), ""),
    "gpt3-6.7b": (_gpt3("gpt3-6.7b", 32, 4096, 32, 128), ""),
    "gpt3-13b": (_gpt3("gpt3-13b", 40, 5120, 40, 128), ""),
    "gpt3-175b": (_gpt3("gpt3-175b", 96, 12288, 96, 128), ""),
    # BERT (Devlin et al. 2019; config.json of google-bert/bert-base-uncased, bert-base-chinese)
    "bert-base": (_bert(12, 768, 12), f"Devlin et al. (2019); {_HUB} bert-base-uncased"),
    "bert-base-chinese": (_bert(12, 768, 12, vocab=21128), f"{_HUB} bert-base-chinese (vocabulary 21128)"),
    "bert-large": (_bert(24, 1024, 16), f"Devlin et al. (2019); {_HUB} bert-large-uncased"),
    # Pythia (Biderman et al. 2023, Table 1; config.json of EleutherAI/pythia-*)
    "pythia-160m": (_neox(12, 768, 12), f"Biderman et al. (2023), Table 1; {_HUB} pythia-160m"),
    "pythia-1.4b": (_neox(24, 2048, 16), f"Biderman et al. (2023), Table 1; {_HUB} pythia-1.4b"),
    "pythia-6.9b": (_neox(32, 4096, 32, vocab=50432), f"Biderman et al. (2023), Table 1; {_HUB} pythia-6.9b"),
    "pythia-12b": (_neox(36, 5120, 40, vocab=50688), f"Biderman et al. (2023), Table 1; {_HUB} pythia-12b"),
    # OPT (Zhang et al. 2022, Table 1; config.json of facebook/opt-*)
    "opt-125m": (_opt(12, 768, 12), f"Zhang et al. (2022), Table 1; {_HUB} opt-125m"),
    "opt-350m": (_opt(24, 1024, 16, word_embed_proj_dim=512, do_layer_norm_before=False),
                 f"Zhang et al. (2022), Table 1; {_HUB} opt-350m"),
    "opt-1.3b": (_opt(24, 2048, 32), f"Zhang et al. (2022), Table 1; {_HUB} opt-1.3b"),
    "opt-175b": (_opt(96, 12288, 96), "Zhang et al. (2022), Table 1"),
    # LLaMA-1 (Touvron et al. 2023a, Table 2; d_ff as in the released checkpoints)
    "llama-7b": (_llama(32, 4096, 32, 11008), "Touvron et al. (2023a), Table 2; released params.json"),
    "llama-13b": (_llama(40, 5120, 40, 13824), "Touvron et al. (2023a), Table 2; released params.json"),
    "llama-33b": (_llama(60, 6656, 52, 17920), "Touvron et al. (2023a), Table 2; released params.json"),
    "llama-65b": (_llama(80, 8192, 64, 22016), "Touvron et al. (2023a), Table 2; released params.json"),
    # Llama 2 (Touvron et al. 2023b; config.json of meta-llama/Llama-2-*-hf)
    "llama2-7b": (_llama(32, 4096, 32, 11008, ctx=4096), f"Touvron et al. (2023b); {_HUB} Llama-2-7b-hf"),
    "llama2-13b": (_llama(40, 5120, 40, 13824, ctx=4096), f"Touvron et al. (2023b); {_HUB} Llama-2-13b-hf"),
    "llama2-70b": (_llama(80, 8192, 64, 28672, kv=8, ctx=4096),
                   f"Touvron et al. (2023b); {_HUB} Llama-2-70b-hf"),
    # Mistral and Mixtral (Jiang et al. 2023, 2024; config.json of mistralai/*-v0.1)
    "mistral-7b": (_llama(32, 4096, 32, 14336, kv=8, ctx=32768, model_type="mistral"),
                   f"Jiang et al. (2023), Table 1; {_HUB} Mistral-7B-v0.1"),
    "mixtral-8x7b": (_llama(32, 4096, 32, 14336, kv=8, ctx=32768, model_type="mixtral",
                            num_local_experts=8, num_experts_per_tok=2),
                     f"Jiang et al. (2024), Table 1; {_HUB} Mixtral-8x7B-v0.1"),
    # Qwen2 (Yang et al. 2024, Table 1; config.json of Qwen/Qwen2-*)
    "qwen2-0.5b": (_llama(24, 896, 14, 4864, kv=2, vocab=151936, ctx=32768, model_type="qwen2",
                          tie_word_embeddings=True), f"Yang et al. (2024), Table 1; {_HUB} Qwen2-0.5B"),
    "qwen2-7b": (_llama(28, 3584, 28, 18944, kv=4, vocab=152064, ctx=32768, model_type="qwen2"),
                 f"Yang et al. (2024), Table 1; {_HUB} Qwen2-7B"),
    # Gemma (Gemma Team 2024, Table 1; config.json of google/gemma-*)
    "gemma-2b": (_llama(18, 2048, 8, 16384, kv=1, vocab=256000, ctx=8192, model_type="gemma",
                        head_dim=256, tie_word_embeddings=True, hidden_act="gelu_pytorch_tanh"),
                 f"Gemma Team (2024), Table 1; {_HUB} gemma-2b"),
    "gemma-7b": (_llama(28, 3072, 16, 24576, kv=16, vocab=256000, ctx=8192, model_type="gemma",
                        head_dim=256, tie_word_embeddings=True, hidden_act="gelu_pytorch_tanh"),
                 f"Gemma Team (2024), Table 1; {_HUB} gemma-7b"),
    # Phi (Li et al. 2023; config.json of microsoft/phi-1_5, microsoft/phi-2)
    "phi-1.5": ({"model_type": "phi", "num_hidden_layers": 24, "hidden_size": 2048,
                 "num_attention_heads": 32, "intermediate_size": 8192, "vocab_size": 51200},
                f"Li et al. (2023); {_HUB} phi-1_5"),
    "phi-2": ({"model_type": "phi", "num_hidden_layers": 32, "hidden_size": 2560,
               "num_attention_heads": 32, "intermediate_size": 10240, "vocab_size": 51200},
              f"{_HUB} phi-2"),
    # Falcon (Almazrouei et al. 2023; config.json of tiiuae/falcon-7b, falcon-40b)
    "falcon-7b": ({"model_type": "falcon", "num_hidden_layers": 32, "hidden_size": 4544,
                   "num_attention_heads": 71, "multi_query": True, "parallel_attn": True,
                   "vocab_size": 65024}, f"Almazrouei et al. (2023); {_HUB} falcon-7b"),
    "falcon-40b": ({"model_type": "falcon", "num_hidden_layers": 60, "hidden_size": 8192,
                    "num_attention_heads": 128, "num_kv_heads": 8, "new_decoder_architecture": True,
                    "parallel_attn": True, "vocab_size": 65024},
                   f"Almazrouei et al. (2023); {_HUB} falcon-40b"),
}


# ---- the 2023-2026 model zoo ------------------------------------------------------------------
# Each entry is the relevant fields of the checkpoint's published config.json (key names as
# published; read by from_hf_config exactly as a pasted config.json would be). Four presets are
# the whole published file, shipped in llmmath/hf_configs/ (extra keys, nulls, a nested
# text_config). The source string names where each config was read and the second source its
# shapes were checked against. Kept apart from _RAW because tests/test_presets.py (not
# tests/test_params.py) checks these families against transformers.

_REPO_COPY = "(published config.json, copied verbatim in public repositories)"


def _hf_json(name: str) -> dict[str, Any]:
    """The whole published config.json of preset ``name`` from ``llmmath/hf_configs``."""
    text = resources.files(__package__).joinpath("hf_configs", f"{name}.json").read_text(encoding="utf-8")
    return json.loads(text)


def _llama3(layers: int, h: int, heads: int, ffn: int, ctx: int) -> dict[str, Any]:
    return {"model_type": "llama", "num_hidden_layers": layers, "hidden_size": h, "num_attention_heads": heads,
            "num_key_value_heads": 8, "intermediate_size": ffn, "vocab_size": 128256,
            "max_position_embeddings": ctx, "attention_bias": False, "mlp_bias": False,
            "hidden_act": "silu", "tie_word_embeddings": False}


def _qwen3(layers: int, h: int, heads: int, ffn: int, tie: bool) -> dict[str, Any]:
    return {"model_type": "qwen3", "num_hidden_layers": layers, "hidden_size": h, "num_attention_heads": heads,
            "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": ffn, "vocab_size": 151936,
            "max_position_embeddings": 40960, "max_window_layers": layers, "attention_bias": False,
            "sliding_window": None, "use_sliding_window": False, "tie_word_embeddings": tie}


def _gemma2(layers: int, h: int, heads: int, kv: int, head_dim: int, ffn: int) -> dict[str, Any]:
    # Gemma 2's config.json has no tie_word_embeddings (Gemma2Config: True) and no layer_types
    # (local sliding-window layers alternate with global ones, the first local).
    return {"model_type": "gemma2", "num_hidden_layers": layers, "hidden_size": h, "num_attention_heads": heads,
            "num_key_value_heads": kv, "head_dim": head_dim, "intermediate_size": ffn, "vocab_size": 256000,
            "max_position_embeddings": 8192, "sliding_window": 4096, "attention_bias": False,
            "hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh"}


def _phi3(layers: int, h: int, heads: int, kv: int, ffn: int, vocab: int, ctx: int,
          window: int | None) -> dict[str, Any]:
    return {"model_type": "phi3", "num_hidden_layers": layers, "hidden_size": h, "num_attention_heads": heads,
            "num_key_value_heads": kv, "intermediate_size": ffn, "vocab_size": vocab,
            "max_position_embeddings": ctx, "sliding_window": window, "attention_bias": False,
            "hidden_act": "silu", "tie_word_embeddings": False}


def _starcoder2(layers: int, h: int, heads: int, kv: int, ffn: int, **extra: Any) -> dict[str, Any]:
    # No tie_word_embeddings in the 3B/7B config.json (Starcoder2Config: True); the 15B's says false.
    return {"model_type": "starcoder2", "num_hidden_layers": layers, "hidden_size": h,
            "num_attention_heads": heads, "num_key_value_heads": kv, "intermediate_size": ffn,
            "vocab_size": 49152, "max_position_embeddings": 16384, "sliding_window": 4096, "use_bias": True,
            "hidden_act": "gelu_pytorch_tanh", "norm_type": "layer_norm", **extra}


def _t5(d_model: int, d_ff: int, heads: int, layers: int, **extra: Any) -> dict[str, Any]:
    return {"model_type": "t5", "d_model": d_model, "d_ff": d_ff, "d_kv": 64, "num_heads": heads,
            "num_layers": layers, "vocab_size": 32128, "relative_attention_num_buckets": 32, **extra}


def _roberta(layers: int, h: int, heads: int) -> dict[str, Any]:
    return {"model_type": "roberta", "num_hidden_layers": layers, "hidden_size": h, "num_attention_heads": heads,
            "intermediate_size": 4 * h, "vocab_size": 50265, "max_position_embeddings": 514,
            "type_vocab_size": 1, "pad_token_id": 1, "hidden_act": "gelu"}


_ZOO: dict[str, tuple[Any, str]] = {
    # Llama 3 / 3.1 (Llama Team 2024, "The Llama 3 Herd of Models", Table 3: layers, model and FFN
    # dimensions, 8 KV heads, RoPE theta 500,000)
    "llama-3-8b": (_llama3(32, 4096, 32, 14336, 8192),
                   f"{_HUB} meta-llama/Meta-Llama-3-8B {_REPO_COPY}; Llama Team (2024), Table 3"),
    "llama-3-70b": (_llama3(80, 8192, 64, 28672, 8192),
                    f"{_HUB} meta-llama/Meta-Llama-3-70B; Llama Team (2024), Table 3"),
    "llama-3.1-405b": (_llama3(126, 16384, 128, 53248, 131072),
                       f"{_HUB} meta-llama/Llama-3.1-405B; Llama Team (2024), Table 3"),
    # Qwen2.5 (Qwen Team 2024, Qwen2.5 technical report, Table 1: layers, heads Q/KV, tying)
    "qwen2.5-7b": ({"model_type": "qwen2", "num_hidden_layers": 28, "hidden_size": 3584, "num_attention_heads": 28,
                    "num_key_value_heads": 4, "intermediate_size": 18944, "vocab_size": 152064,
                    "max_position_embeddings": 131072, "max_window_layers": 28, "sliding_window": 131072,
                    "use_sliding_window": False, "tie_word_embeddings": False},
                   f"{_HUB} Qwen/Qwen2.5-7B {_REPO_COPY}; Qwen Team (2024), Table 1; model card (28 layers, "
                   "28 Q / 4 KV heads)"),
    "qwen2.5-72b": ({"model_type": "qwen2", "num_hidden_layers": 80, "hidden_size": 8192, "num_attention_heads": 64,
                     "num_key_value_heads": 8, "intermediate_size": 29568, "vocab_size": 152064,
                     "max_position_embeddings": 131072, "max_window_layers": 80, "sliding_window": 131072,
                     "use_sliding_window": False, "tie_word_embeddings": False},
                    f"{_HUB} Qwen/Qwen2.5-72B; Qwen Team (2024), Table 1 (80 layers, 64 Q / 8 KV heads)"),
    # Qwen3 (Yang et al. 2025, Qwen3 technical report, Tables 1-2; model cards)
    "qwen3-0.6b": (_qwen3(28, 1024, 16, 3072, True),
                   f"{_HUB} Qwen/Qwen3-0.6B {_REPO_COPY}; Yang et al. (2025), Table 1"),
    "qwen3-8b": (_qwen3(36, 4096, 32, 12288, False),
                 f"{_HUB} Qwen/Qwen3-8B {_REPO_COPY}; Yang et al. (2025), Table 1"),
    "qwen3-32b": (_qwen3(64, 5120, 64, 25600, False),
                  f"{_HUB} Qwen/Qwen3-32B {_REPO_COPY}; Yang et al. (2025), Table 1; model card (64 layers, "
                  "64 Q / 8 KV heads)"),
    "qwen3-30b-a3b": (_hf_json("qwen3-30b-a3b"),
                      f"{_HUB} Qwen/Qwen3-30B-A3B, whole file (llmmath/hf_configs) {_REPO_COPY}; Yang et al. "
                      "(2025), Table 2; model card (48 layers, 32 Q / 4 KV heads, 128 experts, 8 active)"),
    "qwen3-235b-a22b": ({"model_type": "qwen3_moe", "num_hidden_layers": 94, "hidden_size": 4096,
                         "num_attention_heads": 64, "num_key_value_heads": 4, "head_dim": 128,
                         "intermediate_size": 12288, "moe_intermediate_size": 1536, "num_experts": 128,
                         "num_experts_per_tok": 8, "decoder_sparse_step": 1, "mlp_only_layers": [],
                         "vocab_size": 151936, "max_position_embeddings": 40960, "attention_bias": False,
                         "sliding_window": None, "use_sliding_window": False, "tie_word_embeddings": False},
                        f"{_HUB} Qwen/Qwen3-235B-A22B {_REPO_COPY}; Yang et al. (2025), Table 2; model card "
                        "(94 layers, 64 Q / 4 KV heads, 128 experts, 8 active)"),
    # Qwen MoE with shared experts (a sigmoid-gated shared expert; every layer MoE)
    "qwen1.5-moe-a2.7b": ({"model_type": "qwen2_moe", "num_hidden_layers": 24, "hidden_size": 2048,
                           "num_attention_heads": 16, "num_key_value_heads": 16, "intermediate_size": 5632,
                           "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
                           "num_experts": 60, "num_experts_per_tok": 4, "decoder_sparse_step": 1,
                           "vocab_size": 151936, "max_position_embeddings": 32768, "max_window_layers": 21,
                           "sliding_window": 32768, "use_sliding_window": False, "tie_word_embeddings": False},
                          f"{_HUB} Qwen/Qwen1.5-MoE-A2.7B {_REPO_COPY}; transformers' Qwen2MoeConfig defaults "
                          "(documented as this checkpoint)"),
    "qwen2-57b-a14b": ({"model_type": "qwen2_moe", "num_hidden_layers": 28, "hidden_size": 3584,
                        "num_attention_heads": 28, "num_key_value_heads": 4, "intermediate_size": 18944,
                        "moe_intermediate_size": 2560, "shared_expert_intermediate_size": 20480,
                        "num_experts": 64, "num_experts_per_tok": 8, "decoder_sparse_step": 1,
                        "vocab_size": 151936, "max_position_embeddings": 131072, "max_window_layers": 28,
                        "sliding_window": 131072, "use_sliding_window": False, "tie_word_embeddings": False},
                       f"{_HUB} Qwen/Qwen2-57B-A14B {_REPO_COPY}; Yang et al. (2024), Table 1 (64 experts, 8 "
                       "active, 8 shared of width 2560)"),
    # Gemma 2 (Gemma Team 2024b, Table 1: d_model, layers, feedforward dim = 2 x intermediate_size,
    # heads, KV heads, head size, sliding window 4096)
    "gemma-2-2b": (_gemma2(26, 2304, 8, 4, 256, 9216),
                   f"{_HUB} google/gemma-2-2b {_REPO_COPY}; Gemma Team (2024b), Table 1"),
    "gemma-2-9b": (_gemma2(42, 3584, 16, 8, 256, 14336),
                   f"{_HUB} google/gemma-2-9b {_REPO_COPY}; Gemma Team (2024b), Table 1"),
    "gemma-2-27b": (_gemma2(46, 4608, 32, 16, 128, 36864),
                    f"{_HUB} google/gemma-2-27b {_REPO_COPY}; Gemma Team (2024b), Table 1"),
    # Gemma 3 (Gemma Team 2025; five local layers per global one, QK-norm). The 1B is text-only
    # (model_type gemma3_text); the 4B and 27B are multimodal checkpoints whose text_config omits
    # the heads, KV heads, head_dim and vocabulary that Gemma3TextConfig supplies.
    "gemma-3-1b": ({"model_type": "gemma3_text", "num_hidden_layers": 26, "hidden_size": 1152,
                    "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256,
                    "intermediate_size": 6912, "vocab_size": 262144, "max_position_embeddings": 32768,
                    "sliding_window": 512, "sliding_window_pattern": 6, "query_pre_attn_scalar": 256,
                    "hidden_activation": "gelu_pytorch_tanh", "attention_bias": False},
                   f"{_HUB} google/gemma-3-1b-it {_REPO_COPY}; Gemma Team (2025), Table 1 (698M "
                   "non-embedding parameters)"),
    "gemma-3-4b": (_hf_json("gemma-3-4b"),
                   f"{_HUB} google/gemma-3-4b-it, whole file (llmmath/hf_configs; assembled from two partial "
                   "verbatim copies, every key agreeing); Gemma Team (2025), Table 1 (3,209M non-embedding); "
                   "read as its language model (text_config), without the SigLIP vision tower"),
    "gemma-3-27b": ({"model_type": "gemma3", "text_config": {
                        "model_type": "gemma3_text", "head_dim": 128, "hidden_size": 5376,
                        "intermediate_size": 21504, "num_attention_heads": 32, "num_hidden_layers": 62,
                        "num_key_value_heads": 16, "query_pre_attn_scalar": 168, "sliding_window": 1024,
                        "rope_scaling": {"factor": 8.0, "rope_type": "linear"}}},
                    f"{_HUB} google/gemma-3-27b-it {_REPO_COPY}; 62 layers from Gemma Team (2025), Table 1 "
                    "(25,600M non-embedding parameters, which 62 layers of this shape give)"),
    # Phi-3 / Phi-3.5 / Phi-4 (Abdin et al. 2024a, 2024b): fused qkv_proj and gate_up_proj
    "phi-3-mini": (_hf_json("phi-3-mini"),
                   f"{_HUB} microsoft/Phi-3-mini-4k-instruct, whole file (llmmath/hf_configs) {_REPO_COPY}; "
                   "Abdin et al. (2024a), section 2 (3072 hidden, 32 heads, 32 layers, vocabulary 32064)"),
    "phi-3-medium": (_phi3(40, 5120, 40, 10, 17920, 32064, 4096, 2047),
                     f"{_HUB} microsoft/Phi-3-medium-4k-instruct {_REPO_COPY}; Abdin et al. (2024a), "
                     "section 2 (40 heads, 40 layers, embedding dimension 5120)"),
    "phi-3.5-mini": (_phi3(32, 3072, 32, 32, 8192, 32064, 131072, 262144),
                     f"{_HUB} microsoft/Phi-3.5-mini-instruct {_REPO_COPY}; Abdin et al. (2024a), section 2 "
                     "(phi-3.5-mini: the phi-3-mini architecture)"),
    "phi-4": (_phi3(40, 5120, 40, 10, 17920, 100352, 16384, None),
              f"{_HUB} microsoft/phi-4 {_REPO_COPY}; Abdin et al. (2024b), section 3 (the phi-3-medium "
              "architecture, full attention, padded vocabulary 100,352)"),
    # DeepSeek-V2 / V3: multi-head latent attention, shared + routed experts, dense first layers
    "deepseek-v2-lite": ({"model_type": "deepseek_v2", "num_hidden_layers": 27, "hidden_size": 2048,
                          "num_attention_heads": 16, "num_key_value_heads": 16, "intermediate_size": 10944,
                          "moe_intermediate_size": 1408, "n_routed_experts": 64, "n_shared_experts": 2,
                          "num_experts_per_tok": 6, "first_k_dense_replace": 1, "moe_layer_freq": 1,
                          "kv_lora_rank": 512, "q_lora_rank": None, "qk_nope_head_dim": 128,
                          "qk_rope_head_dim": 64, "v_head_dim": 128, "vocab_size": 102400,
                          "max_position_embeddings": 163840, "attention_bias": False,
                          "tie_word_embeddings": False},
                         f"{_HUB} deepseek-ai/DeepSeek-V2-Lite {_REPO_COPY}; DeepSeek-AI (2024a), Appendix B "
                         "(27 layers, hidden 2048, 16 heads, KV latent 512, no query compression, 2 shared + 64 "
                         "routed experts of width 1408, 6 active, first layer dense)"),
    "deepseek-v2": ({"model_type": "deepseek_v2", "num_hidden_layers": 60, "hidden_size": 5120,
                     "num_attention_heads": 128, "num_key_value_heads": 128, "intermediate_size": 12288,
                     "moe_intermediate_size": 1536, "n_routed_experts": 160, "n_shared_experts": 2,
                     "num_experts_per_tok": 6, "first_k_dense_replace": 1, "moe_layer_freq": 1,
                     "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
                     "v_head_dim": 128, "vocab_size": 102400, "max_position_embeddings": 163840,
                     "n_group": 8, "topk_group": 3, "attention_bias": False, "tie_word_embeddings": False},
                    f"{_HUB} deepseek-ai/DeepSeek-V2 {_REPO_COPY}; DeepSeek-AI (2024a), section 3.1 (60 layers, "
                    "hidden 5120, 128 heads, latents 512/1536, 2 shared + 160 routed experts of width 1536, "
                    "6 active)"),
    "deepseek-v3": (_hf_json("deepseek-v3"),
                    f"{_HUB} deepseek-ai/DeepSeek-V3, whole file (llmmath/hf_configs; verbatim copy, its "
                    "quantization_config block from a second copy); DeepSeek-AI (2024b), section 4.2 (61 layers, "
                    "hidden 7168, 128 heads, 1 shared + 256 routed experts of width 2048, 8 active, first 3 "
                    "layers dense). The file's MTP module (num_nextn_predict_layers) is not part of "
                    "DeepseekV3ForCausalLM and is not counted"),
    # OLMo 2 (OLMo et al. 2024): QK-norm over whole vectors, norms after attention and MLP
    "olmo-2-7b": ({"model_type": "olmo2", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
                   "num_key_value_heads": 32, "intermediate_size": 11008, "vocab_size": 100352,
                   "max_position_embeddings": 4096, "attention_bias": False, "tie_word_embeddings": False},
                  f"{_HUB} allenai/OLMo-2-1124-7B {_REPO_COPY}; Megatron-Bridge's OLMo 2 7B provider"),
    "olmo-2-13b": ({"model_type": "olmo2", "num_hidden_layers": 40, "hidden_size": 5120, "num_attention_heads": 40,
                    "num_key_value_heads": 40, "intermediate_size": 13824, "vocab_size": 100352,
                    "max_position_embeddings": 4096, "attention_bias": False, "tie_word_embeddings": False},
                   f"{_HUB} allenai/OLMo-2-1124-13B {_REPO_COPY}; Megatron-Bridge's OLMo 2 13B provider"),
    # GPT-J (Wang and Komatsuzaki 2021): parallel attention/MLP, rotary on 64 dims, LM-head bias
    "gpt-j-6b": ({"model_type": "gptj", "n_layer": 28, "n_embd": 4096, "n_head": 16, "n_inner": None,
                  "rotary_dim": 64, "n_positions": 2048, "vocab_size": 50400, "activation_function": "gelu_new",
                  "tie_word_embeddings": False},
                 f"{_HUB} EleutherAI/gpt-j-6b {_REPO_COPY}; model card hyperparameter table (28 layers, "
                 "d_model 4096, d_ff 16384, 16 heads, vocabulary 50400)"),
    # StarCoder2 (Lozhkov et al. 2024): GQA, sliding window 4096, biases, LayerNorm
    "starcoder2-3b": (_starcoder2(30, 3072, 24, 2, 12288),
                      f"{_HUB} bigcode/starcoder2-3b {_REPO_COPY}; transformers' Starcoder2Config defaults "
                      "(documented as this checkpoint)"),
    "starcoder2-15b": (_starcoder2(40, 6144, 48, 4, 24576, tie_word_embeddings=False),
                       f"{_HUB} bigcode/starcoder2-15b {_REPO_COPY}; untied head confirmed by the checkpoint's "
                       "safetensors total, 15,957,889,024"),
    # StableLM 2 (Bellagente et al. 2024): LayerNorm, partial rotary, QKV bias
    "stablelm-2-1.6b": ({"model_type": "stablelm", "num_hidden_layers": 24, "hidden_size": 2048,
                         "num_attention_heads": 32, "num_key_value_heads": 32, "intermediate_size": 5632,
                         "vocab_size": 100352, "max_position_embeddings": 4096, "partial_rotary_factor": 0.25,
                         "use_qkv_bias": True, "tie_word_embeddings": False, "hidden_act": "silu"},
                        f"{_HUB} stabilityai/stablelm-2-zephyr-1_6b {_REPO_COPY} (the fine-tune of "
                        "stablelm-2-1_6b, same shapes); model card of stabilityai/stablelm-2-1_6b (hidden 2048, "
                        "24 layers, 32 heads)"),
    # Cohere (Command-R, Aya 23): parallel block, one bias-free LayerNorm, tied embeddings
    "command-r": ({"model_type": "cohere", "num_hidden_layers": 40, "hidden_size": 8192, "num_attention_heads": 64,
                   "num_key_value_heads": 64, "intermediate_size": 22528, "vocab_size": 256000,
                   "max_position_embeddings": 8192, "logit_scale": 0.0625, "use_qk_norm": False,
                   "tie_word_embeddings": True},
                  f"{_HUB} CohereForAI/c4ai-command-r-v01 {_REPO_COPY}; transformers' CohereConfig defaults "
                  "(documented as this checkpoint)"),
    "aya-23-8b": ({"model_type": "cohere", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
                   "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 256000,
                   "max_position_embeddings": 8192, "logit_scale": 0.0625, "use_qk_norm": False,
                   "attention_bias": False},
                  f"{_HUB} CohereForAI/aya-23-8B {_REPO_COPY}; Aryabumi et al. (2024), section 2"),
    # GPT-BigCode (SantaCoder, StarCoder): multi-query attention, learned positions
    "santacoder": ({"model_type": "gpt_bigcode", "n_layer": 24, "n_embd": 2048, "n_head": 16, "n_inner": 8192,
                    "n_positions": 2048, "vocab_size": 49280, "multi_query": True,
                    "activation_function": "gelu_pytorch_tanh"},
                   f"{_HUB} bigcode/gpt_bigcode-santacoder, copied verbatim in two public repositories"),
    "starcoder": ({"model_type": "gpt_bigcode", "n_layer": 40, "n_embd": 6144, "n_head": 48, "n_inner": 24576,
                   "n_positions": 8192, "vocab_size": 49152, "multi_query": True,
                   "activation_function": "gelu_pytorch_tanh"},
                  f"{_HUB} bigcode/starcoder {_REPO_COPY}; Li et al. (2023), section 5 (40 layers, 48 heads, "
                  "hidden 6144, context 8192, multi-query attention)"),
    # Encoder-decoder and encoders
    "t5-base": (_t5(768, 3072, 12, 12),
                f"{_HUB} google-t5/t5-base; Raffel et al. (2020), section 3.1.1 (12 blocks per stack, "
                "d_model 768, d_ff 3072, 12 heads of 64)"),
    "flan-t5-xxl": (_t5(4096, 10240, 64, 24, num_decoder_layers=24, feed_forward_proj="gated-gelu",
                        dense_act_fn="gelu_new", is_gated_act=True, tie_word_embeddings=False),
                    f"{_HUB} google/flan-t5-xxl (the T5 v1.1 XXL architecture: gated GELU, untied output "
                    f"layer) {_REPO_COPY}; Chung et al. (2022)"),
    "distilbert-base": ({"model_type": "distilbert", "n_layers": 6, "dim": 768, "n_heads": 12, "hidden_dim": 3072,
                         "vocab_size": 30522, "max_position_embeddings": 512, "activation": "gelu"},
                        f"{_HUB} distilbert/distilbert-base-uncased; Sanh et al. (2019), section 3 (BERT-base "
                        "with half the layers); transformers' DistilBertConfig defaults"),
    "roberta-base": (_roberta(12, 768, 12),
                     f"{_HUB} FacebookAI/roberta-base {_REPO_COPY}; Liu et al. (2019) (the BERT-base shape)"),
    "roberta-large": (_roberta(24, 1024, 16),
                      f"{_HUB} FacebookAI/roberta-large; Liu et al. (2019), section 5 (L = 24, H = 1024, A = 16)"),
    # Mixtral 8x22B (Mistral AI 2024)
    "mixtral-8x22b": ({"model_type": "mixtral", "num_hidden_layers": 56, "hidden_size": 6144,
                       "num_attention_heads": 48, "num_key_value_heads": 8, "intermediate_size": 16384,
                       "vocab_size": 32000, "max_position_embeddings": 65536, "num_local_experts": 8,
                       "num_experts_per_tok": 2, "sliding_window": None, "tie_word_embeddings": False},
                      f"{_HUB} mistralai/Mixtral-8x22B-v0.1 (shapes quoted in several public repositories: "
                      "56 layers, hidden 6144, 48 Q / 8 KV heads, FFN 16384, vocabulary 32000); Mistral AI "
                      "(2024), 64K context"),
}


def _qwen_1_8b() -> TransformerConfig:
    # Qwen-1.8B (Bai et al. 2023, Table 1; its config.json: hidden 2048, 24 layers, 16 heads,
    # intermediate_size 11008 of which each of w1, w2 uses half, vocabulary padded to 151936,
    # qkv bias, no other bias, RMSNorm, untied LM head). Same layer shapes as the qwen2 class.
    return TransformerConfig(
        name="qwen-1.8b", family="qwen", n_layers=24, hidden_size=2048, n_heads=16,
        vocab_size=151936, ffn_size=5504, ffn_kind="gated", activation="silu", norm="rmsnorm",
        qkv_bias=True, out_bias=False, mlp_bias=False, position="rotary", max_position=8192,
        tie_embeddings=False, source="Bai et al. (2023), Table 1; config.json of Qwen/Qwen-1_8B",
    )


def _build() -> dict[str, TransformerConfig]:
    out: dict[str, TransformerConfig] = {}
    for key, (raw, source) in _RAW.items():
        if isinstance(raw, TransformerConfig):
            out[key] = raw
        else:
            out[key] = from_hf_config(raw, name=key).replace(source=source)
    out["qwen-1.8b"] = _qwen_1_8b()
    for key, (raw, source) in _ZOO.items():
        out[key] = from_hf_config(raw, name=key).replace(source=source)
    return out


#: Every preset by name (read-only).
PRESETS: Mapping[str, TransformerConfig] = MappingProxyType(_build())


def preset_names() -> list[str]:
    """The names accepted by :func:`preset`, in the order of :data:`PRESETS`."""
    return list(PRESETS)


def preset(name: str) -> TransformerConfig:
    """The published configuration called ``name`` (see :data:`PRESETS`).

    An unknown name raises ``ValueError`` listing the closest known names.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, got {type(name).__name__}")
    key = name.strip().lower()
    if key in PRESETS:
        return PRESETS[key]
    close = difflib.get_close_matches(key, PRESETS.keys(), n=5, cutoff=0.4)
    hint = f"; did you mean {', '.join(close)}?" if close else f"; known: {', '.join(PRESETS)}"
    raise ValueError(f"unknown preset {name!r}{hint}")
