"""Planning a run end to end: a training run on a cluster, then serving the model.

Each function composes the formulas of the earlier chapters into the answer a reader with a real
job needs, and returns it as plain data (dicts of numbers and strings, JSON-ready): what the
``python -m llmmath plan`` and ``serve`` commands print. Nothing here is a new formula: memory
from :func:`llmmath.memory_per_gpu`, step time and MFU (both modes) from :func:`llmmath.step_time`, layouts from
:func:`llmmath.search_layouts`, communication from :func:`llmmath.communication_bytes`, FLOPs from
:func:`llmmath.model_flops`, serving from :mod:`llmmath.inference`.
Derived in chapter :doc:`/chapters/capstone`.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from ._validate import check_bool, check_fraction, check_int, check_positive
from .config import TransformerConfig
from .flops import SECONDS_PER_DAY
from .hardware import accelerator, check_storage_dtype, gpu_peak_flops
from .inference import (
    SERVING_CALIBRATION,
    ServingCalibration,
    WeightFormat,
    allocatable_memory_bytes,
    decode_step_times,
    kv_bytes,
    matmul_precision,
    prefill_times,
    serving_memory_bytes,
    steady_state,
    tp_shard,
    usable_memory_bytes,
    weight_format,
)
from .memory import RECOMPUTE_MODES
from .parallel import (
    V_SCHEDULES,
    Layout,
    balanced_stage_layers,
    check_layout,
    communication_bytes,
    memory_per_gpu,
)
from .params import active_param_count, param_breakdown, param_count
from .sharding import MEMORY_RESERVE
from .steptime import MFU_CONVENTION, model_flops, search_layouts, step_time
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
                   mfu: float | None, efficiency: float | None, precision: str, state_precision: str,
                   flash_attention: bool, price_per_gpu_hour: float | None,
                   attention_kernel: str | None = None) -> dict[str, Any]:
    from .calibration import stored_calibration

    spec = accelerator(gpu)
    step_tokens = layout.global_batch * seq
    steps = math.ceil(tokens / step_tokens)
    flops = model_flops(cfg, layout.global_batch, seq)
    peak_total = layout.n_gpus * gpu_peak_flops(spec, precision)
    kw = dict(precision=precision, state_precision=state_precision, flash_attention=flash_attention)
    bound = step_time(cfg, layout, seq, spec, mode="bound", **kw)
    pred = step_time(cfg, layout, seq, spec, mode="predicted", efficiency=efficiency,
                     attention_kernel=attention_kernel, **kw)
    if mfu is None:
        step, source, achieved = pred["step"], f"predicted ({pred['efficiency']['source']})", pred["mfu"]
    else:
        step = flops / (peak_total * mfu)
        source, achieved = f"assumed MFU {mfu:.1%}", mfu
    seconds = steps * step
    gpu_hours = seconds * layout.n_gpus / 3600
    band = stored_calibration()["band"]
    keys = ("step", "compute", "bubble", "exposed_communication", "optimizer", "mfu", "hfu")
    return {
        "steps": steps,
        "tokens_per_step": step_tokens,
        "model_flops_per_step": flops,
        "mfu_convention": MFU_CONVENTION,
        "step_seconds": step,
        "time_source": source,
        "mfu": achieved,
        "bound_step_seconds": bound["step"],
        "bound_mfu": bound["mfu"],
        "bound_hfu": bound["hfu"],
        "predicted_step_seconds": pred["step"],
        "predicted_mfu": pred["mfu"],
        "predicted_hfu": pred["hfu"],
        "predicted_error": {"median_abs": band["median_abs"], "p90_abs": band["p90_abs"],
                            "runs": stored_calibration()["fit_rows"],
                            "meaning": "leave-one-out relative error of the prediction over the published runs "
                                       "of llmmath/data/measured_runs.json"},
        "bound": {k: bound[k] for k in keys + ("link_bound",)},
        "prediction": {**{k: pred[k] for k in keys}, "exposed": pred["exposed"], "efficiency": pred["efficiency"]},
        "model_estimate": {k: pred[k] for k in keys},
        "tokens_per_second": step_tokens / step,
        "days": seconds / SECONDS_PER_DAY,
        "gpu_hours": gpu_hours,
        "cost": None if price_per_gpu_hour is None else gpu_hours * price_per_gpu_hour,
    }


def training_run(
    cfg: TransformerConfig, tokens: float, gpu: str, layout: Layout, seq: int, *,
    mfu: float | None = None, efficiency: float | None = None, price_per_gpu_hour: float | None = None,
    precision: str = "bf16_tensor", state_precision: str = "mixed", optimizer: str = "adam",
    flash_attention: bool = True, dropout: bool = True, reserve: float = MEMORY_RESERVE,
    attention_kernel: str | None = None,
) -> dict[str, Any]:
    """The plan of training ``cfg`` on ``tokens`` tokens with ``layout`` on ``layout.n_gpus``
    accelerators ``gpu``, sequences of ``seq`` tokens: the memory breakdown of the most loaded GPU
    (:func:`llmmath.memory_per_gpu`) against the memory less a ``reserve`` share
    (:data:`MEMORY_RESERVE`: ``fits``, and ``margin`` bytes, negative when it does not fit), the
    FLOPs and communication bytes of one step, and time in both modes of
    :func:`llmmath.step_time`: ``bound_step_seconds`` and ``bound_mfu`` (a lower bound on the
    step, an upper bound on the MFU), ``predicted_step_seconds`` and ``predicted_mfu`` (the
    calibrated prediction, kernels at ``efficiency`` of peak when given) with
    ``predicted_error`` (the leave-one-out error over the published runs). ``step_seconds`` is the
    prediction, or with ``mfu`` given ``model_flops / (n peak mfu)``. Every MFU counts
    :data:`llmmath.MFU_CONVENTION` (:func:`llmmath.model_flops`: causal pairs, no recomputation).
    Days ``= ceil(tokens / tokens per step) step / 86400``, GPU-hours, and the cost at
    ``price_per_gpu_hour``. ``dropout=False`` leaves the dropout masks out of the activations
    (Llama, DeepSeek and most models since train without dropout).
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
    if efficiency is not None:
        efficiency = check_fraction("efficiency", efficiency)
    if price_per_gpu_hour is not None:
        price_per_gpu_hour = check_positive("price_per_gpu_hour", price_per_gpu_hour, allow_zero=True)
    check_bool("flash_attention", flash_attention)
    check_bool("dropout", dropout)
    reserve = check_positive("reserve", reserve, allow_zero=True)
    if reserve >= 1:
        raise ValueError(f"reserve is a share of the GPU's memory in [0, 1), got {reserve}")
    gpu_peak_flops(spec, precision)  # validates the precision for this accelerator
    memory = memory_per_gpu(cfg, layout, s, precision=state_precision, optimizer=optimizer,
                            flash_attention=flash_attention, dropout=dropout)
    comm = communication_bytes(cfg, layout, s, precision=state_precision)
    usable = round(spec.memory_bytes * (1 - reserve))
    return {
        "model": {"name": cfg.name, "params": param_count(cfg), "active_params": active_param_count(cfg)},
        "cluster": {"gpu": spec.name, "n_gpus": layout.n_gpus, "peak_flops": gpu_peak_flops(spec, precision),
                    "precision": precision, "memory_bytes": spec.memory_bytes,
                    "reserve_bytes": spec.memory_bytes - usable, "usable_memory_bytes": usable},
        "layout": {**{k: getattr(layout, k) for k in ("tp", "pp", "dp", "cp", "ep", "zero_stage",
                                                        "sequence_parallel", "recompute", "microbatch_size",
                                                        "microbatches", "schedule", "virtual_stages")},
                   "global_batch": layout.global_batch},
        "seq": s,
        "tokens": tokens,
        "memory": memory,
        "fits": memory["total"] <= usable,
        "margin_bytes": usable - memory["total"],
        "communication_bytes_per_step": comm,
        **_time_and_cost(cfg, layout, s, tokens, spec, mfu=mfu, efficiency=efficiency, precision=precision,
                         state_precision=state_precision, flash_attention=flash_attention,
                         price_per_gpu_hour=price_per_gpu_hour, attention_kernel=attention_kernel),
    }


