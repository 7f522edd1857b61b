"""llmmath.parallel against PyTorch's own distributed code, on CPU with gloo in spawned processes.

``distributed_checks.run`` measures (one process group of 2 ranks and one of 4, each started once
for the whole module); every test here compares a measurement with llmmath's formula:

- FSDP2 ``fully_shard``: each rank's parameter, gradient and AdamW-state numels (padding
  included) and the all-gathers and reduce-scatters of a step;
- tensor parallelism (``parallelize_module``): local shard shapes, and the number and size of the
  collectives per forward and backward (``CommDebugMode``), with ``transformers``' own plan and
  with a Megatron-style plan; with sequence parallelism too;
- the activation bytes a rank saves in a tensor-parallel GPT layer (``saved_tensors_hooks``);
- ``torch.distributed.pipelining``'s GPipe, 1F1B and interleaved 1F1B: the micro-batches a rank
  holds at its peak and the bubble of the order it ran; the zero-bubble schedules
  (``ScheduleInterleavedZeroBubble``, ``ScheduleZBVZeroBubble``, ``ScheduleDualPipeV``): the order
  each rank ran equals ``llmmath.steptime.pipeline_order``, and its bubble is
  ``pipeline_bubble_fraction``'s;
- ZeRO-1, -2 and -3 steps of two micro-batches (FSDP2), and FSDP's ``SHARD_GRAD_OP``: the
  data-parallel collectives of ``step_collectives`` (kind, count, size), each issued in the window
  ``llmmath.steptime`` gives it; each rank's storages of parameters, gradients and AdamW states
  (the 16 bytes per parameter, FSDP2's padding: ``zero_shard_numel``) and the whole parameters
  alive between a forward and its backward;
- ``ZeroRedundancyOptimizer``: its optimizer states and the broadcasts of a step;
- a ring all-reduce on gloo's point-to-point sends: the bytes and messages it sends;
- PyTorch's all-gather context parallelism around SDPA: output and gradients, collectives, the
  query-key pairs of each rank's zig-zag share and the gathered keys and values kept;
- a mixture-of-experts layer over ``all_to_all_single``, plain and hierarchical: the bytes sent,
  against ``step_collectives`` and ``dispatch_copies``;
- every schedule's chunks whose saved tensors are alive at once, against ``pipeline_in_flight``
  (the zero-bubble schedules keep a chunk until its weight gradient).
"""

from __future__ import annotations

import math
from collections import Counter

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import distributed_checks as dc  # noqa: E402

from llmmath.config import TransformerConfig, from_hf_config  # noqa: E402
from llmmath.context_parallel import cp_causal_pairs, cp_gathered_kv_bytes  # noqa: E402
from llmmath.memory import activation_bytes, training_state_bytes  # noqa: E402
from llmmath.moe_parallel import dispatch_copies  # noqa: E402
from llmmath.parallel import (  # noqa: E402
    Layout,
    collective_bytes,
    collective_steps,
    fsdp_shard_numel,
    pipeline_bubble_fraction,
    pipeline_in_flight,
    stage_activation_bytes,
    stage_param_counts,
    step_collectives,
)
from llmmath.sharding import zero_shard_numel  # noqa: E402
from llmmath.steptime import pipeline_order  # noqa: E402

WORLDS = (2, 4)
FP32 = 4


@pytest.fixture(scope="module")
def measured() -> dict[int, list[dict]]:
    """Every check, run once per world size (the slow part: starting the process groups)."""
    return {n: dc.run(n) for n in WORLDS}


def _comm(records: list[dict]) -> Counter:
    return Counter((c["op"], "backward" if c["backward"] else "forward", c["bytes"]) for c in records)


def _expected_comm(cfg: TransformerConfig, layout: Layout, seq: int, **kw) -> Counter:
    names = {"all_reduce": "all_reduce", "all_gather": "all_gather_into_tensor",
             "reduce_scatter": "reduce_scatter_tensor"}
    out: Counter = Counter()
    for c in step_collectives(cfg, layout, seq, bytes_per_value=FP32, **kw):
        out[(names[c.kind], c.phase, c.message)] += c.count
    return out


