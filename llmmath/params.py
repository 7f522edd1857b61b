"""Exact parameter counts of a :class:`~llmmath.TransformerConfig`.

Every count is a sum of weight-matrix shapes (``rows x cols``) and vector lengths, exactly as the
reference implementations allocate them (checked against ``transformers`` in
``tests/test_params.py``). Derived in chapter :doc:`/chapters/parameter-counts`.

Symbols: ``L`` layers, ``h`` hidden size, ``e`` embedding width (``h`` except OPT-350m), ``V``
vocabulary, ``S`` learned positions (plus the implementation's offset), ``T`` token types,
``d_q = a d_head`` query width, ``d_kv = a_kv d_head`` key/value width, ``d_ff`` MLP width,
``E`` experts of which ``k`` are used per token, ``n`` norm parameters per normalised vector
(``2h`` for LayerNorm, ``h`` for RMSNorm).
"""

from __future__ import annotations

from .config import TransformerConfig

__all__ = [
    "BREAKDOWN_KEYS",
    "EMBEDDING_KEYS",
    "param_breakdown",
    "param_count",
    "active_param_count",
    "non_embedding_param_count",
    "layer_param_count",
    "base_model_param_count",
    "QUOTED_SIZES",
    "QUOTED_ACTIVE_SIZES",
]

#: The keys of :func:`param_breakdown`, in order (stable: every key is always present).
BREAKDOWN_KEYS = (
    "token_embedding",
    "position_embedding",
    "token_type_embedding",
    "embedding_norm",
    "embedding_projection",
    "attention",
    "attention_bias",
    "mlp",
    "mlp_bias",
    "router",
    "layer_norms",
    "final_norm",
    "pooler",
    "lm_head",
    "lm_head_bias",
)

#: The keys excluded from Kaplan et al.'s non-embedding count ``N``
#: (token, position and token-type tables and an untied output embedding with its bias).
EMBEDDING_KEYS = ("token_embedding", "position_embedding", "token_type_embedding", "lm_head", "lm_head_bias")


def _check_cfg(cfg: object) -> TransformerConfig:
    if not isinstance(cfg, TransformerConfig):
        raise TypeError(f"cfg must be a TransformerConfig, got {type(cfg).__name__}")
    return cfg


def _norm_size(cfg: TransformerConfig) -> int:
    """Parameters of one norm over ``h`` features: ``2h`` (LayerNorm: gain and bias) or ``h`` (RMSNorm)."""
    return (2 if cfg.norm == "layernorm" else 1) * cfg.hidden_size


def _expert_weights(cfg: TransformerConfig) -> tuple[int, int]:
    """(weights, biases) of one MLP (one expert): ``m h d_ff`` with ``m = 2`` (plain) or ``3`` (gated)."""
    h, f = cfg.hidden_size, cfg.ffn_size
    n_in = 2 if cfg.ffn_kind == "gated" else 1
    weights = (n_in + 1) * h * f
    biases = (n_in * f + h) if cfg.mlp_bias else 0
    return weights, biases


