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


# --------------------------------------------------------------------------- schedules
from torch.optim.lr_scheduler import ConstantLR, CosineAnnealingLR, LinearLR, SequentialLR  # noqa: E402

from llmmath.optim import (  # noqa: E402
    adam_update_bound,
    clip_grad_norm,
    cosine_schedule,
    ema_horizon,
    gd_optimal,
    gd_rate,
    global_grad_norm,
    heavy_ball_optimal,
    heavy_ball_rate,
    linear_schedule,
    max_stable_lr,
    wsd_schedule,
)


def _torch_lrs(make, peak: float, steps: int) -> list[float]:
    """The learning rate PyTorch's scheduler gives each of ``steps`` optimizer steps."""
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=peak)
    sched = make(opt)
    lrs = []
    for _ in range(steps):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return lrs


def _warm(opt, w):
    return LinearLR(opt, start_factor=1 / w, end_factor=1.0, total_iters=w - 1)


SCHEDULE_CASES = [(3e-4, 12, 200, 3e-5), (1.0, 2, 37, 0.0), (0.02, 50, 51, 0.01), (5e-3, 0, 90, 1e-4)]


@pytest.mark.parametrize(("peak", "w", "total", "low"), SCHEDULE_CASES)
def test_cosine_and_linear_schedules_match_torch_sequential_lr(peak, w, total, low):
    if w:
        cos = _torch_lrs(lambda o: SequentialLR(o, [_warm(o, w), CosineAnnealingLR(o, total - w, low)], [w]),
                         peak, total)
        lin = _torch_lrs(lambda o: SequentialLR(o, [_warm(o, w), LinearLR(o, 1.0, low / peak, total - w)], [w]),
                         peak, total)
    else:
        cos = _torch_lrs(lambda o: CosineAnnealingLR(o, total, low), peak, total)
        lin = _torch_lrs(lambda o: LinearLR(o, 1.0, low / peak, total), peak, total)
    ours_cos = [cosine_schedule(t, peak, total, w, low) for t in range(total)]
    ours_lin = linear_schedule(np.arange(total), peak, total, w, low)  # arrays of steps too
    np.testing.assert_allclose(ours_cos, cos, rtol=1e-12, atol=1e-15 * peak)
    np.testing.assert_allclose(ours_lin, lin, rtol=1e-12, atol=1e-15 * peak)


@pytest.mark.parametrize(("peak", "w", "total", "decay", "low"), [(3e-4, 10, 120, 30, 3e-5), (1.0, 0, 40, 7, 0.0)])
def test_wsd_schedule_matches_torch_sequential_lr(peak, w, total, decay, low):
    stable = ConstantLR  # factor 1: holds the peak
    if w:
        ref = _torch_lrs(lambda o: SequentialLR(
            o, [_warm(o, w), stable(o, 1.0, total), LinearLR(o, 1.0, low / peak, decay)], [w, total - decay]),
            peak, total)
    else:
        ref = _torch_lrs(lambda o: SequentialLR(
            o, [stable(o, 1.0, total), LinearLR(o, 1.0, low / peak, decay)], [total - decay]), peak, total)
    ours = [wsd_schedule(t, peak, total, decay, w, low) for t in range(total)]
    np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-15 * peak)


def test_schedule_landmarks_by_hand():
    # warmup (t + 1) / W, peak at t = W - 1 and t = W, cosine half-way point (peak + min) / 2
    assert cosine_schedule(0, 1.0, 110, 10, 0.1) == pytest.approx(0.1)
    assert cosine_schedule(9, 1.0, 110, 10, 0.1) == 1.0 == cosine_schedule(10, 1.0, 110, 10, 0.1)
    assert cosine_schedule(60, 1.0, 110, 10, 0.1) == pytest.approx(0.55, rel=1e-15)
    assert linear_schedule(60, 1.0, 110, 10, 0.1) == pytest.approx(0.55, rel=1e-15)
    # min_lr is reached one step after the last one and kept (torch's cosine would rise again)
    assert cosine_schedule(110, 1.0, 110, 10, 0.1) == cosine_schedule(500, 1.0, 110, 10, 0.1) == 0.1
    assert linear_schedule(110, 2.0, 110) == 0.0
    # WSD with the whole post-warmup run as its decay is the linear schedule
    for t in range(0, 130, 7):
        assert wsd_schedule(t, 1.0, 110, 100, 10, 0.1) == pytest.approx(linear_schedule(t, 1.0, 110, 10, 0.1))
    assert wsd_schedule(79, 1.0, 110, 30, 10) == 1.0 > wsd_schedule(81, 1.0, 110, 30, 10)


