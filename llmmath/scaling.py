"""Scaling laws: loss as a function of parameters N, tokens D and compute C, and the compute-optimal
split of a budget between N and D.

Two families of published laws, stored as frozen dataclasses with their source:

* Kaplan et al. (2020): power laws ``L(N) = (N_c/N)^alpha_N``, ``L(D) = (D_c/D)^alpha_D``, the joint
  ``L(N, D) = [(N_c/N)^(alpha_N/alpha_D) + D_c/D]^alpha_D`` and the compute-efficient allocation
  ``N_opt = 1.3e9 C^0.73``, ``D_opt = 2e10 C^0.27`` (C in PF-days, N without embeddings).
* Hoffmann et al. (2022), "Chinchilla": ``L(N, D) = E + A/N^alpha + B/D^beta`` (approach 3) with
  the closed-form optimum under ``C = k N D`` and the loss frontier ``L*(C)``; the refit of
  Besiroglu et al. (2024); the approach-1 table of compute-optimal sizes (Table 3).
* Muennighoff et al. (2023): repeated data and excess parameters (effective data ``D'`` and
  parameters ``N'``) and the compute-optimal run when unique data is limited.
* Sardana et al. (2024): the model that reaches a target loss with the fewest training plus
  inference FLOPs.

Every function accepts numpy arrays wherever it accepts scalars (broadcasting) and returns a
``float`` for scalar input. Non-positive or non-finite N, D or C raise ``ValueError``.
The compute of a run is always ``C = k N D`` from :func:`llmmath.flops.approx_training_flops`.

Derived in chapter :doc:`/chapters/scaling-laws`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._validate import check_array_positive, check_fraction, check_int, check_positive
from .flops import SECONDS_PER_DAY, approx_training_flops

__all__ = [
    "PF_DAY",
    "KaplanLaw",
    "KAPLAN_2020",
    "ChinchillaLaw",
    "HOFFMANN_2022",
    "HOFFMANN_2022_UNROUNDED",
    "BESIROGLU_2024",
    "CHINCHILLA_TABLE3",
    "TrainingRun",
    "TRAINING_RUNS",
    "TrainingPlan",
    "kaplan_loss_params",
    "kaplan_loss_tokens",
    "kaplan_loss",
    "kaplan_loss_compute",
    "kaplan_optimal_params",
    "kaplan_optimal_tokens",
    "kaplan_critical_batch",
    "kaplan_frontier_batch",
    "kaplan_frontier_steps",
    "chinchilla_loss",
    "isoflop_loss",
    "optimal_exponents",
    "compute_optimal_params",
    "compute_optimal_tokens",
    "compute_optimal_tokens_per_param",
    "compute_optimal_loss",
    "compute_for_loss",
    "optimal_params_for_tokens",
    "optimal_tokens_for_params",
    "isoloss_tokens",
    "DataConstrainedLaw",
    "MUENNIGHOFF_2023",
    "effective_data",
    "effective_params",
    "data_constrained_loss",
    "data_constrained_optimum",
    "SARDANA_2024",
    "InferenceOptimum",
    "inference_optimal",
    "implied_inference_tokens",
    "HOFFMANN_FIT_GRID",
    "fit_power_law",
    "fit_chinchilla_law",
    "plan_training_run",
]

#: One petaflop/s-day in FLOPs: ``1e15 * 86400`` (Kaplan et al.'s unit of compute).
PF_DAY: float = 1e15 * SECONDS_PER_DAY

ArrayLike = Any  # a float or anything np.asarray turns into an array of floats


def _out(x: np.ndarray) -> float | np.ndarray:
    """A 0-d result as a Python float, anything else unchanged."""
    return float(x) if np.ndim(x) == 0 else x


def _law(law: Any, kind: type) -> Any:
    if not isinstance(law, kind):
        raise TypeError(f"law must be a {kind.__name__}, got {type(law).__name__}")
    return law


def _k(flops_per_param_token: float) -> float:
    """``k`` of ``C = k N D``: the FLOPs of one parameter on one token, taken from
    :func:`llmmath.flops.approx_training_flops` (the single home of ``6ND``)."""
    return float(approx_training_flops(1.0, 1.0, flops_per_param_token))


# ---------------------------------------------------------------------------------------------
# Kaplan et al. (2020)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KaplanLaw:
    """Constants of Kaplan et al. (2020). ``N`` counts non-embedding parameters, ``D`` tokens,
    losses are in nats per token on WebText2 with the GPT-2 tokenizer (their constants
    "do not have a fundamental meaning" outside that setup).

    ``alpha_n, n_c, alpha_d, d_c, alpha_c, c_c``: the one-variable laws, eqs. (1.1)-(1.3), with
    ``c_c`` in PF-days. ``joint_*``: the fit of the joint law eq. (1.5), Table 2.
    ``opt_n_coef, opt_n_exp, opt_d_coef, opt_d_exp``: the compute-efficient frontier, eq. (1.7)
    and Figure 14 / Table 6: ``N_opt = opt_n_coef * C^opt_n_exp`` (C in PF-days).
    ``b_star, alpha_b``: the critical batch ``B_crit(L) = B_* / L^(1/alpha_B)`` in tokens, eq. (1.4)
    with the Table 5 values; ``s_c, alpha_s``: the steps term of ``L(N, S_min)``, eq. (1.6).
    ``opt_b_coef, opt_b_exp, opt_s_coef, opt_s_exp``: ``B_crit`` (tokens) and ``S_min`` (steps) on
    the compute-efficient frontier, Table 6 (C in PF-days).
    """

    alpha_n: float
    n_c: float
    alpha_d: float
    d_c: float
    alpha_c: float
    c_c: float
    joint_alpha_n: float
    joint_alpha_d: float
    joint_n_c: float
    joint_d_c: float
    opt_n_coef: float
    opt_n_exp: float
    opt_d_coef: float
    opt_d_exp: float
    b_star: float
    alpha_b: float
    s_c: float
    alpha_s: float
    opt_b_coef: float
    opt_b_exp: float
    opt_s_coef: float
    opt_s_exp: float
    name: str = "Kaplan et al. (2020)"
    source: str = ""

    def __post_init__(self) -> None:
        for f in ("alpha_n", "n_c", "alpha_d", "d_c", "alpha_c", "c_c", "joint_alpha_n", "joint_alpha_d",
                  "joint_n_c", "joint_d_c", "opt_n_coef", "opt_n_exp", "opt_d_coef", "opt_d_exp",
                  "b_star", "alpha_b", "s_c", "alpha_s", "opt_b_coef", "opt_b_exp", "opt_s_coef", "opt_s_exp"):
            check_positive(f, getattr(self, f))


KAPLAN_2020 = KaplanLaw(
    alpha_n=0.076, n_c=8.8e13, alpha_d=0.095, d_c=5.4e13, alpha_c=0.050, c_c=3.1e8,
    joint_alpha_n=0.076, joint_alpha_d=0.103, joint_n_c=6.4e13, joint_d_c=1.8e13,
    opt_n_coef=1.3e9, opt_n_exp=0.73, opt_d_coef=2e10, opt_d_exp=0.27,
    b_star=2.1e8, alpha_b=0.21, s_c=2.1e3, alpha_s=0.76,
    opt_b_coef=2.0e6, opt_b_exp=0.24, opt_s_coef=5.4e3, opt_s_exp=0.03,
    source="Kaplan et al. (2020): eqs. (1.1)-(1.6), Table 2 (joint fit), Table 5 (B_*, alpha_B, S_c, "
           "alpha_S), Figure 14 and Table 6 (compute-efficient N, B_crit, S_min and D, C in PF-days)",
)


def kaplan_loss_params(n_params: ArrayLike, law: KaplanLaw = KAPLAN_2020) -> float | np.ndarray:
    """Kaplan's ``L(N) = (N_c / N)^alpha_N``: converged loss of a model with ``N`` non-embedding
    parameters trained on enough data (eq. 1.1). Derived in chapter :doc:`/chapters/scaling-laws`."""
    law = _law(law, KaplanLaw)
    n = check_array_positive("n_params", n_params)
    return _out((law.n_c / n) ** law.alpha_n)


def kaplan_loss_tokens(n_tokens: ArrayLike, law: KaplanLaw = KAPLAN_2020) -> float | np.ndarray:
    """Kaplan's ``L(D) = (D_c / D)^alpha_D``: loss of a large model early-stopped on ``D`` tokens
    (eq. 1.2). Derived in chapter :doc:`/chapters/scaling-laws`."""
    law = _law(law, KaplanLaw)
    d = check_array_positive("n_tokens", n_tokens)
    return _out((law.d_c / d) ** law.alpha_d)


def kaplan_loss(n_params: ArrayLike, n_tokens: ArrayLike, law: KaplanLaw = KAPLAN_2020) -> float | np.ndarray:
    """Kaplan's joint law ``L(N, D) = [(N_c/N)^(alpha_N/alpha_D) + D_c/D]^alpha_D`` (eq. 1.5)
    with the Table 2 constants; ``N`` non-embedding parameters, ``D`` tokens, early stopping.
    Derived in chapter :doc:`/chapters/scaling-laws`."""
    law = _law(law, KaplanLaw)
    n = check_array_positive("n_params", n_params)
    d = check_array_positive("n_tokens", n_tokens)
    a_n, a_d = law.joint_alpha_n, law.joint_alpha_d
    return _out(((law.joint_n_c / n) ** (a_n / a_d) + law.joint_d_c / d) ** a_d)


def kaplan_loss_compute(compute: ArrayLike, law: KaplanLaw = KAPLAN_2020) -> float | np.ndarray:
    """Kaplan's ``L(C_min) = (C_c / C_min)^alpha_C`` (eq. 1.3): the best loss reachable with
    ``compute`` FLOPs (converted to PF-days, :data:`PF_DAY`) at the compute-efficient allocation.
    Derived in chapter :doc:`/chapters/scaling-laws`."""
    law = _law(law, KaplanLaw)
    c = check_array_positive("compute", compute) / PF_DAY
    return _out((law.c_c / c) ** law.alpha_c)


def kaplan_optimal_params(compute: ArrayLike, law: KaplanLaw = KAPLAN_2020) -> float | np.ndarray:
    """Kaplan's compute-efficient model size ``N_opt = 1.3e9 * (C / PF-day)^0.73`` non-embedding
    parameters (Figure 14). Derived in chapter :doc:`/chapters/scaling-laws`."""
    law = _law(law, KaplanLaw)
    c = check_array_positive("compute", compute) / PF_DAY
    return _out(law.opt_n_coef * c**law.opt_n_exp)


def kaplan_optimal_tokens(compute: ArrayLike, law: KaplanLaw = KAPLAN_2020) -> float | np.ndarray:
    """Kaplan's compute-efficient data size ``D_opt = 2e10 * (C / PF-day)^0.27`` tokens
    (Table 6). Derived in chapter :doc:`/chapters/scaling-laws`."""
    law = _law(law, KaplanLaw)
    c = check_array_positive("compute", compute) / PF_DAY
    return _out(law.opt_d_coef * c**law.opt_d_exp)


def kaplan_critical_batch(loss: ArrayLike, law: KaplanLaw = KAPLAN_2020) -> float | np.ndarray:
    """Kaplan's critical batch size ``B_crit(L) = B_* / L^(1/alpha_B)`` in tokens (eq. 1.4, Table 5
    constants ``B_* = 2.1e8``, ``alpha_B = 0.21``) at a loss of ``loss`` nats per token (WebText2).
    Derived in chapter :doc:`/chapters/scaling-laws`."""
    law = _law(law, KaplanLaw)
    loss_ = check_array_positive("loss", loss)
    return _out(law.b_star / loss_ ** (1.0 / law.alpha_b))


def kaplan_frontier_batch(compute: ArrayLike, law: KaplanLaw = KAPLAN_2020) -> float | np.ndarray:
    """``B_crit = 2.0e6 * (C_min / PF-day)^0.24`` tokens: the critical batch along Kaplan's
    compute-efficient frontier (Table 6). Derived in chapter :doc:`/chapters/scaling-laws`."""
    law = _law(law, KaplanLaw)
    c = check_array_positive("compute", compute) / PF_DAY
    return _out(law.opt_b_coef * c**law.opt_b_exp)


def kaplan_frontier_steps(compute: ArrayLike, law: KaplanLaw = KAPLAN_2020) -> float | np.ndarray:
    """``S_min = 5.4e3 * (C_min / PF-day)^0.03`` steps: the minimal number of optimizer steps along
    Kaplan's compute-efficient frontier (Table 6); a run at ``B = B_crit`` takes ``2 S_min`` steps
    and ``2 C_min`` FLOPs (their eq. 5.4). Derived in chapter :doc:`/chapters/scaling-laws`."""
    law = _law(law, KaplanLaw)
    c = check_array_positive("compute", compute) / PF_DAY
    return _out(law.opt_s_coef * c**law.opt_s_exp)


# ---------------------------------------------------------------------------------------------
# Hoffmann et al. (2022) and its refit
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChinchillaLaw:
    """Constants of ``L(N, D) = E + A / N^alpha + B / D^beta`` (Hoffmann et al. 2022, eq. 2).

    ``N`` counts all parameters, ``D`` training tokens (one epoch), ``L`` is in nats per token on
    the authors' MassiveText. ``E`` is the irreducible loss, ``A/N^alpha`` the penalty of a finite
    model, ``B/D^beta`` the penalty of finite data.
    """

    E: float
    A: float
    B: float
    alpha: float
    beta: float
    name: str = "custom"
    source: str = ""

    def __post_init__(self) -> None:
        for f in ("E", "A", "B", "alpha", "beta"):
            check_positive(f, getattr(self, f), allow_zero=(f == "E"))
        for f in ("name", "source"):
            if not isinstance(getattr(self, f), str):
                raise TypeError(f"{f} must be a string, got {getattr(self, f)!r}")


HOFFMANN_2022 = ChinchillaLaw(
    E=1.69, A=406.4, B=410.7, alpha=0.34, beta=0.28, name="Hoffmann et al. (2022)",
    source="Hoffmann et al. (2022), approach 3 (section 3.3, eq. 2; fitted values in Appendix D.2), as printed",
)
HOFFMANN_2022_UNROUNDED = ChinchillaLaw(
    E=1.6934, A=406.4, B=410.7, alpha=0.3392, beta=0.2849, name="Hoffmann et al. (2022), unrounded",
    source="Hoffmann et al. (2022) approach 3 with the unrounded E, alpha, beta of their fit, "
           "as reported by Besiroglu et al. (2024)",
)
BESIROGLU_2024 = ChinchillaLaw(
    E=1.8172, A=482.01, B=2085.43, alpha=0.3478, beta=0.3658, name="Besiroglu et al. (2024)",
    source="Besiroglu et al. (2024): refit of approach 3 on data reconstructed from Hoffmann et al.'s Figure 4",
)

#: Hoffmann et al. (2022), Table 3 (approach 1): (parameters, FLOPs, tokens) of the compute-optimal
#: model for each budget, as printed: parameters as round numbers ("400 Million", "67 Billion"),
#: FLOPs to 3 significant figures, tokens to one decimal in billions or trillions ("8.0 Billion",
#: "1.5 Trillion", "216.2 Trillion": 2 to 4 significant figures).
CHINCHILLA_TABLE3: tuple[tuple[float, float, float], ...] = (
    (400e6, 1.92e19, 8.0e9),
    (1e9, 1.21e20, 20.2e9),
    (10e9, 1.23e22, 205.1e9),
    (67e9, 5.76e23, 1.5e12),
    (175e9, 3.85e24, 3.7e12),
    (280e9, 9.90e24, 5.9e12),
    (520e9, 3.43e25, 11.0e12),
    (1e12, 1.27e26, 21.2e12),
    (10e12, 1.30e28, 216.2e12),
)


def chinchilla_loss(n_params: ArrayLike, n_tokens: ArrayLike,
                    law: ChinchillaLaw = HOFFMANN_2022) -> float | np.ndarray:
    """``L(N, D) = E + A / N^alpha + B / D^beta`` (Hoffmann et al. 2022, eq. 2): predicted final
    loss of an ``N``-parameter model trained on ``D`` tokens (single epoch, cosine schedule matched
    to ``D``). Derived in chapter :doc:`/chapters/scaling-laws`."""
    law = _law(law, ChinchillaLaw)
    n = check_array_positive("n_params", n_params)
    d = check_array_positive("n_tokens", n_tokens)
    return _out(law.E + law.A * n ** (-law.alpha) + law.B * d ** (-law.beta))


def isoflop_loss(compute: ArrayLike, n_params: ArrayLike, law: ChinchillaLaw = HOFFMANN_2022,
                 flops_per_param_token: float = 6) -> float | np.ndarray:
    """Loss on the isoFLOP curve ``L(N, C / (k N))``: the budget ``C`` spent on an ``N``-parameter
    model, which then sees ``D = C / (k N)`` tokens. Derived in chapter :doc:`/chapters/scaling-laws`."""
    c = check_array_positive("compute", compute)
    n = check_array_positive("n_params", n_params)
    return chinchilla_loss(n, c / (_k(flops_per_param_token) * n), law)


def optimal_exponents(law: ChinchillaLaw = HOFFMANN_2022) -> tuple[float, float]:
    """``(a, b) = (beta / (alpha + beta), alpha / (alpha + beta))``: the exponents of
    ``N* ∝ C^a`` and ``D* ∝ C^b`` implied by the parametric law (``a + b = 1``).
    Derived in chapter :doc:`/chapters/scaling-laws`."""
    law = _law(law, ChinchillaLaw)
    s = law.alpha + law.beta
    return law.beta / s, law.alpha / s


def compute_optimal_params(compute: ArrayLike, law: ChinchillaLaw = HOFFMANN_2022,
                           flops_per_param_token: float = 6) -> float | np.ndarray:
    """``N*(C) = G (C/k)^a`` with ``G = (alpha A / (beta B))^(1/(alpha+beta))``, ``a = beta/(alpha+beta)``:
    the minimiser of ``L(N, D)`` subject to ``C = k N D`` (Hoffmann et al. 2022, eq. 4).
    Derived in chapter :doc:`/chapters/scaling-laws`."""
    law = _law(law, ChinchillaLaw)
    c = check_array_positive("compute", compute)
    a, _ = optimal_exponents(law)
    g = (law.alpha * law.A / (law.beta * law.B)) ** (1.0 / (law.alpha + law.beta))
    return _out(g * (c / _k(flops_per_param_token)) ** a)


def compute_optimal_tokens(compute: ArrayLike, law: ChinchillaLaw = HOFFMANN_2022,
                           flops_per_param_token: float = 6) -> float | np.ndarray:
    """``D*(C) = C / (k N*(C)) = G^-1 (C/k)^b``: the tokens of the compute-optimal run
    (Hoffmann et al. 2022, eq. 4). Derived in chapter :doc:`/chapters/scaling-laws`."""
    c = check_array_positive("compute", compute)
    n = np.asarray(compute_optimal_params(c, law, flops_per_param_token))
    return _out(c / (_k(flops_per_param_token) * n))


def compute_optimal_tokens_per_param(compute: ArrayLike, law: ChinchillaLaw = HOFFMANN_2022,
                                     flops_per_param_token: float = 6) -> float | np.ndarray:
    """``D*/N* = G^-2 (C/k)^(b - a)``: tokens per parameter of the compute-optimal run (constant
    only when ``alpha = beta``). Derived in chapter :doc:`/chapters/scaling-laws`."""
    c = check_array_positive("compute", compute)
    n = np.asarray(compute_optimal_params(c, law, flops_per_param_token))
    return _out(c / (_k(flops_per_param_token) * n * n))


def compute_optimal_loss(compute: ArrayLike, law: ChinchillaLaw = HOFFMANN_2022,
                         flops_per_param_token: float = 6) -> float | np.ndarray:
    """``L(N*(C), D*(C))``: the lowest loss the law predicts for a budget of ``C`` FLOPs.
    Derived in chapter :doc:`/chapters/scaling-laws`."""
    c = check_array_positive("compute", compute)
    n = np.asarray(compute_optimal_params(c, law, flops_per_param_token))
    return chinchilla_loss(n, c / (_k(flops_per_param_token) * n), law)


def _g(law: ChinchillaLaw) -> float:
    """``G = (alpha A / (beta B))^(1/(alpha+beta))`` of Hoffmann et al.'s eq. (4)."""
    return (law.alpha * law.A / (law.beta * law.B)) ** (1.0 / (law.alpha + law.beta))