def param_breakdown(cfg: TransformerConfig) -> dict[str, int]:
    """Exact parameter count of each component, summed over all layers.

    Keys (always all present, in the order of :data:`BREAKDOWN_KEYS`; 0 when absent):

    - ``token_embedding``: ``V e``.
    - ``position_embedding``: ``(S + offset) h`` for learned positions (OPT keeps 2 extra rows),
      0 for rotary, ALiBi or none.
    - ``token_type_embedding``: ``T h`` (BERT's segment embeddings).
    - ``embedding_norm``: the norm after the embeddings (BERT), ``n``.
    - ``embedding_projection``: ``2 e h`` when ``e != h`` (OPT-350m's ``project_in`` and
      ``project_out``, no biases).
    - ``attention``: ``L (h d_q + 2 h d_kv + d_q h)``, the weights of Q, K, V and output.
    - ``attention_bias``: ``L [(d_q + 2 d_kv) * qkv_bias + h * out_bias]``.
    - ``mlp``: ``L E' m h d_ff`` weights with ``m = 2`` (plain) or ``3`` (gated) and ``E' = E``
      experts (1 for a dense model).
    - ``mlp_bias``: ``L E' (m' d_ff + h)`` with ``m' = m - 1``, if the MLP has biases.
    - ``router``: ``L (h E + E * router_bias)`` for a mixture of experts.
    - ``layer_norms``: ``L * norms_per_layer * n``.
    - ``final_norm``: ``n`` if the model ends with a norm.
    - ``pooler``: ``h^2 + h`` (BERT's pooler).
    - ``lm_head``: ``V e`` if the output embedding is untied, else 0 (counted once, in
      ``token_embedding``).
    - ``lm_head_bias``: ``V`` (Phi).

    "Without embeddings" is the total minus the :data:`EMBEDDING_KEYS`; "without the LM head" is
    the total minus ``lm_head`` and ``lm_head_bias``. The sum of all values is :func:`param_count`.
    Derived in chapter :doc:`/chapters/parameter-counts`.
    """
    cfg = _check_cfg(cfg)
    L, h, e, V = cfg.n_layers, cfg.hidden_size, cfg.embedding_dim, cfg.vocab_size
    d_q, d_kv = cfg.q_dim, cfg.kv_dim
    n = _norm_size(cfg)
    w_mlp, b_mlp = _expert_weights(cfg)
    experts = cfg.n_experts if cfg.is_moe else 1
    out = dict.fromkeys(BREAKDOWN_KEYS, 0)
    out["token_embedding"] = V * e
    if cfg.position == "learned":
        out["position_embedding"] = (cfg.max_position + cfg.position_offset) * h
    out["token_type_embedding"] = cfg.token_types * h
    out["embedding_norm"] = n if cfg.embedding_norm else 0
    out["embedding_projection"] = 2 * e * h if e != h else 0
    out["attention"] = L * (h * d_q + 2 * h * d_kv + d_q * h)
    out["attention_bias"] = L * ((d_q + 2 * d_kv) * cfg.qkv_bias + h * cfg.out_bias)
    out["mlp"] = L * experts * w_mlp
    out["mlp_bias"] = L * experts * b_mlp
    if cfg.is_moe:
        out["router"] = L * (h * cfg.n_experts + cfg.n_experts * cfg.router_bias)
    out["layer_norms"] = L * cfg.norms_per_layer * n
    out["final_norm"] = n if cfg.final_norm else 0
    out["pooler"] = h * h + h if cfg.pooler else 0
    if not cfg.tie_embeddings:
        out["lm_head"] = V * e
    out["lm_head_bias"] = V if cfg.lm_head_bias else 0
    return out


def param_count(cfg: TransformerConfig) -> int:
    """Exact number of trainable parameters, tied weights counted once.

    ``sum(param_breakdown(cfg).values())``: for a causal LM what
    ``sum(p.numel() for p in model.parameters())`` gives for the ``...ForCausalLM`` class
    (embeddings, layers, final norm, LM head); for a BERT-style encoder the base model with its
    pooler (``BertModel``). GPT-style shorthand: ``L (12 h^2 + 13 h) + (V + S) h + 2h``.
    Derived in chapter :doc:`/chapters/parameter-counts`.
    """
    return sum(param_breakdown(cfg).values())


def base_model_param_count(cfg: TransformerConfig) -> int:
    """Parameters of the base model (``LlamaModel``, ``GPT2Model``, ...): :func:`param_count`
    without the untied LM head and its bias (the pooler stays: ``BertModel`` has it).
    Derived in chapter :doc:`/chapters/parameter-counts`.
    """
    b = param_breakdown(cfg)
    return sum(b.values()) - b["lm_head"] - b["lm_head_bias"]


def layer_param_count(cfg: TransformerConfig) -> int:
    """Parameters of one transformer layer (block): attention, MLP or experts with router, norms,
    biases. For a GPT-2-style layer ``12 h^2 + 13 h``. Derived in chapter
    :doc:`/chapters/parameter-counts`.
    """
    b = param_breakdown(cfg)
    per_layer = ("attention", "attention_bias", "mlp", "mlp_bias", "router", "layer_norms")
    return sum(b[k] for k in per_layer) // cfg.n_layers


