"""The live calculator of chapter :doc:`/chapters/calculator`: controls for the model, the training
run and the serving, and the numbers of the plan as they change.

Presentation only, no formula: every number comes from :func:`llmmath.training_run` (through
:func:`llmmath.layout_for`) and :func:`llmmath.serving_run`. Used by the notebooks only (``from
llmmath.live import calculator``), like ``display`` and ``plotting``; its names are not part of
``llmmath``'s top level and ``import llmmath`` does not import it (nor ipywidgets).

:func:`calculator` shows controls (ipywidgets) in the book's JupyterLite edition, where ipywidgets
and its JupyterLab extension are bundled, and, elsewhere (the static book, a test run of the
notebooks), the same numbers for its inputs as a table: a widget needs a live kernel and a page
that draws it. ``live=True`` asks for the controls anywhere (a local Jupyter with ipywidgets).
"""

from __future__ import annotations

import html
import json
import sys
from collections.abc import Mapping
from typing import Any

__all__ = ["calculator", "plan_rows", "widget"]

#: The inputs of the calculator and their defaults (the chapter passes its own).
DEFAULTS: Mapping[str, Any] = {
    "preset": "qwen3-30b-a3b", "config_json": "", "name": "",
    "tokens": 1e12, "seq": 4096, "global_batch_tokens": 2**22,
    "gpu": "H100", "n_gpus": 256, "tp": 1, "pp": 1, "ep": 8, "zero_stage": 1, "recompute": "none",
    "microbatch_size": 1, "schedule": "1f1b", "virtual_stages": 1,
    "precision": "bf16_tensor", "mfu": 0.4, "dropout": False,
    "serve_gpu": "H100", "serve_gpus": 2, "context": 32768, "batch": 0, "dtype": "bf16", "kv_dtype": "bf16",
}
PASTED = "(the pasted config.json)"  # the model control's entry for a pasted config
GB = 1e9


def _model(inputs: Mapping[str, Any]):
    import llmmath

    if inputs["preset"] and inputs["preset"] != PASTED:
        return llmmath.preset(inputs["preset"])
    try:
        data = json.loads(inputs["config_json"])
    except json.JSONDecodeError as err:
        raise ValueError(f"the pasted config.json is not JSON: {err}") from None
    if not isinstance(data, dict):
        raise ValueError("the pasted config.json must be a JSON object ({...})")
    return llmmath.from_hf_config(data, name=inputs["name"] or None)