def compute_for_loss(loss: ArrayLike, law: ChinchillaLaw = HOFFMANN_2022,
                     flops_per_param_token: float = 6) -> float | np.ndarray:
    """The smallest compute ``C`` whose optimum reaches ``loss``: the inverse of
    :func:`compute_optimal_loss`. On the frontier ``L*(C) = E + K (C/k)^(-gamma)`` with
    ``gamma = alpha beta / (alpha + beta)`` and ``K = A G^(-alpha) + B G^beta``, so
    ``C = k (K / (loss - E))^(1/gamma)``. Needs ``loss > E``.
    Derived in chapter :doc:`/chapters/scaling-laws`."""
    law = _law(law, ChinchillaLaw)
    target = check_array_positive("loss", loss)
    if np.any(target <= law.E):
        raise ValueError(f"loss must be > E = {law.E} of {law.name} (no budget reaches E), got {loss!r}")
    g = _g(law)
    gamma = law.alpha * law.beta / (law.alpha + law.beta)
    k_front = law.A * g ** (-law.alpha) + law.B * g**law.beta
    return _out(_k(flops_per_param_token) * (k_front / (target - law.E)) ** (1.0 / gamma))


def optimal_params_for_tokens(n_tokens: ArrayLike, law: ChinchillaLaw = HOFFMANN_2022) -> float | np.ndarray:
    """``N = G (G D)^(beta/alpha)``: the model size for which ``D`` tokens are compute-optimal
    (the inverse of :func:`compute_optimal_tokens` composed with :func:`compute_optimal_params`;
    independent of ``k``). Muennighoff et al.'s ``U_N`` for ``U_D`` unique tokens.
    Derived in chapter :doc:`/chapters/scaling-laws`."""
    law = _law(law, ChinchillaLaw)
    d = check_array_positive("n_tokens", n_tokens)
    g = _g(law)
    return _out(g * (g * d) ** (law.beta / law.alpha))