# --------------------------------------------------------------------------- clipping
@pytest.mark.parametrize("max_norm", [0.5, 1.0, 100.0])
def test_clip_grad_norm_matches_torch(max_norm):
    rng = np.random.default_rng(4)
    grads = [rng.normal(size=(3, 4)), rng.normal(size=7) * 0.1, rng.normal(size=(2, 2, 2)) * 3]
    ps = [torch.zeros(g.shape, dtype=torch.float64, requires_grad=True) for g in grads]
    for p, g in zip(ps, grads, strict=True):
        p.grad = torch.tensor(g)
    total = torch.nn.utils.clip_grad_norm_(ps, max_norm)
    clipped, norm = clip_grad_norm(grads, max_norm)
    assert norm == pytest.approx(float(total), rel=1e-14)
    for c, p in zip(clipped, ps, strict=True):
        np.testing.assert_allclose(c, p.grad.numpy(), rtol=1e-14, atol=0)
    # inputs untouched; above the threshold the new norm is max_norm * ||g|| / (||g|| + 1e-6)
    assert global_grad_norm(grads) == norm
    if norm > max_norm:
        assert global_grad_norm(clipped) == pytest.approx(max_norm * norm / (norm + 1e-6), rel=1e-14)


def test_global_norm_by_hand():
    assert global_grad_norm([np.array([3.0, 4.0]), np.array([[12.0]])]) == 13.0
    assert global_grad_norm(np.array([1.0, 1.0, 1.0, 1.0])) == 2.0
    clipped, norm = clip_grad_norm([np.array([3.0, 4.0]), np.array([12.0])], 1.0, eps=0.0)
    assert norm == 13.0
    np.testing.assert_allclose(np.concatenate(clipped), np.array([3.0, 4.0, 12.0]) / 13.0, rtol=1e-15)