def layout_for(cfg: TransformerConfig, n_gpus: int, seq: int, global_batch_tokens: float,
               **degrees: Any) -> Layout:
    """The :class:`~llmmath.Layout` of ``cfg`` on ``n_gpus`` GPUs with the given degrees (``tp``,
    ``pp``, ``cp``, ``ep``, ``zero_stage``, ``recompute``, ``microbatch_size``, ...):
    ``dp = n / (tp pp cp)``, ``microbatches = round(global_batch_tokens / (seq dp b))`` (at least
    1), sequence parallelism with tensor parallelism, the interleaved schedule when ``virtual_stages > 1``
    (two chunks per GPU for the V schedules ``zbv`` and ``dualpipev``), and, when ``pp`` (times the virtual stages)
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
    if degrees.get("virtual_stages", 1) > 1 and "schedule" not in degrees:
        degrees["schedule"] = "interleaved"
    if degrees.get("schedule") in V_SCHEDULES and "virtual_stages" not in degrees:
        degrees["virtual_stages"] = 2
    if "stage_layers" not in degrees:
        stages = check_int("pp", degrees.get("pp", 1)) * check_int("virtual_stages", degrees.get("virtual_stages", 1))
        degrees["stage_layers"] = balanced_stage_layers(cfg.n_layers, stages)
    return Layout.for_gpus(n, **degrees)


def search_training_runs(
    cfg: TransformerConfig, tokens: float, gpu: str, n_gpus: int, seq: int, global_batch_tokens: float, *,
    top: int = 5, mfu: float | None = None, efficiency: float | None = None, price_per_gpu_hour: float | None = None,
    precision: str = "bf16_tensor", recompute: tuple[str, ...] = RECOMPUTE_MODES,
    virtual_stages: tuple[int, ...] = (1, 2, 4), flash_attention: bool = True, dropout: bool = True,
    reserve: float = MEMORY_RESERVE,
) -> dict[str, Any]:
    """Search the layouts of ``n_gpus`` accelerators (:func:`llmmath.search_layouts`, ZeRO-1, tensor
    parallelism within the scale-up domain, pipeline degrees dividing the layers or powers of two,
    expert degrees powers of two, 1F1B or interleaved with ``virtual_stages`` when ``pp > 1``; with
    ``flash_attention`` no selective recomputation, which then saves nothing) for
    ``global_batch_tokens`` per step, and plan the ``top`` fastest by the predicted step among those
    that fit in the memory less the ``reserve`` share (:func:`training_run`). When none fits,
    ``best`` is empty and ``closest`` plans the layout of least memory, whose negative
    ``margin_bytes`` says by how much it misses. ``dropout`` as in :func:`training_run`.
    Derived in chapter :doc:`/chapters/capstone`.
    """
    cfg = _check_cfg(cfg)
    n, s = check_int("n_gpus", n_gpus), check_int("seq", seq)
    gbt = _check_count("global_batch_tokens", global_batch_tokens)
    top = check_int("top", top)
    spec = accelerator(gpu)
    reserve = check_positive("reserve", reserve, allow_zero=True)
    if reserve >= 1:
        raise ValueError(f"reserve is a share of the GPU's memory in [0, 1), got {reserve}")
    batch = max(1, round(gbt / s))
    eps = tuple(2**i for i in range(12) if cfg.is_moe and cfg.n_experts % 2**i == 0 and 2**i <= n) or (1,)
    if flash_attention:  # a fused kernel keeps no s x s tensor: selective recomputation saves nothing
        recompute = tuple(r for r in recompute if r != "selective") or recompute
    check_bool("dropout", dropout)
    extra = {} if efficiency is None else {"efficiency": check_fraction("efficiency", efficiency)}
    plans = search_layouts(cfg, n, spec, s, batch, ep=eps, recompute=recompute, flash_attention=flash_attention,
                           virtual_stages=virtual_stages, precision="mixed", peak_precision=precision,
                           dropout=dropout, usable_memory=1 - reserve, **extra)
    kw = dict(mfu=mfu, efficiency=efficiency, price_per_gpu_hour=price_per_gpu_hour, precision=precision,
              flash_attention=flash_attention, dropout=dropout, reserve=reserve)
    fitting = [p for p in plans if p.fits][:top]
    best = [training_run(cfg, tokens, spec, p.layout, s, **kw) for p in fitting]
    closest = None
    if not best and plans:
        least = min(plans, key=lambda p: p.memory)
        closest = training_run(cfg, tokens, spec, least.layout, s, **kw)
    return {"candidates": len(plans), "fitting": sum(p.fits for p in plans), "global_batch": batch,
            "reserve": reserve, "best": best, "closest": closest}


def _pipeline_memory(cfg: TransformerConfig, shard: TransformerConfig, pp: int, dtype: Any,
                     kv_dtype: str) -> tuple[float, int]:
    """(weight bytes, KV bytes per token) of the busiest of ``pp`` pipeline stages of ``shard``,
    from above: ``ceil(L / pp)`` layers' share of the layers' weights and cache, plus the whole
    embedding, final norm and LM head."""
    if pp == 1:
        return _weights(shard, dtype), kv_bytes(shard, 1, 1, kv_dtype)
    parts = param_breakdown(shard)
    ends = sum(parts[k] for k in ("token_embedding", "position_embedding", "token_type_embedding",
                                  "embedding_norm", "embedding_projection", "final_norm", "lm_head",
                                  "lm_head_bias"))
    share = math.ceil(cfg.n_layers / pp) / cfg.n_layers
    layers = _weights(shard, dtype) - _end_bytes(ends, dtype)
    return layers * share + _end_bytes(ends, dtype), math.ceil(kv_bytes(shard, 1, 1, kv_dtype) * share)


def _weights(shard: TransformerConfig, dtype: Any) -> float:
    """Bytes of all of ``shard``'s weights in ``dtype``."""
    return serving_memory_bytes(shard, 1, 1, dtype=dtype) - kv_bytes(shard, 1, 1)