def optimal_tokens_for_params(n_params: ArrayLike, law: ChinchillaLaw = HOFFMANN_2022) -> float | np.ndarray:
    """``D = G^-1 (N / G)^(alpha/beta)``: the compute-optimal number of training tokens for an
    ``N``-parameter model (the inverse of :func:`optimal_params_for_tokens`).
    Derived in chapter :doc:`/chapters/scaling-laws`."""
    law = _law(law, ChinchillaLaw)
    n = check_array_positive("n_params", n_params)
    g = _g(law)
    return _out((n / g) ** (law.alpha / law.beta) / g)


def isoloss_tokens(n_params: ArrayLike, loss: ArrayLike, law: ChinchillaLaw = HOFFMANN_2022) -> float | np.ndarray:
    """``D = (B / (loss - E - A / N^alpha))^(1/beta)``: the tokens an ``N``-parameter model needs to
    reach ``loss`` (the isoloss curve). Needs ``loss > E + A / N^alpha``, the model's loss with
    unlimited data. Derived in chapter :doc:`/chapters/scaling-laws`."""
    law = _law(law, ChinchillaLaw)
    n = check_array_positive("n_params", n_params)
    target = check_array_positive("loss", loss)
    room = target - law.E - law.A * n ** (-law.alpha)
    if np.any(room <= 0):
        raise ValueError("loss must be > E + A / N^alpha (the loss of the model with unlimited data) "
                         f"for every N; got loss={loss!r} for n_params={n_params!r}")
    return _out((law.B / room) ** (1.0 / law.beta))


