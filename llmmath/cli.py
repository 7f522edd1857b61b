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
from .inference import ALLREDUCE_ALGORITHMS
from .memory import RECOMPUTE_MODES
from .parallel import SCHEDULES
from .presets import PRESETS, preset
from .units import DTYPES

_LAYOUT_FLAGS = ("tp", "pp", "cp", "ep", "zero", "micro_batch", "recompute", "virtual_stages", "schedule",
                 "stage_layers")


def _config_path(spec: str) -> Path | None:
    """The ``config.json`` file ``spec`` names (a file, or a directory holding one), or None for a
    preset name."""
    path = Path(spec)
    if not (spec.endswith(".json") or path.exists()):
        return None
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ValueError(f"{spec} is a directory without a config.json")
        path = path / "config.json"
    if not path.is_file():
        raise ValueError(f"no such file: {spec}")
    return path


def load(spec: str) -> TransformerConfig:
    """A preset name, the path of a ``config.json`` file, or a directory holding one (a
    downloaded checkpoint). The model is named after the directory (``.../Llama-3.1-8B/config.json``
    or ``.../Llama-3.1-8B`` -> ``Llama-3.1-8B``), or after the file when it is not called
    ``config.json`` (``llama.json`` -> ``llama``)."""
    path = _config_path(spec)
    if path is not None:
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


def _stage_layers(text: str) -> tuple[int, ...]:
    """``--stage-layers``: the layers of each model chunk in pipeline order, comma-separated, ``k*n``
    for ``n`` chunks of ``k`` layers (as Python repeats a list): ``0,1*126,0``."""
    out: list[int] = []
    for part in text.replace(" ", "").split(","):
        value, _, times = part.partition("*")
        try:
            k, n = int(value), int(times) if times else 1
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected layers per chunk such as 0,1*126,0; got {text!r}") from None
        if k < 0 or n < 1:
            raise argparse.ArgumentTypeError(f"expected layers >= 0 repeated >= 1 times, got {part!r} in {text!r}")
        out += [k] * n
    return tuple(out)


def _check_gpu(args: argparse.Namespace, *, default: bool = True) -> Accelerator:
    """``--gpu`` as an accelerator, and ``--precision`` one of the precisions it has; with
    ``default``, an omitted ``--precision`` is what a 16-bit model computes in there
    (:func:`llmmath.default_precision`; ``serve`` takes it from the weights' format instead)."""
    try:
        spec = accelerator(args.gpu)
    except ValueError:
        raise ValueError(f"--gpu must be one of {', '.join(GPUS)} (any case); got {args.gpu!r}") from None
    if args.precision is None:
        if default:
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


def _common(parser: argparse.ArgumentParser, precision: str = "the accelerator's 16-bit tensor precision, "
            "bf16_tensor, or fp16_tensor on a V100") -> None:
    parser.add_argument("model", help="a preset name, the path of a config.json or a directory holding one")
    parser.add_argument("--gpu", required=True, help=f"accelerator: {', '.join(GPUS)} (any case)")
    parser.add_argument("--gpus", required=True, type=_integer(), help="number of accelerators")
    parser.add_argument("--precision", default=None, help=f"peak FLOP/s used (default: {precision})")
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
    p.add_argument("--virtual-stages", type=_integer(), default=None,
                   help="model chunks per GPU (interleaved 1F1B when > 1; a layout flag)")
    p.add_argument("--schedule", default=None, choices=SCHEDULES, help="pipeline schedule: "
                   f"{', '.join(SCHEDULES)} (PyTorch's zero-bubble schedules; default 1f1b, interleaved with "
                   "--virtual-stages; a layout flag)")
    p.add_argument("--stage-layers", type=_stage_layers, default=None,
                   help="layers of each model chunk, pipeline stage by stage (pp x virtual stages entries, "
                   "summing to the layers; k*n repeats k n times): 0,1*126,0 is Llama 3 405B's split on 16 x 8 "
                   "chunks (default: as even as possible; with more chunks than layers the embedding and the "
                   "loss take one each; a layout flag)")
    p.add_argument("--mfu", type=_real(0, 1, open_low=True), default=None, help="assumed model FLOPs utilisation "
                   "(causal attention pairs, no recomputation); overrides both the bound and the prediction for "
                   "days and cost")
    p.add_argument("--efficiency", type=_real(0, 1, open_low=True), default=None,
                   help="fraction of peak the kernels reach in the prediction (default: the calibration fitted "
                   "to published runs)")
    p.add_argument("--price-per-gpu-hour", type=_real(0), default=None, help="price of one GPU-hour, for the cost")
    p.add_argument("--no-dropout", action="store_true",
                   help="the model trains without dropout (Llama, DeepSeek): no dropout masks in the activations")
    p.add_argument("--top", type=_integer(), default=5, help="layouts to show when searching (default 5)")
    return p


