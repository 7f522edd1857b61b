"""Sharding the model state in practice: what each implementation pads, how much data-parallel
sharding to mix with tensor parallelism, and the memory a GPU must keep free.

ZeRO (Rajbhandari et al. 2020) shards the optimizer states (stage 1), gradients (2) and
parameters (3) over the data-parallel ranks; the implementations differ in *what* they cut into
equal pieces, and so in their padding: DeepSpeed's ZeRO-3 pads each parameter to a multiple of the
ranks, PyTorch's FSDP1 one flat parameter per wrapped module, FSDP2 (``fully_shard``) each parameter
along its first dimension (:func:`llmmath.parallel.fsdp_shard_numel`), and the flat buffers of
ZeRO-1/2 (DeepSpeed, Megatron-LM's distributed optimizer) the whole model once, which is what
:func:`llmmath.memory.training_state_bytes` assumes. Hybrid sharding and FSDP's ``SHARD_GRAD_OP``
are options of :class:`llmmath.parallel.Layout` (``shard_group``, ``reshard_after_backward``).
Derived in chapter :doc:`/chapters/parallelism`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ._validate import check_choice, check_int, check_positive
from .config import TransformerConfig
from .hardware import Accelerator, accelerator

__all__ = [
    "SHARDING_IMPLEMENTATIONS",
    "MEMORY_RESERVE",
    "CUDA_CONTEXT_BYTES",
    "NCCL_COMMUNICATOR_BYTES",
    "zero_shard_numel",
    "optimal_fsdp_degree",
    "memory_reserve_bytes",
]

#: How an implementation cuts the parameters into ``n`` equal shards (see the module docstring):
#: ``fsdp2`` (each parameter along dimension 0), ``deepspeed`` (each parameter, flattened; ZeRO-3),
#: ``fsdp1`` (one flat parameter per wrapped module) and ``flat`` (all parameters in one buffer).
SHARDING_IMPLEMENTATIONS: tuple[str, ...] = ("fsdp2", "deepspeed", "fsdp1", "flat")

#: Share of each GPU's memory a plan keeps free (:func:`llmmath.planning.training_run`,
#: :func:`llmmath.steptime.search_layouts`): the CUDA context, NCCL's buffers and the caching
#: allocator's fragmentation; :func:`memory_reserve_bytes` breaks it down. A layout "fits" when its
#: busiest GPU needs at most ``(1 - MEMORY_RESERVE)`` of the memory.
MEMORY_RESERVE = 0.10

#: The CUDA context of a PyTorch process (CUDA >= 11.7, kernels loaded lazily): "around 400MB"
#: (pytorch/pytorch issue 109888, a PyTorch CUDA maintainer; ~300 MB in issue 107667).
CUDA_CONTEXT_BYTES = 400 * 2**20
#: GPU memory of one NCCL communicator that has run collectives: 688 MiB measured per group of more
#: than two A100s over NVLink (NVIDIA/nccl issue 964; 544 MiB for two). It grows with NCCL's
#: channels: an all-to-all among 8 H100s took 3.3 GB more (NVIDIA/nccl issue 1685).
NCCL_COMMUNICATOR_BYTES = 688 * 2**20


def _shapes(units: Any) -> list[list[tuple[int, ...]]]:
    if not isinstance(units, Sequence) or not units:
        raise TypeError("units must be a non-empty list of wrapped modules, each a list of parameter shapes")
    out = []
    for i, unit in enumerate(units):
        if not isinstance(unit, Sequence):
            raise TypeError(f"units[{i}] must be a list of parameter shapes")
        shapes = []
        for j, shape in enumerate(unit):
            if not isinstance(shape, tuple) or not shape:
                raise TypeError(f"units[{i}][{j}] must be a non-empty tuple of ints, got {shape!r}")
            shapes.append(tuple(check_int(f"units[{i}][{j}][{k}]", d) for k, d in enumerate(shape)))
        out.append(shapes)
    return out


def zero_shard_numel(units: Sequence[Sequence[tuple[int, ...]]], n: int, rank: int | None = None,
                     implementation: str = "fsdp2") -> int:
    """Elements of the parameters one of ``n`` data-parallel ranks holds, ``units`` being the
    wrapped modules (FSDP units; each a list of parameter shapes).

    With ``P_i`` a parameter's elements, ``U_j`` a unit's and ``c(x) = ceil(x / n)``:
    ``fsdp2`` ``sum_i c(d0_i) prod(rest_i)`` (:func:`llmmath.parallel.fsdp_shard_numel`);
    ``deepspeed`` ``sum_i c(P_i)`` (ZeRO-3 pads each flattened parameter to a multiple of ``n``);
    ``fsdp1`` ``sum_j c(U_j)`` (one flat parameter per unit, padded once); ``flat`` ``c(sum P_i)``.
    ``rank=None`` gives the padded shard every rank allocates; rank ``r`` holds the real elements
    of the ranges ``[r c, (r+1) c)`` of each piece (rows, for ``fsdp2``). All four equal ``P/n``
    when ``n`` divides every piece. Derived in chapter :doc:`/chapters/parallelism`.
    """
    from .parallel import fsdp_shard_numel

    shapes = _shapes(units)
    n = check_int("n", n)
    check_choice("implementation", implementation, SHARDING_IMPLEMENTATIONS)
    r = None if rank is None else check_int("rank", rank, minimum=0, maximum=n - 1)
    if implementation == "fsdp2":
        return sum(fsdp_shard_numel(shape, n, r) for unit in shapes for shape in unit)
    pieces = {"deepspeed": [math.prod(s) for unit in shapes for s in unit],
              "fsdp1": [sum(math.prod(s) for s in unit) for unit in shapes],
              "flat": [sum(math.prod(s) for unit in shapes for s in unit)]}[implementation]
    chunks = [-(-p // n) for p in pieces]
    if r is None:
        return sum(chunks)
    return sum(min(c, max(0, p - r * c)) for p, c in zip(pieces, chunks, strict=True))


def optimal_fsdp_degree(cfg: TransformerConfig, tokens: float, n_gpus: int, *, bandwidth_ratio: float = 1.0) -> float:
    """The data-parallel (ZeRO-3/FSDP) degree ``X`` that minimises a step's communication time when
    ``N = X Y`` GPUs split a model ``X`` ways by FSDP and ``Y`` ways by tensor parallelism,
    ``X* = sqrt(8 B h N r / (3 P_L))``.

    Per layer and step (one micro-batch of ``B`` tokens, ``B/X`` per tensor-parallel group), a GPU
    all-gathers its ``P_L / Y`` parameters twice and reduce-scatters their gradients (``3 P_L q / Y``
    bytes, to within ``(X-1)/X``) at the FSDP link's ``W_X``, and sends Megatron-LM's four
    all-reduces of ``B h q / X`` bytes (``8 B h q / X``) at the tensor-parallel link's ``W_Y``:
    ``T(X) = 3 P_L q X / (N W_X) + 8 B h q / (X W_Y)``, least at ``X*`` (``r = W_X / W_Y``). This
    is the scaling book's ``X_opt = sqrt(B N M_X / (F M_Y))`` (Austin et al. 2025: forward only, one
    MLP of ``P_L = 2 h F``) counted over the whole layer and both passes. ``P_L`` is the mean of the
    layers' parameters (:func:`llmmath.params.param_breakdown` without embeddings, over ``L``; for a
    mixture of experts this counts every expert, as if the experts were sharded like the rest).
    Derived in chapter :doc:`/chapters/parallelism`.
    """
    from .params import param_breakdown

    if not isinstance(cfg, TransformerConfig):
        raise TypeError(f"cfg must be a TransformerConfig, got {type(cfg).__name__}")
    B = check_positive("tokens", tokens)
    N = check_int("n_gpus", n_gpus)
    r = check_positive("bandwidth_ratio", bandwidth_ratio)
    bd = param_breakdown(cfg)
    inside = ("attention", "attention_bias", "mlp", "mlp_bias", "shared_experts", "router", "layer_norms")
    P_L = sum(bd[k] for k in inside) / cfg.n_layers
    return math.sqrt(8 * B * cfg.hidden_size * N * r / (3 * P_L))


def memory_reserve_bytes(gpu: str | Accelerator, communicators: int = 4, fragmentation: float = 0.05) -> dict[str, int]:
    """The memory a GPU cannot give to the model state and activations, ``{"cuda_context",
    "nccl", "fragmentation", "total"}`` bytes: the CUDA context (:data:`~llmmath.sharding.CUDA_CONTEXT_BYTES`), one
    NCCL communicator per process group that runs collectives (``communicators``: tensor, pipeline,
    data, expert and context parallelism have one each; :data:`~llmmath.sharding.NCCL_COMMUNICATOR_BYTES` each, a
    measurement on A100s) and the caching allocator's fragmentation, a share ``fragmentation`` of
    the memory (an assumption: it depends on the allocation pattern; PyTorch's
    ``expandable_segments`` reduces it). With the defaults an 80 GB H100 keeps 7.3 GB, close to
    :data:`MEMORY_RESERVE`. Derived in chapter :doc:`/chapters/parallelism`.
    """
    spec = accelerator(gpu)
    k = check_int("communicators", communicators, minimum=0)
    f = check_positive("fragmentation", fragmentation, allow_zero=True)
    if f >= 1:
        raise ValueError(f"fragmentation is a share of the memory in [0, 1), got {f}")
    out = {"cuda_context": CUDA_CONTEXT_BYTES, "nccl": k * NCCL_COMMUNICATOR_BYTES,
           "fragmentation": round(f * spec.memory_bytes)}
    out["total"] = sum(out.values())
    return out
