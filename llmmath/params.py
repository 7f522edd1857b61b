"""Exact parameter counts of a :class:`~llmmath.TransformerConfig`.

Every count is a sum of weight-matrix shapes (``rows x cols``) and vector lengths, exactly as the
reference implementations allocate them (checked against ``transformers`` in
``tests/test_params.py``). A model is a sum over its layers, and a layer's count depends only on
its :class:`~llmmath.LayerSpec` (dense or mixture-of-experts MLP), so every count below is
``sum over layer kinds (count x per-layer formula)``. Derived in chapter
:doc:`/chapters/parameter-counts`.

Symbols: ``L`` layers, ``h`` hidden size, ``e`` embedding width (``h`` except OPT-350m), ``V``
vocabulary, ``S`` learned positions (plus the implementation's offset), ``T`` token types, ``d_q = a
d_head`` query width, ``d_kv = a_kv d_head`` key width, ``d_v = a_kv d_vh`` value width (``d_vh`` a
value head's width, ``d_head`` in most models), ``d_ff`` MLP width, ``E`` experts of width ``d_e``
of which ``k`` are used per token, ``d_s`` the
shared experts' width, ``n`` norm parameters per normalised vector (``2h`` for LayerNorm, ``h``
for RMSNorm and bias-free LayerNorm); MLA: ``r_q``, ``r_kv`` latent widths, ``d_r`` rotary dims.
"""

from __future__ import annotations

from ._validate import check_int
from .config import LayerSpec, TransformerConfig

