"""Published configurations of the models the book discusses.

Models with a Hugging Face implementation are stored as the relevant fields of their published
``config.json`` and read with :func:`llmmath.from_hf_config`, so a preset is exactly what the
reference implementation builds. The others (GPT-3, Qwen-1.8B) are written as
:class:`~llmmath.TransformerConfig` with the shapes their papers publish.
Each preset's ``source`` field names where the numbers come from.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
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
    "bert-base": ({"model_type": "bert"}, f"Devlin et al. (2019); {_HUB} bert-base-uncased"),
    "bert-base-chinese": ({"model_type": "bert", "vocab_size": 21128},
                          f"{_HUB} bert-base-chinese (vocabulary 21128)"),
    "bert-large": ({"model_type": "bert", "num_hidden_layers": 24, "hidden_size": 1024,
                    "num_attention_heads": 16, "intermediate_size": 4096},
                   f"Devlin et al. (2019); {_HUB} bert-large-uncased"),
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
