"""Serving many users: continuous batching and chunked prefill, the latency-throughput frontier,
paged and prefix-cached KV, speculative decoding, quantized weights, mixture-of-experts serving,
disaggregated prefill, long contexts, and how close published engines get to the bounds.

Derived in chapter :doc:`/chapters/serving-systems`. Everything builds on
``llmmath.inference``: the exact FLOPs and bytes of a decode step
(:func:`~llmmath.decode_flops_breakdown`, :func:`~llmmath.forward_weight_bytes`,
:func:`~llmmath.kv_bytes`), the tensor-parallel shard (:func:`~llmmath.tp_shard`) and the
tensor-parallel step (:func:`~llmmath.tp_decode_step_seconds`).

**The engine step.** An iteration-level scheduler (Orca, vLLM, SGLang, TensorRT-LLM) runs one
forward pass per *step* over ``decode`` sequences that each add one token and ``prefill`` prompt
tokens (chunks of prompts). The step is bounded kernel by kernel, each kernel its own roofline:
the weight products over all the step's tokens (``max(F_w / pi, W / W_mem)``, weights read once),
the decode attention over the caches (``max(F_a / pi, Q_kv / W_mem)``) and the prefill attention
(causal pairs, and its cache written). Tensor-parallel all-reduces add ``c_0 + c_1 T`` for ``T``
tokens (the one-shot all-reduce, the latency-optimal algorithm on a switched domain). Symbols as
in the book: ``b`` sequences decoding, ``n`` context, ``s_p`` prompt and ``s_o`` output tokens of
a request, ``lambda`` requests per second, ``pi`` peak FLOP/s, ``W_mem`` memory bandwidth.
"""

from __future__ import annotations

import dataclasses
import heapq
import json
import math
import numbers
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from ._validate import check_choice, check_int, check_positive
from .config import TransformerConfig
from .hardware import Accelerator, accelerator, gpu_peak_flops
from .inference import (
    WeightFormat,
    allreduce_algorithms,
    allreduce_seconds,
    decode_flops_breakdown,
    experts_touched,
    forward_weight_bytes,
    kv_bytes,
    matmul_precision,
    max_decode_batch,
    prefill_flops,
    steady_state,
    tp_allreduce_bytes,
    tp_shard,
    weight_format,
)
from .parallel import collective_bytes
from .params import active_param_count, param_count
from .units import DTYPES, dtype_bits

__all__ = [
    "StepCosts",
    "step_costs",
    "step_seconds",
    "RequestCosts",
    "request_costs",
    "LoadPoint",
    "load_steady_state",
    "saturation_rate",
    "static_batch_utilization",
    "simulate_continuous_batching",
    "frontier",
    "kv_capacity_bytes",
    "cost_per_million_tokens",
    "kv_blocks",
    "paged_kv_waste",
    "contiguous_kv_waste",
    "shared_prefix_blocks",
    "prefix_cache_savings",
    "speculative_tokens_per_step",
    "speculative_speedup",
    "optimal_draft_length",
    "quantized_bits_per_weight",
    "moe_experts_per_gpu",
    "ep_dispatch_bytes",
    "ep_all_to_all_seconds",
    "dp_ep_decode_step_seconds",
    "kv_transfer_seconds",
    "split_k_partitions",
    "bandwidth_utilization",
    "MeasuredServing",
    "measured_serving",
    "measured_serving_bound",
]

_ATTN = ("attn_scores", "attn_values")


# ---------------------------------------------------------------------------------------------
# the engine step
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class StepCosts:
    """The per-token coefficients of one engine step on one accelerator of a replica, read off
    the exact counts of ``llmmath.inference`` by :func:`step_costs`.

    ``token_flops`` weight-product FLOPs per token without the LM head and ``head_flops`` the LM
    head's (a prefill token needs logits only at the prompt's last position); ``weight_bytes``
    the weights one token touches and ``row_bytes`` each further embedding row read;
    ``key_flops`` attention FLOPs per cached key and sequence (scores and values, all layers);
    ``kv_token_bytes`` one cached token (all layers); ``peak`` the FLOP/s of the weight products,
    ``attention_peak`` those of attention, ``bandwidth`` the memory's; ``comm`` the tensor-parallel
    all-reduces of a step, one ``(c_0, c_1)`` per algorithm the hardware offers (``c_0 + c_1 T``
    seconds for ``T`` tokens: latency and bytes of the alpha-beta model), the engine using the
    fastest; ``gpus`` the replica's accelerators, ``vocab`` the rows of the embedding table.
    """

    name: str
    gpus: int
    token_flops: int
    head_flops: int
    weight_bytes: float
    row_bytes: float
    vocab: int
    key_flops: int
    kv_token_bytes: int
    peak: float
    attention_peak: float
    bandwidth: float
    comm: tuple[tuple[float, float], ...] = ()

    def comm_seconds(self, tokens: float) -> float:
        """The all-reduces of a step of ``tokens`` tokens with the fastest algorithm: ``min (c_0 + c_1 T)``."""
        return min((c0 + c1 * tokens for c0, c1 in self.comm), default=0.0)


def _check_cfg(cfg: Any) -> TransformerConfig:
    if not isinstance(cfg, TransformerConfig):
        raise TypeError(f"cfg must be a TransformerConfig, got {type(cfg).__name__}")
    if "sliding" in {spec.attention for spec in cfg.layer_counts}:
        raise ValueError(f"the engine-step model needs full-attention layers; {cfg.name!r} has sliding-window "
                         "layers (their cache stops growing at the window)")
    return cfg


