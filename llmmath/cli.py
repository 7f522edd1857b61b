"""``python -m llmmath``: a model's summary, a training plan, a serving plan.

    python -m llmmath llama-65b              # summary of a preset (see llmmath.PRESETS)
    python -m llmmath path/to/config.json    # ... of any supported Hugging Face config.json
    python -m llmmath --list                 # the preset names
    python -m llmmath --families             # the supported config.json model_types
    python -m llmmath plan MODEL --tokens 15e12 --gpu h100 --gpus 16384 [--tp 8 --pp 16 ... --no-dropout]
    python -m llmmath serve MODEL --gpu h100 --gpus 8 --context 8192 [--batch 32 --kv-dtype fp8]

Every command takes ``--json``. Exit status: 0, or 1 when the requested run does not fit in
memory (the output says what and by how much), or 2 for bad input (unknown model or GPU, a
degree that does not divide, a negative number, a malformed config): one line on stderr, no
traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .config import TransformerConfig, from_hf_config, supported_families_table
from .hardware import GPUS, Accelerator, accelerator, check_storage_dtype, default_precision
from .memory import RECOMPUTE_MODES
from .presets import PRESETS, preset
from .units import DTYPES

_LAYOUT_FLAGS = ("tp", "pp", "cp", "ep", "zero", "micro_batch", "recompute")


def load(spec: str) -> TransformerConfig:
    """A preset name, the path of a ``config.json`` file, or a directory holding one (a
    downloaded checkpoint). The model is named after the directory (``.../Llama-3.1-8B/config.json``
    or ``.../Llama-3.1-8B`` -> ``Llama-3.1-8B``), or after the file when it is not called
    ``config.json`` (``llama.json`` -> ``llama``)."""
    path = Path(spec)
    if spec.endswith(".json") or path.exists():
        if path.is_dir():
            if not (path / "config.json").is_file():
                raise ValueError(f"{spec} is a directory without a config.json")
            path = path / "config.json"
        if not path.is_file():
            raise ValueError(f"no such file: {spec}")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"{spec} is not valid JSON: {exc}") from exc
        name = path.resolve().parent.name if path.name == "config.json" else path.stem
        return from_hf_config(data, name=name or path.stem)
    return preset(spec)


# ---- the summary ------------------------------------------------------------------------------


def _rows(cfg: TransformerConfig) -> list[tuple[str, str]]:
    rows = [
        ("name", cfg.name),
        ("family", cfg.family),
        ("kind", "encoder-decoder" if cfg.is_encoder_decoder else "causal decoder" if cfg.causal else "encoder"),
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
    """Rows from the later chapters' modules."""
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
    seq = min(cfg.max_position or 2048, 2048)
    dec = seq if cfg.is_encoder_decoder else None  # T5: as many decoder as encoder tokens
    label = f"s={seq:,}" + (" in and out" if dec else "")
    rows.append((f"forward FLOPs / token ({label})",
                 f"{llmmath.forward_flops(cfg, 1, seq, decoder_seq=dec) / seq:.4g}"))
    rows.append((f"training FLOPs / token ({label})",
                 f"{llmmath.training_flops(cfg, 1, seq, decoder_seq=dec) / seq:.4g}"))
    rows.append(("weights in bf16", f"{llmmath.weight_bytes(cfg, 'bf16') / 1e9:,.2f} GB"))
    return rows


def _summary_json(cfg: TransformerConfig) -> dict[str, Any]:
    import dataclasses

    import llmmath

    seq = min(cfg.max_position or 2048, 2048)
    dec = seq if cfg.is_encoder_decoder else None
    return {
        "config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(cfg).items()},
        "params": llmmath.param_count(cfg),
        "active_params": llmmath.active_param_count(cfg),
        "param_breakdown": llmmath.param_breakdown(cfg),
        "seq": seq,
        "decoder_seq": dec,
        "forward_flops_per_token": llmmath.forward_flops(cfg, 1, seq, decoder_seq=dec) / seq,
        "training_flops_per_token": llmmath.training_flops(cfg, 1, seq, decoder_seq=dec) / seq,
        "weight_bytes_bf16": llmmath.weight_bytes(cfg, "bf16"),
    }


def _print_rows(rows: list[tuple[str, str]]) -> None:
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")


# ---- plan and serve -----------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse that raises ValueError (one line, exit status 2 in :func:`main`) instead of exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise ValueError(message)


