"""Memory of training and inference: weights, optimizer state, activations and the KV cache.

Every function returns **bytes** (exact integers); :mod:`llmmath.units` converts to GB (``10^9``)
or GiB (``2^30``). Optimizer state sizes come from :func:`llmmath.optim.state_bytes_per_param`
(one source of truth). Derived in chapter :doc:`/chapters/memory`.

Symbols: ``s`` sequence length, ``b`` micro-batch, ``h`` hidden size, ``a`` heads, ``a_kv`` key/value
heads, ``d_q = a d_head``, ``d_kv = a_kv d_head``, ``d_ff`` MLP width, ``L`` layers, ``t`` tensor-parallel
size, ``P`` parameters.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from typing import Any

from ._validate import check_bool, check_choice, check_int
from .config import TransformerConfig
from .optim import OPTIMIZERS, state_bytes_per_param
from .units import DTYPES, bytes_for

__all__ = [
    "PRECISIONS",
    "TRAINING_STATE_KEYS",
    "RECOMPUTE_MODES",
    "ACTIVATION_IMPLEMENTATIONS",
    "ACTIVATION_TERMS",
    "HF_ACTIVATION_SAVED_TENSORS",
    "weight_bytes",
    "training_state_bytes",
    "activation_bytes",
    "kv_cache_bytes",
    "MLA_CACHES",
    "largest_batch",
    "saved_tensors_by_node",
    "hf_gpt2_block_saved_bytes",
]

# ---------------------------------------------------------------------------------------------
# weights and training state
# ---------------------------------------------------------------------------------------------

#: Precision recipes for training (bytes per parameter of each copy, see training_state_bytes).
PRECISIONS: tuple[str, ...] = ("fp32", "mixed", "mixed-fp32-grads", "mixed-fp32-main-grads")

#: Keys of :func:`training_state_bytes`, in order (every key is always present).
TRAINING_STATE_KEYS: tuple[str, ...] = (
    "parameters", "gradients", "master_weights", "master_gradients", "optimizer_states", "total",
)

# precision -> (parameters, gradients, fp32 master weights, fp32 master gradients), bytes per parameter
_PRECISION_BYTES: dict[str, tuple[int, int, int, int]] = {
    "fp32": (4, 4, 0, 0),
    "mixed": (2, 2, 4, 0),
    "mixed-fp32-grads": (2, 2, 4, 4),
    "mixed-fp32-main-grads": (2, 4, 4, 0),
}


def _n_params(model: TransformerConfig | int, name: str = "n_params") -> int:
    if isinstance(model, TransformerConfig):
        from .params import param_count

        return param_count(model)
    if isinstance(model, bool) or not isinstance(model, numbers.Integral):
        raise TypeError(f"{name} must be a TransformerConfig or an integer >= 1, got {type(model).__name__}")
    return check_int(name, model)


def weight_bytes(model: TransformerConfig | int, dtype: str = "bf16") -> int:
    """Bytes of the weights alone: ``ceil(P * bits(dtype) / 8)``.

    ``model`` is a :class:`~llmmath.TransformerConfig` (``P`` = :func:`llmmath.params.param_count`)
    or a parameter count. ``dtype`` in fp32, fp16, bf16, fp8, int8, int4; the scales of quantized
    formats are ignored. Derived in chapter :doc:`/chapters/memory`.
    """
    check_choice("dtype", dtype, DTYPES)
    return bytes_for(_n_params(model, "model"), dtype)


def training_state_bytes(
    n_params: TransformerConfig | int,
    precision: str = "mixed",
    optimizer: str = "adam",
    *,
    zero_stage: int = 0,
    n_gpus: int = 1,
    optimizer_bytes_per_value: int = 4,
) -> dict[str, int]:
    """Bytes per GPU of the model state of training (everything except activations and buffers).

    Per parameter (``K`` = :func:`llmmath.optim.state_bytes_per_param`, 8 for Adam in fp32), as
    parameters + gradients + fp32 master weights + fp32 master gradients + optimizer states:

    - ``fp32``: 4 + 4 + 0 + 0 + K;
    - ``mixed``: 2 + 2 + 4 + 0 + K;
    - ``mixed-fp32-grads``: 2 + 2 + 4 + 4 + K;
    - ``mixed-fp32-main-grads``: 2 + 4 + 4 + 0 + K (the gradients themselves are fp32).

    ``mixed`` is ZeRO's ``16P`` for Adam; ``mixed-fp32-grads`` the ``20P`` of seed 002 and of
    Megatron-LM with fp16 weights; ``mixed-fp32-main-grads`` (bf16 weights, gradients accumulated
    in fp32, no 16-bit gradient) Megatron-LM's ``18P``. ZeRO over ``n_gpus`` data-parallel ranks
    splits, per rank, ``ceil(P / n_gpus)`` parameters' worth of: the optimizer states, master
    weights and master gradients (stage >= 1), the gradients (stage >= 2), the parameters (stage 3).
    Derived in chapter :doc:`/chapters/memory`.
    """
    P = _n_params(n_params)
    check_choice("precision", precision, PRECISIONS)
    check_choice("optimizer", optimizer, OPTIMIZERS)
    zero_stage = check_int("zero_stage", zero_stage, minimum=0, maximum=3)
    n_gpus = check_int("n_gpus", n_gpus)
    k = state_bytes_per_param(optimizer, check_int("optimizer_bytes_per_value", optimizer_bytes_per_value))
    p_b, g_b, mw_b, mg_b = _PRECISION_BYTES[precision]
    shard = -(-P // n_gpus)  # ceil: each rank holds an equal, padded partition

    def n(stage: int) -> int:
        return shard if zero_stage >= stage else P

    out = {
        "parameters": p_b * n(3),
        "gradients": g_b * n(2),
        "master_weights": mw_b * n(1),
        "master_gradients": mg_b * n(1),
        "optimizer_states": k * n(1),
    }
    out["total"] = sum(out.values())
    return out


# ---------------------------------------------------------------------------------------------
# activations
# ---------------------------------------------------------------------------------------------

RECOMPUTE_MODES: tuple[str, ...] = ("none", "selective", "full")
ACTIVATION_IMPLEMENTATIONS: tuple[str, ...] = ("korthikanti", "hf-gpt2")

#: Keys of ``activation_bytes(...)["terms"]``, in the forward order of one layer.
ACTIVATION_TERMS: tuple[str, ...] = (
    "layer_input", "attn_norm_input", "attn_norm_stats", "qkv_input", "q", "k", "v",
    "softmax_output", "attn_dropout_mask", "attn_dropout_output", "out_proj_input",
    "attn_residual_dropout_mask", "mlp_norm_input", "mlp_norm_stats", "fc1_input", "activation",
    "fc2_input", "mlp_dropout_mask",
)

#: Distinct ``b x s x d_ff`` storages that a ``transformers`` GPT-2 MLP keeps for backward, by
#: activation, counting the input of the second linear layer (measured with
#: ``torch.autograd.graph.saved_tensors_hooks``, PyTorch 2.13, transformers 5.23; see the chapter).
#: ``relu`` and ``tanh`` save their output, which *is* the next layer's input, hence 1; the
#: ``gelu_new``/``gelu_fast`` Python formulas keep several intermediates.
HF_ACTIVATION_SAVED_TENSORS: dict[str, int] = {
    "gelu": 2, "gelu_pytorch_tanh": 2, "gelu_new": 5, "gelu_fast": 8, "quick_gelu": 3,
    "relu": 1, "tanh": 1, "silu": 2, "swish": 2,
}


def _check_hf_gpt2(cfg: TransformerConfig, recompute: str, flash: bool, t: int) -> None:
    problems = []
    if recompute != "none":
        problems.append(f"recompute={recompute!r} (only 'none')")
    if flash:
        problems.append("flash_attention=True (eager attention only)")
    if t != 1:
        problems.append(f"tensor_parallel={t} (only 1)")
    if cfg.ffn_kind != "mlp" or cfg.norm != "layernorm" or cfg.parallel_block:
        problems.append("a non-GPT-2 block (needs ffn_kind='mlp', norm='layernorm', sequential block)")
    if cfg.n_kv_heads != cfg.n_heads or cfg.q_dim != cfg.hidden_size:
        problems.append("n_kv_heads != n_heads or n_heads * head_dim != hidden_size")
    if problems:
        raise ValueError("implementation='hf-gpt2' does not support " + "; ".join(problems))


def activation_bytes(
    cfg: TransformerConfig,
    batch: int,
    seq: int,
    *,
    bytes_per_value: int = 2,
    bytes_per_mask: int = 1,
    recompute: str = "none",
    flash_attention: bool = False,
    dropout: bool = True,
    tensor_parallel: int = 1,
    sequence_parallel: bool = False,
    implementation: str = "korthikanti",
    bytes_per_norm_stat: int = 4,
) -> dict[str, Any]:
    """Bytes of activations saved for backward, per transformer layer and for the ``L`` layers.

    ``implementation="korthikanti"`` (Korthikanti et al. 2023, per layer, no parallelism, MHA,
    ``d_ff = 4h``, 2-byte values, 1-byte masks): ``34 s b h + 5 a s^2 b``, i.e. norm inputs
    ``2 x 2sbh``, QKV input ``2sbh``, ``Q, K, V`` ``6sbh``, softmax output ``2as^2b``, its dropout
    mask ``as^2b`` and output ``2as^2b``, projection input ``2sbh``, two dropout masks ``2 x sbh``,
    MLP input ``2sbh``, activation input and second-linear input ``2 x 8sbh``; norm statistics are
    neglected. The terms use ``d_q``, ``d_kv``, ``d_ff`` of ``cfg`` (GQA/MQA aware); a gated MLP keeps
    gate input, up output and gate output (``activation``: ``3 s b d_ff`` values) plus the product.
    ``recompute="selective"`` and ``flash_attention`` drop the ``s^2`` terms; ``"full"`` keeps only
    the layer input (``2sbh``). ``tensor_parallel = t`` divides the terms inside the tensor-parallel
    regions by ``t`` (``sbh(10 + 24/t + 5as/(ht))``); ``sequence_parallel`` divides the rest too
    (``sbh(34/t + 5as/(ht))``). ``dropout=False`` removes masks and the extra dropout output.

    ``implementation="hf-gpt2"``: exactly the storages PyTorch keeps for a ``transformers``
    ``GPT2Block`` in eager mode (no recomputation, no parallelism): the terms above plus each
    LayerNorm's mean and reciprocal std (``2sb`` values of ``bytes_per_norm_stat`` bytes) and the
    activation's own intermediates (:data:`HF_ACTIVATION_SAVED_TENSORS`). On CPU pass
    ``bytes_per_mask = bytes_per_norm_stat = bytes_per_value`` (dropout keeps a scaled mask in
    the input's dtype; LayerNorm statistics are in the input's dtype).

    Returns ``{"terms": {name: bytes per layer}, "per_layer": int, "total": int}`` with
    ``total = L * per_layer`` (embeddings, final norm and logits are not included), per GPU.
    Derived in chapter :doc:`/chapters/memory`.
    """
    if not isinstance(cfg, TransformerConfig):
        raise TypeError(f"cfg must be a TransformerConfig, got {type(cfg).__name__}")
    b, s = check_int("batch", batch), check_int("seq", seq)
    B = check_int("bytes_per_value", bytes_per_value)
    M = check_int("bytes_per_mask", bytes_per_mask)
    N = check_int("bytes_per_norm_stat", bytes_per_norm_stat)
    check_choice("recompute", recompute, RECOMPUTE_MODES)
    flash = check_bool("flash_attention", flash_attention)
    drop = check_bool("dropout", dropout)
    t = check_int("tensor_parallel", tensor_parallel)
    sp = check_bool("sequence_parallel", sequence_parallel)
    check_choice("implementation", implementation, ACTIVATION_IMPLEMENTATIONS)
    hf = implementation == "hf-gpt2"
    if hf:
        _check_hf_gpt2(cfg, recompute, flash, t)
    for name, dim in (("n_heads", cfg.n_heads), ("n_kv_heads", cfg.n_kv_heads), ("ffn_size", cfg.ffn_size)):
        if dim % t:
            raise ValueError(f"tensor_parallel={t} must divide {name}={dim}")
    if sp and s % t:
        raise ValueError(f"sequence_parallel needs tensor_parallel={t} to divide seq={s}")

    h, a, dq, dkv, dff = cfg.hidden_size, cfg.n_heads, cfg.q_dim, cfg.kv_dim, cfg.ffn_size
    sb, s2ab = s * b, a * s * s * b
    rep = t if sp else 1  # divisor of the terms outside the tensor-parallel regions
    terms = dict.fromkeys(ACTIVATION_TERMS, 0)
    if recompute == "full":
        terms["layer_input"] = B * sb * h // rep
    else:
        keep_scores = recompute == "none" and not flash
        gated = cfg.ffn_kind == "gated"
        act_values = 3 * dff if gated else dff
        if hf:
            act_values = (HF_ACTIVATION_SAVED_TENSORS[cfg.activation] - 1) * dff
        terms.update(
            attn_norm_input=B * sb * h // rep,
            attn_norm_stats=2 * N * sb if hf else 0,
            qkv_input=B * sb * h // rep,
            q=B * sb * dq // t,
            k=B * sb * dkv // t,
            v=B * sb * dkv // t,
            softmax_output=B * s2ab // t if keep_scores else 0,
            attn_dropout_mask=M * s2ab // t if keep_scores and drop else 0,
            attn_dropout_output=B * s2ab // t if keep_scores and drop else 0,
            out_proj_input=B * sb * dq // t,
            attn_residual_dropout_mask=M * sb * h // rep if drop else 0,
            mlp_norm_input=B * sb * h // rep,
            mlp_norm_stats=2 * N * sb if hf else 0,
            fc1_input=B * sb * h // rep,
            activation=B * sb * act_values // t,
            fc2_input=B * sb * dff // t,
            mlp_dropout_mask=M * sb * h // rep if drop else 0,
        )
    per_layer = sum(terms.values())
    return {"terms": terms, "per_layer": per_layer, "total": cfg.n_layers * per_layer}


#: What a multi-head-latent-attention cache holds per token and layer: ``latent`` (the compressed
#: ``r_kv`` latent and the shared ``d_r`` rotary key: what ``transformers``, vLLM, SGLang and the
#: "absorb" mode of DeepSeek's inference code keep) or ``expanded`` (every head's decompressed key
#: and value: the "naive" mode of DeepSeek's code, and what a cache of the heads would need).
MLA_CACHES: tuple[str, ...] = ("latent", "expanded")


def kv_cache_bytes(
    cfg: TransformerConfig, batch: int, context: int, bytes_per_value: int = 2, *, mla: str = "latent",
    encoder_seq: int | None = None,
) -> int:
    """Bytes of the key/value cache after ``context`` tokens of each of ``batch`` sequences.

    Per layer and cached token, one key of width ``d_kv = a_kv d_head`` and one value of width
    ``d_v = a_kv d_v``: ``2 L b context a_kv d_head bytes_per_value`` when every layer attends to
    every earlier token. GQA (``a_kv < a``) and MQA (``a_kv = 1``) shrink it by ``a / a_kv``.
    Read from the config's layer pattern:

    - a sliding-window layer keeps only the last ``w - 1`` tokens (the next token is the ``w``-th
      key it sees): ``min(context, w - 1)`` tokens, as ``transformers``' sliding-window cache;
    - multi-head latent attention keeps ``r_kv + d_r`` values per token and layer
      (``mla="latent"``, as ``transformers`` and serving engines do), or ``a (d_head + d_v)``
      (``mla="expanded"``, the decompressed heads);
    - an encoder-decoder also caches the cross-attention keys and values of the ``encoder_seq``
      encoder outputs in every decoder layer (``encoder_seq`` is then required).

    ``bytes_per_value``: 2 for a 16-bit cache, 1 for an 8-bit (int8/FP8) one (scales ignored).
    Derived in chapter :doc:`/chapters/memory`.
    """
    if not isinstance(cfg, TransformerConfig):
        raise TypeError(f"cfg must be a TransformerConfig, got {type(cfg).__name__}")
    b, n = check_int("batch", batch), check_int("context", context)
    B = check_int("bytes_per_value", bytes_per_value)
    check_choice("mla", mla, MLA_CACHES)
    if cfg.is_encoder_decoder:
        if encoder_seq is None:
            raise ValueError(f"encoder_seq is required for the encoder-decoder {cfg.name!r} (the cross-"
                             "attention caches the keys and values of every encoder output)")
        encoder_seq = check_int("encoder_seq", encoder_seq)
    elif encoder_seq is not None:
        raise ValueError(f"encoder_seq is only for encoder-decoders; {cfg.name!r} has no encoder stack")
    if cfg.kv_lora_rank and mla == "latent":
        per_token = cfg.kv_lora_rank + cfg.rope_head_dim
    else:
        per_token = cfg.kv_dim + cfg.v_dim
    tokens = 0
    for spec, count in cfg.layer_counts.items():
        kept = min(n, cfg.sliding_window - 1) if spec.attention == "sliding" else n
        tokens += count * kept
    cross = cfg.n_layers * encoder_seq * (cfg.kv_dim + cfg.v_dim) if encoder_seq else 0
    return b * (tokens * per_token + cross) * B


def largest_batch(
    cfg: TransformerConfig,
    seq: int,
    capacity_bytes: int,
    *,
    precision: str = "mixed",
    optimizer: str = "adam",
    zero_stage: int = 0,
    n_gpus: int = 1,
    **activation_options: Any,
) -> int:
    """Largest micro-batch ``b`` with ``state + b * act(1) <= capacity_bytes`` (0 if none fits).

    ``state`` = :func:`training_state_bytes` per GPU (``P`` = :func:`llmmath.params.param_count`,
    ZeRO ``zero_stage`` over ``n_gpus``) and
    ``act(1)`` = :func:`activation_bytes` total for ``b = 1`` (activations are linear in ``b``);
    ``activation_options`` are passed on to :func:`activation_bytes`. Buffers, fragmentation and
    the logits are ignored, so this is an upper bound. Derived in chapter :doc:`/chapters/memory`.
    """
    cap = check_int("capacity_bytes", capacity_bytes)
    state = training_state_bytes(cfg, precision, optimizer, zero_stage=zero_stage, n_gpus=n_gpus)["total"]
    per_sample = activation_bytes(cfg, 1, check_int("seq", seq), **activation_options)["total"]
    return max(0, (cap - state) // per_sample)


# ---------------------------------------------------------------------------------------------
# measurement with PyTorch (imported lazily: the formulas above do not need torch)
# ---------------------------------------------------------------------------------------------


def saved_tensors_by_node(output: Any, exclude: Iterable[Any] = ()) -> list[tuple[str, str, tuple, str, int]]:
    """The tensors autograd saved to compute ``output``'s backward, each storage counted once.

    Walks the graph from ``output.grad_fn`` and reads every ``_saved_*`` tensor attribute of every
    node; returns ``(node, attribute, shape, dtype, storage bytes)`` in forward order (by sequence
    number), skipping storages already listed, those of the tensors in ``exclude`` (parameters) and
    0-dimensional tensors (the Python scalars of ``x * 0.5``, which the pack hook never sees).
    Derived in chapter :doc:`/chapters/memory`.
    """
    import torch

    skip = {p.untyped_storage().data_ptr() for p in exclude}
    nodes, stack, seen_nodes = [], [output.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or node in seen_nodes:
            continue
        seen_nodes.add(node)
        nodes.append(node)
        stack.extend(nxt for nxt, _ in node.next_functions)
    nodes.sort(key=lambda n: n._sequence_nr())
    rows, seen = [], set(skip)
    for node in nodes:
        for attr in sorted(a for a in dir(node) if a.startswith("_saved_")):
            value = getattr(node, attr)
            if not isinstance(value, torch.Tensor) or value.dim() == 0:
                continue  # sizes, flags and wrapped Python scalars are not activations
            storage = value.untyped_storage()
            if storage.data_ptr() in seen:
                continue
            seen.add(storage.data_ptr())
            rows.append((node.name(), attr[len("_saved_"):], tuple(value.shape),
                         str(value.dtype).removeprefix("torch."), storage.nbytes()))
    return rows


def hf_gpt2_block_saved_bytes(
    cfg: TransformerConfig, batch: int, seq: int, dtype: str = "fp32", dropout: float = 0.1, seed: int = 0
) -> dict[str, Any]:
    """Measure the bytes PyTorch saves for backward in one ``transformers`` ``GPT2Block``.

    Builds the block with the shapes of ``cfg`` (eager attention, ``attn_pdrop = resid_pdrop =
    dropout``, ``train()`` mode, CPU), runs it on a random ``(batch, seq, h)`` input with a causal
    mask inside ``torch.autograd.graph.saved_tensors_hooks`` and sums the saved storages, each
    counted once (deduplicated by ``untyped_storage().data_ptr()``), parameters excluded.
    Returns ``{"total": bytes, "tensors": saved_tensors_by_node(...)}``; the two counts agree.
    Derived in chapter :doc:`/chapters/memory`.
    """
    import torch
    from transformers import GPT2Config
    from transformers.models.gpt2.modeling_gpt2 import GPT2Block

    if not isinstance(cfg, TransformerConfig):
        raise TypeError(f"cfg must be a TransformerConfig, got {type(cfg).__name__}")
    _check_hf_gpt2(cfg, "none", False, 1)
    b, s = check_int("batch", batch), check_int("seq", seq)
    torch_dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[
        check_choice("dtype", dtype, ("fp32", "bf16", "fp16"))
    ]
    if not isinstance(dropout, numbers.Real) or not 0 <= dropout < 1:
        raise ValueError(f"dropout must be a probability in [0, 1), got {dropout!r}")
    torch.manual_seed(check_int("seed", seed, minimum=0))
    hf_cfg = GPT2Config(
        n_embd=cfg.hidden_size, n_head=cfg.n_heads, n_inner=cfg.ffn_size, n_layer=1, n_positions=s,
        activation_function=cfg.activation, attn_pdrop=dropout, resid_pdrop=dropout,
        embd_pdrop=dropout,
    )
    hf_cfg._attn_implementation = "eager"
    block = GPT2Block(hf_cfg, layer_idx=0).to(torch_dtype).train()
    params = list(block.parameters())
    skip = {p.untyped_storage().data_ptr() for p in params}
    x = torch.randn(b, s, cfg.hidden_size, dtype=torch_dtype, requires_grad=True)
    mask = torch.full((s, s), float("-inf"), dtype=torch_dtype).triu(1)[None, None]
    saved: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in skip:
            saved[storage.data_ptr()] = storage.nbytes()
        return tensor

    def unpack(tensor: torch.Tensor) -> torch.Tensor:
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = block(x, attention_mask=mask)
    rows = saved_tensors_by_node(y, exclude=params)
    return {"total": sum(saved.values()), "tensors": rows}
