"""Tests of the errata appendix.

Every verdict is pinned here by hand (``EXPECTED``), derived from the appendix's rule and the
published figures, not from llmmath: a formula change that flips a verdict fails
``test_every_verdict_is_pinned``. The rule itself is tested on boundary cases, and the key
corrected values are recomputed by hand or with ``transformers``.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import transformers

from llmmath.errata import (
    BERT_CLASSES,
    CLAIMS,
    DISAGREEMENT_REFERENCE,
    DISAGREEMENTS,
    EXACT_RTOL,
    NAMED_MODELS,
    Claim,
    _half_unit,
    _outside_layers_bytes,
    _selective_step,
    verdict,
)
from llmmath.flops import training_flops
from llmmath.presets import preset

ROOT = Path(__file__).resolve().parent.parent
LABELS = "".join(p.read_text(encoding="utf-8").replace("\\n", "\n") for p in (ROOT / "chapters").glob("*.ipynb"))

OK, APPROX, WRONG = "correct", "correct as an approximation", "wrong"

#: The verdict of every claim, written by hand from the rule: exact presentation -> must be equal;
#: approximate presentation -> within half a unit of the last digit printed.
EXPECTED = {
    # seed 000
    "000-attn-params": OK, "000-mlp-params": OK, "000-ln-params": OK,
    "000-tied-llama-7b": WRONG, "000-tied-mistral-7b": WRONG, "000-tied-qwen2-7b": WRONG,
    "000-total-gpt2": WRONG,          # no final LayerNorm: short by 2h
    "000-12lh2": APPROX,              # N / (l h^2) = 12.05 for GPT-3 175B
    "000-layer-flops": OK, "000-logits": OK, "000-backward-2x": OK, "000-recompute-step": OK,
    "000-megatron-identity": OK,
    "000-96bslh2": WRONG,             # 98.9, not 96 +- 0.5
    "000-8-per-param": APPROX,        # 8.21
    "000-qkv-flops": OK, "000-scores-flops": OK, "000-values-flops": OK, "000-out-proj-flops": OK,
    "000-mlp-flops": OK, "000-attn-act": OK, "000-softmax-act": OK, "000-mlp-act": OK, "000-layer-act": OK,
    # seed 001
    "001-matmul-exact": OK, "001-mlp-forward": OK, "001-mlp-backward": WRONG,
    "001-backward-2x-mlp": APPROX,    # 1.75 rounds to 2
    "001-gb": WRONG,
    "001-llama3-8b": APPROX,          # 8.03B rounds to 8 (80 亿: one significant digit)
    "001-qwen2-72b": WRONG,           # 72.7B rounds to 73, not 72
    "001-adam-8p": OK, "001-momentum-4p": OK, "001-states-always-fp32": WRONG, "001-model-states-16p": OK,
    "001-activations-2p-gpt3": APPROX,  # 1.58 bytes per parameter at b = 1
    "001-activations-2p-gpt2": WRONG,   # 10.3
    "001-total-18p": APPROX,          # 16 + 1.58 = 17.6
    "001-total-24p": WRONG,           # 16 + 2.9 = 18.9
    "001-adam-eps": WRONG,
    "001-momentum-ema": OK,           # a convention: PyTorch's momentum with lr (1 - gamma) eta
    "001-act-table-rows": WRONG, "001-layer-act": OK, "001-attn-scale": WRONG, "001-self-attn-act": OK,
    "001-attn-act": OK, "001-mlp-act": OK,
    "001-ln-act": WRONG,              # 2 bsh, not 1 bsh
    "001-act-outside-layers": WRONG,  # 5bsh + 4bsv, not 4bsh
    "001-self-attn-flops": WRONG,
    "001-c-batch": WRONG,             # 12.4, not 13
    "001-n-formula": WRONG, "001-13h2l": WRONG, "001-qkt-typo": WRONG, "001-layer-matmul-flops": WRONG,
    "001-6n": APPROX,                 # 6.16
    # seed 002
    "002-layer-params": OK,
    "002-ln-after": WRONG,            # 2L + 1 LayerNorms in a pre-LN GPT
    "002-qwen-formula": WRONG, "002-qwen-1.8b": WRONG,
    "002-model-total": WRONG,         # one layer, not the model
    "002-7b-fp16": OK, "002-inference-weights": WRONG, "002-20phi": OK,
    "002-130gb": WRONG,               # 140 GB (130 GiB)
    "002-attn-scale": WRONG, "002-qkv-flops": OK, "002-scores-values-flops": OK, "002-self-attn-flops": OK,
    "002-mlp-flops": OK, "002-logits": OK, "002-p-additions": WRONG, "002-layer-flops": OK,
    "002-ratio-per-layer": APPROX, "002-2-per-param": APPROX, "002-backward-2x": OK, "002-6-per-param": APPROX,
    "002-gpt3-params": APPROX,        # 174,604M rounds to 174,600M
    "002-gpt3-flops": APPROX,         # 3.1428e23 rounds to 3.143e23
    "002-8-with-recompute": APPROX,
    "002-recompute-usual": WRONG,     # selective recomputation: 6.22
    "002-train-seconds": WRONG,       # 2,914,663 s with the 174600M written
    "002-train-days": APPROX,         # 33.7
    # seed 003
    "003-mha-layer": WRONG, "003-ffn-layer": WRONG, "003-bert-layer": WRONG,
    "003-bert-12h2": APPROX, "003-bert-arithmetic": OK, "003-bert-count": WRONG,
    "003-bert-101m": WRONG,           # 102.3M
    "003-bert-110m": WRONG,
    "003-llama-layer": WRONG, "003-llama-arithmetic": OK, "003-llama-65b-count": WRONG,
    "003-llama-65b-about": APPROX,    # 65.29B rounds to 65B
    # seed 004
    "004-embedding": OK, "004-attention": WRONG, "004-w-o": WRONG, "004-ffn": WRONG, "004-layernorm": WRONG,
    "004-total-gpt2": WRONG, "004-total-bert-classifier": WRONG,
}


def test_every_verdict_is_pinned():
    ids = [c.id for c in CLAIMS]
    assert len(ids) == len(set(ids)), "claim ids must be unique"
    assert set(ids) == set(EXPECTED), (set(ids) ^ set(EXPECTED))
    flipped = {c.id: verdict(c) for c in CLAIMS if verdict(c) != EXPECTED[c.id]}
    assert not flipped, flipped


@pytest.mark.parametrize("claim", CLAIMS, ids=lambda c: c.id)
def test_every_claim_has_a_reference_and_a_cause(claim):
    assert f"({claim.ref})=" in LABELS, f"no section labelled {claim.ref!r} in chapters/"
    if EXPECTED[claim.id] != OK:
        assert claim.cause, "a claim that is not exactly correct needs its cause"


# ---- the rule -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("printed", "half"), [
    ("8", 0.5), ("34", 0.5), ("130", 5), ("2921340", 5), ("1.92e9", 5e6), ("1.50", 0.005),
    ("0.05", 0.005), ("720e8", 5e8), ("80e8", 5e8), ("174600e6", 5e7), ("3.143e23", 5e19),
])
def test_half_unit_of_the_last_printed_digit(printed, half):
    assert _half_unit(printed) == pytest.approx(half, rel=1e-15)


@pytest.mark.parametrize("printed", ["0", "abc", "", "inf"])
def test_half_unit_rejects_what_is_not_a_printed_figure(printed):
    with pytest.raises(ValueError, match="printed"):
        _half_unit(printed)


def _claim(stated, correct):
    return Claim("9", "t", "s", "c", stated, lambda: correct, "cause", "errata")


@pytest.mark.parametrize(("stated", "correct", "expected"), [
    ("8", 8.5, APPROX), ("8", 7.5, APPROX), ("8", 8.5000001, WRONG), ("8", 7.4999999, WRONG),
    ("8", 8.0, OK), ("130", 135.0, APPROX), ("130", 140.0, WRONG), ("1.92e9", 1.925e9, APPROX),
    ("1.92e9", 1.9251e9, WRONG),
    (lambda: 8, 8.4, WRONG),                      # exact presentation: no rounding allowed
    (lambda: 1e12, 1e12 + 1, OK),                 # within EXACT_RTOL (floating-point rounding)
    (lambda: 1e12, 1e12 + 4, WRONG),
    (lambda: 0, 0.0, OK),
])
def test_rule_on_boundary_cases(stated, correct, expected):
    assert EXACT_RTOL == 1e-12
    assert verdict(_claim(stated, correct)) == expected


# ---- corrected values, recomputed independently --------------------------------------------------

def _find(claim_id: str) -> Claim:
    (claim,) = [c for c in CLAIMS if c.id == claim_id]
    return claim


def _hf_numel(d: dict, cls=transformers.AutoModelForCausalLM) -> int:
    d = dict(d)
    config = transformers.AutoConfig.for_model(d.pop("model_type"), **d)
    with torch.device("meta"):
        model = cls.from_config(config)
    return sum(p.numel() for p in model.parameters())


def test_llama_65b_exact_count_by_hand():
    h, f, L, V = 8192, 22016, 80, 32000
    by_hand = L * (4 * h * h + 3 * h * f + 2 * h) + 2 * V * h + h  # untied head, RMSNorm scales only
    assert _find("003-llama-65b-count").correct() == by_hand


def test_qwen_formula_arithmetic_by_hand():
    assert _find("002-qwen-formula").correct() == 24 * (12 * 2048**2 + 13 * 2048) + 151851 * 2048 == 1_519_589_376


def test_seed002_training_time_used_175e9():
    claim = _find("002-train-seconds")
    assert claim.correct() == pytest.approx(8 * 300e9 * 174.6e9 / (1024 * 312e12 * 0.45))
    assert int(8 * 300e9 * 175e9 / (1024 * 312e12 * 0.45)) == 2921340  # what the seed printed (truncated)


def test_seed001_mlp_backward_is_4bmc_not_6bmc():
    n, b, m, c = 4, 32, 256, 10
    # weight gradients of all N+1 layers, input gradients of all but the first
    by_hand = (2 * b * m * m * n + 2 * b * m * c) + (2 * b * m * m * (n - 1) + 2 * b * m * c)
    assert _find("001-mlp-backward").correct() == by_hand == 2 * (2 * n - 1) * b * m * m + 4 * b * m * c


def test_bert_chinese_exact_count_by_hand():
    h, f, L, V, S, T = 768, 3072, 12, 21128, 512, 2
    embeddings = (V + S + T) * h + 2 * h
    layer = 4 * (h * h + h) + (h * f + f) + (f * h + h) + 2 * 2 * h
    pooler = h * h + h
    assert _find("003-bert-count").correct() == embeddings + L * layer + pooler


@pytest.mark.parametrize(("claim_id", "config"), [("001-llama3-8b", NAMED_MODELS["Llama-3-8B"]),
                                                 ("001-qwen2-72b", NAMED_MODELS["Qwen2-72B"])])
def test_named_models_against_transformers(claim_id, config):
    assert _find(claim_id).correct() == _hf_numel(config)


def test_bert_classifier_against_transformers():
    d = {"model_type": "bert", "num_labels": BERT_CLASSES}
    assert _find("004-total-bert-classifier").correct() == _hf_numel(
        d, transformers.AutoModelForSequenceClassification)


def test_gemma_output_projection_against_transformers():
    d = {"model_type": "gemma", "num_hidden_layers": 1, "hidden_size": 3072, "num_attention_heads": 16,
         "num_key_value_heads": 16, "head_dim": 256, "intermediate_size": 24576, "vocab_size": 256000}
    config = transformers.AutoConfig.for_model(d.pop("model_type"), **d)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    assert _find("004-w-o").correct() == model.model.layers[0].self_attn.o_proj.weight.numel()


def test_gpt2_has_2l_plus_1_layernorms():
    config = transformers.GPT2Config(n_layer=3, n_embd=64, n_head=4, vocab_size=100, n_positions=16)
    with torch.device("meta"):
        model = transformers.GPT2LMHeadModel(config)
    n_norms = sum(isinstance(m, torch.nn.LayerNorm) for m in model.modules())
    assert n_norms == 2 * 3 + 1
    assert _find("002-ln-after").correct() == 2 * 96 + 1


def test_selective_recomputation_reruns_the_attention_products():
    b, s, h, L = 1, 2048, 12288, 96
    assert _selective_step() - training_flops(preset("gpt3-175b"), b, s) == L * 4 * b * s * s * h


def test_activations_outside_the_layers_by_hand():
    b, s, h, v = 1, 2048, 12288, 50257
    assert _outside_layers_bytes(preset("gpt3-175b"), b, s) == 5 * s * b * h + 4 * s * b * v
    assert _find("001-act-outside-layers").correct() == 5 * s * b * h + 4 * s * b * v


def test_gpt3_activation_share_by_hand():
    b, s, h, a, L, V, S = 1, 2048, 12288, 96, 96, 50257, 2048
    n_params = L * (12 * h * h + 13 * h) + (V + S) * h + 2 * h
    act = L * s * b * h * (34 + 5 * a * s / h) + 5 * s * b * h + 4 * s * b * V
    assert _find("001-activations-2p-gpt3").correct() == pytest.approx(act / n_params, rel=1e-12)


def test_momentum_forms_agree_with_rescaled_lr():
    gamma, steps = 0.9, 10
    ema = sum((1 - gamma ** (k + 1)) for k in range(steps))          # v_k = 1 - gamma^k
    heavy_ball = sum(sum(gamma**j for j in range(k + 1)) for k in range(steps)) * (1 - gamma)
    claim = _find("001-momentum-ema")
    assert math.isclose(claim.value(), ema) and math.isclose(claim.correct(), heavy_ball)


def test_disagreements_have_a_reference_value():
    assert set(DISAGREEMENTS) == set(DISAGREEMENT_REFERENCE)
    for topic, statements in DISAGREEMENTS.items():
        assert len({s.seed for s in statements}) >= 2, topic
    assert DISAGREEMENT_REFERENCE["parameters of one GPT-3 175B layer"]() == 12 * 12288**2 + 13 * 12288
