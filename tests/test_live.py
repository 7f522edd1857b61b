"""The live calculator (llmmath/live.py): its numbers are llmmath's planning functions', for the
inputs as given and after a control changes; bad inputs show llmmath's message.

The same control is driven in the browser, in the JupyterLite edition (scripts/lite_test.py).
"""

from __future__ import annotations

import html
import json
import re
from importlib import resources

import pytest

import llmmath
from llmmath.live import PASTED, calculator, plan_rows
from llmmath.live import widget as live_widget
from llmmath.planning import layout_for, serving_run, training_run

GB = 1e9


def _values(rows):
    return {key: value for key, _, value in rows}


def _expected(cfg, n_gpus=256, ep=8, context=32768):
    """Days, GPU-hours and the serving numbers as llmmath's planning functions give them."""
    lay = layout_for(cfg, n_gpus, 4096, 2**22, tp=1, pp=1, ep=ep, zero_stage=1, recompute="none")
    run = training_run(cfg, 1e12, "H100", lay, 4096, mfu=0.4, dropout=False)
    srv = serving_run(cfg, "H100", 2, context)
    return {"days": f"{run['days']:,.2f}", "gpu_hours": f"{run['gpu_hours']:,.0f}",
            "max_batch": f"{srv['max_batch']:,}", "ms_per_token": f"{srv['seconds_per_output_token'] * 1e3:,.2f}",
            "params": f"{llmmath.param_count(cfg):,}", "dp": lay.dp}


def test_the_numbers_are_llmmaths():
    got, want = _values(plan_rows()), _expected(llmmath.preset("qwen3-30b-a3b"))
    for key in ("days", "gpu_hours", "max_batch", "ms_per_token", "params"):
        assert got[key] == want[key], key
    assert f"dp {want['dp']}," in got["layout"]


def test_both_modes_of_the_step_time_model_are_shown():
    """The bound and the prediction of llmmath.step_time, as training_run gives them, the bound
    the faster; with an assumed MFU the days follow it, without one the prediction."""
    cfg = llmmath.preset("qwen3-30b-a3b")
    lay = layout_for(cfg, 256, 4096, 2**22, tp=1, pp=1, ep=8, zero_stage=1, recompute="none")
    run = training_run(cfg, 1e12, "H100", lay, 4096, mfu=None, dropout=False)
    got = _values(plan_rows(mfu=None))
    assert got["bound_step_seconds"] == f"{run['bound_step_seconds']:,.3f}"
    assert got["predicted_step_seconds"] == f"{run['predicted_step_seconds']:,.3f}" == got["step_seconds"]
    assert got["bound_mfu"] == f"{run['bound_mfu']:.1%}" and got["predicted_mfu"] == got["mfu"]
    assert run["bound_step_seconds"] < run["predicted_step_seconds"]
    assert _values(plan_rows())["predicted_step_seconds"] == got["predicted_step_seconds"]  # mfu=0.4 too


def test_a_pasted_config_is_read_as_from_hf_config_reads_it():
    text = (resources.files("llmmath") / "hf_configs" / "qwen3-30b-a3b.json").read_text()
    got = _values(plan_rows(preset=PASTED, config_json=text, name="pasted"))
    assert got["params"] == f"{llmmath.param_count(llmmath.from_hf_config(json.loads(text))):,}"


def test_unknown_inputs_and_bad_values_are_named():
    with pytest.raises(TypeError, match="unknown calculator inputs: n_gpu"):
        plan_rows(n_gpu=8)
    with pytest.raises(ValueError, match="must divide n_gpus"):
        plan_rows(tp=3)
    with pytest.raises(ValueError, match="not JSON"):
        plan_rows(preset=PASTED, config_json="{not json")


def test_outside_the_browser_it_shows_a_table_and_in_it_the_controls(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *objs, **kw: shown.extend(objs))
    assert calculator() is None
    text = shown[0].data
    days = _expected(llmmath.preset("qwen3-30b-a3b"))["days"]
    assert re.search(r"\| days for 1e\+12 tokens \| +" + re.escape(days), text)
    pytest.importorskip("ipywidgets")
    monkeypatch.setattr("sys.platform", "emscripten")  # Pyodide's: the controls, displayed
    assert calculator() is None
    assert _cell(shown[1], "days") == days


def _cell(widget, key):
    """The value shown for ``key`` in the calculator's output (an HTML table)."""
    html = widget.children[-1].value
    match = re.search(rf"data-llmmath='{key}'>([^<]*)<", html)
    return match and match.group(1)


def _control(widget, description):
    def walk(w):
        yield w
        for child in getattr(w, "children", ()):
            yield from walk(child)
    return next(w for w in walk(widget) if getattr(w, "description", None) == description)


def test_a_control_changes_the_numbers_to_llmmaths():
    pytest.importorskip("ipywidgets")
    cfg = llmmath.preset("qwen3-30b-a3b")
    box = live_widget()
    assert _cell(box, "days") == _expected(cfg)["days"]
    _control(box, "GPUs").value = 512
    assert _cell(box, "days") == _expected(cfg, n_gpus=512)["days"] != _expected(cfg)["days"]
    _control(box, "serving context").value = 8192
    assert _cell(box, "max_batch") == _expected(cfg, n_gpus=512, context=8192)["max_batch"]
    # the table names the inputs it is for (the browser test recomputes them on the host)
    table = box.children[-1].value
    inputs = json.loads(html.unescape(re.search(r"data-inputs='([^']*)'", table).group(1)))
    assert inputs["n_gpus"] == 512 and inputs["context"] == 8192
    assert [v for _, _, v in plan_rows(**inputs)] == re.findall(r"data-llmmath='\w+'>([^<]*)<", table)


def test_a_rejected_input_shows_llmmaths_message_in_place_of_the_numbers():
    pytest.importorskip("ipywidgets")
    box = live_widget()
    _control(box, "tensor parallel").value = 3
    assert "must divide n_gpus" in box.children[-1].value and _cell(box, "days") is None
    _control(box, "tensor parallel").value = 1  # back to numbers
    assert _cell(box, "days") == _expected(llmmath.preset("qwen3-30b-a3b"))["days"]
