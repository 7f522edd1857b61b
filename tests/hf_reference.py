"""The independent reference of the tests: ``transformers`` models built from config dicts.

Every expected parameter count, per-layer count, active-parameter count and FLOP count in the
family tests comes from here, i.e. from the ``transformers`` implementation itself (parameters
classified by their module path; FLOPs counted by ``torch.utils.flop_counter.FlopCounterMode``
on a forward or forward + backward of the real model), never from llmmath.

``CASES`` holds one tiny configuration per family and variant (MHA/GQA/MQA, MLA with and without a
query latent, MoE with shared experts and dense first layers, sliding windows, QK-norm, parallel
blocks, encoders, an encoder-decoder). ``random_config(family, draw)`` draws random small
configurations of each family for the hypothesis tests.
"""

from __future__ import annotations

import copy
import logging
import re
import warnings
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
transformers.logging.set_verbosity_error()
logging.getLogger("transformers").setLevel(logging.ERROR)

from llmmath.params import BREAKDOWN_KEYS  # noqa: E402

ENCODERS = ("bert", "roberta", "distilbert")
SEQ2SEQ = ("t5",)

_V = dict(vocab_size=97)
_LL = dict(num_hidden_layers=2, hidden_size=32, num_attention_heads=4, intermediate_size=48,
           max_position_embeddings=64, **_V)

