"""Tests of the command line ``python -m llmmath``."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from llmmath.cli import main


def test_preset_summary(capsys):
    assert main(["llama-65b"]) == 0
    out = capsys.readouterr().out
    assert "8,192" in out and "22,016" in out and "rmsnorm" in out
    assert main(["llama-3-8b"]) == 0  # 2 (K and V) x 32 layers x 8 heads x 128 x 2 bytes
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("KV cache / token (bf16)"))
    assert line.endswith(f" {2 * 32 * 8 * 128 * 2:,} bytes")


def test_config_json_summary(tmp_path, capsys):
    path = tmp_path / "tiny" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
                                "num_key_value_heads": 2, "num_hidden_layers": 2,
                                "intermediate_size": 128, "vocab_size": 100}))
    assert main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "tiny" in out and "GQA" in out


@pytest.mark.parametrize("content, message", [("{bad", "not valid JSON"),
                                               ('{"model_type": "xlnet"}', "not supported"),
                                               ('{"model_type": "gpt2", "n_layer": 2}', "missing the required field")])
def test_bad_config_is_one_line_and_status_2(tmp_path, capsys, content, message):
    path = tmp_path / "config.json"
    path.write_text(content)
    assert main([str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_missing_file_and_unknown_preset(capsys):
    assert main(["does/not/exist.json"]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["lama-65b"]) == 2
    assert "llama-65b" in capsys.readouterr().err  # a close match is suggested


def test_module_entry_point_has_no_traceback():
    result = subprocess.run([sys.executable, "-m", "llmmath", "no-such-model"], capture_output=True, text=True)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and result.stderr.startswith("error:")


def test_families_lists_every_model_type(capsys):
    from llmmath.config import SUPPORTED_MODEL_TYPES

    assert main(["--families"]) == 0
    out = capsys.readouterr().out
    assert all(f"`{mt}`" in out for mt in SUPPORTED_MODEL_TYPES)


def test_a_directory_holding_config_json_is_the_model_named_after_it(tmp_path, monkeypatch, capsys):
    d = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
         "intermediate_size": 128, "vocab_size": 100}
    ckpt = tmp_path / "models" / "Tiny-Llama-2L"
    ckpt.mkdir(parents=True)
    (ckpt / "config.json").write_text(json.dumps(d))
    (tmp_path / "models" / "tiny.json").write_text(json.dumps(d))
    for arg, name in ((ckpt, "Tiny-Llama-2L"), (ckpt / "config.json", "Tiny-Llama-2L"),
                      (tmp_path / "models" / "tiny.json", "tiny")):  # not the parent folder "models"
        assert main([str(arg), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["config"]["name"] == name
    monkeypatch.chdir(ckpt)
    for arg in (".", "config.json"):
        assert main([arg, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["config"]["name"] == "Tiny-Llama-2L"
    assert main([str(tmp_path)]) == 2
    assert "directory without a config.json" in capsys.readouterr().err


_SERVE = ["serve", "llama-3-8b", "--gpu", "h100", "--gpus", "1", "--context", "8192"]
_PLAN = ["plan", "llama-3-8b", "--tokens", "1e12", "--gpu", "h100", "--gpus", "64"]


@pytest.mark.parametrize("argv, flag", [
    # FP8 on a V100 (no FP8 kernels), and a precision the V100 does not have
    (["serve", "llama-3-8b", "--gpu", "v100", "--gpus", "1", "--context", "2048", "--kv-dtype", "fp8"], "--kv-dtype"),
    (["serve", "llama-3-8b", "--gpu", "v100", "--gpus", "1", "--context", "2048", "--dtype", "fp8"], "--dtype"),
    (["serve", "llama-3-8b", "--gpu", "v100", "--gpus", "1", "--context", "2048", "--precision", "bf16_tensor"],
     "--precision"),
    # a prompt longer than the context; contexts beyond the model's positions, rotary or learned alike
    ([*_SERVE, "--prompt", "9000"], "--prompt"),
    # a request holds at least one output token; the weights' format from the checkpoint is checked too
    ([*_SERVE, "--prompt", "8192"], "--prompt"),
    ([*_SERVE, "--output", "8192"], "--output"),
    (["serve", "deepseek-v3", "--gpu", "v100", "--gpus", "8", "--context", "2048"], "--dtype"),
    (["serve", "llama-3-8b", "--gpu", "v100", "--gpus", "1", "--context", "2048", "--dtype", "bf16"], "--dtype"),
    (["serve", "llama-3-70b", "--gpu", "h100", "--gpus", "8", "--context", "1000000"], "--context"),
    (["serve", "gpt2", "--gpu", "h100", "--gpus", "1", "--context", "2048"], "--context"),
    ([*_PLAN, "--seq", "65536"], "--seq"),
    ([*_PLAN, "--seq", "100000", "--tp", "8", "--pp", "4"], "--seq"),
    # a run shorter than one optimizer step (4,194,304 tokens by default)
    (["plan", "llama-3-8b", "--tokens", "1", "--gpu", "h100", "--gpus", "64"], "--tokens"),
    (["plan", "llama-3-8b", "--tokens", "1e6", "--gpu", "h100", "--gpus", "64", "--tp", "2"], "--tokens"),
    # what the help lists, and numbers in range
    ([*_SERVE, "--kv-dtype", "int4"], "--kv-dtype"),
    ([*_SERVE, "--dtype", "fp7"], "--dtype"),
    ([*_SERVE, "--reserve-gb", "-1"], "--reserve-gb"),
    ([*_SERVE, "--batch", "0"], "--batch"),
    (["serve", "llama-3-8b", "--gpu", "h100", "--gpus", "0", "--context", "8192"], "--gpus"),
    (["serve", "llama-3-8b", "--gpu", "h1000", "--gpus", "1", "--context", "8192"], "--gpu"),
    ([*_PLAN, "--mfu", "1.5"], "--mfu"),
    ([*_PLAN, "--efficiency", "nan"], "--efficiency"),
    ([*_PLAN, "--zero", "5"], "--zero"),
    ([*_PLAN, "--tp", "0"], "--tp"),
    ([*_PLAN, "--top", "1.5"], "--top"),
    ([*_PLAN, "--price-per-gpu-hour", "-2"], "--price-per-gpu-hour"),
    # the step-time flags: FP8 only where the accelerator has FP8 tensor cores, typed layout flags
    (["plan", "llama-3-8b", "--tokens", "1e12", "--gpu", "a100", "--gpus", "64", "--precision", "fp8_tensor"],
     "--precision"),
    (["plan", "llama-3-8b", "--tokens", "1e12", "--gpu", "v100", "--gpus", "64", "--precision", "fp8_tensor"],
     "--precision"),
    ([*_PLAN, "--virtual-stages", "0"], "--virtual-stages"),
    ([*_PLAN, "--virtual-stages", "2.5"], "--virtual-stages"),
    ([*_PLAN, "--schedule", "zbb"], "--schedule"),
    ([*_PLAN, "--stage-layers", "1*x"], "--stage-layers"),
    ([*_PLAN, "--pp", "2", "--stage-layers", "16,15"], "--stage-layers"),
    ([*_PLAN, "--pp", "4", "--virtual-stages", "9"], "--virtual-stages"),
])
def test_plan_and_serve_refuse_a_bad_flag_naming_it(argv, flag, capsys):
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert not out and err.startswith("error: ") and err.count("\n") == 1
    assert f"{flag} " in err or f"{flag}:" in err, err


def test_the_accelerator_sets_the_default_precision(capsys):
    """A V100 has no BF16 (Volta tensor cores take FP16): plan and serve compute at its FP16
    tensor peak, 125 TFLOP/s (NVIDIA's V100 data sheet), and serve stores FP16."""
    assert main(["serve", "llama-3-8b", "--gpu", "v100", "--gpus", "1", "--context", "2048", "--json"]) == 0
    run = json.loads(capsys.readouterr().out)
    assert run["dtype"] == run["kv_dtype"] == "fp16" and run["fits"]
    assert main(["plan", "llama-3-8b", "--tokens", "1e12", "--gpu", "v100", "--gpus", "64", "--tp", "8",
                 "--mfu", "0.3", "--json"]) == 0
    run = json.loads(capsys.readouterr().out)
    assert run["cluster"]["precision"] == "fp16_tensor" and run["cluster"]["peak_flops"] == 125e12
    # without --mfu both step-time modes run at that peak: no published V100 run calibrates it, and
    # the prediction says so
    assert main(["plan", "llama-3-8b", "--tokens", "1e12", "--gpu", "v100", "--gpus", "64", "--tp", "8",
                 "--json"]) == 0
    run = json.loads(capsys.readouterr().out)
    assert run["cluster"]["peak_flops"] == 125e12 and run["predicted_mfu"] < run["bound_mfu"] <= 1
    assert "volta/16-bit not calibrated" in run["prediction"]["efficiency"]["source"]


def test_huge_token_counts_are_not_printed_as_float_noise(capsys):
    assert main(["plan", "llama-3-8b", "--tokens", "1e30", "--gpu", "h100", "--gpus", "64", "--tp", "2",
                 "--mfu", "0.4"]) == 0
    out = capsys.readouterr().out
    assert "on 1e+30 tokens" in out and not re.search(r"\d{1,3}(,\d{3}){5}", out)  # nothing >= 10^15 in digits


def test_falcon_kv_cache_grouped_and_as_transformers_caches_it(capsys):
    """Falcon-40B (60 layers, 128 query heads, 8 KV heads of 64) on 8 GPUs at 2,048 tokens, BF16:
    the grouped cache vLLM keeps is one KV head per GPU, 2 x 60 x 1 x 64 x 2,048 x 2 bytes;
    transformers broadcasts K and V to the 16 query heads of each GPU before caching: 16 times
    that. The text shows both, with three significant figures (it used to print "0.0 GB")."""
    argv = ["serve", "falcon-40b", "--gpu", "h100", "--gpus", "8", "--context", "2048"]
    assert main([*argv, "--json"]) == 0
    run = json.loads(capsys.readouterr().out)
    grouped = 2 * 60 * 1 * 64 * 2048 * 2
    assert run["kv_bytes_per_sequence_per_gpu"] == grouped
    assert run["kv_bytes_per_sequence_per_gpu_transformers"] == 16 * grouped
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "0.0315 GB per 2,048-token sequence, grouped" in out and "vLLM" in out
    assert "0.503 GB per GPU (16x)" in out
    assert not re.search(r"(?<![\d,])0\.0 GB", out)


def test_serve_reads_the_weights_format_of_a_checkpoint_directory(tmp_path, capsys):
    """A downloaded checkpoint (a directory holding config.json) is a model for serve too, and its
    quantization_config sets the weights: DeepSeek-V3's FP8 blocks of 128 x 128 with one FP32
    scale each, multiplied at the FP8 peak (W8A8)."""
    from importlib import resources

    ckpt = tmp_path / "DeepSeek-V3"
    ckpt.mkdir()
    (ckpt / "config.json").write_text(resources.files("llmmath").joinpath("hf_configs", "deepseek-v3.json")
                                      .read_text(encoding="utf-8"))
    assert main(["serve", str(ckpt), "--gpu", "h200", "--gpus", "8", "--context", "4096", "--json"]) == 0
    run = json.loads(capsys.readouterr().out)
    assert run["model"]["name"] == "DeepSeek-V3" and run["dtype"].startswith("fp8 (128x128 blocks")
    assert run["cluster"]["precision"] == "fp8_tensor"