def step_costs(
    cfg: TransformerConfig, gpu: str | Accelerator, *, tp: int = 1, dtype: str | WeightFormat = "bf16",
    kv_dtype: str = "bf16", precision: str | None = None, attention_precision: str | None = None,
    mla: str = "absorbed",
) -> StepCosts:
    """The :class:`StepCosts` of ``cfg`` on one of ``tp`` accelerators (Megatron tensor
    parallelism, :func:`llmmath.tp_shard`), weights stored as ``dtype`` (a format name or a
    :class:`~llmmath.WeightFormat`) and multiplied at ``precision`` (default: the peak the format
    runs at, :func:`llmmath.matmul_precision`: W8A8-FP8 at the FP8 peak, W8A16 and W4A16 at the
    16-bit peak), attention at ``attention_precision`` (default the 16-bit peak), the cache as
    ``kv_dtype``. Each coefficient is a difference of two exact counts: ``key_flops`` is
    ``decode_flops_breakdown`` at contexts 2 and 1, ``row_bytes`` is ``forward_weight_bytes`` at 2
    and 1 tokens, and so on; each all-reduce algorithm the accelerators offer
    (:func:`llmmath.allreduce_algorithms`) gives the ``(c_0, c_1)`` of the ``2L`` all-reduces of
    :func:`llmmath.tp_allreduce_bytes` timed by :func:`llmmath.allreduce_seconds` at 1 and 2
    tokens (affine in the message).
    A mixture of experts reads the fewest experts a batch can touch (``k`` per layer), which keeps
    the step a bound; its FLOPs do not depend on the routing.
    Derived in chapter :doc:`/chapters/serving-systems`.
    """
    cfg = _check_cfg(cfg)
    spec = accelerator(gpu)
    t = check_int("tp", tp)
    fmt = weight_format(dtype)
    precision = matmul_precision(fmt, spec) if precision is None else precision
    attention_precision = matmul_precision("bf16", spec) if attention_precision is None else attention_precision
    shard = tp_shard(cfg, t)
    one, two = (decode_flops_breakdown(shard, 1, n, mla=mla) for n in (1, 2))
    head = one["lm_head"]
    token = sum(v for k, v in one.items() if k not in _ATTN) - head
    key = sum(two[k] - one[k] for k in _ATTN)
    w1 = forward_weight_bytes(shard, 1, 1, fmt, experts="min")
    row = forward_weight_bytes(shard, 2, 1, fmt, experts="min") - w1
    comm = []
    if t > 1:
        count = (1 if cfg.parallel_block else 2) * cfg.n_layers
        for algorithm in allreduce_algorithms(spec, t):
            one, two = (count * allreduce_seconds(tp_allreduce_bytes(cfg, k) / count, t, spec, algorithm)
                        for k in (1, 2))
            comm.append((2 * one - two, two - one))
    return StepCosts(
        name=cfg.name, gpus=t, token_flops=token, head_flops=head, weight_bytes=w1, row_bytes=row,
        vocab=shard.vocab_size, key_flops=key,
        kv_token_bytes=kv_bytes(shard, 1, 1, kv_dtype), peak=gpu_peak_flops(spec, precision),
        attention_peak=gpu_peak_flops(spec, attention_precision), bandwidth=spec.memory_bandwidth,
        comm=tuple(comm))


def _nonneg(name: str, value: Any) -> float:
    return check_positive(name, value, allow_zero=True)


def step_seconds(
    costs: StepCosts, decode: float, context: float, prefill: float = 0.0, pairs: float = 0.0,
    prompts: float = 0.0,
) -> float:
    """Lower bound on one engine step: ``decode`` sequences holding ``context`` cached tokens in
    all (the sum over the sequences) add one token each, and ``prefill`` prompt tokens are
    processed whose causal attention covers ``pairs`` query-key pairs, completing ``prompts``
    prompts (each needs its logits once). Two kernels, each its own roofline, and the
    tensor-parallel all-reduces overlapped with them:
    ``max(max(F_w / pi, Q_w / W_mem) + max(F_att / pi, Q_kv / W_mem), c_0 + c_1 T)`` with
    ``F_w`` the weight products of the ``T = decode + prefill`` tokens, ``Q_w`` the weights read
    once, ``F_att`` the attention of every query (``context + decode`` keys for the decodes,
    ``pairs`` for the prompt tokens) and ``Q_kv`` the caches read and written. With
    ``prefill = 0`` and ``b`` sequences of ``n`` tokens (``context = b n``) it is the decode step
    of ``llmmath.inference`` (the same counts). Arguments may be fractional (the averages of a
    steady state). Derived in chapter :doc:`/chapters/serving-systems`.
    """
    if not isinstance(costs, StepCosts):
        raise TypeError(f"costs must be a StepCosts (llmmath.step_costs), got {type(costs).__name__}")
    decode, context, prefill, pairs, prompts = (
        _nonneg(n, v) for n, v in (("decode", decode), ("context", context), ("prefill", prefill),
                                    ("pairs", pairs), ("prompts", prompts)))
    tokens = decode + prefill
    if tokens == 0:
        return 0.0
    c = costs
    weight_flops = c.token_flops * tokens + c.head_flops * (decode + prompts)
    weight_bytes = c.weight_bytes + c.row_bytes * max(min(tokens, c.vocab) - 1, 0)
    weights = max(weight_flops / c.peak, weight_bytes / c.bandwidth)
    attention = max(c.key_flops * (context + decode + pairs) / c.attention_peak,
                    c.kv_token_bytes * (context + prefill) / c.bandwidth)
    return max(weights + attention, c.comm_seconds(tokens))


# ---------------------------------------------------------------------------------------------
# the steady state of a server: closed form
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RequestCosts:
    """What one request of ``prompt`` and ``output`` tokens costs over its life, in seconds of a
    resource at its roofline: ``weight_compute`` (``A_w``) its tokens through the weight products
    at peak, ``attention`` (``A_att``) its decode and prefill attention (one kernel's roofline),
    ``comm`` its share of the all-reduces, one ``(c_0, A_c)`` per algorithm: what every step pays
    (the latency) and the request's tokens' bandwidth seconds; what every step costs whoever is in
    it: ``weights_read`` (``t_w = Q_w / W_mem``); ``kv_byte_steps`` the cache the request holds summed over its
    decode steps (for memory capacity), ``decode_steps = output - 1`` (the first token comes from
    the prefill) and ``mean_context`` the mean cache a decode step of it reads."""

    prompt: int
    output: int
    weight_compute: float
    attention: float
    comm: tuple[tuple[float, float], ...]
    weights_read: float
    kv_byte_steps: float
    decode_steps: int
    mean_context: float


