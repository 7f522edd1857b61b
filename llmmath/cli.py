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
from .inference import ALLREDUCE_ALGORITHMS
from .presets import PRESETS, preset
from .units import DTYPES

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
    if cfg.causal and not cfg.is_encoder_decoder:
        rows.append(("KV cache / token (bf16)", f"{llmmath.kv_bytes(cfg, 1, 1):,} bytes"))
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
        "kv_bytes_per_token_bf16": (llmmath.kv_bytes(cfg, 1, 1) if cfg.causal and not cfg.is_encoder_decoder
                                    else None),
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
                "largest batch, the time to first token, the time per output token and the throughput: lower "
                "bounds on time (upper bounds on throughput) and calibrated predictions, each labelled. "
                "Tensor parallelism over --gpus inside one node; beyond one node, pipeline stages across nodes.")
    _common(p)
    p.set_defaults(precision=None)
    p.add_argument("--context", required=True, type=int, help="tokens per request: prompt + output")
    p.add_argument("--batch", type=int, default=None, help="concurrent sequences (default: the largest that fits)")
    p.add_argument("--prompt", type=int, default=None, help="prompt tokens per request (default: --context - "
                   "--output, or half of --context)")
    p.add_argument("--output", type=int, default=None, help="generated tokens per request (default: --context - "
                   "--prompt)")
    p.add_argument("--dtype", default=None, choices=DTYPES, help="weights: W8A8 for fp8 (the FP8 peak where the "
                   "GPU has it), W8A16/W4A16 for int8/int4 (the 16-bit peak); default: the checkpoint's "
                   "quantization_config (DeepSeek-V3: FP8 blocks; GPTQ/AWQ: int4 with scales), else bf16")
    p.add_argument("--kv-dtype", default="bf16", help="KV cache: fp32, fp16, bf16, fp8, int8 (default bf16)")
    p.add_argument("--reserve-gb", type=float, default=None,
                   help="GB per GPU kept for activations and the runtime (default: what vLLM's default "
                        "gpu_memory_utilization 0.9 leaves, 10%% of the memory the driver reports)")
    p.add_argument("--allreduce", default="best", choices=("best",) + ALLREDUCE_ALGORITHMS,
                   help="tensor-parallel all-reduce (default: the fastest the GPUs offer)")
    p.add_argument("--price-per-gpu-hour", type=float, default=None,
                   help="price of one GPU-hour, for the cost per million output tokens")
    return p


def _checkpoint_format(spec: str) -> Any:
    """The weight format a config.json (a path, or a preset copied from one) declares, or None."""
    from .inference import weight_format_from_hf

    path = Path(spec)
    if spec.endswith(".json") or path.exists():
        data = json.loads(path.read_text(encoding="utf-8"))
    else:
        from importlib import resources

        name = resources.files("llmmath").joinpath("hf_configs", f"{spec}.json")
        if spec not in PRESETS or not name.is_file():
            return None
        data = json.loads(name.read_text(encoding="utf-8"))
    if "quantization_config" not in data and "quantization_config" not in data.get("text_config", {}):
        return None
    return weight_format_from_hf(data if "quantization_config" in data else
                                 {**data["text_config"], "torch_dtype": data.get("torch_dtype")})


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


def _sig3(x: float) -> str:
    """``x`` with three significant figures, trailing zeros kept (0.336, 23.0, 141, 1,234)."""
    if x >= 100 or x == 0:
        return f"{x:,.0f}"
    return f"{x:.{2 - math.floor(math.log10(abs(x)))}f}"


def _gb3(n: float) -> str:
    """Bytes as GB with three significant figures (0.336 GB, 17.6 GB, 141 GB)."""
    return f"{_sig3(n / 1e9)} GB"


def _duration(seconds: float) -> str:
    """Seconds from one second up, milliseconds below, three significant figures."""
    return f"{_sig3(seconds)} s" if seconds >= 1 else f"{_sig3(seconds * 1e3)} ms"