# ---------------------------------------------------------------------------------------------
# Muennighoff et al. (2023): repeated data
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DataConstrainedLaw:
    """Muennighoff et al.'s data-constrained law: ``L = E + A / N'^alpha + B / D'^beta`` (the
    constants of ``law``) with the effective data ``D' = U_D + U_D R_D* (1 - exp(-R_D / R_D*))`` and
    the effective parameters ``N' = U_N + U_N R_N* (1 - exp(-R_N / R_N*))``.

    ``r_d_star``: the repetitions ``R_D*`` after which repeated tokens quickly stop helping;
    ``r_n_star``: the same for parameters beyond ``U_N``.
    """

    law: ChinchillaLaw
    r_d_star: float
    r_n_star: float
    name: str = "custom"
    source: str = ""

    def __post_init__(self) -> None:
        _law(self.law, ChinchillaLaw)
        check_positive("r_d_star", self.r_d_star)
        check_positive("r_n_star", self.r_n_star)


MUENNIGHOFF_2023 = DataConstrainedLaw(
    law=ChinchillaLaw(
        E=float(np.exp(0.6254804)), A=float(np.exp(6.255414)), B=float(np.exp(7.3049974)),
        alpha=0.3526596, beta=0.3526596, name="Muennighoff et al. (2023), C4",
        source="Muennighoff et al. (2023), Appendix A: a, b, e, alpha, beta fitted on C4 "
               "(A = e^a, B = e^b, E = e^e; printed rounded as 521, 1488, 1.87, 0.35)",
    ),
    r_d_star=15.387756, r_n_star=5.309743, name="Muennighoff et al. (2023)",
    source="Muennighoff et al. (2023), Appendix A (R_N* = 5.309743, R_D* = 15.387756) and the "
           "parametric fit of their repository's README",
)