def plan_rows(**inputs: Any) -> list[tuple[str, str, str]]:
    """The calculator's numbers for ``inputs`` (keys of :data:`DEFAULTS`; the others take the
    defaults): ``(key, label, value)`` rows, values formatted as the page shows them. A ``batch``
    of 0 serves the largest batch that fits; ``mfu`` None takes the step-time model's prediction
    (:func:`llmmath.step_time`: its bound, a lower bound on the step, is shown beside it, and the
    prediction's terms and leave-one-out error). Serving times are labelled a bound or a prediction
    (:func:`llmmath.serving_run`), with the bound's terms."""
    from llmmath.planning import layout_for, serving_run, training_run

    unknown = sorted(set(inputs) - set(DEFAULTS))
    if unknown:
        raise TypeError(f"unknown calculator inputs: {', '.join(unknown)} (known: {', '.join(DEFAULTS)})")
    x = {**DEFAULTS, **inputs}
    cfg = _model(x)
    lay = layout_for(cfg, x["n_gpus"], x["seq"], x["global_batch_tokens"],
                     **{k: x[k] for k in ("tp", "pp", "ep", "zero_stage", "recompute", "microbatch_size", "schedule",
                                          "virtual_stages")})
    run = training_run(cfg, x["tokens"], x["gpu"], lay, x["seq"], mfu=x["mfu"], precision=x["precision"],
                       dropout=x["dropout"])
    srv = serving_run(cfg, x["serve_gpu"], x["serve_gpus"], x["context"], batch=x["batch"] or None,
                      dtype=x["dtype"], kv_dtype=x["kv_dtype"])
    rows = [("params", "parameters", f"{run['model']['params']:,}"),
            ("active_params", "active per token", f"{run['model']['active_params']:,}"),
            ("layout", "layout", f"tp {lay.tp}, pp {lay.pp}, dp {lay.dp}, ep {lay.ep}"
                                 + (f", {lay.schedule} x{lay.virtual_stages}" if lay.pp > 1 else "")
                                 + f", ZeRO-{lay.zero_stage}, recompute {lay.recompute}; "
                                 f"{lay.microbatches} micro-batches of {lay.microbatch_size}"),
            ("gb_per_gpu", "memory of the busiest GPU (GB)",
             f"{run['memory']['total'] / GB:,.1f} of {run['cluster']['usable_memory_bytes'] / GB:,.1f} usable"
             + ("" if run["fits"] else ": does not fit")),
            ("bound_step_seconds", "step (s) at best, a lower bound", f"{run['bound_step_seconds']:,.3f}"),
            ("bound_mfu", "MFU at best, an upper bound", f"{run['bound_mfu']:.1%}"),
            ("predicted_step_seconds", "step (s) expected, the calibrated prediction",
             f"{run['predicted_step_seconds']:,.3f}"),
            ("predicted_mfu", "MFU expected", f"{run['predicted_mfu']:.1%}"),
            ("predicted_terms", "expected step's terms (s)",
             "compute {compute:,.3f} + bubble {bubble:,.3f} + exposed communication {exposed_communication:,.3f} "
             "+ optimizer {optimizer:,.3f}".format(**run["prediction"])),
            ("predicted_error", "expected step's error (leave-one-out, published runs)",
             f"median {run['predicted_error']['median_abs']:.0%}, 90% within {run['predicted_error']['p90_abs']:.0%}"),
            ("step_seconds", f"step (s), {run['time_source']}", f"{run['step_seconds']:,.3f}"),
            ("mfu", "MFU", f"{run['mfu']:.1%}"),
            ("days", f"days for {x['tokens']:.3g} tokens", f"{run['days']:,.2f}"),
            ("gpu_hours", "GPU-hours", f"{run['gpu_hours']:,.0f}")]
    rows += [("weights_per_gpu", "serving: weights per GPU (GB)", f"{srv['weights_bytes_per_gpu'] / GB:,.2f}"),
             ("max_batch", "largest batch that fits (sequences)", f"{srv['max_batch']:,}")]
    if srv["fits"]:
        step = srv["step"]
        rows += [("batch", "batch served", f"{srv['batch']:,}"),
                 ("ms_per_token", "time per output token (ms), bound", f"{srv['seconds_per_output_token'] * 1e3:,.2f}"),
                 ("bound_terms", "bound's terms (ms; overlapping: a kernel takes the longer of its reads and FLOPs)",
                  f"weights read {step['weights_read'] * 1e3:,.2f}, KV cache read {step['kv_read'] * 1e3:,.2f}, "
                  f"compute {(step['matmul_compute'] + step['attention_compute']) * 1e3:,.2f}, "
                  f"communication {step['communication'] * 1e3:,.2f}"),
                 ("predicted_ms_per_token", f"time per output token (ms), predicted ({srv['calibration']['name']})",
                  f"{srv['predicted_seconds_per_output_token'] * 1e3:,.2f}"),
                 ("tokens_per_second", "output tokens per second, bound", f"{srv['tokens_per_second']:,.0f}"),
                 ("predicted_tokens_per_second", "output tokens per second, predicted",
                  f"{srv['predicted_tokens_per_second']:,.0f}")]
    else:
        rows.append(("batch", "batch served", f"{srv['batch']:,} does not fit"))
    return rows


def _html(rows: list[tuple[str, str, str]], inputs: Mapping[str, Any]) -> str:
    """The numbers as an HTML table; its ``data-inputs`` (JSON) are the inputs they are for, and
    each value cell's ``data-llmmath`` its key (the browser test reads both)."""
    body = "".join(f"<tr><td>{html.escape(label)}</td><td style='text-align:right' data-llmmath='{key}'>"
                   f"{html.escape(value)}</td></tr>" for key, label, value in rows)
    return f"<table class='llmmath-live' data-inputs='{html.escape(json.dumps(dict(inputs)))}'>{body}</table>"


