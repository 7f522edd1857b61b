# Reference solutions of the scaling-laws assignment (instructor material, never given to students).
#
# One section per exercise, opened by "# %% <exercise label>". Otter-grader's markers apply:
# lines between "# BEGIN SOLUTION NO PROMPT" and "# END SOLUTION" are removed from the student
# notebook, and "name = value  # SOLUTION" becomes "name = ..." there. Each checkable part (see
# llmmath.check.describe) must be assigned by a "# SOLUTION" line. Run this file to check it.
import numpy as np

import llmmath

# %% scaling-laws-ex-kaplan
# BEGIN SOLUTION NO PROMPT
k = llmmath.KAPLAN_2020
# END SOLUTION
exponent = 1 / (1 + k.joint_alpha_n / k.joint_alpha_d)  # SOLUTION

# %% scaling-laws-ex-h100
# BEGIN SOLUTION NO PROMPT
h100 = llmmath.gpu_peak_flops("H100")
# END SOLUTION
days = llmmath.training_days(300e9, 174.6e9, 1024, h100, 0.40, recompute=True)  # SOLUTION
days_no_recompute = llmmath.training_days(300e9, 174.6e9, 1024, h100, 0.40)  # SOLUTION

# %% scaling-laws-ex-gopher
compute_ratio = (70e9 * 1.4e12) / (280e9 * 300e9)  # SOLUTION

# %% scaling-laws-ex-epochs
# BEGIN SOLUTION NO PROMPT
r_star = llmmath.MUENNIGHOFF_2023.r_d_star
# END SOLUTION
effective_tokens = llmmath.effective_data(4e11, 1e11)  # SOLUTION
epochs_half = 1 + r_star * np.log(2)  # SOLUTION

# %% scaling-laws-ex-data-optimum
# BEGIN SOLUTION NO PROMPT
plan = llmmath.data_constrained_optimum(1e22, 5e10)
# END SOLUTION
dc_n_params = plan.n_params  # SOLUTION
dc_epochs = plan.n_tokens / 5e10  # SOLUTION

# %% scaling-laws-ex-inference
# BEGIN SOLUTION NO PROMPT
law = llmmath.SARDANA_2024
d30 = llmmath.optimal_tokens_for_params(30e9, law)
opt = llmmath.inference_optimal(llmmath.chinchilla_loss(30e9, d30, law), 1e13, law)
# END SOLUTION
inf_n_params = opt.n_params  # SOLUTION
inf_saving = 1 - opt.total_flops / (6 * 30e9 * d30 + 2 * 30e9 * 1e13)  # SOLUTION

# %% scaling-laws-ex-frontier
# BEGIN SOLUTION NO PROMPT
b = llmmath.BESIROGLU_2024
# END SOLUTION
gamma = b.alpha * b.beta / (b.alpha + b.beta)  # SOLUTION
compute = llmmath.compute_for_loss(2.0, b)  # SOLUTION

# %% scaling-laws-ex-breakeven
# BEGIN SOLUTION NO PROMPT
n_l2 = llmmath.param_count(llmmath.preset("llama2-7b"))
# END SOLUTION
inference_tokens = llmmath.implied_inference_tokens(n_l2, 2e12, llmmath.BESIROGLU_2024)  # SOLUTION
