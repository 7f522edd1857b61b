"""The model description every formula of the book is a function of.

A :class:`TransformerConfig` is a frozen dataclass: the shapes of a transformer and the design
choices that change its parameter, FLOP and memory counts. What varies from layer to layer
(dense then mixture-of-experts MLPs; local sliding-window then global attention) is data in the
config too, :attr:`TransformerConfig.layers`, which every formula reads; no formula branches on a
model family. :func:`from_hf_config` reads a Hugging Face ``config.json`` dictionary into one.

Introduced in chapter :doc:`/chapters/matmul-cost`; the notation is in :doc:`/chapters/notation`;
the architectural variants are derived in chapter :doc:`/chapters/parameter-counts`.
"""

from __future__ import annotations

import dataclasses
import numbers
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from ._validate import check_bool, check_choice, check_int

__all__ = [
    "TransformerConfig",
    "LayerSpec",
    "from_hf_config",
    "SUPPORTED_MODEL_TYPES",
    "MODEL_TYPE_CLASSES",
    "ACTIVATIONS",
    "ATTENTION_TYPES",
    "MLP_TYPES",
    "QK_NORMS",
    "NORMS",
    "supported_families_table",
    "MAX_COUNT",
    "MAX_SIZE",
]

FFN_KINDS = ("mlp", "gated")
#: Norms: LayerNorm with gain and bias (``2h`` parameters), RMSNorm (``h``) and LayerNorm without
#: a bias (``h``: Cohere).
NORMS = ("layernorm", "rmsnorm", "layernorm_nobias")
POSITIONS = ("learned", "rotary", "alibi", "relative", "none")
#: Per-layer attention: ``full`` (every earlier token) or ``sliding`` (the last ``sliding_window``).
ATTENTION_TYPES = ("full", "sliding")
#: Per-layer MLP: ``dense`` (one MLP of width ``ffn_size``) or ``moe`` (experts, router, shared experts).
MLP_TYPES = ("dense", "moe")
#: Normalisation of queries and keys before the scores: ``none``; ``head`` (one ``d_head`` weight
#: vector shared by the heads: Qwen3, Gemma 3); ``full`` (one weight per query and key feature:
#: OLMo 2 normalises the whole vector, Cohere and StableLM 2 each head with its own weights).
QK_NORMS = ("none", "head", "full")
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


#: Largest count (layers, heads, experts, experts per token, layer-pattern steps) a config may
#: give: published models have at most a few hundred of each; the bound also keeps every
#: per-layer loop finite (10**30 layers used to hang).
MAX_COUNT = 100_000
#: Largest size (hidden, FFN, head and latent widths, vocabulary, positions, windows): a physical
#: bound, one vector of 10**12 values takes 2 TB in BF16, more than any accelerator's memory.
MAX_SIZE = 10**12
_BOUND_WHY = {
    MAX_COUNT: "published models have at most a few hundred layers, heads or experts",
    MAX_SIZE: "a physical bound: one vector of 10^12 values takes 2 TB in BF16, more than any "
              "accelerator's memory",
}


class LayerSpec(NamedTuple):
    """What may differ between two layers of one model: the attention type and the MLP type."""

    #: ``"full"`` or ``"sliding"`` (a sliding window)
    attention: str
    #: ``"dense"`` or ``"moe"`` (a mixture of experts)
    mlp: str