def request_costs(costs: StepCosts, prompt: int, output: int, *, prefill: bool = True) -> RequestCosts:
    """The :class:`RequestCosts` of a request under ``costs``: the sum of its share of
    :func:`step_seconds`' terms over its life. Its decode step ``j`` (``j = 1 .. s_o - 1``) reads a
    cache of ``n_j = s_p + j - 1`` tokens, so its decode steps read
    ``sum n_j = (s_o - 1) s_p + (s_o - 1)(s_o - 2) / 2`` cached tokens in all; its prefill covers
    ``s_p (s_p + 1) / 2`` causal pairs. ``prefill=False`` is a decode replica of a disaggregated
    server: the prompt's cache arrives from elsewhere, and the request costs only its decode steps.
    Derived in chapter :doc:`/chapters/serving-systems`.
    """
    if not isinstance(costs, StepCosts):
        raise TypeError(f"costs must be a StepCosts (llmmath.step_costs), got {type(costs).__name__}")
    s_p, s_o = check_int("prompt", prompt), check_int("output", output)
    if not isinstance(prefill, bool):
        raise TypeError(f"prefill must be a bool, got {type(prefill).__name__}")
    steps = s_o - 1
    context = steps * s_p + steps * (steps - 1) // 2
    filled = s_p if prefill else 0
    pairs = filled * (filled + 1) // 2
    c = costs
    weight = (c.token_flops * (filled + steps) + c.head_flops * (steps + prefill)) / c.peak
    attention = max(c.key_flops * (context + steps + pairs) / c.attention_peak,
                    c.kv_token_bytes * (context + filled) / c.bandwidth)
    return RequestCosts(prompt=s_p, output=s_o, weight_compute=weight, attention=attention,
                        comm=tuple((c0, c1 * (filled + steps)) for c0, c1 in c.comm),
                        weights_read=c.weight_bytes / c.bandwidth,
                        kv_byte_steps=c.kv_token_bytes * (context + steps), decode_steps=steps,
                        mean_context=context / steps if steps else float(s_p))


def _step_at(req: RequestCosts, lam: float) -> float:
    """The steady step at ``lam`` (inf beyond a capacity): the kernels' ``t_w / (1 - lam A_att)``
    or, if longer, the all-reduces' with the algorithm whose ``c_0 / (1 - lam A_c)`` is shortest."""
    def branch(fixed: float, share: float) -> float:
        return fixed / (1 - lam * share) if lam * share < 1 else math.inf
    comm = min((branch(c0, a_c) for c0, a_c in req.comm), default=0.0)
    return max(branch(req.weights_read, req.attention), comm)


def saturation_rate(req: RequestCosts, *, kv_capacity_bytes: float | None = None, budget: int | None = None) -> float:
    """The largest request rate a replica sustains. Every second of work must fit in a second:
    ``lambda (A_w + A_att) < 1`` with ``A_w, A_att`` the request's ``weight_compute`` and
    ``attention`` seconds (once the weight products are compute-bound no batching amortizes
    anything more), and ``lambda A_c < 1`` for the all-reduces of at least one algorithm. Two
    capacities can bind first, each by Little's law with the step time ``t`` of
    :func:`load_steady_state` (``t_w / (1 - lambda A_att)``, or the all-reduces' if longer): a
    cache of ``M = kv_capacity_bytes`` per accelerator holds ``lambda t K`` (``K`` the request's
    ``kv_byte_steps``), so ``lambda < M / (t_w K + M A_att)`` when the kernels set the step; a
    token ``budget`` per step (vLLM's ``max_num_batched_tokens``) holds ``lambda t (s_p + s_o - 1)``
    tokens, so ``lambda < B / (t_w (s_p + s_o - 1) + B A_att)``. Found by bisection on
    ``lambda t(lambda) x <= room`` (exact: ``lambda t`` increases with ``lambda``).
    Derived in chapter :doc:`/chapters/serving-systems`.
    """
    if not isinstance(req, RequestCosts):
        raise TypeError(f"req must be a RequestCosts (llmmath.request_costs), got {type(req).__name__}")
    top = 1 / (req.weight_compute + req.attention)
    if req.comm:
        top = min(top, max(1 / a_c if a_c else math.inf for _, a_c in req.comm))
    limits = []
    if kv_capacity_bytes is not None:
        limits.append((check_positive("kv_capacity_bytes", kv_capacity_bytes), req.kv_byte_steps))
    if budget is not None:
        limits.append((check_int("budget", budget), req.prompt + req.decode_steps))
    for room, per_step in limits:
        if top * _step_at(req, top * (1 - 1e-12)) * per_step <= room:
            continue
        lo, hi = 0.0, top
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if mid * _step_at(req, mid) * per_step <= room else (lo, mid)
        top = lo
    return top


@dataclasses.dataclass(frozen=True)
class LoadPoint:
    """The steady state of a replica at ``rate`` requests per second (:func:`load_steady_state`):
    ``itl`` the mean time per step (inter-token latency), ``ttft`` the time to first token,
    ``batch`` the mean number of sequences decoding, ``prefill_per_step`` the mean prompt tokens
    per step, ``requests_per_second`` and ``output_tokens_per_second`` (the replica's),
    ``compute_share`` the share of each step the weight products need at peak, ``lambda A_w``
    (``1 - t_0 / t`` at saturation)."""

    rate: float
    itl: float
    ttft: float
    batch: float
    prefill_per_step: float
    requests_per_second: float
    output_tokens_per_second: float
    compute_share: float


def load_steady_state(
    costs: StepCosts, prompt: int, output: int, rate: float, *, budget: int | None = None,
    kv_capacity_bytes: float | None = None, prefill: bool = True,
) -> LoadPoint:
    """The steady state of continuous batching with chunked prefill at ``rate`` requests per
    second, each of ``prompt`` and ``output`` tokens (a fluid model: every step holds the mean
    load). By Little's law a step of length ``t`` holds ``b = lambda (s_o - 1) t`` decoding
    sequences and ``lambda s_p t`` prompt tokens, so with the request's costs
    (:func:`request_costs`) the step satisfies ``t = max(lambda A_w t, t_w) + lambda A_att t``
    (or the all-reduces' ``c_0 + lambda A_c t`` if longer), whose solution below saturation is the
    inter-token latency

        ``t = max(t_w / (1 - lambda A_att), c_0 / (1 - lambda A_c))``

    (the weight products stay memory-bound on average until saturation). The time to first
    token is half a step of waiting plus the prompt's chunks, each a step with the ``b`` decodes
    and ``budget - b`` prompt tokens (``budget`` the tokens a step may hold; by default the
    whole prompt goes in one step); ``prefill=False`` is a disaggregated decode replica (no prompt
    work, a time to first token of 0 here). A ``rate`` at or beyond :func:`saturation_rate` raises
    ``ValueError``: a server loaded beyond capacity has no steady state, its queue grows without
    bound. Derived in chapter :doc:`/chapters/serving-systems`.
    """
    req = request_costs(costs, prompt, output, prefill=prefill)
    lam = check_positive("rate", rate)
    limit = saturation_rate(req, kv_capacity_bytes=kv_capacity_bytes, budget=budget)
    if lam >= limit:
        raise ValueError(f"rate must be below the saturation rate {limit:.4g} requests/s of this replica, "
                         f"got {lam:.4g}: beyond it the queue grows without bound (no steady state)")
    t = _step_at(req, lam)
    b = lam * req.decode_steps * t
    chunk = req.prompt if budget is None else max(1, math.floor(budget - b))
    ttft, done = (t / 2, 0) if prefill else (0.0, req.prompt)
    while done < req.prompt:
        piece = min(chunk, req.prompt - done)
        pairs = piece * done + piece * (piece + 1) // 2
        ttft += step_seconds(costs, b, b * req.mean_context, piece, pairs, 1 if done + piece == req.prompt else 0)
        done += piece
    return LoadPoint(rate=lam, itl=t, ttft=ttft, batch=b, prefill_per_step=lam * req.prompt * t * prefill,
                     requests_per_second=lam, output_tokens_per_second=lam * req.output,
                     compute_share=lam * req.weight_compute)