def _serve_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m llmmath serve", description="Plan serving: weights and KV cache per GPU, the "
                "largest batch, the time to first token, the time per output token and the throughput: lower "
                "bounds on time (upper bounds on throughput) and calibrated predictions, each labelled. "
                "Tensor parallelism over --gpus inside one node; beyond one node, pipeline stages across nodes.")
    _common(p, precision="the peak the weights' format runs at: fp8_tensor for fp8 where the GPU has it, "
            "else the 16-bit tensor precision, fp16_tensor on a V100")
    p.add_argument("--context", required=True, type=_integer(2),
                   help="tokens per request: prompt + output, at most the model's positions")
    p.add_argument("--batch", type=_integer(), default=None, help="concurrent sequences (default: the largest "
                   "that fits)")
    p.add_argument("--prompt", type=_integer(), default=None, help="prompt tokens per request, less than "
                   "--context (default: --context - --output, or half of --context)")
    p.add_argument("--output", type=_integer(), default=None, help="generated tokens per request, less than "
                   "--context (default: --context - --prompt)")
    p.add_argument("--dtype", default=None, choices=_WEIGHT_DTYPES, help="weights: W8A8 for fp8 (the FP8 peak "
                   "where the GPU has it), W8A16/W4A16 for int8/int4 (the 16-bit peak); default: the "
                   "checkpoint's quantization_config (DeepSeek-V3: FP8 blocks; GPTQ/AWQ: int4 with scales), else "
                   "bf16 (fp16 with --precision fp16_tensor or on a V100, which has no BF16); no fp8 on a V100")
    p.add_argument("--kv-dtype", default=None, choices=_KV_DTYPES, help=f"KV cache: {', '.join(_KV_DTYPES)} "
                   "(default bf16, or fp16 as --dtype's default; no fp8 on a V100)")
    p.add_argument("--reserve-gb", type=_real(0), default=None,
                   help="GB per GPU kept for activations and the runtime (default: what vLLM's default "
                        "gpu_memory_utilization 0.9 leaves, 10%% of the memory the driver reports)")
    p.add_argument("--allreduce", default="best", choices=("best",) + ALLREDUCE_ALGORITHMS,
                   help="tensor-parallel all-reduce (default: the fastest the GPUs offer)")
    p.add_argument("--price-per-gpu-hour", type=_real(0), default=None,
                   help="price of one GPU-hour, for the cost per million output tokens")
    _systems_options(p)
    return p


def _checkpoint_format(spec: str) -> Any:
    """The weight format a config.json (a path, or a preset copied from one) declares, or None."""
    from .inference import weight_format_from_hf

    path = _config_path(spec)
    if path is not None:
        data = json.loads(path.read_text(encoding="utf-8"))  # valid: load() has read it
    else:
        from importlib import resources

        name = resources.files("llmmath").joinpath("hf_configs", f"{spec}.json")
        if spec not in PRESETS or not name.is_file():
            return None
        data = json.loads(name.read_text(encoding="utf-8"))
    text = data.get("text_config") if isinstance(data.get("text_config"), dict) else {}
    if "quantization_config" not in data and "quantization_config" not in text:
        return None
    return weight_format_from_hf(data if "quantization_config" in data else
                                 {**text, "torch_dtype": data.get("torch_dtype")})


