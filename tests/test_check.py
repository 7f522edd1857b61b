"""The reader's answer checker, llmmath.check.

Expected values here come from published numbers and hand derivations (the seeds' 16 s h^2, CLRS's
15125 scalar multiplications, the Catalan number C_5), never from llmmath.check itself.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import nbformat
import pytest

from llmmath.check import EXERCISES, check, describe, exercise_ids, how_to_check

ROOT = Path(__file__).resolve().parent.parent

# Correct answers to the matmul-cost exercises, from independent sources.
H175, S = 12288, 2048  # GPT-3 175B hidden size (Brown et al. 2020, Table 2.1), sequence length
H65 = 8192  # LLaMA-65B hidden size (Touvron et al. 2023, Table 2)
M, N, P = 4096, 11008, 11008


def _first_b(peak: float, bandwidth: float, beta: float, n: int = 8192, p: int = 28672) -> int:
    """First batch b at which b x n times n x p is compute-bound, from data-sheet figures typed here
    (dense peak FLOP/s, HBM bytes/s), not from llmmath."""
    b = 1
    while 2 * b * n * p / ((b * n + n * p + b * p) * beta) < peak / bandwidth:
        b += 1
    return b


def _zero_acc(a, b):  # the exercise's counting multiply, written independently
    m, n, p = len(a), len(b), len(b[0])
    out = [[sum(a[i][k] * b[k][j] for k in range(n)) for j in range(p)] for i in range(m)]
    return out, 2 * m * n * p


CORRECT = {
    "matmul-cost-ex-vecmat": {"matvec_exact": M * (2 * N - 1), "matvec_rel_error": 1 / (2 * N - 1),
                              "outer_exact": M * P, "outer_rel_error": 1.0},
    "matmul-cost-ex-mlp": 16 * S * H175**2,  # seeds 000/002: 16 b s h^2 per layer's MLP
    "matmul-cost-ex-count": {"zero_acc_matmul": _zero_acc, "naive_saving": 3 * 4},
    "matmul-cost-ex-chain": {"lora_right": 4 * 4096 * 16 * 8, "lora_left": 2 * 4096**2 * (16 + 8),
                             "lora_ratio": 4096 * 24 / (2 * 16 * 8)},
    "matmul-cost-ex-dp": {"dp_best": 2 * 15125, "dp_left": 2 * (30 * 35 * 15 + 30 * 15 * 5 + 30 * 5 * 10
                                                                 + 30 * 10 * 20 + 30 * 20 * 25),
                          "dp_count": 42},
    "matmul-cost-ex-attention": {"crossover_s": 2 * H65, "crossover_s_over_h": 2},
    # H100 SXM data sheet: 1,979 TFLOP/s BF16 and 3,958 FP8 with sparsity (dense: half), 3.35 TB/s;
    # AMD's MI300X table: 1,307.4 TFLOP/s BF16 dense, 5.3 TB/s
    "matmul-cost-ex-roofline": {"intensity_b64": 2 * 64 * 8192 * 28672
                                / ((64 * 8192 + 8192 * 28672 + 64 * 28672) * 2),
                                "batch_h100": _first_b(1978.9e12 / 2, 3.35e12, 2),
                                "batch_mi300x": _first_b(1307.4e12, 5.3e12, 2),
                                "batch_h100_fp8": _first_b(3957.8e12 / 2, 3.35e12, 1)},
}


@pytest.mark.parametrize("label", sorted(CORRECT))
def test_correct_answers_pass(label):
    feedback = check(label, CORRECT[label])
    assert feedback.correct, feedback.message
    assert bool(feedback) and "all correct" in str(feedback)


def test_every_matmul_exercise_is_covered():
    assert set(exercise_ids("matmul-cost")) == set(CORRECT)


def _numbers(answer):
    return answer if isinstance(answer, dict) else {None: answer}


def _expected_texts(value) -> set[str]:
    texts = {str(value), repr(value), f"{value:,}" if isinstance(value, int) else f"{value:.6g}"}
    if isinstance(value, float):
        texts |= {f"{value:.3g}", f"{value:.4e}"}
    return {t for t in texts if len(t) > 2}


@pytest.mark.parametrize("label", sorted(CORRECT))
def test_wrong_answers_fail_without_revealing_the_answer(label):
    ex = EXERCISES[label]
    for name, value in _numbers(CORRECT[label]).items():
        if callable(value):
            continue
        part = name or ex.parts[0].name
        wrong = value * 2 + 1
        feedback = check(label, wrong, part=part)
        assert not feedback.correct
        msg = feedback.message
        assert ex.section in msg and "Hint" in msg
        assert ("exact integer" in msg) or ("relative tolerance" in msg)
        for text in _expected_texts(value):
            assert text not in msg, f"{label}: the message reveals the expected value {text}"


def test_tolerance_is_applied():
    base = CORRECT["matmul-cost-ex-chain"]
    assert check("matmul-cost-ex-chain", base["lora_ratio"] * (1 + 1e-8), part="lora_ratio").correct
    # the prompt asks for 3 significant figures: 0.3% off passes, 1% off does not
    assert check("matmul-cost-ex-chain", base["lora_ratio"] * (1 + 3e-3), part="lora_ratio").correct
    assert not check("matmul-cost-ex-chain", base["lora_ratio"] * (1 + 1e-2), part="lora_ratio").correct
    # an exact part refuses a non-integer, even a close one
    assert not check("matmul-cost-ex-mlp", CORRECT["matmul-cost-ex-mlp"] + 0.5).correct
    assert check("matmul-cost-ex-mlp", float(CORRECT["matmul-cost-ex-mlp"])).correct


def test_partial_answers_are_graded_per_part():
    answer = dict(CORRECT["matmul-cost-ex-dp"])
    answer["dp_left"] = 1
    del answer["dp_count"]
    feedback = check("matmul-cost-ex-dp", answer)
    assert not feedback.correct
    assert feedback.part_correct("dp_best")
    assert not feedback.part_correct("dp_left")
    assert not feedback.part_correct("dp_count")
    assert "no answer given" in feedback.message


def test_function_parts():
    def only_mults(a, b):
        out, flops = _zero_acc(a, b)
        return out, flops // 2

    def wrong_product(a, b):
        out, flops = _zero_acc(a, b)
        return [[x + 1 for x in row] for row in out], flops

    def crashes(a, b):
        raise RuntimeError("boom")

    for func, words in [(only_mults, "FLOP count"), (wrong_product, "product is wrong"), (crashes, "RuntimeError")]:
        feedback = check("matmul-cost-ex-count", func, part="zero_acc_matmul")
        assert not feedback.correct and words in feedback.message
    assert not check("matmul-cost-ex-count", 3, part="zero_acc_matmul").correct


def test_non_numbers_are_wrong_not_errors():
    for bad in ["12", None, ..., [1, 2], float("nan"), True]:
        assert not check("matmul-cost-ex-mlp", bad).correct


def test_bad_arguments():
    with pytest.raises(ValueError, match="exercise_id"):
        check("no-such-exercise", 1)
    with pytest.raises(TypeError, match="exercise_id"):
        check(3, 1)
    with pytest.raises(ValueError, match="part"):
        check("matmul-cost-ex-dp", 1, part="dp_nothing")
    with pytest.raises(ValueError, match="unknown parts"):
        check("matmul-cost-ex-dp", {"dp_best": 1, "typo": 2})
    with pytest.raises(TypeError, match="dict"):
        check("matmul-cost-ex-dp", 30250)
    with pytest.raises(TypeError, match="chapter"):
        exercise_ids(3)


def test_how_to_check_names_the_call_and_the_parts():
    assert how_to_check("matmul-cost-ex-mlp") == ('Check your answer: `llmmath.check("matmul-cost-ex-mlp", answer)`; '
                                                  '`llmmath.describe("matmul-cost-ex-mlp")` says what to compute.')
    assert how_to_check("matmul-cost-ex-chain") == (
        'Check your answer: `llmmath.check("matmul-cost-ex-chain", answer)` with `answer` a dict of the parts '
        '`lora_right`, `lora_left`, `lora_ratio`; `llmmath.describe("matmul-cost-ex-chain")` says what each is.')
    with pytest.raises(ValueError, match="exercise_id"):
        how_to_check("matmul-cost-ex-none")


def test_describe_names_every_part_and_tolerance():
    for label, ex in EXERCISES.items():
        text = describe(label)
        assert label in text
        for part in ex.parts:
            assert part.name in text


def _chapter_text(slug: str) -> str:
    """The markdown of a chapter and of its reference sub-page, if it has one."""
    paths = [ROOT / "chapters" / f"{name}.ipynb" for name in (slug, f"{slug}-reference")]
    cells = [c for path in paths if path.exists() for c in nbformat.read(path, as_version=4).cells]
    return "\n".join(c.source for c in cells if c.cell_type == "markdown")


@pytest.mark.parametrize("label", sorted(EXERCISES))
def test_labels_and_hints_exist_in_the_chapter(label):
    ex = EXERCISES[label]
    text = _chapter_text(ex.chapter)
    assert re.search(rf"^:label:\s*{re.escape(label)}\s*$", text, re.M), f"{label} is not an exercise of {ex.chapter}"
    assert re.search(rf"^\({re.escape(ex.section)}\)=", text, re.M), f"hint section {ex.section} not in {ex.chapter}"


def test_expected_values_are_not_stored_in_the_source():
    paths = [ROOT / "llmmath" / "check.py", *sorted((ROOT / "llmmath" / "exercises").glob("*.py"))]
    assert len(paths) > 2, "the chapters' exercise modules are gone"
    source = "\n".join(path.read_text() for path in paths)
    for label, answer in CORRECT.items():
        for value in _numbers(answer).values():
            if isinstance(value, int) and value > 1000:
                for text in {str(value), f"{value:_}", f"{value:,}"}:
                    assert text not in source, f"{label}: {text} is stored in llmmath/check.py or llmmath/exercises/"
            elif isinstance(value, float) and not value.is_integer():
                assert repr(value) not in source and f"{value:.6g}" not in source


# The chapters' own solutions glue the same numbers: the checker must accept each of them.
# (exercise, part) -> glue key in the chapter notebook, whose committed output is the value.
GLUED = {
    ("matmul-cost-ex-vecmat", "matvec_exact"): "matmul-cost-ex-mv-exact",
    ("matmul-cost-ex-vecmat", "matvec_rel_error"): "matmul-cost-ex-mv-err",
    ("matmul-cost-ex-vecmat", "outer_exact"): "matmul-cost-ex-outer-exact",
    ("matmul-cost-ex-vecmat", "outer_rel_error"): "matmul-cost-ex-outer-err",
    ("matmul-cost-ex-mlp", "mlp_flops"): "matmul-cost-ex-mlp-flops",
    ("matmul-cost-ex-count", "naive_saving"): "matmul-cost-ex-count-saving",
    ("matmul-cost-ex-chain", "lora_right"): "matmul-cost-lora-right",
    ("matmul-cost-ex-chain", "lora_left"): "matmul-cost-lora-left",
    ("matmul-cost-ex-chain", "lora_ratio"): "matmul-cost-lora-ratio",
    ("matmul-cost-ex-dp", "dp_best"): "matmul-cost-ex-dp-best",
    ("matmul-cost-ex-dp", "dp_left"): "matmul-cost-ex-dp-left",
    ("matmul-cost-ex-dp", "dp_count"): "matmul-cost-ex-dp-count",
    ("matmul-cost-ex-attention", "crossover_s"): "matmul-cost-ex-attn-s",
    ("matmul-cost-ex-roofline", "intensity_b64"): "matmul-cost-ex-rl-i64",
    ("matmul-cost-ex-roofline", "batch_h100"): "matmul-cost-ex-rl-h100",
    ("matmul-cost-ex-roofline", "batch_mi300x"): "matmul-cost-ex-rl-mi300x",
    ("matmul-cost-ex-roofline", "batch_h100_fp8"): "matmul-cost-ex-rl-h100-fp8",
    ("chain-ex-two-layers", "bp_flops"): "chain-ex2-left",
    ("chain-ex-two-layers", "other_flops"): "chain-ex2-right",
    ("chain-ex-eps", "eps_opt"): "chain-eps-opt",
    ("chain-ex-forward-mode", "n_jvps"): "chain-ex-fwd-n",
    ("chain-ex-forward-mode", "jvp_flops"): "chain-ex-fwd-jvp",
    ("chain-ex-forward-mode", "forward_mode_flops"): "chain-ex-fwd-total",
    ("chain-ex-softmax", "dense_ratio"): "chain-ex-softmax-ratio",
    ("chain-ex-layernorm", "saved_bytes"): "chain-ex-ln-bytes",
    ("fb-ex-bottleneck", "ratio"): "fb-bottleneck-ratio",
    ("fb-ex-depth", "n_hidden"): "fb-depth-n",
    ("params-ex-gptj", "gptj_params"): "params-ex-gptj",
    ("params-ex-llama3", "llama3_params"): "params-ex-llama3",
    ("params-ex-llama3", "mha_extra"): "params-ex-llama3-mha",
    ("params-ex-bert-large", "bert_large_params"): "params-ex-bert-large",
    ("params-ex-depth", "min_layers"): "params-ex-depth-min",
    ("params-ex-moe", "n_experts"): "params-ex-moe-E",
    ("params-ex-moe", "active_params"): "params-ex-moe-active",
    ("params-ex-tie", "qwen05_untied"): "params-ex-tie-small",
    ("params-ex-tie", "qwen7_tied"): "params-ex-tie-big",
    ("params-ex-mla", "attention_weights"): "params-ex-mla-weights",
    ("params-ex-mla", "cache_bytes"): "params-ex-mla-cache",
    ("params-ex-mla", "cache_ratio"): "params-ex-mla-ratio",
    ("params-ex-shared", "moe_block"): "params-ex-shared-block",
    ("params-ex-shared", "shared_active"): "params-ex-shared-active",
    ("params-ex-shared", "shared_width"): "params-ex-shared-wide",
    ("params-ex-shared", "k_equivalent"): "params-ex-shared-k",
    ("params-ex-dense-first", "total_all_sparse"): "params-ex-dense-total",
    ("params-ex-dense-first", "active_all_sparse"): "params-ex-dense-active",
    ("params-ex-qknorm", "qwen3_qk"): "params-ex-qk-qwen3-235b-a22b",
    ("params-ex-qknorm", "olmo2_qk"): "params-ex-qk-olmo-2-13b",
    ("flops-ex-llama", "forward_flops"): "flops-ex-l7-fwd",
    ("flops-ex-llama", "excess_2n"): "flops-ex-l7-excess",
    ("flops-ex-llama", "attention_share"): "flops-ex-l7-share",
    ("flops-ex-gqa", "saving"): "flops-ex-gqa-saving",
    ("flops-ex-gqa", "saving_rel"): "flops-ex-gqa-rel",
    ("flops-ex-chinchilla", "days_a100"): "flops-ex-ch-A100",
    ("flops-ex-chinchilla", "days_h100"): "flops-ex-ch-H100",
    ("flops-ex-mfu", "mfu"): "flops-ex-mfu",
    ("flops-ex-mfu", "hfu"): "flops-ex-hfu",
    ("flops-ex-fused", "gpt3_extra"): "flops-ex-fused-extra",
    ("flops-ex-fused", "mla_ratio"): "flops-ex-fused-mla",
    ("flops-ex-tiles", "fraction_2048"): "flops-ex-tiles-2048",
    ("flops-ex-tiles", "fraction_window"): "flops-ex-tiles-window",
    ("flops-ex-deepseek", "flops_per_token"): "flops-ex-ds-per-token",
    ("flops-ex-deepseek", "attention_per_token"): "flops-ex-ds-attn-per-token",
    ("mem-ex-momentum", "bytes_per_param"): "mem-ex1-plain",
    ("mem-ex-momentum", "zero2_bytes"): "mem-ex1-zero2",
    ("mem-ex-mistral", "kv_gb"): "mem-ex3-kv-gb",
    ("mem-ex-mistral", "kv_mha_gb"): "mem-ex3-kv-mha-gb",
    ("mem-ex-8bit", "bytes_per_param"): "mem-ex5-8bit",
    ("mem-ex-mqa", "mqa_factor"): "mem-ex7-ratio",
    ("mem-ex-mqa", "gqa_factor"): "mem-ex7-gqa",
    ("mem-ex-mistral", "kv_v01_gb"): "mem-ex3-kv-v01-gb",
    ("mem-ex-llama-act", "eager_gb"): "mem-ex9-eager-gb",
    ("mem-ex-llama-act", "fused_gb"): "mem-ex9-fused-gb",
    ("mem-ex-recompute", "selective_share"): "mem-ex10-sel-share",
    ("mem-ex-recompute", "flash_share"): "mem-ex10-flash-share",
    ("mem-ex-gemma", "kv_gb"): "mem-g3-kv-gb",
    ("mem-ex-gemma", "kv_global_gb"): "mem-g3-kv-global-gb",
    ("mem-ex-gemma", "same_up_to"): "mem-ex11-same",
    ("mem-ex-mla", "latent_bytes"): "mem-ex12-latent",
    ("mem-ex-mla", "expanded_bytes"): "mem-ex12-expanded",
    ("mem-ex-mla", "gqa_heads"): "mem-v3-groups",
    ("optim-ex-memory", "bytes_per_param"): "optim-ex-mem-bpp",
    ("optim-ex-memory", "gib"): "optim-ex-mem-gib",
    ("optim-ex-memory", "saved_gib"): "optim-ex-mem-saved-gib",
    ("optim-ex-first-step", "t1_095"): "optim-ex-b095-t1",
    ("optim-ex-first-step", "max_099"): "optim-ex-b099-max",
    ("optim-ex-first-step", "max_095"): "optim-ex-b095-max",
    ("scaling-laws-ex-h100", "days"): "scaling-ex-h100-days",
    ("scaling-laws-ex-h100", "days_no_recompute"): "scaling-ex-h100-days-norecompute",
    ("scaling-laws-ex-gopher", "compute_ratio"): "scaling-ex-gopher-chin-cratio",
    ("scaling-laws-ex-kaplan", "exponent"): "scaling-ex-kaplan-exp",
    ("optim-ex-hb-stability", "max_lr"): "optim-ex-hb-maxlr",
    ("optim-ex-hb-steps", "steps_gd_50"): "optim-ex-steps-gd-50",
    ("optim-ex-hb-steps", "steps_hb_50"): "optim-ex-steps-hb-50",
    ("optim-ex-hb-steps", "steps_gd_1e4"): "optim-ex-steps-gd-10000",
    ("optim-ex-hb-steps", "steps_hb_1e4"): "optim-ex-steps-hb-10000",
    ("optim-ex-schedule", "lr_cosine_mid"): "optim-ex-sched-cos-mid",
    ("optim-ex-schedule", "lr_wsd_mid"): "optim-ex-sched-wsd-mid",
    ("optim-ex-schedule", "lr_cosine_last"): "optim-ex-sched-cos-last",
    ("optim-ex-clip", "norm"): "optim-ex-clip-norm",
    ("optim-ex-clip", "first"): "optim-ex-clip-first",
    ("optim-ex-beta2", "horizon_098"): "optim-ex-horizon-098",
    ("optim-ex-beta2", "bound_098"): "optim-ex-bound-098",
    ("optim-ex-beta2", "bound_09999"): "optim-ex-bound-09999",
    ("optim-ex-beta2", "growth_09999"): "optim-ex-growth-09999",
    ("scaling-laws-ex-epochs", "effective_tokens"): "scaling-ex-epochs-deff",
    ("scaling-laws-ex-epochs", "epochs_half"): "scaling-ex-epochs-half",
    ("scaling-laws-ex-data-optimum", "dc_n_params"): "scaling-ex-dc-n",
    ("scaling-laws-ex-data-optimum", "dc_epochs"): "scaling-ex-dc-epochs",
    ("scaling-laws-ex-inference", "inf_n_params"): "scaling-ex-inf-n",
    ("scaling-laws-ex-inference", "inf_saving"): "scaling-ex-inf-saving",
    ("scaling-laws-ex-frontier", "gamma"): "scaling-ex-front-gamma",
    ("scaling-laws-ex-frontier", "compute"): "scaling-ex-front-c",
    ("scaling-laws-ex-breakeven", "inference_tokens"): "scaling-ex-breakeven",
    ("parallelism-ex-ring", "ar_seconds"): "parallelism-ex-ar-s",
    ("parallelism-ex-hide", "hide_tokens"): "parallelism-ex-b200-tokens",
    ("parallelism-ex-hide", "hide_sequences"): "parallelism-ex-b200-seqs",
    ("parallelism-ex-tp", "tp_ratio_nvlink"): "parallelism-ex-tp-nvlink",
    ("parallelism-ex-tp", "tp_ratio_split"): "parallelism-ex-tp-split",
    ("parallelism-ex-tp", "tp_ratio_16"): "parallelism-ex-tp-16",
    ("parallelism-ex-bubble", "m_1f1b"): "parallelism-ex-m1",
    ("parallelism-ex-bubble", "m_interleaved"): "parallelism-ex-mi",
    ("parallelism-ex-inflight", "act_1f1b_gb"): "parallelism-ex-first-gb",
    ("parallelism-ex-inflight", "act_interleaved_gb"): "parallelism-ex-inter-gb",
    ("parallelism-ex-zero", "state_zero1_gb"): "parallelism-ex-z1",
    ("parallelism-ex-zero", "state_zero2_gb"): "parallelism-ex-z2",
    ("parallelism-ex-zero", "state_zero3_gb"): "parallelism-ex-z3",
    ("parallelism-ex-fsdp", "fsdp_padded"): "parallelism-ex-fsdp-padded",
    ("parallelism-ex-fsdp", "fsdp_last"): "parallelism-ex-fsdp-last",
    ("capstone-ex-llama65b", "l65_mfu_exact"): "capstone-ex-l65-mfu",
    ("capstone-ex-gpt3-h100", "g3_days"): "capstone-ex-g3-days",
    ("capstone-ex-gpt3-h100", "g3_cost"): "capstone-ex-g3-cost",
    ("capstone-ex-70b-memory", "mem_pp1_gb"): "capstone-ex-70b-pp1",
    ("capstone-ex-70b-memory", "mem_pp4_gb"): "capstone-ex-70b-pp4",
    ("capstone-ex-deepseek", "ds_mfu_total"): "capstone-ex-v2-total-mfu",
    ("capstone-ex-deepseek", "ds_mfu_active"): "capstone-ex-v2-active-mfu",
    ("capstone-ex-serve", "serve_max_batch"): "capstone-ex-sv-batch",
    ("capstone-ex-serve", "serve_tokens_per_second"): "capstone-ex-sv-tps",
    ("capstone-ex-budget", "budget_tokens"): "capstone-ex-budget-tokens",
    ("capstone-ex-h800", "tp_ratio_h800"): "capstone-ex-tp-h800",
    ("capstone-ex-h800", "tp_ratio_h100"): "capstone-ex-tp-h100",
    ("primer-ex-gpt2xl", "block_params"): "primer-xl-block",
    ("primer-ex-gpt2xl", "n_params"): "primer-xl-n",
    ("primer-ex-llama2-70b", "block_params"): "primer-70-block",
    ("primer-ex-llama2-70b", "attention_share"): "primer-70-attn-share",
    ("primer-ex-llama2-70b", "attention_mha"): "primer-70-attn-mha",
    ("primer-ex-swiglu", "mlp_ratio"): "primer-swiglu-ratio",
    ("primer-ex-tied", "tied_saving"): "primer-tied-saved",
    ("primer-ex-tied", "tied_share"): "primer-tied-share",
    ("primer-ex-tied", "tables_share"): "primer-tied-gm-share",
    ("primer-ex-kv70b", "values_per_token"): "primer-kv70-values",
    ("primer-ex-kv70b", "cache_bytes"): "primer-kv70-bytes",
    ("primer-ex-kv70b", "cache_bytes_mha"): "primer-kv70-mha-bytes",
    ("primer-ex-cache-flops", "ratio"): "primer-cf-ratio",
    ("serving-ex-kv", "kv_mha_token"): "serving-sol-kv-mha-token",
    ("serving-ex-kv", "kv_gqa_token"): "serving-sol-kv-gqa-token",
    ("serving-ex-kv", "kv_mha_gb"): "serving-sol-kv-mha-gb",
    ("serving-ex-kv", "kv_gqa_gb"): "serving-sol-kv-gqa-gb",
    ("serving-ex-kv", "kv_ratio"): "serving-sol-kv-ratio",
    ("serving-ex-decode", "dec_step_ms"): "serving-sol-dec-ms",
    ("serving-ex-decode", "dec_tokens_per_s"): "serving-sol-dec-tps",
    ("serving-ex-decode", "dec_approx_error"): "serving-sol-dec-err",
    ("serving-ex-critical", "crit_w_bf16"): "serving-sol-crit-w-bf16",
    ("serving-ex-critical", "crit_w_int8"): "serving-sol-crit-w-int8",
    ("serving-ex-critical", "crit_step_512"): "serving-sol-crit-step-512",
    ("serving-ex-critical", "crit_step_1k"): "serving-sol-crit-step-1k",
    ("serving-ex-capacity", "cap_bf16"): "serving-sol-cap-bf16",
    ("serving-ex-capacity", "cap_fp8"): "serving-sol-cap-fp8",
    ("serving-ex-capacity", "cap_fp8_no_reserve"): "serving-sol-cap-fp8-no-reserve",
    ("serving-ex-experts", "moe_expected_5"): "serving-sol-moe-touched",
    ("serving-ex-experts", "moe_gb_b1"): "serving-sol-moe-gb-1",
    ("serving-ex-experts", "moe_gb_b5"): "serving-sol-moe-gb-5",
    ("serving-ex-mla", "mla_ratio"): "serving-sol-mla-ratio",
    ("serving-ex-tp", "tp_best_ring"): "serving-sol-tp-ring-t",
    ("serving-ex-tp", "tp_best_one_shot"): "serving-sol-tp-one-shot-t",
    ("serving-ex-tp", "tp_ring_ms"): "serving-sol-tp-ring-ms",
    ("serving-ex-tp", "tp_one_shot_ms"): "serving-sol-tp-one-shot-ms",
    ("serving-ex-prefill", "prefill_s_star"): "serving-sol-prefill-s",
    ("serving-ex-gqa", "gqa_flops_per_byte"): "serving-sol-gqa-per-byte",
    ("serving-ex-gqa", "mla_flops_per_byte"): "serving-sol-gqa-mla-per-byte",
    ("sys-ex-static", "util_16"): "sys-ex-static-16",
    ("sys-ex-static", "util_256"): "sys-ex-static-256",
    ("sys-ex-steady", "sat_rate"): "sys-ex-steady-sat",
    ("sys-ex-steady", "itl_ms"): "sys-ex-steady-itl",
    ("sys-ex-steady", "batch"): "sys-ex-steady-batch",
    ("sys-ex-budget", "sat_budget"): "sys-ex-budget-sat",
    ("sys-ex-budget", "ttft_ms"): "sys-ex-budget-ttft",
    ("sys-ex-blocks", "blocks"): "sys-ex-blocks-n",
    ("sys-ex-blocks", "paged_waste"): "sys-ex-blocks-waste",
    ("sys-ex-blocks", "contiguous_waste"): "sys-ex-blocks-contig",
    ("sys-ex-cow", "shared_blocks"): "sys-ex-cow-shared",
    ("sys-ex-cow", "unshared_blocks"): "sys-ex-cow-unshared",
    ("sys-ex-cow", "saved_mb"): "sys-ex-cow-mb",
    ("sys-ex-spec", "best_gamma"): "sys-ex-spec-gamma",
    ("sys-ex-spec", "speedup"): "sys-ex-spec-speedup",
    ("sys-ex-mtp", "implied_cost_085"): "sys-ex-mtp-085",
    ("sys-ex-mtp", "implied_cost_090"): "sys-ex-mtp-090",
    ("sys-ex-quant", "bits"): "sys-ex-quant-bits",
    ("sys-ex-quant", "crit_h100"): "sys-ex-quant-h100",
    ("sys-ex-quant", "crit_mi300x"): "sys-ex-quant-mi300x",
    ("sys-ex-moe", "t_star"): "sys-ex-moe-t",
    ("sys-ex-moe", "per_gpu_16"): "sys-ex-moe-16",
    ("sys-ex-transfer", "transfer_ms_bf16"): "sys-ex-transfer-bf16",
    ("sys-ex-transfer", "transfer_ms_fp8"): "sys-ex-transfer-fp8",
    ("sys-ex-cost", "usd_per_mtok"): "sys-ex-cost-usd",
}


def _glued_values() -> dict[str, float]:
    values = {}
    for path in (ROOT / "chapters").glob("*.ipynb"):
        for cell in nbformat.read(path, as_version=4).cells:
            for out in cell.get("outputs", []):
                name = out.get("metadata", {}).get("scrapbook", {}).get("name")
                text = out.get("data", {}).get("application/papermill.record/text/plain")
                if name and text is not None:
                    try:
                        values[name] = float(text)
                    except ValueError:
                        pass
    return values


def test_chapter_solutions_and_checker_agree():
    """Consistency, not correctness: the chapters' glued solutions and the checker's expected values
    are both computed by llmmath, so this catches a notebook and its exercise drifting apart, not a
    wrong formula. Correctness is checked against independent answers in test_correct_answers_pass,
    test_chain_rule_function_parts, test_mla_and_moe_exercises_from_the_published_shapes and
    test_capstone_exercises_from_published_shapes_and_sheets."""
    glued = _glued_values()
    found = [(label, part, glued[key]) for (label, part), key in GLUED.items() if key in glued]
    assert len(found) >= len(GLUED) // 2, "most glue keys of the exercises' solutions are gone"
    for label, part, value in found:
        value = int(value) if value.is_integer() and EXERCISES[label].parts[0].rtol == 0 else value
        feedback = check(label, value, part=part)
        assert feedback.correct, f"{label}.{part}: the chapter's value {value} is rejected\n{feedback}"
        assert not check(label, value * 1.01 + 1, part=part).correct


@pytest.mark.parametrize("label", sorted(EXERCISES))
def test_every_exercise_can_be_checked(label):
    """Smoke test: every exercise's expected value still computes and an empty answer is graded
    wrong part by part (the values themselves are checked against independent answers above)."""
    feedback = check(label, {p.name: None for p in EXERCISES[label].parts})
    assert not feedback.correct and len(feedback.parts) == len(EXERCISES[label].parts)
    for part in EXERCISES[label].parts:
        if part.kind == "number":
            value = part.expected()  # runs llmmath: it must still compute
            assert isinstance(value, (int, float)) and math.isfinite(value)


def test_chain_rule_function_parts():
    """The VJP exercises: an independent correct answer passes, a wrong one fails."""
    import numpy as np

    def dense_softmax_vjp(y, dy):  # J^T dy with the full Jacobian diag(y) - y y^T, row by row
        rows = [(np.diag(r) - np.outer(r, r)).T @ d for r, d in zip(y.reshape(-1, y.shape[-1]),
                                                                    dy.reshape(-1, y.shape[-1]), strict=True)]
        return np.array(rows).reshape(y.shape)

    assert check("chain-ex-softmax", dense_softmax_vjp, part="softmax_vjp").correct
    assert not check("chain-ex-softmax", lambda y, dy: y * dy, part="softmax_vjp").correct
    assert not check("chain-ex-softmax", lambda y, dy: dy[..., :1], part="softmax_vjp").correct
    assert check("chain-ex-softmax", 4096 / 2, part="dense_ratio").correct

    torch = pytest.importorskip("torch")

    def torch_layer_norm_dx(x, mean, inv_std, gamma, dy):  # autograd; mean and inv_std unused
        tx = torch.tensor(x, requires_grad=True)
        out = torch.nn.functional.layer_norm(tx, (x.shape[-1],), torch.tensor(gamma), None, 1e-5)
        out.backward(torch.tensor(dy))
        return tx.grad.numpy()

    assert check("chain-ex-layernorm", torch_layer_norm_dx, part="layer_norm_dx").correct
    no_projection = lambda x, mean, inv_std, gamma, dy: inv_std * gamma * dy  # noqa: E731
    assert not check("chain-ex-layernorm", no_projection, part="layer_norm_dx").correct
    h_gpt2, s = 768, 1024  # GPT-2 small (Radford et al. 2019): d_model 768, context 1024
    assert check("chain-ex-layernorm", 4 * (s * h_gpt2 + 2 * s), part="saved_bytes").correct

def test_mla_and_moe_exercises_from_the_published_shapes():
    """The parameter-counts exercises on multi-head latent attention, shared experts, dense first
    layers and QK-norm, answered by hand from the published config.json shapes (DeepSeek-V2-Lite,
    Qwen1.5-MoE-A2.7B, DeepSeek-V3, Qwen3-235B-A22B, OLMo-2-13B), not from llmmath."""
    # DeepSeek-V2-Lite: h 2048, 16 heads, no query latent, r_kv 512, d_n 128, d_r 64, d_v 128, 27 layers
    h, a, r_kv, d_n, d_r, d_v, layers = 2048, 16, 512, 128, 64, 128, 27
    weights = h * a * (d_n + d_r) + h * (r_kv + d_r) + r_kv * a * (d_n + d_v) + a * d_v * h
    cache = (r_kv + d_r) * layers * 32768 * 2
    assert check("params-ex-mla", {"attention_weights": weights, "cache_bytes": cache,
                                   "cache_ratio": a * (d_n + d_r + d_v) / (r_kv + d_r)}).correct
    assert not check("params-ex-mla", weights + r_kv, part="attention_weights").correct  # norm counted
    # Qwen1.5-MoE-A2.7B: 24 layers, h 2048, MHA with QKV biases, 60 experts of 1408 (4 active),
    # a shared expert of 5632 with a gate of h, untied vocabulary of 151936
    h, layers, vocab, n_exp, k, d_e, d_s = 2048, 24, 151936, 60, 4, 1408, 5632
    block = n_exp * 3 * h * d_e + 3 * h * d_s + h * n_exp + h
    layer_active = 4 * h * h + 3 * h + 2 * h + block - (n_exp - k) * 3 * h * d_e
    assert check("params-ex-shared", {"moe_block": block, "shared_active": layers * layer_active + 2 * vocab * h + h,
                                      "shared_width": 4, "k_equivalent": 8}).correct
    # DeepSeek-V3 with every layer sparse: 61 layers, h 7168, 128 heads, r_q 1536, r_kv 512, d_n 128,
    # d_r 64, d_v 128, 256 experts of 2048 (8 active), one shared expert, vocabulary 129280, untied
    h, a, r_q, r_kv, d_n, d_r, d_v, layers, vocab, n_exp, k, d_e = (
        7168, 128, 1536, 512, 128, 64, 128, 61, 129280, 256, 8, 2048)
    attention = (h * r_q + r_q + r_q * a * (d_n + d_r) + h * (r_kv + d_r) + r_kv + r_kv * a * (d_n + d_v)
                 + a * d_v * h + 2 * h)
    mlp = n_exp * 3 * h * d_e + 3 * h * d_e + h * n_exp
    total = layers * (attention + mlp) + 2 * vocab * h + h
    active = total - layers * (n_exp - k) * 3 * h * d_e
    assert check("params-ex-dense-first", {"total_all_sparse": total, "active_all_sparse": active}).correct
    # Qwen3-235B-A22B: 94 layers, head_dim 128 (MaxText's and MindSpeed's configs of the model: 94
    # layers, kv_channels 128, QK layernorm); OLMo-2-13B: 40 layers, 40 heads of 128 for queries and keys
    assert check("params-ex-qknorm", {"qwen3_qk": 94 * 2 * 128, "olmo2_qk": 40 * 2 * 5120}).correct
    assert not check("params-ex-qknorm", 64 * 2 * 128, part="qwen3_qk").correct  # Qwen3-32B's layers


def test_exercises_changed_so_that_the_chapters_do_not_print_them_by_hand():
    """The exercises re-asked so that no chapter prints their answers (issue 35), answered by hand
    from the published shapes (Llama 2 7B: 32 layers, h 4096, 32 heads of 128, MLP 11008,
    V 32000, untied; DeepSeek-V3: 61 layers, 128 heads, keys 192 = 128 + 64 and values 128 wide;
    Llama-3-70B's up-projection 8192 x 28672), not from llmmath."""
    L, h, a, d, f, V, s = 32, 4096, 32, 128, 11008, 32000, 4096
    attention = 4 * s * a * d * L  # QK^T and PV per token: 2 s a d each, every layer
    idle = V * h + (2 * L + 1) * h  # input embedding and RMSNorm gains: in N, in no product
    assert check("flops-ex-llama", attention - 2 * idle, part="excess_2n").correct
    assert not check("flops-ex-llama", attention - 2 * V * h, part="excess_2n").correct  # norms forgotten
    L, a, d_qk, d_v = 61, 128, 192, 128
    assert check("flops-ex-deepseek", 2 * s * a * (d_qk + d_v) * L, part="attention_per_token").correct
    assert not check("flops-ex-deepseek", 4 * s * a * d_qk * L, part="attention_per_token").correct
    # the chapter's polynomial of a transformers Llama layer, eager and fused, at s = 2048, b = 1
    L, s = 32, 2048
    eager = L * (24 * s * h + 8 * s + 8 * s * f + 6 * 32 * s**2) / 1e9
    fused = L * (24 * s * h + 8 * s + 8 * s * f + 4 * 32 * s) / 1e9
    assert check("mem-ex-llama-act", {"eager_gb": eager, "fused_gb": fused}).correct
    b, n, p = 64, 8192, 28672
    assert check("matmul-cost-ex-roofline", 2 * b * n * p / ((b * n + n * p + b * p) * 2),
                 part="intensity_b64").correct
    assert not check("matmul-cost-ex-roofline", 2 * b / 2, part="intensity_b64").correct  # 2b/q: 1% high
    assert check("optim-ex-first-step", 0.1 / 0.05**0.5, part="t1_095").correct  # (1 - b1) / sqrt(1 - b2)


def test_capstone_exercises_from_published_shapes_and_sheets():
    """The capstone's planning exercises answered by hand from the published shapes (LLaMA 65B:
    80 layers, h 8192, MLP 22016, V 32000; Llama 3 8B: 32 layers, h 4096, 8 KV heads of 128, MLP
    14336, V 128256), the data sheets' dense BF16 peaks (A100 312 TFLOP/s, H100 989.4) and the
    NVLink per direction (H100 450 GB/s; H800 200 GB/s: Zhao et al. 2025's 400 both ways)."""
    def train_per_token(L, h, kv, f, V, s):  # 3 x forward: QKV + O, SwiGLU, s x s products, logits
        return 3 * (L * (2 * h * (h + 2 * kv) + 2 * h * h + 6 * h * f + 4 * s * h) + 2 * h * V)

    L, h, f, V = 80, 8192, 22016, 32000
    rate = 1.4e12 / (1_022_362 * 3600)  # LLaMA's Table 15: 1,022,362 GPU hours for 1.4T tokens
    n65 = L * (4 * h * h + 3 * h * f + 2 * h) + 2 * V * h + h
    exact = rate * train_per_token(L, h, h, f, V, 2048) / 312e12
    six_n = rate * 6 * n65 / 312e12
    assert check("capstone-ex-llama65b", {"l65_mfu_exact": exact, "l65_exact_over_6n": exact / six_n}).correct
    assert not check("capstone-ex-llama65b", rate * 6 * n65 / 312e12, part="l65_mfu_exact").correct
    tokens = 1e6 / 2.0 * 3600 * 989.4e12 * 0.4 / train_per_token(32, 4096, 1024, 14336, 128256, 8192)
    assert check("capstone-ex-budget", tokens).correct
    ratio = {gpu: 1 * 2 * 989.4e12 / (9 * 7168 * w) for gpu, w in (("h800", 200e9), ("h100", 450e9))}
    assert check("capstone-ex-h800", {"tp_ratio_h800": ratio["h800"], "tp_ratio_h100": ratio["h100"]}).correct


def test_three_significant_figures_pass_where_the_prompt_asks_for_them():
    """Every non-exact part accepts its expected value rounded to 3 significant figures (and one
    computed with a data sheet's rounded peak, 989 for 989.4 TFLOP/s, a relative change of 4e-4),
    and says so in describe(); exact parts stay exact."""
    from llmmath.check import SIG3

    for label, ex in EXERCISES.items():
        for part in ex.parts:
            if part.kind != "number":
                continue
            value = part.expected()
            if part.rtol == 0:
                assert float(value).is_integer(), f"{label}.{part.name}: exact part with a non-integer answer"
                assert "exact integer" in describe(label)
                continue
            assert part.rtol >= SIG3, f"{label}.{part.name}: rtol {part.rtol} is tighter than the prompt's 3 figures"
            rounded = float(f"{value:.3g}")
            assert check(label, rounded, part=part.name).correct, f"{label}.{part.name}: 3 figures rejected"
            assert check(label, value * 989 / 989.4, part=part.name).correct
            assert ("significant figures" if part.rtol == SIG3 else "relative tolerance") in describe(label)


def test_passed_parts_are_named():
    feedback = check("matmul-cost-ex-dp", {"dp_best": 1, "dp_left": CORRECT["matmul-cost-ex-dp"]["dp_left"]})
    assert "dp_left is right" in feedback.message and "dp_best is wrong" in feedback.message
    assert "dp_count: no answer given" in feedback.message


def test_prompts_state_the_accelerator_figures_to_use():
    from llmmath.check import constants

    text = describe("parallelism-ex-ring")
    # the H100 SXM data sheet: 1,979 TFLOP/s BF16 with sparsity (989.4 dense), 3.35 TB/s, NVLink 900 GB/s
    # both directions; one 400 Gb/s (50 GB/s) NIC per GPU
    assert "989.4 TFLOP/s BF16" in text and "3.35 TB/s" in text and "450 GB/s" in text and "50 GB/s" in text
    assert constants("matmul-cost-ex-mlp") == ""  # no accelerator: nothing to state
    assert "MI300X" in constants("matmul-cost-ex-roofline") and "H100" in constants("matmul-cost-ex-roofline")


def test_hand_graded_and_mistyped_ids_say_which():
    from llmmath.check import HAND_GRADED

    assert "parallelism-ex-plan" in HAND_GRADED
    with pytest.raises(ValueError, match="graded by hand"):
        check("parallelism-ex-plan", 1)
    with pytest.raises(ValueError, match="did you mean 'matmul-cost-ex-mlp'"):
        check("matmul-cost-ex-mpl", 1)
    with pytest.raises(ValueError, match="not an exercise of the book"):
        check("no-such-exercise", 1)


def test_every_exercise_of_the_book_is_registered():
    """Each chapter's exercise labels are its checkable exercises and its HAND_GRADED ones, and each
    module's WRITTEN (the hand-graded questions of checkable exercises) names its own exercises."""
    from coursework.exercises import chapter_notebooks, exercise_pairs, read
    from llmmath.check import HAND_GRADED, STRAY_WRITTEN

    assert not STRAY_WRITTEN, f"WRITTEN names exercises that do not exist (renamed?): {STRAY_WRITTEN}"
    for path in chapter_notebooks():
        labels = {ex.label for ex, _ in exercise_pairs(read(path))}
        registered = set(exercise_ids(path.stem)) | {k for k, v in HAND_GRADED.items() if v == path.stem}
        module = f"llmmath/exercises/{path.stem.replace('-', '_')}.py"
        assert labels == registered, (f"{path.name}: exercises not in {module} (EXERCISES or HAND_GRADED): "
                                      f"{sorted(labels - registered)}; registered but not in the chapter: "
                                      f"{sorted(registered - labels)}")