def active_param_count(cfg: TransformerConfig) -> int:
    """Parameters used for one token: :func:`param_count` with the experts counted ``k`` of ``E``
    times, ``N - L (E - k) (m h d_ff + biases)``. Equal to :func:`param_count` for a dense model.
    (The router and every non-expert weight are active; embeddings count as active, as in the
    Mixtral paper's "13B active" figure.) Derived in chapter :doc:`/chapters/parameter-counts`.
    """
    cfg = _check_cfg(cfg)
    total = param_count(cfg)
    if not cfg.is_moe:
        return total
    w, b = _expert_weights(cfg)
    return total - cfg.n_layers * (cfg.n_experts - cfg.experts_per_token) * (w + b)


def non_embedding_param_count(cfg: TransformerConfig) -> int:
    """Kaplan et al.'s ``N``: parameters without the embedding tables.

    Excludes the token, position and token-type embedding matrices and, when the output embedding
    is untied, the LM head (and its bias): it is the transpose-role twin of the token embedding,
    and Kaplan's tied models excluded it by construction (Pythia's "non-embedding" column makes
    the same choice). Everything else (all layers, norms, pooler, OPT's projections) is counted.
    ``N ~= 12 L h^2`` for a GPT layer. Derived in chapter :doc:`/chapters/parameter-counts`.
    """
    b = param_breakdown(cfg)
    return sum(v for k, v in b.items() if k not in EMBEDDING_KEYS)


# ---- the sizes the models' authors quote -----------------------------------------------------

_G = 10**9
_M = 10**6

