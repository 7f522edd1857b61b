"""Tests of llmmath.optim: torch.optim as the independent reference, hand-derived values, bad input."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from llmmath.optim import (
    OPTIMIZERS,
    AdamConfig,
    AdamWConfig,
    MomentumConfig,
    OptimizerState,
    RMSPropConfig,
    SGDConfig,
    adam_step,
    bias_correction_factor,
    init_state,
    momentum_step,
    optimize,
    optimizer_step,
    rmsprop_step,
    round_to_bfloat16,
    sgd_step,
    state_bytes_per_param,
    state_tensors,
)

torch = pytest.importorskip("torch")

STEPS = 300
SHAPE = (3, 4)


def _gradient_sequence(seed: int = 0) -> np.ndarray:
    """Gradients of a fixed noisy quadratic, but drawn independently of the parameters so both
    implementations see exactly the same numbers; scales span 4 decades to exercise eps."""
    rng = np.random.default_rng(seed)
    scales = 10.0 ** rng.uniform(-3, 1, size=SHAPE)
    return rng.normal(size=(STEPS, *SHAPE)) * scales


def _run_torch(make_opt, p0: np.ndarray, grads: np.ndarray) -> np.ndarray:
    p = torch.tensor(p0, dtype=torch.float64, requires_grad=True)
    opt = make_opt([p])
    path = []
    for g in grads:
        p.grad = torch.tensor(g, dtype=torch.float64)
        opt.step()
        path.append(p.detach().numpy().copy())
    return np.stack(path)


def _run_ours(hp, p0: np.ndarray, grads: np.ndarray) -> np.ndarray:
    p, state = p0, init_state(hp, p0)
    path = []
    for g in grads:
        p, state = optimizer_step(p, g, state, hp)
        path.append(p)
    return np.stack(path)


CASES = [
    (
        MomentumConfig(lr=0.01, momentum=0.9),
        lambda ps: torch.optim.SGD(ps, lr=0.01, momentum=0.9),
    ),
    (
        MomentumConfig(lr=0.02, momentum=0.8, weight_decay=0.1),
        lambda ps: torch.optim.SGD(ps, lr=0.02, momentum=0.8, weight_decay=0.1),
    ),
    (SGDConfig(lr=0.03, weight_decay=0.2), lambda ps: torch.optim.SGD(ps, lr=0.03, weight_decay=0.2)),
    (
        RMSPropConfig(lr=0.01, alpha=0.99, eps=1e-8),
        lambda ps: torch.optim.RMSprop(ps, lr=0.01, alpha=0.99, eps=1e-8),
    ),
    (
        RMSPropConfig(lr=0.003, alpha=0.9, eps=1e-3, weight_decay=0.05),
        lambda ps: torch.optim.RMSprop(ps, lr=0.003, alpha=0.9, eps=1e-3, weight_decay=0.05),
    ),
    (AdamConfig(lr=0.01), lambda ps: torch.optim.Adam(ps, lr=0.01)),
    (
        AdamConfig(lr=0.005, beta1=0.8, beta2=0.99, eps=1e-4, weight_decay=0.1),
        lambda ps: torch.optim.Adam(ps, lr=0.005, betas=(0.8, 0.99), eps=1e-4, weight_decay=0.1),
    ),
    (AdamWConfig(lr=0.01), lambda ps: torch.optim.AdamW(ps, lr=0.01)),
    (
        AdamWConfig(lr=0.02, beta1=0.5, beta2=0.95, eps=1e-6, weight_decay=0.3),
        lambda ps: torch.optim.AdamW(ps, lr=0.02, betas=(0.5, 0.95), eps=1e-6, weight_decay=0.3),
    ),
]


@pytest.mark.parametrize(("hp", "make_opt"), CASES, ids=[type(c[0]).__name__ + str(i) for i, c in enumerate(CASES)])
def test_matches_torch_step_for_step(hp, make_opt):
    grads = _gradient_sequence()
    p0 = np.random.default_rng(1).normal(size=SHAPE)
    ours = _run_ours(hp, p0, grads)
    ref = _run_torch(make_opt, p0, grads)
    assert ours.shape == ref.shape == (STEPS, *SHAPE)
    # the parameters move by O(1) over the run, so a drift of 1e-12 would be a real difference
    assert np.max(np.abs(ref - p0)) > 1e-2
    np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-13)


def test_torch_dampening_is_not_the_seed_ema():
    """torch with dampening=mu starts the buffer at g_1, the seed's EMA at (1 - mu) g_1: the two
    buffers differ by mu^t g_1 (derivation in the chapter), here checked against torch."""
    mu, lr = 0.9, 0.1
    grads = _gradient_sequence(2)[:50]
    p0 = np.zeros(SHAPE)
    ours = _run_ours(MomentumConfig(lr=lr, momentum=mu, form="ema"), p0, grads)
    ref = _run_torch(lambda ps: torch.optim.SGD(ps, lr=lr, momentum=mu, dampening=mu), p0, grads)
    t = np.arange(1, 51)[:, None, None]
    # parameter difference = -lr * sum_{k<=t} mu^k g_1
    expected = -lr * grads[0] * (mu * (1 - mu**t) / (1 - mu))
    np.testing.assert_allclose(ref - ours, expected, rtol=1e-9, atol=1e-12)


def test_ema_momentum_equals_pytorch_momentum_with_scaled_lr():
    # v_ema = (1 - mu) v_torch exactly (both start at 0), so lr_torch = (1 - mu) lr_ema
    grads = _gradient_sequence(3)[:100]
    p0 = np.ones(SHAPE)
    ema = _run_ours(MomentumConfig(lr=0.1, momentum=0.9, form="ema"), p0, grads)
    ref = _run_torch(lambda ps: torch.optim.SGD(ps, lr=0.1 * (1 - 0.9), momentum=0.9), p0, grads)
    np.testing.assert_allclose(ema, ref, rtol=1e-12, atol=1e-14)


def test_first_adam_step_by_hand():
    # t = 1: m_hat = g, v_hat = g^2, so the step is lr * g / (|g| + eps) ~ lr * sign(g)
    g = np.array([2.0, -1e-3, 0.0])
    hp = AdamConfig(lr=0.1, eps=1e-8)
    p1, st = adam_step(np.zeros(3), g, init_state(hp, np.zeros(3)), hp)
    np.testing.assert_allclose(p1, -0.1 * g / (np.abs(g) + 1e-8), rtol=1e-14)
    np.testing.assert_allclose(st.first, 0.1 * g)
    np.testing.assert_allclose(st.second, 0.001 * g**2)
    assert st.t == 1
    # without bias correction: lr * (1 - b1) g / (sqrt(1 - b2) |g|) = lr * 0.1 / sqrt(0.001) sign(g)
    hp_nc = AdamConfig(lr=0.1, eps=0.0, bias_correction=False)
    p1_nc, _ = adam_step(np.zeros(1), np.array([5.0]), init_state(hp_nc, np.zeros(1)), hp_nc)
    assert p1_nc[0] == pytest.approx(-0.1 * 0.1 / np.sqrt(0.001), rel=1e-12)


def test_eps_inside_sqrt_seed_form():
    # seed: lr * m_hat / sqrt(v_hat + eps); at t = 1 with g = 1e-4, eps = 1e-8: 1e-4 / sqrt(2e-8)
    hp = AdamConfig(lr=1.0, eps=1e-8, eps_placement="inside")
    p1, _ = adam_step(np.zeros(1), np.array([1e-4]), init_state(hp, np.zeros(1)), hp)
    assert p1[0] == pytest.approx(-1e-4 / np.sqrt(1e-8 + 1e-8), rel=1e-12)
    hp_r = RMSPropConfig(lr=1.0, alpha=0.0, eps=1e-8, eps_placement="inside")
    p1r, _ = rmsprop_step(np.zeros(1), np.array([1e-4]), init_state(hp_r, np.zeros(1)), hp_r)
    assert p1r[0] == pytest.approx(-1e-4 / np.sqrt(2e-8), rel=1e-12)


def test_rmsprop_bias_correction_first_step():
    hp = RMSPropConfig(lr=1.0, alpha=0.99, eps=0.0, bias_correction=True)
    p1, _ = rmsprop_step(np.zeros(2), np.array([3.0, -0.5]), init_state(hp, np.zeros(2)), hp)
    np.testing.assert_allclose(p1, [-1.0, 1.0], rtol=1e-12)


def test_sgd_and_optimize_on_quadratic():
    # f = x^2 / 2: gradient x, SGD multiplies by (1 - lr) each step
    path = optimize(lambda x: x, np.array([1.0, -2.0]), SGDConfig(lr=0.25), 5)
    np.testing.assert_allclose(path[:, 0], 0.75 ** np.arange(6), rtol=1e-15)
    assert path.shape == (6, 2)
    p1, st = sgd_step(np.array([1.0]), np.array([4.0]), OptimizerState(0), SGDConfig(lr=0.5))
    assert p1[0] == -1.0 and st.t == 1


def test_pure_functions_do_not_mutate():
    p, g = np.ones(3), np.full(3, 0.5)
    for hp in (MomentumConfig(lr=0.1), RMSPropConfig(), AdamConfig(), AdamWConfig()):
        st = init_state(hp, p)
        before = [None if a is None else a.copy() for a in (st.first, st.second)]
        optimizer_step(p, g, st, hp)
        np.testing.assert_array_equal(p, 1.0)
        np.testing.assert_array_equal(g, 0.5)
        for a, b in zip((st.first, st.second), before, strict=True):
            if a is not None:
                np.testing.assert_array_equal(a, b)
    with pytest.raises(dataclasses.FrozenInstanceError):
        AdamConfig().lr = 1.0  # type: ignore[misc]


def test_state_counts_match_the_state_arrays():
    configs = {
        "sgd": SGDConfig(lr=0.1),
        "momentum": MomentumConfig(lr=0.1),
        "rmsprop": RMSPropConfig(),
        "adam": AdamConfig(),
        "adamw": AdamWConfig(),
    }
    assert set(configs) == set(OPTIMIZERS)
    for name, hp in configs.items():
        st = init_state(hp, np.zeros(5))
        n_arrays = sum(a is not None for a in (st.first, st.second))
        assert state_tensors(name) == n_arrays
    # torch keeps the same per-parameter tensors (besides a scalar step counter)
    p = torch.zeros(5, dtype=torch.float64, requires_grad=True)
    for name, opt in [
        ("momentum", torch.optim.SGD([p], lr=0.1, momentum=0.9)),
        ("rmsprop", torch.optim.RMSprop([p])),
        ("adam", torch.optim.Adam([p])),
        ("adamw", torch.optim.AdamW([p])),
    ]:
        p.grad = torch.ones(5, dtype=torch.float64)
        opt.step()
        full = [v for v in opt.state[p].values() if torch.is_tensor(v) and v.numel() == 5]
        assert len(full) == state_tensors(name)


def test_state_bytes():
    # seed 001 table: Momentum 4P, RMSProp 4P, Adam 8P, SGD nothing (fp32 states)
    assert [state_bytes_per_param(o) for o in OPTIMIZERS] == [0, 4, 4, 8, 8]
    assert state_bytes_per_param("adam", bytes_per_value=2) == 4


def test_bias_correction_factor():
    assert bias_correction_factor(0.9, 1) == pytest.approx(0.1)
    assert bias_correction_factor(0.999, 10) == pytest.approx(1 - 0.999**10)
    assert bias_correction_factor(0.0, 1) == 1.0


def test_round_to_bfloat16_matches_torch():
    rng = np.random.default_rng(5)
    x = np.concatenate(
        [
            rng.normal(size=2000).astype(np.float32) * np.float32(10.0) ** rng.integers(-30, 30, 2000),
            np.array([1.0, 1 + 2**-8, 1 + 3 * 2**-8, -0.0, 3.4e38, 1e-40, np.inf, -np.inf], dtype=np.float32),
        ]
    ).astype(np.float32)
    ref = torch.tensor(x).to(torch.bfloat16).to(torch.float32).numpy()
    np.testing.assert_array_equal(round_to_bfloat16(x), ref)
    assert np.isnan(round_to_bfloat16(np.float32(np.nan)))


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda: SGDConfig(lr=0.0), "lr"),
        (lambda: SGDConfig(lr=-1.0), "lr"),
        (lambda: MomentumConfig(lr=0.0), "lr"),
        (lambda: MomentumConfig(lr=0.1, momentum=1.0), "momentum"),
        (lambda: MomentumConfig(lr=0.1, momentum=-0.1), "momentum"),
        (lambda: MomentumConfig(lr=0.1, form="nesterov"), "form"),
        (lambda: MomentumConfig(lr=0.1, bias_correction=True), "bias_correction"),
        (lambda: RMSPropConfig(lr=-0.1), "lr"),
        (lambda: RMSPropConfig(alpha=1.0), "alpha"),
        (lambda: RMSPropConfig(eps=-1e-8), "eps"),
        (lambda: RMSPropConfig(eps_placement="middle"), "eps_placement"),
        (lambda: AdamConfig(lr=0.0), "lr"),
        (lambda: AdamConfig(beta1=1.0), "beta1"),
        (lambda: AdamConfig(beta2=1.5), "beta2"),
        (lambda: AdamConfig(beta2=-0.5), "beta2"),
        (lambda: AdamConfig(weight_decay=-1.0), "weight_decay"),
        (lambda: AdamWConfig(lr=-1e-3), "lr"),
        (lambda: AdamWConfig(beta1=1.0), "beta1"),
        (lambda: AdamWConfig(beta2=1.0), "beta2"),
        (lambda: state_tensors("lion"), "optimizer"),
        (lambda: state_bytes_per_param("adam", 0), "bytes_per_value"),
        (lambda: bias_correction_factor(1.0, 3), "beta"),
        (lambda: bias_correction_factor(0.9, 0), "t"),
        (lambda: optimize(lambda x: x, np.zeros(2), SGDConfig(lr=0.1), -1), "steps"),
    ],
)
def test_bad_values_raise_value_error_naming_argument(make, name):
    with pytest.raises(ValueError, match=name):
        make()


def test_state_tensors_error_lists_accepted_names():
    with pytest.raises(ValueError) as info:
        state_tensors("lion")
    for name in OPTIMIZERS:
        assert name in str(info.value)


def test_shape_mismatches():
    hp = AdamConfig()
    st = init_state(hp, np.zeros(3))
    with pytest.raises(ValueError, match="grads"):
        adam_step(np.zeros(3), np.zeros(4), st, hp)
    with pytest.raises(ValueError, match="state.first"):
        adam_step(np.zeros(4), np.zeros(4), st, hp)
    with pytest.raises(ValueError, match="state.second"):
        rmsprop_step(np.zeros(4), np.zeros(4), init_state(RMSPropConfig(), np.zeros(3)), RMSPropConfig())
    with pytest.raises(ValueError, match="state.first"):
        # an SGD state has no velocity
        momentum_step(np.zeros(3), np.zeros(3), OptimizerState(0), MomentumConfig(lr=0.1))


def test_bad_types():
    with pytest.raises(TypeError, match="hyperparameters"):
        optimizer_step(np.zeros(2), np.zeros(2), OptimizerState(0), {"lr": 0.1})
    with pytest.raises(TypeError, match="hp"):
        adam_step(np.zeros(2), np.zeros(2), init_state(AdamConfig(), np.zeros(2)), SGDConfig(lr=0.1))
    with pytest.raises(TypeError, match="state"):
        sgd_step(np.zeros(2), np.zeros(2), None, SGDConfig(lr=0.1))
    with pytest.raises(TypeError, match="grads"):
        sgd_step(np.zeros(2), np.array(["a", "b"]), OptimizerState(0), SGDConfig(lr=0.1))
    with pytest.raises(TypeError, match="optimizer"):
        state_tensors(3)
    with pytest.raises(TypeError, match="bias_correction"):
        AdamConfig(bias_correction=1)


def test_ema_momentum_bias_correction():
    # with constant gradient g, the corrected EMA equals g at every step: theta_t = -t * lr * g
    hp = MomentumConfig(lr=0.5, momentum=0.9, form="ema", bias_correction=True)
    path = optimize(lambda x: np.full_like(x, 2.0), np.zeros(1), hp, 6)
    np.testing.assert_allclose(path[:, 0], -0.5 * 2.0 * np.arange(7), rtol=1e-12)


def test_init_state_follows_params_dtype():
    st = init_state(AdamConfig(), np.zeros(4, dtype=np.float32))
    assert st.t == 0 and st.first.dtype == np.float32 and st.second.shape == (4,)
    p, _ = sgd_step(np.ones(2, dtype=np.float16), np.ones(2, dtype=np.float16), st, SGDConfig(lr=1e-4))
    assert p.dtype == np.float16
