"""Tests of the notebooks' table renderer."""

from __future__ import annotations

import pytest

from llmmath.display import markdown_table


def test_numbers_are_right_aligned_with_separators():
    table = markdown_table(["model", "N", "error"], [["gpt2", 124439808, "+0.25%"], ["bert", "-", "1.2e-03"]])
    lines = table.splitlines()
    assert lines[1] == "| :-- | --: | --: |"
    assert lines[2] == "| gpt2 | 124,439,808 | +0.25% |"
    assert lines[3] == "| bert | - | 1.2e-03 |"


def test_text_columns_stay_left_and_explicit_alignment_wins():
    assert markdown_table(["a", "b"], [["x", "1"]]).splitlines()[1] == "| :-- | --: |"
    assert markdown_table(["a", "b"], [["x", "1"]], "cl").splitlines()[1] == "| :-: | :-- |"
    assert markdown_table(["a"], [["-"]]).splitlines()[1] == "| :-- |"  # placeholders alone: text


def test_bad_shapes_are_rejected():
    with pytest.raises(ValueError, match="every row"):
        markdown_table(["a", "b"], [["x"]])
    with pytest.raises(ValueError, match="align"):
        markdown_table(["a"], [["x"]], "rr")
