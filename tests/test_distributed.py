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
- ZeRO-1, -2 and -3 steps of two micro-batches (FSDP2): the data-parallel collectives of
  ``step_collectives`` (kind, count, size), each issued in the window ``llmmath.steptime`` gives it.
"""

from __future__ import annotations

import math
from collections import Counter

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import distributed_checks as dc  # noqa: E402

from llmmath.config import TransformerConfig, from_hf_config  # noqa: E402
from llmmath.memory import activation_bytes  # noqa: E402
from llmmath.parallel import (  # noqa: E402
    Layout,
    fsdp_shard_numel,
    pipeline_bubble_fraction,
    pipeline_in_flight,
    stage_activation_bytes,
    stage_param_counts,
    step_collectives,
)
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


@pytest.mark.parametrize("n", WORLDS)
def test_fsdp2_collectives(measured, n):
    f = measured[n][0]["fsdp"]
    # one all-gather of n padded shards per unit (root: embeddings, final norm, LM head; each layer)
    unit = [n * FP32 * sum(fsdp_shard_numel(f["shapes"][p], n) for p in names) for names in f["units"]]
    expected = Counter({("_allgather_base_", "forward", b): 0 for b in unit})
    for b in unit:
        expected[("_allgather_base_", "forward", b)] += 1
        expected[("_reduce_scatter_base_", "backward", b)] += 1  # the gradients, in the same layout
    for b in unit[1:]:  # fully_shard does not reshard the root after forward (_fsdp_state.py): no re-gather
        expected[("_allgather_base_", "backward", b)] += 1
    assert _comm(f["comm"]) == +expected


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
@pytest.mark.parametrize("stage", [1, 2, 3])
def test_zero_collectives_and_windows(measured, n, stage):
    """Every data-parallel collective of a ZeRO step over two micro-batches, as FSDP2 issues it (one
    per FSDP unit: each layer and the root), against llmmath's: the kind, how many per step, the
    bytes (the unit's padded shards), and where it runs. llmmath gives each collective a phase
    (``forward``/``backward``: every micro-batch) or ``step`` (once per step), and the step-time
    model hides a ``step`` reduce-scatter in the LAST micro-batch's backward and a ``step``
    all-gather in the first forward: the recorded ones are there and nowhere else."""
    f = measured[n][0]["fsdp"]
    cfg = from_hf_config(dc.LLAMA)
    m = dc.ZERO_MICROBATCHES
    layout = Layout(dp=n, zero_stage=stage, microbatches=m)
    units = [n * FP32 * sum(fsdp_shard_numel(f["shapes"][p], n) for p in names) for names in f["units"]]
    total = sum(math.prod(shape) for shape in f["shapes"].values())
    assert stage_param_counts(cfg, layout)[0]["dense"] == total
    expected: Counter = Counter()
    for c in step_collectives(cfg, layout, dc.SEQ, precision="fp32"):
        assert c.parallelism == "dp" and c.message == total * FP32  # the whole model, once per collective
        if c.phase == "step":  # once per step, in its window
            where = [(m - 1, True)] if c.kind == "reduce_scatter" else [(0, False)]
        else:
            assert c.count == m
            where = [(mb, c.phase == "backward") for mb in range(m)]
        for mb, backward in where:
            for i, b in enumerate(units):
                if c.kind == "all_gather" and backward and i == 0:
                    continue  # fully_shard does not reshard the root after forward: no re-gather
                expected[(_OPS[c.kind], mb, backward, b)] += 1
    for res in measured[n]:
        got = Counter((r["op"], r["microbatch"], r["backward"], r["bytes"]) for r in res["zero"][f"zero{stage}"])
        assert got == expected


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
