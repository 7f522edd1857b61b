"""Published measured training runs, and the few constants of the step-time model fitted to them.

``llmmath/data/measured_runs.json`` holds one row per published measurement, read at its source:
the model (a preset or its shape), the accelerator and its count, the exact layout (tensor,
pipeline, data, context and expert degrees, virtual stages, micro-batch and global batch, ZeRO
stage, recomputation), the sequence length, the arithmetic precision, and the throughput as the
source states it (tokens per second, TFLOP/s per GPU under the source's FLOP count, or MFU), with a
citation (a key of the book's ``references.bib`` and the table or page). :func:`measured_runs`
reads it; :func:`measured_step_seconds` turns each measurement into the seconds of one step.

The step-time model (:func:`llmmath.steptime.step_time`) has three kinds of constants in its
``predicted`` mode: one matmul efficiency per accelerator generation and precision, one
attention-kernel efficiency per generation and kernel (:data:`llmmath.steptime.ATTENTION_KERNELS`:
with a single kernel constant per generation the model is no better than the one-constant baseline
below, because the eager, FlashAttention-2 and cuDNN kernels of the published runs reach very
different shares of the peak), and one bandwidth efficiency per link class (scale-up,
scale-out). A link efficiency is what nccl-tests calls the *bus* bandwidth over the link's nominal
per-direction bandwidth: llmmath's collective time is the bytes each GPU sends
(:func:`llmmath.parallel.collective_bytes`, ``2 (n-1)/n M`` for a ring all-reduce) over that
bandwidth, which is nccl-tests' definition of bus bandwidth (its *algorithm* bandwidth is ``M``
over the time, ``n / (2(n-1))`` of it for an all-reduce). :func:`fit` chooses them by least
squares on ``log(predicted / measured)`` over the rows; :func:`leave_one_out` refits without each
row in turn and predicts it, which is the error a reader should expect on a run not in the table;
:func:`baseline_leave_one_out` does the same for the simplest alternative, ``model FLOPs / (n x
peak x u)`` with one global ``u``. ``llmmath/data/calibration.json`` stores the fitted constants,
both leave-one-out errors and every row's bound and prediction (``python -m llmmath.calibration``
writes it; ``tests/test_calibration.py`` checks that it is the fit of the table).
Derived in chapter :doc:`/chapters/capstone`.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from .config import TransformerConfig
from .hardware import Accelerator, accelerator

__all__ = [
    "MeasuredRun",
    "RUN_CLASSES",
    "measured_runs",
    "run_model",
    "run_layout",
    "measured_step_seconds",
    "kernel_key",
    "attention_key",
    "stored_calibration",
    "calibrated_efficiencies",
    "fit",
    "leave_one_out",
    "baseline_leave_one_out",
    "validation_table",
    "plot_predicted_vs_measured",
]

#: The row classes errors are reported by (a row may belong to several).
RUN_CLASSES: tuple[str, ...] = ("dense", "moe", "fp8", "long_context")

#: Accelerator generation of each llmmath accelerator.
_GENERATION = {"V100": "volta", "A100-40GB": "ampere", "A100": "ampere", "H100": "hopper", "H100-PCIe": "hopper",
               "H800": "hopper", "H200": "hopper", "B200": "blackwell", "MI300X": "cdna3", "TPU-v5e": "tpu-v5e",
               "TPU-v5p": "tpu-v5p"}
#: The precision class of a peak: 16-bit tensor math, or FP8.
_PRECISION_CLASS = {"fp16_tensor": "16-bit", "bf16_tensor": "16-bit", "fp8_tensor": "fp8"}


@dataclass(frozen=True)
class MeasuredRun:
    """One published measurement (see the module docstring); ``layout`` holds the
    :class:`~llmmath.Layout` fields, ``measured`` the quantity as the source states it:
    ``{"kind": ..., "value": ...}`` with kind ``tokens_per_second`` (whole job),
    ``tokens_per_second_per_gpu``, ``tflops_per_gpu`` (with ``"flops"``: ``megatron``, the source's
    Eq. 3 count with recomputation, or ``model``, :func:`llmmath.training_flops` with every
    query-key pair, no recomputation); ``attention_kernel`` and ``overlap`` what the run's
    framework runs (:func:`llmmath.step_time`'s arguments); ``fit`` False for a row kept for the
    bound but left out of the calibration (``notes`` says why)."""

    id: str
    source: str
    where: str
    model: dict[str, Any]
    gpu: str
    n_gpus: int
    layout: dict[str, Any]
    seq: int
    precision: str
    measured: dict[str, Any]
    classes: tuple[str, ...]
    state_precision: str = "mixed"
    flash_attention: bool = True
    attention_kernel: str = "cudnn"
    overlap: tuple[str, ...] = ("cp", "pp", "dp")
    fit: bool = True
    notes: str = ""


@lru_cache(maxsize=1)
def measured_runs() -> tuple[MeasuredRun, ...]:
    """Every row of ``llmmath/data/measured_runs.json``, validated (the layout's GPU count equals
    ``n_gpus``, the classes are known). Derived in chapter :doc:`/chapters/capstone`."""
    text = resources.files("llmmath").joinpath("data/measured_runs.json").read_text(encoding="utf-8")
    rows = []
    for raw in json.loads(text)["runs"]:
        row = MeasuredRun(**{**raw, "classes": tuple(raw["classes"]),
                             "overlap": tuple(raw.get("overlap", ("cp", "pp", "dp")))})
        unknown = set(row.classes) - set(RUN_CLASSES)
        if unknown:
            raise ValueError(f"run {row.id!r}: unknown classes {sorted(unknown)}")
        lay = run_layout(row)
        if lay.n_gpus != row.n_gpus:
            raise ValueError(f"run {row.id!r}: the layout has {lay.n_gpus} GPUs, the source {row.n_gpus}")
        rows.append(row)
    if len({r.id for r in rows}) != len(rows):
        raise ValueError("measured_runs.json: duplicate ids")
    return tuple(rows)


def run_model(run: MeasuredRun) -> TransformerConfig:
    """The :class:`~llmmath.TransformerConfig` of a row: a preset, or a shape given field by field."""
    from .presets import preset

    if "preset" in run.model:
        return preset(run.model["preset"])
    return TransformerConfig(**run.model["config"])


def run_layout(run: MeasuredRun) -> Any:
    """The :class:`~llmmath.Layout` of a row (``stage_layers`` as a tuple)."""
    from .parallel import Layout

    fields = dict(run.layout)
    if "stage_layers" in fields:
        fields["stage_layers"] = tuple(fields["stage_layers"])
    return Layout(**fields)


def measured_step_seconds(run: MeasuredRun) -> float:
    """Seconds of one optimizer step implied by the row's measurement: ``tokens per step /
    tokens per second``, or ``FLOPs per step / (n x TFLOP/s per GPU)`` under the source's own FLOP
    count. Derived in chapter :doc:`/chapters/capstone`."""
    from .flops import megatron_training_flops, training_flops

    lay = run_layout(run)
    tokens = lay.global_batch * run.seq
    kind, value = run.measured["kind"], float(run.measured["value"])
    if kind == "tokens_per_second":
        return tokens / value
    if kind == "tokens_per_second_per_gpu":
        return tokens / (value * run.n_gpus)
    if kind == "tflops_per_gpu":
        cfg = run_model(run)
        count = run.measured["flops"]
        if count == "megatron":
            flops = megatron_training_flops(cfg, lay.global_batch, run.seq)
        elif count == "model":
            flops = training_flops(cfg, lay.global_batch, run.seq)
        else:
            raise ValueError(f"run {run.id!r}: unknown FLOP count {count!r}")
        return flops / (run.n_gpus * value * 1e12)
    raise ValueError(f"run {run.id!r}: unknown measurement kind {kind!r}")


def kernel_key(gpu: str | Accelerator, precision: str) -> str:
    """The calibration key of the kernels of ``gpu`` at ``precision``: ``"<generation>/<class>"``
    (``hopper/16-bit``, ``hopper/fp8``, ``ampere/16-bit``, ...)."""
    from .hardware import GPUS

    spec = accelerator(gpu)
    name = next((k for k, v in GPUS.items() if v is spec), spec.name)
    return f"{_GENERATION.get(name, name)}/{_PRECISION_CLASS.get(precision, precision)}"


@lru_cache(maxsize=1)
def stored_calibration() -> dict[str, Any]:
    """The stored fit (``llmmath/data/calibration.json``): ``kernel`` (efficiency by
    :func:`kernel_key`), ``link`` (``scale_up``, ``scale_out``), ``rows``, the leave-one-out errors
    of the model and of the one-constant baseline by class, the error band, and every row's
    measured, bound and predicted step. Derived in chapter :doc:`/chapters/capstone`."""
    text = resources.files("llmmath").joinpath("data/calibration.json").read_text(encoding="utf-8")
    return json.loads(text)


def attention_key(gpu: str | Accelerator, kernel: str) -> str:
    """The calibration key of an attention kernel (:data:`llmmath.steptime.ATTENTION_KERNELS`) on
    ``gpu``: ``"<generation>/attention-<kernel>"``."""
    return kernel_key(gpu, "bf16_tensor").split("/")[0] + f"/attention-{kernel}"


def calibrated_efficiencies(gpu: str | Accelerator, precision: str, attention_kernel: str = "cudnn") -> dict[str, Any]:
    """The ``predicted`` mode's constants for ``gpu`` at ``precision`` with ``attention_kernel``:
    ``matmul`` (the layers' weight matmuls at ``precision``), ``matmul_16bit`` (the output layer's,
    which stays at 16 bits under FP8), ``attention``, ``scale_up``, ``scale_out``, and
    ``calibrated`` (False when a key has no measured row: then the 16-bit efficiency of the same
    generation stands in for FP8, another fused kernel of the generation for a fused kernel, or else
    the mean of the calibrated keys of the kind; ``source`` says which). Derived in chapter
    :doc:`/chapters/capstone`."""
    cal = stored_calibration()
    kernels = cal["kernel"]
    notes = []

    def pick(key: str, fallbacks: list[str], kind: str) -> float:
        if key in kernels:
            return kernels[key]
        for other in fallbacks:
            if other in kernels:
                notes.append(f"{key} not calibrated: {other} used")
                return kernels[other]
        same = [v for k, v in kernels.items() if kind in k]
        notes.append(f"{key} not calibrated: the mean of the calibrated {kind} keys used")
        return statistics.fmean(same) if same else 0.5

    gen = kernel_key(gpu, "bf16_tensor").split("/")[0]
    k16 = pick(f"{gen}/16-bit", [], "/16-bit")
    k = pick(kernel_key(gpu, precision), [f"{gen}/16-bit"], "/16-bit") if precision in _PRECISION_CLASS else k16
    fused = [f"{gen}/attention-{x}" for x in ("cudnn", "flash2") if x != attention_kernel]
    a = pick(attention_key(gpu, attention_kernel), fused if attention_kernel != "eager" else [],
             "/attention-" + ("eager" if attention_kernel == "eager" else ""))
    n = cal["fit_rows"]
    source = f"fitted to {n} published runs" + ("; " + "; ".join(dict.fromkeys(notes)) if notes else "")
    return {"matmul": k, "matmul_16bit": k16, "attention": a, "scale_up": cal["link"]["scale_up"],
            "scale_out": cal["link"]["scale_out"], "calibrated": not notes, "source": source}


# ---------------------------------------------------------------------------------------------
# the fit
# ---------------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _prepared() -> tuple[tuple[Any, ...], ...]:
    """Per row: (id, classes, measured seconds, ingredients, (matmul key, 16-bit matmul key,
    attention key), model FLOPs, n x peak, overlaps the run performs, in the fit)."""
    from .steptime import _ingredients

    out = []
    for run in measured_runs():
        cfg, lay = run_model(run), run_layout(run)
        spec = accelerator(run.gpu)
        ing = _ingredients(cfg, lay, run.seq, spec, run.precision, run.state_precision, 2, False,
                           run.flash_attention, "adam")
        keys = (kernel_key(spec, run.precision), kernel_key(spec, "bf16_tensor"),
                attention_key(spec, run.attention_kernel))
        out.append((run.id, run.classes, measured_step_seconds(run), ing, keys, ing.model_flops,
                    ing.n_gpus * ing.peak, run.overlap, run.fit))
    return tuple(out)


def _predict(row: tuple[Any, ...], kernels: dict[str, float], up: float, out: float, mode: str = "predicted") -> float:
    from .steptime import _assemble, _Eff

    if mode == "predicted":
        eff = _Eff(*(kernels[k] for k in row[4]), up, out)
    else:
        eff = _Eff(1.0, 1.0, 1.0, 1.0, 1.0)
    return _assemble(row[3], eff, mode, row[7])["step"]


def _keys(rows: list[tuple[Any, ...]]) -> list[str]:
    return sorted({k for r in rows for k in r[4]})


def _fit_rows() -> list[tuple[Any, ...]]:
    return [r for r in _prepared() if r[8]]


def fit(rows: list[tuple[Any, ...]] | None = None, iterations: int = 40,
        start: dict[str, Any] | None = None) -> dict[str, Any]:
    """Least-squares fit of the kernel efficiencies (one per :func:`kernel_key` and
    :func:`attention_key` present) and the two link efficiencies: minimise ``sum (log predicted -
    log measured)^2`` by Gauss-Newton on the logarithms of the constants (each kept in (0, 1]).
    ``rows`` defaults to every measured run marked ``fit``; ``start``: a previous fit to start from.
    Returns ``{"kernel": {...}, "link": {"scale_up", "scale_out"}, "rms_log_error"}``.
    Derived in chapter :doc:`/chapters/capstone`."""
    import numpy as np

    rows = list(_fit_rows() if rows is None else rows)
    keys = _keys(rows)
    names = keys + ["scale_up", "scale_out"]
    first = [0.5] * len(keys) + [0.7, 0.7]
    if start is not None:
        first = [start["kernel"].get(k, 0.5) for k in keys] + [start["link"]["scale_up"], start["link"]["scale_out"]]
    theta = np.log(np.array(first))

    def residuals(th: Any) -> Any:
        e = np.exp(np.minimum(th, 0.0))
        kernels = dict(zip(keys, e[: len(keys)], strict=True))
        return np.array([math.log(_predict(r, kernels, e[-2], e[-1]) / r[2]) for r in rows])

    res = residuals(theta)
    for _ in range(iterations):
        jac = np.empty((len(rows), len(names)))
        for j in range(len(names)):
            step = np.zeros(len(names))
            step[j] = 1e-4
            jac[:, j] = (residuals(theta + step) - res) / 1e-4
        delta, *_ = np.linalg.lstsq(jac, -res, rcond=None)
        lam = 1.0
        while True:  # damp a step that does not lower the sum of squares
            new = np.minimum(theta + lam * delta, 0.0)
            new_res = residuals(new)
            if new_res @ new_res <= res @ res or lam < 1e-3:
                break
            lam /= 2
        done = res @ res - new_res @ new_res < 1e-9 * max(1.0, res @ res)
        if new_res @ new_res <= res @ res:
            theta, res = new, new_res
        if done:
            break
    e = np.exp(theta)
    return {"kernel": {k: float(x) for k, x in zip(keys, e[: len(keys)], strict=True)},
            "link": {"scale_up": float(e[-2]), "scale_out": float(e[-1])},
            "rms_log_error": float(math.sqrt(res @ res / len(rows)))}


def leave_one_out(whole: dict[str, Any] | None = None) -> list[float]:
    """Relative error ``predicted / measured - 1`` of each row in the fit, predicted by the fit of
    all the other rows (a row whose kernel key has no other row is predicted with the mean of the
    other keys). Derived in chapter :doc:`/chapters/capstone`."""
    rows = _fit_rows()
    whole = fit(rows) if whole is None else whole
    errors = []
    for i, row in enumerate(rows):
        f = fit(rows[:i] + rows[i + 1:], start=whole)
        kernels = dict(f["kernel"])
        mean = statistics.fmean(kernels.values())
        for k in row[4]:
            kernels.setdefault(k, mean)
        errors.append(_predict(row, kernels, f["link"]["scale_up"], f["link"]["scale_out"]) / row[2] - 1)
    return errors


def baseline_leave_one_out() -> list[float]:
    """The same for ``model FLOPs / (n x peak x u)`` with one ``u`` fitted (in logarithms) to the
    other rows. Derived in chapter :doc:`/chapters/capstone`."""
    rows = _fit_rows()
    logs = [math.log(r[5] / (r[6] * r[2])) for r in rows]  # log of each row's MFU
    errors = []
    for i, row in enumerate(rows):
        u = math.exp(statistics.fmean(logs[:i] + logs[i + 1:]))
        errors.append(row[5] / (row[6] * u) / row[2] - 1)
    return errors


def _summary(errors: list[float], classes: list[tuple[str, ...]]) -> dict[str, Any]:
    out: dict[str, Any] = {"all": statistics.median(abs(e) for e in errors), "rows": len(errors)}
    for c in RUN_CLASSES:
        sel = [abs(e) for e, cl in zip(errors, classes, strict=True) if c in cl]
        out[c] = statistics.median(sel) if sel else None
        out[f"{c}_rows"] = len(sel)
    return out


def validation_table() -> dict[str, Any]:
    """Fit the rows marked ``fit``, leave each one out, and return what
    ``llmmath/data/calibration.json`` stores: the constants, the leave-one-out median absolute
    errors of the model and of the baseline (all fitted rows and by class), the band (median and
    90th percentile of the model's absolute errors) and per row (every row) the measured, bound and
    predicted steps and, for the fitted rows, both leave-one-out errors. Derived in chapter
    :doc:`/chapters/capstone`."""
    fitted = _fit_rows()
    f = fit(fitted)
    loo = dict(zip((r[0] for r in fitted), leave_one_out(f), strict=True))
    base = dict(zip((r[0] for r in fitted), baseline_leave_one_out(), strict=True))
    per_row = []
    for r in _prepared():
        bound = _predict(r, {}, 1.0, 1.0, mode="bound")
        per_row.append({"id": r[0], "classes": list(r[1]), "fit": r[8], "measured": r[2], "bound": bound,
                        "predicted": _predict(r, f["kernel"], f["link"]["scale_up"], f["link"]["scale_out"]),
                        "loo_error": loo.get(r[0]), "baseline_loo_error": base.get(r[0]),
                        "bound_margin": r[2] / bound - 1})
    errors = [loo[r[0]] for r in fitted]
    classes = [r[1] for r in fitted]
    absolute = sorted(abs(e) for e in errors)
    return {
        "rows": len(per_row),
        "fit_rows": len(fitted),
        "kernel": f["kernel"],
        "link": f["link"],
        "rms_log_error": f["rms_log_error"],
        "loo": {"model": _summary(errors, classes), "baseline": _summary([base[r[0]] for r in fitted], classes)},
        "band": {"median_abs": statistics.median(absolute),
                 "p90_abs": absolute[min(len(absolute) - 1, math.ceil(0.9 * len(absolute)) - 1)]},
        "bound_margin_min": min(r["bound_margin"] for r in per_row),
        "per_row": per_row,
    }


def plot_predicted_vs_measured(ax: Any = None) -> Any:
    """Scatter of each measured run's step against the leave-one-out prediction (filled) and the
    bound (hollow), log-log, with the diagonal: the figure of chapter :doc:`/chapters/capstone`.
    Reads the stored table (:func:`stored_calibration`); returns the matplotlib ``Axes``."""
    import matplotlib.pyplot as plt

    cal = stored_calibration()
    if ax is None:
        _, ax = plt.subplots(figsize=(5.2, 4.6))
    colors = {"dense": "C0", "moe": "C3", "fp8": "C2", "long_context": "C1"}
    for cls in ("dense", "long_context", "fp8", "moe"):
        pts = [r for r in cal["per_row"] if (cls in r["classes"]) and
               (cls != "dense" or len(r["classes"]) == 1)]
        if not pts:
            continue
        meas = [r["measured"] for r in pts]
        fitted = [r for r in pts if r["loo_error"] is not None]
        ax.scatter([r["measured"] for r in fitted], [r["measured"] * (1 + r["loo_error"]) for r in fitted], s=18,
                   color=colors[cls], label=f"{cls.replace('_', ' ')} (prediction)")
        ax.scatter(meas, [r["bound"] for r in pts], s=18, facecolors="none", edgecolors=colors[cls], linewidths=0.8)
    lo = min(min(r["bound"], r["measured"]) for r in cal["per_row"]) / 1.5
    hi = max(r["measured"] for r in cal["per_row"]) * 1.5
    ax.plot([lo, hi], [lo, hi], color="0.3", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.scatter([], [], s=18, facecolors="none", edgecolors="0.3", linewidths=0.8, label="bound (every row)")
    ax.set_xlabel("measured step (s)")
    ax.set_ylabel("model step (s)")
    ax.legend(fontsize=7, loc="upper left", title="filled: leave-one-out prediction", title_fontsize=7)
    return ax


def _write() -> None:  # pragma: no cover - run by hand: python -m llmmath.calibration
    from pathlib import Path

    table = validation_table()
    path = Path(__file__).with_name("data") / "calibration.json"
    path.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
    m, b = table["loo"]["model"], table["loo"]["baseline"]
    print(f"{table['rows']} rows; kernels {table['kernel']}; links {table['link']}")
    for c in ("all",) + RUN_CLASSES:
        print(f"{c:>13}: model {m[c]}, baseline {b[c]}")


if __name__ == "__main__":  # pragma: no cover
    _write()