def _weight_format(args: argparse.Namespace, spec: Accelerator, half: str) -> Any:
    """The weights' :class:`~llmmath.WeightFormat`: ``--dtype``, else the checkpoint's
    ``quantization_config``, else ``half`` (16 bits: fp16 where there is no BF16); refused where
    ``spec`` has no kernels for it (FP8 on a V100) or, without ``--precision``, no peak for its
    products (BF16 on a V100)."""
    from .inference import matmul_precision, weight_format

    if args.dtype is not None:
        fmt, flag = weight_format(args.dtype), "--dtype"
    else:
        checkpoint = _checkpoint_format(args.model)
        fmt = checkpoint or weight_format(half)
        flag = "--dtype" if checkpoint is None else "--dtype (default: the checkpoint's quantization_config)"
    check_storage_dtype(spec, flag, fmt.dtype)
    if args.precision is None:
        try:
            matmul_precision(fmt, spec)
        except ValueError:
            raise ValueError(f"{flag} {fmt.dtype}: the {spec.name} has no {fmt.dtype.upper()} tensor cores; use "
                             "--dtype fp16 or pass --precision") from None
    return fmt


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
    elif lay["schedule"] not in ("1f1b",) and lay["pp"] > 1:
        extra.append(f"schedule {lay['schedule']}" + (f" x{lay['virtual_stages']}" if lay["virtual_stages"] > 1
                                                      else ""))
    return (f"tp {lay['tp']} x pp {lay['pp']} x dp {lay['dp']} x cp {lay['cp']} (ep {lay['ep']}), "
            + ", ".join(extra) + f"; micro-batch {lay['microbatch_size']} x {lay['microbatches']}, "
            f"global batch {lay['global_batch']:,} x {seq:,} tokens")


def _plan_text(run: dict[str, Any]) -> list[tuple[str, str]]:
    mem, cap = run["memory"], run["cluster"]["memory_bytes"]
    parts = ", ".join(f"{k.replace('_', ' ')} {_gb(v)}" for k, v in mem.items() if k not in ("total", "stage") and v)
    fit = (f"fits ({_gb(run['margin_bytes'])} to spare)" if run["fits"]
           else f"does NOT fit: {_gb(-run['margin_bytes'])} over")
    comm = ", ".join(f"{k} {_gb(v)}" for k, v in run["communication_bytes_per_step"].items() if k != "total" and v)
    est, err = run["prediction"], run["predicted_error"]
    cost = "" if run["cost"] is None else f", cost {_count(run['cost'])}"
    hfu = f", HFU {est['hfu']:.1%}" if est["hfu"] > est["mfu"] * 1.001 else ""
    return [
        ("layout", _layout_text(run["layout"], run["seq"])),
        ("memory (busiest GPU)", f"stage {mem['stage']}: {parts}"),
        ("", f"total {_gb(mem['total'])} of {_gb(run['cluster']['usable_memory_bytes'])} usable "
             f"({_gb(cap)} less a {_gb(run['cluster']['reserve_bytes'])} reserve): {fit}"),
        ("step", f"{run['model_flops_per_step']:.3g} model FLOPs ({run['mfu_convention']}); "
                 f"sent per GPU: {comm or 'nothing'}"),
        ("step time, at best", f"{run['bound_step_seconds']:,.3g} s, MFU <= {run['bound_mfu']:.1%} (a lower bound: "
                               "kernels at peak, links at nominal bandwidth, every overlap taken)"),
        ("step time, expected", f"{run['predicted_step_seconds']:,.3g} s, MFU {run['predicted_mfu']:.1%}{hfu} "
                                f"(typically within {err['median_abs']:.0%}, 90% of {err['runs']} published runs "
                                f"within {err['p90_abs']:.0%}) = compute {est['compute']:,.3g} + bubble "
                                f"{est['bubble']:,.3g} + exposed communication {est['exposed_communication']:,.3g} "
                                f"+ optimizer {est['optimizer']:,.3g}"),
        ("run", f"{_count(run['steps'])} steps, {_count(run['days'], 1)} days, {_count(run['gpu_hours'])} "
                f"GPU-hours{cost}, {run['tokens_per_second']:,.0f} tokens/s, MFU {run['mfu']:.1%} "
                f"({run['time_source']})"),
    ]