#: Tiny configurations of every family and variant (``model_type`` first, as in a config.json).
CASES: dict[str, dict[str, Any]] = {
    "gpt2-mha": dict(model_type="gpt2", n_layer=2, n_embd=32, n_head=4, n_positions=64, **_V),
    "gpt_bigcode-mqa": dict(model_type="gpt_bigcode", n_layer=2, n_embd=32, n_head=4, n_positions=64, **_V),
    "gpt_bigcode-mha": dict(model_type="gpt_bigcode", n_layer=2, n_embd=32, n_head=4, n_positions=64,
                            multi_query=False, **_V),
    "gptj-parallel": dict(model_type="gptj", n_layer=2, n_embd=32, n_head=4, rotary_dim=4, n_positions=64,
                          **_V),
    "gpt_neox-mha": dict(model_type="gpt_neox", num_hidden_layers=2, hidden_size=32, num_attention_heads=4,
                         intermediate_size=80, max_position_embeddings=64, **_V),
    "opt-proj-postln": dict(model_type="opt", num_hidden_layers=2, hidden_size=32, num_attention_heads=4,
                            ffn_dim=80, word_embed_proj_dim=16, do_layer_norm_before=False,
                            max_position_embeddings=64, **_V),
    "llama-mha": dict(model_type="llama", **_LL),
    "llama-gqa": dict(model_type="llama", num_key_value_heads=2, **_LL),
    "mistral-mqa-window": dict(model_type="mistral", num_key_value_heads=1, sliding_window=4, **_LL),
    "mixtral-gqa": dict(model_type="mixtral", num_key_value_heads=2, num_local_experts=4,
                        num_experts_per_tok=2, **_LL),
    "qwen2-gqa": dict(model_type="qwen2", num_key_value_heads=2, **_LL),
    "qwen2-window": dict(model_type="qwen2", num_key_value_heads=2, use_sliding_window=True,
                         sliding_window=4, max_window_layers=1, **_LL),
    "qwen2_moe-shared": dict(model_type="qwen2_moe", num_key_value_heads=2, num_experts=4,
                             num_experts_per_tok=2, moe_intermediate_size=12, shared_expert_intermediate_size=20,
                             **{**_LL, "num_hidden_layers": 3}, mlp_only_layers=[0]),
    "qwen2_moe-sparse-step": dict(model_type="qwen2_moe", num_key_value_heads=4, num_experts=3, num_experts_per_tok=1,
                                  moe_intermediate_size=12, shared_expert_intermediate_size=8,
                                  decoder_sparse_step=2, **{**_LL, "num_hidden_layers": 4}),
    "qwen3-qknorm": dict(model_type="qwen3", num_key_value_heads=2, head_dim=16, **_LL),
    "qwen3_moe": dict(model_type="qwen3_moe", num_key_value_heads=2, head_dim=8, num_experts=4,
                      num_experts_per_tok=2, moe_intermediate_size=12, **{**_LL, "num_hidden_layers": 3},
                      mlp_only_layers=[1]),
    "gemma-mqa": dict(model_type="gemma", num_key_value_heads=1, head_dim=16, **_LL),
    "gemma2-local-global": dict(model_type="gemma2", num_key_value_heads=2, head_dim=16, sliding_window=4,
                                **{**_LL, "num_hidden_layers": 3}),
    "gemma3-text": dict(model_type="gemma3_text", num_key_value_heads=2, head_dim=8, sliding_window=4,
                        sliding_window_pattern=2, **{**_LL, "num_hidden_layers": 3}),
    "phi-mha": dict(model_type="phi", num_hidden_layers=2, hidden_size=32, num_attention_heads=4,
                    intermediate_size=80, max_position_embeddings=64, **_V),
    "phi3-fused": dict(model_type="phi3", num_key_value_heads=2, pad_token_id=0, **_LL),
    "falcon-mqa": dict(model_type="falcon", num_hidden_layers=2, hidden_size=32, num_attention_heads=4,
                       multi_query=True, max_position_embeddings=64, **_V),
    "falcon-gqa-newarch": dict(model_type="falcon", num_hidden_layers=2, hidden_size=32, num_attention_heads=4,
                               num_kv_heads=2, new_decoder_architecture=True, max_position_embeddings=64, **_V),
    "falcon-mha-sequential": dict(model_type="falcon", num_hidden_layers=2, hidden_size=32,
                                  num_attention_heads=4, multi_query=False, parallel_attn=False,
                                  max_position_embeddings=64, **_V),
    "olmo2-qknorm": dict(model_type="olmo2", num_key_value_heads=2, pad_token_id=0, **_LL),
    "olmo3-window": dict(model_type="olmo3", num_key_value_heads=2, sliding_window=4, pad_token_id=0,
                         **{**_LL, "num_hidden_layers": 4}),
    "starcoder2-window": dict(model_type="starcoder2", num_key_value_heads=2, sliding_window=4, **_LL),
    "stablelm-qkln": dict(model_type="stablelm", num_key_value_heads=2, qk_layernorm=True, use_qkv_bias=True,
                          **_LL),
    "stablelm-parallel": dict(model_type="stablelm", num_key_value_heads=4, use_parallel_residual=True, **_LL),
    "cohere-qknorm": dict(model_type="cohere", num_key_value_heads=2, use_qk_norm=True, pad_token_id=0, **_LL),
    "cohere2-window": dict(model_type="cohere2", num_key_value_heads=2, sliding_window=4, pad_token_id=0,
                           **{**_LL, "num_hidden_layers": 4}),
    "deepseek_v2-lite": dict(model_type="deepseek_v2", num_hidden_layers=3, hidden_size=32, num_attention_heads=4,
                             intermediate_size=48, moe_intermediate_size=12, n_routed_experts=4,
                             num_experts_per_tok=2, n_shared_experts=2, first_k_dense_replace=1,
                             q_lora_rank=None, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=4,
                             v_head_dim=6, max_position_embeddings=64, **_V),
    "deepseek_v3-mla": dict(model_type="deepseek_v3", num_hidden_layers=3, hidden_size=32, num_attention_heads=4,
                            num_key_value_heads=4, intermediate_size=48, moe_intermediate_size=12,
                            n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1,
                            first_k_dense_replace=1, n_group=2,
                            topk_group=1, q_lora_rank=12, kv_lora_rank=16, qk_nope_head_dim=8,
                            qk_rope_head_dim=4, v_head_dim=6, max_position_embeddings=64, **_V),
    "bert": dict(model_type="bert", num_hidden_layers=2, hidden_size=32, num_attention_heads=4,
                 intermediate_size=64, max_position_embeddings=16, **_V),
    "roberta": dict(model_type="roberta", num_hidden_layers=2, hidden_size=32, num_attention_heads=4,
                    intermediate_size=64, max_position_embeddings=18, type_vocab_size=1, pad_token_id=1, **_V),
    "distilbert": dict(model_type="distilbert", n_layers=2, dim=32, n_heads=4, hidden_dim=64,
                       max_position_embeddings=16, **_V),
    "t5-relu-tied": dict(model_type="t5", d_model=32, d_kv=8, d_ff=48, num_layers=2, num_decoder_layers=3,
                         num_heads=4, relative_attention_num_buckets=8, **_V),
    "t5-gated-untied": dict(model_type="t5", d_model=32, d_kv=4, d_ff=40, num_layers=2, num_heads=4,
                            feed_forward_proj="gated-gelu", tie_word_embeddings=False, **_V),
}


