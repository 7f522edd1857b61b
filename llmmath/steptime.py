"""The time of one training step: one model, two modes that are never mixed.

``mode="bound"`` is a true lower bound on the step time of a layout: every kernel at the
accelerator's peak, every link at its nominal bandwidth with no latency, every overlap that is
physically possible taken. Its MFU is therefore an upper bound on any MFU a real run of that layout
can measure, and it is at most 1 by construction. ``mode="predicted"`` is the step a real framework
runs: kernels at a kernel efficiency calibrated per accelerator generation and precision, each link
class (scale-up, scale-out) at a calibrated fraction of its bandwidth with the alpha-beta latency,
and only the overlaps Megatron-LM/FSDP perform. The calibration (:mod:`llmmath.calibration`) is a
least-squares fit to published measured runs, with its leave-one-out error.

Terms, per pipeline GPU ``r`` and micro-batch (``t``, ``c``: tensor and context degrees, which
divide every term below):

- **compute, by kernel class**: the weight matmuls (``linear``: projections, MLPs, experts, router),
  the attention core (``attention``: ``Q K^T`` and ``P V`` over the causal query-key pairs a fused
  kernel computes) and the output layer (``head``). Forward ``F``; backward split as the
  zero-bubble schedules split it into the input gradients ``I`` (every product once, the attention
  core twice: it has no weights) and the weight gradients ``W`` (the weight products once), so
  ``I + W = 2 F``; recomputation (full: the layers' forward again; selective: the attention core)
  runs before the backward, in ``I``. ``predicted`` adds the fused kernel's recomputed scores when
  ``flash_attention``. With ``precision="fp8_tensor"`` the linear layers run at the FP8 peak and the
  attention core and output layer at the BF16 peak, as Transformer Engine runs them.
- **collectives** (:func:`llmmath.parallel.step_collectives`), each ``latency + bytes / W`` per link
  (:func:`llmmath.parallel.collective_link_seconds`), with its **overlap window**:

  ========================  ==================================  ==================================
  collective                ``bound``                           ``predicted`` (default overlaps)
  ========================  ==================================  ==================================
  tensor parallel           the micro-batch's compute           exposed (``"tp"`` in ``overlap``:
                                                                the compute)
  context parallel          the micro-batch's compute           the attention core (``"cp"``)
  expert parallel           the micro-batch's compute           exposed (``"ep"``, or DualPipeV:
                                                                the compute)
  pipeline p2p              the compute; one hop per stage in   hidden in the steady state
                            the fill and the drain              (``"pp"``); the hops of the fill
                                                                and the drain exposed
  DP gradient reduction     the LAST micro-batch's backward     the same (``"dp"``)
  (ZeRO 0/1/2)              on the GPU, and the drain after it
  ZeRO-1/2 parameter        the next step's first forward and   the same (``"dp"``)
  all-gather                the fill before it
  ZeRO-2 reduce-scatter     each micro-batch's backward         the same (``"dp"``)
  ZeRO-3 gathers and        the forward (backward) of the same  the same (``"dp"``): the layer
  reduce-scatter            micro-batch                         before prefetches the next
  ========================  ==================================  ==================================

  so ZeRO-3 hides under the same tokens per micro-batch as plain data parallelism
  (:func:`dp_hiding_tokens`). In ``bound`` a link also cannot carry more than its bandwidth: the
  step is at least the busiest link's seconds.
- **pipeline**: ``bound`` takes the critical path every schedule must pay, ``max_r (m t_r +
  fill_r + drain_r)``: GPU ``r`` idles until the first micro-batch's forward has crossed the chunks
  before it (``fill_r``) and, unless the schedule splits the backward (zero-bubble schedules defer
  ``W``), finishes before the last micro-batch's backward has crossed them back (``drain_r``).
  ``predicted``: ``(m + (p-1)/v) t_mb`` for GPipe, 1F1B and interleaved 1F1B with ``t_mb`` the
  slowest GPU's micro-batch, and for the zero-bubble schedules PyTorch ships the span of the order
  PyTorch runs (:func:`pipeline_order`) simulated with each chunk's ``F, I, W``
  (:func:`simulate_pipeline`).
- **optimizer step**: ``predicted`` adds the memory-bound update: the busiest GPU reads and writes
  its master weights and optimizer states, reads its gradients and writes its parameters at the
  HBM bandwidth. ``bound`` counts none of it (a fused per-layer update can run inside the last
  backward).

MFU: one FLOP convention everywhere, :data:`MFU_CONVENTION` (:func:`model_flops`) over ``n_gpus
x peak(precision) x step``; HFU counts the FLOPs executed (recomputation included) the same way.

ZeRO-3 with pipeline parallelism is not modelled: DeepSpeed refuses it, and what torchtitan runs
(FSDP that does not reshard between micro-batches: one all-gather and one reduce-scatter per step)
has ZeRO-1/2's communication; :func:`step_time` raises for it and :func:`search_layouts` skips it.
Derived in chapter :doc:`/chapters/parallelism`; calibrated in chapter :doc:`/chapters/capstone`.
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from functools import lru_cache
from typing import Any, NamedTuple

from ._validate import check_bool, check_choice, check_int, check_positive
from .config import LayerSpec, TransformerConfig
from .hardware import Accelerator, accelerator, gpu_peak_flops
from .memory import RECOMPUTE_MODES, training_state_bytes
from .parallel import (
    _COMM_BYTES,
    CP_STYLES,
    PARALLELISMS,
    SCHEDULES,
    V_SCHEDULES,
    Layout,
    _check_cfg,
    _check_layout_type,
    _check_schedule,
    _spec_counts,
    _stage_layers,
    _style,
    balanced_stage_layers,
    check_layout,
    chunk_gpu,
    collective_link_seconds,
    memory_per_gpu,
    stage_param_counts,
    step_collectives,
)
from .sharding import MEMORY_RESERVE

__all__ = [
    "MODES",
    "MFU_CONVENTION",
    "OVERLAP_KINDS",
    "ATTENTION_KERNELS",
    "PREDICTED_OVERLAP",
    "model_flops",
    "pipeline_order",
    "simulate_pipeline",
    "step_time",
    "dp_hiding_tokens",
    "Plan",
    "search_layouts",
]

#: The two modes of :func:`step_time`.
MODES: tuple[str, ...] = ("bound", "predicted")
#: The FLOP count behind every MFU llmmath reports for a step.
MFU_CONVENTION = ("model FLOPs: forward + backward of every matrix multiply, no recomputation, attention "
                  "over the causal query-key pairs")
#: Communication kinds an ``overlap`` tuple may name (``predicted`` mode).
OVERLAP_KINDS: tuple[str, ...] = ("tp", "cp", "ep", "pp", "dp")
#: What Megatron-LM and FSDP overlap by default: context-parallel exchanges behind the attention
#: core, pipeline sends in the steady state, and the data-parallel collectives in their windows.
PREDICTED_OVERLAP: tuple[str, ...] = ("cp", "pp", "dp")
#: Attention kernels the calibration tells apart: ``eager`` (batched matmuls and a softmax kernel,
#: the probabilities stored), ``flash2`` (the ``flash-attn`` 2 package) and ``cudnn`` (Transformer
#: Engine's cuDNN fused attention, of the FlashAttention-3 class on Hopper).
ATTENTION_KERNELS: tuple[str, ...] = ("eager", "flash2", "cudnn")
#: HBM passes over a layer's saved activations made by its non-matmul kernels per micro-batch
#: (``predicted`` mode): a third in the forward, two thirds in the backward.
NONMATMUL_PASSES = 6
#: Schedules that split the backward into input and weight gradients (``W`` can wait).
_SPLIT_BACKWARD = ("interleaved_zb", "zbv", "dualpipev")


def model_flops(cfg: TransformerConfig, batch: int, seq: int) -> int:
    """The FLOPs every MFU of a step counts (:data:`MFU_CONVENTION`): ``training_flops(cfg, batch,
    seq, skip_masked=True)`` for a causal model, the forward and backward of every matrix multiply
    without recomputation, the attention products over the ``s (s+1)/2`` causal pairs a fused kernel
    must compute (every pair for a bidirectional model). The kernels cannot do less, so a step at
    peak cannot take less than ``model_flops / (n peak)`` and MFU <= 1. Derived in chapter
    :doc:`/chapters/parallelism`.
    """
    from .flops import training_flops

    cfg = _check_cfg(cfg)
    return training_flops(cfg, batch, seq, skip_masked=cfg.causal)


# ---------------------------------------------------------------------------------------------
# pipeline schedules: the orders PyTorch runs, and their simulation
# ---------------------------------------------------------------------------------------------


def pipeline_order(schedule: str, pp: int, microbatches: int, virtual_stages: int = 2) -> list[list[tuple]]:
    """The computation each pipeline GPU runs, in order, under PyTorch's zero-bubble schedules, as
    ``(kind, chunk, micro-batch)`` with ``kind`` ``F`` (forward), ``I`` (input gradients), ``W``
    (weight gradients) or ``B`` (a whole backward): the ``pipeline_order`` of
    ``torch.distributed.pipelining``'s ``ScheduleInterleavedZeroBubble`` (``interleaved_zb``, ZB1P:
    interleaved 1F1B whose ``W`` wait ``rank`` slots and then fill the cool-down),
    ``ScheduleZBVZeroBubble`` (``zbv``) and ``ScheduleDualPipeV`` (``dualpipev``; an overlapped
    forward-backward pair is listed as its forward then its backward), re-derived here and checked
    equal to PyTorch 2.13's in ``tests/test_steptime.py``. Derived in chapter
    :doc:`/chapters/parallelism`.
    """
    check_choice("schedule", schedule, _SPLIT_BACKWARD)
    p, m, v = check_int("pp", pp), check_int("microbatches", microbatches), check_int("virtual_stages", virtual_stages)
    _check_schedule(p, m, schedule, v)
    return [list(ops) for ops in _orders(schedule, p, m, v)]


@lru_cache(maxsize=128)
def _orders(schedule: str, p: int, m: int, v: int) -> tuple[tuple[tuple[str, int, int], ...], ...]:
    build = {"interleaved_zb": _interleaved_zb, "zbv": _zbv, "dualpipev": _dualpipev}[schedule]
    return tuple(tuple(build(r, p, m, v)) for r in range(p))


def _interleaved_zb(rank: int, p: int, m: int, v: int) -> list[tuple[str, int, int]]:
    rounds = max(1, m // p)
    per_round = m // rounds
    warmup = min((v - 1) * per_round + (p - 1 - rank), m * v)  # _get_warmup_ops, multiply_factor=1
    total = m * v
    fwd_bwd, cooldown = total - warmup, warmup

    def f_stage(step: int) -> int:
        return ((step // per_round) % v) * p + rank

    def b_stage(step: int) -> int:
        return (v - 1 - ((step - warmup) // per_round) % v) * p + rank

    fwd: dict[int, int] = defaultdict(int)
    bwd: dict[int, int] = defaultdict(int)
    wgt: dict[int, int] = defaultdict(int)
    ops: list[tuple[str, int, int]] = []
    backward_ids: list[int] = []
    n_w = 0

    def add(kind: str, stage: int, counter: dict[int, int]) -> None:
        ops.append((kind, stage, counter[stage]))
        counter[stage] += 1

    def weight() -> None:
        nonlocal n_w
        add("W", b_stage(backward_ids[n_w]), wgt)
        n_w += 1

    for op in range(warmup + fwd_bwd + cooldown):
        if op < warmup:
            add("F", f_stage(op), fwd)
            continue
        if op < warmup + fwd_bwd:
            add("F", f_stage(op), fwd)
        add("I", b_stage(op), bwd)
        backward_ids.append(op)
        if op - warmup >= rank:
            weight()
    while n_w < len(backward_ids):
        weight()
    return ops


def _zbv(rank: int, p: int, m: int, v: int) -> list[tuple[str, int, int]]:
    n = max(2 * p - 1, m)
    c0, c1 = rank, 2 * p - 1 - rank
    f0 = f1 = b0 = b1 = 0
    ops: list[tuple[str, int, int]] = []
    for _ in range(2 * (p - rank) - 1):
        ops.append(("F", c0, f0))
        f0 += 1
    for _ in range(rank):
        ops += [("F", c1, f1), ("F", c0, f0)]
        f1, f0 = f1 + 1, f0 + 1
    for _ in range(p - rank):
        ops += [("F", c1, f1), ("I", c1, b1), ("W", c1, b1)]
        f1, b1 = f1 + 1, b1 + 1
    while f1 < f0 or f0 < n:
        if f0 < n:
            ops.append(("F", c0, f0))
            f0 += 1
        ops += [("I", c0, b0), ("W", c0, b0), ("F", c1, f1), ("I", c1, b1), ("W", c1, b1)]
        b0, f1, b1 = b0 + 1, f1 + 1, b1 + 1
    w0, w1 = b0, b1
    for _ in range(rank):
        ops += [("I", c0, b0), ("I", c1, b1)]
        b0, b1 = b0 + 1, b1 + 1
    for _ in range(p - rank):
        ops += [("I", c0, b0), ("W", c0, w0)]
        b0, w0 = b0 + 1, w0 + 1
    ops += [("W", c1, k) for k in range(w1, b1)] + [("W", c0, k) for k in range(w0, b0)]
    return [op for op in ops if op[2] < m]  # the micro-batches beyond m are PyTorch's padding


def _dualpipev(rank: int, p: int, m: int, v: int) -> list[tuple[str, int, int]]:
    c0, c1 = rank, 2 * p - 1 - rank
    count: dict[tuple[int, str], int] = defaultdict(int)
    pending: list[tuple[int, int]] = []
    ops: list[tuple[str, int, int]] = []

    def act(stage: int, kind: str) -> None:
        key = (stage, "I" if kind == "B" else kind)
        ops.append((kind, stage, count[key]))
        if kind == "I":
            pending.append((stage, count[key]))
        if kind == "B":
            count[(stage, "W")] += 1
        count[key] += 1

    def weight() -> None:
        if pending:
            stage, mb = pending.pop(0)
            ops.append(("W", stage, mb))
            count[(stage, "W")] += 1

    for _ in range(2 * (p - rank - 1)):
        act(c0, "F")
    for _ in range(rank + 1):
        act(c0, "F")
        act(c1, "F")
    for _ in range(p - rank - 1):
        act(c1, "I")
        weight()
        act(c1, "F")
    for i in range(m - 2 * p + rank + 1):
        if i == 0 and rank == p - 1:
            act(c0, "F")
            act(c1, "B")
        else:
            act(c0, "F")  # overlapped F0 + B1
            act(c1, "B")
        act(c1, "F")  # overlapped F1 + B0
        act(c0, "B")
    for _ in range(p - rank - 1):
        act(c1, "B")
        act(c1, "F")
        act(c0, "B")
    zb = False
    for i in range(rank + 1):
        if i == (rank + 1) // 2 and rank % 2 == 1:
            zb = True
        act(c1, "I" if zb else "B")
        if i == (rank + 1) // 2 and rank % 2 == 0:
            zb = True
        act(c0, "I" if zb else "B")
    for _ in range(p - rank - 1):
        weight()
        act(c0, "I" if zb else "B")
    for _ in range(rank + 1):
        weight()
    return ops


def simulate_pipeline(
    schedule: str, pp: int, microbatches: int, virtual_stages: int,
    chunk_times: list[tuple[float, float, float]] | tuple[tuple[float, float, float], ...],
    hop: float = 0.0,
) -> float:
    """Seconds from the first forward to the last operation of a pipelined step when each GPU runs
    :func:`pipeline_order` as early as its dependencies allow: the forward of chunk ``k`` after that
    of chunk ``k-1`` (plus ``hop`` seconds when they sit on different GPUs), the input gradient of
    chunk ``k`` after its forward and after the input gradient of chunk ``k+1`` (its output's
    gradient), the weight gradient after the input gradient; a whole backward ``B`` runs ``I`` then
    ``W`` and passes its gradient on at its end. ``chunk_times[k] = (F, I, W)`` seconds of chunk
    ``k`` for one micro-batch. Derived in chapter :doc:`/chapters/parallelism`.
    """
    pipeline_order(schedule, pp, microbatches, virtual_stages)  # validates
    n = pp * virtual_stages
    times = tuple(tuple(float(x) for x in ct) for ct in chunk_times)
    if len(times) != n:
        raise ValueError(f"chunk_times must have pp * virtual_stages = {n} entries, got {len(times)}")
    return _simulate(schedule, pp, microbatches, virtual_stages, times, float(hop))


@lru_cache(maxsize=512)
def _simulate(schedule: str, p: int, m: int, v: int, times: tuple[tuple[float, ...], ...], hop: float) -> float:
    orders = _orders(schedule, p, m, v)
    n = p * v
    style = "v" if schedule in V_SCHEDULES else "loop"
    gpu = [chunk_gpu(k, p, style) for k in range(n)]
    done: dict[tuple[str, int, int], float] = {}
    free = [0.0] * p
    pos = [0] * p
    while any(pos[r] < len(orders[r]) for r in range(p)):
        progressed = False
        for r in range(p):
            while pos[r] < len(orders[r]):
                kind, k, mb = orders[r][pos[r]]
                if kind == "F":
                    deps = [("F", k - 1, mb, hop if gpu[k - 1] != r else 0.0)] if k > 0 else []
                elif kind in ("I", "B"):
                    deps = [("F", k, mb, 0.0)]
                    if k < n - 1:
                        deps.append(("G", k + 1, mb, hop if gpu[k + 1] != r else 0.0))
                else:
                    deps = [("G", k, mb, 0.0)]
                if not all(d[:3] in done for d in deps):
                    break
                start = max([free[r]] + [done[d[:3]] + d[3] for d in deps])
                f, i, w = times[k]
                end = start + {"F": f, "I": i, "W": w, "B": i + w}[kind]
                free[r] = end
                done[(kind, k, mb)] = end
                if kind in ("I", "B"):
                    done[("G", k, mb)] = end
                pos[r] += 1
                progressed = True
        if not progressed:
            raise RuntimeError(f"the {schedule} orders deadlock")
    return max(free)


# ---------------------------------------------------------------------------------------------
# the ingredients of a step (FLOPs and nominal link seconds): computed once per layout
# ---------------------------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def _layer_classes(cfg: TransformerConfig, spec: LayerSpec, b: int, s: int) -> tuple[int, int, int]:
    """(linear, attention scores, attention values) forward FLOPs of one layer of kind ``spec`` on
    ``b`` sequences of ``s`` tokens, attention over the causal pairs."""
    from .flops import LAYER_KEYS, flops_breakdown

    one = cfg.replace(n_layers=1, attention_types=(spec.attention,), mlp_types=(spec.mlp,) if cfg.is_moe else ())
    bd = flops_breakdown(one, b, s, skip_masked=cfg.causal)
    scores, values = bd["attn_scores"], bd["attn_values"]
    return sum(bd[k] for k in LAYER_KEYS) - scores - values, scores, values


@lru_cache(maxsize=4096)
def _expert_flops(cfg: TransformerConfig, spec: LayerSpec, b: int, s: int) -> int:
    """Forward FLOPs of one layer's routed experts (0 for a dense layer)."""
    from .flops import flops_breakdown

    if spec.mlp != "moe":
        return 0
    one = cfg.replace(n_layers=1, attention_types=(spec.attention,), mlp_types=("moe",))
    bd = flops_breakdown(one, b, s)
    return bd["mlp_gate"] + bd["mlp_up"] + bd["mlp_down"]


