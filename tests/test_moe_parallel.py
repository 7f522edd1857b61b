"""Tests of llmmath.moe_parallel and the expert-parallel options of llmmath.parallel (the running
all-to-all is checked in tests/test_distributed.py).

Expected values come from exhaustive enumeration of every routing (exact fractions), hand counts of
small routings, and the published figures of DeepSeek-V3's report (at most 4 nodes per token)."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest

from llmmath import Layout, preset
from llmmath.moe_parallel import dispatch_copies, expected_dispatch_copies
from llmmath.parallel import memory_per_gpu, stage_param_counts, step_collectives


def test_dispatch_copies_by_hand():
    # 4 nodes of 2 GPUs, 2 experts per GPU (16 experts); the source is GPU 1 (node 0, index 1)
    # experts 0, 5, 6, 13: GPUs 0, 2, 3, 6 -> nodes 0, 1, 1, 3
    plain = dispatch_copies([0, 5, 6, 13], 1, 2, 2, hierarchical=False)
    assert plain == (3, 1)  # GPUs 2, 3, 6 are in other nodes; GPU 0 is a neighbour
    # hierarchical: nodes 1 and 3 once each (arriving at GPUs 3 and 7); in node 1 GPU 3 forwards to
    # GPU 2, in node 3 GPU 7 forwards to GPU 6, in node 0 GPU 1 sends to GPU 0
    assert dispatch_copies([0, 5, 6, 13], 1, 2, 2) == (2, 3)
    # two experts on GPU 2 (node 1, index 0) from GPU 0: one copy arriving where it is needed
    assert dispatch_copies([4, 5], 0, 2, 2) == (1, 0)
    assert dispatch_copies([4, 5], 0, 2, 2, hierarchical=False) == (2, 0)
    assert dispatch_copies([6, 7], 0, 2, 2) == (1, 1)  # GPU 3: arrives at GPU 2, forwarded once
    assert dispatch_copies([2, 3], 1, 2, 2) == (0, 0)  # both on the source GPU
    with pytest.raises(ValueError, match="distinct"):
        dispatch_copies([1, 1], 0, 2, 2)


def _enumerate(E: int, k: int, N: int, g: int, M: int, hierarchical: bool) -> tuple[Fraction, Fraction]:
    """Average copies over every choice of M nodes and k experts among theirs, for every source GPU."""
    per_gpu, per_node = E // (N * g), E // N
    total_out = total_up = Fraction(0)
    cases = 0
    for src in range(N * g):
        for chosen in itertools.combinations(range(N), M):
            experts = [e for n in chosen for e in range(n * per_node, (n + 1) * per_node)]
            for pick in itertools.combinations(experts, k):
                gpus = [e // per_gpu for e in pick]
                if hierarchical:
                    targets = set(gpus)
                    remote = {q // g for q in targets} - {src // g}
                    arrive = {n * g + src % g for n in remote}
                    out, up = len(remote), len(targets - arrive - {src})
                else:
                    out = sum(q // g != src // g for q in gpus)
                    up = sum(q // g == src // g and q != src for q in gpus)
                total_out += out
                total_up += up
                cases += 1
    return total_out / cases, total_up / cases


@pytest.mark.parametrize("E, k, N, g, M", [(16, 3, 4, 2, 2), (16, 4, 4, 2, 4), (12, 2, 3, 2, 1), (24, 3, 3, 4, 2)])
@pytest.mark.parametrize("hierarchical", [True, False])
def test_expected_copies_equal_exhaustive_enumeration(E, k, N, g, M, hierarchical):
    want_out, want_up = _enumerate(E, k, N, g, M, hierarchical)
    got = expected_dispatch_copies(E, k, N, g, max_nodes=M, hierarchical=hierarchical)
    assert got["scale_out"] == pytest.approx(float(want_out)) and got["scale_up"] == pytest.approx(float(want_up))


def test_deepseek_v3_node_limited_dispatch():
    """DeepSeek-V3: 256 routed experts, 8 per token, EP 64 over 8 nodes of 8 H800s, at most 4 nodes
    per token: fewer than 4 network copies per token (at most 4), against 7 for a plain all-to-all."""
    ds = preset("deepseek-v3")
    kw = dict(max_nodes=4)
    hier = expected_dispatch_copies(ds.n_experts, ds.experts_per_token, 8, 8, **kw)
    plain = expected_dispatch_copies(ds.n_experts, ds.experts_per_token, 8, 8, hierarchical=False, **kw)
    assert plain["scale_out"] == 8 * 7 / 8
    assert hier["scale_out"] < expected_dispatch_copies(ds.n_experts, ds.experts_per_token, 8, 8, max_nodes=4,
                                                        bound="max")["scale_out"] == 4
    assert 3 < hier["scale_out"] < 4


def test_hierarchical_dispatch_collectives():
    """Two all-to-alls per dispatch whose bytes are the expected copies times a token's h B."""
    ds = preset("deepseek-v3")
    lay = Layout(dp=64, ep=64, microbatches=1)
    s, B = 4096, 2
    hier = [c for c in step_collectives(ds, lay, s, ep_dispatch="hierarchical", max_nodes=4)
            if c.parallelism == "ep" and c.phase == "forward"]
    copies = expected_dispatch_copies(ds.n_experts, ds.experts_per_token, 8, 8, max_nodes=4)
    n_moe = sum(spec.mlp == "moe" for spec in ds.layers)
    (inter,) = [c for c in hier if c.stride == 8]
    (intra,) = [c for c in hier if c.stride == 1]
    assert inter.group == intra.group == 8 and inter.count == intra.count == 2 * n_moe
    assert inter.message * 7 / 8 == pytest.approx(s * copies["scale_out"] * ds.hidden_size * B, rel=1e-8)
    assert intra.message * 7 / 8 == pytest.approx(s * copies["scale_up"] * ds.hidden_size * B, rel=1e-8)