def static_batch_utilization(batch: int) -> float:
    """The share of a static batch's decode slots that do useful work when output lengths are
    independent and exponentially distributed: a static batch runs until its longest sequence
    ends, and the maximum of ``b`` exponentials of mean ``mu`` has mean ``mu H_b``
    (``H_b = sum_{i<=b} 1/i``), so the useful share is ``1 / H_b``. Continuous batching refills a
    slot the step it frees. Derived in chapter :doc:`/chapters/serving-systems`.
    """
    b = check_int("batch", batch)
    return 1 / sum(1 / i for i in range(1, b + 1))


# ---------------------------------------------------------------------------------------------
# the steady state: a discrete-event simulation of an iteration-level scheduler
# ---------------------------------------------------------------------------------------------


def simulate_continuous_batching(
    costs: StepCosts, prompt: int, output: int, rate: float, *, requests: int = 400, budget: int = 2048,
    kv_capacity_tokens: int | None = None, seed: int = 0, warmup: float = 0.2,
) -> dict[str, float]:
    """Simulate an iteration-level scheduler with chunked prefill (vLLM's and Sarathi-Serve's
    policy) fed by ``requests`` Poisson arrivals at ``rate`` per second, every request of
    ``prompt`` and ``output`` tokens. Each step: every running sequence decodes one token, then
    the rest of the token ``budget`` goes to the waiting prompts first come first served, a
    prompt possibly split over several steps; a request is admitted only if its whole
    ``prompt + output`` tokens fit in ``kv_capacity_tokens`` beside the running ones (no
    preemption). The step's duration is :func:`step_seconds` of its contents. Returns the means
    over requests of the time to first token (``ttft``) and of the time between tokens
    (``itl``), their 90th percentiles, the mean decode batch and the achieved request and output
    token rates (``requests_per_second``, ``output_tokens_per_second``), all measured over the
    requests that arrive after the first ``warmup`` share and before the last ``warmup`` share
    (the batch as a time average over that window). Plain Python, deterministic for a ``seed``.
    Derived in chapter :doc:`/chapters/serving-systems`.
    """
    if not isinstance(costs, StepCosts):
        raise TypeError(f"costs must be a StepCosts (llmmath.step_costs), got {type(costs).__name__}")
    s_p, s_o = check_int("prompt", prompt), check_int("output", output)
    lam, n_req, budget = check_positive("rate", rate), check_int("requests", requests), check_int("budget", budget)
    cap = None if kv_capacity_tokens is None else check_int("kv_capacity_tokens", kv_capacity_tokens)
    if cap is not None and cap < s_p + s_o:
        raise ValueError(f"kv_capacity_tokens must hold one request ({s_p + s_o} tokens), got {cap}")
    w = check_positive("warmup", warmup, allow_zero=True)
    if w >= 0.5:
        raise ValueError(f"warmup must be in [0, 0.5), the share of requests left out at each end, got {w}")
    rng = np.random.default_rng(check_int("seed", seed, minimum=0))
    arrivals = np.cumsum(rng.exponential(1 / lam, n_req)).tolist()
    first = [0.0] * n_req
    finish = [0.0] * n_req
    now, nxt = 0.0, 0            # clock, next arrival not yet queued
    waiting: list[list[int]] = []  # [request, prompt tokens done], first come first served
    running: list[tuple[int, int]] = []  # heap of (step at which it ends, request)
    context = 0                  # cached tokens of the running sequences, in all
    resident, step, done = 0, 0, 0
    lo, hi = int(w * n_req), n_req - int(w * n_req) - 1
    t_lo, t_hi = arrivals[lo], arrivals[hi]
    batch_time = 0.0
    while done < n_req:
        while nxt < n_req and arrivals[nxt] <= now:
            waiting.append([nxt, 0])
            nxt += 1
        b = len(running)
        if b == 0 and not waiting:
            now = arrivals[nxt]
            continue
        room = budget - b
        chunk = pairs = completed = 0
        finished_prefill = []
        for item in waiting:
            if room <= 0:
                break
            r, got = item
            if got == 0:
                if cap is not None and resident + s_p + s_o > cap:
                    break
                resident += s_p + s_o
            piece = min(room, s_p - got)
            pairs += piece * got + piece * (piece + 1) // 2
            chunk += piece
            room -= piece
            item[1] = got + piece
            if item[1] == s_p:
                finished_prefill.append(r)
                completed += 1
        dt = step_seconds(costs, b, context, chunk, pairs, completed)
        if t_lo <= now < t_hi:
            batch_time += b * dt
        now += dt
        step += 1
        if b:
            context += b
            while running and running[0][0] <= step:
                _, r = heapq.heappop(running)
                finish[r] = now
                context -= s_p + s_o - 1
                resident -= s_p + s_o
                done += 1
        if finished_prefill:
            waiting = waiting[len(finished_prefill):]
            for r in finished_prefill:
                first[r] = now
                if s_o == 1:
                    finish[r] = now
                    resident -= s_p + s_o
                    done += 1
                else:
                    heapq.heappush(running, (step + s_o - 1, r))
                    context += s_p
    first_a, finish_a, arrive_a = (np.array(x)[lo:hi + 1] for x in (first, finish, arrivals))
    ttft = first_a - arrive_a
    itl = (finish_a - first_a) / max(s_o - 1, 1)
    span = t_hi - t_lo
    ended = int(np.count_nonzero((np.array(finish) >= t_lo) & (np.array(finish) < t_hi)))
    return {"ttft": float(ttft.mean()), "ttft_p90": float(np.percentile(ttft, 90)), "itl": float(itl.mean()),
            "itl_p90": float(np.percentile(itl, 90)), "batch": batch_time / span if span > 0 else 0.0,
            "requests_per_second": ended / span if span > 0 else 0.0,
            "output_tokens_per_second": ended * s_o / span if span > 0 else 0.0}


