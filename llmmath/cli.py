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
from .hardware import GPUS, accelerator
from .presets import PRESETS, preset

_LAYOUT_FLAGS = ("tp", "pp", "cp", "ep", "zero", "micro_batch", "recompute")


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


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="a preset name or the path of a config.json")
    parser.add_argument("--gpu", required=True, help=f"accelerator: {', '.join(GPUS)} (any case)")
    parser.add_argument("--gpus", required=True, type=int, help="number of accelerators")
    parser.add_argument("--precision", default="bf16_tensor", help="peak FLOP/s used (default bf16_tensor)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def _plan_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m llmmath plan", description="Plan a training run: memory per GPU, step time, "
                "days, GPU-hours and cost; without a layout, search the layouts.")
    _common(p)
    p.add_argument("--tokens", required=True, type=_number, help="training tokens, e.g. 15e12")
    p.add_argument("--seq", type=int, default=None, help="sequence length (default: the model's positions, at "
                   "most 8192)")
    p.add_argument("--global-batch-tokens", type=_number, default=None,
                   help="tokens per optimizer step (default 2^22 = 4,194,304, rounded to whole micro-batches)")
    for flag in ("tp", "pp", "cp", "ep"):
        p.add_argument(f"--{flag}", type=int, default=None, help=f"{flag} degree (a layout flag)")
    p.add_argument("--zero", type=int, default=None, help="ZeRO stage 0-3 (default 1)")
    p.add_argument("--micro-batch", type=int, default=None, help="sequences per micro-batch (default 1)")
    p.add_argument("--recompute", default=None, help="none, selective or full (default selective)")
    p.add_argument("--mfu", type=float, default=None, help="assumed model FLOPs utilisation; without it the "
                   "step-time model runs kernels at --efficiency of peak")
    p.add_argument("--efficiency", type=float, default=1.0,
                   help="fraction of peak the kernels reach in the step-time model (default 1: a lower bound)")
    p.add_argument("--price-per-gpu-hour", type=float, default=None, help="price of one GPU-hour, for the cost")
    p.add_argument("--no-dropout", action="store_true",
                   help="the model trains without dropout (Llama, DeepSeek): no dropout masks in the activations")
    p.add_argument("--top", type=int, default=5, help="layouts to show when searching (default 5)")
    return p


def _serve_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m llmmath serve", description="Plan serving: weights and KV cache per GPU, the "
                "largest batch, latency bounds and throughput (tensor parallelism over --gpus).")
    _common(p)
    p.add_argument("--context", required=True, type=int, help="tokens per sequence (prompt + output)")
    p.add_argument("--batch", type=int, default=None, help="concurrent sequences (default: the largest that fits)")
    p.add_argument("--prompt", type=int, default=None, help="prompt tokens of the prefill (default: --context)")
    p.add_argument("--dtype", default="bf16", help="weights: fp32, fp16, bf16, fp8, int8, int4 (default bf16)")
    p.add_argument("--kv-dtype", default="bf16", help="KV cache: fp32, fp16, bf16, fp8, int8 (default bf16)")
    p.add_argument("--reserve-gb", type=float, default=0.0,
                   help="GB per GPU kept for activations and the runtime (default 0)")
    _systems_options(p)
    return p


def _gb(n: float) -> str:
    return f"{n / 1e9:,.1f} GB"


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
    cost = "" if run["cost"] is None else f", cost {run['cost']:,.0f}"
    return [
        ("layout", _layout_text(run["layout"], run["seq"])),
        ("memory (busiest GPU)", f"stage {mem['stage']}: {parts}"),
        ("", f"total {_gb(mem['total'])} of {_gb(cap)}: {fit}"),
        ("step", f"{run['model_flops_per_step']:.3g} model FLOPs; sent per GPU: {comm or 'nothing'}"),
        ("step time", f"{run['step_seconds']:,.2f} s ({run['time_source']}); model estimate "
                      f"{est['step']:,.2f} s = compute {est['compute']:,.2f} + bubble {est['bubble']:,.2f} "
                      f"+ exposed communication {est['exposed_communication']:,.2f}, MFU {est['mfu']:.1%}"),
        ("run", f"{run['steps']:,} steps, {run['days']:,.1f} days, {run['gpu_hours']:,.0f} GPU-hours{cost}, "
                f"{run['tokens_per_second']:,.0f} tokens/s, MFU {run['mfu']:.1%}"),
    ]