def _law_dc(law: Any) -> DataConstrainedLaw:
    return _law(law, DataConstrainedLaw)


def _decayed(unique: np.ndarray, repeats: np.ndarray, r_star: float) -> np.ndarray:
    return unique + unique * r_star * (1.0 - np.exp(-repeats / r_star))


def effective_data(n_tokens: ArrayLike, unique_tokens: ArrayLike,
                   law: DataConstrainedLaw = MUENNIGHOFF_2023) -> float | np.ndarray:
    """``D' = U_D + U_D R_D* (1 - exp(-R_D / R_D*))``: the fresh tokens worth as much as ``D``
    tokens drawn from ``unique_tokens`` unique ones (Muennighoff et al. 2023, eq. 5).

    ``U_D = min(unique_tokens, D)`` and ``R_D = D / U_D - 1`` repetitions (epochs minus one). Equals
    ``D`` for one epoch, grows like ``D`` while ``R_D << R_D*`` and saturates at
    ``U_D (1 + R_D*)``. Derived in chapter :doc:`/chapters/scaling-laws`."""
    law = _law_dc(law)
    d = check_array_positive("n_tokens", n_tokens)
    u = np.minimum(check_array_positive("unique_tokens", unique_tokens), d)
    return _out(_decayed(u, d / u - 1.0, law.r_d_star))


def effective_params(n_params: ArrayLike, n_tokens: ArrayLike, unique_tokens: ArrayLike,
                     law: DataConstrainedLaw = MUENNIGHOFF_2023) -> float | np.ndarray:
    """``N' = U_N + U_N R_N* (1 - exp(-R_N / R_N*))`` (Muennighoff et al. 2023, eq. 6): parameters
    beyond ``U_N = min(N, optimal_params_for_tokens(U_D))``, the compute-optimal size for the
    ``U_D = min(unique_tokens, D)`` unique tokens, count less; ``R_N = N / U_N - 1``.
    Derived in chapter :doc:`/chapters/scaling-laws`."""
    law = _law_dc(law)
    n = check_array_positive("n_params", n_params)
    d = check_array_positive("n_tokens", n_tokens)
    u = np.minimum(check_array_positive("unique_tokens", unique_tokens), d)
    u_n = np.minimum(n, np.asarray(optimal_params_for_tokens(u, law.law)))
    return _out(_decayed(u_n, n / u_n - 1.0, law.r_n_star))


def data_constrained_loss(n_params: ArrayLike, n_tokens: ArrayLike, unique_tokens: ArrayLike,
                          law: DataConstrainedLaw = MUENNIGHOFF_2023) -> float | np.ndarray:
    """``L = E + A / N'^alpha + B / D'^beta`` with :func:`effective_params` and
    :func:`effective_data` (Muennighoff et al. 2023, eq. 7): the loss of an ``N``-parameter model
    trained on ``D`` tokens drawn, with repetition, from ``unique_tokens`` unique ones.
    Derived in chapter :doc:`/chapters/scaling-laws`."""
    law = _law_dc(law)
    n_eff = effective_params(n_params, n_tokens, unique_tokens, law)
    d_eff = effective_data(n_tokens, unique_tokens, law)
    return chinchilla_loss(n_eff, d_eff, law.law)


def _argmin_log(f: Any, lo: float, hi: float, n_grid: int = 2001) -> float:
    """Minimiser of ``f(x)`` for ``x`` in ``[lo, hi]`` (positive; ``f`` vectorised): a grid in
    ``log x``, then golden sections between the neighbours of the best grid point."""
    grid = np.linspace(np.log(lo), np.log(hi), n_grid)
    values = np.asarray(f(np.exp(grid)))  # f takes arrays
    i = int(np.argmin(values))
    a, b = grid[max(i - 1, 0)], grid[min(i + 1, n_grid - 1)]
    inv_phi = (np.sqrt(5.0) - 1.0) / 2.0
    c, d = b - inv_phi * (b - a), a + inv_phi * (b - a)
    fc, fd = f(np.exp(c)), f(np.exp(d))
    for _ in range(200):
        if b - a < 1e-13:
            break
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - inv_phi * (b - a)
            fc = f(np.exp(c))
        else:
            a, c, fc = c, d, fd
            d = a + inv_phi * (b - a)
            fd = f(np.exp(d))
    return float(np.exp((a + b) / 2.0))