def _what_works(cfg: TransformerConfig, args: argparse.Namespace, seq: int, gbt: float) -> dict[str, Any]:
    """When a plan does not fit: the fewest GPUs on which a layout fits (:func:`llmmath.fewest_training_gpus`,
    from ``--gpus`` up) as JSON-ready data and the lines that say it."""
    from .planning import fewest_training_gpus

    spec = accelerator(args.gpu)
    found = fewest_training_gpus(cfg, args.gpu, seq, gbt, start=args.gpus, dropout=not args.no_dropout)
    lines = [f"the training state alone ({_gb(found['state_bytes'])}: weights, gradients, master weights, Adam's "
             f"moments) needs at least {found['lower_bound']:,} GPUs of {_gb(found['usable_memory_bytes'])} usable"]
    lay = found["layout"]
    data = {**found, "layout": None if lay is None else {k: getattr(lay, k) for k in (
        "tp", "pp", "dp", "ep", "zero_stage", "recompute", "virtual_stages", "stage_layers")}}
    if lay is None:
        lines.append(f"no layout fits on up to {2**20:,} x {spec.name}")
        return {"data": data, "lines": lines}
    where = "these GPUs" if found["n_gpus"] == args.gpus else f"{found['n_gpus']:,} x {spec.name}"
    flags = f"--gpus {found['n_gpus']} --tp {lay.tp} --pp {lay.pp}" + (f" --ep {lay.ep}" if lay.ep > 1 else "")
    flags += f" --zero {lay.zero_stage} --recompute {lay.recompute}"
    lines.append(f"a layout fits on {where} ({_gb(found['memory'])} on the busiest GPU): tp {lay.tp} x pp {lay.pp} x "
                 f"dp {lay.dp} (ep {lay.ep}), ZeRO-{lay.zero_stage}, recompute {lay.recompute}: plan it with {flags}, "
                 "or leave out the layout flags to search that cluster")
    if cfg.is_moe:
        lines.append("a mixture of experts holds all its experts but computes with few: expert parallelism (--ep) "
                     "spreads the experts over the data-parallel GPUs and pipeline stages (--pp) split the layers, "
                     f"both across nodes; tensor parallelism beyond the {spec.domain_size} GPUs of one "
                     "scale-up domain sends its all-reduces over the network")
    return {"data": data, "lines": lines}