def _number(text: str) -> float:
    """A count typed as ``15e12``, ``16_000_000`` or ``1.5T``-free plain number."""
    try:
        value = float(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


def _integer(minimum: int = 1, maximum: int | None = None) -> Callable[[str], int]:
    """An integer flag in ``[minimum, maximum]`` (argparse names the flag in its error)."""
    bound = f">= {minimum}" + ("" if maximum is None else f" and <= {maximum}")

    def parse(text: str) -> int:
        try:
            value = int(text.replace("_", ""))
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer {bound}, got {text!r}") from None
        if value < minimum or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(f"expected an integer {bound}, got {text!r}")
        return value
    return parse


def _real(low: float, high: float | None = None, *, open_low: bool = False) -> Callable[[str], float]:
    """A finite real flag in ``[low, high]`` (``(low, high]`` with ``open_low``)."""
    bound = ("> " if open_low else ">= ") + f"{low:g}" + ("" if high is None else f" and <= {high:g}")

    def parse(text: str) -> float:
        try:
            value = float(text.replace("_", ""))
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number {bound}, got {text!r}") from None
        if not math.isfinite(value) or value < low or (open_low and value == low) \
                or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"expected a number {bound}, got {text!r}")
        return value
    return parse


#: Storage formats of the weights (``--dtype``) and of the KV cache (``--kv-dtype``, no 4-bit cache).
_WEIGHT_DTYPES = DTYPES
_KV_DTYPES = tuple(d for d in DTYPES if d != "int4")


def _check_gpu(args: argparse.Namespace) -> Accelerator:
    """``--gpu`` as an accelerator, and ``--precision`` (default: what a 16-bit model computes in
    there, :func:`llmmath.default_precision`) one of the precisions it has."""
    try:
        spec = accelerator(args.gpu)
    except ValueError:
        raise ValueError(f"--gpu must be one of {', '.join(GPUS)} (any case); got {args.gpu!r}") from None
    if args.precision is None:
        args.precision = default_precision(spec)
    elif args.precision not in spec.peak_flops:
        raise ValueError(f"--precision must be one of the {spec.name}'s: {', '.join(spec.peak_flops)}; "
                         f"got {args.precision!r}")
    return spec


def _check_one_step(tokens: float, global_batch: int, seq: int) -> None:
    """``--tokens`` must fill at least one optimizer step of ``global_batch`` sequences of ``seq``
    tokens (a shorter run would be charged a whole step)."""
    if tokens < global_batch * seq:
        raise ValueError(f"--tokens {_count(tokens)} is less than one optimizer step ({global_batch:,} sequences of "
                         f"{seq:,} tokens = {global_batch * seq:,}): lower --global-batch-tokens or --seq")


def _check_positions(flag: str, value: int, cfg: TransformerConfig) -> None:
    """One rule for every model, learned or rotary positions: a sequence holds at most the
    ``max_position_embeddings`` positions its config declares (rope scaling is not applied on top:
    a checkpoint extended by it declares the extended length, e.g. Llama 3.1's 131,072)."""
    if cfg.max_position is not None and value > cfg.max_position:
        raise ValueError(f"{flag} {value:,} exceeds the {cfg.max_position:,} positions of {cfg.name} "
                         f"({cfg.position} positions; the config's max_position_embeddings): to plan a longer "
                         "context, raise max_position_embeddings in a copy of the config")


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="a preset name or the path of a config.json")
    parser.add_argument("--gpu", required=True, help=f"accelerator: {', '.join(GPUS)} (any case)")
    parser.add_argument("--gpus", required=True, type=_integer(), help="number of accelerators")
    parser.add_argument("--precision", default=None, help="peak FLOP/s used (default: the accelerator's 16-bit "
                        "tensor precision, bf16_tensor, or fp16_tensor on a V100)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def _plan_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m llmmath plan", description="Plan a training run: memory per GPU, step time, "
                "days, GPU-hours and cost; without a layout, search the layouts.")
    _common(p)
    p.add_argument("--tokens", required=True, type=_number, help="training tokens, e.g. 15e12")
    p.add_argument("--seq", type=_integer(), default=None, help="sequence length, at most the model's positions "
                   "(default: the model's positions, at most 8192)")
    p.add_argument("--global-batch-tokens", type=_number, default=None,
                   help="tokens per optimizer step (default 2^22 = 4,194,304, rounded to whole micro-batches)")
    for flag in ("tp", "pp", "cp", "ep"):
        p.add_argument(f"--{flag}", type=_integer(), default=None, help=f"{flag} degree (a layout flag)")
    p.add_argument("--zero", type=_integer(0, 3), default=None, help="ZeRO stage 0-3 (default 1)")
    p.add_argument("--micro-batch", type=_integer(), default=None, help="sequences per micro-batch (default 1)")
    p.add_argument("--recompute", default=None, choices=RECOMPUTE_MODES,
                   help="none, selective or full (default selective)")
    p.add_argument("--mfu", type=_real(0, 1, open_low=True), default=None, help="assumed model FLOPs utilisation; "
                   "without it the step-time model runs kernels at --efficiency of peak")
    p.add_argument("--efficiency", type=_real(0, 1, open_low=True), default=1.0,
                   help="fraction of peak the kernels reach in the step-time model (default 1: a lower bound)")
    p.add_argument("--price-per-gpu-hour", type=_real(0), default=None, help="price of one GPU-hour, for the cost")
    p.add_argument("--no-dropout", action="store_true",
                   help="the model trains without dropout (Llama, DeepSeek): no dropout masks in the activations")
    p.add_argument("--top", type=_integer(), default=5, help="layouts to show when searching (default 5)")
    return p