# --------------------------------------------------------------------------- quadratic theory
def _spd(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    return q @ np.diag(np.geomspace(0.5, 40.0, n)) @ q.T


@pytest.mark.parametrize("lr", [0.01, 0.04, 0.049, 0.06])
def test_gd_rate_is_the_spectral_radius_of_the_iteration(lr):
    h = _spd(5, 0)
    expected = np.max(np.abs(np.linalg.eigvals(np.eye(5) - lr * h)))
    assert gd_rate(lr, np.linalg.eigvalsh(h)) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(("lr", "mu"), [(0.01, 0.0), (0.03, 0.5), (0.06, 0.9), (0.1, 0.2), (0.001, 0.99)])
def test_heavy_ball_rate_is_the_spectral_radius_of_the_iteration(lr, mu):
    # (x_{t+1}, x_t) = M (x_t, x_{t-1}) with M = [[(1 + mu) I - lr H, -mu I], [I, 0]]
    h, n = _spd(4, 1), 4
    m = np.block([[(1 + mu) * np.eye(n) - lr * h, -mu * np.eye(n)], [np.eye(n), np.zeros((n, n))]])
    expected = np.max(np.abs(np.linalg.eigvals(m)))
    assert heavy_ball_rate(lr, mu, np.linalg.eigvalsh(h)) == pytest.approx(expected, rel=1e-9)


def test_heavy_ball_rate_matches_torch_sgd_momentum():
    # torch's SGD(momentum) on f = x^T H x / 2: the error shrinks like rate^t (times a polynomial)
    h = np.diag([1.0, 50.0])
    lr, mu, rate = heavy_ball_optimal(1.0, 50.0)
    lr, mu = 0.9 * lr, mu  # off the double root, so the decay is a clean geometric one
    x = torch.tensor([1.0, 1.0], dtype=torch.float64, requires_grad=True)
    opt = torch.optim.SGD([x], lr=lr, momentum=mu)
    hh = torch.tensor(h)
    norms = []
    for _ in range(400):
        opt.zero_grad()
        (0.5 * x @ hh @ x).backward()
        opt.step()
        norms.append(float(torch.linalg.vector_norm(x.detach())))
    measured = (norms[-1] / norms[-101]) ** (1 / 100)
    assert measured == pytest.approx(heavy_ball_rate(lr, mu, [1.0, 50.0]), rel=2e-2)


def test_stability_bound_against_torch():
    # just below 2 (1 + mu) / lambda_max torch's SGD converges, just above it diverges
    for mu in (0.0, 0.5, 0.9):
        bound = max_stable_lr(50.0, mu)
        for factor, converges in ((0.99, True), (1.01, False)):
            x = torch.tensor([1.0], dtype=torch.float64, requires_grad=True)
            opt = torch.optim.SGD([x], lr=factor * bound, momentum=mu)
            for _ in range(600):
                opt.zero_grad()
                (25.0 * x * x).sum().backward()
                opt.step()
            assert (abs(float(x.detach())) < 1e-3) is converges, (mu, factor)


def test_optimal_parameters_by_brute_force():
    m, big = 1.0, 50.0
    lams = np.linspace(m, big, 60)
    lr_gd, rate_gd = gd_optimal(m, big)
    etas = np.linspace(0.001, 0.04, 4000)
    rates = np.max(np.abs(1 - etas[:, None] * lams[None, :]), axis=1)
    assert etas[np.argmin(rates)] == pytest.approx(lr_gd, abs=2e-5)
    assert rates.min() == pytest.approx(rate_gd, abs=1e-4)

    # largest eigenvalue modulus of the 2 x 2 iteration matrix [[1 + mu - eta lam, -mu], [1, 0]]
    # over the spectrum, for every (eta, mu) of a grid, by numpy's eigenvalue solver
    e, u, lam = np.meshgrid(np.linspace(0.03, 0.09, 61), np.linspace(0.4, 0.7, 61), lams, indexing="ij")
    mats = np.zeros((*e.shape, 2, 2))
    mats[..., 0, 0], mats[..., 0, 1], mats[..., 1, 0] = 1 + u - e * lam, -u, 1.0
    radius = np.abs(np.linalg.eigvals(mats)).max(axis=(-1, -2))
    i, j = np.unravel_index(np.argmin(radius), radius.shape)
    best, e_best, u_best = radius[i, j], e[i, j, 0], u[i, j, 0]
    lr_hb, mu_hb, rate_hb = heavy_ball_optimal(m, big)
    assert best >= rate_hb - 1e-9  # nothing on the grid beats the formula
    assert best == pytest.approx(rate_hb, abs=5e-3)
    assert (e_best, u_best) == (pytest.approx(lr_hb, abs=2e-3), pytest.approx(mu_hb, abs=1e-2))
    assert rate_hb == pytest.approx(np.sqrt(mu_hb), rel=1e-14)


def test_heavy_ball_optimum_from_sympy():
    import sympy as sp

    eta, s, m, big = sp.symbols("eta s m L", positive=True)
    sol = sp.solve([sp.Eq(eta * m, (1 - s) ** 2), sp.Eq(eta * big, (1 + s) ** 2)], [eta, s], dict=True)
    (good,) = [d for d in sol if 0 < d[s].subs({m: 1, big: 50}) < 1]  # the root with 0 < sqrt(mu) < 1
    lr, mu, rate = heavy_ball_optimal(2.0, 30.0)
    assert float(good[eta].subs({m: 2, big: 30})) == pytest.approx(lr, rel=1e-12)
    assert float(good[s].subs({m: 2, big: 30})) == pytest.approx(rate, rel=1e-12)


def test_ema_horizon_is_the_mean_age():
    for beta in (0.0, 0.9, 0.95, 0.999):
        k = np.arange(200_000)
        assert ema_horizon(beta) == pytest.approx(float(np.sum((k + 1) * (1 - beta) * beta**k)), rel=1e-9)


@pytest.mark.parametrize(("beta1", "beta2", "steps"), [(0.9, 0.95, 800), (0.9, 0.99, 3000), (0.5, 0.9, 500)])
def test_adam_update_bound_is_reached_by_geometrically_growing_gradients(beta1, beta2, steps):
    hp = AdamConfig(lr=1.0, beta1=beta1, beta2=beta2, eps=0.0)
    r = beta2 / beta1
    g = r ** (np.arange(steps) - steps + 1.0)  # grows by beta2 / beta1 per step, ends at 1
    assert g[0] > 1e-300  # no underflow to an exact zero (0 / 0 with eps = 0)
    p, st = np.zeros(1), init_state(hp, np.zeros(1))
    for gt in g:
        q, st = adam_step(p, np.array([gt]), st, hp)
        last, p = float(p[0] - q[0]), q
    assert last == pytest.approx(adam_update_bound(beta1, beta2), rel=1e-6)
    # random histories stay below it
    rng = np.random.default_rng(0)
    for _ in range(20):
        g = rng.lognormal(0, 2, size=300) * rng.choice([-1, 1], size=300)
        p, st = np.zeros(1), init_state(hp, np.zeros(1))
        for gt in g:
            q, st = adam_step(p, np.array([gt]), st, hp)
            assert abs(float(p[0] - q[0])) <= adam_update_bound(beta1, beta2) * (1 + 1e-12)
            p = q


def test_chapter_qualifies_neither_is_an_upper_bound():
    """Issue 31 item 5: the chapter's verdict on Kingma and Ba's two bounds holds for beta1 > 0 only."""
    import json
    from pathlib import Path

    nb = json.loads((Path(__file__).resolve().parent.parent / "chapters" / "optimizers.ipynb").read_text())
    text = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    i = text.lower().index("neither is an upper bound")
    assert r"\beta_1 > 0" in text[i - 60:i], "the verdict must be qualified: for beta1 > 0"
    assert r"$\beta_1 = 0$" in text[i:i + 1500]  # and the exception stated


def test_adam_update_bound_values():
    # Kingma and Ba's sparse case (1 - b1) / sqrt(1 - b2) is below the supremum
    assert adam_update_bound(0.9, 0.999) > 0.1 / np.sqrt(0.001)
    assert adam_update_bound(0.9, 0.95) > 1.0
    assert adam_update_bound(0.0, 0.5) == pytest.approx(1 / np.sqrt(0.5))
    assert adam_update_bound(0.9, 0.8) == np.inf


def _kingma_ba_bound(beta1, beta2):
    # Kingma and Ba, section 2.1: |step| <= (1 - b1) / sqrt(1 - b2) if (1 - b1) > sqrt(1 - b2), else 1
    return (1 - beta1) / np.sqrt(1 - beta2) if 1 - beta1 > np.sqrt(1 - beta2) else 1.0


def test_kingma_ba_bound_fails_exactly_for_beta1_above_zero_unless_beta1_is_beta2():
    """Issue 31: "neither is an upper bound" holds for beta1 > 0 (beta1 != beta2), not for beta1 = 0."""
    # beta1 = 0: a gradient after a long run of zeros reaches (1 - b2^t)^(1/2) / (1 - b2)^(1/2) -> the
    # paper's first value, and random histories stay below it: it is the supremum
    rng = np.random.default_rng(1)
    for beta2 in (0.5, 0.9, 0.95, 0.999):
        kb = _kingma_ba_bound(0.0, beta2)
        assert kb == pytest.approx(1 / np.sqrt(1 - beta2))
        hp = AdamConfig(lr=1.0, beta1=0.0, beta2=beta2, eps=0.0)
        p, st = np.zeros(1), init_state(hp, np.zeros(1))
        steps = 20_000 if beta2 == 0.999 else 2_000
        for gt in np.r_[np.full(steps, 1e-150), 1.0]:
            q, st = adam_step(p, np.array([gt]), st, hp)
            last, p = float(p[0] - q[0]), q
        assert last == pytest.approx(kb, rel=1e-4)
        for _ in range(5):
            p, st = np.zeros(1), init_state(hp, np.zeros(1))
            for gt in rng.lognormal(0, 3, size=300) * rng.choice([-1, 1], size=300):
                q, st = adam_step(p, np.array([gt]), st, hp)
                assert abs(float(p[0] - q[0])) <= kb * (1 + 1e-12)
                p = q
    # beta1 = beta2: the supremum is 1, the paper's second value
    for beta in (0.5, 0.9, 0.95):
        assert adam_update_bound(beta, beta) == pytest.approx(_kingma_ba_bound(beta, beta), rel=1e-12)
    # every other beta1 > 0 with beta1^2 < beta2: the supremum, reached by growing gradients (test
    # above), exceeds the paper's value
    for beta1, beta2 in ((0.9, 0.95), (0.9, 0.99), (0.9, 0.999), (0.5, 0.9), (0.1, 0.999), (0.95, 0.9)):
        assert adam_update_bound(beta1, beta2) > _kingma_ba_bound(beta1, beta2) * (1 + 1e-6)


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda: cosine_schedule(-1, 1.0, 10), "step"),
        (lambda: cosine_schedule(0, 0.0, 10), "peak_lr"),
        (lambda: cosine_schedule(0, 1.0, 0), "total_steps"),
        (lambda: cosine_schedule(0, 1.0, 10, 10), "warmup_steps"),
        (lambda: linear_schedule(0, 1.0, 10, 2, 2.0), "min_lr"),
        (lambda: linear_schedule(0, 1.0, 10, 2, -0.1), "min_lr"),
        (lambda: wsd_schedule(0, 1.0, 10, 9, 2), "decay_steps"),
        (lambda: wsd_schedule(0, 1.0, 10, 0), "decay_steps"),
        (lambda: clip_grad_norm([np.ones(2)], 0.0), "max_norm"),
        (lambda: clip_grad_norm([np.ones(2)], 1.0, eps=-1.0), "eps"),
        (lambda: clip_grad_norm([np.ones(2), np.array([np.nan])], 1.0), "grads"),
        (lambda: gd_rate(0.0, [1.0]), "lr"),
        (lambda: gd_rate(0.1, [1.0, -2.0]), "eigenvalues"),
        (lambda: heavy_ball_rate(0.1, 1.0, [1.0]), "momentum"),
        (lambda: max_stable_lr(0.0), "lambda_max"),
        (lambda: gd_optimal(2.0, 1.0), "lambda_min"),
        (lambda: heavy_ball_optimal(0.0, 1.0), "lambda_min"),
        (lambda: ema_horizon(1.0), "beta"),
        (lambda: adam_update_bound(0.9, 1.0), "beta2"),
    ],
)
def test_new_functions_reject_bad_values(make, name):
    with pytest.raises(ValueError, match=name):
        make()