#: Parameter counts as the models' authors state them: preset name -> (quoted count, source).
#: Rounded figures ("7B") are stored as the integer they name. Compared with :func:`param_count`
#: in chapter :doc:`/chapters/parameter-counts`.
QUOTED_SIZES: dict[str, tuple[int, str]] = {
    "gpt2": (117 * _M, "Radford et al. (2019), Table 2"),
    "gpt2-medium": (345 * _M, "Radford et al. (2019), Table 2"),
    "gpt2-large": (762 * _M, "Radford et al. (2019), Table 2"),
    "gpt2-xl": (1542 * _M, "Radford et al. (2019), Table 2"),
    "gpt3-small": (125 * _M, "Brown et al. (2020), Table D.1 (Params (M))"),
    "gpt3-medium": (356 * _M, "Brown et al. (2020), Table D.1 (Params (M))"),
    "gpt3-large": (760 * _M, "Brown et al. (2020), Table D.1 (Params (M))"),
    "gpt3-xl": (1320 * _M, "Brown et al. (2020), Table D.1 (Params (M))"),
    "gpt3-2.7b": (2650 * _M, "Brown et al. (2020), Table D.1 (Params (M))"),
    "gpt3-6.7b": (6660 * _M, "Brown et al. (2020), Table D.1 (Params (M))"),
    "gpt3-13b": (12850 * _M, "Brown et al. (2020), Table D.1 (Params (M))"),
    "gpt3-175b": (174600 * _M, "Brown et al. (2020), Table D.1 (Params (M))"),
    "bert-base": (110 * _M, "Devlin et al. (2019), section 3"),
    "bert-large": (340 * _M, "Devlin et al. (2019), section 3"),
    "pythia-160m": (160 * _M, "Biderman et al. (2023), Table 1 (model name)"),
    "pythia-1.4b": (1400 * _M, "Biderman et al. (2023), Table 1 (model name)"),
    "pythia-6.9b": (6900 * _M, "Biderman et al. (2023), Table 1 (model name)"),
    "pythia-12b": (12 * _G, "Biderman et al. (2023), Table 1 (model name)"),
    "opt-125m": (125 * _M, "Zhang et al. (2022), Table 1"),
    "opt-350m": (350 * _M, "Zhang et al. (2022), Table 1"),
    "opt-1.3b": (1300 * _M, "Zhang et al. (2022), Table 1"),
    "opt-175b": (175 * _G, "Zhang et al. (2022), Table 1"),
    "llama-7b": (6700 * _M, "Touvron et al. (2023a), Table 2"),
    "llama-13b": (13000 * _M, "Touvron et al. (2023a), Table 2"),
    "llama-33b": (32500 * _M, "Touvron et al. (2023a), Table 2"),
    "llama-65b": (65200 * _M, "Touvron et al. (2023a), Table 2"),
    "llama2-7b": (7 * _G, "Touvron et al. (2023b), Table 1"),
    "llama2-13b": (13 * _G, "Touvron et al. (2023b), Table 1"),
    "llama2-70b": (70 * _G, "Touvron et al. (2023b), Table 1"),
    "mistral-7b": (7 * _G, "Jiang et al. (2023), title and abstract"),
    "mixtral-8x7b": (47 * _G, "Jiang et al. (2024), abstract (47B parameters)"),
    "qwen-1.8b": (1800 * _M, "Bai et al. (2023), model name"),
    "qwen2-0.5b": (500 * _M, "Yang et al. (2024), Table 1 (model name)"),
    "qwen2-7b": (7 * _G, "Yang et al. (2024), Table 1 (model name)"),
    "gemma-2b": (2 * _G, "Gemma Team (2024), model name"),
    "gemma-7b": (7 * _G, "Gemma Team (2024), model name"),
    "phi-1.5": (1300 * _M, "Li et al. (2023), abstract (1.3 billion parameters)"),
    "falcon-7b": (7 * _G, "Almazrouei et al. (2023), model name"),
    "falcon-40b": (40 * _G, "Almazrouei et al. (2023), model name"),
    # the 2023-2026 zoo (tests/test_presets.py compares each with the exact count at the digits
    # printed, and records where they disagree and why)
    "llama-3-8b": (8 * _G, "Llama Team (2024), Table 3 (8B)"),
    "llama-3-70b": (70 * _G, "Llama Team (2024), Table 3 (70B)"),
    "llama-3.1-405b": (405 * _G, "Llama Team (2024), Table 3 (405B)"),
    "qwen2.5-7b": (7610 * _M, "model card of Qwen/Qwen2.5-7B (Number of Parameters: 7.61B)"),
    "qwen2.5-72b": (72 * _G, "Qwen Team (2024), Table 1 (model name, 72B)"),
    "qwen3-0.6b": (600 * _M, "model card of Qwen/Qwen3-0.6B (Number of Parameters: 0.6B)"),
    "qwen3-8b": (8200 * _M, "model card of Qwen/Qwen3-8B (Number of Parameters: 8.2B)"),
    "qwen3-32b": (32800 * _M, "model card of Qwen/Qwen3-32B (Number of Parameters: 32.8B)"),
    "qwen3-30b-a3b": (30500 * _M, "model card of Qwen/Qwen3-30B-A3B (30.5B in total and 3.3B activated)"),
    "qwen3-235b-a22b": (235 * _G, "model card of Qwen/Qwen3-235B-A22B (235B in total and 22B activated)"),
    "qwen1.5-moe-a2.7b": (14300 * _M, "model card of Qwen/Qwen1.5-MoE-A2.7B (14.3B in total, 2.7B activated)"),
    "qwen2-57b-a14b": (57 * _G, "Yang et al. (2024), model name Qwen2-57B-A14B (57B total, 14B activated)"),
    "gemma-2-2b": (590_118_912 + 2_024_517_888, "Gemma Team (2024b), Table 2 (embedding + non-embedding)"),
    "gemma-2-9b": (917_962_752 + 8_324_201_984, "Gemma Team (2024b), Table 2 (embedding + non-embedding)"),
    "gemma-2-27b": (1_180_237_824 + 26_047_480_320, "Gemma Team (2024b), Table 2 (embedding + non-embedding)"),
    "gemma-3-1b": ((302 + 698) * _M, "Gemma Team (2025), Table 1 (embedding + non-embedding, 302M + 698M)"),
    "gemma-3-4b": ((675 + 3209) * _M, "Gemma Team (2025), Table 1 (embedding + non-embedding, 675M + 3,209M)"),
    "gemma-3-27b": ((1416 + 25600) * _M,
                    "Gemma Team (2025), Table 1 (embedding + non-embedding, 1,416M + 25,600M)"),
    "phi-3-mini": (3800 * _M, "Abdin et al. (2024a), abstract (3.8 billion parameters)"),
    "phi-3-medium": (14 * _G, "Abdin et al. (2024a), abstract (phi-3-medium, 14B)"),
    "phi-3.5-mini": (3800 * _M, "Abdin et al. (2024a), phi-3.5-mini (3.8B)"),
    "phi-4": (14 * _G, "Abdin et al. (2024b), abstract (a 14-billion parameter language model)"),
    "deepseek-v2-lite": (15700 * _M, "DeepSeek-AI (2024a), Appendix B (15.7B total, 2.4B activated)"),
    "deepseek-v2": (236 * _G, "DeepSeek-AI (2024a), abstract (236B total, 21B activated)"),
    "deepseek-v3": (671 * _G, "DeepSeek-AI (2024b), abstract (671B total, 37B activated)"),
    "olmo-2-7b": (7 * _G, "OLMo et al. (2024), model name (7B)"),
    "olmo-2-13b": (13 * _G, "OLMo et al. (2024), model name (13B)"),
    "gpt-j-6b": (6_053_381_344, "model card of EleutherAI/gpt-j-6b, hyperparameter table (n_parameters)"),
    "starcoder2-3b": (3 * _G, "Lozhkov et al. (2024), abstract (3B, 7B and 15B)"),
    "starcoder2-15b": (15 * _G, "Lozhkov et al. (2024), abstract (3B, 7B and 15B)"),
    "stablelm-2-1.6b": (1_644_417_024, "model card of stabilityai/stablelm-2-1_6b, architecture table"),
    "command-r": (35 * _G, "model card of CohereForAI/c4ai-command-r-v01 (35 billion parameter)"),
    "aya-23-8b": (8 * _G, "Aryabumi et al. (2024), model name (8B)"),
    "santacoder": (1100 * _M, "Allal et al. (2023), abstract (1.1B parameter models)"),
    "starcoder": (15500 * _M, "Li et al. (2023), abstract (15.5B parameter models)"),
    "t5-base": (220 * _M, "Raffel et al. (2020), section 3.1.1 (about 220 million parameters)"),
    "flan-t5-xxl": (11 * _G, "Chung et al. (2022), Flan-T5-XXL (11B)"),
    "distilbert-base": (66 * _M, "Sanh et al. (2019), Table 3 (66M)"),
    "roberta-base": (125 * _M, "RoBERTa release (fairseq examples/roberta README), roberta.base 125M"),
    "roberta-large": (355 * _M, "RoBERTa release (fairseq examples/roberta README), roberta.large 355M"),
    "mixtral-8x22b": (141 * _G, "Mistral AI (2024), announcement (39B active parameters out of 141B)"),
}