# ---------------------------------------------------------------------------------------------
# the latency-throughput frontier and cost
# ---------------------------------------------------------------------------------------------


def kv_capacity_bytes(
    cfg: TransformerConfig, gpu: str | Accelerator, *, reserve_bytes: int | None = None, tp: int = 1,
    dtype: str | WeightFormat = "bf16", kv_dtype: str = "bf16",
) -> int:
    """Bytes of KV cache one of ``tp`` accelerators can hold beside its shard of the weights and a
    ``reserve_bytes`` reserve (default: what vLLM's default memory budget leaves, as
    :func:`llmmath.max_decode_batch`): ``max_decode_batch`` at a one-token context (the free
    memory divided by one token's cache, rounded down) times one token's cache.
    Derived in chapter :doc:`/chapters/serving-systems`.
    """
    per_token = kv_bytes(tp_shard(cfg, tp), 1, 1, kv_dtype)
    return max_decode_batch(cfg, 1, gpu, reserve_bytes=reserve_bytes, tp=tp, dtype=dtype,
                            kv_dtype=kv_dtype) * per_token


def frontier(
    cfg: TransformerConfig, gpu: str | Accelerator, prompt: int, output: int, *, tp: int = 1,
    dtype: str | WeightFormat = "bf16", kv_dtype: str = "bf16", precision: str | None = None,
    reserve_bytes: int | None = None, points: int = 40,
) -> list[dict[str, float]]:
    """The latency-throughput frontier of a replica of ``tp`` accelerators serving requests of
    ``prompt`` and ``output`` tokens: at ``points`` batch sizes spaced geometrically from 1 to the
    largest the cache holds, the steady state of :func:`llmmath.steady_state` (the prompts' chunks
    ride in the decode steps): the step (``itl``, a bound on the inter-token latency), the
    per-user rate ``1 / itl`` and the output tokens per second per accelerator. The largest batch
    is Little's law on a paged cache: ``b_max = M / (q_kv (n + 1))``, ``M`` the cache capacity
    (:func:`kv_capacity_bytes`) and ``n`` the mean context of a decode step, so sequences hold
    their current length, not the longest. Empty if not one sequence fits.
    Derived in chapter :doc:`/chapters/serving-systems`.
    """
    s_p, s_o = check_int("prompt", prompt), check_int("output", output)
    spec = accelerator(gpu)
    room = kv_capacity_bytes(cfg, spec, reserve_bytes=reserve_bytes, tp=tp, dtype=dtype, kv_dtype=kv_dtype)
    steps = s_o - 1
    mean_context = (steps * s_p + steps * (steps - 1) // 2) / steps if steps else s_p
    top = room / (kv_bytes(tp_shard(cfg, tp), 1, 1, kv_dtype) * (mean_context + 1))
    if top < 1:
        return []
    out = []
    for b in sorted({max(1, int(x)) for x in np.geomspace(1, top, check_int("points", points))}):
        st = steady_state(cfg, b, s_p, s_o, spec, tp=tp, dtype=dtype, kv_dtype=kv_dtype, precision=precision,
                          check_memory=False)
        itl = st["seconds_per_output_token"]
        out.append({"batch": b, "itl": itl, "tokens_per_second_per_user": 1 / itl,
                    "tokens_per_second_per_gpu": st["tokens_per_second_per_gpu"]})
    return out


def cost_per_million_tokens(tokens_per_second_per_gpu: float, price_per_gpu_hour: float) -> float:
    """Dollars per million tokens at ``price_per_gpu_hour``: ``10^6 price / (3600 r)`` with ``r``
    tokens per second per accelerator. Derived in chapter :doc:`/chapters/serving-systems`.
    """
    r = check_positive("tokens_per_second_per_gpu", tokens_per_second_per_gpu)
    return 1e6 * check_positive("price_per_gpu_hour", price_per_gpu_hour) / (3600 * r)


# ---------------------------------------------------------------------------------------------
# paged KV cache and prefix caching
# ---------------------------------------------------------------------------------------------


def kv_blocks(tokens: int, block_size: int) -> int:
    """Blocks a paged cache allocates to a sequence of ``tokens`` cached tokens:
    ``ceil(n / B)``. A sequence that has generated ``g`` tokens after a prompt of ``s_p`` holds
    ``s_p + g - 1`` (its last token has not been fed back yet).
    Derived in chapter :doc:`/chapters/serving-systems`.
    """
    n = check_int("tokens", tokens, minimum=0)
    return -(-n // check_int("block_size", block_size))


def paged_kv_waste(lengths: Any, block_size: int) -> int:
    """Token slots a paged cache allocates but does not fill for sequences of ``lengths`` cached
    tokens: ``sum_i (B ceil(n_i / B) - n_i)``, less than one block per sequence (internal
    fragmentation; about ``(B - 1) / 2`` per sequence when ``n mod B`` is uniform).
    Derived in chapter :doc:`/chapters/serving-systems`.
    """
    B = check_int("block_size", block_size)
    return sum(B * kv_blocks(n, B) - check_int("lengths", n, minimum=0) for n in lengths)


def contiguous_kv_waste(lengths: Any, max_length: int) -> int:
    """Token slots a contiguous allocator wastes: it reserves ``max_length`` slots per request
    (the most it may grow to) and the sequences fill ``n_i``: ``sum_i (L_max - n_i)``.
    Derived in chapter :doc:`/chapters/serving-systems`.
    """
    L = check_int("max_length", max_length)
    out = 0
    for n in lengths:
        n = check_int("lengths", n, minimum=0)
        if n > L:
            raise ValueError(f"lengths must be <= max_length={L}, got {n}")
        out += L - n
    return out


def shared_prefix_blocks(prompt: int, generated: Any, block_size: int) -> int:
    """Blocks ``k`` samples of one prompt hold when they share its full blocks (copy-on-write,
    vLLM's parallel sampling): the ``floor(s_p / B)`` full prompt blocks once, and per sample the
    rest, ``ceil((s_p + g_i - 1) / B) - floor(s_p / B)`` (its copy of the partial last prompt
    block and its own tokens). Without sharing: ``sum_i ceil((s_p + g_i - 1) / B)``.
    Derived in chapter :doc:`/chapters/serving-systems`.
    """
    s_p, B = check_int("prompt", prompt), check_int("block_size", block_size)
    full = s_p // B
    return full + sum(kv_blocks(s_p + check_int("generated", g) - 1, B) - full for g in generated)


def prefix_cache_savings(cfg: TransformerConfig, prompt: int, hit: int, kv_dtype: str = "bf16") -> dict[str, float]:
    """What a prefix-cache hit of ``hit`` tokens saves on a prompt of ``prompt`` tokens: the
    prefill FLOPs of the cached prefix, ``F(s_hit)`` with ``F`` the causal prefill count
    (:func:`llmmath.prefill_flops` with ``skip_masked=True``; the suffix still attends to the
    prefix, so the rest costs ``F(s_p) - F(s_hit)`` exactly, the LM head once), as a share of the
    whole prefill, and the cache bytes not recomputed, :func:`llmmath.kv_bytes` of the prefix.
    Derived in chapter :doc:`/chapters/serving-systems`.
    """
    s_p = check_int("prompt", prompt)
    h = check_int("hit", hit, minimum=0, maximum=s_p - 1)
    whole = prefill_flops(cfg, 1, s_p, skip_masked=True)
    if h == 0:
        return {"flops": 0, "share": 0.0, "kv_bytes": 0}
    saved = prefill_flops(cfg, 1, h, skip_masked=True) - decode_flops_breakdown(cfg, 1, 1)["lm_head"]
    return {"flops": saved, "share": saved / whole, "kv_bytes": kv_bytes(cfg, 1, h, kv_dtype)}


# ---------------------------------------------------------------------------------------------
# speculative decoding
# ---------------------------------------------------------------------------------------------


def _alpha(alpha: Any) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
        raise TypeError(f"alpha must be a real number, got {type(alpha).__name__} {alpha!r}")
    if not 0 <= alpha < 1:
        raise ValueError(f"alpha must be in [0, 1) (the chance a drafted token is accepted), got {alpha}")
    return float(alpha)


def speculative_tokens_per_step(alpha: float, gamma: int) -> float:
    """Expected tokens one verification step yields when a draft proposes ``gamma`` tokens, each
    accepted independently with probability ``alpha`` until the first rejection, and the target
    adds one token of its own: ``sum_{i=0}^{gamma} alpha^i = (1 - alpha^(gamma+1)) / (1 - alpha)``
    (Leviathan et al., 2023). Derived in chapter :doc:`/chapters/serving-systems`.
    """
    a, g = _alpha(alpha), check_int("gamma", gamma)
    return (1 - a ** (g + 1)) / (1 - a)


def speculative_speedup(alpha: float, gamma: int, draft_cost: float, verify_cost: float = 1.0) -> float:
    """Speed-up of speculative decoding over plain decoding: tokens per step over the step's
    time in units of a plain decode step, ``E / (gamma c + v)`` with ``E`` from
    :func:`speculative_tokens_per_step`, ``c = draft_cost`` one draft step and ``v = verify_cost``
    the target's verification of ``gamma + 1`` tokens (1 while the target is memory-bound; from
    :func:`step_seconds` otherwise). Derived in chapter :doc:`/chapters/serving-systems`.
    """
    c = check_positive("draft_cost", draft_cost, allow_zero=True)
    v = check_positive("verify_cost", verify_cost)
    return speculative_tokens_per_step(alpha, gamma) / (check_int("gamma", gamma) * c + v)


def optimal_draft_length(alpha: float, draft_cost: float, *, max_gamma: int = 64) -> int:
    """The draft length ``gamma`` in ``1..max_gamma`` with the largest :func:`speculative_speedup`
    (verification at the cost of a plain step). Derived in chapter :doc:`/chapters/serving-systems`.
    """
    top = check_int("max_gamma", max_gamma)
    return max(range(1, top + 1), key=lambda g: speculative_speedup(alpha, g, draft_cost))


# ---------------------------------------------------------------------------------------------
# quantization
# ---------------------------------------------------------------------------------------------


def quantized_bits_per_weight(bits: int, group_size: int | None, *, scale_bits: int = 16,
                              zero_point: bool = True) -> float:
    """Bits a group-quantized weight costs: its ``bits`` plus its share of the group's scale
    (``scale_bits``, 16 for an FP16 scale) and zero point (``bits`` more when ``zero_point``):
    ``bits + (scale_bits + bits) / g`` for a group of ``g`` weights (GPTQ and AWQ, asymmetric);
    ``group_size=None`` is one scale per output row, counted as none.
    Derived in chapter :doc:`/chapters/serving-systems`.
    """
    q = check_int("bits", bits)
    if group_size is None:
        return float(q)
    g = check_int("group_size", group_size)
    return q + (check_int("scale_bits", scale_bits, minimum=0) + (q if zero_point else 0)) / g


# ---------------------------------------------------------------------------------------------
# mixture-of-experts serving: expert parallelism and data-parallel attention
# ---------------------------------------------------------------------------------------------


def moe_experts_per_gpu(
    cfg: TransformerConfig, tokens: int, ep: int, *, redundant: int = 0, imbalance: float = 1.0,
) -> dict[str, float]:
    """Expert-parallel placement of ``cfg``'s ``E`` routed experts, plus ``redundant`` replicas of
    the busiest ones (DeepSeek's EPLB), over ``ep`` accelerators, ``(E + r) / e`` each, serving
    ``tokens`` tokens in all, each routed to ``k`` experts. Returns the experts one accelerator
    hosts; those it expects to touch under independent uniform routing,
    ``((E + r) / e)(1 - (1 - k/E)^T)`` (an expert is missed by all ``T`` tokens with probability
    ``(1 - k/E)^T``, as in :func:`llmmath.experts_touched`); the mean token-expert pairs it
    computes, ``T k / e``; and the busiest accelerator's, ``imbalance`` times that (a stated
    factor: real routers are not uniform, and EPLB exists to bring it towards 1).
    Derived in chapter :doc:`/chapters/serving-systems`.
    """
    if not isinstance(cfg, TransformerConfig) or not cfg.is_moe:
        raise ValueError("moe_experts_per_gpu needs a mixture-of-experts TransformerConfig")
    T, e = check_int("tokens", tokens), check_int("ep", ep)
    r = check_int("redundant", redundant, minimum=0)
    if (cfg.n_experts + r) % e:
        raise ValueError(f"ep must divide the {cfg.n_experts} routed experts plus redundant={r} of {cfg.name!r}, "
                         f"got ep={e}")
    imb = check_positive("imbalance", imbalance)
    if imb < 1:
        raise ValueError(f"imbalance must be >= 1 (the busiest accelerator over the mean), got {imb}")
    hosted = (cfg.n_experts + r) // e
    pairs = T * cfg.experts_per_token / e
    share = experts_touched(cfg, T, "expected") / cfg.n_experts
    return {"hosted": hosted, "touched": hosted * share, "pairs": pairs, "busiest_pairs": imb * pairs}


def ep_dispatch_bytes(cfg: TransformerConfig, tokens_per_gpu: int, ep: int, dtype: str = "fp8") -> float:
    """Bytes one accelerator sends in one dispatch (or combine) all-to-all of an MoE layer: each of
    its ``T_g`` tokens goes to its ``k`` experts' accelerators as ``h`` values of ``dtype``, the
    ``1/e`` that stay local excepted (:func:`llmmath.collective_bytes` of an all-to-all of
    ``T_g k h q`` bytes): ``(e - 1)/e T_g k h q``. DeepSeek dispatches in FP8 and combines in
    BF16. Scales are ignored. Derived in chapter :doc:`/chapters/serving-systems`.
    """
    if not isinstance(cfg, TransformerConfig) or not cfg.is_moe:
        raise ValueError("ep_dispatch_bytes needs a mixture-of-experts TransformerConfig")
    check_choice("dtype", dtype, DTYPES)
    T, e = check_int("tokens_per_gpu", tokens_per_gpu), check_int("ep", ep)
    send = T * cfg.experts_per_token * cfg.hidden_size * dtype_bits(dtype) / 8
    return collective_bytes("all_to_all", e, send) if e > 1 else 0.0


def ep_all_to_all_seconds(
    cfg: TransformerConfig, tokens_per_gpu: int, ep: int, gpu: str | Accelerator, *,
    dispatch_dtype: str = "fp8", combine_dtype: str = "bf16",
) -> float:
    """Estimated time of one decode step's expert-parallel all-to-alls: per MoE layer a dispatch
    and a combine (:func:`ep_dispatch_bytes`: each token's ``k`` experts on ``k`` other
    accelerators, the most traffic uniform routing produces), each one latency ``alpha`` (all
    destinations sent at once, as DeepEP's low-latency kernels do) plus its bytes over the link:
    the scale-up link if the ``ep`` accelerators fit in one domain, else the scale-out network (one
    NIC each). Node-limited routing and experts on the same accelerator send less.
    Derived in chapter :doc:`/chapters/serving-systems`.
    """
    spec = accelerator(gpu)
    e = check_int("ep", ep)
    link = spec.scale_up if e <= spec.domain_size and spec.scale_up is not None else spec.scale_out
    n_moe = sum(count for s, count in cfg.layer_counts.items() if s.mlp == "moe")
    per = [link.latency + ep_dispatch_bytes(cfg, tokens_per_gpu, e, d) / link.bandwidth
           for d in (dispatch_dtype, combine_dtype)]
    return n_moe * sum(per) if e > 1 else 0.0


def dp_ep_decode_step_seconds(
    cfg: TransformerConfig, batch: int, context: int, gpu: str | Accelerator, ep: int, *,
    dtype: str | WeightFormat = "fp8", kv_dtype: str = "bf16", precision: str | None = None,
    attention_precision: str | None = None,
    experts: str = "min", all_to_all: bool = False, queries: int = 1,
) -> float:
    """Lower bound on a decode step of a mixture of experts served as DeepSeek serves it:
    attention data-parallel (each of the ``ep`` accelerators holds every non-expert weight and
    the whole cache of its own ``batch`` sequences of ``context`` tokens) and the routed experts
    expert-parallel (``E / e`` per accelerator). One accelerator's step is the roofline of its
    weight products (its ``b`` tokens through the non-expert weights, its mean share
    ``b k`` of expert token-pairs; the weights it reads: the non-expert ones and, of its experts,
    those touched: ``experts="min"`` counts none of them for a bound, ``"expected"`` uniform
    routing), plus its attention's roofline. The all-to-alls are left out of the bound: two
    micro-batches hide them behind the kernels (DeepSeek's dual-batch overlap), and how many bytes
    they move depends on where each token's experts live; ``all_to_all=True`` adds the estimate of
    :func:`ep_all_to_all_seconds` in series (every expert of a token on another accelerator).
    ``queries`` tokens per sequence (2 when a multi-token-prediction
    draft is verified) multiply the FLOPs and the tokens sent, not the cache read.
    Derived in chapter :doc:`/chapters/serving-systems`.
    """
    if not isinstance(cfg, TransformerConfig) or not cfg.is_moe:
        raise ValueError("dp_ep_decode_step_seconds needs a mixture-of-experts TransformerConfig")
    spec = accelerator(gpu)
    fmt = weight_format(dtype)
    precision = matmul_precision(fmt, spec) if precision is None else precision
    attention_precision = matmul_precision("bf16", spec) if attention_precision is None else attention_precision
    b, n, e = check_int("batch", batch), check_int("context", context), check_int("ep", ep)
    m = check_int("queries", queries)
    check_choice("experts", experts, ("min", "expected"))
    bd = decode_flops_breakdown(cfg, b * m, n)
    attention = sum(bd[k] for k in _ATTN)
    weight_flops = sum(bd.values()) - attention           # routing-independent: b tokens, k experts each
    routed = param_count(cfg) - active_param_count(cfg)   # the experts no token of one sequence uses
    n_moe = sum(count for s, count in cfg.layer_counts.items() if s.mlp == "moe")
    per_expert = routed // (n_moe * (cfg.n_experts - cfg.experts_per_token))
    other = param_count(cfg) - n_moe * cfg.n_experts * per_expert  # replicated on every accelerator
    touched = 0.0 if experts == "min" else experts_touched(cfg, b * m * e, "expected") / e
    weight_bytes = (other + n_moe * touched * per_expert) * dtype_bits(fmt.dtype) / 8  # scales left out
    weights = max(weight_flops / gpu_peak_flops(spec, precision), weight_bytes / spec.memory_bandwidth)
    attend = max(attention / gpu_peak_flops(spec, attention_precision),
                 kv_bytes(cfg, b, n, kv_dtype) / spec.memory_bandwidth)
    kernels = weights + attend
    return kernels + ep_all_to_all_seconds(cfg, b * m, e, spec) if all_to_all else kernels


# ---------------------------------------------------------------------------------------------
# disaggregated prefill and long context
# ---------------------------------------------------------------------------------------------


def kv_transfer_seconds(
    cfg: TransformerConfig, prompt: int, link_bandwidth: float, *, kv_dtype: str = "bf16", tp: int = 1,
    latency: float = 0.0,
) -> float:
    """Time to move one request's cache from a prefill replica to a decode replica: the cache of
    ``prompt`` tokens (:func:`llmmath.kv_bytes`, of one tensor-parallel shard when ``tp > 1``:
    every shard sends its own over its own link in parallel) over ``link_bandwidth`` bytes/s,
    plus ``latency``. Derived in chapter :doc:`/chapters/serving-systems`.
    """
    shard = tp_shard(cfg, check_int("tp", tp))
    w = check_positive("link_bandwidth", link_bandwidth)
    return check_positive("latency", latency, allow_zero=True) + kv_bytes(shard, 1, check_int("prompt", prompt),
                                                                          kv_dtype) / w


def split_k_partitions(batch: int, kv_heads: int, sm_count: int) -> int:
    """Split-K (FlashDecoding) partitions of each sequence's keys so that a decode attention
    kernel has at least one block of work per streaming multiprocessor: without a split it
    launches ``b a_kv`` blocks (one per sequence and key/value head), so ``S = ceil(SMs / (b a_kv))``
    (1 once the batch fills the chip). Each partition returns its partial output with its
    softmax maximum and sum, merged exactly by a log-sum-exp. Derived in chapter
    :doc:`/chapters/serving-systems`.
    """
    work = check_int("batch", batch) * check_int("kv_heads", kv_heads)
    return max(1, -(-check_int("sm_count", sm_count) // work))


def bandwidth_utilization(bytes_per_step: float, step_seconds_measured: float, gpu: str | Accelerator) -> float:
    """Model bandwidth utilization (MBU): the bytes a step must read (weights touched and caches,
    :func:`llmmath.decode_bytes`) per measured second, over the memory's peak bandwidth.
    Derived in chapter :doc:`/chapters/serving-systems`.
    """
    spec = accelerator(gpu)
    return check_positive("bytes_per_step", bytes_per_step) / check_positive(
        "step_seconds_measured", step_seconds_measured) / spec.memory_bandwidth


# ---------------------------------------------------------------------------------------------
# published serving measurements, and the book's bound for each
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class MeasuredServing:
    """One published serving measurement, read at its source (``llmmath/data/measured_serving.json``):
    ``engine``, ``source`` (a key of ``references.bib``) and ``where`` (table or page), the model
    (a preset with the same shapes), ``gpu`` and ``gpus`` (accelerators of one replica), the
    parallel layout (``tp``, ``ep``), the formats (``dtype`` weights, ``precision`` their products'
    peak, ``kv_dtype``), the workload (``kind``: ``static`` a batch of ``batch`` requests run to
    completion, ``offline`` continuous batching under unlimited load, ``online`` decode at the
    stated ``batch`` per accelerator and ``context``, ``ttft`` a prefill, ``roof`` decode whose
    batch and context are not stated), ``prompt``, ``output``, ``batch``, ``context``,
    ``tokens_per_step`` (more than 1 when the engine may decode speculatively), and what was
    measured: ``tokens_per_second_per_gpu`` (output tokens)
    or ``seconds`` (a latency), and ``notes``."""

    id: str
    engine: str
    source: str
    where: str
    model: str
    gpu: str
    gpus: int
    kind: str
    measured: dict[str, float]
    tp: int = 1
    ep: int = 1
    dtype: str = "bf16"
    precision: str = "bf16_tensor"
    kv_dtype: str = "bf16"
    prompt: int | None = None
    output: int | None = None
    batch: int | None = None
    context: int | None = None
    tokens_per_step: int = 1
    notes: str = ""


_KINDS = ("offline", "online", "roof")


@lru_cache(maxsize=1)
def measured_serving() -> tuple[MeasuredServing, ...]:
    """The published serving measurements of ``llmmath/data/measured_serving.json``, one
    :class:`MeasuredServing` per row, validated. Derived in chapter :doc:`/chapters/serving-systems`.
    """
    text = resources.files("llmmath").joinpath("data/measured_serving.json").read_text()
    rows = []
    for raw in json.loads(text)["rows"]:
        row = MeasuredServing(**raw)
        check_choice("kind", row.kind, _KINDS)
        accelerator(row.gpu)
        rows.append(row)
    return tuple(rows)


def measured_serving_bound(row: MeasuredServing) -> dict[str, float]:
    """The book's bound for one measurement, on the same work: for ``offline`` (continuous
    batching under unlimited load) the replica's throughput at the largest steady state the
    memory holds, no reserve (:func:`frontier`'s last point; at the engine's stated batch if
    smaller); for ``online`` a decode step of ``batch`` sequences at ``context`` per accelerator
    (:func:`dp_ep_decode_step_seconds` for expert parallelism, :func:`step_seconds` otherwise),
    each yielding ``tokens_per_step`` tokens; for ``roof`` only the weight products' compute,
    ``pi / F_w`` tokens per second. (TensorRT-LLM's static-batch and first-token rows live in
    :func:`llmmath.serving_measurements`, bounded by :func:`llmmath.measurement_bound`.) Returns
    ``bound`` (output tokens per second per GPU) and ``ratio``, measured over bound: at most 1
    when the bound is one. Derived in chapter :doc:`/chapters/serving-systems`.
    """
    if not isinstance(row, MeasuredServing):
        raise TypeError(f"row must be a MeasuredServing (llmmath.measured_serving), got {type(row).__name__}")
    from .presets import preset

    cfg = preset(row.model)
    kw = dict(dtype=row.dtype, kv_dtype=row.kv_dtype, precision=row.precision)
    m = row.tokens_per_step
    if row.kind == "roof":
        costs = step_costs(cfg, row.gpu, tp=row.tp, **kw)
        bound = costs.peak / (costs.token_flops + costs.head_flops)
    elif row.kind == "online":
        if cfg.is_moe and row.ep > 1:
            t = dp_ep_decode_step_seconds(cfg, row.batch, row.context, row.gpu, row.ep, queries=m, **kw)
        else:
            t = step_seconds(step_costs(cfg, row.gpu, tp=row.tp, **kw), row.batch * m, row.batch * row.context)
        bound = row.batch * m / t
    else:
        curve = frontier(cfg, row.gpu, row.prompt, row.output, tp=row.tp, reserve_bytes=0, points=2, **kw)
        top = curve[-1]["batch"] if row.batch is None else min(curve[-1]["batch"], row.batch)
        bound = steady_state(cfg, top, row.prompt, row.output, row.gpu, tp=row.tp, check_memory=False,
                             **kw)["tokens_per_second_per_gpu"]
    return {"bound": bound, "ratio": row.measured["tokens_per_second_per_gpu"] / bound}
