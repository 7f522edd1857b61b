"""Tests of llmmath.planning and the ``plan`` / ``serve`` commands.

Expected values are computed here by hand from closed forms (GPT layers: ``24 b s h^2 + 4 b s^2 h``
per layer; the KV cache ``2 L a_kv d_head n`` bytes per value), by brute force (the largest batch),
or are the paper's published figures; the commands are checked for their exit status, their
one-line errors and their JSON.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys

import pytest

import llmmath
from llmmath import Layout, TransformerConfig, preset, weight_format_from_hf
from llmmath.cli import main
from llmmath.planning import layout_for, search_training_runs, serving_run, training_run


def _gpt(L: int = 4, h: int = 256, a: int = 8, V: int = 1000, S: int = 1024) -> TransformerConfig:
    return TransformerConfig(n_layers=L, hidden_size=h, n_heads=a, vocab_size=V, max_position=S, name="tiny-gpt")


def test_training_run_time_from_assumed_mfu_is_the_closed_form():
    cfg, s, b = _gpt(), 512, 64
    layout = Layout(dp=8, microbatches=8)  # 8 x 1 x 8 = 64 sequences per step
    tokens, mfu, peak = 1e9, 0.5, 989.4e12
    run = training_run(cfg, tokens, "H100", layout, s, mfu=mfu, price_per_gpu_hour=2.0)
    L, h, V = 4, 256, 1000
    # forward x 3, no recomputation, attention over the s (s + 1) / 2 causal pairs: 2 x 2 b h per pair
    flops = 3 * (L * (24 * b * s * h**2 + 2 * b * s * (s + 1) * h) + 2 * b * s * h * V)
    steps = math.ceil(tokens / (b * s))
    step = flops / (8 * peak * mfu)
    assert run["steps"] == steps and run["model_flops_per_step"] == flops
    assert run["step_seconds"] == pytest.approx(step, rel=1e-12)
    assert run["days"] == pytest.approx(steps * step / 86400, rel=1e-12)
    assert run["gpu_hours"] == pytest.approx(steps * step * 8 / 3600, rel=1e-12)
    assert run["cost"] == pytest.approx(2.0 * run["gpu_hours"], rel=1e-12)
    assert run["fits"] and run["margin_bytes"] == 72 * 10**9 - run["memory"]["total"]  # a 10% reserve


def test_gpt3_on_1024_a100s_takes_narayanans_34_days():
    """Narayanan et al. (2021), section 5.1: GPT-3 175B on 300B tokens, 1024 A100s at 140 TFLOP/s
    each (with recomputation, 8TP / (nX)) takes about 34 days. Our MFU counts no recomputation:
    140 TFLOP/s of hardware FLOPs is 140 x 6/8 of model FLOPs (attention aside), i.e. MFU
    0.75 x 140 / 312."""
    cfg = preset("gpt3-175b")
    layout = layout_for(cfg, 1024, 2048, 1536 * 2048, tp=8, pp=8, recompute="full")
    run = training_run(cfg, 300e9, "A100", layout, 2048, mfu=0.75 * 140 / 312)
    assert round(run["days"]) in (34, 35)  # attention FLOPs add ~4% to 6N: 34.9 days


def test_the_plans_mfu_has_one_convention_and_inverts_the_step_time_model():
    """Every MFU of a plan counts the model FLOPs with the causal query-key pairs and no
    recomputation (2 x 2 b h per pair and layer, s (s + 1) / 2 pairs; the 6 N part as
    llmmath.training_flops): assuming the MFU the prediction reports gives back its step, and the
    bound's MFU is above the prediction's and at most 1."""
    cfg, s, n = preset("llama-3-8b"), 8192, 64
    lay = layout_for(cfg, n, s, 2**22, tp=2)
    est = training_run(cfg, 1e12, "H100", lay, s, efficiency=0.6)
    again = training_run(cfg, 1e12, "H100", lay, s, mfu=est["mfu"], efficiency=0.6)
    assert again["step_seconds"] == pytest.approx(est["step_seconds"], rel=1e-12)
    assert again["days"] == pytest.approx(est["days"], rel=1e-12)
    h100_bf16 = 989.4e12  # H100 whitepaper, Table 3: dense BF16 tensor TFLOP/s of the SXM5
    L, a, d = cfg.n_layers, cfg.n_heads, cfg.head_dim
    all_pairs = llmmath.training_flops(cfg, 1, s)
    causal = all_pairs - 3 * L * 2 * 2 * a * d * (s * s - s * (s + 1) // 2)
    per_token = causal / s
    assert est["mfu"] == pytest.approx(est["tokens_per_second"] * per_token / (n * h100_bf16), rel=1e-12)
    assert est["mfu"] == est["predicted_mfu"] and est["step_seconds"] == est["predicted_step_seconds"]
    assert est["predicted_mfu"] < est["bound_mfu"] <= 1
    assert est["bound_step_seconds"] < est["predicted_step_seconds"]


def test_dropout_false_drops_the_masks():
    """Without dropout a layer keeps neither of its two residual-dropout masks (1 byte per value,
    s b h each) and the embedding keeps none (Korthikanti et al.'s accounting, fused attention)."""
    cfg, s, b, L, h = _gpt(), 512, 1, 4, 256
    layout = Layout(dp=8, microbatches=8)
    kept = training_run(cfg, 1e9, "H100", layout, s)
    plain = training_run(cfg, 1e9, "H100", layout, s, dropout=False)
    assert kept["memory"]["activations"] - plain["memory"]["activations"] == (2 * L + 1) * s * b * h
    found = search_training_runs(cfg, 1e9, "H100", 8, s, 64 * s, top=2, dropout=False)
    for run in found["best"]:
        lay = Layout(**{k: v for k, v in run["layout"].items() if k != "global_batch"})
        assert run["memory"] == training_run(cfg, 1e9, "H100", lay, s, dropout=False)["memory"]
    with pytest.raises(TypeError, match="dropout"):
        training_run(cfg, 1e9, "H100", layout, s, dropout="no")


def test_layout_for_derives_dp_microbatches_and_uneven_stages():
    cfg = preset("llama-3.1-405b")  # 126 layers on 16 stages: 14 stages of 8, 2 of 7
    layout = layout_for(cfg, 16384, 8192, 16 * 2**20, tp=8, pp=16)
    assert (layout.dp, layout.microbatches, layout.global_batch) == (128, 16, 2048)
    assert sorted(layout.stage_layers) == [7] * 2 + [8] * 14 and sum(layout.stage_layers) == 126
    assert layout.sequence_parallel
    with pytest.raises(ValueError, match="must divide n_gpus"):
        layout_for(cfg, 1000, 8192, 16e6, tp=8, pp=16)


def test_the_embedding_and_the_loss_take_a_chunk_each_as_meta_split_llama_3():
    """Llama 3 405B (126 layers) on 16 pipeline stages: the paper (section 3.3.2) reduces "one
    Transformer layer each from the first and the last stages", and with interleaving "the first
    model chunk on the first stage has only the embedding, and the last model chunk on the last stage
    has only output projection and loss": 7, 8 x 14, 7 and, on 16 x 8 chunks, 0, 1 x 126, 0."""
    from llmmath import embedding_loss_stage_layers

    assert embedding_loss_stage_layers(126, 16) == (7,) + (8,) * 14 + (7,)
    assert embedding_loss_stage_layers(126, 128) == (0,) + (1,) * 126 + (0,)
    assert embedding_loss_stage_layers(126, 127) == (1,) * 126 + (0,)
    assert embedding_loss_stage_layers(126, 1) == (126,)
    cfg = preset("llama-3.1-405b")
    lay = layout_for(cfg, 16384, 8192, 16 * 2**20, tp=8, pp=16, virtual_stages=8)
    assert lay.stage_layers == (0,) + (1,) * 126 + (0,) and lay.schedule == "interleaved"
    with pytest.raises(ValueError, match="at most 128"):
        layout_for(cfg, 16384 * 9, 8192, 16 * 2**20, tp=8, pp=16, virtual_stages=9)


def test_plan_builds_the_llama_3_layout_the_capstone_builds(capsys):
    """``plan --virtual-stages 8`` and ``--stage-layers 0,1*126,0`` give the plan of the Layout
    written out field by field as the capstone (and Table 4's 16,384-GPU row) has it."""
    cfg = preset("llama-3.1-405b")
    paper = Layout(tp=8, pp=16, dp=128, microbatches=16, sequence_parallel=True, zero_stage=1,
                   schedule="interleaved", virtual_stages=8, stage_layers=(0,) + (1,) * 126 + (0,))
    want = training_run(cfg, 15.6e12, "H100", paper, 8192, dropout=False)
    base = ["plan", "llama-3.1-405b", "--tokens", "15.6e12", "--gpu", "h100", "--gpus", "16384", "--tp", "8",
            "--pp", "16", "--virtual-stages", "8", "--recompute", "none", "--no-dropout", "--seq", "8192",
            "--global-batch-tokens", str(16 * 2**20), "--json"]
    for extra in ([], ["--stage-layers", "0,1*126,0"]):
        assert main([*base, *extra]) == 1  # 8K tokens without checkpointing: not in 72 GB by our count
        got = json.loads(capsys.readouterr().out)
        assert got["predicted_step_seconds"] == want["predicted_step_seconds"]
        assert got["memory"] == want["memory"] and got["layout"]["virtual_stages"] == 8
    assert main([*base[:-1], "--stage-layers", "0,1*125,0"]) == 2
    assert "--stage-layers must have --pp * --virtual-stages = 128 entries" in capsys.readouterr().err


def test_a_deepseek_v3_plan_that_does_not_fit_says_what_works(capsys):
    """On 64 H800s nothing holds DeepSeek-V3's training state: ``plan`` says how many GPUs the state
    alone needs (16 bytes per parameter with Adam, mixed precision, over 90% of 80 GB) and a layout
    that fits, whose flags, planned as printed, fit."""
    base = ["plan", "deepseek-v3", "--tokens", "14.8e12", "--gpu", "h800", "--seq", "4096", "--no-dropout"]
    assert main([*base, "--gpus", "64", "--tp", "8", "--pp", "8"]) == 1
    out = capsys.readouterr().out
    need = math.ceil(16 * llmmath.param_count(preset("deepseek-v3")) / (0.9 * 80e9))
    assert f"needs at least {need:,} GPUs" in out and "expert parallelism (--ep)" in out
    flags = re.search(r"plan it with (--gpus \d+ .*?), or", out).group(1).split()
    assert int(flags[1]) >= need
    assert main([*base, *flags]) == 0  # the layout offered fits
    assert "fits (" in capsys.readouterr().out


def test_search_returns_fitting_layouts_fastest_first_or_the_closest_miss():
    cfg = _gpt()
    found = search_training_runs(cfg, 1e9, "H100", 16, 512, 64 * 512, top=3)
    steps = [r["step_seconds"] for r in found["best"]]
    assert found["best"] and steps == sorted(steps) and all(r["fits"] for r in found["best"])
    big = search_training_runs(preset("llama-3.1-405b"), 1e12, "H100", 8, 4096, 8 * 4096)
    assert big["best"] == [] and big["closest"]["margin_bytes"] < 0  # 405B in bf16 alone is 811 GB


def test_search_lists_no_interleaving_without_a_pipeline():
    """With pp = 1 there is nothing to interleave: such a 'layout' is the 1F1B one again (same
    memory, same step) and must not take a second place in the list."""
    found = search_training_runs(_gpt(), 1e9, "H100", 16, 512, 64 * 512, top=50)
    lays = [r["layout"] for r in found["best"]]
    assert lays and all(lay["pp"] > 1 or lay["virtual_stages"] == 1 for lay in lays)
    keys = [tuple(sorted((k, v) for k, v in lay.items() if k not in ("schedule", "virtual_stages")))
            for lay in lays if lay["pp"] == 1]
    assert len(keys) == len(set(keys))


def test_serving_largest_batch_is_the_brute_force_one():
    cfg = preset("llama-3-70b")  # 80 layers, 8 KV heads of 128
    n, tp, reserve = 8192, 8, 3 * 10**9
    run = serving_run(cfg, "H100", tp, n, reserve_bytes=reserve)
    weights = run["weights_bytes_per_gpu"]
    per_seq = 2 * 80 * (8 // tp) * 128 * n * 2  # one KV head per GPU, bf16
    assert run["kv_bytes_per_sequence_per_gpu"] == per_seq
    b = 0
    while weights + (b + 1) * per_seq + reserve <= 81_559 * 2**20:  # nvidia-smi's 81,559 MiB
        b += 1
    assert run["max_batch"] == b == run["batch"] and run["fits"]
    assert run["tokens_per_second"] == pytest.approx(b / run["seconds_per_output_token"])
    too_many = serving_run(cfg, "H100", tp, n, batch=b + 5, reserve_bytes=reserve)
    assert not too_many["fits"] and too_many["batch_margin"] == -5 and "prefill_seconds" not in too_many


def test_serving_weights_that_do_not_fit_say_by_how_much(capsys):
    """Llama 3.1 405B in BF16 on one node of 8 H100s: at least 2 x 405e9 / 8 bytes of weights per
    GPU, more than 80 GB (Dubey et al. 2024, section 6.1, serve it in BF16 on two nodes). Not bad
    input: a plan that does not fit (exit status 1), with the bytes it misses by."""
    run = serving_run(preset("llama-3.1-405b"), "H100", 8, 8192, reserve_bytes=10**9)
    assert run["weights_bytes_per_gpu"] > 2 * 405e9 / 8 > 80e9
    assert run["memory_margin_bytes"] == 81_559 * 2**20 - run["weights_bytes_per_gpu"] - 10**9 < 0
    assert run["max_batch"] == 0 and not run["fits"] and "seconds_per_output_token" not in run
    assert serving_run(preset("llama-3-8b"), "H100", 1, 8192)["memory_margin_bytes"] > 0
    assert main(["serve", "llama-3.1-405b", "--gpu", "h100", "--gpus", "8", "--context", "8192"]) == 1
    out = capsys.readouterr().out
    assert "do NOT fit" in out and "GB over per GPU" in out


def test_falcon_caches_grouped_and_broadcast_across_pipeline_stages():
    """Falcon-40B (60 layers, 128 heads, 8 KV heads of 64), 2,048 tokens, BF16: on 16 H100s, two
    stages of tensor parallelism 8, the busiest stage holds 30 layers with one KV head per GPU
    (vLLM's grouped cache); transformers would broadcast to the 16 heads of each GPU."""
    run = serving_run(preset("falcon-40b"), "H100", 16, 2048)
    grouped = 2 * 30 * 1 * 64 * 2048 * 2
    assert run["cluster"]["pp"] == 2 and run["kv_bytes_per_sequence_per_gpu"] == grouped
    assert run["kv_bytes_per_sequence_per_gpu_transformers"] == 16 * grouped


def test_serving_fp8_cache_halves_the_cache():
    cfg = preset("llama-3-8b")
    bf16 = serving_run(cfg, "H100", 1, 8192, batch=1)
    fp8 = serving_run(cfg, "H100", 1, 8192, batch=1, kv_dtype="fp8")
    assert 2 * fp8["kv_bytes_per_sequence_per_gpu"] == bf16["kv_bytes_per_sequence_per_gpu"]


@pytest.mark.parametrize("call, match", [
    (lambda: training_run(_gpt(), -1, "H100", Layout(), 128), "tokens"),
    (lambda: training_run(_gpt(), 1e9, "H1000", Layout(), 128), "gpu must be one of"),
    (lambda: training_run(_gpt(), 1e9, "H100", Layout(tp=3), 128), "tp"),
    (lambda: training_run(_gpt(), 1e9, "H100", Layout(), 128, mfu=1.5), "mfu"),
    (lambda: training_run(preset("bert-base"), 1e9, "H100", Layout(), 128), "encoder"),
    (lambda: serving_run(_gpt(), "H100", 1, 0), "context"),
    (lambda: serving_run(_gpt(), "H100", 1, 2048), "context"),  # learned positions: 1024
    (lambda: serving_run(_gpt(), "H100", 1, 128, kv_dtype="fp7"), "kv_dtype"),
    # the context holds the prompt and at least one output token
    (lambda: serving_run(_gpt(), "H100", 1, 128, prompt=128), "prompt must be an integer <= 127"),
    # no FP8 kernels on a V100, given as a name or as a checkpoint's format
    (lambda: serving_run(_gpt(), "V100", 1, 128, dtype="fp8"), "dtype fp8 is not supported on the Tesla V100"),
    (lambda: serving_run(_gpt(), "V100", 1, 128, dtype="fp16", kv_dtype="fp8"), "kv_dtype fp8 is not supported"),
    (lambda: serving_run(_gpt(), "V100", 1, 128, dtype=weight_format_from_hf(
        {"quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]}})), "dtype fp8"),
])
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ---- the command line ---------------------------------------------------------------------------

_PLAN = ["plan", "llama-3-8b", "--tokens", "15e12", "--gpu", "h100", "--gpus", "64", "--seq", "8192",
         "--global-batch-tokens", "4194304"]


def test_plan_with_a_layout_json(capsys):
    assert main([*_PLAN, "--tp", "2", "--mfu", "0.4", "--price-per-gpu-hour", "2", "--json"]) == 0
    run = json.loads(capsys.readouterr().out)
    assert run["layout"]["tp"] == 2 and run["layout"]["dp"] == 32 and run["fits"]
    assert run["cost"] == pytest.approx(2 * run["gpu_hours"]) and run["mfu"] == 0.4


def test_plan_no_dropout_drops_the_masks(capsys):
    assert main([*_PLAN, "--tp", "2", "--mfu", "0.4", "--json"]) == 0
    kept = json.loads(capsys.readouterr().out)
    assert main([*_PLAN, "--tp", "2", "--mfu", "0.4", "--json", "--no-dropout"]) == 0
    plain = json.loads(capsys.readouterr().out)
    # Llama 3 8B: two 1-byte masks of s h per layer and the embedding's, split over t = 2 by
    # sequence parallelism; one micro-batch in flight (no pipeline)
    L, h, s = 32, 4096, 8192
    assert kept["memory"]["activations"] - plain["memory"]["activations"] == (2 * L + 1) * s * h // 2


def test_plan_search_text(capsys):
    assert main([*_PLAN, "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert "searched" in out and "#1" in out and "#2" in out and "fits" in out
    assert "64 x H100 SXM5 80 GB: searched" in out and "at best" in out and "expected" in out


@pytest.mark.parametrize("argv", [
    ["plan", "qwen3-0.6b", "--tokens", "1e9", "--gpu", "h100", "--gpus", "1", "--seq", "32768", "--tp", "1"],
    ["plan", "llama2-7b", "--tokens", "2e12", "--gpu", "h100", "--gpus", "64", "--tp", "1"],
    ["plan", "llama2-7b", "--tokens", "2e12", "--gpu", "h100", "--gpus", "64"],
])
def test_plan_never_prints_an_mfu_above_100_percent(capsys, argv):
    """The two plans that printed MFUs of 156% and 106% (the step timed causal pairs, the MFU counted
    every pair): every percentage printed after an MFU is at most 100%."""
    main(argv)
    out = capsys.readouterr().out
    values = [float(x) for x in re.findall(r"MFU(?: <=)? ([0-9.]+)%", out)]
    assert values and max(values) <= 100


def test_plan_json_has_both_modes_and_the_new_flags(capsys):
    base = [*_PLAN, "--tp", "2", "--pp", "4", "--json"]
    assert main(base) == 0
    run = json.loads(capsys.readouterr().out)
    for key in ("bound_step_seconds", "bound_mfu", "predicted_step_seconds", "predicted_mfu"):
        assert 0 < run[key]
    assert run["bound_step_seconds"] < run["predicted_step_seconds"] == run["step_seconds"]
    assert run["predicted_mfu"] < run["bound_mfu"] <= 1 and run["predicted_error"]["runs"] >= 25
    assert "causal" in run["mfu_convention"]
    assert main([*base, "--virtual-stages", "4"]) == 0
    inter = json.loads(capsys.readouterr().out)
    assert (inter["layout"]["schedule"], inter["layout"]["virtual_stages"]) == ("interleaved", 4)
    assert inter["prediction"]["bubble"] < run["prediction"]["bubble"]  # (p-1)/v: four times smaller
    assert main([*base, "--schedule", "zbv"]) == 0
    zbv = json.loads(capsys.readouterr().out)
    assert (zbv["layout"]["schedule"], zbv["layout"]["virtual_stages"]) == ("zbv", 2)
    assert main([*base, "--precision", "fp8_tensor"]) == 0
    fp8 = json.loads(capsys.readouterr().out)
    assert fp8["cluster"]["peak_flops"] == 1978.9e12  # the H100 whitepaper, Table 3: dense FP8
    assert fp8["bound_step_seconds"] < run["bound_step_seconds"]
    assert main([*base, "--mfu", "0.3"]) == 0
    assumed = json.loads(capsys.readouterr().out)
    assert assumed["mfu"] == 0.3 and assumed["predicted_mfu"] == pytest.approx(run["predicted_mfu"])


def test_plan_that_does_not_fit_exits_1_and_says_by_how_much(capsys):
    assert main(["plan", "llama-3.1-405b", "--tokens", "1e12", "--gpu", "h100", "--gpus", "8", "--tp", "8",
                 "--seq", "4096", "--global-batch-tokens", "32768"]) == 1
    out = capsys.readouterr().out
    assert "does NOT fit" in out and "GB over" in out


def test_serve_text_and_json(capsys):
    assert main(["serve", "llama-3-70b", "--gpu", "H100", "--gpus", "8", "--context", "8192", "--batch", "32"]) == 0
    out = capsys.readouterr().out
    assert "per output token" in out and "largest batch" in out
    assert main(["serve", "mixtral-8x7b", "--gpu", "a100", "--gpus", "2", "--context", "4096", "--json"]) == 0
    run = json.loads(capsys.readouterr().out)
    assert run["batch"] == run["max_batch"] > 0 and run["fits"]


def test_serve_labels_bounds_and_predictions(capsys):
    """Issue 27: each time is labelled a bound or a prediction, with its terms; GB to three
    significant figures; seconds once a time passes one; the cost at the price given."""
    argv = ["serve", "llama-3-70b", "--gpu", "H100", "--gpus", "8", "--context", "8192", "--batch", "32",
            "--kv-dtype", "fp8", "--price-per-gpu-hour", "2"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    for text in ("time to first token    bound >= ", "per output token       bound >= ", "predicted, per term",
                 "weights read", "KV read", "communication", "(nvls all-reduce)", "steady state",
                 "requests/s", "per million output tokens at 2 per GPU-hour", "0.168 GB per 8,192-token sequence",
                 "20,480 bytes per token", "reserve 8.55 GB (vLLM's default gpu_memory_utilization 0.9"):
        assert text in out, text
    assert re.search(r"prefill of the batch +bound >= 2\.\d\d s", out)
    assert main([*argv, "--json"]) == 0
    run = json.loads(capsys.readouterr().out)
    for key in ("prefill_seconds", "seconds_per_output_token", "ttft_seconds"):  # bounds below predictions
        assert run[key] < run[f"predicted_{key}"]
    assert run["tokens_per_second"] == pytest.approx(32 / run["seconds_per_output_token"])
    assert run["tokens_per_second"] > run["predicted_tokens_per_second"]
    assert run["steady"]["cost_per_million_output_tokens"] == pytest.approx(
        2 * 8 / 3600 / run["steady"]["output_tokens_per_second"] * 1e6)
    assert run["step"]["mode"] == "bound" and run["predicted_step"]["mode"].startswith("predicted")


def test_serve_deepseek_v3_finds_the_gpus_that_hold_it(capsys):
    """Issue 27: the FP8 checkpoint's quantization_config sets the weights; 8 H100s cannot hold
    them and serve says how many can; 16 (two nodes) run as 2 pipeline stages of 8."""
    assert main(["serve", "deepseek-v3", "--gpu", "h100", "--gpus", "8", "--context", "8192"]) == 1
    out = capsys.readouterr().out
    assert "fp8 (128x128 blocks, FP32 scales, W8A8); products at fp8_tensor" in out
    assert "do NOT fit" in out and "--gpus 16 (tensor parallel 8 x 2 pipeline stages" in out
    assert main(["serve", "deepseek-v3", "--gpu", "h100", "--gpus", "16", "--context", "8192", "--json"]) == 0
    run = json.loads(capsys.readouterr().out)
    assert (run["cluster"]["tp"], run["cluster"]["pp"]) == (8, 2) and run["fits"]
    assert run["seconds_per_output_token"] < run["seconds_per_output_token_most_experts"]


def test_serve_reads_a_gptq_config(tmp_path, capsys):
    path = tmp_path / "llama-gptq" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"model_type": "llama", "hidden_size": 512, "num_attention_heads": 8,
                                "num_hidden_layers": 4, "intermediate_size": 1024, "vocab_size": 1000,
                                "torch_dtype": "float16",
                                "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128}}))
    assert main(["serve", str(path), "--gpu", "h100", "--gpus", "1", "--context", "256"]) == 0
    assert "int4 (gptq, group 128, W4A16); products at bf16_tensor" in capsys.readouterr().out


def test_top_level_help_lists_the_commands_options(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "--price-per-gpu-hour" in out and "--allreduce" in out and "--kv-dtype" in out and "--tokens" in out


@pytest.mark.parametrize("argv, message", [
    (["serve", "llama-3-8b", "--gpu", "h1000", "--gpus", "1", "--context", "8192"], "gpu must be one of"),
    (["serve", "llama-3-8b", "--gpu", "h100", "--gpus", "3", "--context", "8192"], "tp=3 must divide"),
    (["serve", "llama-3-8b", "--gpu", "h100", "--gpus", "1", "--context", "-5"], "context"),
    (["serve", "llama-3-8b", "--gpu", "h100", "--gpus", "1"], "--context"),
    (["serve", "llama-3-8b", "--gpu", "a100", "--gpus", "8", "--context", "512", "--allreduce", "nvls"],
     "allreduce='nvls' is not offered by the A100"),
    (["serve", "llama-3-8b", "--gpu", "h100", "--gpus", "12", "--context", "512"], "must be a multiple of 8"),
    (["serve", "llama-3-8b", "--gpu", "h100", "--gpus", "1", "--context", "512", "--prompt", "100",
      "--output", "100"], "--prompt 100 + --output 100 must equal --context 512"),
    (["plan", "llama-3-8b", "--tokens=-1e12", "--gpu", "h100", "--gpus", "8"], "expected a number > 0"),
    (["plan", "llama-3-8b", "--tokens", "1e12", "--gpu", "h100", "--gpus", "8", "--tp", "3"], "must divide"),
    (["plan", "llama-3-8b", "--tokens", "1e12", "--gpu", "h100", "--gpus", "8", "--recompute", "some"],
     "recompute"),
    (["plan", "no-such-model", "--tokens", "1e12", "--gpu", "h100", "--gpus", "8"], "unknown preset"),
    (["plan", "llama-3-8b", "--tokens", "1e12", "--gpu", "h100", "--gpus", "8", "--pp", "2", "--schedule", "zbb"],
     "schedule"),
    (["plan", "llama-3-8b", "--tokens", "1e12", "--gpu", "h100", "--gpus", "8", "--pp", "2", "--zero", "3"],
     "DeepSpeed refuses it"),
])
def test_bad_input_is_one_line_and_status_2(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and err.startswith("error:")


def test_malformed_config_file(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text('{"model_type": "llama", "hidden_size": 64}')
    assert main(["serve", str(path), "--gpu", "h100", "--gpus", "1", "--context", "128"]) == 2
    assert "missing the required field" in capsys.readouterr().err


def test_summary_json(capsys):
    assert main(["deepseek-v3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["params"] == llmmath.param_count(preset("deepseek-v3"))
    assert out["config"]["mlp_types"][:4] == ["dense", "dense", "dense", "moe"]


def test_plan_entry_point_has_no_traceback():
    result = subprocess.run([sys.executable, "-m", "llmmath", "plan", "llama-3-8b", "--gpu", "h100"],
                            capture_output=True, text=True)
    assert result.returncode == 2 and "Traceback" not in result.stderr
