"""Tests of llmmath.parallel (the running-code checks are in tests/test_distributed.py).

Expected values come from brute force (a simulated ring, explicit shard counting), sympy, the
papers' own formulas (Narayanan et al. 2021, Korthikanti et al. 2023, the ZeRO paper), and
llmmath's independent counts (param_count, activation_bytes, training_flops).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from llmmath.config import TransformerConfig
from llmmath.flops import layer_forward_flops, training_flops
from llmmath.hardware import accelerator, gpu_peak_flops
from llmmath.memory import activation_bytes, training_state_bytes
from llmmath.parallel import (
    COLLECTIVES,
    MEMORY_KEYS,
    Layout,
    check_layout,
    collective_bytes,
    collective_seconds,
    collective_steps,
    communication_bytes,
    communication_seconds,
    dp_hiding_tokens,
    fsdp_shard_numel,
    memory_per_gpu,
    memory_per_stage,
    pipeline_bubble_fraction,
    pipeline_in_flight,
    pipeline_stage_layers,
    search_layouts,
    stage_activation_bytes,
    stage_param_counts,
    step_collectives,
    step_time,
    tp_comm_compute_ratio,
)
from llmmath.params import param_count
from llmmath.presets import preset


def _gpt(L=4, h=64, a=8, V=100, **kw):
    return TransformerConfig(n_layers=L, hidden_size=h, n_heads=a, vocab_size=V, max_position=128, **kw)


# ------------------------------------------------------------------------------------ collectives
def _ring(n: int, data: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """All-reduce ``data[r]`` (rank r's vector) with a ring: reduce-scatter then all-gather, each
    rank sending one chunk to its right neighbour per step. Returns the results and the elements
    each rank sent."""
    chunks = [np.array_split(d.astype(float), n) for d in data]
    sent = [0] * n
    for step in range(n - 1):  # reduce-scatter: after it rank r owns the sum of chunk (r+1) % n
        msgs = [(r, (r - step) % n, chunks[r][(r - step) % n].copy()) for r in range(n)]
        for r, c, payload in msgs:
            chunks[(r + 1) % n][c] += payload
            sent[r] += payload.size
    for step in range(n - 1):  # all-gather
        msgs = [(r, (r + 1 - step) % n, chunks[r][(r + 1 - step) % n].copy()) for r in range(n)]
        for r, c, payload in msgs:
            chunks[(r + 1) % n][c] = payload
            sent[r] += payload.size
    return np.array([np.concatenate(c) for c in chunks]), sent


@pytest.mark.parametrize("n", [2, 3, 4, 8])
def test_ring_all_reduce_brute_force(n):
    rng = np.random.default_rng(n)
    M = 24 * n
    data = rng.standard_normal((n, M))
    out, sent = _ring(n, data)
    assert np.allclose(out, data.sum(axis=0))
    assert sent == [collective_bytes("all_reduce", n, M)] * n
    half = collective_bytes("reduce_scatter", n, M)
    assert half == collective_bytes("all_gather", n, M) and sent[0] == 2 * half
    assert collective_steps("all_reduce", n) == 2 * (n - 1) == 2 * collective_steps("reduce_scatter", n)


def test_collective_bytes_symbolic():
    n, M = sp.symbols("n M", positive=True)
    exprs = {k: sp.nsimplify(collective_bytes(k, 5, 1)) for k in COLLECTIVES if k != "p2p"}
    assert exprs["all_reduce"] == sp.Rational(8, 5) and exprs["all_to_all"] == sp.Rational(4, 5)
    # all-reduce = reduce-scatter + all-gather for every n
    for k in range(1, 12):
        assert collective_bytes("all_reduce", k, 7.0) == pytest.approx(
            collective_bytes("reduce_scatter", k, 7.0) + collective_bytes("all_gather", k, 7.0))
    assert sp.limit(2 * (n - 1) / n * M, n, sp.oo) == 2 * M  # the ring's bound: 2M, the tree's volume
    assert collective_bytes("all_reduce", 64, 1.0, "tree") == 2.0
    assert collective_steps("all_reduce", 64, "tree") == 12 < collective_steps("all_reduce", 64)
    assert collective_bytes("p2p", 2, 10) == 10 and collective_steps("p2p", 2) == 1


def test_all_to_all_brute_force():
    n, M = 4, 40
    buffers = [[(src, dst) for dst in range(n)] for src in range(n)]  # chunk dst of src's buffer
    sent = [sum(M // n for (s, d) in buf if d != s) for buf in buffers]
    assert sent == [collective_bytes("all_to_all", n, M)] * n


def test_collective_seconds_links():
    h100 = accelerator("H100")
    M = 10**9
    inside = collective_seconds("all_reduce", 8, M, "H100")
    assert inside == pytest.approx(14 * h100.scale_up.latency + 2 * 7 / 8 * M / h100.scale_up.bandwidth)
    # 16 neighbours = 2 nodes of 8: a GPU's ring traffic leaves its node on 1 of 8 rings
    sent = 2 * 15 / 16 * M
    across = collective_seconds("all_reduce", 16, M, "H100")
    assert across == pytest.approx(30 * h100.scale_out.latency + max(
        sent / 8 / h100.scale_out.bandwidth, sent * 7 / 8 / h100.scale_up.bandwidth))
    assert collective_seconds("all_reduce", 16, M, "H100", link="scale_out") == pytest.approx(
        30 * h100.scale_out.latency + sent / h100.scale_out.bandwidth)
    assert collective_seconds("all_reduce", 8, M, "H100", link="scale_out") > inside
    # a group of 2 whose members are 8 apart crosses nodes
    assert collective_seconds("all_reduce", 2, M, "H100", span=16) == pytest.approx(
        collective_seconds("all_reduce", 2, M, "H100", link="scale_out"))
    # an all-to-all over 64 GPUs in 8 nodes: 56 of the 63 foreign chunks leave the node; NCCL and
    # DeepEP post the 63 sends at once (one latency), a pairwise exchange pays 63 in sequence
    a2a = collective_bytes("all_to_all", 64, M)
    links = max(a2a * 56 / 63 / h100.scale_out.bandwidth, a2a * 7 / 63 / h100.scale_up.bandwidth)
    assert collective_seconds("all_to_all", 64, M, "H100") == pytest.approx(h100.scale_out.latency + links)
    assert collective_seconds("all_to_all", 64, M, "H100", algorithm="pairwise") == pytest.approx(
        63 * h100.scale_out.latency + links)


@pytest.mark.parametrize("call, match", [
    (lambda: collective_bytes("broadcast", 4, 1), "kind must be one of"),
    (lambda: collective_bytes("all_reduce", 0, 1), "n must be an integer >= 1"),
    (lambda: collective_bytes("all_reduce", 4, -1), "message_bytes must be >= 0"),
    (lambda: collective_bytes("all_gather", 4, 1, "tree"), "algorithm='tree' is defined for kind='all_reduce'"),
    (lambda: collective_bytes("p2p", 3, 1), "n=2"),
    (lambda: collective_steps("all_reduce", 4, "butterfly"), "algorithm must be one of"),
    (lambda: collective_seconds("all_reduce", 16, 1, "H100", link="scale_up"), "scale-up domain"),
    (lambda: collective_seconds("all_reduce", 4, 1, "H100", link="pcie"), "link must be one of"),
    (lambda: collective_seconds("all_reduce", 4, 1, "Z80"), "gpu must be one of"),
])
def test_collective_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ------------------------------------------------------------------------------------ the layout
def test_layout_properties():
    lay = Layout.for_gpus(1024, tp=8, pp=16, microbatches=192)
    assert (lay.dp, lay.n_gpus, lay.global_batch) == (8, 1024, 1536)
    assert lay.replace(microbatch_size=2).global_batch == 3072
    with pytest.raises(ValueError, match="tp \\* pp \\* cp = 24 must divide n_gpus = 1024"):
        Layout.for_gpus(1024, tp=8, pp=3)


@pytest.mark.parametrize("kwargs, match", [
    (dict(tp=0), "tp must be an integer >= 1"),
    (dict(zero_stage=4), "zero_stage must be an integer <= 3"),
    (dict(dp=6, ep=4), "ep=4 must divide dp=6"),
    (dict(pp=4, microbatches=8, virtual_stages=2), "virtual_stages=2 needs a schedule with several chunks"),
    (dict(pp=4, microbatches=8, schedule="zbv", virtual_stages=4), "exactly two chunks per GPU"),
    (dict(pp=4, microbatches=4, schedule="dualpipev", virtual_stages=2), "microbatches >= 2 pp = 8"),
    (dict(pp=4, microbatches=3), "schedule='1f1b' needs microbatches >= pp"),
    (dict(pp=4, microbatches=6, schedule="interleaved", virtual_stages=2), "pp=4 to divide microbatches=6"),
    (dict(schedule="zb-v"), "schedule must be one of"),
    (dict(recompute="some"), "recompute must be one of"),
    (dict(pp=2, microbatches=2, stage_layers=(1, 2, 3)), "stage_layers must have pp \\* virtual_stages = 2"),
])
def test_layout_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Layout(**kwargs)


def test_gpipe_takes_fewer_microbatches_than_stages():
    assert Layout(pp=8, microbatches=2, schedule="gpipe").microbatches == 2


@pytest.mark.parametrize("cfg_kw, layout, seq, match", [
    (dict(a=6, h=60), Layout(tp=4), None, "tp=4 must divide n_heads=6"),
    (dict(a=8, n_kv_heads=2), Layout(tp=4), None, "tp=4 must divide n_kv_heads=2"),
    (dict(ffn_size=250), Layout(tp=4), None, "tp=4 must divide ffn_size=250"),
    (dict(L=6), Layout(pp=4, microbatches=4), None, "pp \\* virtual_stages = 4 must divide n_layers=6"),
    (dict(L=6), Layout(pp=2, microbatches=2, stage_layers=(2, 3)), None, "stage_layers must sum to n_layers=6"),
    (dict(), Layout(cp=4), 100, "2 \\* cp must divide seq=100"),
    (dict(), Layout(tp=4, sequence_parallel=True), 102, "tp=4 to divide seq / cp = 102"),
    (dict(), Layout(dp=2, ep=2), None, "needs a mixture of experts"),
])
def test_check_layout_errors(cfg_kw, layout, seq, match):
    with pytest.raises(ValueError, match=match):
        check_layout(_gpt(**cfg_kw), layout, seq)


def test_check_layout_moe_errors():
    moe = preset("mixtral-8x7b")
    with pytest.raises(ValueError, match="ep=16 must divide n_experts=8"):
        check_layout(moe, Layout(dp=16, ep=16))
    with pytest.raises(ValueError, match="needs sequence_parallel=True"):
        check_layout(moe, Layout(tp=2, dp=2, ep=2))
    with pytest.raises(ValueError, match="encoder-decoder"):
        check_layout(preset("t5-base"), Layout())
    with pytest.raises(TypeError, match="layout must be a Layout"):
        check_layout(moe, {"tp": 2})


# ------------------------------------------------------------------------------- what GPUs hold
@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 50), min_size=1, max_size=3).map(tuple), st.integers(1, 9))
def test_fsdp_shard_numel_is_torch_chunk(shape, n):
    rows = list(range(shape[0]))
    chunk = math.ceil(shape[0] / n)
    pieces = [rows[i:i + chunk] for i in range(0, shape[0], chunk)]  # torch.chunk's pieces
    pieces += [[]] * (n - len(pieces))  # ranks past the end get nothing
    rest = math.prod(shape[1:])
    assert [fsdp_shard_numel(shape, n, r) for r in range(n)] == [len(p) * rest for p in pieces]
    assert fsdp_shard_numel(shape, n) == chunk * rest >= max(len(p) for p in pieces) * rest


def test_fsdp_shard_errors():
    with pytest.raises(TypeError, match="shape must be a non-empty tuple"):
        fsdp_shard_numel([3, 4], 2)
    with pytest.raises(ValueError, match="rank must be an integer <= 1"):
        fsdp_shard_numel((3, 4), 2, 2)


def test_pipeline_stage_layers_partition():
    cfg = _gpt(L=16)
    plain = pipeline_stage_layers(cfg, Layout(pp=4, microbatches=4))
    assert plain == tuple(tuple(range(4 * r, 4 * r + 4)) for r in range(4))
    inter = pipeline_stage_layers(cfg, Layout(pp=4, microbatches=4, schedule="interleaved", virtual_stages=2))
    assert inter[0] == (0, 1, 8, 9) and inter[3] == (6, 7, 14, 15)
    uneven = pipeline_stage_layers(cfg, Layout(pp=4, microbatches=4, stage_layers=(3, 5, 5, 3)))
    assert [len(x) for x in uneven] == [3, 5, 5, 3]
    for stages in (plain, inter, uneven):
        assert sorted(i for s in stages for i in s) == list(range(16))


@pytest.mark.parametrize("name", ["gpt3-175b", "llama-3.1-405b", "deepseek-v3", "mixtral-8x7b", "gemma-2-2b"])
@pytest.mark.parametrize("pp", [1, 2])
def test_stage_params_sum_to_the_model(name, pp):
    cfg = preset(name)
    L = cfg.n_layers
    sizes = (L // 2, L - L // 2) if pp == 2 else ()
    ep = 8 if cfg.is_moe else 1
    layout = Layout(pp=pp, dp=8, ep=ep, microbatches=2, stage_layers=sizes)
    counts = stage_param_counts(cfg, layout)
    total = sum(c["dense"] + ep * c["expert"] for c in counts)
    copy = cfg.vocab_size * cfg.embedding_dim if cfg.tie_embeddings and pp > 1 else 0  # Megatron's tied copy
    assert total == param_count(cfg) + copy


def test_gpt3_tensor_parallel_shard_is_megatrons():
    cfg, t = preset("gpt3-175b"), 8
    h, V, S, L = cfg.hidden_size, cfg.vocab_size, cfg.max_position, cfg.n_layers
    # per layer on one GPU: 12h^2/t weights, QKV and fc1 biases split, output biases and LNs whole
    layer = 12 * h * h // t + (3 * h + 4 * h) // t + 2 * h + 4 * h
    embed = math.ceil(V / t) * h + S * h
    (stage,) = stage_param_counts(cfg, Layout(tp=t))
    assert stage["dense"] == L * layer + embed + 2 * h and stage["expert"] == 0


def test_deepseek_v3_expert_parallel_counts():
    cfg = preset("deepseek-v3")
    (one,) = stage_param_counts(cfg, Layout(dp=64, ep=64))
    moe_layers = sum(1 for s in cfg.layers if s.mlp == "moe")
    per_expert = 3 * cfg.hidden_size * cfg.expert_ffn_size
    assert one["expert"] == moe_layers * (cfg.n_experts // 64) * per_expert


# ----------------------------------------------------------------------------------- the pipeline
def test_bubble_fraction_formulas():
    p, m, v = sp.symbols("p m v", positive=True)
    ratio = (p - 1) / (v * m)  # Narayanan et al.: bubble time / ideal time
    for pp_, m_, v_ in [(4, 8, 1), (16, 32, 1), (8, 16, 4)]:
        sched = "interleaved" if v_ > 1 else "1f1b"
        x = float(ratio.subs({p: pp_, m: m_, v: v_}))
        assert pipeline_bubble_fraction(pp_, m_, sched, v_, relative_to="compute") == pytest.approx(x)
        assert pipeline_bubble_fraction(pp_, m_, sched, v_) == pytest.approx(x / (1 + x))
    assert pipeline_bubble_fraction(4, 2, "gpipe") == pytest.approx(3 / 5)
    with pytest.raises(ValueError, match="relative_to must be one of"):
        pipeline_bubble_fraction(4, 8, relative_to="ideal")


def test_in_flight():
    assert [pipeline_in_flight(4, 8, "1f1b", stage=r) for r in range(4)] == [4, 3, 2, 1]
    assert pipeline_in_flight(4, 8, "gpipe", stage=3) == 8
    assert pipeline_in_flight(4, 2, "gpipe") == 2
    for p_, v_ in [(4, 2), (8, 4), (16, 3)]:
        chunks = pipeline_in_flight(p_, 4 * p_, "interleaved", v_)
        assert chunks == p_ * (v_ + 1) - 1
        assert sp.nsimplify(sp.Rational(chunks, v_) / p_) == 1 + sp.Rational(p_ - 1, p_ * v_)
    with pytest.raises(ValueError, match="stage must be an integer <= 3"):
        pipeline_in_flight(4, 8, stage=4)


# ------------------------------------------------------------------------------------ activations
def test_stage_activations_single_gpu_is_activation_bytes_plus_ends():
    """Composition: activation_bytes plus the pipeline ends (a full hand count is tests/test_hand_counts.py)."""
    cfg, b, s = _gpt(), 2, 32
    lay = Layout(microbatch_size=b)
    got = stage_activation_bytes(cfg, lay, s)
    layers = activation_bytes(cfg, b, s)["total"]
    sbh, V = b * s * cfg.hidden_size, cfg.vocab_size
    assert got == layers + sbh + 2 * 2 * sbh + 4 * b * s * V


def test_first_stage_holds_all_layers_worth_korthikanti():
    """Composition with activation_bytes, against Korthikanti et al.'s in-flight micro-batch count."""
    # Korthikanti et al.: with 1F1B the first stage keeps p micro-batches of L/p layers
    cfg, p = _gpt(L=16), 4
    lay = Layout(pp=p, microbatches=8, tp=2, sequence_parallel=True, recompute="selective")
    per_layer = activation_bytes(cfg, 1, 64, recompute="selective", tensor_parallel=2, sequence_parallel=True,
                                 dropout=False)
    first = stage_activation_bytes(cfg, lay, 64, dropout=False)
    assert first == cfg.n_layers * per_layer["per_layer"]
    assert stage_activation_bytes(cfg, lay, 64, 1, dropout=False) == 3 * (cfg.n_layers // p) * per_layer["per_layer"]


def test_context_parallel_scores_see_every_key():
    """Composition with activation_bytes (its terms are checked in tests/test_memory.py)."""
    cfg, s, c = _gpt(), 64, 4
    with_cp = stage_activation_bytes(cfg, Layout(cp=c), s, dropout=False, cp_style="ring")
    full = activation_bytes(cfg, 1, s, dropout=False)["terms"]
    local = activation_bytes(cfg, 1, s // c, dropout=False)["terms"]
    # each rank: s/c queries x s keys of scores, the rest at s/c tokens
    expect = cfg.n_layers * (sum(local.values()) - local["softmax_output"] + full["softmax_output"] // c)
    sbh = s // c * cfg.hidden_size
    assert with_cp == expect + 2 * 2 * sbh + 4 * (s // c) * cfg.vocab_size
    # all-gather CP keeps each layer's gathered keys and values (s x 2 h values) instead of its own s/c
    gathered = stage_activation_bytes(cfg, Layout(cp=c), s, dropout=False)
    assert gathered - with_cp == cfg.n_layers * 2 * (s - s // c) * 2 * cfg.hidden_size


def test_memory_zero_and_most_loaded():
    """Composition with training_state_bytes; the hand count with experts is tests/test_hand_counts.py."""
    cfg = _gpt(L=8)
    lay = Layout(pp=2, dp=4, zero_stage=1, microbatches=4)
    rows = memory_per_stage(cfg, lay, 64)
    for r, row in enumerate(rows):
        n = stage_param_counts(cfg, lay)[r]["dense"]
        state = training_state_bytes(n, zero_stage=1, n_gpus=4)
        assert all(row[k] == state[k] for k in MEMORY_KEYS[:5])
        assert row["total"] == state["total"] + row["activations"]
    worst = memory_per_gpu(cfg, lay, 64)
    assert worst["total"] == max(r["total"] for r in rows) and rows[worst["stage"]]["total"] == worst["total"]


# ---------------------------------------------------------------------------------- communication
def test_data_parallel_volume_zero_paper():
    cfg = _gpt()
    P = stage_param_counts(cfg, Layout(dp=8))[0]["dense"]
    vols = {z: communication_bytes(cfg, Layout(dp=8, zero_stage=z), 64)["dp"] for z in (0, 1, 3)}
    assert vols[0] == pytest.approx(2 * 7 / 8 * 2 * P)  # an all-reduce of 2-byte gradients
    assert vols[1] == pytest.approx(vols[0])  # reduce-scatter + all-gather: the same volume
    assert vols[3] == pytest.approx(1.5 * vols[0])  # ZeRO paper: stage 3 moves 1.5x data parallelism's


def test_tensor_parallel_volume_narayanan():
    # Narayanan et al.: per micro-batch and layer 8 b s h (t-1)/t elements (4 all-reduces)
    cfg, b, s, t = _gpt(), 2, 64, 4
    lay = Layout(tp=t, microbatch_size=b)
    tp = communication_bytes(cfg, lay, s, bytes_per_value=1)["tp"]
    assert tp == pytest.approx(cfg.n_layers * 8 * b * s * cfg.hidden_size * (t - 1) / t)
    sp_lay = lay.replace(sequence_parallel=True)
    assert communication_bytes(cfg, sp_lay, s, bytes_per_value=1, sp_saves_gathered=True)["tp"] == pytest.approx(tp)
    # Megatron-LM re-gathers the saved shards in the backward: 2 more all-gathers per layer (10 halves, not 8)
    assert communication_bytes(cfg, sp_lay, s, bytes_per_value=1)["tp"] == pytest.approx(1.25 * tp)


def test_pipeline_context_expert_collectives():
    cfg = _gpt(L=8)
    lay = Layout(pp=4, microbatches=8, microbatch_size=2)
    sends = {(c.phase, c.count) for c in step_collectives(cfg, lay, 64, stage=1) if c.parallelism == "pp"}
    assert sends == {("forward", 8), ("backward", 8)}
    first = {(c.phase, c.count) for c in step_collectives(cfg, lay, 64, stage=0) if c.parallelism == "pp"}
    assert first == {("forward", 8)}
    cp = [c for c in step_collectives(cfg, Layout(cp=4), 64) if c.parallelism == "cp"]
    # all-gather CP (PyTorch's, Llama 3's): K, V gathered once, their gradients reduce-scattered
    assert {(c.kind, c.phase, c.count) for c in cp} == {("all_gather", "forward", cfg.n_layers),
                                                        ("reduce_scatter", "backward", cfg.n_layers)}
    assert {c.message for c in cp} == {64 * 2 * 64 * 2}
    ring = [c for c in step_collectives(cfg, Layout(cp=4), 64, cp_style="ring") if c.parallelism == "cp"]
    assert sum(c.count for c in ring) == 3 * cfg.n_layers  # ring attention: K, V pass round again backward
    # Ulysses: all-to-all of q, k, v and the output (s/c tokens x h each) in each pass
    uly = [c for c in step_collectives(cfg, Layout(cp=4), 64, cp_style="ulysses") if c.parallelism == "cp"]
    assert {c.kind for c in uly} == {"all_to_all"} and sum(c.count for c in uly) == 8 * cfg.n_layers
    assert {c.message for c in uly} == {64 // 4 * 64 * 2}
    moe = preset("mixtral-8x7b")
    a2a = [c for c in step_collectives(moe, Layout(dp=8, ep=8), 4096) if c.parallelism == "ep"]
    assert sum(c.count for c in a2a) == 4 * moe.n_layers
    assert {c.message for c in a2a} == {4096 * moe.experts_per_token * moe.hidden_size * 2}


def test_communication_seconds_placement():
    """Composition: collective_steps and collective_bytes (brute-forced above) on the pinned links."""
    cfg = preset("gpt3-175b")
    lay = Layout(tp=8, pp=16, dp=8, microbatches=16)
    secs = communication_seconds(cfg, lay, 2048, "A100")
    by_hand = {"tp": 0.0, "dp": 0.0}
    a100 = accelerator("A100")
    for c in step_collectives(cfg, lay, 2048):
        if c.parallelism in by_hand:
            link = a100.scale_up if c.parallelism == "tp" else a100.scale_out  # tp in a node, dp across
            by_hand[c.parallelism] += c.count * (collective_steps(c.kind, c.group) * link.latency
                                                 + collective_bytes(c.kind, c.group, c.message) / link.bandwidth)
    assert secs["tp"] == pytest.approx(by_hand["tp"]) and secs["dp"] == pytest.approx(by_hand["dp"])


def test_tp_ratio_from_collectives_and_flops():
    """Composition: the closed form against communication_bytes and layer_forward_flops."""
    # the closed form against llmmath's own counts: one GPT layer's tp bytes over its weight FLOPs
    for name, t in (("gpt3-175b", 8), ("llama-3-8b", 2)):
        cfg = preset(name)
        one = TransformerConfig(n_layers=1, hidden_size=cfg.hidden_size, n_heads=cfg.n_heads, vocab_size=8,
                                max_position=2048)
        sent = communication_bytes(one, Layout(tp=t), 2048)["tp"]
        flops = 3 * layer_forward_flops(one, 1, 2048)
        flops -= 3 * 4 * 2048 * 2048 * cfg.hidden_size  # leave out attention's s^2 products
        a100 = accelerator("A100")
        want = (sent / a100.scale_up.bandwidth) / (flops / t / gpu_peak_flops("A100"))
        assert tp_comm_compute_ratio(cfg.hidden_size, t, "A100") == pytest.approx(want)
    with pytest.raises(ValueError, match="link must be one of"):
        tp_comm_compute_ratio(4096, 8, "A100", link="auto")


def test_dp_hiding_tokens_is_peak_over_bandwidth():
    """Composition with the accelerator table; the literal is in tests/test_hand_counts.py."""
    h100 = accelerator("H100")
    # 2g bytes per parameter against 2/3 x 6 FLOPs per parameter and token: T = peak / beta for g = 2
    assert dp_hiding_tokens(7e9, "H100") == pytest.approx(gpu_peak_flops("H100") / h100.scale_out.bandwidth)
    # ZeRO-3's gathers hide in the forward and backward of the same micro-batch: the same threshold
    assert dp_hiding_tokens(7e9, "H100", zero_stage=3) == pytest.approx(dp_hiding_tokens(7e9, "H100"))
    with pytest.raises(ValueError, match="link must be one of"):
        dp_hiding_tokens(7e9, "H100", link="auto")


# ------------------------------------------------------------------------------- step time, search
def test_step_time_single_gpu_is_flops_over_rate():
    """On one GPU the bound is the FLOPs the step executes (causal pairs, the layout's recomputation)
    at peak, and its MFU the model FLOPs over them; the prediction adds the kernels' efficiency."""
    cfg, b, s = _gpt(), 4, 64
    for rec in ("none", "full"):
        lay = Layout(microbatch_size=b, microbatches=2, recompute=rec)
        est = step_time(cfg, lay, s, "H100", mode="bound")
        hw = 2 * training_flops(cfg, b, s, recompute=rec == "full", skip_masked=True)
        assert est["step"] == pytest.approx(hw / gpu_peak_flops("H100"))
        assert est["bubble"] == 0 and est["exposed_communication"] == 0
        assert est["mfu"] == pytest.approx(2 * training_flops(cfg, b, s, skip_masked=True) / hw)
        assert est["hfu"] == pytest.approx(1.0)
        pred = step_time(cfg, lay, s, "H100", efficiency=0.5, flash_attention=False)
        # half the peak, plus the memory-bound non-matmul kernels (norms, activations) at the HBM bandwidth
        assert pred["compute"] > 2 * est["compute"] and pred["step"] > pred["compute"]


def test_step_time_bubble():
    """1F1B: (p - 1) micro-batch times of bubble plus the p2p hops of the fill and the drain; the
    interleaved schedule halves the first part with v = 2."""
    cfg = _gpt(L=8, h=1024, V=8)  # wide enough that the p2p sends hide behind compute
    lay = Layout(pp=4, microbatches=8)
    kw = dict(overlap=("dp", "cp", "pp", "tp", "ep"), efficiency=0.5, link_efficiency=1.0)
    est = step_time(cfg, lay, 128, "H100", **kw)
    hop = collective_seconds("p2p", 2, 128 * 1024 * 2, "H100")  # one activation, NVLink
    t_mb = est["compute"] / 8
    assert est["bubble"] == pytest.approx(3 * t_mb + 2 * 3 * hop)
    assert est["exposed_communication"] == 0
    inter = step_time(cfg, lay.replace(schedule="interleaved", virtual_stages=2), 128, "H100", **kw)
    assert inter["bubble"] == pytest.approx(3 * t_mb / 2 + 2 * 3 * hop)
    with pytest.raises(ValueError, match="efficiency must lie in"):
        step_time(cfg, lay, 128, "H100", efficiency=1.5)
    with pytest.raises(ValueError, match="overlap must be a tuple"):
        step_time(cfg, lay, 128, "H100", overlap=("fsdp",))


def test_search_layouts():
    cfg = preset("llama2-7b")
    plans = search_layouts(cfg, 16, "A100", 4096, 64, flash_attention=True, dropout=False)
    assert plans and all(p.layout.n_gpus == 16 and p.layout.global_batch == 64 for p in plans)
    fitting = [p for p in plans if p.fits]
    assert fitting and plans[:len(fitting)] == fitting
    assert [p.step for p in fitting] == sorted(p.step for p in fitting)
    for p in plans[:5]:
        check_layout(cfg, p.layout, 4096)
        assert p.memory == memory_per_gpu(cfg, p.layout, 4096, flash_attention=True, dropout=False)["total"]
        # the search keeps the stated reserve free (CUDA context, NCCL buffers, fragmentation)
        assert p.fits == (p.memory <= 0.9 * accelerator("A100").memory_bytes)


def test_search_skips_interleaving_without_a_pipeline_and_ranks_at_the_requested_peak():
    from llmmath import Layout, preset, search_layouts, step_time

    cfg = preset("llama-3-8b")
    plans = search_layouts(cfg, 16, "H100", 2048, 64, virtual_stages=(1, 2), recompute=("full",))
    assert all(p.layout.pp > 1 for p in plans if p.layout.virtual_stages > 1)
    assert len({p.layout for p in plans}) == len(plans)
    fp8 = search_layouts(cfg, 16, "H100", 2048, 64, tp=(1,), pp=(1,), recompute=("full",),
                         microbatch_sizes=(1,), peak_precision="fp8_tensor")
    layout = Layout(dp=16, microbatches=4, recompute="full", zero_stage=1)
    assert fp8[0].layout == layout
    assert fp8[0].step == step_time(cfg, layout, 2048, "H100", precision="fp8_tensor")["step"]


# ------------------------------------------------------------------------ in-switch reduction (issue 26)
def _switch_all_reduce(n: int, data: np.ndarray, algorithm: str) -> tuple[np.ndarray, list[int], list[int]]:
    """All-reduce ``data[r]`` through a reducing switch, counting each GPU's bytes on its link.

    ``nvls`` (NVLink SHARP): GPU ``r`` owns slice ``r``; it asks the switch for the sum of slice ``r``
    (the switch reads slice ``r`` of every GPU: each GPU's link carries that slice out), receives
    the sum, and stores it to the multicast address (out once; the switch writes it into every
    GPU: each link carries it in). ``sharp``: each GPU sends its whole buffer up and receives the
    sum."""
    M = data.shape[1]
    sent, received = [0] * n, [0] * n
    out = np.zeros_like(data, dtype=float)
    if algorithm == "sharp":
        total = data.sum(axis=0)
        for r in range(n):
            sent[r] += M
            received[r] += M
            out[r] = total
        return out, sent, received
    slices = np.array_split(np.arange(M), n)
    for owner, idx in enumerate(slices):
        partial = np.zeros(len(idx))
        for r in range(n):  # the switch reads slice `owner` from every GPU
            partial += data[r, idx]
            sent[r] += len(idx)
        received[owner] += len(idx)  # the sum comes back to the owner
        sent[owner] += len(idx)  # which multicasts it
        for r in range(n):
            out[r, idx] = partial
            received[r] += len(idx)
    return out, sent, received


@pytest.mark.parametrize("algorithm", ["nvls", "sharp"])
@pytest.mark.parametrize("n", [2, 4, 8])
def test_in_switch_all_reduce_brute_force(algorithm, n):
    rng = np.random.default_rng(n)
    M = 24 * n
    data = rng.standard_normal((n, M))
    out, sent, received = _switch_all_reduce(n, data, algorithm)
    assert np.allclose(out, data.sum(axis=0))
    want = collective_bytes("all_reduce", n, M, algorithm)
    assert sent == received == [want] * n
    # less than the ring's 2 (n-1)/n M from n = 4 (NVLS: n + 1 < 2n - 2) or n = 3 (SHARP)
    assert (want < collective_bytes("all_reduce", n, M)) == (n > (3 if algorithm == "nvls" else 2))
    assert collective_steps("all_reduce", n, algorithm) == 2


def test_in_switch_seconds_and_errors():
    h100, M = accelerator("H100"), 10**9
    assert collective_seconds("all_reduce", 8, M, "H100", algorithm="nvls") == pytest.approx(
        2 * h100.scale_up.latency + 9 / 8 * M / h100.scale_up.bandwidth)
    # SHARP over 2 nodes of 8: reduce-scatter and all-gather in the node, M/8 per GPU through the switches
    up = 2 * 7 / 8 * M / h100.scale_up.bandwidth
    out = M / 8 / h100.scale_out.bandwidth
    assert collective_seconds("all_reduce", 16, M, "H100", algorithm="sharp") == pytest.approx(
        2 * 7 * h100.scale_up.latency + 2 * h100.scale_out.latency + max(up, out))
    with pytest.raises(ValueError, match="has none"):
        collective_seconds("all_reduce", 8, M, "A100", algorithm="nvls")
    with pytest.raises(ValueError, match="must fit in the 8 GPUs"):
        collective_seconds("all_reduce", 16, M, "H100", algorithm="nvls")
    with pytest.raises(ValueError, match="more than one"):
        collective_seconds("all_reduce", 8, M, "H100", algorithm="sharp")
    with pytest.raises(ValueError, match="algorithm='nvls' is defined for kind='all_reduce'"):
        collective_bytes("reduce_scatter", 8, M, "nvls")
    with pytest.raises(ValueError, match="algorithm='pairwise' is defined for kind='all_to_all'"):
        collective_bytes("all_reduce", 8, M, "pairwise")


def test_in_switch_options_reach_the_step():
    """tp_algorithm / dp_algorithm change the collectives' algorithm and the predicted exposed time."""
    cfg = preset("llama2-7b")
    lay = Layout(tp=8, dp=4, microbatches=2)
    nvls = [c for c in step_collectives(cfg, lay, 2048, tp_algorithm="nvls") if c.parallelism == "tp"]
    assert {c.algorithm for c in nvls} == {"nvls"}
    ring = communication_bytes(cfg, lay, 2048)["tp"]
    assert communication_bytes(cfg, lay, 2048, tp_algorithm="nvls")["tp"] == pytest.approx(ring * (9 / 8) / (14 / 8))
    kw = dict(efficiency=0.5, overlap=("dp", "cp", "pp"))
    assert (step_time(cfg, lay, 2048, "H100", tp_algorithm="nvls", **kw)["exposed"]["tp"]
            < step_time(cfg, lay, 2048, "H100", **kw)["exposed"]["tp"])
    sharp = [c for c in step_collectives(cfg, Layout(dp=16), 2048, dp_algorithm="sharp") if c.parallelism == "dp"]
    assert [(c.kind, c.algorithm) for c in sharp] == [("all_reduce", "sharp")]


# ------------------------------------------------------------ TP plans, CP memory, ZeRO options (issue 26)
@pytest.mark.parametrize("name", ["llama2-7b", "qwen2-0.5b", "phi-2"])
def test_tp_backward_allreduces_count_transformers_colwise_modules(name):
    """transformers' own plan: each 'colwise' entry of a layer reads the block input on its own."""
    transformers = pytest.importorskip("transformers")
    from llmmath.parallel import tp_backward_allreduces

    cfg = preset(name)
    family = {"llama2-7b": "llama", "qwen2-0.5b": "qwen2", "phi-2": "phi"}[name]
    plan = transformers.AutoConfig.for_model(family).base_model_tp_plan
    colwise = sum(1 for key, style in plan.items() if "layers.*." in key and style.startswith("colwise"))
    assert tp_backward_allreduces(cfg, "transformers") == colwise
    assert tp_backward_allreduces(cfg) == 2


def test_cp_gathered_kv_of_llama3_405b():
    """Issue 26: 'about 67 MB per layer for Llama 3 405B at 128K, t = 8': 8 KV heads of 128 for K and
    V, 131,072 tokens, BF16, split over 8 tensor-parallel GPUs."""
    from llmmath.context_parallel import cp_gathered_kv_bytes

    l3 = preset("llama-3.1-405b")
    assert (l3.n_kv_heads, l3.head_dim) == (8, 128)
    assert cp_gathered_kv_bytes(l3, 1, 131072, 8) == 131072 * 2 * 8 * 128 * 2 // 8 == 67_108_864


def test_hybrid_sharding_collectives():
    """HSDP: ZeRO-3 over a shard group of 4, the reduced shards all-reduced over 2 replicas."""
    cfg = _gpt()
    P = stage_param_counts(cfg, Layout(dp=8))[0]["dense"]
    lay = Layout(dp=8, zero_stage=3, shard_group=4, microbatches=3)
    got = {(c.kind, c.group, c.message, c.count, c.phase, c.stride) for c in step_collectives(cfg, lay, 64)}
    assert got == {("all_gather", 4, 2 * P, 3, "forward", 1), ("all_gather", 4, 2 * P, 3, "backward", 1),
                   ("reduce_scatter", 4, 2 * P, 3, "backward", 1),
                   ("all_reduce", 2, 2 * math.ceil(P / 4), 1, "step", 4)}
    mem = memory_per_gpu(cfg, lay, 64)
    assert mem["optimizer_states"] == 8 * math.ceil(P / 4)  # sharded over the 4, not the 8
    with pytest.raises(ValueError, match="shard_group=3 must divide"):
        Layout(dp=8, zero_stage=3, shard_group=3)
    with pytest.raises(ValueError, match="needs zero_stage >= 1"):
        Layout(dp=8, shard_group=4)


def test_shard_grad_op_gathers_every_microbatch():
    cfg = _gpt()
    P = stage_param_counts(cfg, Layout(dp=4))[0]["dense"]
    deepspeed = Layout(dp=4, zero_stage=2, microbatches=3)
    fsdp = deepspeed.replace(reshard_after_backward=True)
    ag = {(c.count, c.phase) for c in step_collectives(cfg, deepspeed, 64) if c.kind == "all_gather"}
    assert ag == {(1, "step")}
    ag = {(c.count, c.phase) for c in step_collectives(cfg, fsdp, 64) if c.kind == "all_gather"}
    assert ag == {(3, "forward")}
    assert memory_per_gpu(cfg, fsdp, 64) == memory_per_gpu(cfg, deepspeed, 64)  # whole parameters at the peak
    # per micro-batch an all-gather and a reduce-scatter of the 2-byte model, (n-1)/n of it each
    assert communication_bytes(cfg, fsdp, 64)["dp"] == pytest.approx(3 * 2 * (3 / 4) * 2 * P)
    with pytest.raises(ValueError, match="needs zero_stage=2"):
        Layout(dp=4, zero_stage=3, reshard_after_backward=True)


def test_deepseek_v3_state_and_dualpipe_copies():
    """DeepSeek-V3's run: BF16 parameters, FP32 gradients and master weights, BF16 Adam moments
    (2 + 4 + 4 + 2 x 2 = 14 bytes per parameter), ZeRO-1; DualPipe holds two copies of a stage."""
    cfg = _gpt(L=8)
    lay = Layout(pp=2, dp=4, zero_stage=1, microbatches=4)
    P = stage_param_counts(cfg, lay)[0]["dense"]
    kw = dict(precision="mixed-fp32-main-grads", optimizer_bytes_per_value=2)
    one = memory_per_stage(cfg, lay, 64, **kw)[0]
    assert (one["parameters"], one["gradients"]) == (2 * P, 4 * P)
    assert one["master_weights"] + one["optimizer_states"] == (4 + 4) * math.ceil(P / 4)
    two = memory_per_stage(cfg, lay, 64, parameter_copies=2, **kw)[0]
    assert (two["parameters"], two["gradients"]) == (4 * P, 8 * P)
    # the copies are data-parallel replicas: ZeRO shards their master weights and moments over 2 x 4
    assert two["master_weights"] + two["optimizer_states"] == (4 + 4) * math.ceil(2 * P / 8)
    assert two["activations"] == one["activations"]


def test_zero3_gathered_layers():
    """ZeRO-3 holds its largest unit whole while computing, one more prefetched, and that unit's
    whole gradient until it is reduce-scattered."""
    cfg = _gpt(L=4, h=64, V=100)
    h = cfg.hidden_size
    layer = 12 * h * h + 13 * h  # a GPT layer: weights, biases, two LayerNorms
    embed = (cfg.vocab_size + cfg.max_position) * h + 2 * h  # token and position tables, the final norm
    assert stage_param_counts(cfg, Layout())[0]["dense"] == 4 * layer + embed
    unit = max(layer, embed)
    for prefetch in (0, 1, 2):
        mem = memory_per_gpu(cfg, Layout(dp=4, zero_stage=3), 64, zero3_prefetch=prefetch)
        assert mem["gathered"] == (1 + prefetch) * 2 * unit + 2 * unit
    assert memory_per_gpu(cfg, Layout(dp=4, zero_stage=2), 64)["gathered"] == 0


def test_interleaved_round_size():
    """Megatron-LM's warm-up, 2 (p-1-r) + (v-1) N forwards, then the one that precedes the first
    backward: N = p by default; each micro-batch more per round holds v - 1 more chunks."""
    p, v = 16, 8
    assert pipeline_in_flight(p, 32, "interleaved", v, 1) == 2 * (p - 2) + (v - 1) * p + 1 == 141
    for N in (16, 32):
        assert pipeline_in_flight(p, 32, "interleaved", v, 1, round_size=N) == 2 * (p - 2) + (v - 1) * N + 1
    lay = Layout(pp=4, microbatches=10, schedule="interleaved", virtual_stages=2, round_size=5)
    assert lay.round_size == 5
    with pytest.raises(ValueError, match="round_size must lie in"):
        Layout(pp=4, microbatches=8, schedule="interleaved", virtual_stages=2, round_size=3)
    with pytest.raises(ValueError, match="needs schedule='interleaved'"):
        Layout(pp=4, microbatches=8, round_size=4)


def test_tp_layer_comm_ratio_llama3_70b_across_nodes():
    """Issue 26, item 6: Llama 3 70B's layer has 12.75 h^2 weights (q, o: h^2 each; k, v: h^2/8 each;
    SwiGLU 3 x 3.5 h^2); t = 8 split 4 + 4 over two nodes sends 1/4 of each GPU's ring bytes over its
    own NIC (the link model of collective_link_seconds), t = 16 over two nodes 1/8."""
    from llmmath.parallel import tp_layer_comm_ratio

    cfg, T = preset("llama-3-70b"), 4096
    h = cfg.hidden_size
    assert cfg.kv_dim == h // 8 and cfg.ffn_size * 2 == 7 * h
    weights = 2 * h * h + 2 * h * h // 8 + 3 * h * cfg.ffn_size
    assert weights * 4 == 51 * h * h  # 12.75 h^2
    h100 = accelerator("H100")
    peak, out, up = gpu_peak_flops("H100"), h100.scale_out, h100.scale_up
    M = T * h * 2
    for t, k in ((8, 4), (16, 8)):
        compute = 6 * weights * T / t / peak
        ring = 2 * (t - 1) / t * M
        comm = 4 * (2 * (t - 1) * out.latency + max(ring / k / out.bandwidth, ring * (k - 1) / k / up.bandwidth))
        assert tp_layer_comm_ratio(cfg, t, "H100", T, tp_per_node=k) == pytest.approx(comm / compute)
        bw_only = 4 * ring / k / out.bandwidth / compute
        assert tp_layer_comm_ratio(cfg, t, "H100", T, tp_per_node=k, latency=False) == pytest.approx(bw_only)
    # a GPT layer on one link is the closed form (t - 1) B F / (9 h W)
    g3 = preset("gpt3-175b")
    assert tp_layer_comm_ratio(g3, 8, "A100", 2048, latency=False) == pytest.approx(
        tp_comm_compute_ratio(g3.hidden_size, 8, "A100"))
    with pytest.raises(ValueError, match="tp_per_node must divide"):
        tp_layer_comm_ratio(cfg, 8, "H100", T, tp_per_node=3)


@pytest.mark.parametrize("s, c", [(16, 2), (48, 4), (64, 8)])
def test_cp_causal_pairs_brute_force(s, c):
    """Count the pairs key <= query of each GPU's queries; the zig-zag order is PyTorch's
    _HeadTailLoadBalancer's (chunks r and 2c-1-r of 2c)."""
    from llmmath.context_parallel import cp_causal_pairs

    u = s // (2 * c)
    zigzag = [list(range(r * u, (r + 1) * u)) + list(range((2 * c - 1 - r) * u, (2 * c - r) * u)) for r in range(c)]
    contiguous = [list(range(r * s // c, (r + 1) * s // c)) for r in range(c)]
    for name, split in (("zigzag", zigzag), ("contiguous", contiguous)):
        counts = [sum(1 for q in qs for k in range(s) if k <= q) for qs in split]
        assert [cp_causal_pairs(s, c, r, name) for r in range(c)] == counts
        assert sum(counts) == s * (s + 1) // 2
    assert len({cp_causal_pairs(s, c, r) for r in range(c)}) == 1  # balanced