# ------------------------------------------------------------------------------------------ FSDP2
@pytest.mark.parametrize("n", WORLDS)
def test_fsdp2_shards_padding_included(measured, n):
    ranks = measured[n]
    shapes = ranks[0]["fsdp"]["shapes"]
    for r, res in enumerate(ranks):
        f = res["fsdp"]
        for name, shape in shapes.items():
            assert f["local"][name] == fsdp_shard_numel(shape, n, r), name
            assert f["padded"][name] == fsdp_shard_numel(shape, n), name
            assert f["grads"][name] == f["local"][name], name
            assert f["optimizer"][name] == 2 * f["local"][name], name  # AdamW: exp_avg and exp_avg_sq
    for name, shape in shapes.items():  # the shards partition every parameter
        total = 1
        for d in shape:
            total *= d
        assert sum(res["fsdp"]["local"][name] for res in ranks) == total
    # the odd sizes make FSDP2 pad: some rank holds less than it allocates
    assert any(res["fsdp"]["local"][k] < res["fsdp"]["padded"][k] for res in ranks for k in shapes)


def _zero_expected(f: dict, n: int, layout: Layout) -> Counter:
    """step_collectives' data-parallel collectives of ``layout`` as FSDP2 issues them: one per unit (the
    root: embeddings, final norm, LM head; each layer), of the unit's padded shards, in the window
    llmmath gives each (a ``step`` reduce-scatter in the LAST micro-batch's backward, a ``step``
    all-gather in the first forward); fully_shard does not reshard the root after forward, so it
    has no backward all-gather (_fsdp_state.py)."""
    cfg, m = from_hf_config(dc.LLAMA), layout.microbatches
    units = [n * FP32 * sum(fsdp_shard_numel(f["shapes"][p], n) for p in names) for names in f["units"]]
    total = sum(math.prod(shape) for shape in f["shapes"].values())
    assert stage_param_counts(cfg, layout)[0]["dense"] == total
    expected: Counter = Counter()
    for c in step_collectives(cfg, layout, dc.SEQ, precision="fp32"):
        assert c.parallelism == "dp" and c.message == total * FP32  # the whole model, once per collective
        if c.phase == "step":
            where = [(m - 1, True)] if c.kind == "reduce_scatter" else [(0, False)]
        else:
            assert c.count == m
            where = [(mb, c.phase == "backward") for mb in range(m)]
        for mb, backward in where:
            for i, b in enumerate(units):
                if c.kind == "all_gather" and backward and i == 0:
                    continue
                expected[(_OPS[c.kind], mb, backward, b)] += 1
    return expected


@pytest.mark.parametrize("n", WORLDS)
def test_fsdp2_collectives(measured, n):
    f = measured[n][0]["fsdp"]
    expected = _zero_expected(f, n, Layout(dp=n, zero_stage=3))
    got = Counter((r["op"], 0, r["backward"], r["bytes"]) for r in f["comm"])
    assert got == expected


# --------------------------------------------------------------------------------- tensor parallel
def _qwen2() -> TransformerConfig:
    return from_hf_config(dc.QWEN2)


def _per_layer_on_gpu(cfg: TransformerConfig, t: int) -> int:
    """One layer's parameters on one GPU: the difference of two stage counts (embeddings cancel)."""
    two = stage_param_counts(cfg, Layout(tp=t))[0]["dense"]
    one = stage_param_counts(cfg.replace(n_layers=1), Layout(tp=t))[0]["dense"]
    return two - one