def data_constrained_optimum(compute: float, unique_tokens: float, law: DataConstrainedLaw = MUENNIGHOFF_2023,
                             flops_per_param_token: float = 6) -> TrainingPlan:
    """The compute-optimal run when only ``unique_tokens`` unique tokens exist: minimises
    :func:`data_constrained_loss` along ``D = C / (k N)`` numerically (a grid in ``log N`` over
    ``D / N`` from ``1e-3`` to ``1e6``, refined by golden sections). Returns a
    :class:`TrainingPlan`. Derived in chapter :doc:`/chapters/scaling-laws`."""
    law = _law_dc(law)
    c = check_positive("compute", compute)
    u = check_positive("unique_tokens", unique_tokens)
    k = _k(flops_per_param_token)

    def loss_at(n: Any) -> Any:
        return data_constrained_loss(n, c / (k * n), u, law)

    lo, hi = np.sqrt(c / (k * 1e6)), np.sqrt(c / (k * 1e-3))
    n = _argmin_log(loss_at, lo, hi)
    d = c / (k * n)
    return TrainingPlan(compute=c, n_params=n, n_tokens=d, tokens_per_param=d / n, loss=float(loss_at(n)),
                        law=law.name)


# ---------------------------------------------------------------------------------------------
# Sardana et al. (2024): training plus inference
# ---------------------------------------------------------------------------------------------

SARDANA_2024 = ChinchillaLaw(
    E=1.69, A=406.4, B=410.7, alpha=0.336, beta=0.283, name="Sardana et al. (2024)",
    source="Hoffmann et al. (2022)'s printed A, B, E with alpha = 0.336, beta = 0.283: the coefficients "
           "Sardana et al. (2024)'s code assumes by default (the README of their repository: 'alpha=0.336, "
           "beta=0.283, A=406.4, B=410.7, E=1.69'); with them inference_optimal reproduces the example "
           "of their Figure 1",
)


@dataclass(frozen=True)
class InferenceOptimum:
    """The cheapest model over its lifetime for a target loss (see :func:`inference_optimal`)."""

    n_params: float
    n_tokens: float
    training_flops: float
    inference_flops: float
    total_flops: float
    loss: float


def inference_optimal(loss: float, inference_tokens: float, law: ChinchillaLaw = HOFFMANN_2022,
                      train_flops_per_param_token: float = 6,
                      inference_flops_per_param_token: float = 2) -> InferenceOptimum:
    """Sardana et al.'s optimum: the ``(N, D)`` that minimise ``k_tr N D + k_inf N D_inf`` subject
    to ``L(N, D) = loss``, for ``D_inf = inference_tokens`` tokens processed in inference (prompts
    and generations; ``k_tr = 6``, ``k_inf = 2``).

    Along the isoloss curve ``D(N)`` (:func:`isoloss_tokens`) the cost's derivative vanishes where
    ``k_tr D (1 - alpha A N^-alpha / (beta (loss - E - A N^-alpha))) + k_inf D_inf = 0``; its left
    side increases with ``N`` below the Chinchilla optimum for that loss, which it solves for
    ``D_inf = 0``. Solved by bisection in ``log N``. Derived in chapter :doc:`/chapters/scaling-laws`.
    """
    law = _law(law, ChinchillaLaw)
    target = check_positive("loss", loss)
    if target <= law.E:
        raise ValueError(f"loss must be > E = {law.E} of {law.name}, got {target}")
    d_inf = check_positive("inference_tokens", inference_tokens, allow_zero=True)
    k_tr = check_positive("train_flops_per_param_token", train_flops_per_param_token)
    k_inf = check_positive("inference_flops_per_param_token", inference_flops_per_param_token)
    n_min = (law.A / (target - law.E)) ** (1.0 / law.alpha)  # infinite data needed at this size
    n_hi = float(compute_optimal_params(compute_for_loss(target, law, k_tr), law, k_tr))

    def slope(n: float) -> float:
        room = target - law.E - law.A * n ** (-law.alpha)
        d = (law.B / room) ** (1.0 / law.beta)
        return k_tr * d * (1.0 - law.alpha * law.A * n ** (-law.alpha) / (law.beta * room)) + k_inf * d_inf

    lo, hi = np.log(n_min), np.log(n_hi)
    if d_inf > 0:
        for _ in range(200):
            mid = (lo + hi) / 2.0
            if mid in (lo, hi):
                break
            if slope(float(np.exp(mid))) > 0:
                hi = mid
            else:
                lo = mid
    n = float(np.exp(hi))
    d = float(isoloss_tokens(n, target, law))
    train, infer = k_tr * n * d, k_inf * n * d_inf
    return InferenceOptimum(n_params=n, n_tokens=d, training_flops=train, inference_flops=infer,
                            total_flops=train + infer, loss=target)


def implied_inference_tokens(n_params: ArrayLike, n_tokens: ArrayLike, law: ChinchillaLaw = HOFFMANN_2022,
                             train_flops_per_param_token: float = 6,
                             inference_flops_per_param_token: float = 2) -> float | np.ndarray:
    """The inference demand ``D_inf`` for which training ``N`` parameters on ``D`` tokens is the
    :func:`inference_optimal` choice for its own loss: setting the derivative of the lifetime cost
    along the isoloss curve to zero gives
    ``D_inf = (k_tr / k_inf) D (alpha A N^-alpha / (beta B D^-beta) - 1)``.
    Negative for a model larger than compute-optimal (no demand justifies it).
    Derived in chapter :doc:`/chapters/scaling-laws`."""
    law = _law(law, ChinchillaLaw)
    n = check_array_positive("n_params", n_params)
    d = check_array_positive("n_tokens", n_tokens)
    k_tr = check_positive("train_flops_per_param_token", train_flops_per_param_token)
    k_inf = check_positive("inference_flops_per_param_token", inference_flops_per_param_token)
    ratio = law.alpha * law.A * n ** (-law.alpha) / (law.beta * law.B * d ** (-law.beta))
    return _out(k_tr / k_inf * d * (ratio - 1.0))