#: Active parameters per token as quoted for mixture-of-experts models: name -> (count, source).
QUOTED_ACTIVE_SIZES: dict[str, tuple[int, str]] = {
    "mixtral-8x7b": (13 * _G, "Jiang et al. (2024), abstract (13B active parameters)"),
    "qwen3-30b-a3b": (3300 * _M, "model card of Qwen/Qwen3-30B-A3B (3.3B activated)"),
    "qwen3-235b-a22b": (22 * _G, "model card of Qwen/Qwen3-235B-A22B (22B activated)"),
    "qwen1.5-moe-a2.7b": (2700 * _M, "model card of Qwen/Qwen1.5-MoE-A2.7B (2.7B activated)"),
    "qwen2-57b-a14b": (14 * _G, "Yang et al. (2024), model name Qwen2-57B-A14B (14B activated)"),
    "deepseek-v2-lite": (2400 * _M, "DeepSeek-AI (2024a), Appendix B (2.4B activated for each token)"),
    "deepseek-v2": (21 * _G, "DeepSeek-AI (2024a), abstract (21B activated for each token)"),
    "deepseek-v3": (37 * _G, "DeepSeek-AI (2024b), abstract (37B activated for each token)"),
    "mixtral-8x22b": (39 * _G, "Mistral AI (2024), announcement (39B active parameters out of 141B)"),
}