def _plan(argv: Sequence[str]) -> int:
    from .parallel import Layout  # noqa: F401 - imported for its validation messages
    from .planning import layout_for, search_training_runs, training_run

    args = _plan_parser().parse_args(argv)
    cfg = load(args.model)
    seq = args.seq if args.seq is not None else min(cfg.max_position or 8192, 8192)
    gbt = args.global_batch_tokens if args.global_batch_tokens is not None else 2**22
    kw = dict(mfu=args.mfu, efficiency=args.efficiency, price_per_gpu_hour=args.price_per_gpu_hour,
              precision=args.precision, dropout=not args.no_dropout)
    if any(getattr(args, f) is not None for f in _LAYOUT_FLAGS):
        degrees = {k: v for k, v in (("tp", args.tp), ("pp", args.pp), ("cp", args.cp), ("ep", args.ep),
                                    ("zero_stage", args.zero), ("microbatch_size", args.micro_batch),
                                    ("recompute", args.recompute)) if v is not None}
        degrees.setdefault("zero_stage", 1)
        degrees.setdefault("recompute", "selective")
        layout = layout_for(cfg, args.gpus, seq, gbt, **degrees)
        run = training_run(cfg, args.tokens, args.gpu, layout, seq, **kw)
        if args.json:
            print(json.dumps(run, indent=2))
        else:
            print(f"Training {cfg.name} ({run['model']['params']:,} parameters) on {args.tokens:,.0f} tokens, "
                  f"{run['cluster']['n_gpus']:,} x {run['cluster']['gpu']}")
            _print_rows(_plan_text(run))
        return 0 if run["fits"] else 1
    found = search_training_runs(cfg, args.tokens, args.gpu, args.gpus, seq, gbt, top=args.top, **kw)
    if args.json:
        print(json.dumps(found, indent=2))
        return 0 if found["best"] else 1
    print(f"Training {cfg.name} on {args.tokens:,.0f} tokens, {args.gpus:,} x {accelerator(args.gpu).name}: searched "
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


def _serve(argv: Sequence[str]) -> int:
    from .planning import serving_run

    args = _serve_parser().parse_args(argv)
    if args.weights:  # the format and the peak it runs at (chapter serving-systems)
        args.dtype, args.precision = _WEIGHTS[args.weights]
    cfg = load(args.model)
    if not math.isfinite(args.reserve_gb) or args.reserve_gb < 0:
        raise ValueError(f"--reserve-gb must be a number >= 0, got {args.reserve_gb}")
    run = serving_run(cfg, args.gpu, args.gpus, args.context, batch=args.batch, prompt=args.prompt,
                      dtype=args.dtype, kv_dtype=args.kv_dtype, reserve_bytes=round(args.reserve_gb * 1e9),
                      precision=args.precision)
    systems = _systems(cfg, args)
    if args.json:
        print(json.dumps(run | systems, indent=2))
        return 0 if run["fits"] else 1
    c = run["cluster"]
    print(f"Serving {cfg.name} ({run['model']['params']:,} parameters) on {c['n_gpus']} x {c['gpu']} "
          f"(tensor parallel {c['n_gpus']}), {run['context']:,}-token sequences, weights {run['dtype']}, "
          f"KV cache {run['kv_dtype']}")
    rows = [
        ("weights per GPU", _gb(run["weights_bytes_per_gpu"])),
        ("KV cache per sequence", f"{_gb(run['kv_bytes_per_sequence_per_gpu'])} per GPU"),
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
    _print_rows(rows + _systems_rows(systems))
    return 0 if run["fits"] else 1


# ---- serving many users (chapter serving-systems) ---------------------------------------------------

_WEIGHTS = {"bf16": ("bf16", "bf16_tensor"), "fp8": ("fp8", "fp8_tensor"), "int8": ("int8", "bf16_tensor"),
            "int4": ("int4", "bf16_tensor")}


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _speculative(text: str) -> tuple[float, int]:
    parts = text.split(",")
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(f"expected ALPHA,GAMMA (e.g. 0.8,4), got {text!r}")
    try:
        alpha, gamma = float(parts[0]), int(parts[1])
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected ALPHA,GAMMA (a number and an integer), got {text!r}") from None
    if not 0 <= alpha < 1:
        raise argparse.ArgumentTypeError(f"ALPHA (the acceptance probability) must be in [0, 1), got {parts[0]}")
    if gamma < 1:
        raise argparse.ArgumentTypeError(f"GAMMA (the draft length) must be an integer >= 1, got {parts[1]}")
    return alpha, gamma


def _systems_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("serving many users (chapter serving-systems)")
    g.add_argument("--prompt-len", type=_positive_int, default=None,
                   help="prompt tokens per request of the steady state (default: --prompt, else half of --context)")
    g.add_argument("--output-len", type=_positive_int, default=None,
                   help="output tokens per request (default: --context minus the prompt)")
    g.add_argument("--request-rate", type=_number, default=None,
                   help="requests per second: the steady state of continuous batching (TTFT, ITL, requests/s, "
                        "tokens/s, cost); beyond the replica's capacity it is an error")
    g.add_argument("--price-per-gpu-hour", dest="systems_price", type=_number, default=None,
                   help="price of one GPU-hour, for the cost per million output tokens")
    g.add_argument("--block-size", type=_positive_int, default=None,
                   help="tokens per block of a paged KV cache: blocks per sequence and the slots they waste")
    g.add_argument("--prefix-hit-rate", type=float, default=None,
                   help="share of each prompt found in a prefix cache, in [0, 1]: the prefill it saves")
    g.add_argument("--speculative", type=_speculative, default=None, metavar="ALPHA,GAMMA",
                   help="speculative decoding: acceptance probability ALPHA in [0, 1) and draft length GAMMA >= 1")
    g.add_argument("--weights", choices=tuple(_WEIGHTS), default=None,
                   help="weight format, with the peak tied to it: bf16; fp8 (W8A8, the FP8 peak); int8, int4 "
                        "(W8A16, W4A16: the 16-bit peak); sets --dtype and --precision")
    g.add_argument("--ep", type=_positive_int, default=None,
                   help="a mixture of experts served with data-parallel attention and its experts over EP GPUs "
                        "(DeepSeek's layout; --batch sequences per GPU)")
    g.add_argument("--frontier", action="store_true",
                   help="print the latency-throughput frontier (with --json: return it)")


def _systems(cfg: TransformerConfig, args: argparse.Namespace) -> dict[str, Any]:
    """The steady state, paging, prefix caching, speculation, expert parallelism and frontier that
    the options of :func:`_systems_options` ask for, computed with :mod:`llmmath.serving_systems`."""
    from . import serving_systems as sv

    wanted = (args.request_rate, args.block_size, args.prefix_hit_rate, args.speculative, args.ep)
    if not args.frontier and all(x is None for x in wanted):
        return {}
    if args.prefix_hit_rate is not None and not 0 <= args.prefix_hit_rate <= 1:
        raise ValueError(f"--prefix-hit-rate must be in [0, 1], got {args.prefix_hit_rate}")
    dtype, precision = args.dtype, args.precision
    prompt = args.prompt_len or args.prompt or max(1, args.context // 2)
    output = args.output_len or args.context - prompt
    if output < 1:
        raise ValueError(f"--output-len must be >= 1 (--context {args.context} leaves none after a {prompt}-token "
                         "prompt)")
    costs = sv.step_costs(cfg, args.gpu, tp=args.gpus, dtype=dtype, kv_dtype=args.kv_dtype, precision=precision)
    room = sv.kv_capacity_bytes(cfg, args.gpu, reserve_bytes=round(args.reserve_gb * 1e9), tp=args.gpus,
                                dtype=dtype, kv_dtype=args.kv_dtype)
    req = sv.request_costs(costs, prompt, output)
    out: dict[str, Any] = {"prompt": prompt, "output": output, "weights": dtype, "precision": precision,
                           "saturation_requests_per_second": sv.saturation_rate(req, kv_capacity_bytes=room)}
    price = args.systems_price
    if args.request_rate is not None:
        try:
            point = sv.load_steady_state(costs, prompt, output, args.request_rate, kv_capacity_bytes=room)
        except ValueError:
            raise ValueError(f"--request-rate {args.request_rate:g} is beyond the replica's capacity of "
                             f"{out['saturation_requests_per_second']:.4g} requests/s ({prompt}-token prompts, "
                             f"{output}-token outputs): no steady state, the queue grows without bound") from None
        per_gpu = point.output_tokens_per_second / args.gpus
        out["steady_state"] = {
            "requests_per_second": point.requests_per_second, "ttft_seconds": point.ttft,
            "itl_seconds": point.itl, "batch": point.batch,
            "output_tokens_per_second": point.output_tokens_per_second,
            "cost_per_million_output_tokens": None if price is None else sv.cost_per_million_tokens(per_gpu, price)}
    if args.block_size is not None:
        n = args.context
        out["paged"] = {"block_size": args.block_size, "blocks_per_sequence": sv.kv_blocks(n, args.block_size),
                        "wasted_slots_per_sequence": sv.paged_kv_waste([n], args.block_size),
                        "blocks_per_gpu": int(room // (costs.kv_token_bytes * args.block_size))}
    if args.prefix_hit_rate is not None:
        hit = min(round(args.prefix_hit_rate * prompt), prompt - 1)
        saved = sv.prefix_cache_savings(cfg, prompt, hit, args.kv_dtype)
        out["prefix"] = {"hit_tokens": hit, "prefill_flops_saved": saved["flops"],
                         "prefill_share_saved": saved["share"]}
    if args.speculative is not None:
        alpha, gamma = args.speculative
        b = args.batch or 1
        n = prompt + output // 2
        plain = sv.step_seconds(costs, b, b * n)
        verify = sv.step_seconds(costs, b, b * n, b * gamma, b * gamma * n, b * gamma)
        tokens = sv.speculative_tokens_per_step(alpha, gamma)
        out["speculative"] = {"alpha": alpha, "gamma": gamma, "batch": b, "tokens_per_step": tokens,
                              "seconds_per_output_token": verify / tokens, "plain_seconds_per_output_token": plain}
    if args.ep is not None:
        if not cfg.is_moe:
            raise ValueError(f"--ep needs a mixture-of-experts model; {cfg.name!r} is dense")
        if args.batch is None:
            raise ValueError("--ep needs --batch, the sequences each GPU decodes")
        n = prompt + output // 2
        step = sv.dp_ep_decode_step_seconds(cfg, args.batch, n, args.gpu, args.ep, dtype=dtype,
                                            kv_dtype=args.kv_dtype, precision=precision)
        out["expert_parallel"] = {"ep": args.ep, "batch_per_gpu": args.batch, "context": n,
                                  "seconds_per_output_token": step,
                                  "tokens_per_second_per_gpu": args.batch / step,
                                  "all_to_all_seconds_estimate": sv.ep_all_to_all_seconds(cfg, args.batch, args.ep,
                                                                                          args.gpu)}
    if args.frontier:
        points = sv.frontier(costs, prompt, output, room, points=12)
        for pt in points:
            if price is not None:
                pt["cost_per_million_output_tokens"] = sv.cost_per_million_tokens(pt["tokens_per_second_per_gpu"],
                                                                                  price)
        out["frontier"] = points
    return {"serving_systems": out}


def _systems_rows(systems: dict[str, Any]) -> list[tuple[str, str]]:
    if not systems:
        return []
    s = systems["serving_systems"]
    rows = [("requests", f"{s['prompt']:,}-token prompts, {s['output']:,}-token outputs; weights {s['weights']} "
                         f"at {s['precision']}; capacity <= {s['saturation_requests_per_second']:,.2f} requests/s "
                         "(bound)")]
    if "steady_state" in s:
        st = s["steady_state"]
        cost = ("" if st["cost_per_million_output_tokens"] is None
                else f", >= {st['cost_per_million_output_tokens']:,.3f} per million output tokens")
        rows += [("steady state", f"{st['requests_per_second']:,.2f} requests/s, "
                                  f"{st['output_tokens_per_second']:,.0f} output tokens/s{cost}, "
                                  f"{st['batch']:,.1f} sequences decoding"),
                 ("", f"TTFT >= {st['ttft_seconds'] * 1e3:,.1f} ms, ITL >= {st['itl_seconds'] * 1e3:,.2f} ms "
                      "(bounds)")]
    if "paged" in s:
        pg = s["paged"]
        rows.append(("paged KV cache", f"{pg['blocks_per_sequence']:,} blocks of {pg['block_size']} per sequence "
                                       f"({pg['wasted_slots_per_sequence']} slots unused); "
                                       f"{pg['blocks_per_gpu']:,} blocks per GPU"))
    if "prefix" in s:
        px = s["prefix"]
        rows.append(("prefix cache", f"{px['hit_tokens']:,} prompt tokens cached: {px['prefill_share_saved']:.1%} of "
                                     "the prefill FLOPs saved"))
    if "speculative" in s:
        sp = s["speculative"]
        rows.append(("speculative", f"{sp['tokens_per_step']:.2f} tokens per step (alpha {sp['alpha']}, gamma "
                                    f"{sp['gamma']}); per output token >= "
                                    f"{sp['seconds_per_output_token'] * 1e3:,.2f} ms at batch {sp['batch']} "
                                    f"(plain {sp['plain_seconds_per_output_token'] * 1e3:,.2f} ms; the draft's own "
                                    "cost not counted)"))
    if "expert_parallel" in s:
        ep = s["expert_parallel"]
        rows.append(("expert parallel", f"EP {ep['ep']} with data-parallel attention, {ep['batch_per_gpu']} sequences "
                                        f"per GPU: >= {ep['seconds_per_output_token'] * 1e3:,.2f} ms per token, <= "
                                        f"{ep['tokens_per_second_per_gpu']:,.0f} tokens/s per GPU; all-to-alls "
                                        f"~{ep['all_to_all_seconds_estimate'] * 1e3:,.1f} ms if not hidden"))
    if "frontier" in s:
        rows.append(("frontier", "batch: tokens/s per user, tokens/s per GPU (bounds)"))
        for pt in s["frontier"]:
            cost = ("" if "cost_per_million_output_tokens" not in pt
                    else f", {pt['cost_per_million_output_tokens']:,.3f} per million")
            rows.append(("", f"{pt['batch']:,.0f}: {pt['tokens_per_second_per_user']:,.1f}, "
                             f"{pt['tokens_per_second_per_gpu']:,.0f}{cost}"))
    return rows


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
