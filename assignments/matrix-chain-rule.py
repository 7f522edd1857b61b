# Reference solutions of the matrix-chain-rule assignment (instructor material, never given to
# students).
#
# One section per exercise, opened by "# %% <exercise label>". Otter-grader's markers apply:
# lines between "# BEGIN SOLUTION NO PROMPT" and "# END SOLUTION" are removed from the student
# notebook, a "# BEGIN SOLUTION" ... "# END SOLUTION" block becomes "..." there, and
# "name = value  # SOLUTION" becomes "name = ...". Each checkable part (see llmmath.check.describe)
# must be defined here. Exercises without a section get one "name = ..." line per part.
import numpy as np

import llmmath

# %% chain-ex-two-layers
bp_flops = llmmath.chain_flops([10, 1000, 100, 1000], "left")  # SOLUTION
other_flops = llmmath.chain_flops([10, 1000, 100, 1000], "right")  # SOLUTION

# %% chain-ex-eps
eps_opt = (3 * 2.0**-53) ** (1 / 3)  # SOLUTION

# %% chain-ex-forward-mode
# BEGIN SOLUTION NO PROMPT
widths, batch = (784, 128, 128, 10), 32
# one JVP: X dW_1 in layer 1 (the data has no tangent), dZ W + Z dW in the others
jvp = 2 * batch * widths[0] * widths[1] + sum(4 * batch * a * b for a, b in zip(widths[1:-1], widths[2:], strict=True))
# END SOLUTION
n_jvps = sum(a * b for a, b in zip(widths[:-1], widths[1:], strict=True))  # SOLUTION
jvp_flops = jvp  # SOLUTION
forward_mode_flops = n_jvps * jvp_flops  # SOLUTION

# %% chain-ex-softmax
# BEGIN SOLUTION


def softmax_vjp(y, dy):
    return y * (dy - np.sum(dy * y, axis=-1, keepdims=True))


# END SOLUTION
dense_ratio = (2 * 4096**2) / (4 * 4096)  # SOLUTION

# %% chain-ex-layernorm
# BEGIN SOLUTION


def layer_norm_dx(x, mean, inv_std, gamma, dy):
    x_hat = (x - mean) * inv_std
    g = gamma * dy
    return inv_std * (g - g.mean(axis=-1, keepdims=True) - x_hat * (g * x_hat).mean(axis=-1, keepdims=True))


# END SOLUTION
saved_bytes = 4 * (1024 * llmmath.preset("gpt2").hidden_size + 2 * 1024)  # SOLUTION
