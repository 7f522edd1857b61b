"""Tests of llmmath.scaling: expected values from sympy, brute-force minimisation, the published
tables of Hoffmann et al. (2022) and synthetic data with known constants. Formula tests take the
constants from the law objects; the constants themselves are pinned to the papers in
tests/test_published_constants.py."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
import sympy as sp

from llmmath.flops import training_days
from llmmath.presets import PRESETS
from llmmath.scaling import (
    BESIROGLU_2024,
    CHINCHILLA_TABLE3,
    HOFFMANN_2022,
    HOFFMANN_2022_UNROUNDED,
    KAPLAN_2020,
    PF_DAY,
    TRAINING_RUNS,
    ChinchillaLaw,
    TrainingRun,
    chinchilla_loss,
    compute_optimal_loss,
    compute_optimal_params,
    compute_optimal_tokens,
    compute_optimal_tokens_per_param,
    fit_chinchilla_law,
    fit_power_law,
    isoflop_loss,
    kaplan_loss,
    kaplan_loss_compute,
    kaplan_loss_params,
    kaplan_loss_tokens,
    kaplan_optimal_params,
    kaplan_optimal_tokens,
    optimal_exponents,
    plan_training_run,
)

LAWS = [HOFFMANN_2022, HOFFMANN_2022_UNROUNDED, BESIROGLU_2024]


# ---- the closed-form optimum ------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _sympy_optimum():
    """N* from sympy. N dL/dN = 0 reads alpha A N^-alpha = beta B (C / (6N))^-beta; in logs
    (x = log N) that is linear in x, solved here; the curvature is checked at the solution."""
    N, C, A, B, E, al, be, x = sp.symbols("N C A B E alpha beta x", positive=True)
    loss = E + A * N**-al + B * (C / (6 * N)) ** -be
    terms = sp.expand(-N * sp.diff(loss, N))  # alpha A N^-alpha - beta B (6N/C)^beta
    lhs, rhs = (sp.expand_log(sp.log(t), force=True) for t in (al * A * N**-al, be * B * (6 * N / C) ** be))
    assert sp.simplify(terms - (al * A * N**-al - be * B * (6 * N / C) ** be)) == 0
    (x_star,) = sp.solve(sp.Eq(lhs, rhs).subs(sp.log(N), x), x)
    curvature = sp.diff(loss, N, 2).subs(N, sp.exp(x_star))
    return sp.lambdify((C, A, B, al, be), sp.exp(x_star)), sp.lambdify((C, E, A, B, al, be), curvature)


@pytest.mark.parametrize("law", LAWS, ids=lambda law: law.name)
def test_optimum_matches_sympy_stationary_point(law):
    n_star, curvature = _sympy_optimum()
    for c in (1e19, 5.76e23, 1e26):
        expected = n_star(c, law.A, law.B, law.alpha, law.beta)
        assert compute_optimal_params(c, law) == pytest.approx(expected, rel=1e-12)
        assert curvature(c, law.E, law.A, law.B, law.alpha, law.beta) > 0  # a minimum


@pytest.mark.parametrize("law", LAWS, ids=lambda law: law.name)
def test_optimum_is_the_brute_force_minimum_of_the_isoflop_curve(law):
    c = 3.14e23
    n = np.logspace(8, 13, 200_001)
    d = c / (6 * n)
    brute = n[np.argmin(law.E + law.A / n**law.alpha + law.B / d**law.beta)]
    assert compute_optimal_params(c, law) == pytest.approx(brute, rel=1e-4)
    assert compute_optimal_loss(c, law) == pytest.approx(float(isoflop_loss(c, brute, law)), rel=1e-9)


def test_optimal_tokens_spend_the_budget_and_ratio_is_consistent():
    c = np.array([1e20, 1e22, 1e24])
    n, d = compute_optimal_params(c), compute_optimal_tokens(c)
    np.testing.assert_allclose(6 * n * d, c, rtol=1e-12)
    np.testing.assert_allclose(compute_optimal_tokens_per_param(c), d / n, rtol=1e-12)
    np.testing.assert_allclose(compute_optimal_params(c, flops_per_param_token=8) * 8
                               * compute_optimal_tokens(c, flops_per_param_token=8), c, rtol=1e-12)


def test_exponents_published_by_hoffmann_table2():
    # Hoffmann et al. (2022), Table 2: approach 3 gives a = 0.46, b = 0.54 (unrounded exponents).
    a, b = optimal_exponents(HOFFMANN_2022_UNROUNDED)
    assert round(a, 2) == 0.46 and round(b, 2) == 0.54
    # N* grows by C^a: a x10 budget multiplies N* by 10^a
    ratio = compute_optimal_params(1e23) / compute_optimal_params(1e22)
    assert ratio == pytest.approx(10 ** optimal_exponents()[0])


def test_besiroglu_refit_is_close_to_equal_scaling():
    # Besiroglu et al. (2024): the refit implies a = 0.51, close to approaches 1 and 2 (0.50, 0.49).
    a, b = optimal_exponents(BESIROGLU_2024)
    assert round(a, 2) == 0.51 and a + b == pytest.approx(1.0)


# ---- published table 3 (approach 1) -----------------------------------------------------------


def test_table3_rows_satisfy_c_equals_6nd_to_print_precision():
    # Every row but one agrees with C = 6ND to the rounding of its printed values (< 1%). The
    # 67B row prints 1.5T tokens where its 5.76e23 FLOPs buy C / (6N) = 1.43T: approach 1 fits
    # N_opt(C) and D_opt(C) as separate power laws, so that row is 4.7% off.
    for n, c, d in CHINCHILLA_TABLE3:
        if n == 67e9:
            assert d == 1.5e12 and c / (6 * n) == pytest.approx(1.433e12, rel=1e-3)
            assert 6 * n * d == pytest.approx(c, rel=0.05)
        else:
            assert 6 * n * d == pytest.approx(c, rel=0.01)


def test_table3_power_law_exponent_is_approach1_a():
    # Hoffmann et al. (2022), Table 2: approach 1 gives a = 0.50 (interval 0.488-0.502).
    _, a = fit_power_law([r[1] for r in CHINCHILLA_TABLE3], [r[0] for r in CHINCHILLA_TABLE3])
    assert 0.488 <= a <= 0.502


def test_fit_power_law_recovers_exact_law():
    x = np.logspace(1, 6, 7)
    c, p = fit_power_law(x, 3.5 * x**-0.37)
    assert (c, p) == (pytest.approx(3.5), pytest.approx(-0.37))


# ---- Kaplan -----------------------------------------------------------------------------------


def test_kaplan_one_variable_laws():
    # (N_c / N)^alpha equals 1 at N = N_c; doubling N multiplies the loss by 2^-0.076 (Kaplan 1.2).
    assert kaplan_loss_params(8.8e13) == pytest.approx(1.0)
    assert kaplan_loss_params(2e9) / kaplan_loss_params(1e9) == pytest.approx(2**-0.076)
    assert kaplan_loss_tokens(5.4e13) == pytest.approx(1.0)
    assert kaplan_loss_compute(3.1e8 * PF_DAY) == pytest.approx(1.0)


def test_kaplan_joint_law_limits():
    # D -> infinity gives (N_c/N)^alpha_N; N -> infinity gives (D_c/D)^alpha_D (Table 2 constants).
    assert kaplan_loss(1e9, 1e30) == pytest.approx((6.4e13 / 1e9) ** 0.076, rel=1e-9)
    assert kaplan_loss(1e40, 1e10) == pytest.approx((1.8e13 / 1e10) ** 0.103, rel=1e-9)


def test_kaplan_optimal_allocation_exponents():
    assert kaplan_optimal_params(10 * PF_DAY) / kaplan_optimal_params(PF_DAY) == pytest.approx(10**0.73)
    assert kaplan_optimal_params(PF_DAY) == pytest.approx(1.3e9)
    assert kaplan_optimal_tokens(PF_DAY) == pytest.approx(2e10)
    assert KAPLAN_2020.opt_n_exp + KAPLAN_2020.opt_d_exp == pytest.approx(1.0)


# ---- fitting ---------------------------------------------------------------------------------


# Known constants typed here (the first two are Hoffmann et al.'s printed fit and Besiroglu et al.'s
# refit, typed as literals, not read from llmmath's law objects; the third is arbitrary): data made
# from them must be fitted back to them.
KNOWN = {
    "hoffmann-printed": (1.69, 406.4, 410.7, 0.34, 0.28),
    "besiroglu": (1.8172, 482.01, 2085.43, 0.3478, 0.3658),
    "arbitrary": (2.1, 250.0, 3000.0, 0.3, 0.4),
}


def _isoflop_data(constants: tuple[float, float, float, float, float], noise: float, seed: int = 0):
    """Runs on five isoFLOP curves (C = 1e18 ... 1e22), 12 sizes from a tenth to ten times the
    20-tokens-per-parameter size sqrt(C / 120), D = C / (6 N); the loss from the constants typed
    above, times log-normal noise. No llmmath function is used."""
    E, A, B, alpha, beta = constants
    rng = np.random.default_rng(seed)
    c = np.repeat(np.logspace(18, 22, 5), 12)
    n = np.sqrt(c / 120) * np.tile(np.logspace(-1, 1, 12), 5)
    d = c / (6 * n)
    loss = E + A / n**alpha + B / d**beta
    return n, d, loss * np.exp(rng.normal(0.0, noise, n.size))


@pytest.mark.parametrize("name", list(KNOWN))
def test_fit_recovers_known_constants_from_exact_data(name):
    fit = fit_chinchilla_law(*_isoflop_data(KNOWN[name], 0.0))
    for f, want in zip(("E", "A", "B", "alpha", "beta"), KNOWN[name], strict=True):
        assert getattr(fit, f) == pytest.approx(want, rel=1e-4), f


def test_fit_on_noisy_data_recovers_exponents_and_optimum():
    E, A, B, alpha, beta = KNOWN["besiroglu"]
    fit = fit_chinchilla_law(*_isoflop_data(KNOWN["besiroglu"], 0.003, seed=1))
    assert fit.alpha == pytest.approx(alpha, abs=0.03)
    assert fit.beta == pytest.approx(beta, abs=0.03)
    # Hoffmann et al.'s eq. (4), N* = G (C/6)^(beta/(alpha+beta)), G = (alpha A / (beta B))^(1/(alpha+beta)),
    # evaluated here from the typed constants
    expected = (alpha * A / (beta * B)) ** (1 / (alpha + beta)) * (1e21 / 6) ** (beta / (alpha + beta))
    assert compute_optimal_params(1e21, fit) == pytest.approx(expected, rel=0.1)


def test_huber_fit_ignores_an_outlier():
    n, d, loss = _isoflop_data(KNOWN["hoffmann-printed"], 0.0)
    loss = loss.copy()
    loss[7] *= 1.5
    fit = fit_chinchilla_law(n, d, loss)
    assert fit.alpha == pytest.approx(0.34, rel=1e-3)
    assert fit.beta == pytest.approx(0.28, rel=1e-3)


# ---- vectorisation and types -------------------------------------------------------------------


def test_functions_accept_arrays_and_broadcast():
    c = np.logspace(18, 26, 1_000_000)
    out = compute_optimal_loss(c, BESIROGLU_2024)
    assert isinstance(out, np.ndarray) and out.shape == c.shape
    idx = [0, 123_456, 999_999]
    for i in idx:
        assert out[i] == pytest.approx(compute_optimal_loss(float(c[i]), BESIROGLU_2024), rel=1e-12)
    grid = chinchilla_loss(np.logspace(8, 12, 5)[:, None], np.logspace(9, 13, 3)[None, :])
    assert grid.shape == (5, 3)
    assert isinstance(chinchilla_loss(1e9, 2e10), float)
    assert isinstance(kaplan_optimal_params(1e21), float)


# ---- data --------------------------------------------------------------------------------------


def test_training_runs_refer_to_known_presets():
    names = [r.name for r in TRAINING_RUNS]
    assert len(names) == len(set(names))
    for run in TRAINING_RUNS:
        assert (run.preset in PRESETS) if run.preset else run.n_params > 0
        assert run.source
    with pytest.raises(ValueError, match="n_tokens"):
        TrainingRun("x", "gpt2", 0.0, "s")


def test_laws_are_frozen_and_validated():
    with pytest.raises(AttributeError):
        HOFFMANN_2022.alpha = 0.5  # type: ignore[misc]
    with pytest.raises(ValueError, match="alpha"):
        ChinchillaLaw(E=1.0, A=1.0, B=1.0, alpha=-0.1, beta=0.3)
    with pytest.raises(TypeError, match="beta"):
        ChinchillaLaw(E=1.0, A=1.0, B=1.0, alpha=0.1, beta="0.3")  # type: ignore[arg-type]


# ---- planning ----------------------------------------------------------------------------------


def test_plan_spends_the_budget_at_the_brute_force_optimum():
    plan = plan_training_run(1024, 312e12, 0.45, 30.0, BESIROGLU_2024)
    assert plan.compute == pytest.approx(1024 * 312e12 * 0.45 * 86400 * 30)
    # the plan spends the budget: 6 N D = C, as training_days counts it
    assert training_days(plan.n_tokens, plan.n_params, 1024, 312e12, 0.45) == pytest.approx(30.0)
    # and its model is the brute-force minimum of the isoFLOP curve, with that loss
    n = np.logspace(9, 12, 300_001)
    loss = BESIROGLU_2024.E + BESIROGLU_2024.A / n**BESIROGLU_2024.alpha + \
        BESIROGLU_2024.B / (plan.compute / (6 * n)) ** BESIROGLU_2024.beta
    assert plan.n_params == pytest.approx(n[np.argmin(loss)], rel=1e-4)
    assert plan.loss == pytest.approx(loss.min(), rel=1e-12)
    assert plan.tokens_per_param == pytest.approx(plan.n_tokens / plan.n_params)


# ---- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, -1.0, math.nan, math.inf, [1e20, 0.0], np.array([-3.0])])
def test_non_positive_compute_is_rejected(bad):
    for fn in (compute_optimal_params, compute_optimal_tokens, compute_optimal_loss,
               compute_optimal_tokens_per_param, kaplan_optimal_params, kaplan_optimal_tokens,
               kaplan_loss_compute):
        with pytest.raises(ValueError, match="compute"):
            fn(bad)


@pytest.mark.parametrize("bad", [0, -5e9, math.nan, [1e9, -1.0]])
def test_non_positive_params_or_tokens_are_rejected(bad):
    with pytest.raises(ValueError, match="n_params"):
        chinchilla_loss(bad, 1e10)
    with pytest.raises(ValueError, match="n_tokens"):
        chinchilla_loss(1e9, bad)
    with pytest.raises(ValueError, match="n_params"):
        kaplan_loss(bad, 1e10)
    with pytest.raises(ValueError, match="n_tokens"):
        kaplan_loss_tokens(bad)
    with pytest.raises(ValueError, match="n_params"):
        isoflop_loss(1e20, bad)


def test_wrong_types_and_shapes_are_rejected():
    with pytest.raises(TypeError, match="n_params"):
        chinchilla_loss("big", 1e10)
    with pytest.raises(TypeError, match="law must be a ChinchillaLaw"):
        compute_optimal_params(1e21, KAPLAN_2020)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="law must be a KaplanLaw"):
        kaplan_loss(1e9, 1e10, HOFFMANN_2022)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="flops_per_param_token"):
        compute_optimal_params(1e21, flops_per_param_token=0)
    with pytest.raises(ValueError, match="same length"):
        fit_chinchilla_law([1e9] * 6, [1e10] * 5, [3.0] * 6)
    with pytest.raises(ValueError, match="at least 5"):
        fit_chinchilla_law([1e8, 1e9, 1e10], [1e9, 1e10, 1e11], [3.0, 2.8, 2.6])
    with pytest.raises(ValueError, match="distinct"):
        fit_chinchilla_law([1e9] * 6, np.logspace(9, 11, 6), np.linspace(3, 2, 6))
    with pytest.raises(ValueError, match="loss"):
        fit_chinchilla_law(np.logspace(8, 10, 6), np.logspace(9, 11, 6), [3, 2, 1, 0, 1, 2])
    with pytest.raises(ValueError, match="distinct"):
        fit_power_law([2.0, 2.0], [1.0, 3.0])


@pytest.mark.parametrize(
    "kwargs, exc, name",
    [
        (dict(n_gpus=0), ValueError, "n_gpus"),
        (dict(n_gpus=8.0), TypeError, "n_gpus"),
        (dict(peak_flops=0.0), ValueError, "peak_flops"),
        (dict(utilization=0.0), ValueError, "utilization"),
        (dict(utilization=1.5), ValueError, "utilization"),
        (dict(days=-1.0), ValueError, "days"),
    ],
)
def test_plan_rejects_bad_budgets(kwargs, exc, name):
    args = dict(n_gpus=8, peak_flops=1e15, utilization=0.4, days=10.0) | kwargs
    with pytest.raises(exc, match=name):
        plan_training_run(**args)


# ---- Kaplan's batch and steps ------------------------------------------------------------------

from llmmath.scaling import (  # noqa: E402
    MUENNIGHOFF_2023,
    SARDANA_2024,
    DataConstrainedLaw,
    compute_for_loss,
    data_constrained_loss,
    data_constrained_optimum,
    effective_data,
    effective_params,
    implied_inference_tokens,
    inference_optimal,
    isoloss_tokens,
    kaplan_critical_batch,
    kaplan_frontier_batch,
    kaplan_frontier_steps,
    optimal_params_for_tokens,
    optimal_tokens_for_params,
)


def test_kaplan_critical_batch_of_eq_1_4_agrees_with_table_6():
    # eq. (1.4) B_* / L^(1/alpha_B) evaluated at the loss of eq. (1.3) L(C_min) is Table 6's
    # 2.0e6 C_min^0.24 to within 3% over nine decades of compute: two independent published fits
    for c in np.logspace(-3, 6, 10) * PF_DAY:
        ratio = kaplan_critical_batch(kaplan_loss_compute(c)) / kaplan_frontier_batch(c)
        assert ratio == pytest.approx(1.0, abs=0.03)
    assert kaplan_critical_batch(1.0) == 2.1e8  # Table 5: B_* in tokens at L = 1 nat


def test_kaplan_two_bcrit_smin_is_table_6_d_opt():
    # a run at B = B_crit takes 2 S_min steps (eq. 5.4): 2 * 2.0e6 * 5.4e3 = 2.16e10 tokens per
    # PF-day^0.27, Table 6's D_opt = 2e10 C^0.27 up to the rounding of the printed constants
    for c in (1.0, 1e3):
        tokens = 2 * kaplan_frontier_batch(c * PF_DAY) * kaplan_frontier_steps(c * PF_DAY)
        assert tokens / kaplan_optimal_tokens(c * PF_DAY) == pytest.approx(1.08, rel=1e-9)
    assert kaplan_frontier_steps(PF_DAY) == pytest.approx(5.4e3)


# ---- the loss frontier and its inverses -----------------------------------------------------------


@pytest.mark.parametrize("law", LAWS, ids=lambda law: law.name)
def test_loss_frontier_exponent_and_inverse(law):
    c = np.logspace(19, 26, 8)
    reducible = np.asarray(compute_optimal_loss(c, law)) - law.E
    slope = np.polyfit(np.log(c), np.log(reducible), 1)[0]
    assert slope == pytest.approx(-law.alpha * law.beta / (law.alpha + law.beta), rel=1e-10)
    np.testing.assert_allclose(compute_for_loss(compute_optimal_loss(c, law), law), c, rtol=1e-10)


@pytest.mark.parametrize("law", LAWS, ids=lambda law: law.name)
def test_tokens_params_inverses_agree_with_the_closed_form(law):
    c = np.array([1e20, 5.76e23, 1e26])
    n, d = compute_optimal_params(c, law), compute_optimal_tokens(c, law)
    np.testing.assert_allclose(optimal_params_for_tokens(d, law), n, rtol=1e-10)
    np.testing.assert_allclose(optimal_tokens_for_params(n, law), d, rtol=1e-10)
    target = 2.2
    np.testing.assert_allclose(chinchilla_loss(7e9, isoloss_tokens(7e9, target, law), law), target, rtol=1e-12)


# ---- Muennighoff et al. (2023) ------------------------------------------------------------------


def test_effective_data_worked_example_of_the_paper():
    # Appendix A: R_D* = 3, U = 1, four repeats -> D' = 1 + 3 (1 - e^(-4/3)) = 3.21; 100 repeats ->
    # "3.99" (printed truncated: the value is 4 - 3 e^(-100/3), just below the plateau 4)
    toy = DataConstrainedLaw(law=HOFFMANN_2022, r_d_star=3.0, r_n_star=3.0)
    assert round(effective_data(5.0, 1.0, toy), 2) == 3.21
    assert 3.99 < effective_data(101.0, 1.0, toy) < 4.0
    assert effective_data(1e6, 1.0, toy) == pytest.approx(4.0)  # plateau U (1 + R_D*)


def test_effective_data_derivative_is_the_value_of_a_repeated_token():
    # sympy: dD'/dD = exp(-R_D / R_D*): the next repeated token is worth that fraction of a fresh one
    D, U, R = sp.symbols("D U R", positive=True)
    d_eff = U + U * R * (1 - sp.exp(-(D / U - 1) / R))
    deriv = sp.lambdify((D, U, R), sp.diff(d_eff, D))
    u, r = 1e11, MUENNIGHOFF_2023.r_d_star
    for d in (2e11, 1e12, 5e12):
        h = d * 1e-6
        numeric = (effective_data(d + h, u) - effective_data(d - h, u)) / (2 * h)
        assert numeric == pytest.approx(deriv(d, u, r), rel=1e-6)
        assert deriv(d, u, r) == pytest.approx(np.exp(-(d / u - 1) / r), rel=1e-12)


def test_data_constrained_loss_reproduces_the_published_values():
    # the README of huggingface/datablations prints these two losses for the models of Figure 1
    assert data_constrained_loss(6.34e9, 242e9, 25e9) == pytest.approx(2.2256440889984477, rel=1e-12)
    assert data_constrained_loss(8.67e9, 178e9, 25e9) == pytest.approx(2.2269634075087867, rel=1e-12)


def test_one_epoch_reduces_to_the_base_law():
    law = MUENNIGHOFF_2023
    n, d = 1e9, 3e10
    assert effective_data(d, 1e12) == d
    assert effective_params(n, d, 1e12) == n  # N below the compute-optimal size for the data
    assert data_constrained_loss(n, d, 1e12) == pytest.approx(chinchilla_loss(n, d, law.law), rel=1e-14)


def test_data_constrained_optimum_matches_the_published_grid_search_and_brute_force():
    # README: optimal allocation for the compute of 8.67e9 params x 178e9 tokens with 25e9 unique
    # tokens is "227B tokens, 9.1 epochs, 6.8B parameters" (a grid search in steps of 0.4%)
    c = 6 * 8.67e9 * 178e9
    plan = data_constrained_optimum(c, 25e9)
    assert plan.n_tokens == pytest.approx(227e9, rel=5e-3)
    assert plan.n_tokens / 25e9 == pytest.approx(9.1, abs=0.05)
    assert plan.n_params == pytest.approx(6.8e9, rel=1e-2)
    n = np.logspace(9, 11, 20001)
    brute = n[np.argmin(data_constrained_loss(n, c / (6 * n), 25e9))]
    assert plan.n_params == pytest.approx(brute, rel=1e-3)


# ---- Sardana et al. (2024) ----------------------------------------------------------------------


def test_inference_optimal_reproduces_the_published_example():
    # Sardana et al., Figure 1: a developer who would train a (Chinchilla-optimal) 13B model and
    # expects 2T tokens of inference saves 1.7e22 FLOPs (17%) by training a 7B model on more data
    n0 = 13e9
    d0 = optimal_tokens_for_params(n0, SARDANA_2024)
    target = chinchilla_loss(n0, d0, SARDANA_2024)
    opt = inference_optimal(target, 2e12, SARDANA_2024)
    baseline = 6 * n0 * d0 + 2 * n0 * 2e12
    assert round(opt.n_params / 1e9) == 7
    assert baseline - opt.total_flops == pytest.approx(1.7e22, rel=0.03)
    assert round(100 * (baseline - opt.total_flops) / baseline) == 17


@pytest.mark.parametrize("d_inf", [0.0, 1e11, 2e12, 1e14])
def test_inference_optimal_is_the_brute_force_minimum(d_inf):
    law = BESIROGLU_2024
    target = 2.1
    opt = inference_optimal(target, d_inf, law)
    n_min = (law.A / (target - law.E)) ** (1 / law.alpha)
    n = n_min * np.logspace(1e-6, 3, 400_001)
    total = 6 * n * isoloss_tokens(n, target, law) + 2 * n * d_inf
    assert opt.n_params == pytest.approx(n[np.argmin(total)], rel=1e-3)
    assert opt.total_flops == pytest.approx(total.min(), rel=1e-9)
    assert chinchilla_loss(opt.n_params, opt.n_tokens, law) == pytest.approx(target, rel=1e-12)
    if d_inf == 0:  # nothing served: the Chinchilla optimum for that loss
        c = compute_for_loss(target, law)
        assert opt.n_params == pytest.approx(compute_optimal_params(c, law), rel=1e-9)


def test_inference_optimal_satisfies_the_lagrange_conditions():
    # sympy: grad(6 N D + 2 N D_inf) = lambda grad(L) at the solution
    N, D, Di, lam = sp.symbols("N D D_inf lambda", positive=True)
    law = HOFFMANN_2022
    cost = 6 * N * D + 2 * N * Di
    loss = law.E + law.A * N ** -law.alpha + law.B * D ** -law.beta
    opt = inference_optimal(2.0, 5e12, law)
    at = {N: opt.n_params, D: opt.n_tokens, Di: 5e12}
    ratio_n = float((sp.diff(cost, N) / sp.diff(loss, N)).subs(at))
    ratio_d = float((sp.diff(cost, D) / sp.diff(loss, D)).subs(at))
    assert ratio_n == pytest.approx(ratio_d, rel=1e-8)


def test_new_scaling_functions_reject_bad_input():
    with pytest.raises(ValueError, match="loss"):
        compute_for_loss(1.5, HOFFMANN_2022)
    with pytest.raises(ValueError, match="loss"):
        isoloss_tokens(1e9, 1.8, HOFFMANN_2022)  # below E + A / N^alpha
    with pytest.raises(ValueError, match="unique_tokens"):
        effective_data(1e9, 0.0)
    with pytest.raises(ValueError, match="n_params"):
        effective_params(-1.0, 1e9, 1e9)
    with pytest.raises(ValueError, match="r_d_star"):
        DataConstrainedLaw(law=HOFFMANN_2022, r_d_star=0.0, r_n_star=1.0)
    with pytest.raises(TypeError, match="law must be a ChinchillaLaw"):
        DataConstrainedLaw(law=KAPLAN_2020, r_d_star=1.0, r_n_star=1.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="law must be a DataConstrainedLaw"):
        data_constrained_loss(1e9, 1e10, 1e9, HOFFMANN_2022)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="compute"):
        data_constrained_optimum(0.0, 1e9)
    with pytest.raises(ValueError, match="inference_tokens"):
        inference_optimal(2.0, -1.0)
    with pytest.raises(ValueError, match="loss"):
        inference_optimal(1.0, 1e12)
    with pytest.raises(ValueError, match="loss"):
        kaplan_critical_batch(0.0)
    with pytest.raises(ValueError, match="compute"):
        kaplan_frontier_steps(-1.0)


def test_implied_inference_tokens_inverts_inference_optimal():
    law = BESIROGLU_2024
    n, d = 7e9, 2e12  # an over-trained 7B model
    d_inf = implied_inference_tokens(n, d, law)
    assert d_inf > 0
    opt = inference_optimal(chinchilla_loss(n, d, law), d_inf, law)
    assert opt.n_params == pytest.approx(n, rel=1e-9) and opt.n_tokens == pytest.approx(d, rel=1e-9)
    # a compute-optimal run needs no inference to justify it; a larger-than-optimal one cannot be
    c = 1e23
    assert implied_inference_tokens(compute_optimal_params(c, law), compute_optimal_tokens(c, law), law) == \
        pytest.approx(0.0, abs=1e-3 * compute_optimal_tokens(c, law))
    assert implied_inference_tokens(175e9, 300e9, law) < 0


def test_fit_grid_is_the_published_one():
    # Appendix D.2 of Hoffmann et al.: 6 x 6 x 5 x 5 x 5 starting points
    from llmmath.scaling import HOFFMANN_FIT_GRID

    assert [len(axis) for axis in HOFFMANN_FIT_GRID] == [6, 6, 5, 5, 5]
    assert HOFFMANN_FIT_GRID[0] == tuple(np.arange(0.0, 26.0, 5.0))
    assert HOFFMANN_FIT_GRID[2] == (-1.0, -0.5, 0.0, 0.5, 1.0)