@lru_cache(maxsize=256)
def _head(cfg: TransformerConfig, b: int, s: int) -> int:
    from .flops import flops_breakdown

    bd = flops_breakdown(cfg, b, s)
    return bd["lm_head"] + bd["embedding_projection"] + bd["pooler"]


class _Chunk(NamedTuple):
    gpu: int
    linear: int  # forward FLOPs of the weight matmuls (whole chunk, before the t c split)
    scores: int
    values: int
    head: int
    full: bool  # full recomputation
    act: int  # bytes of the activations the chunk's layers save, per GPU (the non-matmul kernels' traffic unit)
    imbalance: int = 0  # the busiest expert-parallel GPU's extra expert FLOPs, (capacity_factor - 1) x experts


class _Comm(NamedTuple):
    kind: str  # tp, cp, ep, pp, dp
    window: str  # "mb" (per micro-batch: compute/attention/fwd/bwd) or "red"/"ag" (once per step)
    phase: str  # forward, backward, step
    per_mb: float  # instances per micro-batch (or per step for red/ag)
    latency: float
    up: float  # nominal seconds on the scale-up link, one instance
    out: float


class _Ingredients(NamedTuple):
    p: int
    v: int
    m: int
    tc: int
    dp_total: int
    schedule: str
    chunks: tuple[_Chunk, ...]
    comms: tuple[tuple[_Comm, ...], ...]  # per pipeline GPU
    hop: tuple[float, float, float]  # one p2p message: latency, up, out
    opt_bytes: tuple[int, ...]  # optimizer-step HBM traffic per pipeline GPU
    peaks: tuple[float, float, float]  # linear, attention, head FLOP/s at peak
    peak: float  # the MFU denominator's per-GPU peak
    model_flops: int
    tokens: int
    n_gpus: int
    memory_bandwidth: float
    flash: bool
    recompute: str