# ---------------------------------------------------------------------------------------------
# Fitting
# ---------------------------------------------------------------------------------------------


def fit_power_law(x: ArrayLike, y: ArrayLike) -> tuple[float, float]:
    """``(c, p)`` of ``y = c x^p`` by least squares on ``log y = log c + p log x`` (how
    Hoffmann et al.'s approaches 1 and 2 fit ``N_opt ∝ C^a``). Needs at least two distinct ``x``.
    Derived in chapter :doc:`/chapters/scaling-laws`."""
    lx = np.log(check_array_positive("x", x)).ravel()
    ly = np.log(check_array_positive("y", y)).ravel()
    if lx.shape != ly.shape:
        raise ValueError(f"x and y must have the same number of elements, got {lx.size} and {ly.size}")
    if np.ptp(lx) == 0:
        raise ValueError("x must contain at least two distinct values")
    p, logc = np.polyfit(lx, ly, 1)
    return float(np.exp(logc)), float(p)


def _huber(r: np.ndarray, delta: float) -> np.ndarray:
    a = np.abs(r)
    return np.where(a <= delta, 0.5 * r * r, delta * (a - 0.5 * delta))


def _lse_terms(theta: np.ndarray, logn: np.ndarray, logd: np.ndarray) -> np.ndarray:
    """The three log-terms ``a - alpha log N``, ``b - beta log D``, ``e`` (last axis: data)."""
    a, b, e, al, be = (theta[..., i : i + 1] for i in range(5))
    return np.stack(np.broadcast_arrays(a - al * logn, b - be * logd, e + 0 * logn))


def _objective(theta: np.ndarray, logn: np.ndarray, logd: np.ndarray, logl: np.ndarray,
               delta: float) -> np.ndarray:
    t = _lse_terms(theta, logn, logd)
    m = t.max(axis=0)
    pred = m + np.log(np.exp(t - m).sum(axis=0))
    return _huber(pred - logl, delta).sum(axis=-1)


def _levenberg_marquardt(theta: np.ndarray, logn: np.ndarray, logd: np.ndarray, logl: np.ndarray,
                         delta: float, max_iter: int) -> tuple[np.ndarray, float]:
    """Minimise the summed Huber loss of the log residuals: Gauss-Newton steps on the
    iteratively reweighted squares (weights ``min(1, delta/|r|)``), Marquardt damping."""
    lam = 1e-3
    f = float(_objective(theta, logn, logd, logl, delta))
    for _ in range(max_iter):
        t = _lse_terms(theta, logn, logd)
        m = t.max(axis=0)
        w = np.exp(t - m)
        s = w.sum(axis=0)
        r = m + np.log(s) - logl
        w /= s  # softmax weights: d pred / d (a, b, e)
        jac = np.stack([w[0], w[1], w[2], -w[0] * logn, -w[1] * logd], axis=1)
        ar = np.abs(r)
        wt = np.where(ar <= delta, 1.0, delta / np.maximum(ar, 1e-300))
        jtj = jac.T @ (wt[:, None] * jac)
        g = jac.T @ (wt * r)
        improved = False
        for _ in range(30):
            step = np.linalg.solve(jtj + lam * (np.diag(np.diag(jtj)) + 1e-12 * np.eye(5)), -g)
            cand = theta + step
            fc = float(_objective(cand, logn, logd, logl, delta))
            if np.isfinite(fc) and fc < f:
                improved = True
                break
            lam *= 4.0
        if not improved:
            break
        rel = (f - fc) / max(f, 1e-300)
        theta, f, lam = cand, fc, max(lam / 4.0, 1e-12)
        if rel < 1e-13 or np.max(np.abs(step)) < 1e-12:
            break
    return theta, f


#: Hoffmann et al.'s grid of initialisations (Appendix D.2), in the order (a, b, e, alpha, beta):
#: a, b in {0, 5, ..., 25} (log A, log B), e in {-1, -0.5, ..., 1} (log E), alpha, beta in
#: {0, 0.5, ..., 2}.
HOFFMANN_FIT_GRID: tuple[tuple[float, ...], ...] = (
    (0.0, 5.0, 10.0, 15.0, 20.0, 25.0),  # a = log A
    (0.0, 5.0, 10.0, 15.0, 20.0, 25.0),  # b = log B
    (-1.0, -0.5, 0.0, 0.5, 1.0),  # e = log E
    (0.0, 0.5, 1.0, 1.5, 2.0),  # alpha
    (0.0, 0.5, 1.0, 1.5, 2.0),  # beta
)