def hf_config(d: dict[str, Any]) -> Any:
    """The ``transformers`` configuration of ``d`` (eager attention, eager experts). ``d`` is
    deep-copied: transformers writes into nested dicts such as ``rope_scaling``."""
    d = copy.deepcopy(d)
    mt = d.pop("model_type")
    return transformers.AutoConfig.for_model(mt, **d, attn_implementation="eager",
                                             experts_implementation="eager")


def hf_model(d: dict[str, Any], device: str = "meta") -> Any:
    """The model llmmath's counts describe: the causal LM, T5ForConditionalGeneration, or the base
    model of an encoder (with its pooler when it has one)."""
    config = hf_config(d)
    mt = d["model_type"]
    with torch.device(device), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if mt in ENCODERS:
            return transformers.AutoModel.from_config(config)
        if mt in SEQ2SEQ:
            return transformers.AutoModelForSeq2SeqLM.from_config(config)
        return transformers.AutoModelForCausalLM.from_config(config)


_LAYER = re.compile(r"\.(?:h|layers|layer|block)\.(\d+)\.")


def classify(name: str) -> str:
    """The :data:`llmmath.BREAKDOWN_KEYS` key a parameter of a ``transformers`` model belongs to,
    from its module path alone."""
    bias = name.endswith("bias")
    m = _LAYER.search(name)
    if m:
        tail = name[m.end():]
        if "relative_attention_bias" in tail:
            return "position_embedding"
        if re.search(r"norm|ln_", tail, re.IGNORECASE):
            return "layer_norms"
        if re.search(r"shared_expert_gate|(?:mlp|block_sparse_moe)\.gate\.(?:weight|bias)$", tail):
            return "router"
        if "shared_expert" in tail:
            return "shared_experts"
        kind = "attention" if re.search(r"attn|attention", tail, re.IGNORECASE) else "mlp"
        return kind + "_bias" if bias else kind
    rules = [
        (r"(wte|embed_tokens|word_embeddings|embed_in|shared)\.weight$", "token_embedding"),
        (r"(wpe|embed_positions|position_embeddings)\.weight$", "position_embedding"),
        (r"token_type_embeddings", "token_type_embedding"),
        (r"embeddings\.LayerNorm", "embedding_norm"),
        (r"project_(in|out)", "embedding_projection"),
        (r"pooler", "pooler"),
        (r"(lm_head|embed_out)\.weight$", "lm_head"),
        (r"lm_head\.bias$", "lm_head_bias"),
        (r"(ln_f|final_layer_norm|final_layernorm|\.norm)\.(weight|bias)$", "final_norm"),
    ]
    for pattern, key in rules:
        if re.search(pattern, name):
            return key
    raise AssertionError(f"unclassified parameter {name}")


def _in_layer(name: str, seq2seq: bool) -> bool:
    """A parameter of a layer of the main stack (T5: the decoder's blocks), not counting T5's
    relative-position table (transformers keeps it in a stack's first block; llmmath counts it
    with the position embeddings)."""
    if "relative_attention_bias" in name:
        return False
    return not (seq2seq and name.startswith("encoder."))


