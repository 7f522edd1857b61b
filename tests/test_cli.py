"""Tests of the command line ``python -m llmmath``."""

from __future__ import annotations

import json
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
