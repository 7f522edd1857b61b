"""Checkable exercises of the chapter ``forward-backward-cost``.

The chapter "Forward and backward cost" (``chapters/forward-backward-cost.ipynb``). Registered by
:mod:`llmmath.check` under the chapter's slug (this module's name with hyphens). Each part computes
its expected value with llmmath when an answer is checked: no answer is stored here.
"""

from __future__ import annotations

from ..check import SIG3, Exercise, Part
from ..mlp import uniform_mlp_flops


def _bottleneck_ratio() -> float:
    fl = uniform_mlp_flops(1, 1, 64, 10, n_in=4096)
    return fl.backward / fl.forward


def _depth_for_ratio() -> int:
    n = 1
    while (fl := uniform_mlp_flops(n, 1, 100, 100)).backward / fl.forward < 1.9:
        n += 1
    return n


EXERCISES = [
    Exercise("fb-ex-bottleneck", "fb-ratio", "The ratio backward / forward",
             "M_in = 4096 inputs, J = 1 hidden layer of width M = 64, M_out = 10 outputs; the input is data.",
             (Part("ratio", "backward FLOPs / forward FLOPs", _bottleneck_ratio, SIG3),)),
    Exercise("fb-ex-depth", "fb-ratio", "The ratio backward / forward",
             "M_in = M_out = M; the input is data.",
             (Part("n_hidden", "the smallest number J of hidden layers with ratio >= 1.9", _depth_for_ratio),)),
]


# The questions of checkable exercises that are graded by hand (the assignments collect them).
WRITTEN = {
    'fb-ex-bottleneck': (
        "What does the ratio say about using \"backward = 2 x forward\" for shallow models?",
    ),
}

# The chapter's exercises without a checkable part: graded by hand only.
HAND_GRADED = ('fb-ex-three-layer', 'fb-ex-input-grad', 'fb-ex-seed-six', 'fb-ex-update', 'fb-ex-recompute')
