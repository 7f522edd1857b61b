"""Checkable exercises of the chapter ``optimizers``.

The chapter "Optimizers: update rules, state and memory" (``chapters/optimizers.ipynb``). Registered
by :mod:`llmmath.check` under the chapter's slug (this module's name with hyphens). Each part
computes its expected value with llmmath when an answer is checked: no answer is stored here.
"""

from __future__ import annotations

import math

import numpy as np

from ..check import SIG3, Exercise, Part
from ..optim import (
    adam_update_bound,
    bias_correction_factor,
    clip_grad_norm,
    cosine_schedule,
    ema_horizon,
    gd_optimal,
    heavy_ball_optimal,
    max_stable_lr,
    state_bytes_per_param,
    wsd_schedule,
)


def _adamw_memory(what: str) -> float:
    bpp = 2 + 2 + 4 + state_bytes_per_param("adamw")
    if what == "bpp":
        return bpp
    if what == "gib":
        return 7 * 10**9 * bpp / 2**30
    return 7 * 10**9 * (state_bytes_per_param("adamw") - state_bytes_per_param("adamw", 1)) / 2**30


def _first_step(beta2: float, at_max: bool) -> float:
    ratios = [bias_correction_factor(0.9, t) / math.sqrt(bias_correction_factor(beta2, t)) for t in range(1, 5001)]
    return max(ratios) if at_max else ratios[0]


def _hb_steps(kappa: float, method: str) -> float:
    rate = gd_optimal(1.0, kappa)[1] if method == "gd" else heavy_ball_optimal(1.0, kappa)[2]
    return math.log(1e6) / -math.log(rate)


def _hb_max_lr() -> float:
    return max_stable_lr(50.0, 0.9)