def _attn_precision(precision: str) -> str:
    return "bf16_tensor" if precision == "fp8_tensor" else precision


_CACHE: dict[tuple, _Ingredients] = {}


def _spec_key(spec: Accelerator) -> tuple:
    return (spec.name, tuple(sorted(spec.peak_flops.items())), spec.memory_bandwidth, spec.scale_up, spec.scale_out,
            spec.domain_size)


def _ingredients(cfg: TransformerConfig, layout: Layout, s: int, spec: Accelerator, precision: str,
                 state_precision: str, bytes_per_value: int, sp_saves_gathered: bool, flash: bool,
                 optimizer: str, comm: tuple = ("all_gather", "ring", "ring", "all_to_all", None)) -> _Ingredients:
    key = (cfg, layout, s, _spec_key(spec), precision, state_precision, bytes_per_value, sp_saves_gathered, flash,
           optimizer, comm)
    hit = _CACHE.get(key)
    if hit is None:
        if len(_CACHE) > 4096:
            _CACHE.clear()
        hit = _CACHE[key] = _make_ingredients(cfg, layout, s, spec, precision, state_precision, bytes_per_value,
                                              sp_saves_gathered, flash, optimizer, comm)
    return hit


def _make_ingredients(cfg: TransformerConfig, layout: Layout, s: int, spec: Accelerator, precision: str,
                      state_precision: str, bytes_per_value: int, sp_saves_gathered: bool, flash: bool,
                      optimizer: str, comm: tuple) -> _Ingredients:
    p, v, m, b = layout.pp, layout.virtual_stages, layout.microbatches, layout.microbatch_size
    style = _style(layout.schedule)
    n_chunks = p * v
    sizes = layout.stage_layers or (cfg.n_layers // n_chunks,) * n_chunks
    starts = [sum(sizes[:k]) for k in range(n_chunks)]
    chunks = []
    from .parallel import _layer_activation

    for k in range(n_chunks):
        lin = sc = va = act = extra = 0
        for spec_, count in _spec_counts(cfg, tuple(range(starts[k], starts[k] + sizes[k]))).items():
            a, bb, c = _layer_classes(cfg, spec_, b, s)
            lin, sc, va = lin + count * a, sc + count * bb, va + count * c
            if layout.capacity_factor != 1:
                extra += round(count * (layout.capacity_factor - 1) * _expert_flops(cfg, spec_, b, s))
            act += count * _layer_activation(cfg, spec_.mlp, b, s, layout.cp, layout.tp, layout.sequence_parallel,
                                             "none", flash, False, bytes_per_value, False)
        head = _head(cfg, b, s) if k == n_chunks - 1 else 0
        chunks.append(_Chunk(chunk_gpu(k, p, style), lin, sc, va, head, layout.recompute == "full", act, extra))
    comms, opt = [], []
    hop = (0.0, 0.0, 0.0)
    params = stage_param_counts(cfg, layout)
    n_dense = layout.shard_group or layout.dp * layout.cp
    n_expert = layout.shard_group or layout.expert_dp
    stage_layers = _stage_layers(cfg.n_layers, p, v, layout.stage_layers, style)
    last = chunk_gpu(n_chunks - 1, p, style)
    memo: dict[tuple, tuple[tuple[_Comm, ...], int, tuple[float, float, float] | None]] = {}
    for r in range(p):
        # GPUs with the same layers and the same place in the pipeline send the same
        key = (tuple(sorted(_spec_counts(cfg, stage_layers[r]).items(), key=repr)), r == 0, r == p - 1, r == last)
        if key not in memo:
            mine, own_hop = [], None
            for c in step_collectives(cfg, layout, s, stage=r, precision=state_precision,
                                      bytes_per_value=bytes_per_value, sp_saves_gathered=sp_saves_gathered,
                                      cp_style=comm[0], tp_algorithm=comm[1], dp_algorithm=comm[2],
                                      ep_dispatch=comm[3], max_nodes=comm[4], gpus_per_node=spec.domain_size):
                lat, up, out = collective_link_seconds(c.kind, c.group, c.message, spec, span=c.group * c.stride,
                                                       algorithm=c.algorithm)
                if c.parallelism == "pp":
                    own_hop = (lat, up, out)
                if c.parallelism == "dp" and c.phase == "step":
                    window = "ag" if c.kind == "all_gather" else "red"
                    mine.append(_Comm("dp", window, c.phase, c.count, lat, up, out))
                else:
                    mine.append(_Comm(c.parallelism, "mb", c.phase, c.count / m, lat, up, out))
            # optimizer step: read + write master weights and optimizer states, read gradients,
            # write parameters
            traffic = 0
            for count, group in ((params[r]["dense"], n_dense), (params[r]["expert"], n_expert)):
                if count:
                    st = training_state_bytes(count, state_precision, optimizer, zero_stage=layout.zero_stage,
                                              n_gpus=group)
                    grads = st["master_gradients"] or st["gradients"]
                    traffic += 2 * (st["master_weights"] + st["optimizer_states"]) + grads + st["parameters"]
            memo[key] = (tuple(mine), traffic, own_hop)
        mine, traffic, own_hop = memo[key]
        comms.append(mine)
        opt.append(traffic)
        if own_hop is not None:
            hop = own_hop
    peaks = (gpu_peak_flops(spec, precision), gpu_peak_flops(spec, _attn_precision(precision)),
             gpu_peak_flops(spec, _attn_precision(precision)))
    return _Ingredients(
        p=p, v=v, m=m, tc=layout.tp * layout.cp, dp_total=layout.dp, schedule=layout.schedule, chunks=tuple(chunks),
        comms=tuple(comms), hop=hop, opt_bytes=tuple(opt), peaks=peaks, peak=gpu_peak_flops(spec, precision),
        model_flops=model_flops(cfg, layout.global_batch, s), tokens=layout.global_batch * s, n_gpus=layout.n_gpus,
        memory_bandwidth=spec.memory_bandwidth, flash=flash, recompute=layout.recompute,
    )


# ---------------------------------------------------------------------------------------------
# assembling the step
# ---------------------------------------------------------------------------------------------


class _Eff(NamedTuple):
    linear: float  # the layers' weight matmuls, at the run's precision
    head: float  # 16-bit matmuls (the output layer; the linear layers too unless FP8)
    attention: float  # the attention kernel
    up: float
    out: float


def _chunk_times(ing: _Ingredients, eff: _Eff, mode: str) -> list[tuple[float, float, float, float]]:
    """(F, I, W, attention) seconds of each chunk for one micro-batch on one GPU."""
    r_lin, r_att, r_head = ing.peaks[0] * eff.linear, ing.peaks[1] * eff.attention, ing.peaks[2] * eff.head
    out = []
    for c in ing.chunks:
        lin, att, head = (c.linear + c.imbalance) / r_lin, (c.scores + c.values) / r_att, c.head / r_head
        redo = 0.0
        if c.full:
            redo += lin + att
        elif ing.recompute == "selective" and not (mode == "predicted" and ing.flash):
            redo += att
        if mode == "predicted" and ing.flash:  # the fused kernel recomputes Q K^T in its backward
            redo += c.scores / r_att
        f = (lin + att + head) / ing.tc
        i = (lin + 2 * att + head + redo) / ing.tc
        w = (lin + head) / ing.tc
        if mode == "predicted" and NONMATMUL_PASSES:  # memory-bound kernels: norms, activations, casts
            mem = c.act / ing.memory_bandwidth
            f += NONMATMUL_PASSES / 3 * mem
            i += 2 * NONMATMUL_PASSES / 3 * mem + (NONMATMUL_PASSES / 3 * mem if c.full else 0.0)
        out.append((f, i, w, 3 * att / ing.tc + (redo if c.full else 0.0) / ing.tc))
    return out


def _comm_seconds(c: _Comm, eff: _Eff, mode: str) -> tuple[float, float, float]:
    """(time of one instance, its scale-up seconds, its scale-out seconds)."""
    up, out = c.up / eff.up, c.out / eff.out
    if mode == "bound":
        return max(up, out), up, out
    return c.latency + max(up, out), up, out


def _hop(ing: _Ingredients, eff: _Eff, mode: str) -> float:
    lat, up, out = ing.hop
    return max(up / eff.up, out / eff.out) + (lat if mode == "predicted" else 0.0)


def _clean(x: float, scale: float) -> float:
    """``x``, or 0 when it is rounding noise (or below 0) next to ``scale``."""
    return 0.0 if x < 1e-12 * scale else x


def _assemble(ing: _Ingredients, eff: _Eff, mode: str, overlap: tuple[str, ...]) -> dict[str, Any]:
    p, v, m = ing.p, ing.v, ing.m
    times = _chunk_times(ing, eff, mode)
    per_gpu = [[k for k, c in enumerate(ing.chunks) if c.gpu == r] for r in range(p)]
    fwd = [sum(times[k][0] for k in ks) for ks in per_gpu]
    bwd = [sum(times[k][1] + times[k][2] for k in ks) for ks in per_gpu]
    att = [sum(times[k][3] for k in ks) for ks in per_gpu]
    compute = [f + b for f, b in zip(fwd, bwd, strict=True)]
    hop = _hop(ing, eff, mode) if p > 1 else 0.0
    split = ing.schedule in _SPLIT_BACKWARD
    # fill: the chunks before GPU r's first chunk (chunk r), drain: their backward on the way back
    fill = [sum(times[k][0] for k in range(r)) + r * hop for r in range(p)]
    drain = [0.0 if split else sum(times[k][1] + times[k][2] for k in range(r)) + r * hop for r in range(p)]
    t_mb, exposed_mb, red, ag, link_up, link_out = [], [], [], [], [], []
    by_kind = [dict.fromkeys(OVERLAP_KINDS, 0.0) for _ in range(p)]
    for r in range(p):
        up_mb = out_mb = 0.0
        kinds: dict[str, float] = defaultdict(float)
        fwd_dp = bwd_dp = 0.0
        red_r = ag_r = red_up = red_out = 0.0
        for c in ing.comms[r]:
            t, up, out = _comm_seconds(c, eff, mode)
            if c.window == "mb":
                up_mb, out_mb = up_mb + c.per_mb * up, out_mb + c.per_mb * out
                if c.kind == "dp":
                    if c.phase == "forward":
                        fwd_dp += c.per_mb * t
                    else:
                        bwd_dp += c.per_mb * t
                else:
                    kinds[c.kind] += c.per_mb * t
            else:
                red_up, red_out = red_up + c.per_mb * up, red_out + c.per_mb * out
                if c.window == "red":
                    red_r += c.per_mb * t
                else:
                    ag_r += c.per_mb * t
        red.append(red_r)
        ag.append(ag_r)
        link_up.append(m * up_mb + red_up)
        link_out.append(m * out_mb + red_out)
        if mode == "bound":
            t_mb.append(max(compute[r], up_mb, out_mb))
            exposed_mb.append(t_mb[-1] - compute[r])
            continue
        ex = {}
        ex["tp"] = max(0.0, kinds["tp"] - compute[r]) if "tp" in overlap else kinds["tp"]
        ex["cp"] = max(0.0, kinds["cp"] - att[r]) if "cp" in overlap else kinds["cp"]
        ep_hidden = "ep" in overlap or ing.schedule == "dualpipev"
        ex["ep"] = max(0.0, kinds["ep"] - compute[r]) if ep_hidden else kinds["ep"]
        ex["pp"] = 0.0 if "pp" in overlap else kinds["pp"]
        if "dp" in overlap:
            ex["dp"] = max(0.0, fwd_dp - fwd[r]) + max(0.0, bwd_dp - bwd[r])
        else:
            ex["dp"] = fwd_dp + bwd_dp
        for k in OVERLAP_KINDS:
            by_kind[r][k] = m * ex[k]
        exposed_mb.append(sum(ex.values()))
        t_mb.append(compute[r] + exposed_mb[-1])
    # the pipeline
    if p == 1:
        pipe = m * t_mb[0]
    elif mode == "bound":
        pipe = max(m * t_mb[r] + fill[r] + drain[r] for r in range(p))
    elif ing.schedule in ("gpipe", "1f1b", "interleaved"):
        pipe = (m + (p - 1) / v) * max(t_mb) + 2 * (p - 1) * hop
    else:
        scaled = []
        for k, c in enumerate(ing.chunks):
            f, i, w, _ = times[k]
            g = t_mb[c.gpu] / compute[c.gpu] if compute[c.gpu] else 1.0
            scaled.append((f * g, i * g, w * g))
        pipe = _simulate(ing.schedule, p, m, v, tuple(scaled), hop)
    # the data-parallel collectives of the step, in their windows
    dp_exposed = []
    for r in range(p):
        if mode == "bound" or "dp" in overlap:
            dp_exposed.append(max(0.0, red[r] - bwd[r] - drain[r]) + max(0.0, ag[r] - fwd[r] - fill[r]))
        else:
            dp_exposed.append(red[r] + ag[r])
    busiest = max(range(p), key=lambda r: (t_mb[r], -r))
    optimizer = 0.0 if mode == "bound" else max(ing.opt_bytes) / ing.memory_bandwidth
    step = pipe + max(dp_exposed) + optimizer
    link_bound = 0.0
    if mode == "bound":
        link_bound = max(max(link_up), max(link_out))
        step = max(step, link_bound)
    for r in range(p):
        by_kind[r]["dp"] += dp_exposed[r]
    # the breakdown is the step's: its data-parallel part is the stage whose reduction the step
    # waits for, which need not be the busiest stage (a lighter stage with more parameters)
    by_kind[busiest]["dp"] += max(dp_exposed) - dp_exposed[busiest]
    hw = sum(
        (3 * (c.linear + c.scores + c.values + c.head)
         + ((c.linear + c.scores + c.values) if c.full else 0)
         + (c.scores + c.values if (not c.full and ing.recompute == "selective"
                                    and not (mode == "predicted" and ing.flash)) else 0)
         + (c.scores if mode == "predicted" and ing.flash else 0))
        for c in ing.chunks) * m * ing.dp_total
    n_peak = ing.n_gpus * ing.peak
    return {
        "mode": mode,
        "step": step,
        "compute": m * compute[busiest],
        "bubble": pipe - m * t_mb[busiest],
        "exposed_communication": _clean(step - pipe - optimizer + m * exposed_mb[busiest], step),
        "exposed": by_kind[busiest] if mode == "predicted" else {},
        "optimizer": optimizer,
        "dp_exposed": max(dp_exposed),
        "link_bound": link_bound,
        "tokens_per_second": ing.tokens / step,
        "model_flops": ing.model_flops,
        "hardware_flops": hw,
        "mfu": ing.model_flops / (n_peak * step),
        "hfu": hw / (n_peak * step),
        "mfu_convention": MFU_CONVENTION,
    }


# ---------------------------------------------------------------------------------------------
# the public step time
# ---------------------------------------------------------------------------------------------


def _check_overlap(overlap: Any) -> tuple[str, ...]:
    if not isinstance(overlap, tuple) or any(k not in OVERLAP_KINDS for k in overlap):
        raise ValueError(f"overlap must be a tuple of kinds from {OVERLAP_KINDS}, got {overlap!r}")
    return overlap


def _efficiencies(spec: Accelerator, precision: str, attention_kernel: str, mode: str, efficiency: float | None,
                  link_efficiency: float | tuple[float, float] | None) -> tuple[_Eff, dict[str, Any]]:
    if mode == "bound":
        if efficiency is not None or link_efficiency is not None:
            raise ValueError("mode='bound' runs kernels at peak and links at nominal bandwidth: "
                             "efficiency and link_efficiency belong to mode='predicted'")
        return _Eff(1.0, 1.0, 1.0, 1.0, 1.0), {"matmul": 1.0, "matmul_16bit": 1.0, "attention": 1.0,
                                               "scale_up": 1.0, "scale_out": 1.0,
                                               "source": "peak and nominal bandwidth (a lower bound)"}
    from .calibration import calibrated_efficiencies

    cal = calibrated_efficiencies(spec, precision, attention_kernel)
    k, h, a, up, out = cal["matmul"], cal["matmul_16bit"], cal["attention"], cal["scale_up"], cal["scale_out"]
    source = cal["source"]
    if efficiency is not None:
        e = check_positive("efficiency", efficiency)
        if e > 1:
            raise ValueError(f"efficiency must lie in (0, 1], got {e}")
        k = h = a = e
        source = f"kernels at {e:.3g} of peak (given); links {cal['source']}"
    if link_efficiency is not None:
        pair = link_efficiency if isinstance(link_efficiency, tuple) else (link_efficiency, link_efficiency)
        if len(pair) != 2:
            raise ValueError(f"link_efficiency must be a number or (scale_up, scale_out), got {link_efficiency!r}")
        up, out = (check_positive(f"link_efficiency[{i}]", x) for i, x in enumerate(pair))
        if up > 1 or out > 1:
            raise ValueError(f"link_efficiency must lie in (0, 1], got {link_efficiency!r}")
        source += "; links at the given efficiency"
    return _Eff(k, h, a, up, out), {"matmul": k, "matmul_16bit": h, "attention": a, "scale_up": up,
                                    "scale_out": out, "calibrated": cal["calibrated"], "source": source}


def _default_attention_kernel(spec: Accelerator) -> str:
    """The fused kernel calibrated for the accelerator's generation (cuDNN's first), else cuDNN's."""
    from .calibration import attention_key, stored_calibration

    kernels = stored_calibration()["kernel"]
    return next((k for k in ("cudnn", "flash2") if attention_key(spec, k) in kernels), "cudnn")


def step_time(
    cfg: TransformerConfig, layout: Layout, seq: int, gpu: str | Accelerator, *, mode: str = "predicted",
    efficiency: float | None = None, link_efficiency: float | tuple[float, float] | None = None,
    precision: str = "bf16_tensor", overlap: tuple[str, ...] | None = None, flash_attention: bool = True,
    state_precision: str = "mixed", bytes_per_value: int = 2, sp_saves_gathered: bool = False,
    optimizer: str = "adam", attention_kernel: str | None = None, cp_style: str = "all_gather",
    tp_algorithm: str = "ring", dp_algorithm: str = "ring", ep_dispatch: str = "all_to_all",
    max_nodes: int | None = None,
) -> dict[str, Any]:
    """Seconds of one training step of ``cfg`` split by ``layout`` on accelerators ``gpu``, in one
    of :data:`MODES` (see the module docstring for every term and overlap window).

    ``mode="bound"``: a lower bound on the step of this layout (kernels at the peak of
    ``precision``, links at nominal bandwidth, no latency, every possible overlap).
    ``mode="predicted"``: kernels and links at the efficiencies fitted to published runs
    (:func:`llmmath.calibration.calibrated_efficiencies`; ``efficiency`` overrides the kernels',
    ``link_efficiency`` the links', one number or ``(scale_up, scale_out)``), the overlaps in
    ``overlap`` (default :data:`PREDICTED_OVERLAP`). ``flash_attention``: a fused attention kernel
    (``predicted`` counts its recomputed scores; ``bound`` never needs them); ``attention_kernel``
    (:data:`ATTENTION_KERNELS`; default with ``flash_attention`` the fused kernel calibrated for the
    accelerator's generation, ``cudnn`` first, else ``eager``) picks the attention kernel's
    calibrated efficiency. ``cp_style``, ``tp_algorithm``, ``dp_algorithm``, ``ep_dispatch`` and
    ``max_nodes`` choose the collectives (:func:`llmmath.parallel.step_collectives`: context
    parallelism's exchanges, in-switch all-reduces, the hierarchical node-limited expert dispatch,
    with the accelerator's scale-up domain as the node).
    Returns ``mode``, ``step`` (seconds), ``compute``, ``bubble`` and ``exposed_communication`` of the
    slowest pipeline GPU (``exposed``: by kind, ``predicted`` only, with the data-parallel time the
    step waits for, which may be another stage's), ``dp_exposed`` (the
    data-parallel collectives of the step that do not hide, on the GPU where most stays exposed),
    ``optimizer``, ``link_bound``
    (``bound``: the busiest link's seconds), ``tokens_per_second``, ``model_flops``,
    ``hardware_flops``, ``mfu`` and ``hfu`` (both over ``n_gpus x peak x step``, :data:`MFU_CONVENTION`),
    ``efficiency`` (the constants used and their source). Derived in chapter
    :doc:`/chapters/parallelism`.
    """
    cfg, layout = _check_cfg(cfg), _check_layout_type(layout)
    s = check_int("seq", seq)
    check_layout(cfg, layout, s)
    if layout.zero_stage == 3 and layout.pp > 1:
        raise ValueError("zero_stage=3 with pp > 1 is not modelled: DeepSpeed refuses it, and what torchtitan runs "
                         "(FSDP without resharding between micro-batches) has ZeRO-1/2's communication: "
                         "use zero_stage=1 or 2")
    spec = accelerator(gpu)
    check_choice("mode", mode, MODES)
    gpu_peak_flops(spec, precision)
    check_choice("state_precision", state_precision, _COMM_BYTES)
    flash = check_bool("flash_attention", flash_attention)
    B = check_int("bytes_per_value", bytes_per_value)
    sp_g = check_bool("sp_saves_gathered", sp_saves_gathered)
    if overlap is None:
        overlap = PREDICTED_OVERLAP
    overlap = _check_overlap(overlap)
    if mode == "bound" and overlap != PREDICTED_OVERLAP:
        raise ValueError("mode='bound' takes every possible overlap: overlap belongs to mode='predicted'")
    if attention_kernel is None:
        attention_kernel = _default_attention_kernel(spec) if flash else "eager"
    check_choice("attention_kernel", attention_kernel, ATTENTION_KERNELS)
    if attention_kernel == "eager" and flash:
        raise ValueError("attention_kernel='eager' is not a fused kernel: pass flash_attention=False")
    eff, used = _efficiencies(spec, precision, attention_kernel, mode, efficiency, link_efficiency)
    comm = (check_choice("cp_style", cp_style, CP_STYLES), tp_algorithm, dp_algorithm, ep_dispatch, max_nodes)
    ing = _ingredients(cfg, layout, s, spec, precision, state_precision, B, sp_g, flash, optimizer, comm)
    out = _assemble(ing, eff, mode, overlap)
    out["efficiency"] = used
    return out


def dp_hiding_tokens(
    n_params: float, gpu: str | Accelerator, *, n: int | None = None, zero_stage: int = 0,
    grad_bytes: int = 2, param_bytes: int = 2, link: str = "scale_out", precision: str = "bf16_tensor",
    window: float = 2 / 3, flops_per_param_token: float = 6,
) -> float:
    """Tokens ``T`` that one data-parallel replica (one GPU with pure data parallelism) must process
    in the micro-batch whose passes hide its data-parallel collectives, each in its window (see the
    module docstring): the gradient reduction behind the backward of the LAST micro-batch (a share
    ``window = 2/3`` of its ``k N T`` FLOPs; with gradient accumulation the earlier micro-batches'
    backwards cannot hide it), the parameter all-gathers behind a forward (``1 - window``). ``T`` is
    the largest ``bytes x peak / (share x k N W)`` over the windows. Per GPU, with ``n`` the group
    (``None``: ``(n-1)/n -> 1``): ZeRO-0 all-reduces ``2 N g`` in the backward; ZeRO-1/2
    reduce-scatter ``N g`` in the backward and all-gather ``N p`` in the next forward; ZeRO-3 (per
    micro-batch) all-gathers ``N p`` in the forward and ``N p`` + reduce-scatters ``N g`` in the
    backward. With ``p = g`` every stage needs the same ``T = g peak / (2 W)``: ZeRO-3 hides under as
    many tokens as plain data parallelism. ``N`` cancels, and so do tensor and pipeline parallelism.
    Derived in chapter :doc:`/chapters/parallelism`.
    """
    N = check_positive("n_params", n_params)
    spec = accelerator(gpu)
    z = check_int("zero_stage", zero_stage, minimum=0, maximum=3)
    g, p = check_int("grad_bytes", grad_bytes), check_int("param_bytes", param_bytes)
    w = check_positive("window", window)
    if w >= 1:
        raise ValueError(f"window (the backward's share of the FLOPs) must lie in (0, 1), got {w}")
    k = check_positive("flops_per_param_token", flops_per_param_token)
    check_choice("link", link, ("scale_up", "scale_out"))
    frac = 1.0 if n is None else (check_int("n", n) - 1) / n
    chosen = spec.scale_up if link == "scale_up" else spec.scale_out
    if chosen is None:
        raise ValueError(f"gpu {spec.name!r} has no {link} link in llmmath.hardware")
    backward = {0: 2 * g, 1: g, 2: g, 3: p + g}[z]
    forward = 0 if z == 0 else p
    rate = gpu_peak_flops(spec, precision) / (k * N * chosen.bandwidth)
    return max(frac * N * backward * rate / w, frac * N * forward * rate / (1 - w))


# ---------------------------------------------------------------------------------------------
# the search
# ---------------------------------------------------------------------------------------------


class Plan(NamedTuple):
    """One candidate of :func:`search_layouts`: the ``layout``, the bytes of its most loaded GPU
    (``memory``), whether they fit (``fits``: at most the usable memory), its predicted ``step``
    seconds and ``mfu``, and the ``bound`` step (:func:`step_time`, both modes)."""

    layout: Layout
    memory: int
    fits: bool
    step: float
    mfu: float
    bound: float = math.nan


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def search_layouts(
    cfg: TransformerConfig, n_gpus: int, gpu: str | Accelerator, seq: int, global_batch: int, *,
    tp: tuple[int, ...] | None = None, pp: tuple[int, ...] | None = None, cp: tuple[int, ...] = (1,),
    ep: tuple[int, ...] | None = None, zero_stages: tuple[int, ...] = (1,),
    recompute: tuple[str, ...] = RECOMPUTE_MODES, microbatch_sizes: tuple[int, ...] = (1, 2, 4),
    virtual_stages: tuple[int, ...] = (1,), sequence_parallel: bool = True,
    usable_memory: float = 1 - MEMORY_RESERVE, **kwargs: Any,
) -> list[Plan]:
    """Every layout of ``n_gpus`` GPUs for ``global_batch`` sequences of ``seq`` tokens, with its
    memory (:func:`llmmath.parallel.memory_per_gpu`) and its predicted and bound step
    (:func:`step_time`), best first: the layouts that fit (``memory <= usable_memory x gpu
    memory``; by default the memory less :data:`llmmath.sharding.MEMORY_RESERVE`, the CUDA context,
    NCCL's buffers and fragmentation) by predicted step time, then the others by memory.

    Enumerated: ``tp`` (default the powers of two up to the scale-up domain), ``pp`` (default the
    divisors of ``n_layers`` and the powers of two, up to ``n_gpus``; layers split by
    :func:`llmmath.parallel.balanced_stage_layers` when ``pp`` does not divide them), ``cp``,
    ``ep`` (default the divisors of ``n_experts`` for a mixture of experts), ZeRO stages (ZeRO-3
    only without pipeline parallelism, see the module docstring), recomputation modes, micro-batch
    sizes and virtual stages; ``dp = n_gpus / (tp pp cp)`` and ``microbatches = global_batch / (dp
    b)`` must be integers, the schedule is 1F1B (interleaved when ``virtual_stages > 1``).
    Combinations that :func:`llmmath.parallel.check_layout` rejects are skipped (and interleaving
    with ``pp = 1``, the same layout as 1F1B). Keyword arguments go to both estimates
    (``precision`` of the optimizer state as ``state_precision`` in :func:`step_time`,
    ``peak_precision`` as its ``precision``; ``flash_attention``, ``efficiency``, ``cp_style``, ...;
    ``optimizer_bytes_per_value``, ``parameter_copies`` and ``zero3_prefetch`` to the memory only,
    ``ep_dispatch``, ``max_nodes``, ``tp_algorithm``, ``dp_algorithm`` to the step times only).
    Derived in chapter :doc:`/chapters/parallelism`.
    """
    cfg = _check_cfg(cfg)
    n, s, batch = check_int("n_gpus", n_gpus), check_int("seq", seq), check_int("global_batch", global_batch)
    spec = accelerator(gpu)
    usable = check_positive("usable_memory", usable_memory)
    tps = tp or tuple(2**i for i in range(8) if 2**i <= spec.domain_size)
    pps = pp or tuple(sorted({d for d in _divisors(cfg.n_layers) if d <= n}
                             | {2**i for i in range(1, 12) if 2**i <= min(n, cfg.n_layers)}))
    eps = ep or (tuple(_divisors(cfg.n_experts)) if cfg.is_moe else (1,))
    memory_only = ("optimizer_bytes_per_value", "parameter_copies", "zero3_prefetch")
    mem_kw = {k: kwargs[k] for k in ("precision", "optimizer", "flash_attention", "dropout", "bytes_per_value",
                                     "cp_style", *memory_only) if k in kwargs}
    time_kw = {k: v for k, v in kwargs.items()
               if k not in ("precision", "optimizer", "dropout", "peak_precision", *memory_only)}
    if "precision" in kwargs:
        time_kw["state_precision"] = kwargs["precision"]
    if "peak_precision" in kwargs:
        time_kw["precision"] = kwargs["peak_precision"]
    bound_kw = {k: v for k, v in time_kw.items() if k not in ("efficiency", "link_efficiency", "overlap")}
    plans: list[Plan] = []
    for t in tps:
        for p in pps:
            for c in cp:
                if n % (t * p * c):
                    continue
                d = n // (t * p * c)
                for e in eps:
                    for b in microbatch_sizes:
                        if d % e or batch % (d * b):
                            continue
                        m = batch // (d * b)
                        for v in virtual_stages:
                            if v > 1 and p == 1:  # interleaving one stage is the same layout
                                continue
                            for z in zero_stages:
                                if z == 3 and p > 1:
                                    continue
                                for rec in recompute:
                                    try:
                                        layout = Layout(tp=t, pp=p, dp=d, cp=c, ep=e, zero_stage=z,
                                                        sequence_parallel=sequence_parallel and t > 1,
                                                        recompute=rec, microbatch_size=b, microbatches=m,
                                                        schedule="interleaved" if v > 1 else "1f1b",
                                                        virtual_stages=v,
                                                        stage_layers=balanced_stage_layers(cfg.n_layers, p * v))
                                        check_layout(cfg, layout, s)
                                    except ValueError:
                                        continue
                                    mem = memory_per_gpu(cfg, layout, s, **mem_kw)["total"]
                                    est = step_time(cfg, layout, s, spec, mode="predicted", **time_kw)
                                    low = step_time(cfg, layout, s, spec, mode="bound", **bound_kw)
                                    plans.append(Plan(layout, mem, mem <= usable * spec.memory_bytes,
                                                      est["step"], est["mfu"], low["step"]))
    return sorted(plans, key=lambda pl: (not pl.fits, pl.step if pl.fits else pl.memory))


# the public names of the pipeline schedules, for the docs of :data:`llmmath.parallel.SCHEDULES`
assert set(_SPLIT_BACKWARD) <= set(SCHEDULES) and set(PARALLELISMS) >= set(OVERLAP_KINDS) - {"dp"}
_ = dataclasses