def _serve_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m llmmath serve", description="Plan serving: weights and KV cache per GPU, the "
                "largest batch, latency bounds and throughput (tensor parallelism over --gpus).")
    _common(p)
    p.add_argument("--context", required=True, type=_integer(),
                   help="tokens per sequence (prompt + output), at most the model's positions")
    p.add_argument("--batch", type=_integer(), default=None, help="concurrent sequences (default: the largest "
                   "that fits)")
    p.add_argument("--prompt", type=_integer(), default=None, help="prompt tokens of the prefill, at most "
                   "--context (default: --context)")
    p.add_argument("--dtype", default=None, choices=_WEIGHT_DTYPES, help=f"weights: {', '.join(_WEIGHT_DTYPES)} "
                   "(default bf16; fp16 with --precision fp16_tensor or on a V100, which has no BF16; no fp8 on "
                   "a V100)")
    p.add_argument("--kv-dtype", default=None, choices=_KV_DTYPES, help=f"KV cache: {', '.join(_KV_DTYPES)} "
                   "(default: as --dtype's default; no fp8 on a V100)")
    p.add_argument("--reserve-gb", type=_real(0), default=0.0,
                   help="GB per GPU kept for activations and the runtime (default 0)")
    return p


def _gb(n: float) -> str:
    """Bytes as GB: one decimal, or two significant figures where one decimal would print a
    non-zero size as "0.0 GB" (falcon-40b's KV cache per sequence and GPU is 0.031 GB)."""
    if n == 0 or abs(n) >= 0.05e9:
        return f"{n / 1e9:,.1f} GB"
    return f"{n / 1e9:.2g} GB"


def _count(x: float, decimals: int = 0) -> str:
    """A count or amount with thousands separators while a float holds it exactly (below 10^15),
    else in scientific notation (``1e30`` tokens is not printed as float noise)."""
    return f"{x:,.{decimals}f}" if abs(x) < 1e15 else f"{x:.4g}"


def _layout_text(lay: dict[str, Any], seq: int) -> str:
    extra = [f"ZeRO-{lay['zero_stage']}", f"recompute {lay['recompute']}"]
    if lay["sequence_parallel"]:
        extra.insert(1, "sequence parallel")
    if lay["schedule"] == "interleaved":
        extra.append(f"interleaved x{lay['virtual_stages']}")
    return (f"tp {lay['tp']} x pp {lay['pp']} x dp {lay['dp']} x cp {lay['cp']} (ep {lay['ep']}), "
            + ", ".join(extra) + f"; micro-batch {lay['microbatch_size']} x {lay['microbatches']}, "
            f"global batch {lay['global_batch']:,} x {seq:,} tokens")


