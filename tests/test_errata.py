"""Tests of the errata appendix's data: every claim evaluates, and the key corrections agree with
values computed here by hand from the published shapes (independently of llmmath's formulas)."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmmath.errata import CLAIMS, DISAGREEMENT_REFERENCE, DISAGREEMENTS, VERDICTS, relative_error, verdict

ROOT = Path(__file__).resolve().parent.parent
LABELS = "".join(p.read_text(encoding="utf-8").replace("\\n", "\n") for p in (ROOT / "chapters").glob("*.ipynb"))


@pytest.mark.parametrize("claim", CLAIMS, ids=lambda c: f"{c.seed}-{c.claim[:40]}")
def test_every_claim_has_a_verdict_and_a_reference(claim):
    v = verdict(claim)
    assert v in VERDICTS
    assert f"({claim.ref})=" in LABELS, f"no section labelled {claim.ref!r} in chapters/"
    if v != VERDICTS[0]:
        assert claim.cause, "a claim that is not exactly correct needs its cause"
    if v == VERDICTS[1]:
        assert abs(relative_error(claim)) <= claim.tolerance


def _find(fragment: str):
    (claim,) = [c for c in CLAIMS if fragment in c.claim]
    return claim


def test_llama_65b_exact_count_by_hand():
    h, f, L, V = 8192, 22016, 80, 32000
    by_hand = L * (4 * h * h + 3 * h * f + 2 * h) + 2 * V * h + h  # untied head, RMSNorm scales only
    claim = _find("LLaMA-65B: 65,024,819,200")
    assert claim.correct() == by_hand
    assert verdict(claim) == "wrong"


def test_qwen_formula_arithmetic_by_hand():
    claim = _find("Qwen-1.8B by")
    assert claim.correct() == 24 * (12 * 2048**2 + 13 * 2048) + 151851 * 2048 == 1_519_589_376
    assert verdict(claim) == "wrong"


def test_seed002_training_time_used_175e9():
    claim = _find("2921340")
    seconds = 8 * 300e9 * 174.6e9 / (1024 * 312e12 * 0.45)
    assert claim.correct() == pytest.approx(seconds)
    assert int(8 * 300e9 * 175e9 / (1024 * 312e12 * 0.45)) == 2921340  # what the seed printed (truncated)


def test_seed001_mlp_backward_is_4bmc_not_6bmc():
    n, b, m, c = 4, 32, 256, 10
    # weight gradients of all N+1 layers, input gradients of all but the first
    by_hand = (2 * b * m * m * n + 2 * b * m * c) + (2 * b * m * m * (n - 1) + 2 * b * m * c)
    assert _find("MLP backward").correct() == by_hand == 2 * (2 * n - 1) * b * m * m + 4 * b * m * c


def test_bert_chinese_exact_count_by_hand():
    h, f, L, V, S, T = 768, 3072, 12, 21128, 512, 2
    embeddings = (V + S + T) * h + 2 * h
    layer = 4 * (h * h + h) + (h * f + f) + (f * h + h) + 2 * 2 * h
    pooler = h * h + h
    assert _find("BERT (vocabulary 21128)").correct() == embeddings + L * layer + pooler


def test_disagreements_have_a_reference_value():
    assert set(DISAGREEMENTS) == set(DISAGREEMENT_REFERENCE)
    for topic, statements in DISAGREEMENTS.items():
        assert len({s.seed for s in statements}) >= 2, topic
        assert DISAGREEMENT_REFERENCE[topic]() > 0
