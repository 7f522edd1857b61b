"""Checkable exercises of the chapter ``scaling-laws``.

The chapter "Scaling laws: how big a model, how much data" (``chapters/scaling-laws.ipynb``).
Registered by :mod:`llmmath.check` under the chapter's slug (this module's name with hyphens). Each
part computes its expected value with llmmath when an answer is checked: no answer is stored here.
"""

from __future__ import annotations

import math

from ..check import SIG3, Exercise, Part
from ..flops import approx_training_flops, training_days
from ..hardware import gpu_peak_flops
from ..params import param_count
from ..presets import preset
from ..scaling import (
    BESIROGLU_2024,
    KAPLAN_2020,
    MUENNIGHOFF_2023,
    SARDANA_2024,
    chinchilla_loss,
    compute_for_loss,
    data_constrained_optimum,
    effective_data,
    implied_inference_tokens,
    inference_optimal,
    optimal_tokens_for_params,
)


def _gpt3_h100_days(recompute: bool) -> float:
    return training_days(300e9, 174.6e9, 1024, gpu_peak_flops("H100"), 0.40, recompute=recompute)


def _gopher_ratio() -> float:
    return approx_training_flops(70e9, 1.4e12) / approx_training_flops(280e9, 300e9)


def _kaplan_exponent() -> float:
    return 1 / (1 + KAPLAN_2020.joint_alpha_n / KAPLAN_2020.joint_alpha_d)


def _epochs(what: str) -> float:
    if what == "effective":
        return effective_data(4e11, 1e11)
    return 1 + MUENNIGHOFF_2023.r_d_star * math.log(2)  # R_D with exp(-R_D / R_D*) = 1/2, plus 1


def _data_optimum(what: str) -> float:
    plan = data_constrained_optimum(1e22, 5e10)
    return plan.n_params if what == "n" else plan.n_tokens / 5e10


def _sardana_30b(what: str) -> float:
    n0, d_inf = 30e9, 1e13
    d0 = optimal_tokens_for_params(n0, SARDANA_2024)
    opt = inference_optimal(chinchilla_loss(n0, d0, SARDANA_2024), d_inf, SARDANA_2024)
    baseline = 6 * n0 * d0 + 2 * n0 * d_inf
    return opt.n_params if what == "n" else 1 - opt.total_flops / baseline


def _frontier(what: str) -> float:
    law = BESIROGLU_2024
    return law.alpha * law.beta / (law.alpha + law.beta) if what == "gamma" else compute_for_loss(2.0, law)


def _llama2_breakeven() -> float:
    return implied_inference_tokens(param_count(preset("llama2-7b")), 2e12, BESIROGLU_2024)


EXERCISES = [
    Exercise("scaling-laws-ex-h100", "scaling-laws-time", "From compute to days",
             "174.6e9 parameters, 300e9 tokens, 1024 H100 (BF16), 40% utilisation.",
             (Part("days", "training days with recomputation", lambda: _gpt3_h100_days(True), SIG3),
              Part("days_no_recompute", "training days without it", lambda: _gpt3_h100_days(False), SIG3))),
    Exercise("scaling-laws-ex-gopher", "scaling-laws-chinchilla", "Chinchilla: equal scaling",
             "Chinchilla 70e9 x 1.4e12 tokens, Gopher 280e9 x 300e9 tokens.",
             (Part("compute_ratio", "Chinchilla's 6ND / Gopher's 6ND", _gopher_ratio, SIG3),)),
    Exercise("scaling-laws-ex-kaplan", "scaling-laws-kaplan", "Kaplan et al.: loss as a power law",
             "The joint law's Table 2 constants.",
             (Part("exponent", "the exponent of C in N*", _kaplan_exponent, SIG3),)),
    Exercise("scaling-laws-ex-epochs", "scaling-laws-data", "Running out of data: repeated epochs",
             "Muennighoff et al.'s constants; 1e11 unique tokens.",
             (Part("effective_tokens", "D' for 4e11 training tokens (four epochs)", lambda: _epochs("effective"), SIG3),
              Part("epochs_half", "epochs after which the next repetition is worth half a fresh token",
                 lambda: _epochs("half"), SIG3))),
    Exercise("scaling-laws-ex-data-optimum", "scaling-laws-data", "Running out of data: repeated epochs",
             "Muennighoff et al.'s law, C = 1e22 FLOPs, 5e10 unique tokens.",
             (Part("dc_n_params", "the loss-minimising model size", lambda: _data_optimum("n"), SIG3),
              Part("dc_epochs", "its number of epochs D / U", lambda: _data_optimum("epochs"), SIG3))),
    Exercise("scaling-laws-ex-inference", "scaling-laws-inference", "Paying for inference",
             "Sardana et al.'s constants; the loss of a Chinchilla-optimal 30e9-parameter model; 1e13 "
             "inference tokens.",
             (Part("inf_n_params", "the parameters of the lifetime-optimal model", lambda: _sardana_30b("n"), SIG3),
              Part("inf_saving", "its saving in total FLOPs, as a fraction of the 30B model's",
                 lambda: _sardana_30b("saving"), SIG3))),
    Exercise("scaling-laws-ex-frontier", "scaling-laws-frontier", "The loss frontier",
             "Besiroglu et al.'s constants.",
             (Part("gamma", "the exponent gamma of L* - E = K (C/6)^-gamma", lambda: _frontier("gamma"), SIG3),
              Part("compute", "the FLOPs whose optimum reaches a loss of 2.0", lambda: _frontier("compute"), SIG3))),
    Exercise("scaling-laws-ex-breakeven", "scaling-laws-inference", "Paying for inference",
             "Llama 2 7B (the preset's parameter count), 2e12 training tokens, Besiroglu et al.'s constants.",
             (Part("inference_tokens", "the inference tokens for which its training is lifetime-optimal",
                 _llama2_breakeven, SIG3),)),
]


# The questions of checkable exercises that are graded by hand (the assignments collect them).
WRITTEN = {
    'scaling-laws-ex-kaplan': (
        "Derive $N^* \\propto C^{1/(1 + \\alpha_N/\\alpha_D)}$. Why is the exponent not that of Kaplan et al.'s "
        "own compute-efficient frontier?",
    ),
    'scaling-laws-ex-gopher': (
        "Compare the predicted losses of the two models with Hoffmann et al.'s printed constants and with the"
        " Besiroglu et al. refit.",
    ),
    'scaling-laws-ex-data-optimum': (
        "Compare with the compute-optimal run of the same law with unlimited data.",
    ),
    'scaling-laws-ex-frontier': (
        "Show that at the optimum the two penalty terms are in the ratio $\\beta/\\alpha$ and both scale as "
        "$C^{-\\gamma}$.",
    ),
    'scaling-laws-ex-breakeven': (
        "Why do the answers under the two sets of constants differ so much?",
    ),
}

# The chapter's exercises without a checkable part: graded by hand only.
HAND_GRADED = ('scaling-laws-ex-fit', 'scaling-laws-ex-tpp', 'scaling-laws-ex-llama', 'scaling-laws-ex-13h2')