def _llama_schedule(kind: str, step: int) -> float:
    peak, total, warmup = 3e-4, 250_000, 2000
    if kind == "wsd":
        return wsd_schedule(step, peak, total, total // 10, warmup, 0.1 * peak)
    return cosine_schedule(step, peak, total, warmup, 0.1 * peak)


def _clip_example(what: str) -> float:
    clipped, norm = clip_grad_norm([np.array([3.0, 4.0]), np.array([12.0])], 1.0)
    return norm if what == "norm" else float(clipped[0][0])


def _beta2(what: str) -> float:
    # beta2 = 0.98 and 0.9999: the chapter's text works 0.95, 0.99 and 0.999 out, so these are new
    return {"horizon_098": lambda: ema_horizon(0.98), "bound_098": lambda: adam_update_bound(0.9, 0.98),
            "bound_09999": lambda: adam_update_bound(0.9, 0.9999), "growth_09999": lambda: 0.9999 / 0.9}[what]()


EXERCISES = [
    Exercise("optim-ex-memory", "optim-memory", "State memory", "7e9 parameters, AdamW, mixed precision.",
             (Part("bytes_per_param", "bytes per parameter", lambda: _adamw_memory("bpp")),
              Part("gib", "total GiB (2^30 bytes)", lambda: _adamw_memory("gib"), SIG3),
              Part("saved_gib", "GiB saved by 8-bit moments", lambda: _adamw_memory("saved"), SIG3))),
    Exercise("optim-ex-first-step", "optim-bias", "Bias correction", "beta1 = 0.9, t = 1 ... 5000.",
             (Part("t1_095", "the step / eta at t = 1 for beta2 = 0.95", lambda: _first_step(0.95, False), SIG3),
              Part("max_099", "its maximum over t for beta2 = 0.99", lambda: _first_step(0.99, True), SIG3),
              Part("max_095", "its maximum over t for beta2 = 0.95", lambda: _first_step(0.95, True), SIG3))),
    Exercise("optim-ex-hb-stability", "optim-quadratic", "How large a step, how much momentum",
             "The quadratic (x1^2 + 50 x2^2) / 2, momentum mu = 0.9.",
             (Part("max_lr", "the largest stable learning rate of the heavy ball", _hb_max_lr, SIG3),)),
    Exercise("optim-ex-hb-steps", "optim-quadratic", "How large a step, how much momentum",
             "Best parameters for each method; steps = ln(1e6) / -ln(rate), not rounded.",
             (Part("steps_gd_50", "gradient descent, kappa = 50", lambda: _hb_steps(50.0, "gd"), SIG3),
              Part("steps_hb_50", "heavy ball, kappa = 50", lambda: _hb_steps(50.0, "hb"), SIG3),
              Part("steps_gd_1e4", "gradient descent, kappa = 1e4", lambda: _hb_steps(1e4, "gd"), SIG3),
              Part("steps_hb_1e4", "heavy ball, kappa = 1e4", lambda: _hb_steps(1e4, "hb"), SIG3))),
    Exercise("optim-ex-schedule", "optim-schedules", "Learning-rate schedules and gradient clipping",
             "Peak 3e-4, 2000 warmup steps, T = 250000, final rate 3e-5; WSD decays over the last 25000.",
             (Part("lr_cosine_mid", "cosine schedule at step 125000", lambda: _llama_schedule("cosine", 125_000), SIG3),
              Part("lr_wsd_mid", "WSD at step 125000", lambda: _llama_schedule("wsd", 125_000), SIG3),
              Part("lr_cosine_last", "cosine schedule at step 249999",
                 lambda: _llama_schedule("cosine", 249_999), SIG3))),
    Exercise("optim-ex-clip", "optim-schedules", "Learning-rate schedules and gradient clipping",
             "Gradients (3, 4) and (12), max_norm = 1, PyTorch's eps = 1e-6.",
             (Part("norm", "the global norm before clipping", lambda: _clip_example("norm"), SIG3),
              Part("first", "the first coordinate after clipping", lambda: _clip_example("first"), SIG3))),
    Exercise("optim-ex-beta2", "optim-beta2", "Why large models use beta2 = 0.95", "beta1 = 0.9.",
             (Part("horizon_098", "averaging horizon for beta2 = 0.98", lambda: _beta2("horizon_098"), SIG3),
              Part("bound_098", "largest step / eta for beta2 = 0.98", lambda: _beta2("bound_098"), SIG3),
              Part("bound_09999", "largest step / eta for beta2 = 0.9999", lambda: _beta2("bound_09999"), SIG3),
              Part("growth_09999", "growth factor per step of the extremal gradient for beta2 = 0.9999",
                 lambda: _beta2("growth_09999"), SIG3))),
]


# The questions of checkable exercises that are graded by hand (the assignments collect them).
WRITTEN = {
    'optim-ex-first-step': (
        "Derive the step of Adam without bias correction for a constant gradient. Which setting needs the "
        "correction more?",
    ),
    'optim-ex-hb-stability': (
        "Prove the stability condition $0 < \\eta\\lambda_i < 2(1+\\mu)$, and compare the largest stable $\\eta$ "
        "with gradient descent's.",
    ),
    'optim-ex-hb-steps': (
        "How do the step counts grow with $\\kappa$?",
    ),
    'optim-ex-schedule': (
        "Show that WSD with $S = T - W$ is the linear schedule.",
    ),
    'optim-ex-clip': (
        "What is the global norm of the 7B model's gradient (root mean square $10^{-4}$ per coordinate), and "
        "is it clipped at 1.0?",
    ),
    'optim-ex-beta2': (
        "Why does $\\beta_1^2 \\ge \\beta_2$ make Adam's step unbounded?",
    ),
}

# The chapter's exercises without a checkable part: graded by hand only.
HAND_GRADED = (
    'optim-ex-ema-equivalence',
    'optim-ex-sign',
    'optim-ex-fp16-threshold',
    'optim-ex-eps-equivalent',
    'optim-ex-decay-halflife',
)
