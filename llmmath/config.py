"""The model description every formula of the book is a function of.

A :class:`TransformerConfig` is a frozen dataclass: the shapes of a transformer and the design
choices that change its parameter, FLOP and memory counts (biases, norm kind, gated MLP, GQA/MQA,
position embeddings, tied output embedding, mixture of experts, parallel blocks, encoder extras).
:func:`from_hf_config` reads a Hugging Face ``config.json`` dictionary into one.

Introduced in chapter :doc:`/chapters/matmul-cost`; the notation is in :doc:`/chapters/notation`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._validate import check_bool, check_choice, check_int

__all__ = [
    "TransformerConfig",
    "from_hf_config",
    "SUPPORTED_MODEL_TYPES",
    "ACTIVATIONS",
]

FFN_KINDS = ("mlp", "gated")
NORMS = ("layernorm", "rmsnorm")
POSITIONS = ("learned", "rotary", "alibi", "none")
#: Activations the formulas know (names as Hugging Face spells them).
ACTIVATIONS = (
    "gelu",
    "gelu_new",
    "gelu_fast",
    "gelu_pytorch_tanh",
    "quick_gelu",
    "relu",
    "silu",
    "swish",
    "tanh",
)


@dataclass(frozen=True)
class TransformerConfig:
    """Shapes and design choices of an encoder or decoder transformer.

    Symbols (see :doc:`/chapters/notation`): ``L = n_layers``, ``h = hidden_size``, ``a = n_heads``,
    ``a_kv = n_kv_heads``, ``d_head = head_dim``, ``d_ff = ffn_size``, ``V = vocab_size``,
    ``S = max_position``.

    Defaults describe a GPT-2-style decoder: LayerNorm with bias, biases on every projection,
    a 2-matrix GELU MLP with ``d_ff = 4h``, learned positions, tied output embedding. Fields left
    as ``None`` are derived: ``n_kv_heads = n_heads``, ``head_dim = h / a`` (``a`` must then
    divide ``h``), ``ffn_size = 4h``, ``embedding_dim = h``.
    Every field is validated when the config is constructed.
    """

    n_layers: int
    hidden_size: int
    n_heads: int
    vocab_size: int
    ffn_size: int | None = None
    n_kv_heads: int | None = None
    head_dim: int | None = None
    name: str = "custom"
    family: str = "custom"
    causal: bool = True
    ffn_kind: str = "mlp"
    activation: str = "gelu"
    norm: str = "layernorm"
    norms_per_layer: int = 2
    final_norm: bool = True
    qkv_bias: bool = True
    out_bias: bool = True
    mlp_bias: bool = True
    lm_head_bias: bool = False
    position: str = "learned"
    max_position: int | None = None
    position_offset: int = 0
    tie_embeddings: bool = True
    embedding_dim: int | None = None
    token_types: int = 0
    embedding_norm: bool = False
    pooler: bool = False
    n_experts: int = 0
    experts_per_token: int = 0
    router_bias: bool = False
    parallel_block: bool = False
    source: str = ""

    def __post_init__(self) -> None:  # noqa: C901 - one check per field, in field order
        for f in ("n_layers", "hidden_size", "n_heads", "vocab_size"):
            check_int(f, getattr(self, f))
        h, a = self.hidden_size, self.n_heads
        if self.head_dim is None:
            if h % a:
                raise ValueError(
                    f"n_heads must divide hidden_size when head_dim is not given: {h} % {a} = {h % a}"
                )
            object.__setattr__(self, "head_dim", h // a)
        else:
            check_int("head_dim", self.head_dim)
        if self.n_kv_heads is None:
            object.__setattr__(self, "n_kv_heads", a)
        check_int("n_kv_heads", self.n_kv_heads, maximum=a)
        if a % self.n_kv_heads:
            raise ValueError(f"n_kv_heads must divide n_heads: {a} % {self.n_kv_heads} != 0")
        if self.ffn_size is None:
            object.__setattr__(self, "ffn_size", 4 * h)
        check_int("ffn_size", self.ffn_size)
        if self.embedding_dim is None:
            object.__setattr__(self, "embedding_dim", h)
        check_int("embedding_dim", self.embedding_dim)
        for f in ("name", "family", "source"):
            if not isinstance(getattr(self, f), str):
                raise TypeError(f"{f} must be a string, got {getattr(self, f)!r}")
        for f in (
            "causal", "final_norm", "qkv_bias", "out_bias", "mlp_bias", "lm_head_bias",
            "tie_embeddings", "embedding_norm", "pooler", "router_bias", "parallel_block",
        ):
            check_bool(f, getattr(self, f))
        check_choice("ffn_kind", self.ffn_kind, FFN_KINDS)
        check_choice("activation", self.activation, ACTIVATIONS)
        check_choice("norm", self.norm, NORMS)
        check_int("norms_per_layer", self.norms_per_layer, minimum=0, maximum=4)
        check_choice("position", self.position, POSITIONS)
        if self.position == "learned":
            if self.max_position is None:
                raise ValueError("max_position is required when position='learned' (the table has S rows)")
        if self.max_position is not None:
            check_int("max_position", self.max_position)
        check_int("position_offset", self.position_offset, minimum=0)
        check_int("token_types", self.token_types, minimum=0)
        check_int("n_experts", self.n_experts, minimum=0)
        if self.n_experts == 1:
            raise ValueError("n_experts must be 0 (dense) or >= 2 (mixture of experts), got 1")
        if self.n_experts:
            check_int("experts_per_token", self.experts_per_token, maximum=self.n_experts)
        elif self.experts_per_token != 0:
            raise ValueError(f"experts_per_token must be 0 for a dense model, got {self.experts_per_token}")

    # ---- derived quantities -------------------------------------------------------------
    @property
    def q_dim(self) -> int:
        """Width of the query projection, ``a * d_head`` (equals ``h`` in most models)."""
        return self.n_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        """Width of the key (and of the value) projection, ``a_kv * d_head``."""
        return self.n_kv_heads * self.head_dim

    @property
    def attention_kind(self) -> str:
        """``"MHA"`` (``a_kv = a``), ``"MQA"`` (``a_kv = 1``) or ``"GQA"`` (in between)."""
        if self.n_kv_heads == self.n_heads:
            return "MHA"
        return "MQA" if self.n_kv_heads == 1 else "GQA"

    @property
    def is_moe(self) -> bool:
        """Whether the MLP is a mixture of experts."""
        return self.n_experts > 0

    def replace(self, **changes: Any) -> TransformerConfig:
        """A copy with some fields changed (validated again), like ``dataclasses.replace``.

        Derived fields (``head_dim``, ``n_kv_heads``, ``ffn_size``, ``embedding_dim``) are kept as
        they are unless changed too; pass ``None`` to derive them again.
        """
        return dataclasses.replace(self, **changes)


# ---------------------------------------------------------------------------------------------
# Hugging Face config.json -> TransformerConfig
# ---------------------------------------------------------------------------------------------

#: The ``model_type`` values of Hugging Face configurations that :func:`from_hf_config` reads.
SUPPORTED_MODEL_TYPES = (
    "gpt2", "gpt_neox", "opt", "bert", "llama", "mistral", "mixtral", "qwen2", "gemma", "phi", "falcon",
)


def _get(d: Mapping[str, Any], key: str, default: Any) -> Any:
    value = d.get(key, default)
    return default if value is None else value


def _llama_like(d: Mapping[str, Any], model_type: str, **defaults: Any) -> dict[str, Any]:
    """Fields shared by llama, mistral, mixtral, qwen2 and gemma (defaults as in ``transformers``)."""
    h = _get(d, "hidden_size", defaults["hidden_size"])
    a = _get(d, "num_attention_heads", defaults["num_attention_heads"])
    bias = bool(_get(d, "attention_bias", defaults.get("attention_bias", False)))
    return dict(
        n_layers=_get(d, "num_hidden_layers", defaults["num_hidden_layers"]),
        hidden_size=h,
        n_heads=a,
        n_kv_heads=_get(d, "num_key_value_heads", defaults.get("num_key_value_heads", a)),
        # LlamaConfig requires a | h; the others take head_dim = h // a (floor) when it is not given.
        head_dim=_get(d, "head_dim", defaults.get("head_dim", None if model_type == "llama" and h % a else h // a)),
        vocab_size=_get(d, "vocab_size", defaults["vocab_size"]),
        ffn_size=_get(d, "intermediate_size", defaults["intermediate_size"]),
        ffn_kind="gated",
        activation=_get(d, "hidden_act", "silu"),
        norm="rmsnorm",
        qkv_bias=bias,
        out_bias=bias,
        mlp_bias=bool(_get(d, "mlp_bias", False)),
        position="rotary",
        max_position=_get(d, "max_position_embeddings", defaults["max_position_embeddings"]),
        tie_embeddings=bool(_get(d, "tie_word_embeddings", defaults["tie_word_embeddings"])),
    )


def from_hf_config(d: Mapping[str, Any], name: str | None = None) -> TransformerConfig:
    """Read a Hugging Face ``config.json`` dictionary.

    Supports the ``model_type`` values in :data:`SUPPORTED_MODEL_TYPES`. Missing fields take the
    defaults the ``transformers`` configuration class of that model type applies (checked by
    ``tests/test_config.py`` against ``transformers`` itself). Unsupported ``model_type``, a
    missing ``model_type`` or a setting the formulas cannot describe raise ``ValueError``.
    """
    if not isinstance(d, Mapping):
        raise TypeError(f"d must be a dict read from config.json, got {type(d).__name__}")
    if "model_type" not in d:
        raise ValueError("config is missing the required field 'model_type'")
    mt = d["model_type"]
    if mt not in SUPPORTED_MODEL_TYPES:
        raise ValueError(f"model_type {mt!r} is not supported; supported: {', '.join(SUPPORTED_MODEL_TYPES)}")
    label = name or d.get("_name_or_path") or mt
    if _get(d, "add_cross_attention", False):
        raise ValueError("add_cross_attention=True (encoder-decoder cross-attention) is not supported")
    kw: dict[str, Any]
    if mt == "gpt2":
        h = _get(d, "n_embd", 768)
        kw = dict(
            n_layers=_get(d, "n_layer", 12), hidden_size=h, n_heads=_get(d, "n_head", 12),
            vocab_size=_get(d, "vocab_size", 50257), ffn_size=_get(d, "n_inner", 4 * h),
            activation=_get(d, "activation_function", "gelu_new"),
            max_position=_get(d, "n_positions", 1024),
            tie_embeddings=bool(_get(d, "tie_word_embeddings", True)),
        )
    elif mt == "gpt_neox":
        bias = bool(_get(d, "attention_bias", True))
        kw = dict(
            n_layers=_get(d, "num_hidden_layers", 44), hidden_size=_get(d, "hidden_size", 6144),
            n_heads=_get(d, "num_attention_heads", 64), vocab_size=_get(d, "vocab_size", 50432),
            ffn_size=_get(d, "intermediate_size", 24576), activation=_get(d, "hidden_act", "gelu"),
            qkv_bias=bias, out_bias=bias, mlp_bias=True, position="rotary",
            max_position=_get(d, "max_position_embeddings", 2048),
            tie_embeddings=bool(_get(d, "tie_word_embeddings", False)),
            parallel_block=bool(_get(d, "use_parallel_residual", True)),
        )
    elif mt == "opt":
        if not _get(d, "layer_norm_elementwise_affine", True):
            raise ValueError("layer_norm_elementwise_affine=False (norms without parameters) is not supported")
        bias = bool(_get(d, "enable_bias", True))
        h = _get(d, "hidden_size", 768)
        pre_ln = bool(_get(d, "do_layer_norm_before", True))
        kw = dict(
            n_layers=_get(d, "num_hidden_layers", 12), hidden_size=h,
            n_heads=_get(d, "num_attention_heads", 12), vocab_size=_get(d, "vocab_size", 50272),
            ffn_size=_get(d, "ffn_dim", 3072), activation=_get(d, "activation_function", "relu"),
            qkv_bias=bias, out_bias=bias, mlp_bias=bias,
            max_position=_get(d, "max_position_embeddings", 2048), position_offset=2,
            final_norm=pre_ln and not bool(_get(d, "_remove_final_layer_norm", False)),
            embedding_dim=_get(d, "word_embed_proj_dim", h),
            tie_embeddings=bool(_get(d, "tie_word_embeddings", True)),
        )
    elif mt == "bert":
        if _get(d, "position_embedding_type", "absolute") != "absolute":
            raise ValueError("position_embedding_type must be 'absolute' (relative BERT variants are not supported)")
        kw = dict(
            n_layers=_get(d, "num_hidden_layers", 12), hidden_size=_get(d, "hidden_size", 768),
            n_heads=_get(d, "num_attention_heads", 12), vocab_size=_get(d, "vocab_size", 30522),
            ffn_size=_get(d, "intermediate_size", 3072), activation=_get(d, "hidden_act", "gelu"),
            causal=False, final_norm=False, max_position=_get(d, "max_position_embeddings", 512),
            token_types=_get(d, "type_vocab_size", 2), embedding_norm=True, pooler=True,
            tie_embeddings=True,
        )
    elif mt == "llama":
        kw = _llama_like(d, mt, hidden_size=4096, num_attention_heads=32, num_hidden_layers=32,
                         vocab_size=32000, intermediate_size=11008, max_position_embeddings=2048,
                         tie_word_embeddings=False)
    elif mt == "mistral":
        kw = _llama_like(d, mt, hidden_size=4096, num_attention_heads=32, num_hidden_layers=32,
                         num_key_value_heads=8, vocab_size=32000, intermediate_size=14336,
                         max_position_embeddings=131072, tie_word_embeddings=False)
        # MistralAttention's projections never have biases (attention_bias is ignored).
        kw.update(qkv_bias=False, out_bias=False, mlp_bias=False)
    elif mt == "mixtral":
        kw = _llama_like(d, mt, hidden_size=4096, num_attention_heads=32, num_hidden_layers=32,
                         num_key_value_heads=8, vocab_size=32000, intermediate_size=14336,
                         max_position_embeddings=131072, tie_word_embeddings=False)
        kw.update(n_experts=_get(d, "num_local_experts", 8), experts_per_token=_get(d, "num_experts_per_tok", 2),
                  qkv_bias=False, out_bias=False, mlp_bias=False)
    elif mt == "qwen2":
        kw = _llama_like(d, mt, hidden_size=4096, num_attention_heads=32, num_hidden_layers=32,
                         vocab_size=151936, intermediate_size=22016, max_position_embeddings=32768,
                         tie_word_embeddings=False)
        kw.update(qkv_bias=True, out_bias=False, mlp_bias=False)
    elif mt == "gemma":
        kw = _llama_like(d, mt, hidden_size=3072, num_attention_heads=16, num_hidden_layers=28,
                         head_dim=256, vocab_size=256000, intermediate_size=24576,
                         max_position_embeddings=8192, tie_word_embeddings=True)
        kw["activation"] = _get(d, "hidden_activation", _get(d, "hidden_act", "gelu_pytorch_tanh"))
        kw["mlp_bias"] = False
    elif mt == "phi":
        if _get(d, "qk_layernorm", False):
            raise ValueError("qk_layernorm=True is not supported for model_type 'phi'")
        a = _get(d, "num_attention_heads", 32)
        h = _get(d, "hidden_size", 2048)
        kw = dict(
            n_layers=_get(d, "num_hidden_layers", 24), hidden_size=h, n_heads=a, head_dim=_get(d, "head_dim", h // a),
            n_kv_heads=_get(d, "num_key_value_heads", a), vocab_size=_get(d, "vocab_size", 51200),
            ffn_size=_get(d, "intermediate_size", 8192), activation=_get(d, "hidden_act", "gelu_new"),
            norms_per_layer=1, lm_head_bias=True, position="rotary",
            max_position=_get(d, "max_position_embeddings", 2048),
            tie_embeddings=bool(_get(d, "tie_word_embeddings", False)), parallel_block=True,
        )
    else:  # falcon
        h = _get(d, "hidden_size", 4544)
        a = _get(d, "num_attention_heads", 71)
        new_arch = bool(_get(d, "new_decoder_architecture", False))
        parallel = bool(_get(d, "parallel_attn", True))
        if new_arch:
            kv = _get(d, "num_kv_heads", a)
        elif _get(d, "multi_query", True):
            kv = 1
        else:
            kv = a
        # FalconDecoderLayer: two LayerNorms unless the block is parallel with one shared norm;
        # num_ln_in_parallel_attn defaults to 2 only for the new decoder architecture.
        n_ln = _get(d, "num_ln_in_parallel_attn", 2 if new_arch else 1)
        norms = 2 if (not parallel or n_ln == 2) else 1
        bias = bool(_get(d, "bias", False))
        kw = dict(
            n_layers=_get(d, "num_hidden_layers", 32), hidden_size=h, n_heads=a, n_kv_heads=kv,
            vocab_size=_get(d, "vocab_size", 65024), ffn_size=_get(d, "ffn_hidden_size", 4 * h),
            activation=_get(d, "activation", "gelu"), norms_per_layer=norms,
            qkv_bias=bias, out_bias=bias, mlp_bias=bias,
            position="alibi" if _get(d, "alibi", False) else "rotary",
            max_position=_get(d, "max_position_embeddings", 2048),
            tie_embeddings=bool(_get(d, "tie_word_embeddings", True)),
            parallel_block=new_arch or parallel,
        )
    kw["family"] = mt
    kw["name"] = str(label)
    return TransformerConfig(**kw)
