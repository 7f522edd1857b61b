# Reference solutions of the optimizers assignment (instructor material, never given to students).
#
# One section per exercise, opened by "# %% <exercise label>". Otter-grader's markers apply:
# lines between "# BEGIN SOLUTION NO PROMPT" and "# END SOLUTION" are removed from the student
# notebook, and "name = value  # SOLUTION" becomes "name = ..." there. Each checkable part (see
# llmmath.check.describe) must be assigned by a "# SOLUTION" line. Run this file to check it.
import numpy as np

import llmmath

# %% optim-ex-memory
# BEGIN SOLUTION NO PROMPT
P = 7 * 10**9
moments = llmmath.state_bytes_per_param("adamw")  # two FP32 moments
# END SOLUTION
bytes_per_param = 2 + 2 + 4 + moments  # SOLUTION
gib = P * bytes_per_param / 2**30  # SOLUTION
saved_gib = P * (moments - llmmath.state_bytes_per_param("adamw", 1)) / 2**30  # SOLUTION

# %% optim-ex-first-step
# BEGIN SOLUTION NO PROMPT
t = np.arange(1, 5001)


def uncorrected(beta2):
    # m_t / sqrt(v_t) for a constant gradient: (1 - beta1^t) / sqrt(1 - beta2^t)
    return (1 - 0.9**t) / np.sqrt(1 - beta2**t)


# END SOLUTION
t1_095 = float(uncorrected(0.95)[0])  # SOLUTION
max_099 = float(uncorrected(0.99).max())  # SOLUTION
max_095 = float(uncorrected(0.95).max())  # SOLUTION

# %% optim-ex-hb-stability
# BEGIN SOLUTION NO PROMPT
# roots of z^2 - (1 + mu - eta lambda) z + mu inside the unit circle iff 0 < eta lambda < 2 (1 + mu)
lam_max, mu = 50.0, 0.9
# END SOLUTION
max_lr = 2 * (1 + mu) / lam_max  # SOLUTION

# %% optim-ex-hb-steps
# BEGIN SOLUTION NO PROMPT

def steps(rate):
    return np.log(1e6) / -np.log(rate)


def gd_rate(kappa):
    return (kappa - 1) / (kappa + 1)


def hb_rate(kappa):
    return (np.sqrt(kappa) - 1) / (np.sqrt(kappa) + 1)


# END SOLUTION
steps_gd_50 = steps(gd_rate(50))  # SOLUTION
steps_hb_50 = steps(hb_rate(50))  # SOLUTION
steps_gd_1e4 = steps(gd_rate(1e4))  # SOLUTION
steps_hb_1e4 = steps(hb_rate(1e4))  # SOLUTION

# %% optim-ex-schedule
# BEGIN SOLUTION NO PROMPT
peak, total, warmup, final = 3e-4, 250_000, 2000, 3e-5
# END SOLUTION
lr_cosine_mid = llmmath.cosine_schedule(125_000, peak, total, warmup, final)  # SOLUTION
lr_wsd_mid = llmmath.wsd_schedule(125_000, peak, total, total // 10, warmup, final)  # SOLUTION
lr_cosine_last = llmmath.cosine_schedule(total - 1, peak, total, warmup, final)  # SOLUTION

# %% optim-ex-clip
# BEGIN SOLUTION NO PROMPT
clipped, total_norm = llmmath.clip_grad_norm([np.array([3.0, 4.0]), np.array([12.0])], 1.0)
# END SOLUTION
norm = total_norm  # SOLUTION
first = float(clipped[0][0])  # SOLUTION

# %% optim-ex-beta2
# BEGIN SOLUTION NO PROMPT

def bound(beta1, beta2):
    # Cauchy-Schwarz: (1 - beta1) / sqrt((1 - beta2) (1 - beta1^2 / beta2))
    return (1 - beta1) / np.sqrt((1 - beta2) * (1 - beta1**2 / beta2))


# END SOLUTION
horizon_098 = 1 / (1 - 0.98)  # SOLUTION
bound_098 = bound(0.9, 0.98)  # SOLUTION
bound_09999 = bound(0.9, 0.9999)  # SOLUTION
growth_09999 = 0.9999 / 0.9  # SOLUTION