def test_new_functions_reject_bad_types():
    with pytest.raises(TypeError, match="step"):
        cosine_schedule(1.0, 1.0, 10)
    with pytest.raises(TypeError, match="step"):
        cosine_schedule(True, 1.0, 10)
    with pytest.raises(ValueError, match="step"):
        linear_schedule(np.array([3, -1]), 1.0, 10)
    assert isinstance(cosine_schedule(np.int64(3), 1.0, 10), float)
    assert cosine_schedule(np.arange(4), 1.0, 10).shape == (4,)
    with pytest.raises(TypeError, match="total_steps"):
        wsd_schedule(0, 1.0, 10.0, 2)
    with pytest.raises(TypeError, match="grads"):
        clip_grad_norm([], 1.0)
    with pytest.raises(TypeError, match="grads"):
        global_grad_norm([np.array(["a"])])
    with pytest.raises(TypeError, match="eigenvalues"):
        gd_rate(0.1, "big")


def test_adam_step_ratio_under_growth_increases_to_the_bound():
    # At step t the Cauchy-Schwarz maximum of |m_hat / sqrt(v_hat)| over all histories is
    # (1-b1)/(1-b1^t) * sqrt(1-b2^t)/sqrt(1-b2) * sqrt((1 - q^t)/(1 - q)), q = b1^2/b2, reached by
    # g_k proportional to (b2/b1)^k; it increases with t towards adam_update_bound.
    b1, b2, steps = 0.9, 0.95, 400
    q, t = b1 * b1 / b2, np.arange(1, steps + 1)
    sup_t = (1 - b1) / (1 - b1**t) * np.sqrt((1 - b2**t) / (1 - b2)) * np.sqrt((1 - q**t) / (1 - q))
    assert np.all(np.diff(sup_t) > 0) and sup_t[-1] == pytest.approx(adam_update_bound(b1, b2), rel=1e-9)
    hp = AdamConfig(lr=1.0, beta1=b1, beta2=b2, eps=0.0)
    p, st = np.zeros(1), init_state(hp, np.zeros(1))
    measured = []
    for k in range(steps):
        q_, st = adam_step(p, np.array([(b2 / b1) ** k]), st, hp)
        measured.append(float(p[0] - q_[0]))
        p = q_
    np.testing.assert_allclose(measured, sup_t, rtol=1e-10)