def _breakdown(t: dict[str, Any], memory_key: str) -> str:
    parts = [f"weights read {_duration(t['weights_read'])}",
             f"KV {'read' if memory_key == 'kv_read' else 'written'} {_duration(t[memory_key])}",
             f"compute {_duration(t['matmul_compute'] + t['attention_compute'])} (weight products "
             f"{_duration(t['matmul_compute'])}, attention {_duration(t['attention_compute'])})"]
    if t["allreduce"] != "none":
        parts.append(f"communication {_duration(t['communication'])} ({t['allreduce']} all-reduce)")
    return ", ".join(parts)


def _serve_rows(run: dict[str, Any], args: argparse.Namespace) -> list[tuple[str, str]]:
    c = run["cluster"]
    moe = "seconds_per_output_token_most_experts" in run
    rows = [
        ("weights per GPU", f"{_gb3(run['weights_bytes_per_gpu'])} ({run['dtype']}; products at {c['precision']})"),
        ("KV cache", f"{run['kv_bytes_per_token_per_gpu']:,.0f} bytes per token per GPU, "
                     f"{_gb3(run['kv_bytes_per_sequence_per_gpu'])} per {run['context']:,}-token sequence"),
        ("memory", f"{_gb3(c['memory_bytes'])} per GPU ({c['memory_source']}"
                   + (f"; data sheet {_gb3(c['memory_bytes_data_sheet'])}"
                      if c["memory_bytes"] != c["memory_bytes_data_sheet"] else "")
                   + f"), reserve {_gb3(run['reserve_bytes'])} ({run['reserve_source']}; --reserve-gb)"),
        ("largest batch", f"{run['max_batch']:,} sequences of {run['context']:,} tokens"),
    ]
    if not run["fits"]:
        if run["memory_margin_bytes"] < 0:
            need = run["gpus_needed"]
            hint = ""
            if need is not None:
                domain = accelerator(args.gpu).domain_size
                tp, pp = (need, 1) if need <= domain else (domain, need // domain)
                hint = (f"; {need} GPUs hold them: --gpus {need} (tensor parallel {tp}"
                        + (f" x {pp} pipeline stages, one per node)" if pp > 1 else ")"))
            narrow = run["dtype"].startswith(("fp8", "int"))
            rows.append(("weights", f"do NOT fit: {_gb3(-run['memory_margin_bytes'])} over per GPU (with the "
                                    f"reserve){hint}" + ("" if narrow else ", or quantize (--dtype fp8)")))
        else:
            rows.append(("batch", f"{run['batch']:,} does NOT fit: {-run['batch_margin']:,} sequences too many"
                         if run["batch"] else "not even one sequence fits beside the weights"))
        return rows
    b, p, o = run["batch"], run["prompt"], run["output"]
    step, pstep = run["step"], run["predicted_step"]
    steady, psteady = run["steady"], run["predicted_steady"]
    rows += [
        (f"at batch {b:,}", f"memory {_gb3(run['memory_bytes_per_gpu'])} per GPU; requests of {p:,} prompt + "
                             f"{o:,} output tokens"),
        ("time to first token", f"bound >= {_duration(run['ttft_seconds'])}, predicted "
                                f"{_duration(run['predicted_ttft_seconds'])} (one {p:,}-token prompt, idle server)"),
        ("prefill of the batch", f"bound >= {_duration(run['prefill_seconds'])}, predicted "
                                 f"{_duration(run['predicted_prefill_seconds'])} ({b:,} prompts at once)"),
        ("  bound, per term", _breakdown(run["prefill"], "kv_write")),
        ("per output token", f"bound >= {_duration(run['seconds_per_output_token'])}, predicted "
                             f"{_duration(run['predicted_seconds_per_output_token'])} "
                             f"(decode step at {run['context'] - 1:,} tokens held)"),
        ("  bound, per term", _breakdown(step, "kv_read")
         + (" (the whole model over its tensor-parallel group; the stages split it)" if c["pp"] > 1 else "")),
        ("  predicted, per term", _breakdown(pstep, "kv_read") + " (in series)"),
    ]
    if moe:
        rows.append(("  experts", f"bound with k experts per layer; if the batch touches every expert it can: "
                                  f">= {_duration(run['seconds_per_output_token_most_experts'])}"))
    rows += [
        ("throughput (decode)", f"bound <= {run['tokens_per_second']:,.0f} tokens/s, predicted "
                                f"{run['predicted_tokens_per_second']:,.0f}"),
        ("steady state", f"bound <= {steady['output_tokens_per_second']:,.0f} output tokens/s, "
                         f"{steady['requests_per_second']:,.3g} requests/s; predicted "
                         f"{psteady['output_tokens_per_second']:,.0f} tokens/s, "
                         f"{psteady['requests_per_second']:,.3g} requests/s (prefill included)"),
    ]
    if steady["cost_per_million_output_tokens"] is not None:
        rows.append(("cost", f"bound >= {steady['cost_per_million_output_tokens']:,.3g}, predicted "
                             f"{psteady['cost_per_million_output_tokens']:,.3g} per million output tokens "
                             f"at {args.price_per_gpu_hour:g} per GPU-hour"))
    cal = run["calibration"]
    rows.append(("prediction", f"kernels at {cal['compute_efficiency']:.0%} of peak FLOP/s and "
                               f"{cal['memory_efficiency']:.0%} of bandwidth ({cal['name']}; error {cal['error']})"))
    if c["pp"] > 1:
        rows.append(("pipeline", f"{c['pp']} stages of {c['tp']} GPUs: the stages' work spread evenly, a token "
                                 "reading every stage's weights in turn; hand-offs between nodes not timed"))
    return rows


def _serve(argv: Sequence[str]) -> int:
    from .inference import weight_format
    from .planning import serving_run

    args = _serve_parser().parse_args(argv)
    cfg = load(args.model)
    if args.reserve_gb is not None and (not math.isfinite(args.reserve_gb) or args.reserve_gb < 0):
        raise ValueError(f"--reserve-gb must be a number >= 0, got {args.reserve_gb}")
    if args.price_per_gpu_hour is not None and (not math.isfinite(args.price_per_gpu_hour)
                                                or args.price_per_gpu_hour < 0):
        raise ValueError(f"--price-per-gpu-hour must be a number >= 0, got {args.price_per_gpu_hour}")
    dtype = weight_format(args.dtype) if args.dtype else (_checkpoint_format(args.model) or weight_format("bf16"))
    run = serving_run(cfg, args.gpu, args.gpus, args.context, batch=args.batch, prompt=args.prompt,
                      output=args.output, dtype=dtype, kv_dtype=args.kv_dtype,
                      reserve_bytes=None if args.reserve_gb is None else round(args.reserve_gb * 1e9),
                      precision=args.precision, allreduce=args.allreduce,
                      price_per_gpu_hour=args.price_per_gpu_hour)
    if args.json:
        print(json.dumps(run, indent=2))
        return 0 if run["fits"] else 1
    c = run["cluster"]
    layout = f"tensor parallel {c['tp']}" + (f" x {c['pp']} pipeline stages" if c["pp"] > 1 else "")
    print(f"Serving {cfg.name} ({run['model']['params']:,} parameters) on {c['n_gpus']} x {c['gpu']} "
          f"({layout}), weights {run['dtype']}, KV cache {run['kv_dtype']}. 'bound': no engine can do better "
          "(kernels at peak); 'predicted': at the calibrated efficiencies")
    _print_rows(_serve_rows(run, args))
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
    parser = argparse.ArgumentParser(
        prog="python -m llmmath", description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="commands (each takes --help):\n  " + _plan_parser().format_usage().replace("usage: ", "")
        + "  " + _serve_parser().format_usage().replace("usage: ", ""))
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