@pytest.mark.parametrize("n", WORLDS)
def test_tp_local_shapes(measured, n):
    cfg = _qwen2()
    h, d = cfg.hidden_size, cfg.head_dim
    want = {"q_proj": (cfg.n_heads * d // n, h), "k_proj": (cfg.n_kv_heads * d // n, h),
            "v_proj": (cfg.n_kv_heads * d // n, h), "o_proj": (h, cfg.n_heads * d // n),
            "gate_proj": (cfg.ffn_size // n, h), "up_proj": (cfg.ffn_size // n, h), "down_proj": (h, cfg.ffn_size // n)}
    for res in measured[n]:
        local = res["tp_hf"]["local"]
        for name, shape in local.items():
            module = name.split(".")[-2]
            if name.endswith("weight") and module in want:
                assert shape == want[module], name
            elif name.endswith("bias"):  # Qwen2's q, k, v biases: split like their rows
                assert shape == (want[module][0],), name
            else:  # norms are replicated
                assert shape == res["tp_hf"]["full"][name], name
        per_layer = sum(_numel(s) for s in local.values()) // cfg.n_layers
        assert per_layer == _per_layer_on_gpu(cfg, n)


def _numel(shape: tuple[int, ...]) -> int:
    out = 1
    for d in shape:
        out *= d
    return out


@pytest.mark.parametrize("n", WORLDS)
def test_tp_collectives_megatron_plan(measured, n):
    cfg = _qwen2()
    expected = _expected_comm(cfg, Layout(tp=n, microbatch_size=dc.BATCH), dc.SEQ)
    for res in measured[n]:
        assert _comm(res["tp_megatron"]["comm"]) == expected


@pytest.mark.parametrize("n", WORLDS)
def test_tp_collectives_transformers_plan(measured, n):
    # transformers' plan makes each column-parallel module (q, k, v, gate, up) take the layer's
    # input on its own, so the backward all-reduces its gradient five times per layer, not twice:
    # llmmath's tp_plan="transformers"
    cfg = _qwen2()
    expected = _expected_comm(cfg, Layout(tp=n, microbatch_size=dc.BATCH), dc.SEQ, tp_plan="transformers")
    for res in measured[n]:
        assert _comm(res["tp_hf"]["comm"]) == expected
        assert _comm(res["tp_hf"]["comm"]) != _expected_comm(cfg, Layout(tp=n, microbatch_size=dc.BATCH), dc.SEQ)


# ------------------------------------------------------------------ a tensor-parallel GPT layer
def _block() -> TransformerConfig:
    b = dc.BLOCK
    return TransformerConfig(n_layers=1, hidden_size=b["h"], n_heads=b["heads"], vocab_size=97, ffn_size=b["ffn"],
                             max_position=64)


@pytest.mark.parametrize("n", WORLDS)
@pytest.mark.parametrize("sp", [False, True])
def test_block_collectives(measured, n, sp):
    layout = Layout(tp=n, sequence_parallel=sp, microbatch_size=dc.BLOCK["batch"])
    expected = _expected_comm(_block(), layout, dc.BLOCK["seq"], sp_saves_gathered=True)
    for res in measured[n]:
        assert _comm(res["block_sp" if sp else "block"]["comm"]) == expected


@pytest.mark.parametrize("n", WORLDS)
@pytest.mark.parametrize("sp", [False, True])
def test_block_saved_activation_bytes(measured, n, sp):
    cfg, b, s = _block(), dc.BLOCK["batch"], dc.BLOCK["seq"]
    korthikanti = activation_bytes(cfg, b, s, bytes_per_value=FP32, bytes_per_mask=FP32, tensor_parallel=n,
                                   sequence_parallel=sp)["per_layer"]
    local_tokens = b * s // (n if sp else 1)
    norm_stats = 2 * 2 * local_tokens * FP32  # each LayerNorm keeps its mean and 1/std (FP32 on CPU)
    layout = Layout(tp=n, sequence_parallel=sp, microbatch_size=b)
    kw = dict(bytes_per_value=FP32, dropout=True)
    gathered = (stage_activation_bytes(cfg, layout, s, sp_saves_gathered=True, **kw)
                - stage_activation_bytes(cfg, layout, s, **kw))
    if sp:  # PyTorch keeps the all-gathered (whole-sequence) inputs of q, k, v and fc1
        assert gathered == 2 * (n - 1) * FP32 * b * s * cfg.hidden_size // n
    else:
        assert gathered == 0
    for res in measured[n]:
        block = res["block_sp" if sp else "block"]
        assert block["local_seq"] == s // (n if sp else 1)
        assert block["saved_bytes"] == korthikanti + norm_stats + gathered


@pytest.mark.parametrize("n", WORLDS)
def test_sequence_parallel_norm_gradients_are_partial(measured, n):
    # the norms see a shard of the sequence: their weight gradients are partial sums that PyTorch
    # leaves unreduced after backward (Megatron-LM all-reduces them once per step)
    for res in measured[n]:
        assert set(res["block_sp"]["norm_grad_placements"].values()) == {"(Partial(sum),)"}
        assert set(res["block"]["norm_grad_placements"].values()) == {"local"}


# --------------------------------------------------------------------------------------- pipeline
@pytest.mark.parametrize("n", WORLDS)
def test_pipeline_in_flight_and_bubble(measured, n):
    ranks = measured[n]
    for key, case in ranks[0]["pipeline"].items():
        schedule, v, m = case["schedule"], case["virtual_stages"], case["microbatches"]
        orders = [res["pipeline"][key]["actions"] for res in ranks]
        if schedule in ("interleaved_zb", "zbv", "dualpipev"):
            # the order PyTorch ran is llmmath's, forward, input-gradient, weight-gradient by kind
            assert [[tuple(a) for a in o] for o in orders] == pipeline_order(schedule, n, m, v), key
            for t_b, t_w in ((1.0, 1.0), (1.5, 0.5)):
                want = pipeline_bubble_fraction(n, m, schedule, v, times=(1.0, t_b, t_w))
                for idle in dc.simulate(orders, n * v, 1.0, t_b, t_w):
                    assert idle == pytest.approx(want), (key, t_b)
            continue
        for r, res in enumerate(ranks):
            assert res["pipeline"][key]["peak"] == pipeline_in_flight(n, m, schedule, v, stage=r), (key, r)
        for t_b in (1.0, 2.0):
            for idle in dc.simulate(orders, n * v, 1.0, t_b):
                assert idle == pytest.approx(pipeline_bubble_fraction(n, m, schedule, v)), (key, t_b)


# ----------------------------------------------------------------------------------- ZeRO 1/2/3
_OPS = {"all_gather": "_allgather_base_", "reduce_scatter": "_reduce_scatter_base_"}


@pytest.mark.parametrize("n", WORLDS)
@pytest.mark.parametrize("stage", [1, 2, "shard_grad_op", 3])
def test_zero_collectives_and_windows(measured, n, stage):
    """Every data-parallel collective of a ZeRO step over two micro-batches, as FSDP2 issues it (one
    per FSDP unit: each layer and the root), against llmmath's: the kind, how many per step, the
    bytes (the unit's padded shards), and where it runs. llmmath gives each collective a phase
    (``forward``/``backward``: every micro-batch) or ``step`` (once per step), and the step-time
    model hides a ``step`` reduce-scatter in the LAST micro-batch's backward and a ``step``
    all-gather in the first forward: the recorded ones are there and nowhere else. FSDP's
    SHARD_GRAD_OP (``reshard_after_forward=False`` alone) is ZeRO-2 with ``reshard_after_backward``."""
    f = measured[n][0]["fsdp"]
    z = 2 if stage == "shard_grad_op" else stage
    layout = Layout(dp=n, zero_stage=z, microbatches=dc.ZERO_MICROBATCHES,
                    reshard_after_backward=stage == "shard_grad_op")
    expected = _zero_expected(f, n, layout)
    for res in measured[n]:
        got = Counter((r["op"], r["microbatch"], r["backward"], r["bytes"]) for r in res["zero"][f"zero{stage}"])
        assert got == expected


@pytest.mark.parametrize("n", WORLDS)
def test_zero_storages_are_16_bytes_per_parameter_padded(measured, n):
    """After an AdamW step each FSDP2 rank stores FP32 parameters and gradients in padded shards
    (4 + 4 bytes x zero_shard_numel's padded count) and AdamW's two FP32 moments of its real rows
    (8 bytes x its own count): 16 bytes per parameter, as training_state_bytes('fp32') counts them,
    plus FSDP2's padding. Between the first forward and its backward ZeRO-1/2 and SHARD_GRAD_OP hold
    the whole model (training_state_bytes' unsharded 4 P, padded), ZeRO-3 only the root unit, which
    fully_shard keeps after the forward."""
    f = measured[n][0]["fsdp"]
    units = [[f["shapes"][p] for p in names] for names in f["units"]]
    total = sum(math.prod(shape) for shape in f["shapes"].values())
    padded = zero_shard_numel(units, n)
    for r, res in enumerate(measured[n]):
        for stage in (1, 2, "shard_grad_op", 3):
            mem = res["zero"][f"zero{stage}-memory"]
            assert mem["storage"] == {"parameters": FP32 * padded, "gradients": FP32 * padded,
                                      "optimizer_states": 2 * FP32 * zero_shard_numel(units, n, r)}
            whole = mem["whole_after_forward"]
            if stage == 3:
                assert whole == FP32 * n * zero_shard_numel(units[:1], n)
            else:
                assert whole == FP32 * n * padded >= training_state_bytes(total, "fp32", zero_stage=2)["parameters"]
    per_rank = [sum(res["zero"]["zero3-memory"]["storage"].values()) for res in measured[n]]
    state = training_state_bytes(total, "fp32", zero_stage=3, n_gpus=n)["total"] * n  # 16 bytes x ceil(P/n) x n
    assert sum(per_rank) == 16 * total + 8 * (n * padded - total)
    assert sum(per_rank) >= state - 16 * n  # the flat split pads at most n - 1 elements


# -------------------------------------------------------------------------- ZeroRedundancyOptimizer
@pytest.mark.parametrize("n", WORLDS)
def test_zero_redundancy_optimizer(measured, n):
    """torch's ZeroRedundancyOptimizer (ZeRO-1 in plain PyTorch) keeps AdamW's two moments of the
    parameters each rank owns (whole parameters, not a flat 1/n), and after its step every owner
    broadcasts its parameters: one broadcast per parameter, the whole model in all, the message of
    llmmath's ZeRO-1 all-gather (its gradients' all-reduce is DDP's, outside the optimizer)."""
    cfg = from_hf_config(dc.LLAMA)
    shapes = measured[n][0]["zero_redundancy"]["shapes"]
    total = sum(math.prod(s) for s in shapes.values())
    states = [res["zero_redundancy"]["state"] for res in measured[n]]
    assert sum(states) == 2 * total
    flat = training_state_bytes(total, "fp32", zero_stage=1, n_gpus=n)["optimizer_states"] // FP32
    assert max(states) >= flat  # whole parameters cannot split more evenly than the flat buffer
    (gather,) = [c for c in step_collectives(cfg, Layout(dp=n, zero_stage=1), dc.SEQ, precision="fp32")
                 if c.kind == "all_gather"]
    for res in measured[n]:
        comm = res["zero_redundancy"]["comm"]
        assert {c["op"] for c in comm} == {"broadcast_"} and len(comm) == len(shapes)
        assert sum(c["bytes"] for c in comm) == gather.message


# -------------------------------------------------------------------------------- the ring, on gloo
@pytest.mark.parametrize("n", WORLDS)
def test_ring_all_reduce_on_gloo_sends_what_the_formula_says(measured, n):
    for res in measured[n]:
        ring = res["ring"]
        assert ring["equal"]  # the same sum as torch.distributed.all_reduce
        assert ring["wire"]["bytes"] == collective_bytes("all_reduce", n, ring["message_bytes"])
        assert ring["wire"]["messages"] == collective_steps("all_reduce", n)


# --------------------------------------------------------------------------- context parallelism
def _cp_model() -> TransformerConfig:
    c = dc.CP
    return TransformerConfig(n_layers=1, hidden_size=c["heads"] * c["head_dim"], n_heads=c["heads"],
                             n_kv_heads=c["kv_heads"], head_dim=c["head_dim"], vocab_size=97, max_position=64)


@pytest.mark.parametrize("n", WORLDS)
def test_context_parallel_all_gather_style(measured, n):
    """PyTorch 2.13's all-gather CP around SDPA: the same output and gradients as the unsharded
    attention; the keys and values all-gathered once in the forward and their gradients
    reduce-scattered in the backward (llmmath's cp_style='all_gather', not the ring's extra
    backward all-gather); each rank's zig-zag share of the causal pairs; the gathered keys and
    values kept for the backward."""
    cfg, s, b = _cp_model(), dc.CP["seq"], dc.CP["batch"]
    lib = {}
    for style in ("all_gather", "ring"):
        lib[style] = Counter()
        for c in step_collectives(cfg, Layout(cp=n, microbatch_size=b), s, bytes_per_value=FP32, cp_style=style):
            if c.parallelism == "cp":
                lib[style][(c.kind, c.phase)] += c.count * collective_bytes(c.kind, n, c.message)
    for r, res in enumerate(measured[n]):
        cp = res["cp"]
        assert cp["equal"] == [True] * 4
        got: Counter = Counter()
        for rec in cp["records"]:  # an all-gather's message is n inputs, a reduce-scatter's its input
            kind = "all_gather" if rec["op"] == "all_gather_single" else "reduce_scatter"
            M = rec["input_bytes"] * (n if kind == "all_gather" else 1)
            got[(kind, rec["phase"])] += collective_bytes(kind, n, M)
        assert got == lib["all_gather"] != lib["ring"]
        assert cp["pairs"] == cp_causal_pairs(s, n, r)
        assert cp["kept_kv_bytes"] == cp_gathered_kv_bytes(cfg, b, s, 1, FP32)


# ---------------------------------------------------------------------------- expert parallelism
def _moe_model() -> TransformerConfig:
    m = dc.MOE
    return TransformerConfig(n_layers=1, hidden_size=m["h"], n_heads=2, vocab_size=97, max_position=64,
                             n_experts=m["experts"], experts_per_token=m["k"], expert_ffn_size=m["h"])


@pytest.mark.parametrize("n", WORLDS)
def test_expert_parallel_all_to_all_bytes(measured, n):
    """A mixture of experts over all_to_all_single, node-limited routing (one 'node' of the two of
    the 4-rank group): the plain dispatch's send buffer is step_collectives' message (k copies of
    every token) and what leaves the rank is dispatch_copies' count; the hierarchical dispatch
    sends dispatch_copies' network copies across nodes and its NVLink copies inside them, and
    delivers every token to exactly the GPUs of its experts."""
    m, ranks = dc.MOE, measured[n]
    h, per_gpu, g = m["h"], m["experts"] // n, min(n, m["gpus_per_node"])
    row = h * FP32
    cfg = _moe_model()
    (a2a,) = {c.message for c in step_collectives(cfg, Layout(dp=n, ep=n, microbatch_size=1), m["tokens"],
                                                  bytes_per_value=FP32) if c.parallelism == "ep"}
    inside = 0
    for r, res in enumerate(ranks):
        moe = res["moe"]
        assert moe["plain"]["equal"] and moe["rows_correct"]
        assert moe["plain"]["buffer"] == a2a
        plain = [dispatch_copies(ids, r, per_gpu, g, hierarchical=False) for ids in moe["ids"]]
        assert moe["plain"]["sent"] == sum(out + up for out, up in plain) * row
        hier = [dispatch_copies(ids, r, per_gpu, g) for ids in moe["ids"]]
        assert moe["across"] == sum(out for out, _ in hier) * row  # sent by the token's own GPU
        inside += sum(up for _, up in hier) * row  # forwarded by whichever GPU it arrived at
        for ids in moe["ids"]:  # node-limited
            assert len({e // per_gpu // g for e in ids}) <= m["max_nodes"]
    assert sum(res["moe"]["inside"] for res in ranks) == inside
    for q, res in enumerate(ranks):
        want = sorted((src, t) for src, other in enumerate(ranks) for t, ids in enumerate(other["moe"]["ids"])
                      if q in {e // per_gpu for e in ids})
        assert res["moe"]["delivered"] == want


# ------------------------------------------------------------------------ pipeline memory, all schedules
@pytest.mark.parametrize("n", WORLDS)
def test_pipeline_chunks_alive(measured, n):
    """The chunks whose saved tensors are alive at once on each rank (tracked with
    saved_tensors_hooks), for every schedule: the zero-bubble ones keep a chunk's activations
    until its weight gradient, which PyTorch's forward cache does not show."""
    for key, case in measured[n][0]["pipeline"].items():
        schedule, v, m = case["schedule"], case["virtual_stages"], case["microbatches"]
        for r, res in enumerate(measured[n]):
            assert res["pipeline"][key]["alive"] == pipeline_in_flight(n, m, schedule, v, stage=r), (key, r)


def test_interleaved_round_size_is_pytorchs():
    """PyTorch's ScheduleInterleaved1F1B runs N = m / max(1, m // p) micro-batches per round: its
    action table holds pipeline_in_flight(..., round_size=N) chunks per rank, and its bubble is
    still (p-1)/(v m + p - 1) (the order simulated; no process group)."""
    for p, m, v in ((4, 10, 2), (4, 6, 2), (2, 6, 3)):
        orders = dc.schedule_orders("interleaved", p, m, v)
        N = m // max(1, m // p)
        assert [dc.peak_held(o) for o in orders] == [pipeline_in_flight(p, m, "interleaved", v, r, round_size=N)
                                                     for r in range(p)]
        assert dc.simulate(orders, p * v, 1.0, 2.0)[0] == pytest.approx((p - 1) / (v * m + p - 1))


# ------------------------------------------------------------------------- the chapter's record
def test_chapter_record_is_current(measured):
    """The chapter *parallelism* shows these measurements from ``distributed_record.json`` instead
    of starting process groups: the file must be what the checks measure now (``LLMMATH_RECORD=1``
    rewrites it). It fails as soon as one measured number differs, e.g. a changed model shape."""
    import os

    import distributed_record

    if os.environ.get("LLMMATH_RECORD"):
        distributed_record.write(measured)
    assert distributed_record.record(measured) == distributed_record.load()