def reference_counts(d: dict[str, Any]) -> dict[str, Any]:
    """Everything the parameter tests compare, read off the ``transformers`` model of ``d``.

    ``total`` ``sum(numel)``; ``base`` of ``model.base_model``; ``breakdown`` by :func:`classify`;
    ``per_layer`` the numel of each main-stack layer in order; ``active`` the total minus, in each
    MoE layer, the ``(E - k) / E`` share of its routed experts' parameters (E and k from the
    transformers config).
    """
    model = hf_model(d)
    config = model.config
    total = sum(p.numel() for p in model.parameters())
    base = sum(p.numel() for p in model.base_model.parameters())
    breakdown = dict.fromkeys(BREAKDOWN_KEYS, 0)
    per_layer: dict[int, int] = {}
    routed: dict[int, int] = {}
    for name, p in model.named_parameters():  # tied weights are yielded once
        breakdown[classify(name)] += p.numel()
        m = _LAYER.search(name)
        if m and _in_layer(name, d["model_type"] in SEQ2SEQ):
            i = int(m.group(1))
            per_layer[i] = per_layer.get(i, 0) + p.numel()
            if ".experts." in name:
                routed[i] = routed.get(i, 0) + p.numel()
    n_exp = next((getattr(config, k) for k in ("num_local_experts", "num_experts", "n_routed_experts")
                  if getattr(config, k, None)), 0)
    k = getattr(config, "num_experts_per_tok", 0) or 0
    inactive = sum(v * (n_exp - k) // n_exp for v in routed.values()) if n_exp else 0
    return {"total": total, "base": base, "breakdown": breakdown,
            "per_layer": [per_layer[i] for i in sorted(per_layer)], "active": total - inactive}


def counted_flops(d: dict[str, Any], batch: int, seq: int, mode: str, decoder_seq: int | None = None) -> int:
    """FLOPs counted by FlopCounterMode on the real (CPU) model of ``d``: one forward without
    gradients (``"forward"``), forward + backward of the loss (``"train"``), or forward + backward
    with every layer checkpointed (``"recompute"``). Encoders: the loss is the sum of the outputs
    (last hidden state and pooler). T5: ``seq`` encoder tokens, ``decoder_seq`` decoder tokens."""
    from torch.utils.flop_counter import FlopCounterMode

    torch.manual_seed(0)
    model = hf_model(d, device="cpu")
    mt = d["model_type"]
    vocab = d["vocab_size"]
    ids = torch.randint(2, vocab, (batch, seq))
    kwargs: dict[str, Any] = {"input_ids": ids}
    if mt in SEQ2SEQ:
        dec = torch.randint(2, vocab, (batch, decoder_seq))
        kwargs.update(decoder_input_ids=dec)
    elif mt not in ENCODERS:
        kwargs.update(labels=ids)
    if mode == "recompute":
        model.activation_checkpointing_enable()
    model.train() if mode != "forward" else model.eval()
    # Recompute every layer in full (PyTorch's default "early stop" skips the last products of a
    # layer whose outputs no backward formula needs, e.g. a final down projection).
    early_stop = torch.utils.checkpoint.set_checkpoint_early_stop(mode != "recompute")
    with FlopCounterMode(display=False) as counter, warnings.catch_warnings(), early_stop:
        warnings.simplefilter("ignore")
        if mode == "forward":
            with torch.no_grad():
                kwargs.pop("labels", None)
                model(**kwargs)
        else:
            out = model(**kwargs)
            if mt in ENCODERS:
                loss = out.last_hidden_state.sum()
                if getattr(out, "pooler_output", None) is not None:
                    loss = loss + out.pooler_output.sum()
            elif mt in SEQ2SEQ:
                loss = out.logits.float().logsumexp(-1).sum()
            else:
                loss = out.loss
            loss.backward()
    return counter.get_total_flops()


# ---- random configurations of every family (hypothesis) ---------------------------------------

def _even_rotary(head_dim: int, factor: float) -> float:
    """``factor`` if it rotates an even number of dimensions per head, else 1.0 (real models
    rotate even counts; an odd one makes transformers' rotary code add a stray product)."""
    return factor if (head_dim * factor) % 2 == 0 else 1.0


def random_config(family: str, draw: Any, st: Any) -> dict[str, Any]:
    """A random small ``config.json`` dict of ``family`` (``draw``/``st`` from hypothesis)."""
    i = lambda lo, hi: draw(st.integers(lo, hi))  # noqa: E731
    b = lambda: draw(st.booleans())  # noqa: E731
    pick = lambda *xs: draw(st.sampled_from(xs))  # noqa: E731
    kv = pick(1, 2, 4)
    a = kv * pick(1, 2)
    hd = pick(2, 4, 6, 8)
    L = i(1, 3)
    base = dict(vocab_size=i(8, 40))
    ll = dict(num_hidden_layers=L, hidden_size=a * hd, num_attention_heads=a, num_key_value_heads=kv,
              intermediate_size=i(1, 20), max_position_embeddings=32, tie_word_embeddings=b(), **base)

    def moe(n_key: str = "num_experts") -> dict[str, Any]:
        E = i(2, 4)
        return {n_key: E, "num_experts_per_tok": i(1, E), "moe_intermediate_size": i(1, 12)}

    def window() -> dict[str, Any]:
        return dict(sliding_window=i(1, 6))

    if family in ("gpt2", "gpt_bigcode", "gptj"):
        d = dict(n_layer=L, n_embd=a * hd, n_head=a, n_positions=32, n_inner=pick(None, i(1, 20)),
                 tie_word_embeddings=b(), **base)
        if family == "gpt_bigcode":
            d["multi_query"] = b()
        if family == "gptj":
            d["rotary_dim"] = 2 * i(1, hd // 2)
        return dict(model_type=family, **d)
    if family == "gpt_neox":
        return dict(model_type=family, num_hidden_layers=L, hidden_size=a * hd, num_attention_heads=a,
                    intermediate_size=i(1, 20), max_position_embeddings=32, attention_bias=b(),
                    use_parallel_residual=b(), tie_word_embeddings=b(), rotary_pct=_even_rotary(hd, 0.25), **base)
    if family == "opt":
        return dict(model_type=family, num_hidden_layers=L, hidden_size=a * hd, num_attention_heads=a,
                    ffn_dim=i(1, 20), max_position_embeddings=32, word_embed_proj_dim=pick(a * hd, i(1, 16)),
                    do_layer_norm_before=b(), enable_bias=b(), **base)
    if family in ("llama", "olmo2", "phi3", "starcoder2", "stablelm", "cohere", "mistral", "mixtral", "qwen2"):
        d = dict(model_type=family, **ll)
        if family == "llama":
            d.update(attention_bias=b(), mlp_bias=b())
        if family == "phi3":
            d.update(pad_token_id=0)
        if family == "olmo2":
            d.update(pad_token_id=0)
        if family == "starcoder2":
            d.update(use_bias=b(), sliding_window=pick(None, i(1, 6)))
        if family == "stablelm":
            d.update(qk_layernorm=b(), use_qkv_bias=b(), use_parallel_residual=b(),
                     partial_rotary_factor=_even_rotary(hd, 0.25))
        if family == "cohere":
            d.update(use_qk_norm=b(), attention_bias=b(), pad_token_id=0)
        if family == "mistral":
            d.update(sliding_window=pick(None, i(1, 6)))
        if family == "mixtral":
            E = i(2, 4)
            d.update(num_local_experts=E, num_experts_per_tok=i(1, E))
        if family == "qwen2":
            d.update(use_sliding_window=b(), max_window_layers=i(0, L), **window())
        return d
    if family in ("qwen3", "qwen3_moe", "qwen2_moe"):
        d = dict(model_type=family, **ll)
        if family != "qwen2_moe":
            d.update(head_dim=pick(2, 4, 8), attention_bias=b())
        if family == "qwen3":
            d.update(use_sliding_window=b(), max_window_layers=i(0, L), **window())
        if family in ("qwen3_moe", "qwen2_moe"):
            d.update(moe(), decoder_sparse_step=i(1, 2), mlp_only_layers=sorted(set(
                draw(st.lists(st.integers(0, L - 1), max_size=2)))))
        if family == "qwen2_moe":
            d.update(shared_expert_intermediate_size=i(1, 12))
        return d
    if family in ("gemma", "gemma2", "gemma3_text"):
        d = dict(model_type=family, **ll, head_dim=pick(2, 4, 8), pad_token_id=0)
        if family != "gemma":
            d.update(window())
        if family == "gemma3_text":
            d.update(sliding_window_pattern=i(1, 3))
        return d
    if family in ("olmo3", "cohere2"):
        return dict(model_type=family, **ll, pad_token_id=0, **window())
    if family == "phi":
        return dict(model_type=family, num_hidden_layers=L, hidden_size=a * hd, num_attention_heads=a,
                    num_key_value_heads=kv, intermediate_size=i(1, 20), max_position_embeddings=32,
                    partial_rotary_factor=pick(0.5, 1.0) if hd % 4 == 0 else 1.0, tie_word_embeddings=b(), **base)
    if family == "falcon":
        new = b()
        return dict(model_type=family, num_hidden_layers=L, hidden_size=a * hd, num_attention_heads=a,
                    num_kv_heads=kv, new_decoder_architecture=new, multi_query=b(), parallel_attn=b() or new,
                    bias=b(), max_position_embeddings=32, **base)
    if family in ("deepseek_v2", "deepseek_v3"):
        # even latent and no-rope widths: DeepSeek-V2's complex rotary code views the slice after
        # them as complex numbers, which needs an even offset (every published config is even)
        E = i(2, 4)
        return dict(model_type=family, num_hidden_layers=L, hidden_size=a * i(1, 8), num_attention_heads=a,
                    num_key_value_heads=a, intermediate_size=i(1, 20), moe_intermediate_size=i(1, 12),
                    n_routed_experts=E, num_experts_per_tok=i(1, E), n_shared_experts=i(0, 2),
                    first_k_dense_replace=i(0, L), q_lora_rank=pick(None, i(1, 12)), kv_lora_rank=2 * i(1, 6),
                    qk_nope_head_dim=2 * i(1, 3), qk_rope_head_dim=2 * i(1, 3), v_head_dim=i(1, 8),
                    attention_bias=b(), n_group=1, topk_group=1, max_position_embeddings=32,
                    tie_word_embeddings=b(), **base)
    if family in ("bert", "roberta"):
        return dict(model_type=family, num_hidden_layers=L, hidden_size=a * hd, num_attention_heads=a,
                    intermediate_size=i(1, 20), max_position_embeddings=i(8, 20), type_vocab_size=i(1, 3),
                    pad_token_id=0, **base)
    if family == "distilbert":
        return dict(model_type=family, n_layers=L, dim=a * hd, n_heads=a, hidden_dim=i(1, 20),
                    max_position_embeddings=i(8, 20), pad_token_id=0, **base)
    if family == "t5":
        return dict(model_type=family, d_model=i(4, 24), d_kv=hd, num_heads=a, d_ff=i(1, 20), num_layers=L,
                    num_decoder_layers=i(1, 3), relative_attention_num_buckets=i(4, 8),
                    feed_forward_proj=pick("relu", "gated-gelu"), **base)
    raise ValueError(f"no random configs for family {family!r}")


def cache_bytes(d: dict[str, Any], batch: int, seq: int, decoder_seq: int | None = None) -> int:
    """Bytes of the key/value tensors the ``transformers`` cache holds after a prefill of ``seq``
    tokens (T5: ``seq`` encoder tokens and ``decoder_seq`` decoder tokens), fp32, each storage
    counted once."""
    torch.manual_seed(0)
    model = hf_model(d, device="cpu").eval()
    ids = torch.randint(2, d["vocab_size"], (batch, seq))
    kwargs: dict[str, Any] = {"input_ids": ids, "use_cache": True}
    if d["model_type"] in SEQ2SEQ:
        kwargs["decoder_input_ids"] = torch.randint(2, d["vocab_size"], (batch, decoder_seq))
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cache = model(**kwargs).past_key_values
    caches = [cache.self_attention_cache, cache.cross_attention_cache] if hasattr(cache, "cross_attention_cache") \
        else [cache]
    seen: dict[int, int] = {}
    for c in caches:
        for layer in c.layers:
            for t in (layer.keys, layer.values):
                seen[t.untyped_storage().data_ptr()] = t.numel() * t.element_size()
    return sum(seen.values())
