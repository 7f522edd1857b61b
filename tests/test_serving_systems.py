"""Serving many users (llmmath.serving_systems): the engine step, the steady state and its
simulation, paging, speculative decoding, quantized bits, MoE serving, and the published
measurements against the bounds.

Expected values come from the published shapes typed here (Llama 3 8B: 32 layers, h 4096, 32 query
heads and 8 key/value heads of 128, MLP 14336, vocabulary 128256; DeepSeek-V3: 256 routed experts,
8 per token, h 7168), from brute force (block allocation token by token, Monte Carlo acceptances,
a one-request simulation summed by hand) and from the quoted sources, never from the function under
test. The reality checks against transformers (paged blocks of generate_batch, assisted generation)
run in the chapter's notebook (nbval).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import llmmath
from llmmath import serving_systems as sv

L8 = dict(L=32, h=4096, a=32, a_kv=8, d=128, f=14336, V=128256)
H100_BF16, H100_BW = 989.4e12, 3.35e12


@pytest.fixture(scope="module")
def costs8():
    return sv.step_costs(llmmath.preset("llama-3-8b"), "H100")


def _hand_token_flops():
    """Two FLOPs per weight of every product a token goes through, LM head included."""
    L, h, a_kv, d, f, V = (L8[k] for k in ("L", "h", "a_kv", "d", "f", "V"))
    per_layer = 2 * h * h + 2 * h * a_kv * d + 3 * h * f
    return 2 * (L * per_layer + h * V)


def test_step_coefficients_from_the_published_shapes(costs8):
    L, a, d, a_kv = L8["L"], L8["a"], L8["d"], L8["a_kv"]
    assert costs8.token_flops + costs8.head_flops == _hand_token_flops()
    assert costs8.head_flops == 2 * L8["h"] * L8["V"]
    assert costs8.key_flops == 2 * a * (d + d) * L          # scores and values per cached key
    assert costs8.kv_token_bytes == 2 * a_kv * d * L * 2      # keys and values, BF16
    assert costs8.row_bytes == L8["h"] * 2                    # one more embedding row read
    assert costs8.peak == H100_BF16 and costs8.bandwidth == H100_BW


def test_a_decode_step_is_two_rooflines(costs8):
    b, n = 48, 3000
    weights = max(b * _hand_token_flops() / H100_BF16,
                  (costs8.weight_bytes + (b - 1) * L8["h"] * 2) / H100_BW)
    attention = max(b * (n + 1) * costs8.key_flops / H100_BF16, b * n * costs8.kv_token_bytes / H100_BW)
    assert sv.step_seconds(costs8, b, b * n) == pytest.approx(weights + attention, rel=1e-12)
    assert sv.step_seconds(costs8, 0, 0) == 0.0


def test_a_one_request_simulation_is_the_sum_of_its_steps(costs8):
    """One request of 4 prompt tokens and 3 output tokens: a prefill step, then two decode steps
    at contexts 4 and 5; its TTFT and ITL, summed by hand from the step bound."""
    prefill = sv.step_seconds(costs8, 0, 0, 4, 4 * 5 // 2, 1)
    decodes = [sv.step_seconds(costs8, 1, n) for n in (4, 5)]
    sim = sv.simulate_continuous_batching(costs8, 4, 3, 1.0, requests=1, warmup=0.0)
    assert sim["ttft"] == pytest.approx(prefill, rel=1e-12)
    assert sim["itl"] == pytest.approx(sum(decodes) / 2, rel=1e-12)


def test_the_closed_form_and_the_simulation_agree_at_moderate_load(costs8):
    req = sv.request_costs(costs8, 512, 128)
    top = sv.saturation_rate(req, budget=256)
    point = sv.load_steady_state(costs8, 512, 128, 0.5 * top, budget=256)
    sim = sv.simulate_continuous_batching(costs8, 512, 128, 0.5 * top, budget=256, requests=300, seed=3)
    assert sim["itl"] == pytest.approx(point.itl, rel=0.08)
    assert sim["ttft"] == pytest.approx(point.ttft, rel=0.2)
    # Little's law in the simulation itself: mean batch = throughput x decode time per request
    assert sim["batch"] == pytest.approx(sim["requests_per_second"] * 127 * sim["itl"], rel=0.1)


def test_steady_state_by_hand(costs8):
    """t = t_w / (1 - lambda A_att) below saturation, A_w and A_att summed by hand."""
    s_in, s_out = 512, 128
    steps = s_out - 1
    ctx = sum(s_in + j - 1 for j in range(1, s_out))
    pairs = s_in * (s_in + 1) // 2
    head = 2 * L8["h"] * L8["V"]
    a_w = ((_hand_token_flops() - head) * (s_in + steps) + head * s_out) / H100_BF16
    a_att = max(costs8.key_flops * (ctx + steps + pairs) / H100_BF16,
                costs8.kv_token_bytes * (ctx + s_in) / H100_BW)
    t_w = costs8.weight_bytes / H100_BW
    req = sv.request_costs(costs8, s_in, s_out)
    assert sv.saturation_rate(req) == pytest.approx(1 / (a_w + a_att), rel=1e-12)
    lam = 20.0
    assert sv.load_steady_state(costs8, s_in, s_out, lam).itl == pytest.approx(t_w / (1 - lam * a_att), rel=1e-12)
    budget = 256
    assert sv.saturation_rate(req, budget=budget) == pytest.approx(
        budget / (t_w * (s_in + steps) + budget * a_att), rel=1e-9)
    room = 2e9
    assert sv.saturation_rate(req, kv_capacity_bytes=room) == pytest.approx(min(
        1 / (a_w + a_att), room / (t_w * costs8.kv_token_bytes * (ctx + steps) + room * a_att)), rel=1e-9)


def test_the_rate_steady_state_is_the_batch_steady_state_of_inference(costs8):
    """At a rate, Little's law gives a batch b; inference.steady_state at the integers around b
    (the same requests, the prompts' chunks riding in the decode steps) brackets the step."""
    cfg = llmmath.preset("llama-3-8b")
    for rate in (10.0, 40.0, 70.0):
        point = sv.load_steady_state(costs8, 512, 128, rate)
        lo, hi = (llmmath.steady_state(cfg, b, 512, 128, "H100", check_memory=False)["seconds_per_output_token"]
                  for b in (math.floor(point.batch), math.ceil(point.batch)))
        assert lo * (1 - 1e-9) <= point.itl <= hi * (1 + 1e-9)


def test_tensor_parallel_steps_are_inference_bounds():
    l70 = llmmath.preset("llama-3-70b")
    for tp, b, n in ((2, 256, 2000), (8, 1, 1000), (8, 64, 3000)):
        costs = sv.step_costs(l70, "H100", tp=tp, dtype="fp8", kv_dtype="fp8")
        assert costs.peak == 1978.9e12                                  # W8A8-FP8 at the FP8 peak
        assert sv.step_seconds(costs, b, b * n) == pytest.approx(
            llmmath.tp_decode_step_seconds(l70, b, n, "H100", tp, dtype="fp8", kv_dtype="fp8"), rel=1e-12)


def test_beyond_saturation_there_is_no_steady_state(costs8):
    top = sv.saturation_rate(sv.request_costs(costs8, 512, 128))
    with pytest.raises(ValueError, match="rate must be below the saturation rate"):
        sv.load_steady_state(costs8, 512, 128, 1.01 * top)
    with pytest.raises(ValueError, match="rate must be"):
        sv.load_steady_state(costs8, 512, 128, 0.0)


def test_static_batch_utilization_is_one_over_the_harmonic_number():
    for b in (1, 2, 7, 64):
        assert sv.static_batch_utilization(b) == pytest.approx(float(1 / sum(Fraction(1, i) for i in range(1, b + 1))))


def _blocks_by_allocation(n_tokens: int, block: int) -> int:
    """Allocate a block whenever a token finds the current one full."""
    blocks, free = 0, 0
    for _ in range(n_tokens):
        if free == 0:
            blocks, free = blocks + 1, block
        free -= 1
    return blocks


def test_paged_blocks_and_waste_by_brute_force():
    lengths = [0, 1, 15, 16, 17, 100, 257, 4097]
    for n in lengths:
        assert sv.kv_blocks(n, 16) == _blocks_by_allocation(n, 16)
    assert sv.paged_kv_waste(lengths, 16) == sum(16 * _blocks_by_allocation(n, 16) - n for n in lengths)
    assert sv.contiguous_kv_waste([100, 2048], 2048) == 1948
    with pytest.raises(ValueError, match="block_size"):
        sv.kv_blocks(10, 0)
    with pytest.raises(ValueError, match="lengths must be <= max_length"):
        sv.contiguous_kv_waste([3000], 2048)


def test_copy_on_write_blocks_by_brute_force():
    """Samples share the prompt's full blocks; each copies the partial one and adds its own."""
    prompt, block, generated = 1000, 16, [200, 150, 1, 7]
    full = prompt // block
    own = sum(_blocks_by_allocation(prompt + g - 1, block) - full for g in generated)
    assert sv.shared_prefix_blocks(prompt, generated, block) == full + own


def test_prefix_cache_savings_are_the_prefix_prefill():
    cfg = llmmath.preset("llama-3-8b")
    s, hit = 2048, 1000
    saved = sv.prefix_cache_savings(cfg, s, hit)
    head = 2 * L8["h"] * L8["V"]
    key = 2 * L8["a"] * 2 * L8["d"] * L8["L"]
    assert saved["flops"] == (_hand_token_flops() - head) * hit + key * hit * (hit + 1) // 2
    assert saved["share"] < hit / s                              # the suffix still attends to the prefix
    assert saved["kv_bytes"] == hit * 2 * L8["a_kv"] * L8["d"] * L8["L"] * 2
    assert sv.prefix_cache_savings(cfg, s, 0)["flops"] == 0


def test_speculative_tokens_by_monte_carlo():
    rng = np.random.default_rng(0)
    for theta, gamma in ((0.5, 3), (0.8, 5), (0.95, 2)):
        accept = rng.random((200_000, gamma)) < theta
        tokens = np.cumprod(accept, axis=1).sum(axis=1) + 1
        stderr = tokens.std() / math.sqrt(len(tokens))
        assert abs(tokens.mean() - sv.speculative_tokens_per_step(theta, gamma)) < 4 * stderr
    assert sv.speculative_tokens_per_step(0.0, 4) == 1.0
    assert sv.speculative_speedup(0.8, 4, 0.0) == pytest.approx(1 + 0.8 + 0.64 + 0.512 + 0.4096)


def test_the_best_draft_length_by_brute_force():
    def speedup(theta, gamma, kappa):
        return sum(theta**i for i in range(gamma + 1)) / (gamma * kappa + 1)
    for theta, kappa in ((0.6, 0.05), (0.8, 0.05), (0.9, 0.2), (0.7, 0.1)):
        assert sv.optimal_draft_length(theta, kappa) == max(range(1, 65), key=lambda g: speedup(theta, g, kappa))


def test_speculative_input_is_validated():
    for bad in (1.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="alpha must be in"):
            sv.speculative_tokens_per_step(bad, 3)
    with pytest.raises(ValueError, match="gamma"):
        sv.speculative_tokens_per_step(0.5, 0)
    with pytest.raises(TypeError, match="alpha"):
        sv.speculative_tokens_per_step(True, 3)


def test_group_quantization_bits():
    assert sv.quantized_bits_per_weight(4, 128) == 4 + 20 / 128           # GPTQ/AWQ: FP16 scale + 4-bit zero
    assert sv.quantized_bits_per_weight(8, None) == 8
    assert sv.quantized_bits_per_weight(4, 32, zero_point=False) == 4.5


def test_moe_placement_deepseek_decode():
    """DeepSeek's decode deployment: 'each GPU manages 2 routed experts' with 32 redundant over EP144."""
    ds = llmmath.preset("deepseek-v3")
    place = sv.moe_experts_per_gpu(ds, 88 * 144, 144, redundant=32, imbalance=1.5)
    assert place["hosted"] == 2
    assert place["pairs"] == 88 * 144 * 8 / 144
    assert place["busiest_pairs"] == 1.5 * place["pairs"]
    assert place["touched"] == pytest.approx(2 * (1 - (1 - 8 / 256) ** (88 * 144)))
    with pytest.raises(ValueError, match="ep must divide"):
        sv.moe_experts_per_gpu(ds, 100, 144)
    with pytest.raises(ValueError, match="imbalance"):
        sv.moe_experts_per_gpu(ds, 100, 8, imbalance=0.5)


def test_all_to_all_bytes_by_hand():
    ds = llmmath.preset("deepseek-v3")
    assert sv.ep_dispatch_bytes(ds, 88, 144, "fp8") == pytest.approx(88 * 8 * 7168 * 143 / 144)
    assert sv.ep_dispatch_bytes(ds, 88, 144, "bf16") == pytest.approx(2 * 88 * 8 * 7168 * 143 / 144)
    h800 = llmmath.GPUS["H800"].scale_out
    per_layer = 2 * h800.latency + 3 * 88 * 8 * 7168 * 143 / 144 / h800.bandwidth
    assert sv.ep_all_to_all_seconds(ds, 88, 144, "H800") == pytest.approx(58 * per_layer)


def test_kv_transfer_by_hand():
    """Llama 3 70B: 80 layers, 8 KV heads of 128; at TP 8 each GPU holds one head."""
    l70 = llmmath.preset("llama-3-70b")
    per_gpu = 2 * 1 * 128 * 80 * 2 * 32768
    assert sv.kv_transfer_seconds(l70, 32768, 50e9, tp=8) == pytest.approx(per_gpu / 50e9)


def test_split_k_fills_the_chip():
    assert sv.split_k_partitions(1, 1, 132) == 132
    assert sv.split_k_partitions(4, 8, 132) == 5
    assert sv.split_k_partitions(200, 8, 132) == 1


def test_cost_per_million_tokens_by_hand():
    assert sv.cost_per_million_tokens(14_800 / 8, 2.0) == pytest.approx(2.0 / 3600 / (14_800 / 8) * 1e6)


def test_no_bound_exceeds_a_measurement():
    """The book's bound on each published workload: a throughput at least the measured one, a
    latency at most the measured one (ratio <= 1), and not absurdly loose (ratio > 0.05)."""
    rows = sv.measured_serving()
    assert {r.source for r in rows} >= {"nvidia2025trtllmperf", "mlcommons2024inferencev41",
                                        "deepseekai2025inference", "sglang2025largescaleep", "vllm2025widep"}
    for row in rows:
        ratio = sv.measured_serving_bound(row)["ratio"]
        assert 0.05 < ratio <= 1, (row.id, ratio)


def test_the_deepseek_row_is_read_as_published():
    """'~14.8k tokens/s output during decoding' per node of 8 H800s, 'average kvcache length per
    output token was 4,989 tokens', output speed '20-22 tokens per second'."""
    row = {r.id: r for r in sv.measured_serving()}["deepseek-online-decode"]
    assert row.measured["tokens_per_second_per_gpu"] == 14_800 / 8
    assert row.context == 4989 and row.batch == round(14_800 / 8 / 21)
    assert row.ep == 144 and row.gpu == "H800"


def test_step_costs_refuse_sliding_windows():
    with pytest.raises(ValueError, match="full-attention"):
        sv.step_costs(llmmath.preset("mistral-7b"), "H100")


def test_exercises_from_independent_answers():
    """The chapter's checkable exercises, answered by hand from the shapes and data sheets typed
    here (H100: 989.4 TFLOP/s BF16 dense, 3.35 TB/s; H200: 1,978.9 FP8 dense, 4.8 TB/s; MI300X: 1,307.4 and 5.3;
    Qwen3-235B-A22B: 128 experts, 8 per token; Llama 3 70B: 80 layers, 8 KV heads of 128)."""
    from llmmath.check import check

    def harmonic(b):
        return sum(Fraction(1, i) for i in range(1, b + 1))

    lengths = [100, 257, 1000, 4097]
    blocks = sum(_blocks_by_allocation(n, 16) for n in lengths)
    bits = 3 + (16 + 3) / 32

    def speedup(g):
        return sum(0.7**i for i in range(g + 1)) / (0.1 * g + 1)

    answers = {
        "sys-ex-static": {"util_16": float(1 / harmonic(16)), "util_256": float(1 / harmonic(256))},
        "sys-ex-blocks": {"blocks": blocks, "paged_waste": 16 * blocks - sum(lengths),
                          "contiguous_waste": sum(8192 - n for n in lengths)},
        "sys-ex-cow": {"shared_blocks": 62 + 5 * (_blocks_by_allocation(1199, 16) - 62),
                       "unshared_blocks": 5 * _blocks_by_allocation(1199, 16),
                       "saved_mb": 4 * 62 * 16 * 131072 / 1e6},
        "sys-ex-spec": {"best_gamma": max(range(1, 65), key=speedup), "speedup": max(map(speedup, range(1, 65)))},
        "sys-ex-mtp": {"implied_cost_085": 1.85 / 1.8, "implied_cost_090": 1.9 / 1.8},
        "sys-ex-quant": {"bits": bits, "crit_h100": 989.4e12 * bits / 8 / (2 * 3.35e12),
                         "crit_mi300x": 1307.4e12 * bits / 8 / (2 * 5.3e12)},
        "sys-ex-moe": {"t_star": 16 * 1978.9e12 / (2 * 4.8e12), "per_gpu_16": 16 * 1978.9e12 / (2 * 4.8e12) / 16},
        "sys-ex-transfer": {"transfer_ms_bf16": 2 * 128 * 80 * 2 * 32768 / 50e9 * 1e3,
                            "transfer_ms_fp8": 2 * 128 * 80 * 32768 / 50e9 * 1e3},
        "sys-ex-cost": {"usd_per_mtok": 2.0 * 1e6 / 3600 / 1850},
    }
    for label, answer in answers.items():
        feedback = check(label, answer)
        assert feedback.correct, f"{label}: {feedback}"
    assert not check("sys-ex-cow", 5 * 75, part="shared_blocks").correct     # nothing shared


SERVE = ["serve", "llama-3-8b", "--gpu", "h100", "--gpus", "1", "--context", "2048", "--batch", "8"]


def test_serve_prints_the_steady_state_and_its_extras(capsys):
    from llmmath.cli import main

    code = main(SERVE + ["--request-rate", "5", "--price-per-gpu-hour", "2", "--block-size", "16",
                         "--prefix-hit-rate", "0.5", "--speculative", "0.8,4", "--weights", "fp8"])
    out = capsys.readouterr().out
    assert code == 0
    for text in ("steady state", "TTFT >=", "ITL >=", "per million output tokens", "128 blocks of 16",
                 "prefix cache", "3.36 tokens per step", "weights fp8 at fp8_tensor"):
        assert text in out, text


def test_serve_frontier_json(capsys):
    import json

    from llmmath.cli import main

    assert main(SERVE + ["--frontier", "--json", "--price-per-gpu-hour", "2"]) == 0
    curve = json.loads(capsys.readouterr().out)["serving_systems"]["frontier"]
    speeds = [p["tokens_per_second_per_user"] for p in curve]
    rates = [p["tokens_per_second_per_gpu"] for p in curve]
    assert speeds == sorted(speeds, reverse=True)                     # a trade-off: slower users ...
    assert all(b >= a * (1 - 1e-12) for a, b in zip(rates, rates[1:], strict=False))  # ... more per GPU
    assert all(p["cost_per_million_output_tokens"] > 0 for p in curve)


@pytest.mark.parametrize("extra, flag", [
    (["--prefix-hit-rate", "1.5"], "--prefix-hit-rate"), (["--prefix-hit-rate", "-0.1"], "--prefix-hit-rate"),
    (["--speculative", "1.0,4"], "--speculative"), (["--speculative", "0.5,0"], "--speculative"),
    (["--speculative", "0.5"], "--speculative"), (["--block-size", "0"], "--block-size"),
    (["--block-size", "2.5"], "--block-size"), (["--request-rate", "500"], "--request-rate"),
    (["--weights", "fp4"], "--weights"), (["--ep", "8"], "--ep"),
])
def test_serve_bad_flags_exit_2_naming_the_flag(capsys, extra, flag):
    from llmmath.cli import main

    assert main(SERVE + extra) == 2
    err = capsys.readouterr().err.strip()
    assert flag in err and "\n" not in err and "Traceback" not in err