def _error_html(err: Exception) -> str:
    return f"<p class='llmmath-live-error' style='color:#b00'>{html.escape(str(err))}</p>"


def calculator(live: bool | None = None, **inputs: Any) -> None:
    """Show the live calculator for ``inputs`` (see :func:`plan_rows`).

    ``live`` None: controls in Pyodide (the JupyterLite edition), a table elsewhere; True: the
    controls (needs ipywidgets); False: the table (Markdown). The inputs as given must plan: a bad
    one raises here, at the call.
    """
    from IPython.display import Markdown, display

    from llmmath.display import markdown_table

    rows = plan_rows(**inputs)
    if sys.platform == "emscripten" if live is None else live:
        display(_widget({**DEFAULTS, **inputs}, rows))
    else:
        display(Markdown(markdown_table(["", "value"], [(label, value) for _, label, value in rows], "lr")))


def widget(**inputs: Any) -> Any:
    """The live calculator's controls and numbers for ``inputs`` (an ipywidgets ``VBox``, not
    displayed). A change of any control recomputes the numbers; an input that llmmath rejects
    shows its message in place of the numbers."""
    return _widget({**DEFAULTS, **inputs}, plan_rows(**inputs))


def _widget(x: dict[str, Any], rows: list[tuple[str, str, str]]) -> Any:
    import ipywidgets as w

    import llmmath

    wide = {"style": {"description_width": "11em"}, "layout": w.Layout(width="24em")}
    presets = [PASTED, *llmmath.preset_names()] if x["config_json"] else list(llmmath.preset_names())
    controls = {
        "preset": w.Dropdown(options=presets, value=x["preset"] or PASTED, description="model", **wide),
        "config_json": w.Textarea(value=x["config_json"], description="config.json",
                                  layout=w.Layout(width="40em", height="8em"), style=wide["style"]),
        "tokens": w.FloatText(value=x["tokens"], description="training tokens", **wide),
        "gpu": w.Dropdown(options=list(llmmath.GPUS), value=x["gpu"], description="accelerator", **wide),
        "n_gpus": w.IntText(value=x["n_gpus"], description="GPUs", **wide),
        "tp": w.IntText(value=x["tp"], description="tensor parallel", **wide),
        "pp": w.IntText(value=x["pp"], description="pipeline parallel", **wide),
        "ep": w.IntText(value=x["ep"], description="expert parallel", **wide),
        "precision": w.Dropdown(options=["bf16_tensor", "fp8_tensor", "fp16_tensor"], value=x["precision"],
                                description="precision (peak)", **wide),
        "serve_gpus": w.IntText(value=x["serve_gpus"], description="serving GPUs (tp)", **wide),
        "context": w.IntText(value=x["context"], description="serving context", **wide),
        "batch": w.IntText(value=x["batch"], description="batch (0: largest)", **wide),
        "serve_gpu": w.Dropdown(options=list(llmmath.GPUS), value=x["serve_gpu"], description="serving on",
                                **wide),
        "dtype": w.Dropdown(options=list(llmmath.DTYPES), value=x["dtype"], description="weights", **wide),
        "kv_dtype": w.Dropdown(options=list(llmmath.DTYPES), value=x["kv_dtype"], description="KV cache", **wide),
    }
    out = w.HTML(_html(rows, x))

    def update(_change: object = None) -> None:
        values = {**x, **{k: c.value for k, c in controls.items()}}
        try:
            out.value = _html(plan_rows(**values), values)
        except (ValueError, TypeError, KeyError) as err:  # llmmath's messages name the input
            out.value = _error_html(err)

    for control in controls.values():
        control.observe(update, "value")
    c = controls
    return w.VBox([
        w.HBox([c["preset"], c["tokens"]]), c["config_json"],
        w.HBox([c["gpu"], c["n_gpus"]]), w.HBox([c["tp"], c["pp"]]), w.HBox([c["ep"], c["precision"]]),
        w.HBox([c["serve_gpu"], c["serve_gpus"]]), w.HBox([c["context"], c["batch"]]),
        w.HBox([c["dtype"], c["kv_dtype"]]), out,
    ])