def _plan_text(run: dict[str, Any]) -> list[tuple[str, str]]:
    mem, cap = run["memory"], run["cluster"]["memory_bytes"]
    parts = ", ".join(f"{k.replace('_', ' ')} {_gb(v)}" for k, v in mem.items() if k not in ("total", "stage") and v)
    fit = (f"fits ({_gb(run['margin_bytes'])} to spare)" if run["fits"]
           else f"does NOT fit: {_gb(-run['margin_bytes'])} over")
    comm = ", ".join(f"{k} {_gb(v)}" for k, v in run["communication_bytes_per_step"].items() if k != "total" and v)
    est = run["model_estimate"]
    cost = "" if run["cost"] is None else f", cost {_count(run['cost'])}"
    return [
        ("layout", _layout_text(run["layout"], run["seq"])),
        ("memory (busiest GPU)", f"stage {mem['stage']}: {parts}"),
        ("", f"total {_gb(mem['total'])} of {_gb(cap)}: {fit}"),
        ("step", f"{run['model_flops_per_step']:.3g} model FLOPs; sent per GPU: {comm or 'nothing'}"),
        ("step time", f"{run['step_seconds']:,.2f} s ({run['time_source']}); model estimate "
                      f"{est['step']:,.2f} s = compute {est['compute']:,.2f} + bubble {est['bubble']:,.2f} "
                      f"+ exposed communication {est['exposed_communication']:,.2f}, MFU {est['mfu']:.1%}"),
        ("run", f"{_count(run['steps'])} steps, {_count(run['days'], 1)} days, {_count(run['gpu_hours'])} "
                f"GPU-hours{cost}, {run['tokens_per_second']:,.0f} tokens/s, MFU {run['mfu']:.1%}"),
    ]


def _plan(argv: Sequence[str]) -> int:
    from .parallel import Layout  # noqa: F401 - imported for its validation messages
    from .planning import layout_for, search_training_runs, training_run

    args = _plan_parser().parse_args(argv)
    _check_gpu(args)
    cfg = load(args.model)
    seq = args.seq if args.seq is not None else min(cfg.max_position or 8192, 8192)
    _check_positions("--seq", seq, cfg)
    gbt = args.global_batch_tokens if args.global_batch_tokens is not None else 2**22
    _check_one_step(args.tokens, max(1, round(gbt / seq)), seq)
    kw = dict(mfu=args.mfu, efficiency=args.efficiency, price_per_gpu_hour=args.price_per_gpu_hour,
              precision=args.precision, dropout=not args.no_dropout)
    if any(getattr(args, f) is not None for f in _LAYOUT_FLAGS):
        degrees = {k: v for k, v in (("tp", args.tp), ("pp", args.pp), ("cp", args.cp), ("ep", args.ep),
                                    ("zero_stage", args.zero), ("microbatch_size", args.micro_batch),
                                    ("recompute", args.recompute)) if v is not None}
        degrees.setdefault("zero_stage", 1)
        degrees.setdefault("recompute", "selective")
        layout = layout_for(cfg, args.gpus, seq, gbt, **degrees)
        _check_one_step(args.tokens, layout.global_batch, seq)
        run = training_run(cfg, args.tokens, args.gpu, layout, seq, **kw)
        if args.json:
            print(json.dumps(run, indent=2))
        else:
            print(f"Training {cfg.name} ({run['model']['params']:,} parameters) on {_count(args.tokens)} tokens, "
                  f"{run['cluster']['n_gpus']:,} x {run['cluster']['gpu']}")
            _print_rows(_plan_text(run))
        return 0 if run["fits"] else 1
    found = search_training_runs(cfg, args.tokens, args.gpu, args.gpus, seq, gbt, top=args.top, **kw)
    if args.json:
        print(json.dumps(found, indent=2))
        return 0 if found["best"] else 1
    print(f"Training {cfg.name} on {_count(args.tokens)} tokens, {args.gpus:,} x {accelerator(args.gpu).name}: "
          "searched "
          f"{found['candidates']:,} layouts (global batch {found['global_batch']:,} x {seq:,} tokens), "
          f"{found['fitting']:,} fit")
    if not found["best"]:
        close = found["closest"]
        if close is None:
            print("no layout divides the GPUs, layers and batch: change --gpus, --seq or --global-batch-tokens")
        else:
            print(f"none fits: the layout of least memory needs {_gb(close['memory']['total'])} per GPU, "
                  f"{_gb(-close['margin_bytes'])} more than the {_gb(close['cluster']['memory_bytes'])} "
                  "of the accelerator")
            _print_rows(_plan_text(close))
        return 1
    for i, run in enumerate(found["best"], 1):
        est = run["model_estimate"]
        why = (f"step {est['step']:,.2f} s: bubble {est['bubble'] / est['step']:.0%}, exposed communication "
               f"{est['exposed_communication'] / est['step']:.0%}; {_gb(run['margin_bytes'])} of memory to spare")
        print(f"\n#{i}  {why}")
        _print_rows(_plan_text(run))
    return 0