@dataclass(frozen=True)
class TransformerConfig:
    """Shapes and design choices of an encoder, decoder or encoder-decoder transformer.

    Symbols (see :doc:`/chapters/notation`): ``L = n_layers``, ``h = hidden_size``, ``a = n_heads``,
    ``a_kv = n_kv_heads``, ``d_head = head_dim``, ``d_ff = ffn_size``, ``V = vocab_size``,
    ``S = max_position``.

    The fields, by part (every one validated when the config is constructed):

    - **shape**: ``n_layers``, ``hidden_size``, ``n_heads``, ``vocab_size``; ``n_encoder_layers``
      (> 0 for an encoder-decoder such as T5: ``n_layers`` is then the decoder, whose every layer
      also has cross-attention over the encoder's output).
    - **attention**: ``n_kv_heads`` (GQA/MQA), ``head_dim`` (query/key width per head),
      ``v_head_dim`` (value width per head, default ``head_dim``), ``qkv_bias``, ``out_bias``,
      ``qk_norm`` (:data:`QK_NORMS`), ``sliding_window``; multi-head latent attention (MLA,
      DeepSeek-V2/V3) when ``kv_lora_rank > 0``: keys and values are decompressed from a latent of
      width ``kv_lora_rank``, queries from one of width ``q_lora_rank`` (0: a full ``q_proj``), and
      ``rope_head_dim`` of the ``head_dim`` query/key features carry rotary positions with one key
      shared by all heads.
    - **MLP**: ``ffn_kind`` (``mlp`` or ``gated``), ``activation``, ``ffn_size``, ``mlp_bias``;
      mixture of experts: ``n_experts`` routed experts of width ``expert_ffn_size`` (default
      ``ffn_size``) of which ``experts_per_token`` per token, ``router_bias``, ``shared_ffn_size``
      (total width of the always-active shared experts, 0 for none) and ``shared_expert_gate``.
    - **layer pattern**: ``attention_types`` and ``mlp_types``, one entry per layer
      (:data:`ATTENTION_TYPES`, :data:`MLP_TYPES`); empty means uniform: every layer ``sliding`` if
      ``sliding_window`` is set (Mistral), else ``full``; every layer ``moe`` if ``n_experts``, else
      ``dense``. :attr:`layers` resolves them.
    - **norms**: ``norm`` (:data:`NORMS`), ``norms_per_layer`` (Gemma 2 has 4), ``final_norm``,
      ``embedding_norm``.
    - **implementation**: ``kv_broadcast``: the reference implementation caches the keys and
      values broadcast to all ``n_heads`` heads though the model computes only ``n_kv_heads``
      (``transformers``' Falcon with ``new_decoder_architecture``); the KV-cache formulas count
      the grouped cache, what serving engines such as vLLM keep.
    - **positions and embeddings**: ``position`` (learned table of ``max_position +
      position_offset`` rows, rotary, ALiBi, T5's ``relative`` bias with ``relative_buckets``
      buckets per head, or none), ``tie_embeddings``, ``embedding_dim`` (OPT-350m), ``token_types``,
      ``pooler``, ``lm_head_bias``, ``parallel_block`` (attention and MLP read the same input).

    Counts (layers, heads, experts) are at most :data:`MAX_COUNT`, sizes (widths, vocabulary,
    positions, windows) at most :data:`MAX_SIZE`.
    Fields left as ``None`` are derived: ``n_kv_heads = n_heads``, ``head_dim = h / a`` (``a`` must
    then divide ``h``), ``v_head_dim = head_dim``, ``ffn_size = 4h``, ``expert_ffn_size =
    ffn_size``, ``embedding_dim = h``. Defaults describe a GPT-2-style decoder.
    """

    # ---- shape
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
    n_encoder_layers: int = 0
    # ---- MLP
    ffn_kind: str = "mlp"
    activation: str = "gelu"
    # ---- norms
    norm: str = "layernorm"
    norms_per_layer: int = 2
    final_norm: bool = True
    # ---- biases
    qkv_bias: bool = True
    out_bias: bool = True
    mlp_bias: bool = True
    lm_head_bias: bool = False
    # ---- positions and embeddings
    position: str = "learned"
    max_position: int | None = None
    position_offset: int = 0
    tie_embeddings: bool = True
    embedding_dim: int | None = None
    token_types: int = 0
    embedding_norm: bool = False
    pooler: bool = False
    # ---- mixture of experts
    n_experts: int = 0
    experts_per_token: int = 0
    router_bias: bool = False
    parallel_block: bool = False
    source: str = ""
    expert_ffn_size: int | None = None
    shared_ffn_size: int = 0
    shared_expert_gate: bool = False
    # ---- attention variants
    v_head_dim: int | None = None
    qk_norm: str = "none"
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    rope_head_dim: int = 0
    sliding_window: int | None = None
    relative_buckets: int = 0
    # ---- layer pattern
    attention_types: tuple[str, ...] = ()
    mlp_types: tuple[str, ...] = ()
    # ---- implementation
    kv_broadcast: bool = False

    def __post_init__(self) -> None:  # noqa: C901 - one check per field, in field order
        for f in ("n_layers", "n_heads"):
            check_int(f, getattr(self, f), maximum=MAX_COUNT)
        for f in ("hidden_size", "vocab_size"):
            check_int(f, getattr(self, f), maximum=MAX_SIZE)
        h, a = self.hidden_size, self.n_heads
        if self.head_dim is None:
            if h % a:
                raise ValueError(f"n_heads must divide hidden_size when head_dim is not given (the head size "
                                 f"hidden_size / n_heads is never rounded down): {h} % {a} = {h % a}")
            object.__setattr__(self, "head_dim", h // a)
        else:
            check_int("head_dim", self.head_dim, maximum=MAX_SIZE)
        if self.n_kv_heads is None:
            object.__setattr__(self, "n_kv_heads", a)
        check_int("n_kv_heads", self.n_kv_heads, maximum=MAX_COUNT)
        if self.n_kv_heads > a:
            raise ValueError(f"n_kv_heads ({self.n_kv_heads}) must be <= n_heads ({a})")
        if a % self.n_kv_heads:
            raise ValueError(f"n_kv_heads must divide n_heads: {a} % {self.n_kv_heads} != 0")
        if self.ffn_size is None:
            object.__setattr__(self, "ffn_size", 4 * h)
        check_int("ffn_size", self.ffn_size, maximum=MAX_SIZE)
        if self.embedding_dim is None:
            object.__setattr__(self, "embedding_dim", h)
        check_int("embedding_dim", self.embedding_dim, maximum=MAX_SIZE)
        if self.v_head_dim is None:
            object.__setattr__(self, "v_head_dim", self.head_dim)
        check_int("v_head_dim", self.v_head_dim, maximum=MAX_SIZE)
        for f in ("name", "family", "source"):
            if not isinstance(getattr(self, f), str):
                raise TypeError(f"{f} must be a string, got {getattr(self, f)!r}")
        for f in (
            "causal", "final_norm", "qkv_bias", "out_bias", "mlp_bias", "lm_head_bias",
            "tie_embeddings", "embedding_norm", "pooler", "router_bias", "parallel_block",
            "shared_expert_gate", "kv_broadcast",
        ):
            check_bool(f, getattr(self, f))
        check_int("n_encoder_layers", self.n_encoder_layers, minimum=0, maximum=MAX_COUNT)
        if self.n_encoder_layers and not self.causal:
            raise ValueError("n_encoder_layers > 0 (encoder-decoder) needs causal=True (the decoder)")
        check_choice("ffn_kind", self.ffn_kind, FFN_KINDS)
        check_choice("activation", self.activation, ACTIVATIONS)
        check_choice("norm", self.norm, NORMS)
        check_int("norms_per_layer", self.norms_per_layer, minimum=0, maximum=4)
        check_choice("position", self.position, POSITIONS)
        if self.position == "learned" and self.max_position is None:
            raise ValueError("max_position is required when position='learned' (the table has S rows)")
        if self.max_position is not None:
            check_int("max_position", self.max_position, maximum=MAX_SIZE)
        for f in ("position_offset", "token_types", "relative_buckets"):
            check_int(f, getattr(self, f), minimum=0, maximum=MAX_SIZE)
        if (self.position == "relative") != (self.relative_buckets > 0):
            raise ValueError("relative_buckets must be >= 1 exactly when position='relative', got "
                             f"position={self.position!r}, relative_buckets={self.relative_buckets}")
        self._check_experts()
        self._check_attention()
        self._check_pattern()

    def _check_experts(self) -> None:
        check_int("n_experts", self.n_experts, minimum=0, maximum=MAX_COUNT)
        if self.n_experts == 1:
            raise ValueError("n_experts must be 0 (dense) or >= 2 (mixture of experts), got 1")
        if self.n_experts:
            check_int("experts_per_token", self.experts_per_token, maximum=MAX_COUNT)
            if self.experts_per_token > self.n_experts:
                raise ValueError(f"experts_per_token ({self.experts_per_token}) must be <= n_experts "
                                 f"({self.n_experts})")
        elif self.experts_per_token != 0:
            raise ValueError(f"experts_per_token must be 0 for a dense model, got {self.experts_per_token}")
        if self.expert_ffn_size is None:
            object.__setattr__(self, "expert_ffn_size", self.ffn_size)
        check_int("expert_ffn_size", self.expert_ffn_size, maximum=MAX_SIZE)
        check_int("shared_ffn_size", self.shared_ffn_size, minimum=0, maximum=MAX_SIZE)
        if (self.shared_ffn_size or self.shared_expert_gate or self.router_bias) and not self.n_experts:
            raise ValueError("shared_ffn_size, shared_expert_gate and router_bias need n_experts >= 2")
        if self.shared_expert_gate and not self.shared_ffn_size:
            raise ValueError("shared_expert_gate=True needs shared_ffn_size >= 1 (a shared expert to gate)")

    def _check_attention(self) -> None:
        check_choice("qk_norm", self.qk_norm, QK_NORMS)
        for f in ("q_lora_rank", "kv_lora_rank", "rope_head_dim"):
            check_int(f, getattr(self, f), minimum=0, maximum=MAX_SIZE)
        if self.kv_lora_rank:
            check_int("rope_head_dim", self.rope_head_dim, minimum=0, maximum=self.head_dim - 1)
            if self.n_kv_heads != self.n_heads:
                raise ValueError("multi-head latent attention (kv_lora_rank > 0) decompresses a key and "
                                 f"value per head: n_kv_heads must equal n_heads, got {self.n_kv_heads}")
            if self.qk_norm != "none":
                raise ValueError("qk_norm must be 'none' with multi-head latent attention")
        elif self.q_lora_rank or self.rope_head_dim:
            raise ValueError("q_lora_rank and rope_head_dim describe multi-head latent attention: "
                             "they need kv_lora_rank >= 1")
        elif self.v_head_dim != self.head_dim:
            raise ValueError(f"v_head_dim ({self.v_head_dim}) may differ from head_dim ({self.head_dim}) "
                             "only with multi-head latent attention (kv_lora_rank >= 1)")
        if self.sliding_window is not None:
            check_int("sliding_window", self.sliding_window, maximum=MAX_SIZE)

    def _check_pattern(self) -> None:
        for name, values, choices in (("attention_types", self.attention_types, ATTENTION_TYPES),
                                      ("mlp_types", self.mlp_types, MLP_TYPES)):
            if not isinstance(values, tuple):
                raise TypeError(f"{name} must be a tuple of strings (one per layer), got {type(values).__name__}")
            if values and len(values) != self.n_layers:
                raise ValueError(f"{name} must have one entry per layer ({self.n_layers}) or none, "
                                 f"got {len(values)}")
            for i, v in enumerate(values):
                check_choice(f"{name}[{i}]", v, choices)
        if "sliding" in self.attention_types and self.sliding_window is None:
            raise ValueError("attention_types has 'sliding' layers: sliding_window must be set")
        if "moe" in self.mlp_types and not self.n_experts:
            raise ValueError("mlp_types has 'moe' layers: n_experts must be >= 2")

    # ---- derived quantities -------------------------------------------------------------
    @property
    def q_dim(self) -> int:
        """Width of the queries (and keys) of all heads, ``a * d_head`` (``h`` in most models)."""
        return self.n_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        """Width of the keys, ``a_kv * d_head`` (for MLA, the decompressed keys of all heads)."""
        return self.n_kv_heads * self.head_dim

    @property
    def v_dim(self) -> int:
        """Width of the values, ``a_kv * d_v`` (``kv_dim`` except for MLA)."""
        return self.n_kv_heads * self.v_head_dim

    @property
    def attention_kind(self) -> str:
        """``"MLA"`` (latent), ``"MHA"`` (``a_kv = a``), ``"MQA"`` (``a_kv = 1``) or ``"GQA"``."""
        if self.kv_lora_rank:
            return "MLA"
        if self.n_kv_heads == self.n_heads:
            return "MHA"
        return "MQA" if self.n_kv_heads == 1 else "GQA"

    @property
    def is_moe(self) -> bool:
        """Whether some layer's MLP is a mixture of experts."""
        return self.n_experts > 0

    @property
    def is_encoder_decoder(self) -> bool:
        """Whether the model has an encoder stack (T5) besides its ``n_layers`` decoder layers."""
        return self.n_encoder_layers > 0

    @property
    def layers(self) -> tuple[LayerSpec, ...]:
        """The :class:`LayerSpec` of each of the ``n_layers`` (decoder) layers, in order."""
        attn = self.attention_types or (("sliding" if self.sliding_window else "full"),) * self.n_layers
        mlp = self.mlp_types or (("moe" if self.n_experts else "dense"),) * self.n_layers
        return tuple(LayerSpec(x, y) for x, y in zip(attn, mlp, strict=True))

    @property
    def layer_counts(self) -> dict[LayerSpec, int]:
        """How many layers have each :class:`LayerSpec`, in order of first appearance."""
        return dict(Counter(self.layers))

    def replace(self, **changes: Any) -> TransformerConfig:
        """A copy with some fields changed (validated again), like ``dataclasses.replace``.

        Derived fields (``head_dim``, ``n_kv_heads``, ``ffn_size``, ...) are kept as they are unless
        changed too; pass ``None`` to derive them again. Changing ``n_layers`` of a config with a
        layer pattern needs a new pattern too.
        """
        return dataclasses.replace(self, **changes)


# ---------------------------------------------------------------------------------------------
# Hugging Face config.json -> TransformerConfig
# ---------------------------------------------------------------------------------------------
# Every value is read through one of the typed accessors below, which validate it and name the
# key as config.json spells it: booleans are JSON booleans (``"False"``, 0, NaN are refused, not
# read by truthiness), counts and sizes are integers in a stated range (a float, even ``2.0``, is
# refused), divisors of a layer pattern are >= 1. ``null`` is accepted only where the family's
# ``transformers`` configuration accepts it, with the meaning it has there (``n_inner: null`` is
# 4h, ``sliding_window: null`` no window, ``num_key_value_heads: null`` one KV head per query
# head where the class allows it); elsewhere (``intermediate_size: null``, a boolean set to null)
# it is refused, as transformers 5's strict configurations refuse it.

#: ``null=`` of the accessors: a null value is an error (the default).
_REFUSE: Any = object()


def _key(d: Mapping[str, Any], key: str, *aliases: str) -> str | None:
    """The first of ``key`` and ``aliases`` that ``d`` holds with a non-null value."""
    return next((k for k in (key, *aliases) if d.get(k) is not None), None)


def _int_field(key: str, value: Any, minimum: int, maximum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"config field {key!r} must be an integer, got {type(value).__name__} {value!r}")
    if not minimum <= value <= maximum:
        raise ValueError(f"config field {key!r} must be an integer from {minimum} to {maximum:,} "
                         f"({_BOUND_WHY[maximum]}), got {value}")
    return int(value)


def _null(d: Mapping[str, Any], keys: tuple[str, ...], default: Any, null: Any, what: str) -> Any:
    """The value of absent or null ``keys``: ``default`` when absent; ``null`` when null (an
    error if ``null`` is :data:`_REFUSE`)."""
    nulls = [k for k in keys if k in d]
    if not nulls:
        return default
    if null is _REFUSE:
        raise TypeError(f"config field {nulls[0]!r} must be {what}, got null")
    return null


def _int(d: Mapping[str, Any], key: str, default: Any, *aliases: str, minimum: int = 1,
         maximum: int = MAX_SIZE, null: Any = _REFUSE) -> Any:
    """A size (``maximum`` :data:`MAX_SIZE`) or count (:data:`MAX_COUNT`): ``d[key]`` (or the
    first alias present) as an integer in ``[minimum, maximum]``; ``default`` when absent, ``null``
    when null (refused by default)."""
    k = _key(d, key, *aliases)
    if k is None:
        return _null(d, (key, *aliases), default, null, "an integer")
    return _int_field(k, d[k], minimum, maximum)


def _count(d: Mapping[str, Any], key: str, default: Any, *aliases: str, minimum: int = 1,
           null: Any = _REFUSE) -> Any:
    return _int(d, key, default, *aliases, minimum=minimum, maximum=MAX_COUNT, null=null)


def _req(d: Mapping[str, Any], key: str, *aliases: str, maximum: int = MAX_SIZE) -> int:
    """A core shape field (``d[key]`` or an alias), an integer from 1 to ``maximum``: absent or
    ``null`` raises ``ValueError``, another type ``TypeError`` (both naming the key)."""
    k = _key(d, key, *aliases)
    if k is None:
        also = f" (or {', '.join(repr(a) for a in aliases)})" if aliases else ""
        raise ValueError(f"config is missing the required field {key!r}{also}: "
                         f"model_type {d.get('model_type')!r} has no default for it")
    return _int_field(k, d[k], 1, maximum)


def _window(d: Mapping[str, Any], key: str, default: int | None) -> int | None:
    """A window size where ``null`` means "none" (no sliding window); ``default`` when absent."""
    if key not in d:
        return default
    return None if d[key] is None else _int_field(key, d[key], 1, MAX_SIZE)


def _flag(d: Mapping[str, Any], key: str, default: bool) -> bool:
    """A JSON boolean (``true``/``false``); ``default`` when absent. Strings such as ``"False"``,
    numbers, NaN and null are refused, as ``transformers``' strict configs refuse them (or, for
    Falcon's nullable flags, read null as false)."""
    if key not in d:
        return default
    value = d[key]
    if not isinstance(value, bool):
        raise TypeError(f"config field {key!r} must be true or false (a JSON boolean), "
                        f"got {type(value).__name__} {value!r}")
    return value


def _text(d: Mapping[str, Any], key: str, default: str) -> str:
    if key not in d:
        return default
    value = d[key]
    if not isinstance(value, str):
        raise TypeError(f"config field {key!r} must be a string, got {type(value).__name__} {value!r}")
    return value


def _activation(d: Mapping[str, Any], default: str, *keys: str) -> str:
    """The activation named by the first of ``keys`` present and not null (Gemma's null
    ``hidden_activation`` falls back to ``hidden_act``), one of :data:`ACTIVATIONS`; ``default``
    when all are absent; null alone is refused."""
    k = _key(d, *keys)
    if k is None:
        nulls = [key for key in keys if key in d]
        if nulls:
            raise TypeError(f"config field {nulls[-1]!r} must be one of {', '.join(ACTIVATIONS)}; got null")
        return default
    if not isinstance(d[k], str) or d[k] not in ACTIVATIONS:
        raise (ValueError if isinstance(d[k], str) else TypeError)(
            f"config field {k!r} must be one of {', '.join(ACTIVATIONS)}; got {d[k]!r}")
    return d[k]


def _layer_list(d: Mapping[str, Any], key: str) -> list[int]:
    """A list of layer indices (``mlp_only_layers``); ``[]`` when absent or null (as Qwen's MoE
    configurations read it)."""
    value = d.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise TypeError(f"config field {key!r} must be a list of layer indices, got {type(value).__name__} {value!r}")
    return [_int_field(f"{key}[{i}]", v, 0, MAX_COUNT) for i, v in enumerate(value)]


def _layer_types(d: Mapping[str, Any], n_layers: int, rule: Callable[[int], bool] | None) -> tuple[str, ...]:
    """Per-layer attention types from ``layer_types`` ("full_attention"/"sliding_attention") or,
    when absent, from the family's ``rule(i) -> sliding?`` (as its transformers config does)."""
    names = d.get("layer_types")
    if names is not None:
        mapping = {"full_attention": "full", "sliding_attention": "sliding"}
        if not isinstance(names, list):
            raise TypeError(f"config field 'layer_types' must be a list (one entry per layer), "
                            f"got {type(names).__name__} {names!r}")
        unknown = [n for n in names if not isinstance(n, str) or n not in mapping]
        if unknown:
            raise ValueError(f"layer_types has unsupported entries {unknown[:3]!r}; supported: {', '.join(mapping)}")
        if len(names) != n_layers:
            raise ValueError(f"layer_types has {len(names)} entries for {n_layers} layers")
        return tuple(mapping[n] for n in names)
    if rule is None:
        return ()
    return tuple("sliding" if rule(i) else "full" for i in range(n_layers))


def _decoder(d: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """Fields shared by the Llama-style decoders (``hidden_size``, ``num_attention_heads``, ...).

    ``defaults`` are the defaults of the family's ``transformers`` configuration class for the
    optional fields, and ``defaults["nullable"]`` the keys among ``num_key_value_heads`` and
    ``head_dim`` that class lets be null (then ``a`` KV heads, ``h / a``); the core shape fields
    are required. Without ``head_dim`` the head size is ``hidden_size / num_attention_heads``,
    which must be an integer (never rounded down).
    """
    a = _req(d, "num_attention_heads", maximum=MAX_COUNT)
    nullable = defaults.get("nullable", ())
    bias = _flag(d, "attention_bias", defaults.get("attention_bias", False))
    return dict(
        n_layers=_req(d, "num_hidden_layers", maximum=MAX_COUNT),
        hidden_size=_req(d, "hidden_size"),
        n_heads=a,
        n_kv_heads=_count(d, "num_key_value_heads", defaults.get("num_key_value_heads", a),
                          null=a if "num_key_value_heads" in nullable else _REFUSE),
        head_dim=_int(d, "head_dim", None, null=None if "head_dim" in nullable else _REFUSE),
        vocab_size=_req(d, "vocab_size"),
        ffn_size=_int(d, "intermediate_size", defaults.get("intermediate_size")),
        ffn_kind="gated",
        activation=_activation(d, defaults.get("hidden_act", "silu"), "hidden_act"),
        norm="rmsnorm",
        qkv_bias=bias,
        out_bias=bias,
        mlp_bias=_flag(d, "mlp_bias", False),
        position="rotary",
        max_position=_int(d, "max_position_embeddings", defaults.get("max_position_embeddings")),
        tie_embeddings=_flag(d, "tie_word_embeddings", defaults.get("tie_word_embeddings", False)),
    )


def _moe_from_pattern(n_layers: int, is_moe: Callable[[int], bool]) -> tuple[str, ...]:
    return tuple("moe" if is_moe(i) else "dense" for i in range(n_layers))


# ---- one reader per model_type: d (the config.json dict) -> TransformerConfig fields ---------


def _gpt2(d: Mapping[str, Any]) -> dict[str, Any]:
    if _flag(d, "add_cross_attention", False):
        raise ValueError("add_cross_attention=True (encoder-decoder cross-attention) is not supported")
    h = _req(d, "n_embd", "hidden_size")
    return dict(
        n_layers=_req(d, "n_layer", "num_hidden_layers", maximum=MAX_COUNT), hidden_size=h,
        n_heads=_req(d, "n_head", "num_attention_heads", maximum=MAX_COUNT), vocab_size=_req(d, "vocab_size"),
        ffn_size=_int(d, "n_inner", 4 * h, null=4 * h), activation=_activation(d, "gelu_new", "activation_function"),
        max_position=_int(d, "n_positions", 1024, "max_position_embeddings"),
        tie_embeddings=_flag(d, "tie_word_embeddings", True),
    )


def _gpt_bigcode(d: Mapping[str, Any]) -> dict[str, Any]:
    kw = _gpt2(d)
    kw.update(activation=_activation(d, "gelu_pytorch_tanh", "activation_function"),
              n_kv_heads=1 if _flag(d, "multi_query", True) else None)
    return kw


def _gptj(d: Mapping[str, Any]) -> dict[str, Any]:
    h = _req(d, "n_embd", "hidden_size")
    return dict(
        n_layers=_req(d, "n_layer", "num_hidden_layers", maximum=MAX_COUNT), hidden_size=h,
        n_heads=_req(d, "n_head", "num_attention_heads", maximum=MAX_COUNT), vocab_size=_req(d, "vocab_size"),
        ffn_size=_int(d, "n_inner", 4 * h, null=4 * h), activation=_activation(d, "gelu_new", "activation_function"),
        qkv_bias=False, out_bias=False, norms_per_layer=1, lm_head_bias=True, position="rotary",
        max_position=_int(d, "n_positions", 2048, "max_position_embeddings"),
        tie_embeddings=_flag(d, "tie_word_embeddings", False), parallel_block=True,
    )


def _gpt_neox(d: Mapping[str, Any]) -> dict[str, Any]:
    bias = _flag(d, "attention_bias", True)
    return dict(
        n_layers=_req(d, "num_hidden_layers", maximum=MAX_COUNT), hidden_size=_req(d, "hidden_size"),
        n_heads=_req(d, "num_attention_heads", maximum=MAX_COUNT), vocab_size=_req(d, "vocab_size"),
        ffn_size=_int(d, "intermediate_size", 24576), activation=_activation(d, "gelu", "hidden_act"),
        qkv_bias=bias, out_bias=bias, mlp_bias=True, position="rotary",
        max_position=_int(d, "max_position_embeddings", 2048),
        tie_embeddings=_flag(d, "tie_word_embeddings", False),
        parallel_block=_flag(d, "use_parallel_residual", True),
    )


def _opt(d: Mapping[str, Any]) -> dict[str, Any]:
    if not _flag(d, "layer_norm_elementwise_affine", True):
        raise ValueError("layer_norm_elementwise_affine=False (norms without parameters) is not supported")
    bias = _flag(d, "enable_bias", True)
    h = _req(d, "hidden_size")
    pre_ln = _flag(d, "do_layer_norm_before", True)
    return dict(
        n_layers=_req(d, "num_hidden_layers", maximum=MAX_COUNT), hidden_size=h,
        n_heads=_req(d, "num_attention_heads", maximum=MAX_COUNT),
        vocab_size=_req(d, "vocab_size"), ffn_size=_int(d, "ffn_dim", 3072),
        activation=_activation(d, "relu", "activation_function"), qkv_bias=bias, out_bias=bias, mlp_bias=bias,
        max_position=_int(d, "max_position_embeddings", 2048), position_offset=2,
        final_norm=pre_ln and not _flag(d, "_remove_final_layer_norm", False),
        embedding_dim=_int(d, "word_embed_proj_dim", h, null=h),
        tie_embeddings=_flag(d, "tie_word_embeddings", True),
    )


def _bert(d: Mapping[str, Any]) -> dict[str, Any]:
    """BERT and RoBERTa (``BertModel``/``RobertaModel``: post-LN encoder with a pooler)."""
    if _text(d, "position_embedding_type", "absolute") != "absolute":
        raise ValueError("position_embedding_type must be 'absolute' (relative BERT variants are not supported)")
    if _flag(d, "add_cross_attention", False):
        raise ValueError("add_cross_attention=True (encoder-decoder cross-attention) is not supported")
    return dict(
        n_layers=_req(d, "num_hidden_layers", maximum=MAX_COUNT), hidden_size=_req(d, "hidden_size"),
        n_heads=_req(d, "num_attention_heads", maximum=MAX_COUNT), vocab_size=_req(d, "vocab_size"),
        ffn_size=_int(d, "intermediate_size", 3072), activation=_activation(d, "gelu", "hidden_act"),
        causal=False, final_norm=False, max_position=_int(d, "max_position_embeddings", 512),
        token_types=_int(d, "type_vocab_size", 2, minimum=0), embedding_norm=True, pooler=True,
        tie_embeddings=True,
    )


def _distilbert(d: Mapping[str, Any]) -> dict[str, Any]:
    """DistilBERT (``DistilBertModel``): BERT without token types, pooler or final norm."""
    return dict(
        n_layers=_req(d, "n_layers", "num_hidden_layers", maximum=MAX_COUNT),
        hidden_size=_req(d, "dim", "hidden_size"),
        n_heads=_req(d, "n_heads", "num_attention_heads", maximum=MAX_COUNT), vocab_size=_req(d, "vocab_size"),
        ffn_size=_int(d, "hidden_dim", 3072), activation=_activation(d, "gelu", "activation"),
        causal=False, final_norm=False, max_position=_int(d, "max_position_embeddings", 512),
        embedding_norm=True, tie_embeddings=True,
    )


def _t5(d: Mapping[str, Any]) -> dict[str, Any]:
    """T5 (``T5ForConditionalGeneration``): encoder-decoder, relative position buckets, RMS norms
    without bias, no biases anywhere; ``feed_forward_proj`` an activation or ``gated-`` and one
    ("relu" for T5, "gated-gelu" for T5 v1.1), as ``T5Config`` validates it; ``is_gated_act`` and
    ``dense_act_fn``, when the file has them, win (as in transformers 5)."""
    ffp = _text(d, "feed_forward_proj", "relu")
    parts = ffp.split("-")
    act = "gelu_new" if ffp == "gated-gelu" else parts[-1]  # transformers maps "gated-gelu" to gelu_new
    if len(parts) > 2 or (len(parts) == 2 and parts[0] != "gated") or act not in ACTIVATIONS:
        raise ValueError(f"config field 'feed_forward_proj' must be an activation or 'gated-' and one "
                         f"(e.g. 'relu', 'gated-gelu'; activations: {', '.join(ACTIVATIONS)}), got {ffp!r}")
    # the published files also carry what transformers 4 derived from it, is_gated_act and
    # dense_act_fn, and transformers 5 lets those win when present
    gated = _flag(d, "is_gated_act", len(parts) == 2)
    act = _activation(d, act, "dense_act_fn")
    n_layers = _req(d, "num_layers", "num_hidden_layers", maximum=MAX_COUNT)
    return dict(
        n_layers=_count(d, "num_decoder_layers", n_layers, null=n_layers), n_encoder_layers=n_layers,
        hidden_size=_req(d, "d_model", "hidden_size"),
        n_heads=_req(d, "num_heads", "num_attention_heads", maximum=MAX_COUNT),
        head_dim=_int(d, "d_kv", 64, "head_dim"), vocab_size=_req(d, "vocab_size"),
        ffn_size=_int(d, "d_ff", 2048), ffn_kind="gated" if gated else "mlp", activation=act,
        norm="rmsnorm", qkv_bias=False, out_bias=False, mlp_bias=False, position="relative",
        relative_buckets=_int(d, "relative_attention_num_buckets", 32),
        tie_embeddings=_flag(d, "tie_word_embeddings", True),
    )


def _llama(d: Mapping[str, Any]) -> dict[str, Any]:
    return _decoder(d, dict(intermediate_size=11008, max_position_embeddings=2048,
                            nullable=("num_key_value_heads", "head_dim")))


def _mistral(d: Mapping[str, Any]) -> dict[str, Any]:
    kw = _decoder(d, dict(num_key_value_heads=8, intermediate_size=14336, max_position_embeddings=131072,
                          nullable=("head_dim",)))
    # MistralAttention's projections never have biases (attention_bias is ignored).
    kw.update(qkv_bias=False, out_bias=False, mlp_bias=False, sliding_window=_window(d, "sliding_window", 4096))
    return kw


def _mixtral(d: Mapping[str, Any]) -> dict[str, Any]:
    kw = _mistral(d)
    kw.update(sliding_window=_window(d, "sliding_window", None),
              n_experts=_count(d, "num_local_experts", 8), experts_per_token=_count(d, "num_experts_per_tok", 2))
    return kw


def _qwen_window(d: Mapping[str, Any], kw: dict[str, Any], rule: Callable[[int], bool]) -> None:
    """Qwen: a sliding window only with ``use_sliding_window`` (the config then keeps
    ``sliding_window``, default 4096), on the layers ``rule`` picks (``layer_types`` wins)."""
    window = _window(d, "sliding_window", 4096)  # validated even when unused
    if not _flag(d, "use_sliding_window", False):
        return
    types = _layer_types(d, kw["n_layers"], rule) if window is not None else ()
    if "sliding" in types:
        kw.update(sliding_window=window, attention_types=types)


def _from_layer(d: Mapping[str, Any]) -> Callable[[int], bool]:
    """Qwen2/Qwen3: sliding from layer ``max_window_layers`` on."""
    first = _count(d, "max_window_layers", 28, minimum=0)
    return lambda i: i >= first


def _qwen2(d: Mapping[str, Any], kv_heads: int = 32, nullable: tuple[str, ...] = ("num_key_value_heads",)
           ) -> dict[str, Any]:
    kw = _decoder(d, dict(intermediate_size=22016, max_position_embeddings=32768, num_key_value_heads=kv_heads,
                          nullable=nullable))
    kw.update(qkv_bias=True, out_bias=False, mlp_bias=False)
    _qwen_window(d, kw, _from_layer(d))
    return kw


def _qwen3(d: Mapping[str, Any], kv_heads: int = 32, nullable: tuple[str, ...] = ("num_key_value_heads",)
           ) -> dict[str, Any]:
    kw = _decoder(d, dict(intermediate_size=22016, max_position_embeddings=32768, num_key_value_heads=kv_heads,
                          nullable=nullable))
    kw.update(head_dim=_int(d, "head_dim", 128), qk_norm="head", mlp_bias=False)
    _qwen_window(d, kw, _from_layer(d))
    return kw


def _qwen_moe(d: Mapping[str, Any], kw: dict[str, Any], n_experts: int, per_token: int, width: int) -> bool:
    """Qwen MoE: layer ``i`` is MoE unless listed in ``mlp_only_layers`` and when
    ``(i + 1) % decoder_sparse_step == 0`` (as ``Qwen2MoeDecoderLayer`` decides); with
    ``num_experts: 0`` every layer is a dense MLP of ``intermediate_size``. Returns whether the
    model has experts."""
    n = _count(d, "num_experts", n_experts, "num_local_experts", minimum=0)
    if n == 0:
        return False
    only = set(_layer_list(d, "mlp_only_layers"))
    step = _count(d, "decoder_sparse_step", 1)
    kw.update(n_experts=n, experts_per_token=_count(d, "num_experts_per_tok", per_token),
              expert_ffn_size=_int(d, "moe_intermediate_size", width),
              mlp_types=_moe_from_pattern(kw["n_layers"], lambda i: i not in only and (i + 1) % step == 0))
    return True


def _qwen3_moe(d: Mapping[str, Any]) -> dict[str, Any]:
    kw = _qwen3(d, kv_heads=4, nullable=())
    kw.update(head_dim=_int(d, "head_dim", None),  # unlike Qwen3: h / a by default
              ffn_size=_int(d, "intermediate_size", 6144))
    kw.pop("attention_types", None)  # Qwen3-MoE slides every layer (max_window_layers is unused)
    _qwen_window(d, kw, lambda i: True)
    _qwen_moe(d, kw, 128, 8, 768)
    return kw


def _qwen2_moe(d: Mapping[str, Any]) -> dict[str, Any]:
    kw = _qwen2(d, kv_heads=16, nullable=())  # Qwen2MoeConfig keeps a null num_key_value_heads
    kw.update(ffn_size=_int(d, "intermediate_size", 5632))
    kw.pop("attention_types", None)
    kw.pop("sliding_window", None)
    first = _count(d, "max_window_layers", 28, minimum=0)  # Qwen2MoeConfig: odd layers below max_window_layers
    _qwen_window(d, kw, lambda i: (i + 1) % 2 != 0 and i < first)
    if _qwen_moe(d, kw, 60, 4, 1408):
        kw.update(shared_ffn_size=_int(d, "shared_expert_intermediate_size", 5632), shared_expert_gate=True)
    return kw


def _gemma_activation(d: Mapping[str, Any]) -> str:
    return _activation(d, "gelu_pytorch_tanh", "hidden_activation", "hidden_act")


def _gemma(d: Mapping[str, Any]) -> dict[str, Any]:
    kw = _decoder(d, dict(num_key_value_heads=16, intermediate_size=24576, max_position_embeddings=8192,
                          tie_word_embeddings=True))
    kw.update(head_dim=_int(d, "head_dim", 256), mlp_bias=False, activation=_gemma_activation(d))
    return kw


def _local_global(d: Mapping[str, Any], kw: dict[str, Any], every: int) -> None:
    """Gemma 2/3, OLMo 3, Cohere 2: every ``every``-th layer global, the others sliding
    (``layer_types`` wins); without a window (``sliding_window: null``) every layer is global."""
    types = _layer_types(d, kw["n_layers"], lambda i: (i + 1) % every != 0)
    kw["attention_types"] = types if "sliding" in types and kw["sliding_window"] is not None else ()
    if not kw["attention_types"]:
        kw["sliding_window"] = None


def _gemma2(d: Mapping[str, Any]) -> dict[str, Any]:
    """Gemma 2: Gemma with norms before *and after* attention and MLP (4 per layer) and local
    sliding-window layers alternating with global ones (the first is local)."""
    kw = _decoder(d, dict(num_key_value_heads=4, intermediate_size=9216, max_position_embeddings=8192,
                          tie_word_embeddings=True))
    kw.update(head_dim=_int(d, "head_dim", 256), mlp_bias=False, norms_per_layer=4,
              activation=_gemma_activation(d), sliding_window=_window(d, "sliding_window", 4096))
    _local_global(d, kw, 2)
    return kw


def _gemma3_text(d: Mapping[str, Any]) -> dict[str, Any]:
    """Gemma 3 (text): Gemma 2 plus QK-norm, five local layers per global one by default.

    The published ``text_config`` of the multimodal checkpoints omits fields that
    ``Gemma3TextConfig`` supplies (heads, KV heads, head_dim, vocabulary): those defaults are
    part of the checkpoints' definition and are applied here, as ``transformers`` does.
    """
    defaults = {"num_attention_heads": 8, "num_key_value_heads": 4, "vocab_size": 262208}
    d = {**defaults, **d}  # absent only: Gemma3TextConfig refuses null
    kw = _decoder(d, dict(intermediate_size=9216, max_position_embeddings=131072, tie_word_embeddings=True))
    kw.update(head_dim=_int(d, "head_dim", 256), mlp_bias=False, norms_per_layer=4, qk_norm="head",
              activation=_gemma_activation(d), sliding_window=_window(d, "sliding_window", 4096))
    _local_global(d, kw, _count(d, "sliding_window_pattern", 6))
    return kw


def _phi(d: Mapping[str, Any]) -> dict[str, Any]:
    if _flag(d, "qk_layernorm", False):
        raise ValueError("qk_layernorm=True is not supported for model_type 'phi'")
    a = _req(d, "num_attention_heads", maximum=MAX_COUNT)
    return dict(
        n_layers=_req(d, "num_hidden_layers", maximum=MAX_COUNT), hidden_size=_req(d, "hidden_size"), n_heads=a,
        head_dim=_int(d, "head_dim", None), n_kv_heads=_count(d, "num_key_value_heads", a, null=a),
        vocab_size=_req(d, "vocab_size"), ffn_size=_int(d, "intermediate_size", 8192),
        activation=_activation(d, "gelu_new", "hidden_act"), norms_per_layer=1, lm_head_bias=True,
        position="rotary", max_position=_int(d, "max_position_embeddings", 2048),
        tie_embeddings=_flag(d, "tie_word_embeddings", False), parallel_block=True,
    )


def _phi3(d: Mapping[str, Any]) -> dict[str, Any]:
    """Phi-3 / Phi-3.5 / Phi-4: a Llama layer with fused ``qkv_proj`` and ``gate_up_proj`` (the
    same parameters and FLOPs as separate projections); a sliding window on every layer if set."""
    kw = _decoder(d, dict(intermediate_size=8192, max_position_embeddings=4096, nullable=("num_key_value_heads",)))
    kw.update(qkv_bias=False, out_bias=False, mlp_bias=False, sliding_window=_window(d, "sliding_window", None))
    return kw


def _olmo2(d: Mapping[str, Any]) -> dict[str, Any]:
    """OLMo 2: norms after attention and after the MLP (not before), QK-norm over the whole
    query and key vectors."""
    kw = _decoder(d, dict(intermediate_size=11008, max_position_embeddings=2048, nullable=("num_key_value_heads",)))
    kw.update(qk_norm="full", mlp_bias=False)
    return kw


def _olmo3(d: Mapping[str, Any]) -> dict[str, Any]:
    """OLMo 3: OLMo 2 with three sliding-window layers per global one by default."""
    kw = _olmo2(d)
    kw.update(sliding_window=_window(d, "sliding_window", 4096))
    _local_global(d, kw, 4)
    return kw


def _starcoder2(d: Mapping[str, Any]) -> dict[str, Any]:
    """StarCoder2: LayerNorm with bias, biases everywhere (``use_bias``), a plain (not gated) MLP,
    GQA, tied embeddings, a sliding window on every layer when set."""
    kw = _decoder(d, dict(num_key_value_heads=2, intermediate_size=12288, max_position_embeddings=4096,
                          tie_word_embeddings=True, hidden_act="gelu_pytorch_tanh"))
    bias = _flag(d, "use_bias", True)
    kw.update(norm="layernorm", ffn_kind="mlp", qkv_bias=bias, out_bias=bias, mlp_bias=bias,
              sliding_window=_window(d, "sliding_window", None))
    return kw


def _stablelm(d: Mapping[str, Any]) -> dict[str, Any]:
    """StableLM 2: LayerNorm with bias, optional QKV bias and per-head QK LayerNorms (weights
    only), optional parallel residual with a single norm."""
    kw = _decoder(d, dict(num_key_value_heads=32, intermediate_size=6912, max_position_embeddings=4096))
    parallel = _flag(d, "use_parallel_residual", False)
    kw.update(norm="layernorm", qkv_bias=_flag(d, "use_qkv_bias", False), out_bias=False,
              qk_norm="full" if _flag(d, "qk_layernorm", False) else "none",
              parallel_block=parallel, norms_per_layer=1 if parallel else 2)
    return kw


def _cohere(d: Mapping[str, Any]) -> dict[str, Any]:
    """Command-R / Aya (Cohere): a parallel block with one LayerNorm without bias, tied
    embeddings, optional per-head QK-norm."""
    kw = _decoder(d, dict(intermediate_size=22528, max_position_embeddings=8192, tie_word_embeddings=True,
                          nullable=("num_key_value_heads",)))
    kw.update(norm="layernorm_nobias", norms_per_layer=1, parallel_block=True,
              qk_norm="full" if _flag(d, "use_qk_norm", False) else "none")
    return kw


def _cohere2(d: Mapping[str, Any]) -> dict[str, Any]:
    """Command R7B / Command A (Cohere 2): Cohere with three sliding-window layers per global one."""
    kw = _cohere(d)
    # Cohere2Config sets head_dim = h / a whatever config.json says.
    kw.update(head_dim=None, qk_norm="none", sliding_window=_window(d, "sliding_window", 4096))
    _local_global(d, kw, _count(d, "sliding_window_pattern", 4))
    return kw


def _deepseek(d: Mapping[str, Any], v3: bool) -> dict[str, Any]:
    """DeepSeek-V2/V3: multi-head latent attention and a mixture of experts with shared experts;
    the first ``first_k_dense_replace`` layers have a dense MLP (then every ``moe_layer_freq``-th
    layer is MoE, as DeepSeek's code defines it; transformers ignores ``moe_layer_freq``, which is 1
    in every published config)."""
    defaults = dict(intermediate_size=18432 if v3 else 11008, max_position_embeddings=4096 if v3 else 2048,
                    nullable=("num_key_value_heads",))
    if _flag(d, "mlp_bias", False):
        raise ValueError("mlp_bias=True is not supported for DeepSeek (transformers gives the dense and "
                         "shared MLPs biases but not the routed experts)")
    kw = _decoder(d, defaults)
    a = kw["n_heads"]
    if kw["n_kv_heads"] != a:
        raise ValueError(f"num_key_value_heads ({kw['n_kv_heads']}) must equal num_attention_heads ({a}) for "
                         "multi-head latent attention (transformers repeats keys a // a_kv times)")
    nope, rope = _int(d, "qk_nope_head_dim", 128), _int(d, "qk_rope_head_dim", 64)
    first_dense = _count(d, "first_k_dense_replace", 3 if v3 else 0, minimum=0)
    freq = _count(d, "moe_layer_freq", 1)
    width = _int(d, "moe_intermediate_size", 2048 if v3 else 1407)
    # q_lora_rank: null means a full q_proj (DeepSeek-V2-Lite); absent means the default 1536
    q_rank = _window(d, "q_lora_rank", 1536)
    kw.update(
        n_kv_heads=a, head_dim=nope + rope, v_head_dim=_int(d, "v_head_dim", 128), rope_head_dim=rope,
        q_lora_rank=q_rank or 0, kv_lora_rank=_int(d, "kv_lora_rank", 512),
        n_experts=_count(d, "n_routed_experts", 256 if v3 else 64, "num_local_experts", minimum=2),
        experts_per_token=_req(d, "num_experts_per_tok", maximum=MAX_COUNT),
        expert_ffn_size=width, shared_ffn_size=_count(d, "n_shared_experts", 1 if v3 else 2, minimum=0) * width,
        mlp_types=_moe_from_pattern(kw["n_layers"], lambda i: i >= first_dense and i % freq == 0),
        out_bias=kw["qkv_bias"],
    )
    return kw


def _falcon(d: Mapping[str, Any]) -> dict[str, Any]:
    h = _req(d, "hidden_size", "n_embed")
    a = _req(d, "num_attention_heads", maximum=MAX_COUNT)
    new_arch = _flag(d, "new_decoder_architecture", False)
    parallel = _flag(d, "parallel_attn", True)
    multi_query = _flag(d, "multi_query", True)
    kv = _count(d, "num_kv_heads", a, null=a) if new_arch else 1 if multi_query else a
    # FalconDecoderLayer: two LayerNorms unless the block is parallel with one shared norm;
    # num_ln_in_parallel_attn defaults to 2 only for the new decoder architecture.
    n_ln = _count(d, "num_ln_in_parallel_attn", 2 if new_arch else 1, null=2 if new_arch else 1)
    bias = _flag(d, "bias", False)
    return dict(
        n_layers=_req(d, "num_hidden_layers", maximum=MAX_COUNT), hidden_size=h, n_heads=a, n_kv_heads=kv,
        vocab_size=_req(d, "vocab_size"), ffn_size=_int(d, "ffn_hidden_size", 4 * h, null=4 * h),
        activation=_activation(d, "gelu", "activation"), norms_per_layer=2 if (not parallel or n_ln == 2) else 1,
        qkv_bias=bias, out_bias=bias, mlp_bias=bias,
        position="alibi" if _flag(d, "alibi", False) else "rotary",
        max_position=_int(d, "max_position_embeddings", 2048),
        tie_embeddings=_flag(d, "tie_word_embeddings", True), parallel_block=new_arch or parallel,
        # FalconAttention broadcasts the num_kv_heads keys and values to every head before caching
        kv_broadcast=new_arch and kv < a,
    )


_READERS: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    "gpt2": _gpt2, "gpt_bigcode": _gpt_bigcode, "gptj": _gptj, "gpt_neox": _gpt_neox, "opt": _opt,
    "bert": _bert, "roberta": _bert, "distilbert": _distilbert, "t5": _t5,
    "llama": _llama, "mistral": _mistral, "mixtral": _mixtral, "qwen2": _qwen2, "qwen2_moe": _qwen2_moe,
    "qwen3": _qwen3, "qwen3_moe": _qwen3_moe, "gemma": _gemma, "gemma2": _gemma2,
    "gemma3_text": _gemma3_text, "phi": _phi, "phi3": _phi3, "falcon": _falcon, "olmo2": _olmo2,
    "olmo3": _olmo3, "starcoder2": _starcoder2, "stablelm": _stablelm, "cohere": _cohere,
    "cohere2": _cohere2, "deepseek_v2": lambda d: _deepseek(d, False), "deepseek_v3": lambda d: _deepseek(d, True),
}

#: ``model_type`` -> (the ``transformers`` class whose parameters :func:`~llmmath.param_count` equals,
#: typical checkpoints). Multimodal checkpoints whose ``config.json`` nests a ``text_config``
#: (``gemma3``) are read as their language model.
MODEL_TYPE_CLASSES: dict[str, tuple[str, str]] = {
    "gpt2": ("GPT2LMHeadModel", "GPT-2"),
    "gpt_bigcode": ("GPTBigCodeForCausalLM", "SantaCoder, StarCoder"),
    "gptj": ("GPTJForCausalLM", "GPT-J-6B"),
    "gpt_neox": ("GPTNeoXForCausalLM", "Pythia, GPT-NeoX-20B"),
    "opt": ("OPTForCausalLM", "OPT"),
    "bert": ("BertModel", "BERT"),
    "roberta": ("RobertaModel", "RoBERTa"),
    "distilbert": ("DistilBertModel", "DistilBERT"),
    "t5": ("T5ForConditionalGeneration", "T5, T5 v1.1, Flan-T5"),
    "llama": ("LlamaForCausalLM", "LLaMA, Llama 2, Llama 3"),
    "mistral": ("MistralForCausalLM", "Mistral"),
    "mixtral": ("MixtralForCausalLM", "Mixtral"),
    "qwen2": ("Qwen2ForCausalLM", "Qwen1.5, Qwen2, Qwen2.5"),
    "qwen2_moe": ("Qwen2MoeForCausalLM", "Qwen1.5-MoE, Qwen2-MoE"),
    "qwen3": ("Qwen3ForCausalLM", "Qwen3"),
    "qwen3_moe": ("Qwen3MoeForCausalLM", "Qwen3-MoE (30B-A3B, 235B-A22B)"),
    "gemma": ("GemmaForCausalLM", "Gemma"),
    "gemma2": ("Gemma2ForCausalLM", "Gemma 2"),
    "gemma3_text": ("Gemma3ForCausalLM", "Gemma 3 (text; model_type gemma3 reads text_config)"),
    "phi": ("PhiForCausalLM", "Phi-1, Phi-1.5, Phi-2"),
    "phi3": ("Phi3ForCausalLM", "Phi-3, Phi-3.5, Phi-4"),
    "falcon": ("FalconForCausalLM", "Falcon"),
    "olmo2": ("Olmo2ForCausalLM", "OLMo 2"),
    "olmo3": ("Olmo3ForCausalLM", "OLMo 3"),
    "starcoder2": ("Starcoder2ForCausalLM", "StarCoder2"),
    "stablelm": ("StableLmForCausalLM", "StableLM 2"),
    "cohere": ("CohereForCausalLM", "Command-R, Aya"),
    "cohere2": ("Cohere2ForCausalLM", "Command R7B, Command A"),
    "deepseek_v2": ("DeepseekV2ForCausalLM", "DeepSeek-V2, DeepSeek-V2-Lite"),
    "deepseek_v3": ("DeepseekV3ForCausalLM", "DeepSeek-V3, DeepSeek-R1"),
}

#: Multimodal ``model_type`` values whose language model is read from ``text_config``.
_TEXT_CONFIG_OF = {"gemma3": "gemma3_text"}

#: The ``model_type`` values of Hugging Face configurations that :func:`from_hf_config` reads.
SUPPORTED_MODEL_TYPES: tuple[str, ...] = tuple(_READERS) + tuple(_TEXT_CONFIG_OF)


def supported_families_table() -> str:
    """A Markdown table of the supported ``model_type`` values, their ``transformers`` class and
    typical checkpoints (generated from :data:`MODEL_TYPE_CLASSES`; the CLI and README print it)."""
    rows = ["| model_type | transformers class | checkpoints |", "| :-- | :-- | :-- |"]
    rows += [f"| `{mt}` | `{cls}` | {ckpt} |" for mt, (cls, ckpt) in MODEL_TYPE_CLASSES.items()]
    rows += [f"| `{mt}` | (reads `text_config` as `{inner}`) | multimodal checkpoints |"
             for mt, inner in _TEXT_CONFIG_OF.items()]
    return "\n".join(rows)


#: The keys config.json files spell each TransformerConfig field with, most common first: a
#: message of :class:`TransformerConfig` about a field read from a config names the key the
#: config holds (the first of these present; else the first).
_SPELLINGS: dict[str, tuple[str, ...]] = {
    "n_layers": ("num_hidden_layers", "n_layer", "num_decoder_layers", "num_layers", "n_layers"),
    "n_encoder_layers": ("num_layers",),
    "hidden_size": ("hidden_size", "n_embd", "d_model", "dim", "n_embed"),
    "n_heads": ("num_attention_heads", "n_head", "num_heads", "n_heads"),
    "n_kv_heads": ("num_key_value_heads", "num_kv_heads"),
    "head_dim": ("head_dim", "d_kv"),
    "ffn_size": ("intermediate_size", "n_inner", "ffn_dim", "d_ff", "hidden_dim", "ffn_hidden_size"),
    "n_experts": ("num_local_experts", "num_experts", "n_routed_experts"),
    "experts_per_token": ("num_experts_per_tok",),
    "expert_ffn_size": ("moe_intermediate_size",),
    "shared_ffn_size": ("shared_expert_intermediate_size", "n_shared_experts"),
    "max_position": ("max_position_embeddings", "n_positions"),
    "embedding_dim": ("word_embed_proj_dim",),
    "rope_head_dim": ("qk_rope_head_dim",),
    "relative_buckets": ("relative_attention_num_buckets",),
    "token_types": ("type_vocab_size",),
}
_FIELD_WORD = re.compile(r"\b(" + "|".join(sorted(_SPELLINGS, key=len, reverse=True)) + r")\b")


class _Read(dict):  # type: ignore[type-arg]
    """A config dict that remembers the keys the reader looked up (``read``), so that a message
    names the key the family reads (Falcon's ``num_kv_heads``, not a stray ``num_key_value_heads``)."""

    def __init__(self, d: Mapping[str, Any]) -> None:
        super().__init__(d)
        self.read: list[str] = []

    def get(self, key: str, default: Any = None) -> Any:
        self.read.append(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self.read.append(str(key))
        return super().__contains__(key)


def _spelled(message: str, d: _Read) -> str:
    """``message`` with each TransformerConfig field name replaced by the key ``d`` spells it with:
    the first spelling the reader looked up and ``d`` holds, else the first ``d`` holds."""
    def key(m: re.Match[str]) -> str:
        names = _SPELLINGS[m.group(1)]
        held = [k for k in names if dict.__contains__(d, k)]
        return next((k for k in held if k in d.read), held[0] if held else names[0])
    return _FIELD_WORD.sub(key, message)


def from_hf_config(d: Mapping[str, Any], name: str | None = None) -> TransformerConfig:
    """Read a Hugging Face ``config.json`` dictionary, exactly as published.

    Supports the ``model_type`` values in :data:`SUPPORTED_MODEL_TYPES` (the model each describes is
    in :data:`MODEL_TYPE_CLASSES`). Extra keys are ignored and ``null`` values count as absent.
    The core shape fields (hidden size, layers, heads, vocabulary) are required under any of the
    names the family's ``transformers`` configuration accepts (``n_embd`` or ``hidden_size``, ...);
    a missing one raises ``ValueError`` naming it. Other missing fields take the defaults of that
    configuration class (checked by ``tests/test_config.py`` against ``transformers`` itself). A
    multimodal config (``gemma3``) is read from its nested ``text_config``. An unsupported or
    missing ``model_type`` or a setting the formulas cannot describe raises ``ValueError``.

    Every value read is validated here, once, and an error names the key as the file spells it
    (``n_layer``, not ``n_layers``): booleans must be JSON booleans; counts (layers, heads,
    experts, layer-pattern steps) integers from 1 (0 where 0 means none) to :data:`MAX_COUNT`;
    sizes integers from 1 to :data:`MAX_SIZE`. The head size is ``head_dim`` (``d_kv``, DeepSeek's
    ``qk_nope_head_dim + qk_rope_head_dim``) when the config or its family gives one, otherwise
    ``hidden_size / num_attention_heads``, which must then be an integer in every family (some
    ``transformers`` classes round it down). A wrong type raises ``TypeError``, a wrong value
    ``ValueError``.
    """
    if not isinstance(d, Mapping):
        raise TypeError(f"d must be a dict read from config.json, got {type(d).__name__}")
    if d.get("model_type") is None:
        raise ValueError("config is missing the required field 'model_type'")
    mt = d["model_type"]
    if not isinstance(mt, str) or mt not in SUPPORTED_MODEL_TYPES:
        raise ValueError(f"model_type {mt!r} is not supported; supported: {', '.join(SUPPORTED_MODEL_TYPES)}")
    label = _text(d, "_name_or_path", "")  # validated even when ``name`` is given
    label = name or label or mt
    if mt in _TEXT_CONFIG_OF:
        inner = d.get("text_config")
        if not isinstance(inner, Mapping):
            raise ValueError(f"model_type {mt!r} needs a 'text_config' object (its language model)")
        mt = _TEXT_CONFIG_OF[mt]
        d = {**inner, "model_type": mt}
    d = _Read(d)
    kw = _READERS[mt](d)
    kw["family"] = mt
    kw["name"] = str(label)
    for key in ("attention_types", "mlp_types"):
        if key in kw:
            kw[key] = tuple(kw[key])
    try:
        return TransformerConfig(**kw)
    except (ValueError, TypeError) as exc:
        raise type(exc)(_spelled(str(exc), d)) from None
