"""Splitting a training step across GPUs: collectives, per-GPU memory, communication, pipeline
bubbles, step time, and a search over layouts.

A *layout* (:class:`Layout`) fixes the degrees of the five kinds of parallelism: tensor ``t``
(``tp``), pipeline ``p`` (``pp``), data ``d`` (``dp``), context ``c`` (``cp``) and expert ``e``
(``ep``, a subgroup of the data-parallel ranks); the GPU count is ``n = t p d c``. Every function
below is a formula or a counting procedure over what one GPU holds and sends; the conventions are
Megatron-LM's (Shoeybi et al. 2019, Narayanan et al. 2021, Korthikanti et al. 2023) unless a
docstring says otherwise. Bytes are exact integers where the count is exact; times are floats.
Derived in chapter :doc:`/chapters/parallelism`.

Symbols: ``M`` message bytes, ``n`` group size, ``alpha`` link latency, ``beta`` link bandwidth
(bytes/s per direction), ``b`` micro-batch (sequences), ``m`` micro-batches per step, ``s``
sequence length, ``v`` virtual pipeline stages per GPU, ``P`` parameters.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Any, NamedTuple

from ._validate import check_bool, check_choice, check_int, check_positive
from .config import LayerSpec, TransformerConfig
from .hardware import Accelerator, Link, accelerator, gpu_peak_flops
from .memory import RECOMPUTE_MODES, activation_bytes, training_state_bytes
from .optim import OPTIMIZERS

__all__ = [
    "COLLECTIVES",
    "COLLECTIVE_ALGORITHMS",
    "LINKS",
    "SCHEDULES",
    "V_SCHEDULES",
    "PARALLELISMS",
    "MEMORY_KEYS",
    "collective_bytes",
    "collective_steps",
    "collective_seconds",
    "collective_link_seconds",
    "Layout",
    "check_layout",
    "fsdp_shard_numel",
    "pipeline_stage_layers",
    "chunk_gpu",
    "stage_param_counts",
    "pipeline_bubble_fraction",
    "pipeline_in_flight",
    "stage_activation_bytes",
    "memory_per_stage",
    "memory_per_gpu",
    "Collective",
    "TP_PLANS",
    "CP_STYLES",
    "tp_backward_allreduces",
    "EP_DISPATCH",
    "step_collectives",
    "communication_bytes",
    "communication_seconds",
    "tp_comm_compute_ratio",
    "tp_layer_comm_ratio",
    "balanced_stage_layers",
    "embedding_loss_stage_layers",
]

#: Collectives, as PyTorch names them (``p2p``: one send of a point-to-point pair).
COLLECTIVES: tuple[str, ...] = ("all_reduce", "reduce_scatter", "all_gather", "all_to_all", "p2p")
#: Algorithms of :func:`collective_bytes`: the bandwidth-optimal ``ring`` (for an all-to-all: every
#: peer send posted at once, as NCCL's grouped send/receive and DeepEP run it), the (double binary)
#: ``tree`` NCCL uses for all-reduce at scale, the in-switch reductions ``nvls`` (NVLink SHARP: the
#: NVSwitch adds the partial sums, Hopper and later) and ``sharp`` (InfiniBand SHARP: the network
#: switches add them), both all-reduce only, and ``pairwise`` (an all-to-all as ``n-1`` sequential
#: exchange steps).
COLLECTIVE_ALGORITHMS: tuple[str, ...] = ("ring", "tree", "nvls", "sharp", "pairwise")
#: The kinds each algorithm other than ``ring`` is defined for.
_ALGORITHM_KINDS = {"tree": ("all_reduce",), "nvls": ("all_reduce",), "sharp": ("all_reduce",),
                    "pairwise": ("all_to_all",)}
#: Which interconnect a group uses: ``auto`` (the scale-up domain when the group fits in one),
#: ``scale_up`` (NVLink/NVSwitch, ICI) or ``scale_out`` (InfiniBand/RoCE).
LINKS: tuple[str, ...] = ("auto", "scale_up", "scale_out")
#: Pipeline schedules: GPipe (all forwards, then all backwards), 1F1B (PipeDream-Flush),
#: interleaved 1F1B with ``virtual_stages`` model chunks per GPU (Narayanan et al. 2021), and the
#: zero-bubble schedules PyTorch ships, which split each backward into an input-gradient part
#: (``I``) and a weight-gradient part (``W``) that can fill the bubble: ``interleaved_zb``
#: (``ScheduleInterleavedZeroBubble``, ZB1P), ``zbv`` (``ScheduleZBVZeroBubble``) and
#: ``dualpipev`` (``ScheduleDualPipeV``); the last two place two chunks per GPU in a V.
SCHEDULES: tuple[str, ...] = ("gpipe", "1f1b", "interleaved", "interleaved_zb", "zbv", "dualpipev")
#: The schedules whose chunks are placed in a V (GPU ``r`` holds chunks ``r`` and ``2p-1-r``).
V_SCHEDULES: tuple[str, ...] = ("zbv", "dualpipev")
#: The kinds of parallelism, innermost first: the order in which the ranks of a job are numbered
#: (Megatron-LM's tp-cp-ep-dp-pp), so ``tp`` groups are consecutive GPUs.
PARALLELISMS: tuple[str, ...] = ("tp", "cp", "ep", "dp", "pp")
#: Keys of :func:`memory_per_gpu` (and of each entry of :func:`memory_per_stage`), bytes.
MEMORY_KEYS: tuple[str, ...] = (
    "parameters", "gradients", "master_weights", "master_gradients", "optimizer_states", "gathered", "activations",
    "total",
)

# parameters, gradients (bytes per value) that travel in the data-parallel collectives, by precision
_COMM_BYTES = {"fp32": (4, 4), "mixed": (2, 2), "mixed-fp32-grads": (2, 4), "mixed-fp32-main-grads": (2, 4)}
_FP32 = 4


# ---------------------------------------------------------------------------------------------
# collectives
# ---------------------------------------------------------------------------------------------


def _check_collective(kind: str, n: int, algorithm: str) -> tuple[str, int, str]:
    check_choice("kind", kind, COLLECTIVES)
    n = check_int("n", n)
    check_choice("algorithm", algorithm, COLLECTIVE_ALGORITHMS)
    if algorithm in _ALGORITHM_KINDS and kind not in _ALGORITHM_KINDS[algorithm]:
        raise ValueError(f"algorithm={algorithm!r} is defined for kind={_ALGORITHM_KINDS[algorithm][0]!r} only, "
                         f"got kind={kind!r}")
    if kind == "p2p" and n != 2:
        raise ValueError(f"a p2p transfer involves n=2 GPUs (a sender and a receiver), got n={n}")
    return kind, n, algorithm


def _check_bytes(name: str, value: Any) -> float:
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"{name} must be >= 0, got {value}")
        return value
    return check_positive(name, value, allow_zero=True)


def collective_bytes(kind: str, n: int, message_bytes: float, algorithm: str = "ring") -> float:
    """Bytes each of the ``n`` GPUs sends (and, by symmetry, receives) in one collective.

    ``M = message_bytes`` is the size of the whole tensor: the one being summed (all-reduce), the
    input of a reduce-scatter, the output of an all-gather, one GPU's send buffer of an
    all-to-all (``n`` chunks of ``M/n``, one per GPU, its own included). Ring algorithm:

    - all-reduce ``2 (n-1)/n M`` (a reduce-scatter followed by an all-gather);
    - reduce-scatter, all-gather and all-to-all ``(n-1)/n M`` (each GPU passes on ``n-1`` chunks
      of ``M/n``; in the all-to-all it sends its ``n-1`` foreign chunks directly);
    - p2p ``M`` (``n = 2``).

    ``algorithm="tree"`` (all-reduce only, NCCL's double binary tree): ``2M``, the same volume to
    within ``2M/n``; what a tree changes is the number of latency steps
    (:func:`collective_steps`). A hierarchical all-reduce over ``N`` nodes of ``g`` GPUs
    (reduce-scatter in the node, all-reduce across nodes on ``M/g``, all-gather in the node) moves
    only ``2 (N-1)/N M/g`` per GPU over the slow links.

    In-switch reduction beats the ring's ``2 (n-1)/n M``, which is the least a GPU must send when
    the GPUs themselves add: ``nvls`` (NVLink SHARP) ``(n+1)/n M`` (each GPU's buffer is read once
    into the switch, which adds; the GPU stores its reduced slice ``M/n``, which the switch
    multicasts; the serving chapter's :func:`llmmath.allreduce_cost` counts it so), ``sharp``
    (InfiniBand SHARP) ``M`` (up the switch tree once, the sum down once); they send less than the
    ring from ``n = 4`` and ``n = 3`` GPUs (at ``n = 2`` the ring's ``M`` ties with ``sharp``). ``pairwise`` moves the
    all-to-all's bytes in ``n-1`` steps. Derived in chapter :doc:`/chapters/parallelism`.
    """
    kind, n, algorithm = _check_collective(kind, n, algorithm)
    M = _check_bytes("message_bytes", message_bytes)
    if kind == "p2p":
        return float(M)
    if n == 1:
        return 0.0
    if algorithm == "tree":
        return 2.0 * M
    if algorithm == "nvls":
        return (n + 1) * M / n
    if algorithm == "sharp":
        return float(M)
    factor = 2 if kind == "all_reduce" else 1
    return factor * (n - 1) * M / n


def collective_steps(kind: str, n: int, algorithm: str = "ring") -> int:
    """Sequential message steps of one collective (each pays the link's latency ``alpha`` once).

    Ring: all-reduce ``2(n-1)``; reduce-scatter, all-gather ``n-1``; p2p 1. All-to-all: 1, every
    send to the ``n-1`` peers posted at once (NCCL's grouped send/receive, DeepEP), or ``n-1`` with
    ``pairwise`` exchange. Tree all-reduce: ``2 ceil(log2 n)`` (up the tree and down again);
    in-switch all-reduce (``nvls``, ``sharp``): 2 (into the switch, and back). Derived in chapter
    :doc:`/chapters/parallelism`.
    """
    kind, n, algorithm = _check_collective(kind, n, algorithm)
    if kind == "p2p":
        return 1
    if n == 1:
        return 0
    if algorithm == "tree":
        return 2 * math.ceil(math.log2(n))
    if algorithm in ("nvls", "sharp"):
        return 2
    if kind == "all_to_all":
        return n - 1 if algorithm == "pairwise" else 1
    return (2 if kind == "all_reduce" else 1) * (n - 1)


def _link(gpu: Accelerator, link: str, span: int) -> Link:
    """The interconnect of a group whose ranks span ``span`` consecutive GPUs."""
    check_choice("link", link, LINKS)
    if link == "auto":
        link = "scale_up" if span <= gpu.domain_size else "scale_out"
    if link == "scale_up" and span > gpu.domain_size:
        raise ValueError(f"link='scale_up' needs the group ({span} GPUs) to fit in one scale-up domain of "
                         f"{gpu.domain_size} GPUs of {gpu.name}")
    chosen = gpu.scale_up if link == "scale_up" else gpu.scale_out
    if chosen is None:
        raise ValueError(f"gpu {gpu.name!r} has no {link} link in llmmath.hardware")
    return chosen


def collective_seconds(
    kind: str, n: int, message_bytes: float, gpu: str | Accelerator, *, link: str = "auto",
    algorithm: str = "ring", span: int | None = None,
) -> float:
    """Time of one collective under the latency-bandwidth (alpha-beta) model:
    ``steps * alpha + bytes / W`` with ``steps`` from :func:`collective_steps`, ``bytes`` from
    :func:`collective_bytes` and the link's per-direction bandwidth ``W`` (full duplex: sending
    and receiving overlap).

    ``link="auto"`` places the group's ``n`` GPUs evenly over ``span`` consecutive GPUs (default
    ``n``: neighbours). If they fit in one scale-up domain of ``gpu``, everything runs on the
    scale-up link (NVLink). If each domain holds one of them, everything crosses the scale-out
    network, each GPU on its own NIC. If each domain holds ``k > 1`` of them, only part of a GPU's
    bytes leaves its domain: ``1/k`` for a ring collective (NCCL runs ``k`` rings whose
    domain-crossing hops start from different GPUs; a hierarchical algorithm moves about as much),
    ``(n-k)/(n-1)`` for an all-to-all (the chunks for GPUs of other domains); the two links work
    in parallel and the slower share sets the time, with the scale-out latency per step.
    ``link="scale_up"`` or ``"scale_out"`` forces one link for all bytes.

    ``algorithm="nvls"`` runs in one scale-up domain whose switch reduces (Hopper and later:
    :func:`llmmath.allreduce_algorithms`); ``"sharp"`` reduces in the scale-out switches, so its group
    spans domains: with ``k`` GPUs per domain NCCL reduce-scatters in the domain (``(k-1)/k M`` on the
    scale-up link each way), all-reduces its ``M/k`` slice through the switches and all-gathers in the
    domain again (``2 (k-1)/k M`` scale-up, ``M/k`` scale-out per GPU).
    Derived in chapter :doc:`/chapters/parallelism`.
    """
    latency, up, out = collective_link_seconds(kind, n, message_bytes, gpu, link=link, algorithm=algorithm,
                                               span=span)
    return latency + max(up, out)


def collective_link_seconds(
    kind: str, n: int, message_bytes: float, gpu: str | Accelerator, *, link: str = "auto",
    algorithm: str = "ring", span: int | None = None,
) -> tuple[float, float, float]:
    """The three parts of :func:`collective_seconds`: ``(latency, scale_up, scale_out)`` seconds,
    the ``steps * alpha`` of the link that sets the pace and the seconds each link is busy moving
    its share of the bytes (one of them 0 unless the group straddles scale-up domains). The
    collective takes ``latency + max(scale_up, scale_out)``; a link cannot carry two collectives'
    bytes at once, which is what bounds a step from below (:func:`llmmath.steptime.step_time`).
    Derived in chapter :doc:`/chapters/parallelism`.
    """
    spec = accelerator(gpu)
    span = n if span is None else check_int("span", span, minimum=n)
    steps, sent = collective_steps(kind, n, algorithm), collective_bytes(kind, n, message_bytes, algorithm)
    check_choice("link", link, LINKS)
    per_domain = max(1, min(n, spec.domain_size * n // span))
    if algorithm in ("nvls", "sharp") and n > 1:
        return _in_switch_seconds(spec, algorithm, n, float(message_bytes), span, per_domain, link)
    if link != "auto" or span <= spec.domain_size or per_domain == 1 or kind == "p2p":
        chosen = _link(spec, link, span)
        busy = sent / chosen.bandwidth
        on_up = chosen is spec.scale_up and (link == "scale_up" or span <= spec.domain_size)
        return steps * chosen.latency, (busy if on_up else 0.0), (0.0 if on_up else busy)
    up, out = _link(spec, "scale_up", spec.domain_size), _link(spec, "scale_out", span)
    share = (n - per_domain) / (n - 1) if kind == "all_to_all" else 1 / per_domain
    return steps * out.latency, sent * (1 - share) / up.bandwidth, sent * share / out.bandwidth


def _in_switch_seconds(spec: Accelerator, algorithm: str, n: int, M: float, span: int, per_domain: int,
                       link: str) -> tuple[float, float, float]:
    """:func:`collective_link_seconds` of an in-switch all-reduce (``nvls`` or ``sharp``)."""
    from .inference import _IN_SWITCH_REDUCTION, _gpu_key

    if algorithm == "nvls":
        if span > spec.domain_size or link == "scale_out":
            raise ValueError(f"algorithm='nvls' reduces in the NVSwitch of one scale-up domain: the group ({span} "
                             f"GPUs) must fit in the {spec.domain_size} GPUs of a {spec.name} domain")
        if _gpu_key(spec) not in _IN_SWITCH_REDUCTION:
            raise ValueError(f"algorithm='nvls' needs a switch that reduces (NVLink SHARP, Hopper and later); "
                             f"the {spec.name} has none")
        up = _link(spec, "scale_up", span)
        return 2 * up.latency, collective_bytes("all_reduce", n, M, "nvls") / up.bandwidth, 0.0
    if span <= spec.domain_size or link == "scale_up":
        raise ValueError("algorithm='sharp' reduces in the scale-out switches: the group must span more than one "
                         f"scale-up domain ({spec.domain_size} GPUs of a {spec.name}); use 'nvls' inside one")
    out = _link(spec, "scale_out", span)
    if per_domain == 1 or link == "scale_out":
        return 2 * out.latency, 0.0, M / out.bandwidth
    up = _link(spec, "scale_up", spec.domain_size)
    k = per_domain
    return (2 * (k - 1) * up.latency + 2 * out.latency, 2 * (k - 1) / k * M / up.bandwidth,
            M / k / out.bandwidth)


# ---------------------------------------------------------------------------------------------
# the layout
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """How one training step is split: the degrees of tensor (``tp``), pipeline (``pp``), data
    (``dp``), context (``cp``) and expert (``ep``) parallelism, and the recipe that changes what
    each GPU holds.

    - ``zero_stage`` 0-3: ZeRO's sharding of optimizer states (1), gradients (2) and parameters
      (3, FSDP) over the ``dp * cp`` data-parallel ranks;
    - ``sequence_parallel``: the norms and dropouts between the tensor-parallel regions split the
      sequence over the ``tp`` ranks (Korthikanti et al.);
    - ``recompute``: ``none``, ``selective`` (the attention core) or ``full`` (every layer);
    - ``microbatch_size`` sequences per micro-batch and ``microbatches`` per step and data-parallel
      rank (the global batch is ``dp * microbatch_size * microbatches`` sequences);
    - ``schedule`` (:data:`SCHEDULES`) and ``virtual_stages`` (model chunks per GPU, interleaved
      schedule only);
    - ``stage_layers``: the layers of each pipeline stage (``pp * virtual_stages`` entries, stage
      ``i`` on GPU ``i mod pp``, or in a V for the V schedules); empty means an even split;
    - ``scatter_gather``: Megatron-LM's scatter/gather optimisation (Narayanan et al. 2021): each of
      the ``tp`` ranks sends ``1/tp`` of the activations across a pipeline boundary (they are
      re-assembled by an all-gather over the scale-up link, not counted), as sequence parallelism
      does anyway;
    - ``round_size``: the micro-batches ``N`` the interleaved schedule runs through one chunk before
      the next (Megatron-LM's ``microbatch_group_size_per_vp_stage``, which Llama 3 made tunable);
      0 means ``pp``, Megatron-LM's default; ``pp <= N <= m`` and ``N`` divides ``m``;
    - ``shard_group``: ZeRO shards over this many of the data-parallel ranks and replicates the
      shards over the rest (hybrid sharding, HSDP; the gradients of a shard are all-reduced across
      its replicas once per step); 0 means all ``dp * cp`` ranks;
    - ``reshard_after_backward`` (ZeRO-2 only): the parameters are sharded again after each
      micro-batch's backward and all-gathered in the next forward (FSDP's ``SHARD_GRAD_OP``), instead
      of staying whole until the optimizer step (DeepSpeed's ZeRO-2, FSDP2 with
      ``set_reshard_after_backward(False)``);
    - ``expert_tp``: the tensor-parallel degree of the routed experts (Megatron-LM's
      ``expert_tensor_parallel_size``, "MoE parallel folding"); 0 means ``tp``. The experts' weights
      are then replicated over ``tp dp cp / (ep expert_tp)`` ranks (:attr:`expert_dp`), ZeRO's group for
      them;
    - ``capacity_factor`` (>= 1): the routing imbalance, the tokens of the busiest expert-parallel
      rank over the mean (or the capacity of a token-dropping router, padded): its expert compute,
      its expert activations and the all-to-all bytes it receives scale by it.

    ``ep`` divides ``dp`` (the experts of a layer are spread over ``ep`` of the data-parallel
    ranks; each expert is replicated on ``dp * cp / ep`` GPUs). Validated on construction; what
    depends on the model is checked by :func:`check_layout`. Derived in chapter
    :doc:`/chapters/parallelism`.
    """

    tp: int = 1
    pp: int = 1
    dp: int = 1
    cp: int = 1
    ep: int = 1
    zero_stage: int = 0
    sequence_parallel: bool = False
    recompute: str = "none"
    microbatch_size: int = 1
    microbatches: int = 1
    schedule: str = "1f1b"
    virtual_stages: int = 1
    stage_layers: tuple[int, ...] = ()
    scatter_gather: bool = False
    round_size: int = 0
    shard_group: int = 0
    reshard_after_backward: bool = False
    expert_tp: int = 0
    capacity_factor: float = 1.0

    def __post_init__(self) -> None:
        for name in ("tp", "pp", "dp", "cp", "ep", "microbatch_size", "microbatches", "virtual_stages"):
            check_int(name, getattr(self, name))
        check_int("zero_stage", self.zero_stage, minimum=0, maximum=3)
        check_bool("sequence_parallel", self.sequence_parallel)
        check_bool("scatter_gather", self.scatter_gather)
        check_bool("reshard_after_backward", self.reshard_after_backward)
        check_int("round_size", self.round_size, minimum=0)
        check_int("shard_group", self.shard_group, minimum=0)
        if self.round_size and self.schedule != "interleaved":
            raise ValueError(f"round_size is the interleaved schedule's micro-batch group: it needs "
                             f"schedule='interleaved', got {self.schedule!r}")
        if self.shard_group:
            if self.zero_stage == 0:
                raise ValueError("shard_group needs zero_stage >= 1 (it is the group ZeRO shards over)")
            if self.expert_dp % self.shard_group or (self.dp * self.cp) % self.shard_group:
                raise ValueError(f"shard_group={self.shard_group} must divide dp * cp = {self.dp * self.cp} and the "
                                 f"ranks that hold the same experts, {self.expert_dp}")
        if self.reshard_after_backward and self.zero_stage != 2:
            raise ValueError("reshard_after_backward describes ZeRO-2 (FSDP's SHARD_GRAD_OP): it needs zero_stage=2")
        check_choice("recompute", self.recompute, RECOMPUTE_MODES)
        check_choice("schedule", self.schedule, SCHEDULES)
        check_int("expert_tp", self.expert_tp, minimum=0)
        cap = check_positive("capacity_factor", self.capacity_factor)
        if cap < 1:
            raise ValueError(f"capacity_factor is the busiest rank's tokens over the mean: >= 1, got {cap}")
        if self.expert_tp == 0 and self.dp % self.ep:
            raise ValueError(f"ep={self.ep} must divide dp={self.dp} (expert parallelism splits the "
                             "data-parallel ranks)")
        if self.expert_tp and (self.tp * self.dp * self.cp) % (self.ep * self.expert_tp):
            raise ValueError(f"ep * expert_tp = {self.ep * self.expert_tp} must divide tp * dp * cp = "
                             f"{self.tp * self.dp * self.cp} (the experts fold over the same GPUs)")
        _check_schedule(self.pp, self.microbatches, self.schedule, self.virtual_stages, self.round_size)
        if not isinstance(self.stage_layers, tuple):
            raise TypeError(f"stage_layers must be a tuple of ints, got {type(self.stage_layers).__name__}")
        if self.stage_layers:
            if len(self.stage_layers) != self.pp * self.virtual_stages:
                raise ValueError(f"stage_layers must have pp * virtual_stages = {self.pp * self.virtual_stages} "
                                 f"entries, got {len(self.stage_layers)}")
            for i, n in enumerate(self.stage_layers):
                check_int(f"stage_layers[{i}]", n, minimum=0)

    @property
    def n_gpus(self) -> int:
        """``tp * pp * dp * cp``."""
        return self.tp * self.pp * self.dp * self.cp

    @property
    def expert_dp(self) -> int:
        """Ranks that hold the same routed experts: ``tp dp cp / (ep expert_tp)`` (``dp cp / ep`` when
        the experts are split like the rest, ``expert_tp = tp``)."""
        return self.tp * self.dp * self.cp // (self.ep * (self.expert_tp or self.tp))

    @property
    def zero_group(self) -> int:
        """The ranks ZeRO shards the non-expert state over: ``shard_group`` or all ``dp * cp``."""
        return self.shard_group or self.dp * self.cp

    @property
    def global_batch(self) -> int:
        """Sequences per optimizer step, ``dp * microbatch_size * microbatches``."""
        return self.dp * self.microbatch_size * self.microbatches

    @classmethod
    def for_gpus(cls, n_gpus: int, **kwargs: Any) -> Layout:
        """The layout on ``n_gpus`` GPUs whose ``dp`` is what ``tp * pp * cp`` leaves:
        ``dp = n_gpus / (tp pp cp)`` (which must be an integer)."""
        n = check_int("n_gpus", n_gpus)
        if "dp" in kwargs:
            raise TypeError("for_gpus derives dp; pass tp, pp, cp (and the rest) only")
        inner = kwargs.get("tp", 1) * kwargs.get("pp", 1) * kwargs.get("cp", 1)
        if n % inner:
            raise ValueError(f"tp * pp * cp = {inner} must divide n_gpus = {n}")
        return cls(dp=n // inner, **kwargs)

    def replace(self, **changes: Any) -> Layout:
        """A copy with some fields changed (validated again)."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        return Layout(**values)


def _check_schedule(pp: int, microbatches: int, schedule: str, virtual_stages: int, round_size: int = 0) -> None:
    """PyTorch's (and Megatron-LM's) requirements of each schedule on ``pp``, ``m``, ``v`` and ``N``."""
    multi = ("interleaved", "interleaved_zb", "zbv", "dualpipev")
    if virtual_stages > 1 and schedule not in multi:
        raise ValueError(f"virtual_stages={virtual_stages} needs a schedule with several chunks per GPU "
                         f"({', '.join(multi)}), got schedule={schedule!r}")
    if schedule == "1f1b" and microbatches < pp:
        raise ValueError(f"schedule='1f1b' needs microbatches >= pp (PyTorch's Schedule1F1B requires it): "
                         f"microbatches={microbatches}, pp={pp}")
    if schedule == "interleaved" and round_size:
        if not pp <= round_size <= microbatches or microbatches % round_size:
            raise ValueError(f"round_size must lie in [pp, microbatches] = [{pp}, {microbatches}] and divide "
                             f"microbatches, got {round_size}")
    elif schedule == "interleaved" and microbatches % pp:
        raise ValueError(f"schedule='interleaved' needs pp={pp} to divide microbatches={microbatches} "
                         "(Megatron-LM's interleaved schedule; or give round_size)")
    if schedule == "interleaved_zb":
        if virtual_stages < 2:
            raise ValueError("schedule='interleaved_zb' needs virtual_stages >= 2 (PyTorch's "
                             "ScheduleInterleavedZeroBubble runs several chunks per GPU)")
        rounds = max(1, microbatches // pp)
        if microbatches % rounds:
            raise ValueError(f"schedule='interleaved_zb' needs microbatches={microbatches} to be a multiple of "
                             f"its rounds max(1, m // pp) = {rounds} (PyTorch's requirement)")
    if schedule in V_SCHEDULES and virtual_stages != 2:
        raise ValueError(f"schedule={schedule!r} places exactly two chunks per GPU in a V: it needs "
                         f"virtual_stages=2, got {virtual_stages}")
    if schedule == "dualpipev" and microbatches < 2 * pp:
        raise ValueError(f"schedule='dualpipev' needs microbatches >= 2 pp = {2 * pp} (PyTorch's "
                         f"ScheduleDualPipeV requires as many micro-batches as stages), got {microbatches}")


def _check_cfg(cfg: Any) -> TransformerConfig:
    if not isinstance(cfg, TransformerConfig):
        raise TypeError(f"cfg must be a TransformerConfig, got {type(cfg).__name__}")
    return cfg


def _check_layout_type(layout: Any) -> Layout:
    if not isinstance(layout, Layout):
        raise TypeError(f"layout must be a Layout, got {type(layout).__name__}")
    return layout


def check_layout(cfg: TransformerConfig, layout: Layout, seq: int | None = None) -> None:
    """Raise ``ValueError`` if ``layout`` cannot split ``cfg`` (and sequences of ``seq`` tokens).

    Tensor parallelism splits heads, key/value heads and the MLP widths (``tp`` must divide
    ``n_heads``, ``n_kv_heads``, ``ffn_size``, ``expert_ffn_size`` and ``shared_ffn_size``); expert
    parallelism splits the experts (``ep`` divides ``n_experts``) and needs sequence parallelism
    when ``tp > 1`` (Megatron-LM's rule: the token dispatcher takes the sequence shards); the
    pipeline splits the layers (``pp * virtual_stages`` divides ``n_layers`` unless
    ``stage_layers`` says how, and then they sum to ``n_layers``); context parallelism splits the
    sequence into ``2 cp`` chunks (``2 cp`` divides ``seq``, and ``tp`` divides ``seq / cp`` with
    sequence parallelism). Encoder-decoders are not supported. Derived in chapter
    :doc:`/chapters/parallelism`.
    """
    cfg, layout = _check_cfg(cfg), _check_layout_type(layout)
    if cfg.is_encoder_decoder:
        raise ValueError(f"{cfg.name!r} is an encoder-decoder; the parallel layouts cover one stack of layers")
    t = layout.tp
    dims = [("n_heads", cfg.n_heads), ("n_kv_heads", cfg.n_kv_heads), ("ffn_size", cfg.ffn_size)]
    if cfg.is_moe:
        if cfg.shared_ffn_size:
            dims.append(("shared_ffn_size", cfg.shared_ffn_size))
        if cfg.expert_ffn_size % (layout.expert_tp or t):
            name = "expert_tp" if layout.expert_tp else "tp"
            raise ValueError(f"{name}={layout.expert_tp or t} must divide expert_ffn_size={cfg.expert_ffn_size}")
    elif layout.expert_tp or layout.capacity_factor != 1:
        raise ValueError(f"expert_tp and capacity_factor describe experts; {cfg.name!r} has none")
    for name, dim in dims:
        if dim % t:
            raise ValueError(f"tp={t} must divide {name}={dim}")
    if layout.ep > 1:
        if not cfg.is_moe:
            raise ValueError(f"ep={layout.ep} needs a mixture of experts; {cfg.name!r} has none")
        if cfg.n_experts % layout.ep:
            raise ValueError(f"ep={layout.ep} must divide n_experts={cfg.n_experts}")
        if t > 1 and not layout.sequence_parallel:
            raise ValueError("ep > 1 with tp > 1 needs sequence_parallel=True (Megatron-LM's rule)")
    chunks = layout.pp * layout.virtual_stages
    if layout.stage_layers:
        if sum(layout.stage_layers) != cfg.n_layers:
            raise ValueError(f"stage_layers must sum to n_layers={cfg.n_layers}, got {sum(layout.stage_layers)}")
    elif cfg.n_layers % chunks:
        raise ValueError(f"pp * virtual_stages = {chunks} must divide n_layers={cfg.n_layers} "
                         "(or give stage_layers)")
    if seq is not None:
        s = check_int("seq", seq)
        if layout.cp > 1 and s % (2 * layout.cp):
            raise ValueError(f"cp={layout.cp} splits the sequence into 2 cp chunks: 2 * cp must divide seq={s}")
        if layout.sequence_parallel and (s // layout.cp) % t:
            raise ValueError(f"sequence_parallel needs tp={t} to divide seq / cp = {s // layout.cp}")


# ---------------------------------------------------------------------------------------------
# what each GPU holds
# ---------------------------------------------------------------------------------------------


def fsdp_shard_numel(shape: tuple[int, ...], n: int, rank: int | None = None) -> int:
    """Elements of one parameter of ``shape`` that a rank of PyTorch's FSDP2 (``fully_shard``)
    holds: the parameter is cut along dimension 0 into chunks of ``ceil(d0 / n)`` rows
    (``torch.chunk``), so rank ``r`` holds ``min(ceil(d0/n), max(0, d0 - r ceil(d0/n)))`` rows of
    ``prod(shape[1:])`` elements; ``rank=None`` returns the *padded* shard every rank allocates,
    ``ceil(d0/n) prod(shape[1:])``. ZeRO and FSDP1 flatten all parameters first and pad once
    (``ceil(P/n)``, see :func:`llmmath.memory.training_state_bytes`); FSDP2 pads every parameter.
    Derived in chapter :doc:`/chapters/parallelism`.
    """
    if not isinstance(shape, tuple) or not shape:
        raise TypeError(f"shape must be a non-empty tuple of ints, got {shape!r}")
    dims = [check_int(f"shape[{i}]", d) for i, d in enumerate(shape)]
    n = check_int("n", n)
    rest = math.prod(dims[1:])
    chunk = -(-dims[0] // n)
    if rank is None:
        return chunk * rest
    r = check_int("rank", rank, minimum=0, maximum=n - 1)
    return min(chunk, max(0, dims[0] - r * chunk)) * rest


def pipeline_stage_layers(cfg: TransformerConfig, layout: Layout) -> tuple[tuple[int, ...], ...]:
    """The layer indices each of the ``pp`` pipeline GPUs holds, in execution order.

    The ``pp * v`` model chunks take ``stage_layers`` layers each (an even split by default);
    chunk ``k`` lives on GPU ``k mod pp`` (interleaving: GPU 0 holds chunks ``0, pp, 2pp, ...``),
    or, for the V schedules (:data:`V_SCHEDULES`), on GPU ``k`` for ``k < pp`` and ``2 pp - 1 - k``
    after (GPU 0 holds the first and the last chunk). Derived in chapter :doc:`/chapters/parallelism`.
    """
    check_layout(cfg, layout)
    return _stage_layers(cfg.n_layers, layout.pp, layout.virtual_stages, layout.stage_layers,
                         _style(layout.schedule))


def _style(schedule: str) -> str:
    return "v" if schedule in V_SCHEDULES else "loop"


def last_gpu(layout: Layout) -> int:
    """The pipeline GPU that holds the last chunk (the output layer and the loss): ``pp - 1``, or 0
    for the V schedules."""
    return chunk_gpu(layout.pp * layout.virtual_stages - 1, layout.pp, _style(layout.schedule))


def chunk_gpu(chunk: int, pp: int, style: str = "loop") -> int:
    """The pipeline GPU that holds model chunk ``chunk``: ``chunk mod pp`` (``loop``) or, placed in
    a V (``v``, two chunks per GPU), ``chunk`` for ``chunk < pp`` and ``2 pp - 1 - chunk`` after.
    Derived in chapter :doc:`/chapters/parallelism`."""
    if style == "v":
        return chunk if chunk < pp else 2 * pp - 1 - chunk
    return chunk % pp


@lru_cache(maxsize=256)
def _stage_layers(n_layers: int, pp: int, v: int, stage_layers: tuple[int, ...],
                  style: str = "loop") -> tuple[tuple[int, ...], ...]:
    chunks = pp * v
    sizes = stage_layers or (n_layers // chunks,) * chunks
    starts = [sum(sizes[:k]) for k in range(chunks)]
    return tuple(tuple(i for k in range(chunks) if chunk_gpu(k, pp, style) == r
                       for i in range(starts[k], starts[k] + sizes[k]))
                 for r in range(pp))


@lru_cache(maxsize=64)
def _specs(cfg: TransformerConfig) -> tuple[LayerSpec, ...]:
    return cfg.layers


@lru_cache(maxsize=1024)
def _spec_counts(cfg: TransformerConfig, layers: tuple[int, ...]) -> dict[LayerSpec, int]:
    specs = _specs(cfg)
    out: dict[LayerSpec, int] = {}
    for i in layers:
        out[specs[i]] = out.get(specs[i], 0) + 1
    return out


def _vocab_shard(cfg: TransformerConfig, t: int) -> int:
    return -(-cfg.vocab_size // t)


@lru_cache(maxsize=256)
def _layer_params_per_gpu(cfg: TransformerConfig, spec: LayerSpec, t: int, ep: int,
                          etp: int = 0) -> tuple[int, int]:
    """(non-expert, routed-expert) parameters of one layer on one GPU under Megatron-LM's tensor
    parallelism ``t``, expert parallelism ``ep`` and expert tensor parallelism ``etp`` (0: ``t``)."""
    from .params import _attention, _mlp_weights, _norm_size

    h = cfg.hidden_size
    w, b, qk = _attention(cfg)
    if cfg.kv_lora_rank:  # MLA: the down projections and their norms are replicated
        rep = h * (cfg.kv_lora_rank + cfg.rope_head_dim) + h * cfg.q_lora_rank
        attn = (w - rep) // t + rep + b + qk
    else:
        qkv_bias = b - h * cfg.out_bias
        qk_part = qk // t if cfg.qk_norm == "full" else qk
        attn = w // t + qkv_bias // t + h * cfg.out_bias + qk_part
    norms = cfg.norms_per_layer * _norm_size(cfg)
    n_in = 2 if cfg.ffn_kind == "gated" else 1

    def mlp(width: int, t: int = t) -> int:
        weights, _ = _mlp_weights(cfg, width, False)
        return weights // t + ((n_in * width // t + h) if cfg.mlp_bias else 0)

    if spec.mlp == "dense":
        return attn + norms + mlp(cfg.ffn_size), 0
    router = h * cfg.n_experts + cfg.n_experts * cfg.router_bias + h * cfg.shared_expert_gate
    shared = mlp(cfg.shared_ffn_size) if cfg.shared_ffn_size else 0
    return attn + norms + router + shared, cfg.n_experts // ep * mlp(cfg.expert_ffn_size, etp or t)


def stage_param_counts(cfg: TransformerConfig, layout: Layout) -> list[dict[str, int]]:
    """Parameters on one GPU of each pipeline stage: ``{"dense": ..., "expert": ...}`` per stage.

    Megatron-LM's split: tensor parallelism divides every weight matrix of attention and MLP by
    ``t`` (column-parallel Q, K, V and first MLP matrices with their biases; row-parallel output
    and second MLP matrices, whose biases are replicated), and the vocabulary of the embedding and
    output matrices (``ceil(V/t) e`` each; Megatron-LM pads ``V`` further to a multiple of
    ``128 t``); norms, routers and learned position embeddings are replicated; MLA's two down
    projections and their norms are replicated. Expert parallelism gives each GPU
    ``n_experts / ep`` routed experts (``expert``), each split by ``expert_tp`` (default ``t``). The
    first stage holds the
    embeddings, the last the final norm, the output matrix (a second copy of a tied embedding when
    ``pp > 1``) and a pooler. Derived in chapter :doc:`/chapters/parallelism`.
    """
    check_layout(cfg, layout)
    return [dict(d) for d in _stage_params(cfg, layout.tp, layout.ep, layout.pp, layout.virtual_stages,
                                           layout.stage_layers, _style(layout.schedule), layout.expert_tp)]


@lru_cache(maxsize=1024)
def _stage_params(cfg: TransformerConfig, t: int, ep: int, pp: int, v: int,
                  stage_layers: tuple[int, ...], style: str = "loop", etp: int = 0) -> tuple[dict[str, int], ...]:
    from .params import param_breakdown

    bd = param_breakdown(cfg)
    specs = _specs(cfg)
    vocab = _vocab_shard(cfg, t) * cfg.embedding_dim
    first = vocab + bd["position_embedding"] + bd["token_type_embedding"] + bd["embedding_norm"]
    first += bd["embedding_projection"] // 2
    last = bd["final_norm"] + bd["pooler"] + bd["embedding_projection"] // 2
    if not cfg.tie_embeddings or pp > 1:
        last += vocab
    last += _vocab_shard(cfg, t) if cfg.lm_head_bias else 0
    out = []
    for r, layers in enumerate(_stage_layers(cfg.n_layers, pp, v, stage_layers, style)):
        dense = expert = 0
        for i in layers:
            d, e = _layer_params_per_gpu(cfg, specs[i], t, ep, etp)
            dense, expert = dense + d, expert + e
        dense += (first if r == 0 else 0) + (last if r == chunk_gpu(pp * v - 1, pp, style) else 0)
        out.append({"dense": dense, "expert": expert})
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# the pipeline
# ---------------------------------------------------------------------------------------------


def pipeline_bubble_fraction(
    pp: int, microbatches: int, schedule: str = "1f1b", virtual_stages: int = 1, *, relative_to: str = "step",
    times: tuple[float, float, float] = (1.0, 1.0, 1.0),
) -> float:
    """Idle share of a pipelined step (equal stages, forward and backward of fixed durations).

    GPipe and 1F1B idle ``(p-1)(t_f + t_b)`` per step beside the ``m (t_f + t_b)`` of work; the
    interleaved schedule with ``v`` chunks per GPU cuts the idle time by ``v``. So the bubble is
    ``(p-1)/(v m + p - 1)`` of the step (``relative_to="step"``) or ``(p-1)/(v m)`` of the ideal,
    bubble-free time (``relative_to="compute"``: Narayanan et al.'s and Llama 3's "bubble
    ratio"), with ``v = 1`` for GPipe and 1F1B. The zero-bubble schedules (``interleaved_zb``,
    ``zbv``, ``dualpipev``) have no closed form: their bubble is that of the order PyTorch runs
    (:func:`llmmath.steptime.pipeline_order`) simulated with a stage's forward, input-gradient and
    weight-gradient times in the ratio ``times`` (default ``F = I = W``, the zero-bubble paper's
    assumption; :func:`llmmath.steptime.simulate_pipeline`). Derived in chapter
    :doc:`/chapters/parallelism`.
    """
    p, m, v = check_int("pp", pp), check_int("microbatches", microbatches), check_int("virtual_stages", virtual_stages)
    check_choice("schedule", schedule, SCHEDULES)
    check_choice("relative_to", relative_to, ("step", "compute"))
    _check_schedule(p, m, schedule, v)
    if schedule in ("gpipe", "1f1b", "interleaved"):
        return (p - 1) / (v * m + (p - 1 if relative_to == "step" else 0))
    from .steptime import simulate_pipeline

    f, i, w = (check_positive(f"times[{k}]", x) for k, x in enumerate(times))
    chunk = [(f / v, i / v, w / v)] * (p * v)
    span = simulate_pipeline(schedule, p, m, v, chunk)
    work = m * (f + i + w)
    return (span - work) / (span if relative_to == "step" else work)


def pipeline_in_flight(pp: int, microbatches: int, schedule: str = "1f1b", virtual_stages: int = 1,
                       stage: int = 0, round_size: int = 0) -> int:
    """Micro-batches (model chunks, with interleaving) whose activations pipeline GPU ``stage``
    holds at its peak.

    GPipe: all ``m``. 1F1B: ``min(m, p - r)`` on GPU ``r`` (``p`` on the first: the warm-up
    forwards before its first backward). Interleaved: ``min(v m, (v-1) N + 2(p-1-r) + 1)`` chunks
    (Megatron-LM's and PyTorch's warm-up count plus the forward that precedes the first backward),
    ``N = round_size`` the micro-batches run through a chunk before the next (default ``N = p``,
    Megatron-LM's; PyTorch's ``ScheduleInterleaved1F1B`` takes ``N = m / max(1, floor(m/p))``); on
    GPU 0 with ``N = p`` that is ``p (v+1) - 1``, i.e. ``1 + (p-1)/(p v)`` times the ``L`` layers
    of activations of 1F1B, and each extra micro-batch of ``N`` adds ``v - 1`` chunks. Zero-bubble
    schedules: the most chunks whose forward has run and whose weight gradient has not, in the order
    PyTorch runs (:func:`llmmath.steptime.pipeline_order`; a chunk's inputs are kept until its weight
    gradient). Derived in chapter :doc:`/chapters/parallelism`.
    """
    p, m, v = check_int("pp", pp), check_int("microbatches", microbatches), check_int("virtual_stages", virtual_stages)
    check_choice("schedule", schedule, SCHEDULES)
    n_round = check_int("round_size", round_size, minimum=0)
    if n_round and schedule != "interleaved":
        raise ValueError(f"round_size needs schedule='interleaved', got {schedule!r}")
    _check_schedule(p, m, schedule, v, n_round)
    r = check_int("stage", stage, minimum=0, maximum=p - 1)
    if schedule == "gpipe":
        return m
    if schedule == "1f1b":
        return min(m, p - r)
    if schedule == "interleaved":
        return min(v * m, (v - 1) * (n_round or p) + 2 * (p - 1 - r) + 1)
    from .steptime import pipeline_order

    held = peak = 0
    for kind, _, _ in pipeline_order(schedule, p, m, v)[r]:
        held += 1 if kind == "F" else -1 if kind in ("B", "W") else 0
        peak = max(peak, held)
    return peak


# ---------------------------------------------------------------------------------------------
# memory per GPU
# ---------------------------------------------------------------------------------------------


def _dense_equivalent(cfg: TransformerConfig, capacity: float = 1.0) -> TransformerConfig:
    """A mixture-of-experts layer's activations as those of a dense MLP of width ``C k d_e + d_s``."""
    width = round(capacity * cfg.experts_per_token * cfg.expert_ffn_size) + cfg.shared_ffn_size
    return cfg.replace(
        n_experts=0, experts_per_token=0, shared_ffn_size=0, shared_expert_gate=False, router_bias=False,
        mlp_types=(), expert_ffn_size=None, ffn_size=width,
    )


@lru_cache(maxsize=1024)
def _layer_activation(cfg: TransformerConfig, mlp: str, b: int, s: int, cp: int, t: int, sp: bool,
                      recompute: str, flash: bool, dropout: bool, B: int, sp_saves_gathered: bool,
                      cp_kv: bool = False, capacity: float = 1.0) -> int:
    kind = _dense_equivalent(cfg, capacity) if mlp == "moe" else cfg
    sl = s // cp
    out = activation_bytes(kind, b, sl, bytes_per_value=B, recompute=recompute, flash_attention=flash,
                           dropout=dropout, tensor_parallel=t, sequence_parallel=sp)
    terms, total = out["terms"], out["per_layer"]
    if cp > 1:  # a local query attends to all s keys: (s/cp) x s scores, cp times (s/cp)^2
        total += (cp - 1) * sum(terms[k] for k in ("softmax_output", "attn_dropout_mask", "attn_dropout_output"))
    if sp and sp_saves_gathered and recompute != "full":  # the gathered qkv and fc1 inputs, whole
        total += 2 * (t - 1) * B * b * sl * cfg.hidden_size // t
    if cp > 1 and cp_kv and recompute != "full":  # the all-gathered keys and values, less the local shard
        from .context_parallel import cp_gathered_kv_bytes

        total += (cp - 1) * cp_gathered_kv_bytes(cfg, b, s, t, B) // cp
    return total


def stage_activation_bytes(
    cfg: TransformerConfig, layout: Layout, seq: int, stage: int = 0, *, flash_attention: bool = False,
    dropout: bool = True, bytes_per_value: int = 2, sp_saves_gathered: bool = False, cp_style: str = "all_gather",
) -> int:
    """Activation bytes one GPU of pipeline stage ``stage`` holds at its peak.

    Per micro-batch of ``b = microbatch_size`` sequences, each of its layers keeps
    :func:`llmmath.memory.activation_bytes` at ``s / cp`` tokens (tensor and sequence parallelism,
    recomputation as in the layout; with context parallelism and stored scores, a local query's
    ``s`` keys make the score terms ``cp`` times larger); a mixture-of-experts layer is counted as a
    dense MLP of width ``C k d_e + d_s`` (the tokens of an expert-parallel GPU are as many as its own
    on average; ``C`` the layout's ``capacity_factor`` on the busiest one). The first stage adds
    the embedding dropout mask (``sbh``, if ``dropout``), the
    last the final norm's and output layer's inputs (``2 x 2sbh``) and FP32 logits (``4sbV/t``);
    the ``sbh`` terms are divided by ``t`` with sequence parallelism. These are multiplied by the
    micro-batches in flight (:func:`pipeline_in_flight`, per chunk: ``1/v`` of the stage).
    ``sp_saves_gathered=True`` describes PyTorch's tensor parallelism, which keeps the all-gathered
    (whole-sequence) inputs of the QKV and first MLP projections instead of re-gathering them in
    the backward pass as Megatron-LM does: ``2 (t-1)/t x 2sbh`` more per layer. With context
    parallelism in the ``all_gather`` style (:data:`CP_STYLES`) each layer also keeps the
    all-gathered keys and values, ``(cp-1)/cp`` of
    :func:`llmmath.context_parallel.cp_gathered_kv_bytes` more.
    Derived in chapter :doc:`/chapters/parallelism`.
    """
    cfg, layout = _check_cfg(cfg), _check_layout_type(layout)
    s = check_int("seq", seq)
    check_layout(cfg, layout, s)
    check_choice("cp_style", cp_style, CP_STYLES)
    r = check_int("stage", stage, minimum=0, maximum=layout.pp - 1)
    flash, drop = check_bool("flash_attention", flash_attention), check_bool("dropout", dropout)
    B = check_int("bytes_per_value", bytes_per_value)
    sp_g = check_bool("sp_saves_gathered", sp_saves_gathered)
    b, t, cp, sp, v = layout.microbatch_size, layout.tp, layout.cp, layout.sequence_parallel, layout.virtual_stages
    layers = pipeline_stage_layers(cfg, layout)[r]
    kv = cp_style == "all_gather"
    per_mb = sum(n * _layer_activation(cfg, spec.mlp, b, s, cp, t, sp, layout.recompute, flash, drop, B, sp_g, kv,
                                       layout.capacity_factor)
                 for spec, n in _spec_counts(cfg, layers).items())
    sbh = b * (s // cp) * cfg.hidden_size // (t if sp else 1)
    if r == 0 and drop:
        per_mb += sbh  # the embedding dropout's 1-byte mask
    in_flight = pipeline_in_flight(layout.pp, layout.microbatches, layout.schedule, v, r, layout.round_size)
    total = per_mb * in_flight // v
    if r == last_gpu(layout):
        head = 2 * B * sbh + _FP32 * b * (s // cp) * _vocab_shard(cfg, t)
        total += head * (layout.microbatches if layout.schedule == "gpipe" else 1)
    return total


def memory_per_stage(
    cfg: TransformerConfig, layout: Layout, seq: int, *, precision: str = "mixed", optimizer: str = "adam",
    flash_attention: bool = False, dropout: bool = True, bytes_per_value: int = 2, sp_saves_gathered: bool = False,
    cp_style: str = "all_gather", optimizer_bytes_per_value: int = 4, parameter_copies: int = 1,
    zero3_prefetch: int = 1,
) -> list[dict[str, int]]:
    """The :data:`MEMORY_KEYS` of one GPU of each pipeline stage, bytes.

    Model state from :func:`llmmath.memory.training_state_bytes` (``precision``, ``optimizer``,
    ``optimizer_bytes_per_value``: 2 for BF16 moments) applied to the stage's parameters on one GPU
    (:func:`stage_param_counts`): the non-expert ones sharded by ZeRO over the ``dp * cp`` ranks
    that hold the same ones (or the ``shard_group`` of hybrid sharding), the routed experts over the
    ``dp * cp / ep`` ranks that hold the same experts (or ``shard_group``). ``parameter_copies = c``
    holds ``c`` copies of the stage's parameters on each GPU, data-parallel replicas of each other,
    as DualPipe's two directions do (DeepSeek-V3): the unsharded state counts ``c`` times, ZeRO
    shards the rest over ``c`` times the ranks. ``gathered`` (ZeRO-3 only): the layers FSDP holds
    whole while it computes, ``1 + zero3_prefetch`` of the stage's largest unit (a layer, or the
    embedding or output layer with the first or last stage's other parameters) in the parameters'
    precision and one unit's unsharded gradient before its reduce-scatter. Activations from
    :func:`stage_activation_bytes`. Not counted: the CUDA context, NCCL's buffers and the
    allocator's fragmentation (:func:`llmmath.sharding.memory_reserve_bytes`). Derived in chapter
    :doc:`/chapters/parallelism`.
    """
    check_choice("precision", precision, _COMM_BYTES)
    check_choice("optimizer", optimizer, OPTIMIZERS)
    copies = check_int("parameter_copies", parameter_copies)
    prefetch = check_int("zero3_prefetch", zero3_prefetch, minimum=0)
    params = stage_param_counts(cfg, layout)
    n_dense = layout.shard_group or layout.dp * layout.cp
    n_expert = layout.shard_group or layout.expert_dp
    out = []
    for r, p in enumerate(params):
        row = dict.fromkeys(MEMORY_KEYS, 0)
        for count, group in ((p["dense"], n_dense), (p["expert"], n_expert)):
            if count:
                state = training_state_bytes(copies * count, precision, optimizer, zero_stage=layout.zero_stage,
                                             n_gpus=copies * group, optimizer_bytes_per_value=optimizer_bytes_per_value)
                for key in MEMORY_KEYS[:5]:
                    row[key] += state[key]
        if layout.zero_stage == 3:
            unit = _largest_unit(cfg, layout, r, p["dense"] + p["expert"])
            whole = training_state_bytes(unit, precision, optimizer)
            row["gathered"] = copies * ((1 + prefetch) * whole["parameters"] + whole["gradients"])
        row["activations"] = stage_activation_bytes(
            cfg, layout, seq, r, flash_attention=flash_attention, dropout=dropout, bytes_per_value=bytes_per_value,
            sp_saves_gathered=sp_saves_gathered, cp_style=cp_style)
        row["total"] = sum(row[k] for k in MEMORY_KEYS[:-1])
        out.append(row)
    return out


def _largest_unit(cfg: TransformerConfig, layout: Layout, r: int, stage_params: int) -> int:
    """The parameters on one GPU of the largest FSDP unit of pipeline stage ``r``: a layer, or what the
    stage holds besides its layers (embeddings, final norm, output layer)."""
    layers = pipeline_stage_layers(cfg, layout)[r]
    specs = _specs(cfg)
    sizes = [sum(_layer_params_per_gpu(cfg, specs[i], layout.tp, layout.ep, layout.expert_tp)) for i in layers]
    return max(sizes + [stage_params - sum(sizes)])


def memory_per_gpu(cfg: TransformerConfig, layout: Layout, seq: int, **kwargs: Any) -> dict[str, int]:
    """The breakdown of the most loaded GPU (the stage with the largest total of
    :func:`memory_per_stage`; the first such stage on a tie), with its index under ``"stage"``.
    Keyword arguments as :func:`memory_per_stage`. Derived in chapter :doc:`/chapters/parallelism`.
    """
    rows = memory_per_stage(cfg, layout, seq, **kwargs)
    stage = max(range(len(rows)), key=lambda r: (rows[r]["total"], -r))
    return {**rows[stage], "stage": stage}


# ---------------------------------------------------------------------------------------------
# communication per step
# ---------------------------------------------------------------------------------------------


class Collective(NamedTuple):
    """``count`` collectives of one kind per training step on one GPU: the ``parallelism`` that
    issues them, the collective ``kind``, the ``group`` size, the ``message`` bytes ``M`` (as in
    :func:`collective_bytes`), the ``phase`` (``forward``, ``backward`` or ``step``), the
    ``stride`` between consecutive GPUs of the group (what decides the link) and the ``algorithm``
    (:data:`COLLECTIVE_ALGORITHMS`)."""

    parallelism: str
    kind: str
    group: int
    message: int
    count: int
    phase: str
    stride: int
    algorithm: str = "ring"


#: How tensor parallelism places its collectives: ``megatron`` (one all-reduce of the layer input's
#: gradient per attention and per MLP block: Megatron-LM's ``f`` operator, or PyTorch with one
#: ``PrepareModuleInput`` per block) and ``transformers`` (``transformers``' ``base_model_tp_plan``:
#: each column-parallel projection all-reduces the gradient of its own input).
TP_PLANS: tuple[str, ...] = ("megatron", "transformers")
#: Context parallelism's exchanges: ``all_gather`` (the keys and values all-gathered in the forward
#: and kept for the backward, which reduce-scatters their gradients: Llama 3's, and PyTorch 2.13's
#: all-gather style), ``ring`` (ring attention, and any all-gather style that re-gathers them in the
#: backward: the volume of an all-gather in each pass and a reduce-scatter of the gradients) and
#: ``ulysses`` (DeepSpeed-Ulysses: all-to-alls turn the sequence shards of the queries, keys and
#: values into head shards before attention and the output back after it).
CP_STYLES: tuple[str, ...] = ("all_gather", "ring", "ulysses")
#: How expert parallelism dispatches tokens: ``all_to_all`` (one copy per token and expert) or
#: ``hierarchical`` (across the network at most once per target node, then over NVLink:
#: :func:`llmmath.moe_parallel.expected_dispatch_copies`).
EP_DISPATCH: tuple[str, ...] = ("all_to_all", "hierarchical")
_ALLREDUCE_ALGORITHMS = ("ring", "tree", "nvls", "sharp")


def _stage_or_busiest(cfg: TransformerConfig, layout: Layout, stage: int | None) -> int:
    stages = pipeline_stage_layers(cfg, layout)
    if stage is None:
        return max(range(len(stages)), key=lambda r: (len(stages[r]), -r))
    return check_int("stage", stage, minimum=0, maximum=layout.pp - 1)


def tp_backward_allreduces(cfg: TransformerConfig, tp_plan: str = "megatron") -> int:
    """All-reduces one tensor-parallel layer issues in its backward pass (without sequence
    parallelism), one per distinct consumer of a replicated input: 2 with ``megatron`` (the input of
    the attention block and that of the MLP block, each made one replicated tensor that feeds every
    column-parallel projection), ``3 + 2`` with ``transformers``' plan for a gated MLP (``q``,
    ``k``, ``v``, ``gate`` and ``up`` are separate ``ColwiseParallel`` modules, each all-reducing the
    gradient of its own input), ``3 + 1`` with a plain MLP. The forward has 2 in both (after the
    output and down projections). Derived in chapter :doc:`/chapters/parallelism`.
    """
    cfg = _check_cfg(cfg)
    check_choice("tp_plan", tp_plan, TP_PLANS)
    if tp_plan == "megatron":
        return 2
    if cfg.is_moe or cfg.kv_lora_rank:
        raise ValueError("tp_plan='transformers' is modelled for dense layers with separate q, k, v projections")
    return 3 + (2 if cfg.ffn_kind == "gated" else 1)


def step_collectives(
    cfg: TransformerConfig, layout: Layout, seq: int, *, stage: int | None = None, precision: str = "mixed",
    bytes_per_value: int = 2, sp_saves_gathered: bool = False, tp_plan: str = "megatron",
    cp_style: str = "all_gather", tp_algorithm: str = "ring", dp_algorithm: str = "ring",
    ep_dispatch: str = "all_to_all", max_nodes: int | None = None, gpus_per_node: int = 8,
) -> list[Collective]:
    """Every collective one GPU of pipeline stage ``stage`` (default: the stage with the most
    layers) takes part in during one training step, counted per kind.

    With ``b`` the micro-batch, ``s' = s / cp`` the local tokens, ``B`` bytes per activation value,
    ``m`` micro-batches, ``L_r`` layers on the stage of which ``L_moe`` mixture-of-experts:

    - **tp**: per layer and micro-batch, 2 all-reduces of ``b s' h B`` in the forward and
      :func:`tp_backward_allreduces` in the backward (2 with ``tp_plan="megatron"``, Megatron-LM;
      5 with ``transformers``' plan for a gated MLP); with sequence parallelism (Megatron-LM) 2
      all-gathers + 2 reduce-scatters of the same ``M`` in each direction, plus 2 all-gathers in the
      backward that re-gather the saved shards (none with ``sp_saves_gathered``, PyTorch's way);
      full recomputation repeats the forward's. ``tp_algorithm`` runs the all-reduces
      (``nvls``: in the NVSwitch).
    - **cp** (:data:`CP_STYLES`), per layer and micro-batch: ``all_gather`` an all-gather of the
      keys and values (``b s (d_kv + d_v) B / t``) in the forward and a reduce-scatter of their
      gradients in the backward; ``ring`` an all-gather more in the backward; ``ulysses`` 4
      all-to-alls in each pass, of the local queries, keys, values and attention output (``b s'
      d B / t`` with ``d`` their widths; the heads must split over ``t cp``).
    - **ep**: per MoE layer and micro-batch, all-to-all dispatch and combine of the ``k`` copies of
      each local token (``b s' k h B``, divided by ``t`` with sequence parallelism, times the
      ``capacity_factor``: what the busiest GPU receives) in the forward and again in the backward.
      ``ep_dispatch="hierarchical"`` (DeepSeek-V3, DeepEP) replaces each by two all-to-alls: one over
      the ``N`` nodes (between GPUs of the same index, ``gpus_per_node`` apart) carrying the
      expected network copies of :func:`llmmath.moe_parallel.expected_dispatch_copies` (routing
      limited to ``max_nodes`` nodes), one in the node carrying the NVLink copies (their messages
      ``n/(n-1)`` times the bytes sent, so that :func:`collective_bytes` gives them).
    - **pp**: a p2p send of the activations (``b s' h B``, ``/t`` with sequence parallelism) per
      chunk boundary that crosses to another GPU and micro-batch forward, and of their gradients
      backward (the turn of a V schedule stays on its GPU).
    - **dp** (once per step unless noted), over the ``G = dp cp`` ranks for the non-expert and
      ``dp cp / ep`` ranks for the expert parameters, gradients in the precision's gradient bytes:
      ZeRO-0 an all-reduce of the gradients; ZeRO-1 a reduce-scatter of the gradients and an
      all-gather of the updated parameters; ZeRO-2 the reduce-scatter per micro-batch (and, with
      ``reshard_after_backward``, FSDP's ``SHARD_GRAD_OP``, the all-gather per micro-batch in the
      forward instead of once); ZeRO-3 per micro-batch an all-gather of the parameters in the
      forward, another in the backward and a reduce-scatter of the gradients. With hybrid sharding
      (``shard_group = S``) these run over the ``S`` ranks of a shard group and the reduced shard
      (``ceil(P/S)`` gradients) is all-reduced across the ``G/S`` replicas once per step.
      ``dp_algorithm`` runs the all-reduces (``sharp``: in the network's switches).

    Embedding and loss all-reduces are not counted. Derived in chapter :doc:`/chapters/parallelism`.
    """
    cfg, layout = _check_cfg(cfg), _check_layout_type(layout)
    s = check_int("seq", seq)
    check_layout(cfg, layout, s)
    check_choice("precision", precision, _COMM_BYTES)
    B = check_int("bytes_per_value", bytes_per_value)
    sp_g = check_bool("sp_saves_gathered", sp_saves_gathered)
    check_choice("cp_style", cp_style, CP_STYLES)
    check_choice("tp_algorithm", tp_algorithm, _ALLREDUCE_ALGORITHMS)
    check_choice("dp_algorithm", dp_algorithm, _ALLREDUCE_ALGORITHMS)
    tp_back = tp_backward_allreduces(cfg, tp_plan)
    r = _stage_or_busiest(cfg, layout, stage)
    t, cp, ep, pp, v, m = layout.tp, layout.cp, layout.ep, layout.pp, layout.virtual_stages, layout.microbatches
    b, sp, h = layout.microbatch_size, layout.sequence_parallel, cfg.hidden_size
    if tp_plan != "megatron" and sp:
        raise ValueError("tp_plan='transformers' is modelled without sequence parallelism")
    sl = s // cp
    layers = pipeline_stage_layers(cfg, layout)[r]
    n_layers, n_moe = len(layers), sum(_specs(cfg)[i].mlp == "moe" for i in layers)
    act = b * sl * h * B
    out: list[Collective] = []

    def add(par: str, kind: str, group: int, message: int, count: int, phase: str, stride: int,
            algorithm: str = "ring") -> None:
        if group > 1 and count > 0 and message > 0:
            out.append(Collective(par, kind, group, message, count, phase, stride, algorithm))

    redo = 2 if layout.recompute == "full" else 0
    per_layer = n_layers * m
    if sp:
        add("tp", "all_gather", t, act, (2 + redo) * per_layer, "forward", 1)
        add("tp", "reduce_scatter", t, act, (2 + redo) * per_layer, "forward", 1)
        add("tp", "all_gather", t, act, (2 if sp_g else 4) * per_layer, "backward", 1)
        add("tp", "reduce_scatter", t, act, 2 * per_layer, "backward", 1)
    else:
        add("tp", "all_reduce", t, act, (2 + redo) * per_layer, "forward", 1, tp_algorithm)
        add("tp", "all_reduce", t, act, tp_back * per_layer, "backward", 1, tp_algorithm)
    if cp_style == "ulysses":
        for width in _ulysses_widths(cfg, t, cp):
            message = b * sl * width * B // t
            add("cp", "all_to_all", cp, message, (1 + redo // 2) * per_layer, "forward", t)
            add("cp", "all_to_all", cp, message, per_layer, "backward", t)
    else:
        kv = b * s * (cfg.kv_dim + cfg.v_dim) * B // t
        add("cp", "all_gather", cp, kv, (1 + redo // 2) * per_layer, "forward", t)
        if cp_style == "ring":
            add("cp", "all_gather", cp, kv, per_layer, "backward", t)
        add("cp", "reduce_scatter", cp, kv, per_layer, "backward", t)
    check_choice("ep_dispatch", ep_dispatch, EP_DISPATCH)
    if n_moe:
        tokens = b * sl // (t if sp else 1)
        a2a = round(tokens * cfg.experts_per_token * h * B * layout.capacity_factor)
        for group, message, stride in _ep_groups(cfg, layout, a2a, ep_dispatch, max_nodes, gpus_per_node):
            add("ep", "all_to_all", group, message, (2 + redo) * n_moe * m, "forward", stride)
            add("ep", "all_to_all", group, message, 2 * n_moe * m, "backward", stride)
    p2p = act // (t if sp or layout.scatter_gather else 1)
    style, chunks = _style(layout.schedule), pp * v
    mine = [k for k in range(chunks) if chunk_gpu(k, pp, style) == r]
    sends_fwd = sum(k < chunks - 1 and chunk_gpu(k + 1, pp, style) != r for k in mine)
    sends_bwd = sum(k > 0 and chunk_gpu(k - 1, pp, style) != r for k in mine)
    add("pp", "p2p", 2, p2p, sends_fwd * m, "forward", t * cp * layout.dp)
    add("pp", "p2p", 2, p2p, sends_bwd * m, "backward", t * cp * layout.dp)
    p_bytes, g_bytes = _COMM_BYTES[precision]
    params = stage_param_counts(cfg, layout)[r]
    groups = ((params["dense"], layout.dp * cp, t), (params["expert"], layout.expert_dp, t * ep))
    z = layout.zero_stage
    for count, group, stride in groups:
        if z == 0:
            add("dp", "all_reduce", group, count * g_bytes, 1, "step", stride, dp_algorithm)
            continue
        S = layout.shard_group or group
        grads, weights = count * g_bytes, count * p_bytes
        if z == 3:
            add("dp", "all_gather", S, weights, m, "forward", stride)
            add("dp", "all_gather", S, weights, m, "backward", stride)
        add("dp", "reduce_scatter", S, grads, 1 if z == 1 else m, "step" if z == 1 else "backward", stride)
        add("dp", "all_reduce", group // S, -(-count // S) * g_bytes, 1, "step", stride * S, dp_algorithm)
        if z == 1 or (z == 2 and not layout.reshard_after_backward):
            add("dp", "all_gather", S, weights, 1, "step", stride)
        elif z == 2:
            add("dp", "all_gather", S, weights, m, "forward", stride)
    return out


def _ep_groups(cfg: TransformerConfig, layout: Layout, a2a: int, dispatch: str, max_nodes: int | None,
               gpus_per_node: int) -> list[tuple[int, int, int]]:
    """(group, message, stride) of the dispatch all-to-alls of one MoE layer (see step_collectives)."""
    from .moe_parallel import expected_dispatch_copies

    ep, inner = layout.ep, layout.tp * layout.cp
    if dispatch == "all_to_all":
        return [(ep, a2a, inner)]
    g_node = check_int("gpus_per_node", gpus_per_node)
    if g_node % inner:
        raise ValueError(f"tp * cp = {inner} must divide gpus_per_node={g_node}")
    g = min(ep, g_node // inner)
    if ep % g:
        raise ValueError(f"the {g} expert-parallel GPUs of a node must divide ep={ep}")
    N = ep // g
    copies = expected_dispatch_copies(cfg.n_experts, cfg.experts_per_token, N, g, max_nodes=max_nodes)
    per_copy = a2a / cfg.experts_per_token
    out = []
    if N > 1:
        out.append((N, round(per_copy * copies["scale_out"] * N / (N - 1)), g * inner))
    if g > 1:
        out.append((g, round(per_copy * copies["scale_up"] * g / (g - 1)), inner))
    return out


def _ulysses_widths(cfg: TransformerConfig, t: int, cp: int) -> tuple[int, ...]:
    """The widths of the queries, keys, values and attention output that Ulysses' all-to-alls move."""
    if cp > 1 and (cfg.n_heads % (t * cp) or cfg.n_kv_heads % (t * cp)):
        raise ValueError(f"cp_style='ulysses' splits the heads over tp * cp = {t * cp} GPUs: it must divide "
                         f"n_heads={cfg.n_heads} and n_kv_heads={cfg.n_kv_heads}")
    return cfg.q_dim, cfg.kv_dim, cfg.v_dim, cfg.n_heads * cfg.v_head_dim


def communication_bytes(cfg: TransformerConfig, layout: Layout, seq: int, **kwargs: Any) -> dict[str, float]:
    """Bytes one GPU sends per training step, by parallelism (:data:`PARALLELISMS`) and ``total``:
    ``sum count x collective_bytes(kind, group, message)`` over :func:`step_collectives`
    (keyword arguments as there). Derived in chapter :doc:`/chapters/parallelism`.
    """
    out = dict.fromkeys(PARALLELISMS, 0.0)
    for c in step_collectives(cfg, layout, seq, **kwargs):
        out[c.parallelism] += c.count * collective_bytes(c.kind, c.group, c.message, c.algorithm)
    out["total"] = sum(out.values())
    return out


def _collective_time(c: Collective, gpu: Accelerator) -> float:
    return c.count * collective_seconds(c.kind, c.group, c.message, gpu, span=c.group * c.stride,
                                        algorithm=c.algorithm)


def communication_seconds(
    cfg: TransformerConfig, layout: Layout, seq: int, gpu: str | Accelerator, **kwargs: Any,
) -> dict[str, float]:
    """Seconds one GPU spends in communication per step if none of it overlaps compute, by
    parallelism and ``total``: ``sum count x collective_seconds(...)`` over
    :func:`step_collectives`, each group on the scale-up link when its ranks (``group x stride``
    consecutive GPUs, ranks numbered in the order of :data:`PARALLELISMS`) fit in one scale-up
    domain, else on the scale-out network. Derived in chapter :doc:`/chapters/parallelism`.
    """
    spec = accelerator(gpu)
    out = dict.fromkeys(PARALLELISMS, 0.0)
    for c in step_collectives(cfg, layout, seq, **kwargs):
        out[c.parallelism] += _collective_time(c, spec)
    out["total"] = sum(out.values())
    return out


def tp_comm_compute_ratio(
    hidden_size: int, tp: int, gpu: str | Accelerator, *, link: str = "scale_up", bytes_per_value: int = 2,
    precision: str = "bf16_tensor",
) -> float:
    """Time of a layer's tensor-parallel communication over the time of its weight products,
    ``(t-1) B F / (9 h beta)``.

    Per layer and micro-batch of ``b s`` tokens a GPU computes ``3 x 24 b s h^2 / t`` FLOPs (forward
    and backward of a GPT layer's ``12 h^2`` weights) at the peak ``F`` and sends 4 all-reduces of
    ``b s h`` values of ``B`` bytes, ``8 b s h B (t-1)/t`` bytes at the link's ``beta``; the tokens
    cancel. Above 1 the all-reduces, which the next layer waits for, take longer than the products.
    Attention's ``s^2`` products and latency are left out. Derived in chapter
    :doc:`/chapters/parallelism`.
    """
    h, t = check_int("hidden_size", hidden_size), check_int("tp", tp)
    B = check_int("bytes_per_value", bytes_per_value)
    spec = accelerator(gpu)
    check_choice("link", link, ("scale_up", "scale_out"))
    chosen = spec.scale_up if link == "scale_up" else spec.scale_out
    if chosen is None:
        raise ValueError(f"gpu {spec.name!r} has no {link} link in llmmath.hardware")
    return (t - 1) * B * gpu_peak_flops(spec, precision) / (9 * h * chosen.bandwidth)


def tp_layer_comm_ratio(
    cfg: TransformerConfig, tp: int, gpu: str | Accelerator, tokens: int, *, tp_per_node: int | None = None,
    algorithm: str = "ring", latency: bool = True, bytes_per_value: int = 2, precision: str = "bf16_tensor",
) -> float:
    """Time of one dense layer's tensor-parallel all-reduces over the time of its weight products,
    on ``tokens`` tokens: ``4 x collective_seconds(all_reduce, t, T h B) / (6 W_L T / (t F))``.

    ``W_L`` is the layer's weight matrices (Llama 3 70B: ``12.75 h^2``, GQA's smaller K and V and
    the 3.5h-wide SwiGLU; a GPT layer ``12 h^2``), the forward and backward of its products ``6 W_L
    T / t`` FLOPs at the peak ``F``; the 4 all-reduces of ``T h B`` bytes follow the link model of
    :func:`collective_link_seconds`: the ``t`` ranks are spread ``tp_per_node`` per scale-up domain
    (default: all in one when they fit), the bytes that leave a domain shared among its GPUs' NICs,
    both links in parallel; ``latency=False`` drops the ``steps x alpha`` term (then ``tokens``
    cancels). :func:`tp_comm_compute_ratio` is its closed form for a GPT layer on one link.
    Derived in chapter :doc:`/chapters/parallelism`.
    """
    from .flops import flops_breakdown

    cfg = _check_cfg(cfg)
    t, T = check_int("tp", tp), check_int("tokens", tokens)
    spec = accelerator(gpu)
    B = check_int("bytes_per_value", bytes_per_value)
    check_bool("latency", latency)
    k = min(t, spec.domain_size) if tp_per_node is None else check_int("tp_per_node", tp_per_node, maximum=t)
    if t % k or k > spec.domain_size:
        raise ValueError(f"tp_per_node must divide tp={t} and fit in a {spec.domain_size}-GPU domain, got {k}")
    dense = next((spec_ for spec_ in cfg.layers if spec_.mlp == "dense"), None)
    if dense is None:
        raise ValueError(f"{cfg.name!r} has no dense layer")
    one = cfg.replace(n_layers=1, attention_types=(dense.attention,), mlp_types=("dense",) if cfg.is_moe else ())
    bd = flops_breakdown(one, T, 1)
    linear = sum(bd[key] for key in ("q_proj", "k_proj", "v_proj", "o_proj", "mlp_gate", "mlp_up", "mlp_down"))
    compute = 3 * linear / t / gpu_peak_flops(spec, precision)
    lat, up, out = collective_link_seconds("all_reduce", t, T * cfg.hidden_size * B, spec, algorithm=algorithm,
                                           span=t * spec.domain_size // k)
    return 4 * ((lat if latency else 0.0) + max(up, out)) / compute


# ---------------------------------------------------------------------------------------------
# layouts for a search
# ---------------------------------------------------------------------------------------------


def balanced_stage_layers(n_layers: int, stages: int) -> tuple[int, ...]:
    """Layers per pipeline stage split as evenly as possible: ``()`` (the even split of
    :class:`Layout`) when ``stages`` divides ``n_layers``, else ``floor(L / stages)`` each and one
    more on the first ``L mod stages`` stages (Llama 3 405B's 126 layers on 16 stages).
    Derived in chapter :doc:`/chapters/parallelism`.
    """
    n, k = check_int("n_layers", n_layers), check_int("stages", stages)
    if k > n:
        raise ValueError(f"stages must be an integer <= n_layers = {n}, got {k}")
    if n % k == 0:
        return ()
    q, r = divmod(n, k)
    return tuple(q + (i < r) for i in range(k))


def embedding_loss_stage_layers(n_layers: int, stages: int) -> tuple[int, ...]:
    """Layers per pipeline chunk when the input embedding and the loss each count as one layer
    (Megatron-LM's ``--account-for-embedding-in-pipeline-split`` and
    ``--account-for-loss-in-pipeline-split``): the ``L + 2`` slots split as evenly as possible (one
    more on the first stages), then one slot fewer on the first chunk (the embedding's) and on the
    last (the loss's). Llama 3 405B's ``L = 126`` layers on ``16 x 8 = 128`` chunks: the first and
    the last chunk hold no layer, every other one layer, as Meta ran it; on 16 stages: 7, fourteen
    times 8, 7, "one Transformer layer" less on the first and the last stage. ``stages`` may be
    at most ``L + 2``. Derived in chapter :doc:`/chapters/capstone`.
    """
    n, k = check_int("n_layers", n_layers), check_int("stages", stages)
    if k > n + 2:
        raise ValueError(f"stages must be an integer <= n_layers + 2 = {n + 2} (the embedding and the loss "
                         f"count as one layer each), got {k}")
    q, r = divmod(n + 2, k)
    slots = [q + (i < r) for i in range(k)]
    slots[0] -= 1
    slots[-1] -= 1
    return tuple(slots)


#: Names that moved to :mod:`llmmath.steptime` (the one step-time model); ``from llmmath.parallel
#: import step_time`` keeps working.
_MOVED = ("step_time", "dp_hiding_tokens", "search_layouts", "Plan")


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        from . import steptime

        return getattr(steptime, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