def _broadcast_note(cfg: TransformerConfig, run: dict[str, Any]) -> str:
    """Falcon's new decoder architecture: the grouped cache (vLLM) and transformers' broadcast one."""
    if not cfg.kv_broadcast:
        return ""
    t = run["cluster"]["n_gpus"]
    kv, a = max(cfg.n_kv_heads // t, 1), cfg.n_heads // t
    return (f", grouped: {kv} KV head(s) per GPU, as vLLM caches it; transformers' Falcon caches K/V broadcast "
            f"to all {a} heads: {_gb(run['kv_bytes_per_sequence_per_gpu_transformers'])} per GPU ({a // kv}x)")


def _serve(argv: Sequence[str]) -> int:
    from .planning import serving_run

    args = _serve_parser().parse_args(argv)
    spec = _check_gpu(args)
    half = "fp16" if "fp16_tensor" in (args.precision, default_precision(spec)) else "bf16"
    args.dtype = check_storage_dtype(spec, "--dtype", args.dtype or half)
    args.kv_dtype = check_storage_dtype(spec, "--kv-dtype", args.kv_dtype or half)
    cfg = load(args.model)
    _check_positions("--context", args.context, cfg)
    if args.prompt is not None and args.prompt > args.context:
        raise ValueError(f"--prompt {args.prompt:,} exceeds --context {args.context:,} (the context holds the "
                         "prompt and the output)")
    run = serving_run(cfg, args.gpu, args.gpus, args.context, batch=args.batch, prompt=args.prompt,
                      dtype=args.dtype, kv_dtype=args.kv_dtype, reserve_bytes=round(args.reserve_gb * 1e9),
                      precision=args.precision)
    if args.json:
        print(json.dumps(run, indent=2))
        return 0 if run["fits"] else 1
    c = run["cluster"]
    print(f"Serving {cfg.name} ({run['model']['params']:,} parameters) on {c['n_gpus']} x {c['gpu']} "
          f"(tensor parallel {c['n_gpus']}), {run['context']:,}-token sequences, weights {run['dtype']}, "
          f"KV cache {run['kv_dtype']}")
    rows = [
        ("weights per GPU", _gb(run["weights_bytes_per_gpu"])),
        ("KV cache per sequence", f"{_gb(run['kv_bytes_per_sequence_per_gpu'])} per GPU" + _broadcast_note(cfg, run)),
        ("largest batch", f"{run['max_batch']:,} sequences (memory {_gb(c['memory_bytes'])} per GPU, reserve "
                          f"{_gb(run['reserve_bytes'])}: --reserve-gb)"),
    ]
    if run["fits"]:
        rows += [
            (f"at batch {run['batch']:,}", f"memory {_gb(run['memory_bytes_per_gpu'])} per GPU"),
            ("prefill (time to first token)", f">= {run['prefill_seconds'] * 1e3:,.1f} ms for "
                                              f"{run['batch']:,} x {run['prompt']:,}-token prompts at once"),
            ("per output token", f">= {run['seconds_per_output_token'] * 1e3:,.2f} ms"),
            ("throughput", f"<= {run['tokens_per_second']:,.0f} tokens/s"),
        ]
    elif run["memory_margin_bytes"] < 0:
        rows.append(("weights", f"do NOT fit: {_gb(-run['memory_margin_bytes'])} over per GPU (with the reserve); "
                                "raise --gpus or quantize (--dtype fp8)"))
    else:
        rows.append(("batch", f"{run['batch']:,} does NOT fit: {-run['batch_margin']:,} sequences too many"
                     if run["batch"] else "not even one sequence fits beside the weights"))
    _print_rows(rows)
    return 0 if run["fits"] else 1


# ---- entry point ----------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] == "plan":
            return _plan(argv[1:])
        if argv and argv[0] == "serve":
            return _serve(argv[1:])
    except (ValueError, TypeError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(prog="python -m llmmath", description=__doc__.split("\n")[0])
    parser.add_argument("model", nargs="?", help="a preset name or the path of a config.json "
                        "(or a command: plan, serve; see python -m llmmath plan --help)")
    parser.add_argument("--list", action="store_true", help="list the preset names")
    parser.add_argument("--families", action="store_true",
                        help="list the supported config.json model_types (a Markdown table)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
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
        if args.json:
            print(json.dumps(_summary_json(cfg), indent=2))
            return 0
        rows = _rows(cfg)
    except (ValueError, TypeError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    _print_rows(rows)
    return 0