def _end_bytes(n: int, dtype: Any) -> int:
    """Bytes of ``n`` parameters outside the blocks' linear layers (embedding, head, norms)."""
    return bytes_for(n, weight_format(dtype).rest)


def _no_check(kw: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in kw.items() if k != "check_memory"}


def _gpus_needed(weights: float, room: int, domain: int) -> int | None:
    """GPUs whose memory (less the reserve) holds ``weights``: a divisor of the domain within one,
    whole domains beyond it (tensor parallelism inside, pipeline stages across)."""
    if room <= 0:
        return None
    need = max(1, math.ceil(weights / room))
    if need <= domain:
        return next(d for d in range(need, domain + 1) if domain % d == 0)
    return -(-need // domain) * domain


def _serving_layout(spec: Any, n_gpus: int) -> tuple[int, int]:
    if n_gpus <= spec.domain_size:
        return n_gpus, 1
    if n_gpus % spec.domain_size:
        raise ValueError(f"n_gpus={n_gpus} spans more than one scale-up domain of the {spec.name} "
                         f"({spec.domain_size} GPUs): it must be a multiple of {spec.domain_size} (tensor "
                         "parallelism inside each domain, pipeline stages across them)")
    return spec.domain_size, n_gpus // spec.domain_size


def serving_run(
    cfg: TransformerConfig, gpu: str, n_gpus: int, context: int, *, batch: int | None = None,
    prompt: int | None = None, output: int | None = None, dtype: str | WeightFormat = "bf16",
    kv_dtype: str = "bf16", reserve_bytes: int | None = None, precision: str | None = None,
    allreduce: str = "best", price_per_gpu_hour: float | None = None,
    calibration: ServingCalibration = SERVING_CALIBRATION,
) -> dict[str, Any]:
    """Serving ``cfg`` on ``n_gpus`` accelerators: tensor parallelism of degree ``n_gpus`` inside one
    scale-up domain, or, beyond one domain, tensor parallelism over each domain and ``pp`` pipeline
    stages across domains (``n_gpus`` a multiple of the domain). Requests of ``prompt`` +
    ``output`` = ``context`` tokens (default: half and half).

    Memory (per GPU): the weights of one shard (:func:`llmmath.tp_shard`) in ``dtype`` (a name or a
    :class:`~llmmath.WeightFormat`), the KV cache per token and per sequence, the largest batch that
    fits beside the weights and ``reserve_bytes`` (:func:`llmmath.max_decode_batch`; default: what
    vLLM's default ``gpu_memory_utilization`` leaves, shown as ``reserve_bytes``); with pipeline
    stages, the busiest stage estimated from above (``ceil(L / pp)`` layers plus the embedding
    and the LM head).

    Time, at ``batch`` (default: that largest batch) and ``context`` tokens held: the **bounds**
    ``prefill_seconds`` (the batch's prompts at once; ``ttft_seconds`` one prompt on an idle
    server), ``seconds_per_output_token``, ``tokens_per_second`` and ``steady`` (a server fed
    requests continuously, :func:`llmmath.steady_state`: requests/s, output tokens/s and its
    ``cost_per_million_output_tokens`` at ``price_per_gpu_hour``, a lower bound on cost), each
    with its breakdown (``step``, ``prefill``: weights read, KV read, compute, communication);
    and the **predictions** with ``calibration`` under the same names prefixed ``predicted_``.
    A mixture of experts: the bounds read the fewest experts (``k`` per layer),
    ``seconds_per_output_token_most_experts`` every expert the batch can touch.
    With pipeline stages the bounds take the stages' work as spread evenly over them (``/ pp``)
    and a token's time at least the reading of every stage's weights in turn; the hand-off between
    stages is left out.

    ``fits`` is False (and no times are given) when ``batch`` does not fit; ``batch_margin`` says
    by how many sequences, ``memory_margin_bytes`` by how many bytes when not even the weights fit
    (``max_batch`` is then 0) and ``gpus_needed`` how many GPUs would hold them.
    ``precision`` defaults to the peak the weights' format runs at on ``gpu``
    (:func:`llmmath.matmul_precision`; a V100, which has no BF16, takes FP16 weights); ``dtype`` and
    ``kv_dtype`` must be formats the accelerator has kernels for (:func:`llmmath.check_storage_dtype`:
    no FP8 on a V100). ``kv_bytes_per_sequence_per_gpu`` is the grouped cache, ``a_kv`` heads (what
    vLLM keeps); ``kv_bytes_per_sequence_per_gpu_transformers`` what ``transformers`` keeps, the same
    except for a config with ``kv_broadcast`` (Falcon's new decoder architecture: every one of the
    ``a`` heads).
    Derived in chapter :doc:`/chapters/capstone`.
    """
    cfg = _check_cfg(cfg)
    spec = accelerator(gpu)
    n_total = check_int("n_gpus", n_gpus)
    t, pp = _serving_layout(spec, n_total)
    n = check_int("context", context)
    if n < 2:
        raise ValueError(f"context must be an integer >= 2 (a prompt and an output token), got {n}")
    if prompt is not None:
        prompt = check_int("prompt", prompt, maximum=n - 1)  # the context holds an output token too
    if output is not None:
        output = check_int("output", output, maximum=n - 1)
    o = (n - (prompt if prompt is not None else n // 2)) if output is None else output
    p = n - o if prompt is None else prompt
    if p + o != n:
        raise ValueError(f"prompt + output must equal context: {p} + {o} != {n}")
    fmt = weight_format(dtype)
    check_storage_dtype(spec, "dtype", fmt.dtype)
    check_storage_dtype(spec, "dtype", fmt.rest)
    check_storage_dtype(spec, "kv_dtype", kv_dtype)
    if reserve_bytes is not None and (isinstance(reserve_bytes, bool)
                                      or not isinstance(reserve_bytes, numbers.Integral)):
        raise TypeError(f"reserve_bytes must be an integer number of bytes, got {type(reserve_bytes).__name__}")
    if price_per_gpu_hour is not None:
        price_per_gpu_hour = check_positive("price_per_gpu_hour", price_per_gpu_hour, allow_zero=True)
    precision = matmul_precision(fmt, spec) if precision is None else precision
    gpu_peak_flops(spec, precision)  # validates the precision for this accelerator
    memory = allocatable_memory_bytes(spec)
    reserve = memory - usable_memory_bytes(spec) if reserve_bytes is None else reserve_bytes
    shard = tp_shard(cfg, t)
    weights, kv_token = _pipeline_memory(cfg, shard, pp, fmt, kv_dtype)
    room = memory - weights - reserve  # < 0: the weights miss
    per_seq = kv_token * n if pp > 1 else kv_bytes(shard, 1, n, kv_dtype)
    # transformers' FalconForCausalLM caches K/V broadcast to every query head (kv_broadcast)
    broadcast = shard.replace(n_kv_heads=shard.n_heads) if cfg.kv_broadcast else shard
    if broadcast is shard:
        per_seq_transformers = per_seq
    elif pp > 1:
        per_seq_transformers = _pipeline_memory(cfg, broadcast, pp, fmt, kv_dtype)[1] * n
    else:
        per_seq_transformers = kv_bytes(broadcast, 1, n, kv_dtype)
    largest = 0 if room < 0 else int(room // per_seq)
    b = largest if batch is None else check_int("batch", batch)
    whole = _weights(cfg, fmt)
    out: dict[str, Any] = {
        "model": {"name": cfg.name, "params": param_count(cfg), "active_params": active_param_count(cfg)},
        "cluster": {"gpu": spec.name, "n_gpus": n_total, "tp": t, "pp": pp, "memory_bytes": memory,
                    "memory_source": "the driver's report" if memory != spec.memory_bytes else "the data sheet",
                    "memory_bytes_data_sheet": spec.memory_bytes, "memory_bandwidth": spec.memory_bandwidth,
                    "precision": precision, "peak_flops": gpu_peak_flops(spec, precision)},
        "context": n, "prompt": p, "output": o, "dtype": fmt.name, "kv_dtype": kv_dtype,
        "reserve_bytes": reserve,
        "reserve_source": ("vLLM's default gpu_memory_utilization 0.9 of the memory" if reserve_bytes is None
                           else "given"),
        "weights_bytes_per_gpu": weights,
        "kv_bytes_per_token_per_gpu": kv_token,
        "kv_bytes_per_sequence_per_gpu": per_seq,
        "kv_bytes_per_sequence_per_gpu_transformers": per_seq_transformers,
        "memory_margin_bytes": room,
        "gpus_needed": _gpus_needed(whole, memory - reserve, spec.domain_size),
        "max_batch": largest, "batch": b, "fits": 0 < b <= largest, "batch_margin": largest - b,
        "calibration": {"name": calibration.name, "compute_efficiency": calibration.compute_efficiency,
                        "memory_efficiency": calibration.memory_efficiency, "source": calibration.source,
                        "error": calibration.error},
    }
    if not out["fits"]:
        return out
    kw = dict(tp=t, dtype=fmt, kv_dtype=kv_dtype, precision=precision, allreduce=allreduce, check_memory=pp == 1)
    for prefix, calib in (("", None), ("predicted_", calibration)):
        step = decode_step_times(cfg, b, n - 1, spec, calibration=calib, **kw)
        pre = prefill_times(cfg, b, p, spec, calibration=calib, **_no_check(kw))
        one = prefill_times(cfg, 1, p, spec, calibration=calib, **_no_check(kw))
        steady = steady_state(cfg, b, p, o, spec, calibration=calib, **kw)
        if pp > 1:  # the stages split the work; a token still reads every stage's weights in turn
            step = {**step, "seconds": max(step["seconds"] / pp, step["weights_read"])}
            pre = {**pre, "seconds": max(pre["seconds"] / pp, pre["weights_read"])}
            one = {**one, "seconds": max(one["seconds"] / pp, one["weights_read"])}
            steady = {k: (v / pp if k in ("request_seconds", "seconds_per_output_token") else v * pp)
                      for k, v in steady.items()}
        tokens_per_second = b / step["seconds"]
        cost = (None if price_per_gpu_hour is None
                else price_per_gpu_hour * n_total / 3600 / steady["output_tokens_per_second"] * 1e6)
        out.update({
            f"{prefix}prefill_seconds": pre["seconds"],
            f"{prefix}ttft_seconds": one["seconds"],
            f"{prefix}seconds_per_output_token": step["seconds"],
            f"{prefix}tokens_per_second": tokens_per_second,
            f"{prefix}steady": {**steady, "cost_per_million_output_tokens": cost},
            f"{prefix}step": step, f"{prefix}prefill": pre,
        })
        if cfg.is_moe and prefix == "":
            most = decode_step_times(cfg, b, n - 1, spec, experts="max", **kw)["seconds"]
            out["seconds_per_output_token_most_experts"] = max(most / pp, step["weights_read"]) if pp > 1 else most
    out["memory_bytes_per_gpu"] = weights + b * per_seq
    return out