def test_capacity_factor_scales_the_busiest_gpu():
    moe = preset("mixtral-8x7b")
    base, hot = Layout(dp=8, ep=8), Layout(dp=8, ep=8, capacity_factor=1.5)
    a2a = {lay.capacity_factor: [c.message for c in step_collectives(moe, lay, 4096) if c.parallelism == "ep"]
           for lay in (base, hot)}
    assert a2a[1.5] == [round(1.5 * m) for m in a2a[1.0]]
    # the experts' activations grow by C (their width k d_e -> C k d_e); the rest does not
    act = {c: memory_per_gpu(moe, Layout(dp=8, ep=8, capacity_factor=c), 4096, dropout=False)["activations"]
           for c in (1.0, 1.5, 2.0)}
    assert act[2.0] - act[1.5] == pytest.approx(act[1.5] - act[1.0], rel=1e-6) and act[1.5] > act[1.0]
    with pytest.raises(ValueError, match="capacity_factor is the busiest"):
        Layout(capacity_factor=0.9)
    with pytest.raises(ValueError, match="describe experts"):
        stage_param_counts(preset("gpt2"), Layout(capacity_factor=1.2))


def test_expert_tensor_parallel_folding():
    """Megatron-LM's MoE parallel folding: experts whole (expert_tp=1) on a tp=2 layout, replicated
    over tp dp / (ep expert_tp) ranks."""
    moe = preset("mixtral-8x7b")
    h, d = moe.hidden_size, moe.expert_ffn_size
    split = stage_param_counts(moe, Layout(tp=2, dp=4, ep=4, sequence_parallel=True))[0]
    whole = stage_param_counts(moe, Layout(tp=2, dp=4, ep=4, expert_tp=1, sequence_parallel=True))[0]
    assert whole["dense"] == split["dense"]
    assert whole["expert"] == 2 * split["expert"] == moe.n_layers * (moe.n_experts // 4) * 3 * h * d
    folded = Layout(tp=2, dp=4, ep=8, expert_tp=1, sequence_parallel=True)  # ep spans the tp ranks
    assert folded.expert_dp == 1
    with pytest.raises(ValueError, match="must divide tp \\* dp \\* cp"):
        Layout(tp=2, dp=4, ep=16, expert_tp=1)
