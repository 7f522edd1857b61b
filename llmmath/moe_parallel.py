"""Expert parallelism in practice: where a token's copies travel when the experts of a mixture-of-
experts layer are spread over GPUs in several nodes.

A token routed to ``k`` experts needs its hidden state on every GPU that holds one of them. A plain
all-to-all (Megatron-LM's ``alltoall`` token dispatcher) sends one copy per (token, expert) pair; a
*hierarchical* dispatch (DeepSeek-V3's, DeepEP's "normal" kernels) sends a token across the network
at most once per target node, to the GPU with the same index in that node, which forwards it over
NVLink to the other GPUs of its node that need it; *node-limited routing* (DeepSeek-V3: at most
``M = 4`` nodes per token) bounds the nodes. The functions count the copies per token on each link
(exactly, for one routing, or in expectation over uniform routing); :func:`llmmath.parallel.step_collectives`
turns them into the collectives of a step (``ep_dispatch="hierarchical"``). Routing imbalance is the
layout's ``capacity_factor`` (:class:`llmmath.parallel.Layout`), expert tensor parallelism its
``expert_tp``. Derived in chapter :doc:`/chapters/parallelism`.

Symbols: ``E`` routed experts, ``k`` experts per token, ``N`` nodes of the expert-parallel group,
``g`` expert-parallel GPUs per node, ``M`` the most nodes a token may be routed to.
"""

from __future__ import annotations

from math import comb
from typing import Any

from ._validate import check_bool, check_choice, check_int

__all__ = ["DISPATCH_BOUNDS", "dispatch_copies", "expected_dispatch_copies"]

#: ``expected`` (uniform routing: the ``M`` nodes, then the ``k`` experts among theirs, drawn
#: uniformly without replacement) or ``max`` (the most copies any routing can need).
DISPATCH_BOUNDS: tuple[str, ...] = ("expected", "max")


def dispatch_copies(expert_ids: Any, source_gpu: int, experts_per_gpu: int, gpus_per_node: int, *,
                    hierarchical: bool = True) -> tuple[int, int]:
    """``(scale_out, scale_up)``: the copies of one token's hidden state that cross the network and
    NVLink to reach the GPUs holding its experts ``expert_ids``, sent from GPU ``source_gpu``.

    Expert ``e`` lives on GPU ``e // experts_per_gpu``, GPU ``q`` in node ``q // gpus_per_node``.
    Plain all-to-all (``hierarchical=False``): one copy per expert whose GPU is not the source,
    over the network when that GPU is in another node, else over NVLink. Hierarchical: one network
    copy per target node other than the source's (to the GPU of the source's index there), then one
    NVLink copy per target GPU that is neither that arriving GPU nor the source itself.
    Derived in chapter :doc:`/chapters/parallelism`.
    """
    per_gpu, g = check_int("experts_per_gpu", experts_per_gpu), check_int("gpus_per_node", gpus_per_node)
    src = check_int("source_gpu", source_gpu, minimum=0)
    hier = check_bool("hierarchical", hierarchical)
    experts = [check_int(f"expert_ids[{i}]", e, minimum=0) for i, e in enumerate(expert_ids)]
    if len(set(experts)) != len(experts):
        raise ValueError(f"expert_ids must be distinct (a token picks each expert once), got {experts}")
    node = src // g
    if not hier:
        gpus = [e // per_gpu for e in experts]
        return sum(q // g != node for q in gpus), sum(q // g == node and q != src for q in gpus)
    targets = {e // per_gpu for e in experts}
    remote = {q // g for q in targets} - {node}
    arrivals = {n * g + src % g for n in remote}
    return len(remote), len(targets - arrivals - {src})


def expected_dispatch_copies(
    n_experts: int, experts_per_token: int, nodes: int, gpus_per_node: int, *, max_nodes: int | None = None,
    hierarchical: bool = True, bound: str = "expected",
) -> dict[str, float]:
    """Copies of one token per link, ``{"scale_out": ..., "scale_up": ...}``, when ``E`` experts are
    spread evenly over ``N`` nodes of ``g`` GPUs and each token picks ``k`` of them within at most
    ``M = max_nodes`` nodes (``None``: no limit, ``M = N``), as :func:`dispatch_copies` counts them.

    ``bound="expected"``, routing uniform: the ``M`` nodes drawn uniformly, the ``k`` experts
    uniformly among their ``E_M = M E / N``. A given chosen node is targeted with probability
    ``q = 1 - C(E_M - E/N, k) / C(E_M, k)`` and a given GPU of it with ``p = 1 - C(E_M - E/(N g), k)
    / C(E_M, k)``; the source's node is among the ``M`` with probability ``M/N``. Hierarchical:
    network ``M q (N-1)/N`` (the targeted nodes, less the source's own), NVLink ``M (g-1) p`` (the
    targeted GPUs, less one per chosen node: the arriving GPU, or the source). Plain all-to-all:
    network ``k (N-1)/N``, NVLink ``k (g-1)/(N g)``: every expert copy travels, wherever its GPU.
    ``bound="max"``: network ``min(k, M')`` with ``M' = M`` remote nodes (``N-1`` without a
    limit), NVLink ``min(k, M (g-1))`` hierarchically; without, network ``min(k, M' E/N)`` and NVLink
    ``min(k, (g-1) E/(N g))``, one copy per expert. Derived in chapter :doc:`/chapters/parallelism`.
    """
    E, k = check_int("n_experts", n_experts, minimum=2), check_int("experts_per_token", experts_per_token)
    N, g = check_int("nodes", nodes), check_int("gpus_per_node", gpus_per_node)
    M = N if max_nodes is None else check_int("max_nodes", max_nodes, maximum=N)
    hier = check_bool("hierarchical", hierarchical)
    check_choice("bound", bound, DISPATCH_BOUNDS)
    if E % (N * g):
        raise ValueError(f"n_experts={E} must split evenly over nodes * gpus_per_node = {N * g} GPUs")
    E_M = M * E // N
    if k > E_M:
        raise ValueError(f"experts_per_token={k} exceeds the {E_M} experts of max_nodes={M} nodes")
    if bound == "max":
        remote = M if M < N else N - 1
        if hier:
            return {"scale_out": float(min(k, remote)), "scale_up": float(min(k, M * (g - 1)))}
        return {"scale_out": float(min(k, remote * E // N)), "scale_up": float(min(k, (g - 1) * E // (N * g)))}
    if not hier:
        return {"scale_out": k * (N - 1) / N, "scale_up": k * (g - 1) / (N * g)}
    none = comb(E_M, k)
    q = 1 - comb(E_M - E // N, k) / none
    p = 1 - comb(E_M - E // (N * g), k) / none
    return {"scale_out": M * q * (N - 1) / N, "scale_up": M * (g - 1) * p}