__all__ = [
    "BREAKDOWN_KEYS",
    "EMBEDDING_KEYS",
    "param_breakdown",
    "param_count",
    "active_param_count",
    "non_embedding_param_count",
    "layer_param_count",
    "layer_param_counts",
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
    "shared_experts",
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

#: The keys of :func:`param_breakdown` that live inside the transformer layers.
_LAYER_KEYS = ("attention", "attention_bias", "mlp", "mlp_bias", "shared_experts", "router", "layer_norms")


def _check_cfg(cfg: object) -> TransformerConfig:
    if not isinstance(cfg, TransformerConfig):
        raise TypeError(f"cfg must be a TransformerConfig, got {type(cfg).__name__}")
    return cfg


def _norm_size(cfg: TransformerConfig) -> int:
    """Parameters of one norm over ``h`` features: ``2h`` (LayerNorm: gain and bias) or ``h``."""
    return (2 if cfg.norm == "layernorm" else 1) * cfg.hidden_size


def _mlp_weights(cfg: TransformerConfig, width: int, bias: bool) -> tuple[int, int]:
    """(weights, biases) of one MLP of ``width``: ``m h width`` with ``m = 2`` (plain) or ``3``
    (gated: gate, up and down projections), biases ``(m - 1) width + h``."""
    n_in = 2 if cfg.ffn_kind == "gated" else 1
    return (n_in + 1) * cfg.hidden_size * width, ((n_in * width + cfg.hidden_size) if bias else 0)


def _attention(cfg: TransformerConfig) -> tuple[int, int, int]:
    """(weights, biases, norm weights) of one self-attention block.

    Standard: ``h d_q + h d_kv + h d_v + a d_v h``; biases ``(d_q + d_kv + d_v) * qkv_bias +
    h * out_bias``; QK-norm ``2 d_head`` (``head``) or ``d_q + d_kv`` (``full``).
    MLA: queries ``h r_q + r_q a d_head`` (``h a d_head`` without a query latent), the key/value
    latent and the shared rotary key ``h (r_kv + d_r)``, their decompression
    ``r_kv a (d_head - d_r + d_v)``, the output ``a d_v h``; the latents' RMSNorms ``r_q + r_kv``;
    biases (``attention_bias``) on the two down projections and the output.
    """
    h, a = cfg.hidden_size, cfg.n_heads
    if cfg.kv_lora_rank:
        r_q, r_kv, d_r, d_qk, d_v = cfg.q_lora_rank, cfg.kv_lora_rank, cfg.rope_head_dim, cfg.head_dim, cfg.v_head_dim
        q = h * r_q + r_q * a * d_qk if r_q else h * a * d_qk
        w = q + h * (r_kv + d_r) + r_kv * a * (d_qk - d_r + d_v) + a * d_v * h
        b = (r_q + r_kv + d_r) * cfg.qkv_bias + h * cfg.out_bias
        return w, b, r_q + r_kv
    w = h * (cfg.q_dim + cfg.kv_dim + cfg.v_dim) + cfg.n_heads * cfg.v_head_dim * h
    b = (cfg.q_dim + cfg.kv_dim + cfg.v_dim) * cfg.qkv_bias + h * cfg.out_bias
    qk = {"none": 0, "head": 2 * cfg.head_dim, "full": cfg.q_dim + cfg.kv_dim}[cfg.qk_norm]
    return w, b, qk


def _layer(cfg: TransformerConfig, spec: LayerSpec, cross: bool = False) -> dict[str, int]:
    """The :data:`_LAYER_KEYS` of one layer of kind ``spec`` (``cross``: with cross-attention)."""
    out = dict.fromkeys(_LAYER_KEYS, 0)
    w, b, qk = _attention(cfg)
    n_attn = 2 if cross else 1  # T5's decoder: self-attention and cross-attention, same shapes
    out["attention"], out["attention_bias"] = n_attn * w, n_attn * b
    out["layer_norms"] = (cfg.norms_per_layer + cross) * _norm_size(cfg) + n_attn * qk
    if spec.mlp == "dense":
        out["mlp"], out["mlp_bias"] = _mlp_weights(cfg, cfg.ffn_size, cfg.mlp_bias)
    else:
        we, be = _mlp_weights(cfg, cfg.expert_ffn_size, cfg.mlp_bias)
        out["mlp"], out["mlp_bias"] = cfg.n_experts * we, cfg.n_experts * be
        if cfg.shared_ffn_size:
            out["shared_experts"] = sum(_mlp_weights(cfg, cfg.shared_ffn_size, cfg.mlp_bias))
        h = cfg.hidden_size
        out["router"] = h * cfg.n_experts + cfg.n_experts * cfg.router_bias + h * cfg.shared_expert_gate
    return out


def param_breakdown(cfg: TransformerConfig) -> dict[str, int]:
    """Exact parameter count of each component, summed over all layers.

    Keys (always all present, in the order of :data:`BREAKDOWN_KEYS`; 0 when absent):

    - ``token_embedding``: ``V e``.
    - ``position_embedding``: ``(S + offset) h`` for learned positions (OPT keeps 2 extra rows);
      T5's relative-position buckets, ``buckets x a`` per stack; 0 for rotary, ALiBi or none.
    - ``token_type_embedding``: ``T h`` (BERT's segment embeddings).
    - ``embedding_norm``: the norm after the embeddings (BERT), ``n``.
    - ``embedding_projection``: ``2 e h`` when ``e != h`` (OPT-350m's ``project_in`` and
      ``project_out``, no biases).
    - ``attention``: per layer ``h d_q + h d_kv + h d_v + a d_vh h`` (Q, K, V and output; MLA's
      low-rank projections instead: ``h r_q + r_q a d_head + h (r_kv + d_r) + r_kv a (d_head - d_r + d_vh)
      + a d_vh h``), twice in a layer with cross-attention.
    - ``attention_bias``: per layer ``(d_q + d_kv + d_v) * qkv_bias + h * out_bias``.
    - ``mlp``: per dense layer ``m h d_ff`` weights with ``m = 2`` (plain) or ``3`` (gated); per
      mixture-of-experts layer ``E m h d_e`` (the routed experts).
    - ``mlp_bias``: ``(m - 1) d_ff + h`` per MLP (and per expert), if the MLP has biases.
    - ``shared_experts``: per mixture-of-experts layer ``m h d_s`` (+ biases): the experts every
      token uses (DeepSeek, Qwen2-MoE).
    - ``router``: per mixture-of-experts layer ``h E (+ E)``, plus ``h`` for a shared-expert gate.
    - ``layer_norms``: per layer ``norms_per_layer * n`` (one more with cross-attention), plus the
      QK-norm weights and MLA's two latent RMSNorms.
    - ``final_norm``: ``n`` per stack if the model ends with a norm.
    - ``pooler``: ``h^2 + h`` (BERT's pooler).
    - ``lm_head``: ``V e`` if the output embedding is untied, else 0 (counted once, in
      ``token_embedding``).
    - ``lm_head_bias``: ``V`` (Phi, GPT-J).

    An encoder-decoder (T5) adds its encoder's ``n_encoder_layers`` layers (dense, no
    cross-attention) to the layer keys. "Without embeddings" is the total minus the
    :data:`EMBEDDING_KEYS`; "without the LM head" is the total minus ``lm_head`` and
    ``lm_head_bias``. The sum of all values is :func:`param_count`.
    Derived in chapter :doc:`/chapters/parameter-counts`.
    """
    cfg = _check_cfg(cfg)
    h, e, V = cfg.hidden_size, cfg.embedding_dim, cfg.vocab_size
    n = _norm_size(cfg)
    stacks = 2 if cfg.is_encoder_decoder else 1
    out = dict.fromkeys(BREAKDOWN_KEYS, 0)
    out["token_embedding"] = V * e
    if cfg.position == "learned":
        out["position_embedding"] = (cfg.max_position + cfg.position_offset) * h
    elif cfg.position == "relative":
        out["position_embedding"] = stacks * cfg.relative_buckets * cfg.n_heads
    out["token_type_embedding"] = cfg.token_types * h
    out["embedding_norm"] = n if cfg.embedding_norm else 0
    out["embedding_projection"] = 2 * e * h if e != h else 0
    kinds = [(spec, count, cfg.is_encoder_decoder) for spec, count in cfg.layer_counts.items()]
    if cfg.is_encoder_decoder:
        kinds.append((LayerSpec("full", "dense"), cfg.n_encoder_layers, False))
    for spec, count, cross in kinds:
        for key, value in _layer(cfg, spec, cross).items():
            out[key] += count * value
    out["final_norm"] = stacks * n if cfg.final_norm else 0
    out["pooler"] = h * h + h if cfg.pooler else 0
    if not cfg.tie_embeddings:
        out["lm_head"] = V * e
    out["lm_head_bias"] = V if cfg.lm_head_bias else 0
    return out


def param_count(cfg: TransformerConfig) -> int:
    """Exact number of parameters, tied weights counted once.

    ``sum(param_breakdown(cfg).values())``: for a causal LM what
    ``sum(p.numel() for p in model.parameters())`` gives for the ``...ForCausalLM`` class
    (embeddings, layers, final norm, LM head); for T5 ``T5ForConditionalGeneration``; for a
    BERT-style encoder the base model (``BertModel``, with its pooler).
    GPT-style shorthand: ``L (12 h^2 + 13 h) + (V + S) h + 2h``.
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


def layer_param_counts(cfg: TransformerConfig) -> list[int]:
    """Parameters of each of the ``n_layers`` (decoder) layers, in order: attention, MLP or
    experts with router and shared experts, norms, biases. Layers differ only through their
    :class:`~llmmath.LayerSpec` (DeepSeek-V3's first three layers are dense, the rest MoE).
    Derived in chapter :doc:`/chapters/parameter-counts`.
    """
    cfg = _check_cfg(cfg)
    per_kind = {spec: sum(_layer(cfg, spec, cfg.is_encoder_decoder).values()) for spec in cfg.layer_counts}
    return [per_kind[spec] for spec in cfg.layers]


def layer_param_count(cfg: TransformerConfig, layer: int = 0) -> int:
    """Parameters of layer ``layer`` (0-based; default the first). For a GPT-2-style layer
    ``12 h^2 + 13 h``. Derived in chapter :doc:`/chapters/parameter-counts`.
    """
    cfg = _check_cfg(cfg)
    layer = check_int("layer", layer, minimum=0, maximum=cfg.n_layers - 1)
    return layer_param_counts(cfg)[layer]


def active_param_count(cfg: TransformerConfig) -> int:
    """Parameters used for one token: :func:`param_count` with the routed experts of each
    mixture-of-experts layer counted ``k`` of ``E`` times,
    ``N - L_moe (E - k) (m h d_e + biases)``. The router, the shared experts, the dense layers and
    every non-expert weight are active; embeddings count as active, as in the Mixtral paper's
    "13B active" and DeepSeek-V3's "37B activated" figures. Equal to :func:`param_count` for a
    dense model. Derived in chapter :doc:`/chapters/parameter-counts`.
    """
    cfg = _check_cfg(cfg)
    total = param_count(cfg)
    if not cfg.is_moe:
        return total
    n_moe = sum(count for spec, count in cfg.layer_counts.items() if spec.mlp == "moe")
    return total - n_moe * (cfg.n_experts - cfg.experts_per_token) * sum(
        _mlp_weights(cfg, cfg.expert_ffn_size, cfg.mlp_bias))


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
