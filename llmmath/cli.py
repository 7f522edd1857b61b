"""``python -m llmmath``: a readable summary of a model.

    python -m llmmath llama-65b              # a preset (see llmmath.PRESETS)
    python -m llmmath path/to/config.json    # any supported Hugging Face config.json
    python -m llmmath --list                 # the preset names
    python -m llmmath --families             # the supported config.json model_types

Bad input (unknown preset, missing file, bad JSON, unsupported model) prints one line on stderr
and exits with status 2, without a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from .config import TransformerConfig, from_hf_config, supported_families_table
from .presets import PRESETS, preset


def load(spec: str) -> TransformerConfig:
    """A preset name, or the path of a ``config.json`` file."""
    path = Path(spec)
    if spec.endswith(".json") or path.exists():
        if not path.is_file():
            raise ValueError(f"no such file: {spec}")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"{spec} is not valid JSON: {exc}") from exc
        return from_hf_config(data, name=path.parent.name or path.stem)
    return preset(spec)


def _rows(cfg: TransformerConfig) -> list[tuple[str, str]]:
    rows = [
        ("name", cfg.name),
        ("family", cfg.family),
        ("kind", "causal decoder" if cfg.causal else "encoder"),
        ("layers L", f"{cfg.n_layers:,}"),
        ("hidden size h", f"{cfg.hidden_size:,}"),
        ("heads a / kv heads", f"{cfg.n_heads} / {cfg.n_kv_heads} ({cfg.attention_kind})"),
        ("head dim", f"{cfg.head_dim:,}"),
        ("FFN size d_ff", f"{cfg.ffn_size:,} ({cfg.ffn_kind}, {cfg.activation})"),
        ("vocabulary V", f"{cfg.vocab_size:,}"),
        ("positions", cfg.position + (f" (max {cfg.max_position:,})" if cfg.max_position else "")),
        ("norm", f"{cfg.norm} x {cfg.norms_per_layer} per layer"),
        ("tied embeddings", "yes" if cfg.tie_embeddings else "no"),
    ]
    if cfg.kv_lora_rank:
        rows.append(("latent attention (MLA)", f"q rank {cfg.q_lora_rank or '-'}, kv rank {cfg.kv_lora_rank}, "
                     f"rotary dims {cfg.rope_head_dim}, value dim {cfg.v_head_dim}"))
    if cfg.qk_norm != "none":
        rows.append(("QK-norm", cfg.qk_norm))
    if cfg.is_moe:
        shared = f", shared width {cfg.shared_ffn_size:,}" if cfg.shared_ffn_size else ""
        rows.append(("experts", f"{cfg.n_experts} of width {cfg.expert_ffn_size:,} "
                     f"(top-{cfg.experts_per_token}{shared})"))
    if len(cfg.layer_counts) > 1 or cfg.sliding_window:
        kinds = ", ".join(f"{n} x {spec.attention}"
                          + (f" ({cfg.sliding_window:,})" if spec.attention == "sliding" else "")
                          + f"/{spec.mlp}" for spec, n in cfg.layer_counts.items())
        rows.append(("layer pattern", kinds))
    if cfg.is_encoder_decoder:
        rows.append(("encoder layers", f"{cfg.n_encoder_layers:,}"))
    rows.extend(_extra_rows(cfg))
    if cfg.source:
        rows.append(("source", cfg.source))
    return rows


def _extra_rows(cfg: TransformerConfig) -> list[tuple[str, str]]:
    """Rows from the later chapters' modules, when they are installed."""
    import llmmath

    rows: list[tuple[str, str]] = []
    extras: list[tuple[str, str, Callable[[TransformerConfig], str]]] = [
        ("param_count", "parameters", lambda c: f"{llmmath.param_count(c):,}"),
        ("active_param_count", "active parameters / token",
         lambda c: f"{llmmath.active_param_count(c):,}"),
    ]
    for attr, label, fmt in extras:
        if hasattr(llmmath, attr):
            rows.append((label, fmt(cfg)))
    if hasattr(llmmath, "forward_flops"):
        seq = min(cfg.max_position or 2048, 2048)
        dec = seq if cfg.is_encoder_decoder else None  # T5: as many decoder as encoder tokens
        label = f"s={seq:,}" + (" in and out" if dec else "")
        rows.append((f"forward FLOPs / token ({label})",
                     f"{llmmath.forward_flops(cfg, 1, seq, decoder_seq=dec) / seq:.4g}"))
        rows.append((f"training FLOPs / token ({label})",
                     f"{llmmath.training_flops(cfg, 1, seq, decoder_seq=dec) / seq:.4g}"))
    if hasattr(llmmath, "weight_bytes"):
        rows.append(("weights in bf16", f"{llmmath.weight_bytes(cfg, 'bf16') / 1e9:,.2f} GB"))
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m llmmath", description=__doc__.split("\n")[0])
    parser.add_argument("model", nargs="?", help="a preset name or the path of a config.json")
    parser.add_argument("--list", action="store_true", help="list the preset names")
    parser.add_argument("--families", action="store_true",
                        help="list the supported config.json model_types (a Markdown table)")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(PRESETS))
        return 0
    if args.families:
        print(supported_families_table())
        return 0
    if not args.model:
        parser.print_usage(sys.stderr)
        print("error: give a preset name or a config.json path (--list shows the presets)", file=sys.stderr)
        return 2
    try:
        cfg = load(args.model)
        rows = _rows(cfg)
    except (ValueError, TypeError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    return 0
