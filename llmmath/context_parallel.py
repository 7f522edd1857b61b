"""Context parallelism: what each GPU computes and keeps when the sequence is split over ``c`` GPUs.

Each of the ``c`` GPUs holds ``s/c`` of the queries; its attention needs the keys and values of the
whole sequence (:data:`llmmath.parallel.CP_STYLES` names how they travel and
:func:`llmmath.parallel.step_collectives` counts it). With a causal mask the work per GPU depends on
which tokens it holds: a contiguous split leaves the last GPU with the most query-key pairs, the
zig-zag (head-tail) split of Megatron-LM, Llama 3 and PyTorch's ``_HeadTailLoadBalancer`` (the
sequence cut into ``2c`` chunks, GPU ``r`` holding chunks ``r`` and ``2c-1-r``) balances it exactly.
Derived in chapter :doc:`/chapters/parallelism`.
"""

from __future__ import annotations

from ._validate import check_choice, check_int
from .config import TransformerConfig

__all__ = ["CP_BALANCE", "cp_causal_pairs", "cp_gathered_kv_bytes"]

#: How the sequence is split over the context-parallel GPUs: ``contiguous`` (GPU ``r`` holds tokens
#: ``[r s/c, (r+1) s/c)``) or ``zigzag`` (head-tail: chunks ``r`` and ``2c-1-r`` of ``2c``).
CP_BALANCE: tuple[str, ...] = ("contiguous", "zigzag")


def _check_cfg(cfg: object) -> TransformerConfig:
    if not isinstance(cfg, TransformerConfig):
        raise TypeError(f"cfg must be a TransformerConfig, got {type(cfg).__name__}")
    return cfg


def _pairs(a: int, b: int) -> int:
    """Causal pairs of the queries at positions ``a .. b-1``: ``sum (q + 1)``."""
    return (b * (b + 1) - a * (a + 1)) // 2


def cp_causal_pairs(seq: int, cp: int, rank: int, balance: str = "zigzag") -> int:
    """Query-key pairs (key at or before the query) that context-parallel GPU ``rank`` of ``cp``
    computes on a causal sequence of ``s`` tokens: ``sum (q + 1)`` over its query positions ``q``.

    Contiguous: ``((r+1) u' ((r+1) u' + 1) - r u' (r u' + 1)) / 2`` with ``u' = s/c``, from
    ``u'(u'+1)/2`` on GPU 0 to ``(2c-1) u'^2/2 + u'/2`` on the last, nearly ``2c - 1`` times more.
    Zig-zag with ``u = s/(2c)``: ``(2c-1) u^2 + u (u+1) = s (s+1) / (2c)`` on every GPU.
    Derived in chapter :doc:`/chapters/parallelism`.
    """
    s, c = check_int("seq", seq), check_int("cp", cp)
    r = check_int("rank", rank, minimum=0, maximum=c - 1)
    check_choice("balance", balance, CP_BALANCE)
    if balance == "contiguous":
        if s % c:
            raise ValueError(f"cp={c} must divide seq={s}")
        u = s // c
        return _pairs(r * u, (r + 1) * u)
    if s % (2 * c):
        raise ValueError(f"the zig-zag split cuts the sequence into 2 cp = {2 * c} chunks: it must divide seq={s}")
    u = s // (2 * c)
    return _pairs(r * u, (r + 1) * u) + _pairs((2 * c - 1 - r) * u, (2 * c - r) * u)


def cp_gathered_kv_bytes(cfg: TransformerConfig, batch: int, seq: int, tp: int = 1, bytes_per_value: int = 2) -> int:
    """Bytes of one layer's all-gathered keys and values on one GPU, ``b s (d_kv + d_v) B / t``:
    what all-gather context parallelism (``cp_style="all_gather"``) keeps for the backward pass
    when the attention saves its inputs (PyTorch 2.13's all-gather style does). The local
    ``1/cp`` share is the layer's own keys and values, which :func:`llmmath.memory.activation_bytes`
    already counts, so a GPU holds ``(cp-1)/cp`` of this more per layer and micro-batch in flight
    (:func:`stage_activation_bytes`); re-gathering in the backward (``cp_style="ring"``) trades
    it for an all-gather more. Derived in chapter :doc:`/chapters/parallelism`.
    """
    cfg = _check_cfg(cfg)
    b, s, t = check_int("batch", batch), check_int("seq", seq), check_int("tp", tp)
    B = check_int("bytes_per_value", bytes_per_value)
    if cfg.n_kv_heads % t:
        raise ValueError(f"tp={t} must divide n_kv_heads={cfg.n_kv_heads}")
    return b * s * (cfg.kv_dim + cfg.v_dim) * B // t
