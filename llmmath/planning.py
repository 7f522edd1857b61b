"""Planning a run end to end: a training run on a cluster, then serving the model.

Each function composes the formulas of the earlier chapters into the answer a reader with a real
job needs, and returns it as plain data (dicts of numbers and strings, JSON-ready): what the
``python -m llmmath plan`` and ``serve`` commands print. Nothing here is a new formula: memory
from :func:`llmmath.memory_per_gpu`, step time and MFU from :func:`llmmath.step_time`, layouts from
:func:`llmmath.search_layouts`, communication from :func:`llmmath.communication_bytes`, FLOPs from
:func:`llmmath.training_flops`, serving from :mod:`llmmath.inference`.
Derived in chapter :doc:`/chapters/capstone`.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from ._validate import check_bool, check_fraction, check_int, check_positive
from .config import TransformerConfig
from .flops import SECONDS_PER_DAY, training_flops
from .hardware import accelerator, check_storage_dtype, default_precision, gpu_peak_flops
from .inference import (
    kv_bytes,
    max_decode_batch,
    prefill_seconds,
    serving_memory_bytes,
    tp_decode_step_seconds,
    tp_shard,
)
from .memory import RECOMPUTE_MODES
from .parallel import (
    Layout,
    balanced_stage_layers,
    check_layout,
    communication_bytes,
    memory_per_gpu,
    search_layouts,
    step_time,
)
from .params import active_param_count, param_count
from .units import bytes_for

__all__ = ["training_run", "layout_for", "search_training_runs", "serving_run"]

def _check_cfg(cfg: Any) -> TransformerConfig:
    if not isinstance(cfg, TransformerConfig):
        raise TypeError(f"cfg must be a TransformerConfig, got {type(cfg).__name__}")
    if not cfg.causal or cfg.is_encoder_decoder:
        raise ValueError(f"planning covers decoder-only language models; {cfg.name!r} is "
                         + ("an encoder" if not cfg.causal else "an encoder-decoder"))
    return cfg


def _check_count(name: str, value: Any) -> float:
    """A token count: a positive finite number (``15e12`` is accepted as it is typed)."""
    return check_positive(name, value)


def _global_batch(layout_dp: int, microbatch_size: int, seq: int, global_batch_tokens: float) -> int:
    """Micro-batches per step: ``round(global_batch_tokens / (seq dp b))``, at least 1."""
    return max(1, round(global_batch_tokens / (seq * layout_dp * microbatch_size)))


def _time_and_cost(cfg: TransformerConfig, layout: Layout, seq: int, tokens: float, gpu: Any, *,
                   mfu: float | None, efficiency: float, precision: str, state_precision: str,
                   flash_attention: bool, price_per_gpu_hour: float | None) -> dict[str, Any]:
    spec = accelerator(gpu)
    step_tokens = layout.global_batch * seq
    steps = math.ceil(tokens / step_tokens)
    model_flops = training_flops(cfg, layout.global_batch, seq)  # every query-key pair, as llmmath.mfu
    peak_total = layout.n_gpus * gpu_peak_flops(spec, precision)
    estimate = step_time(cfg, layout, seq, spec, efficiency=efficiency, precision=precision,
                         state_precision=state_precision, flash_attention=flash_attention)
    # one FLOP count for every MFU of the plan (step_time's own MFU counts a fused kernel's causal
    # pairs only): an assumed mfu and the model's estimate are then comparable, and mfu=run["mfu"]
    # reproduces the step-time model's step
    estimate_mfu = model_flops / (peak_total * estimate["step"])
    if mfu is None:
        step, source, achieved = estimate["step"], f"step-time model at {efficiency:.0%} of peak", estimate_mfu
    else:
        step = model_flops / (peak_total * mfu)
        source, achieved = f"assumed MFU {mfu:.1%}", mfu
    seconds = steps * step
    gpu_hours = seconds * layout.n_gpus / 3600
    return {
        "steps": steps,
        "tokens_per_step": step_tokens,
        "model_flops_per_step": model_flops,
        "step_seconds": step,
        "time_source": source,
        "mfu": achieved,
        "model_estimate": {**{k: estimate[k] for k in ("compute", "bubble", "exposed_communication", "step")},
                           "mfu": estimate_mfu},
        "tokens_per_second": step_tokens / step,
        "days": seconds / SECONDS_PER_DAY,
        "gpu_hours": gpu_hours,
        "cost": None if price_per_gpu_hour is None else gpu_hours * price_per_gpu_hour,
    }


def training_run(
    cfg: TransformerConfig, tokens: float, gpu: str, layout: Layout, seq: int, *,
    mfu: float | None = None, efficiency: float = 1.0, price_per_gpu_hour: float | None = None,
    precision: str = "bf16_tensor", state_precision: str = "mixed", optimizer: str = "adam",
    flash_attention: bool = True, dropout: bool = True,
) -> dict[str, Any]:
    """The plan of training ``cfg`` on ``tokens`` tokens with ``layout`` on ``layout.n_gpus``
    accelerators ``gpu``, sequences of ``seq`` tokens: the memory breakdown of the most loaded GPU
    (:func:`llmmath.memory_per_gpu`) against the accelerator's memory (``fits`` and ``margin``
    bytes, negative when it does not fit), the FLOPs and communication bytes of one step, and time:
    with ``mfu`` given, ``step = training_flops / (n peak mfu)``; otherwise the step-time model
    (:func:`llmmath.step_time`) with kernels at ``efficiency`` of peak (1: a lower bound on time).
    Days ``= ceil(tokens / tokens per step) step / 86400``, GPU-hours, and the cost at
    ``price_per_gpu_hour``. ``dropout=False`` leaves the dropout masks out of the activations
    (Llama, DeepSeek and most models since train without dropout). Every MFU of the plan (``mfu``,
    ``model_estimate["mfu"]``) counts the model's FLOPs as :func:`llmmath.mfu` does,
    ``training_flops`` (every query-key pair, no recomputation), so ``mfu=plan["mfu"]`` reproduces
    the step-time model's step (the MFU of :func:`llmmath.step_time` counts only the causal pairs
    of a fused kernel).
    Derived in chapter :doc:`/chapters/capstone`.
    """
    cfg = _check_cfg(cfg)
    tokens = _check_count("tokens", tokens)
    spec = accelerator(gpu)
    s = check_int("seq", seq)
    if not isinstance(layout, Layout):
        raise TypeError(f"layout must be a Layout, got {type(layout).__name__}")
    check_layout(cfg, layout, s)
    if mfu is not None:
        mfu = check_fraction("mfu", mfu)
    efficiency = check_fraction("efficiency", efficiency)
    if price_per_gpu_hour is not None:
        price_per_gpu_hour = check_positive("price_per_gpu_hour", price_per_gpu_hour, allow_zero=True)
    check_bool("flash_attention", flash_attention)
    check_bool("dropout", dropout)
    gpu_peak_flops(spec, precision)  # validates the precision for this accelerator
    memory = memory_per_gpu(cfg, layout, s, precision=state_precision, optimizer=optimizer,
                            flash_attention=flash_attention, dropout=dropout)
    comm = communication_bytes(cfg, layout, s, precision=state_precision)
    return {
        "model": {"name": cfg.name, "params": param_count(cfg), "active_params": active_param_count(cfg)},
        "cluster": {"gpu": spec.name, "n_gpus": layout.n_gpus, "peak_flops": gpu_peak_flops(spec, precision),
                    "precision": precision, "memory_bytes": spec.memory_bytes},
        "layout": {**{k: getattr(layout, k) for k in ("tp", "pp", "dp", "cp", "ep", "zero_stage",
                                                        "sequence_parallel", "recompute", "microbatch_size",
                                                        "microbatches", "schedule", "virtual_stages")},
                   "global_batch": layout.global_batch},
        "seq": s,
        "tokens": tokens,
        "memory": memory,
        "fits": memory["total"] <= spec.memory_bytes,
        "margin_bytes": spec.memory_bytes - memory["total"],
        "communication_bytes_per_step": comm,
        **_time_and_cost(cfg, layout, s, tokens, spec, mfu=mfu, efficiency=efficiency, precision=precision,
                         state_precision=state_precision, flash_attention=flash_attention,
                         price_per_gpu_hour=price_per_gpu_hour),
    }


def layout_for(cfg: TransformerConfig, n_gpus: int, seq: int, global_batch_tokens: float,
               **degrees: Any) -> Layout:
    """The :class:`~llmmath.Layout` of ``cfg`` on ``n_gpus`` GPUs with the given degrees (``tp``,
    ``pp``, ``cp``, ``ep``, ``zero_stage``, ``recompute``, ``microbatch_size``, ...):
    ``dp = n / (tp pp cp)``, ``microbatches = round(global_batch_tokens / (seq dp b))`` (at least
    1), sequence parallelism with tensor parallelism, and, when ``pp`` (times the virtual stages)
    does not divide the layers, the layers split as evenly as possible, the first stages holding
    one more (Llama 3 405B's 126 layers on 16 stages). Derived in chapter :doc:`/chapters/capstone`.
    """
    cfg = _check_cfg(cfg)
    gbt = _check_count("global_batch_tokens", global_batch_tokens)
    s = check_int("seq", seq)
    b = check_int("microbatch_size", degrees.get("microbatch_size", 1))
    n = check_int("n_gpus", n_gpus)
    inner = 1
    for k in ("tp", "pp", "cp"):
        inner *= check_int(k, degrees.get(k, 1))
    if n % inner:
        raise ValueError(f"tp * pp * cp = {inner} must divide n_gpus = {n}")
    m = _global_batch(n // inner, b, s, gbt)
    degrees = {"sequence_parallel": degrees.get("tp", 1) > 1, **degrees, "microbatches": m}
    if "stage_layers" not in degrees:
        stages = check_int("pp", degrees.get("pp", 1)) * check_int("virtual_stages", degrees.get("virtual_stages", 1))
        degrees["stage_layers"] = balanced_stage_layers(cfg.n_layers, stages)
    return Layout.for_gpus(n, **degrees)


def search_training_runs(
    cfg: TransformerConfig, tokens: float, gpu: str, n_gpus: int, seq: int, global_batch_tokens: float, *,
    top: int = 5, mfu: float | None = None, efficiency: float = 1.0, price_per_gpu_hour: float | None = None,
    precision: str = "bf16_tensor", recompute: tuple[str, ...] = RECOMPUTE_MODES,
    virtual_stages: tuple[int, ...] = (1, 2, 4), flash_attention: bool = True, dropout: bool = True,
) -> dict[str, Any]:
    """Search the layouts of ``n_gpus`` accelerators (:func:`llmmath.search_layouts`, ZeRO-1, tensor
    parallelism within the scale-up domain, pipeline degrees dividing the layers or powers of two,
    expert degrees powers of two, 1F1B or interleaved with ``virtual_stages`` when ``pp > 1``; with
    ``flash_attention`` no selective recomputation, which then saves nothing) for
    ``global_batch_tokens`` per step, and plan the ``top`` fastest that fit (:func:`training_run`).
    When none fits, ``best`` is empty and ``closest`` plans the layout of least memory, whose
    negative ``margin_bytes`` says by how much it misses. ``dropout`` as in :func:`training_run`.
    Derived in chapter :doc:`/chapters/capstone`.
    """
    cfg = _check_cfg(cfg)
    n, s = check_int("n_gpus", n_gpus), check_int("seq", seq)
    gbt = _check_count("global_batch_tokens", global_batch_tokens)
    top = check_int("top", top)
    spec = accelerator(gpu)
    batch = max(1, round(gbt / s))
    eps = tuple(2**i for i in range(12) if cfg.is_moe and cfg.n_experts % 2**i == 0 and 2**i <= n) or (1,)
    if flash_attention:  # a fused kernel keeps no s x s tensor: selective recomputation saves nothing
        recompute = tuple(r for r in recompute if r != "selective") or recompute
    check_bool("dropout", dropout)
    plans = search_layouts(cfg, n, spec, s, batch, ep=eps, recompute=recompute, flash_attention=flash_attention,
                           virtual_stages=virtual_stages, precision="mixed", peak_precision=precision,
                           efficiency=efficiency, dropout=dropout)
    kw = dict(mfu=mfu, efficiency=efficiency, price_per_gpu_hour=price_per_gpu_hour, precision=precision,
              flash_attention=flash_attention, dropout=dropout)
    fitting = [p for p in plans if p.fits][:top]
    best = [training_run(cfg, tokens, spec, p.layout, s, **kw) for p in fitting]
    closest = None
    if not best and plans:
        least = min(plans, key=lambda p: p.memory)
        closest = training_run(cfg, tokens, spec, least.layout, s, **kw)
    return {"candidates": len(plans), "fitting": sum(p.fits for p in plans), "global_batch": batch,
            "best": best, "closest": closest}


def serving_run(
    cfg: TransformerConfig, gpu: str, n_gpus: int, context: int, *, batch: int | None = None,
    prompt: int | None = None, dtype: str = "bf16", kv_dtype: str = "bf16", reserve_bytes: int = 0,
    precision: str | None = None,
) -> dict[str, Any]:
    """Serving ``cfg`` on ``n_gpus`` accelerators of one scale-up domain (tensor parallelism of
    degree ``n_gpus``) at ``context`` tokens per sequence: weights and one sequence's KV cache per
    GPU (:func:`llmmath.tp_shard`, :func:`llmmath.kv_bytes`), the largest batch that fits beside
    the weights and ``reserve_bytes`` (:func:`llmmath.max_decode_batch`), and, at ``batch`` (default:
    that largest batch), the lower bounds on the prefill of ``prompt`` tokens (default ``context``;
    one GPU's shard of the FLOPs and bytes, its all-reduces left out) and on the time per output
    token at ``context`` tokens held (``max_position - 1`` when ``context`` is all the model's
    positions: the step that generates the last token) (:func:`llmmath.tp_decode_step_seconds`, ring all-reduces
    included), and the throughput they imply.
    ``fits`` is False (and no times are given) when ``batch`` does not fit; ``batch_margin`` says
    by how many sequences, and ``memory_margin_bytes`` (each GPU's memory less its weights and
    ``reserve_bytes``) by how many bytes when not even the weights fit (``max_batch`` is then 0).
    ``precision`` defaults to :func:`llmmath.default_precision` of ``gpu``; ``dtype`` and
    ``kv_dtype`` must be formats the accelerator has kernels for (:func:`llmmath.check_storage_dtype`).
    ``kv_bytes_per_sequence_per_gpu`` is the grouped cache, ``a_kv`` heads (what vLLM keeps);
    ``kv_bytes_per_sequence_per_gpu_transformers`` what ``transformers`` keeps, the same except for
    a config with ``kv_broadcast`` (Falcon's new decoder architecture: every one of the ``a`` heads).
    Derived in chapter :doc:`/chapters/capstone`.
    """
    cfg = _check_cfg(cfg)
    spec = accelerator(gpu)
    t = check_int("n_gpus", n_gpus)
    n = check_int("context", context)
    check_storage_dtype(spec, "dtype", dtype)
    check_storage_dtype(spec, "kv_dtype", kv_dtype)
    precision = default_precision(spec) if precision is None else precision
    gpu_peak_flops(spec, precision)  # validates the precision for this accelerator
    if isinstance(reserve_bytes, bool) or not isinstance(reserve_bytes, numbers.Integral):
        raise TypeError(f"reserve_bytes must be an integer number of bytes, got {type(reserve_bytes).__name__}")
    shard = tp_shard(cfg, t)
    room = spec.memory_bytes - bytes_for(param_count(shard), dtype) - reserve_bytes  # < 0: the weights miss
    largest = 0 if room < 0 else max_decode_batch(cfg, n, spec, reserve_bytes=reserve_bytes, dtype=dtype,
                                                  kv_dtype=kv_dtype, tp=t)
    b = largest if batch is None else check_int("batch", batch)
    p = n if prompt is None else check_int("prompt", prompt, maximum=n)
    out: dict[str, Any] = {
        "model": {"name": cfg.name, "params": param_count(cfg), "active_params": active_param_count(cfg)},
        "cluster": {"gpu": spec.name, "n_gpus": t, "memory_bytes": spec.memory_bytes,
                    "memory_bandwidth": spec.memory_bandwidth},
        "context": n, "dtype": dtype, "kv_dtype": kv_dtype, "reserve_bytes": reserve_bytes,
        "weights_bytes_per_gpu": bytes_for(param_count(shard), dtype),
        "kv_bytes_per_sequence_per_gpu": kv_bytes(shard, 1, n, kv_dtype),
        "kv_bytes_per_sequence_per_gpu_transformers": kv_bytes(
            shard.replace(n_kv_heads=shard.n_heads) if cfg.kv_broadcast else shard, 1, n, kv_dtype),
        "memory_margin_bytes": room,
        "max_batch": largest, "batch": b, "fits": 0 < b <= largest, "batch_margin": largest - b,
    }
    if out["fits"]:
        # a context of all max_position positions: the step that generates the token at the last
        # position holds max_position - 1 (a learned table has no row for one more)
        held = n - 1 if n == cfg.max_position and n > 1 else n
        per_token = tp_decode_step_seconds(cfg, b, held, spec, t, precision=precision, dtype=dtype,
                                           kv_dtype=kv_dtype)
        out.update(
            memory_bytes_per_gpu=serving_memory_bytes(cfg, b, n, dtype=dtype, kv_dtype=kv_dtype, tp=t),
            prefill_seconds=prefill_seconds(tp_shard(cfg, t), b, p, spec, precision=precision, dtype=dtype,
                                            kv_dtype=kv_dtype),
            prompt=p,
            seconds_per_output_token=per_token,
            tokens_per_second=b / per_token,
        )
    return out