def _plan(argv: Sequence[str]) -> int:
    from .parallel import check_layout
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
                                    ("recompute", args.recompute), ("virtual_stages", args.virtual_stages),
                                    ("schedule", args.schedule), ("stage_layers", args.stage_layers))
                   if v is not None}
        degrees.setdefault("zero_stage", 1)
        degrees.setdefault("recompute", "selective")
        try:
            layout = layout_for(cfg, args.gpus, seq, gbt, **degrees)
            check_layout(cfg, layout, seq)
        except ValueError as err:  # name the flags as typed
            text = str(err)
            for name, flag in (("pp * virtual_stages", "--pp * --virtual-stages"),
                               ("virtual_stages or pp", "--virtual-stages or --pp"),
                               ("stage_layers", "--stage-layers")):
                text = text.replace(name, flag)
            raise ValueError(text) from None
        _check_one_step(args.tokens, layout.global_batch, seq)
        run = training_run(cfg, args.tokens, args.gpu, layout, seq, **kw)
        works = None if run["fits"] else _what_works(cfg, args, seq, gbt)
        if args.json:
            print(json.dumps(run if works is None else {**run, "what_works": works["data"]}, indent=2))
        else:
            print(f"Training {cfg.name} ({run['model']['params']:,} parameters) on {_count(args.tokens)} tokens, "
                  f"{run['cluster']['n_gpus']:,} x {run['cluster']['gpu']}")
            _print_rows(_plan_text(run))
            if works is not None:
                _print_rows([("what works", line) for line in works["lines"][:1]]
                            + [("", line) for line in works["lines"][1:]])
        return 0 if run["fits"] else 1
    found = search_training_runs(cfg, args.tokens, args.gpu, args.gpus, seq, gbt, top=args.top, **kw)
    works = None if found["best"] else _what_works(cfg, args, seq, gbt)
    if args.json:
        print(json.dumps(found if works is None else {**found, "what_works": works["data"]}, indent=2))
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
                  f"{_gb(-close['margin_bytes'])} more than the {_gb(close['cluster']['usable_memory_bytes'])} "
                  f"usable of the accelerator's {_gb(close['cluster']['memory_bytes'])}")
            _print_rows(_plan_text(close))
        _print_rows([("what works", line) for line in works["lines"][:1]] + [("", line) for line in works["lines"][1:]])
        return 1
    for i, run in enumerate(found["best"], 1):
        est = run["prediction"]
        why = (f"expected step {est['step']:,.3g} s (at best {run['bound_step_seconds']:,.3g} s): bubble "
               f"{est['bubble'] / est['step']:.0%}, exposed communication "
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


def _serve_rows(cfg: TransformerConfig, run: dict[str, Any], args: argparse.Namespace) -> list[tuple[str, str]]:
    c = run["cluster"]
    moe = "seconds_per_output_token_most_experts" in run
    rows = [
        ("weights per GPU", f"{_gb3(run['weights_bytes_per_gpu'])} ({run['dtype']}; products at {c['precision']})"),
        ("KV cache", f"{run['kv_bytes_per_token_per_gpu']:,.0f} bytes per token per GPU, "
                     f"{_gb3(run['kv_bytes_per_sequence_per_gpu'])} per {run['context']:,}-token sequence"
                     + _broadcast_note(cfg, run)),
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


def _broadcast_note(cfg: TransformerConfig, run: dict[str, Any]) -> str:
    """Falcon's new decoder architecture: the grouped cache (vLLM) and transformers' broadcast one."""
    if not cfg.kv_broadcast:
        return ""
    t = run["cluster"]["tp"]
    kv, a = max(cfg.n_kv_heads // t, 1), cfg.n_heads // t
    return (f", grouped: {kv} KV head(s) per GPU, as vLLM caches it; transformers' Falcon caches K/V broadcast "
            f"to all {a} heads: {_gb3(run['kv_bytes_per_sequence_per_gpu_transformers'])} per GPU ({a // kv}x)")


def _serve(argv: Sequence[str]) -> int:
    from .planning import serving_run

    args = _serve_parser().parse_args(argv)
    spec = _check_gpu(args, default=False)
    half = "fp16" if "fp16_tensor" in (args.precision, default_precision(spec)) else "bf16"
    args.kv_dtype = check_storage_dtype(spec, "--kv-dtype", args.kv_dtype or half)
    cfg = load(args.model)
    _check_positions("--context", args.context, cfg)
    for flag, value in (("--prompt", args.prompt), ("--output", args.output)):
        if value is not None and value >= args.context:
            raise ValueError(f"{flag} {value:,} must be less than --context {args.context:,} (the context holds "
                             "the prompt and at least one output token)")
    if args.prompt is not None and args.output is not None and args.prompt + args.output != args.context:
        raise ValueError(f"--prompt {args.prompt:,} + --output {args.output:,} must equal --context "
                         f"{args.context:,}")
    dtype = _weight_format(args, spec, half)
    run = serving_run(cfg, args.gpu, args.gpus, args.context, batch=args.batch, prompt=args.prompt,
                      output=args.output, dtype=dtype, kv_dtype=args.kv_dtype,
                      reserve_bytes=None if args.reserve_gb is None else round(args.reserve_gb * 1e9),
                      precision=args.precision, allreduce=args.allreduce,
                      price_per_gpu_hour=args.price_per_gpu_hour)
    systems = _systems(cfg, args, spec, dtype)
    if args.json:
        print(json.dumps(run | systems, indent=2))
        return 0 if run["fits"] else 1
    c = run["cluster"]
    layout = f"tensor parallel {c['tp']}" + (f" x {c['pp']} pipeline stages" if c["pp"] > 1 else "")
    print(f"Serving {cfg.name} ({run['model']['params']:,} parameters) on {c['n_gpus']} x {c['gpu']} "
          f"({layout}), weights {run['dtype']}, KV cache {run['kv_dtype']}. 'bound': no engine can do better "
          "(kernels at peak); 'predicted': at the calibrated efficiencies")
    _print_rows(_serve_rows(cfg, run, args) + _systems_rows(systems))
    return 0 if run["fits"] else 1


# ---- serving many users (chapter serving-systems) ---------------------------------------------------

#: ``--weights``: the formats issue 28 names (``--dtype`` takes every storage format).
_WEIGHTS = ("bf16", "fp8", "int8", "int4")


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
    g.add_argument("--prompt-len", dest="prompt", type=_integer(), default=None, help="the same as --prompt")
    g.add_argument("--output-len", dest="output", type=_integer(), default=None, help="the same as --output")
    g.add_argument("--weights", dest="dtype", choices=_WEIGHTS, default=None,
                   help="the same as --dtype (bf16; fp8: W8A8 at the FP8 peak; int8, int4: W8A16, W4A16 at the "
                        "16-bit peak)")
    g.add_argument("--request-rate", type=_real(0, open_low=True), default=None,
                   help="requests per second: the steady state of continuous batching (TTFT, ITL, requests/s, "
                        "tokens/s, cost at --price-per-gpu-hour); beyond the replica's capacity it is an error")
    g.add_argument("--block-size", type=_integer(), default=None,
                   help="tokens per block of a paged KV cache: blocks per sequence and the slots they waste")
    g.add_argument("--prefix-hit-rate", type=_real(0, 1), default=None,
                   help="share of each prompt found in a prefix cache, in [0, 1]: the prefill it saves")
    g.add_argument("--speculative", type=_speculative, default=None, metavar="ALPHA,GAMMA",
                   help="speculative decoding: acceptance probability ALPHA in [0, 1) and draft length GAMMA >= 1")
    g.add_argument("--ep", type=_integer(), default=None,
                   help="a mixture of experts served with data-parallel attention and its experts over EP GPUs "
                        "(DeepSeek's layout; --batch sequences per GPU)")
    g.add_argument("--frontier", action="store_true",
                   help="print the latency-throughput frontier (with --json: return it)")


def _systems(cfg: TransformerConfig, args: argparse.Namespace, spec: Accelerator, dtype: Any) -> dict[str, Any]:
    """The steady state, paging, prefix caching, speculation, expert parallelism and frontier that
    the options of :func:`_systems_options` ask for, computed with :mod:`llmmath.serving_systems`
    for one replica of ``--gpus`` tensor-parallel accelerators (weights ``dtype``, the resolved
    :class:`~llmmath.WeightFormat`, at the peak the format runs at)."""
    from . import serving_systems as sv
    from .inference import matmul_precision

    wanted = (args.request_rate, args.block_size, args.prefix_hit_rate, args.speculative, args.ep)
    if not args.frontier and all(x is None for x in wanted):
        return {}
    precision = args.precision or matmul_precision(dtype, spec)
    output = args.output or (args.context - args.prompt if args.prompt else args.context - args.context // 2)
    prompt = args.prompt or args.context - output
    reserve = None if args.reserve_gb is None else round(args.reserve_gb * 1e9)
    costs = sv.step_costs(cfg, spec, tp=args.gpus, dtype=dtype, kv_dtype=args.kv_dtype, precision=precision)
    room = sv.kv_capacity_bytes(cfg, spec, reserve_bytes=reserve, tp=args.gpus, dtype=dtype, kv_dtype=args.kv_dtype)
    req = sv.request_costs(costs, prompt, output)
    out: dict[str, Any] = {"prompt": prompt, "output": output, "weights": getattr(dtype, "name", str(dtype)),
                           "precision": precision,
                           "saturation_requests_per_second": sv.saturation_rate(req, kv_capacity_bytes=room)}
    price = args.price_per_gpu_hour
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
        step = sv.dp_ep_decode_step_seconds(cfg, args.batch, n, spec, args.ep, dtype=dtype,
                                            kv_dtype=args.kv_dtype, precision=precision)
        out["expert_parallel"] = {"ep": args.ep, "batch_per_gpu": args.batch, "context": n,
                                  "seconds_per_output_token": step,
                                  "tokens_per_second_per_gpu": args.batch / step,
                                  "all_to_all_seconds_estimate": sv.ep_all_to_all_seconds(cfg, args.batch, args.ep,
                                                                                          spec)}
    if args.frontier:
        points = sv.frontier(cfg, spec, prompt, output, tp=args.gpus, dtype=dtype, kv_dtype=args.kv_dtype,
                             precision=precision, reserve_bytes=reserve, points=12)
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
    except BrokenPipeError:  # the reader of a pipe stopped early: __main__ ends quietly
        raise
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
    except BrokenPipeError:  # the reader of a pipe stopped early: __main__ ends quietly
        raise
    except (ValueError, TypeError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    _print_rows(rows)
    return 0