def fit_chinchilla_law(n_params: ArrayLike, n_tokens: ArrayLike, loss: ArrayLike, *, delta: float = 1e-3,
                       n_starts: int = 8, max_iter: int = 500) -> ChinchillaLaw:
    """Fit ``L = E + A/N^alpha + B/D^beta`` to runs ``(N, D, L)`` as Hoffmann et al. do (Appendix D.2).

    Minimises ``sum_i Huber_delta(LSE(a - alpha log N_i, b - beta log D_i, e) - log L_i)`` over
    ``(a, b, e, alpha, beta)`` with ``A = e^a``, ``B = e^b``, ``E = e^e``: the objective is evaluated at
    every point of their grid of initialisations (:data:`HOFFMANN_FIT_GRID`, 4500 points), and
    Levenberg-Marquardt on the reweighted squares (IRLS for the Huber loss) is run from the
    ``n_starts`` points with the lowest objective; the lowest optimum wins. (Hoffmann et al. run
    L-BFGS from every grid point.) Needs at least 5 runs, with
    both N and D varying. Returns a :class:`ChinchillaLaw` named ``"fit"``.
    Derived in chapter :doc:`/chapters/scaling-laws`.
    """
    n = check_array_positive("n_params", n_params).ravel()
    d = check_array_positive("n_tokens", n_tokens).ravel()
    y = check_array_positive("loss", loss).ravel()
    if not n.size == d.size == y.size:
        raise ValueError(
            f"n_params, n_tokens and loss must have the same length, got {n.size}, {d.size}, {y.size}"
        )
    if n.size < 5:
        raise ValueError(f"need at least 5 runs to fit 5 parameters, got {n.size}")
    if np.ptp(n) == 0 or np.ptp(d) == 0:
        raise ValueError("n_params and n_tokens must each take at least two distinct values")
    delta = check_positive("delta", delta)
    n_starts = check_int("n_starts", n_starts)
    max_iter = check_int("max_iter", max_iter)
    logn, logd, logl = np.log(n), np.log(d), np.log(y)
    grid = np.array(list(itertools.product(*HOFFMANN_FIT_GRID)))
    f0 = _objective(grid, logn, logd, logl, delta)
    best: tuple[float, np.ndarray] | None = None
    for i in np.argsort(f0, kind="stable")[:n_starts]:
        theta, f = _levenberg_marquardt(grid[i].copy(), logn, logd, logl, delta, max_iter)
        if best is None or f < best[0]:
            best = (f, theta)
    assert best is not None
    a, b, e, al, be = best[1]
    return ChinchillaLaw(E=float(np.exp(e)), A=float(np.exp(a)), B=float(np.exp(b)), alpha=float(al),
                         beta=float(be), name="fit",
                         source=f"fit_chinchilla_law on {n.size} runs (Huber delta={delta:g})")


# ---------------------------------------------------------------------------------------------
# Real training runs and planning
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainingRun:
    """A published pre-training run: the model (a ``llmmath.presets`` name, or ``""`` with the
    published parameter count ``n_params``) and its number of training tokens, with the source."""

    name: str
    preset: str
    n_tokens: float
    source: str
    n_params: float = 0.0

    def __post_init__(self) -> None:
        check_positive("n_tokens", self.n_tokens)
        if not self.preset:
            check_positive("n_params", self.n_params)


#: Token counts of published runs (the paper each number comes from is in ``source``).
TRAINING_RUNS: tuple[TrainingRun, ...] = (
    TrainingRun("GPT-3 175B", "gpt3-175b", 300e9, "Brown et al. (2020), section 2.2 and Table D.1"),
    TrainingRun("GPT-3 13B", "gpt3-13b", 300e9, "Brown et al. (2020), section 2.2 and Table D.1"),
    TrainingRun("GPT-3 XL", "gpt3-xl", 300e9, "Brown et al. (2020), section 2.2 and Table D.1"),
    TrainingRun("Gopher 280B", "", 300e9, "Rae et al. (2021), as compared in Hoffmann et al. (2022), Table 1",
                n_params=280e9),
    TrainingRun("Chinchilla 70B", "", 1.4e12, "Hoffmann et al. (2022), Table 1 and section 4", n_params=70e9),
    TrainingRun("LLaMA 7B", "llama-7b", 1.0e12, "Touvron et al. (2023a), Table 2"),
    TrainingRun("LLaMA 13B", "llama-13b", 1.0e12, "Touvron et al. (2023a), Table 2"),
    TrainingRun("LLaMA 33B", "llama-33b", 1.4e12, "Touvron et al. (2023a), Table 2"),
    TrainingRun("LLaMA 65B", "llama-65b", 1.4e12, "Touvron et al. (2023a), Table 2"),
    TrainingRun("Llama 2 7B", "llama2-7b", 2.0e12, "Touvron et al. (2023b), Table 1"),
    TrainingRun("Llama 2 13B", "llama2-13b", 2.0e12, "Touvron et al. (2023b), Table 1"),
    TrainingRun("Llama 2 70B", "llama2-70b", 2.0e12, "Touvron et al. (2023b), Table 1"),
    TrainingRun("Pythia 1.4B", "pythia-1.4b", 300e9, "Biderman et al. (2023)"),
    TrainingRun("Pythia 12B", "pythia-12b", 300e9, "Biderman et al. (2023)"),
    TrainingRun("OPT 175B", "opt-175b", 180e9, "Zhang et al. (2022)"),
    TrainingRun("Falcon 7B", "falcon-7b", 1.5e12, "Almazrouei et al. (2023)"),
    TrainingRun("Falcon 40B", "falcon-40b", 1.0e12, "Almazrouei et al. (2023)"),
)


@dataclass(frozen=True)
class TrainingPlan:
    """The compute-optimal run for a GPU budget (see :func:`plan_training_run`)."""

    compute: float
    n_params: float
    n_tokens: float
    tokens_per_param: float
    loss: float
    law: str


def plan_training_run(n_gpus: int, peak_flops: float, utilization: float, days: float,
                      law: ChinchillaLaw = HOFFMANN_2022, flops_per_param_token: float = 6) -> TrainingPlan:
    """The compute-optimal model for ``n_gpus`` GPUs of ``peak_flops`` FLOP/s each, used at
    ``utilization`` (model FLOPs utilisation, in (0, 1]) for ``days`` days.

    ``C = n_gpus * peak_flops * utilization * 86400 * days``; then ``N*(C)``, ``D*(C)`` and
    ``L(N*, D*)`` from ``law``. Training time is inverted exactly by
    :func:`llmmath.flops.training_days` with ``approx`` counting.
    Derived in chapter :doc:`/chapters/scaling-laws`.
    """
    law = _law(law, ChinchillaLaw)
    n_gpus = check_int("n_gpus", n_gpus)
    peak = check_positive("peak_flops", peak_flops)
    util = check_fraction("utilization", utilization)
    days = check_positive("days", days)
    compute = n_gpus * peak * util * SECONDS_PER_DAY * days
    n = float(compute_optimal_params(compute, law, flops_per_param_token))
    d = compute / (_k(flops_per_param_token) * n)
    return TrainingPlan(compute=compute, n_params=n, n_tokens=d, tokens_per_param=d / n,
                        loss=float(chinchilla_loss(n, d, law)), law=law.name)
