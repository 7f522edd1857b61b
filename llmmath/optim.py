"""Optimizer update rules (SGD, Momentum, RMSProp, Adam, AdamW), their state memory, learning-rate
schedules, gradient clipping, and the convergence theory of gradient descent on a quadratic.

Every rule is a pure function ``<name>_step(params, grads, state, hyperparameters) -> (params, state)``
on numpy arrays (``optimizer_step`` dispatches on the type of the hyperparameters): nothing is
mutated, the new parameters and the new state are returned. The hyperparameters are frozen
dataclasses validated on construction; the state is the frozen dataclass
:class:`OptimizerState`. The schedules (``cosine_schedule``, ``linear_schedule``,
``wsd_schedule``) give the learning rate of one step; ``clip_grad_norm`` rescales a list of
gradient arrays as ``torch.nn.utils.clip_grad_norm_`` does; ``gd_rate``, ``heavy_ball_rate`` and
their optima are the linear convergence rates on ``f(x) = x^T H x / 2``.
Derived in chapter :doc:`/chapters/optimizers`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from llmmath._validate import (
    check_array_positive,
    check_bool,
    check_choice,
    check_fraction,
    check_int,
    check_positive,
)

#: The optimizers whose per-parameter state this module counts (one source of truth).
OPTIMIZERS: tuple[str, ...] = ("sgd", "momentum", "rmsprop", "adam", "adamw")

_STATE_TENSORS: dict[str, int] = {"sgd": 0, "momentum": 1, "rmsprop": 1, "adam": 2, "adamw": 2}


def state_tensors(optimizer: str) -> int:
    """Number of per-parameter state values the optimizer keeps.

    sgd 0; momentum 1 (velocity); rmsprop 1 (mean square); adam, adamw 2 (first and second
    moments). Counts the optimizer state only, not the fp32 master weights of mixed precision
    nor the single step counter. Derived in chapter :doc:`/chapters/optimizers`.
    """
    return _STATE_TENSORS[check_choice("optimizer", optimizer, OPTIMIZERS)]


def state_bytes_per_param(optimizer: str, bytes_per_value: int = 4) -> int:
    """Bytes of optimizer state per parameter: ``state_tensors(optimizer) * bytes_per_value``.

    Assumes every state value is stored in the same format, fp32 (4 bytes) by default, as
    seed 001 does. Derived in chapter :doc:`/chapters/optimizers`.
    """
    bytes_per_value = check_int("bytes_per_value", bytes_per_value, minimum=1)
    return state_tensors(optimizer) * bytes_per_value


__all__ = [
    "OPTIMIZERS",
    "state_tensors",
    "state_bytes_per_param",
    "SGDConfig",
    "MomentumConfig",
    "RMSPropConfig",
    "AdamConfig",
    "AdamWConfig",
    "OptimizerState",
    "init_state",
    "sgd_step",
    "momentum_step",
    "rmsprop_step",
    "adam_step",
    "adamw_step",
    "optimizer_step",
    "optimize",
    "bias_correction_factor",
    "round_to_bfloat16",
    "ema_horizon",
    "adam_update_bound",
    "cosine_schedule",
    "linear_schedule",
    "wsd_schedule",
    "global_grad_norm",
    "clip_grad_norm",
    "gd_rate",
    "heavy_ball_rate",
    "max_stable_lr",
    "gd_optimal",
    "heavy_ball_optimal",
]


# --------------------------------------------------------------------------- hyperparameters
def _lr(value: float) -> float:
    return check_positive("lr", value)


def _beta(name: str, value: float) -> float:
    return check_fraction(name, value, low_open=False, high_open=True)


def _nonneg(name: str, value: float) -> float:
    return check_positive(name, value, allow_zero=True)


@dataclass(frozen=True)
class SGDConfig:
    """Plain SGD: ``theta <- theta - lr * (g + weight_decay * theta)``.

    Derived in chapter :doc:`/chapters/optimizers`.
    """

    lr: float
    weight_decay: float = 0.0

    def __post_init__(self) -> None:
        _lr(self.lr)
        _nonneg("weight_decay", self.weight_decay)


@dataclass(frozen=True)
class MomentumConfig:
    """SGD with momentum.

    ``form="pytorch"`` (Polyak heavy ball as PyTorch writes it, dampening 0):
    ``v <- mu v + g``, ``theta <- theta - lr v``.
    ``form="ema"`` (seed 001): ``v <- mu v + (1 - mu) g``, ``theta <- theta - lr v``,
    optionally bias-corrected, ``theta <- theta - lr v / (1 - mu^t)``.
    Weight decay is coupled (added to the gradient), as in ``torch.optim.SGD``.

    Derived in chapter :doc:`/chapters/optimizers`.
    """

    lr: float
    momentum: float = 0.9
    form: str = "pytorch"
    bias_correction: bool = False
    weight_decay: float = 0.0

    def __post_init__(self) -> None:
        _lr(self.lr)
        _beta("momentum", self.momentum)
        check_choice("form", self.form, ("pytorch", "ema"))
        if check_bool("bias_correction", self.bias_correction) and self.form != "ema":
            raise ValueError("bias_correction must be False when form='pytorch' (v is a sum, not an average)")
        _nonneg("weight_decay", self.weight_decay)


@dataclass(frozen=True)
class RMSPropConfig:
    """RMSProp: ``s <- alpha s + (1 - alpha) g^2``, ``theta <- theta - lr g / (sqrt(s) + eps)``.

    ``eps_placement="outside"`` is PyTorch's ``sqrt(s) + eps``; ``"inside"`` is seed 001's
    ``sqrt(s + eps)``. ``bias_correction`` divides ``s`` by ``1 - alpha^t`` (PyTorch does not).

    Derived in chapter :doc:`/chapters/optimizers`.
    """

    lr: float = 0.01
    alpha: float = 0.99
    eps: float = 1e-8
    eps_placement: str = "outside"
    bias_correction: bool = False
    weight_decay: float = 0.0

    def __post_init__(self) -> None:
        _lr(self.lr)
        _beta("alpha", self.alpha)
        _nonneg("eps", self.eps)
        check_choice("eps_placement", self.eps_placement, ("outside", "inside"))
        check_bool("bias_correction", self.bias_correction)
        _nonneg("weight_decay", self.weight_decay)


@dataclass(frozen=True)
class AdamConfig:
    """Adam (Kingma & Ba) with coupled L2 weight decay, as ``torch.optim.Adam``.

    ``m <- b1 m + (1 - b1) g``, ``v <- b2 v + (1 - b2) g^2``, ``m_hat = m / (1 - b1^t)``,
    ``v_hat = v / (1 - b2^t)``, ``theta <- theta - lr m_hat / (sqrt(v_hat) + eps)``;
    ``g`` includes ``weight_decay * theta``.

    Derived in chapter :doc:`/chapters/optimizers`.
    """

    lr: float = 1e-3
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    bias_correction: bool = True
    eps_placement: str = "outside"
    weight_decay: float = 0.0

    def __post_init__(self) -> None:
        _lr(self.lr)
        _beta("beta1", self.beta1)
        _beta("beta2", self.beta2)
        _nonneg("eps", self.eps)
        check_bool("bias_correction", self.bias_correction)
        check_choice("eps_placement", self.eps_placement, ("outside", "inside"))
        _nonneg("weight_decay", self.weight_decay)


@dataclass(frozen=True)
class AdamWConfig:
    """AdamW (Loshchilov & Hutter) as ``torch.optim.AdamW``: decoupled weight decay.

    ``theta <- theta (1 - lr * weight_decay)`` first, then the Adam step on the raw gradient.

    Derived in chapter :doc:`/chapters/optimizers`.
    """

    lr: float = 1e-3
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    weight_decay: float = 0.01

    def __post_init__(self) -> None:
        _lr(self.lr)
        _beta("beta1", self.beta1)
        _beta("beta2", self.beta2)
        _nonneg("eps", self.eps)
        _nonneg("weight_decay", self.weight_decay)


Config = SGDConfig | MomentumConfig | RMSPropConfig | AdamConfig | AdamWConfig

_NAME_OF: dict[type, str] = {
    SGDConfig: "sgd",
    MomentumConfig: "momentum",
    RMSPropConfig: "rmsprop",
    AdamConfig: "adam",
    AdamWConfig: "adamw",
}


# --------------------------------------------------------------------------- state
@dataclass(frozen=True)
class OptimizerState:
    """Optimizer state after ``t`` steps.

    ``first``: Momentum's velocity or Adam's first moment ``m`` (None for SGD, RMSProp);
    ``second``: RMSProp's mean square or Adam's second moment ``v`` (None for SGD, Momentum).

    Derived in chapter :doc:`/chapters/optimizers`.
    """

    t: int
    first: np.ndarray | None = None
    second: np.ndarray | None = None


def _as_float_array(name: str, value: object) -> np.ndarray:
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as exc:  # pragma: no cover - asarray accepts nearly anything
        raise TypeError(f"{name} must be an array of real numbers, got {value!r}") from exc
    if arr.dtype.kind in "biu":
        arr = arr.astype(np.float64)
    if arr.dtype.kind != "f":
        raise TypeError(f"{name} must be an array of real numbers, got dtype {arr.dtype}")
    return arr


def _optimizer_name(hyperparameters: object) -> str:
    name = _NAME_OF.get(type(hyperparameters))
    if name is None:
        accepted = ", ".join(cls.__name__ for cls in _NAME_OF)
        raise TypeError(f"hyperparameters must be one of {accepted}; got {type(hyperparameters).__name__}")
    return name


def init_state(hyperparameters: Config, params: ArrayLike) -> OptimizerState:
    """Zero state (``t = 0``) for ``params``: ``state_tensors`` arrays of zeros shaped like params.

    The state arrays take the dtype of ``params``. Derived in chapter :doc:`/chapters/optimizers`.
    """
    name = _optimizer_name(hyperparameters)
    p = _as_float_array("params", params)
    zeros = [np.zeros_like(p) for _ in range(state_tensors(name))]
    if name == "rmsprop":
        return OptimizerState(t=0, second=zeros[0])
    return OptimizerState(0, *zeros)


def _checked(params, grads, state: OptimizerState, needs: tuple[str, ...], hp: object, cls: type):
    if not isinstance(hp, cls):
        raise TypeError(f"hp must be a {cls.__name__}, got {type(hp).__name__}")
    p = _as_float_array("params", params)
    g = _as_float_array("grads", grads)
    if g.shape != p.shape:
        raise ValueError(f"grads must have the shape of params {p.shape}, got {g.shape}")
    if not isinstance(state, OptimizerState):
        raise TypeError(f"state must be an OptimizerState (use init_state), got {type(state).__name__}")
    check_int("state.t", state.t, minimum=0)
    for field in needs:
        arr = getattr(state, field)
        if arr is None:
            raise ValueError(f"state.{field} is None: not a state of this optimizer (use init_state)")
        if np.shape(arr) != p.shape:
            raise ValueError(f"state.{field} must have the shape of params {p.shape}, got {np.shape(arr)}")
    return p, g.astype(p.dtype, copy=False)


# --------------------------------------------------------------------------- update rules
def sgd_step(
    params: ArrayLike, grads: ArrayLike, state: OptimizerState, hp: SGDConfig
) -> tuple[np.ndarray, OptimizerState]:
    """One SGD step: ``theta_{t+1} = theta_t - lr * (g_t + weight_decay * theta_t)``.

    Returns new arrays; the inputs are not modified. Derived in chapter :doc:`/chapters/optimizers`.
    """
    p, g = _checked(params, grads, state, (), hp, SGDConfig)
    if hp.weight_decay:
        g = g + hp.weight_decay * p
    return p - hp.lr * g, OptimizerState(state.t + 1)


def momentum_step(
    params: ArrayLike, grads: ArrayLike, state: OptimizerState, hp: MomentumConfig
) -> tuple[np.ndarray, OptimizerState]:
    """One momentum step.

    pytorch form: ``v_t = mu v_{t-1} + g_t``; ema form (seed 001): ``v_t = mu v_{t-1} + (1 - mu) g_t``;
    both with ``v_0 = 0`` and ``theta_{t+1} = theta_t - lr v_t`` (ema with bias correction:
    ``lr v_t / (1 - mu^t)``). Derived in chapter :doc:`/chapters/optimizers`.
    """
    p, g = _checked(params, grads, state, ("first",), hp, MomentumConfig)
    if hp.weight_decay:
        g = g + hp.weight_decay * p
    t = state.t + 1
    if hp.form == "pytorch":
        v = hp.momentum * state.first + g
        update = v
    else:
        v = hp.momentum * state.first + (1 - hp.momentum) * g
        update = v / bias_correction_factor(hp.momentum, t) if hp.bias_correction else v
    return p - hp.lr * update, OptimizerState(t, first=v)


def rmsprop_step(
    params: ArrayLike, grads: ArrayLike, state: OptimizerState, hp: RMSPropConfig
) -> tuple[np.ndarray, OptimizerState]:
    """One RMSProp step: ``s_t = alpha s_{t-1} + (1 - alpha) g_t^2``,
    ``theta_{t+1} = theta_t - lr g_t / (sqrt(s_t) + eps)`` (``sqrt(s_t + eps)`` if eps is inside).

    With ``bias_correction``, ``s_t`` is replaced by ``s_t / (1 - alpha^t)`` in the update.
    Derived in chapter :doc:`/chapters/optimizers`.
    """
    p, g = _checked(params, grads, state, ("second",), hp, RMSPropConfig)
    if hp.weight_decay:
        g = g + hp.weight_decay * p
    t = state.t + 1
    s = hp.alpha * state.second + (1 - hp.alpha) * g * g
    s_used = s / bias_correction_factor(hp.alpha, t) if hp.bias_correction else s
    denom = np.sqrt(s_used) + hp.eps if hp.eps_placement == "outside" else np.sqrt(s_used + hp.eps)
    return p - hp.lr * g / denom, OptimizerState(t, second=s)


def _adam_core(p, g, state, lr, beta1, beta2, eps, bias_correction, eps_placement):
    t = state.t + 1
    m = beta1 * state.first + (1 - beta1) * g
    v = beta2 * state.second + (1 - beta2) * g * g
    if bias_correction:
        m_hat = m / bias_correction_factor(beta1, t)
        v_hat = v / bias_correction_factor(beta2, t)
    else:
        m_hat, v_hat = m, v
    denom = np.sqrt(v_hat) + eps if eps_placement == "outside" else np.sqrt(v_hat + eps)
    return p - lr * m_hat / denom, OptimizerState(t, first=m, second=v)


def adam_step(
    params: ArrayLike, grads: ArrayLike, state: OptimizerState, hp: AdamConfig
) -> tuple[np.ndarray, OptimizerState]:
    """One Adam step (Kingma & Ba, Algorithm 1; coupled L2 decay as ``torch.optim.Adam``).

    ``m_t = b1 m_{t-1} + (1-b1) g_t``, ``v_t = b2 v_{t-1} + (1-b2) g_t^2``,
    ``theta_{t+1} = theta_t - lr * m_hat_t / (sqrt(v_hat_t) + eps)`` with
    ``m_hat_t = m_t / (1 - b1^t)``, ``v_hat_t = v_t / (1 - b2^t)`` (no hats if
    ``bias_correction=False``; ``sqrt(v_hat + eps)`` if ``eps_placement="inside"``, seed 001).
    Derived in chapter :doc:`/chapters/optimizers`.
    """
    p, g = _checked(params, grads, state, ("first", "second"), hp, AdamConfig)
    if hp.weight_decay:
        g = g + hp.weight_decay * p
    return _adam_core(p, g, state, hp.lr, hp.beta1, hp.beta2, hp.eps, hp.bias_correction, hp.eps_placement)


def adamw_step(
    params: ArrayLike, grads: ArrayLike, state: OptimizerState, hp: AdamWConfig
) -> tuple[np.ndarray, OptimizerState]:
    """One AdamW step as ``torch.optim.AdamW``: ``theta <- theta (1 - lr * weight_decay)``, then
    the bias-corrected Adam step on the raw gradient (decoupled weight decay).

    Loshchilov & Hutter's ``lambda`` per step equals PyTorch's ``lr * weight_decay``.
    Derived in chapter :doc:`/chapters/optimizers`.
    """
    p, g = _checked(params, grads, state, ("first", "second"), hp, AdamWConfig)
    p = p * (1 - hp.lr * hp.weight_decay)
    return _adam_core(p, g, state, hp.lr, hp.beta1, hp.beta2, hp.eps, True, "outside")


_STEP: dict[str, Callable] = {
    "sgd": sgd_step,
    "momentum": momentum_step,
    "rmsprop": rmsprop_step,
    "adam": adam_step,
    "adamw": adamw_step,
}


def optimizer_step(
    params: ArrayLike, grads: ArrayLike, state: OptimizerState, hyperparameters: Config
) -> tuple[np.ndarray, OptimizerState]:
    """One step of the optimizer chosen by the type of ``hyperparameters`` (dispatches to
    ``sgd_step``, ``momentum_step``, ``rmsprop_step``, ``adam_step`` or ``adamw_step``).

    Derived in chapter :doc:`/chapters/optimizers`.
    """
    return _STEP[_optimizer_name(hyperparameters)](params, grads, state, hyperparameters)


def optimize(
    grad_fn: Callable[[np.ndarray], np.ndarray], params0: ArrayLike, hyperparameters: Config, steps: int
) -> np.ndarray:
    """Run ``steps`` steps from ``params0`` with gradients ``grad_fn(params)``.

    Returns the trajectory, an array of shape ``(steps + 1, *params0.shape)`` whose row 0 is
    ``params0``. Derived in chapter :doc:`/chapters/optimizers`.
    """
    steps = check_int("steps", steps, minimum=0)
    if not callable(grad_fn):
        raise TypeError(f"grad_fn must be callable, got {type(grad_fn).__name__}")
    p = _as_float_array("params0", params0)
    state = init_state(hyperparameters, p)
    path = [p]
    for _ in range(steps):
        p, state = optimizer_step(p, grad_fn(p), state, hyperparameters)
        path.append(p)
    return np.stack(path)


def bias_correction_factor(beta: float, t: int) -> float:
    """``1 - beta^t``: the expected value of an exponential moving average with decay ``beta``,
    started at 0, of a constant signal 1 after ``t`` steps (so ``E[EMA_t] = (1 - beta^t) E[g]``).

    Derived in chapter :doc:`/chapters/optimizers`.
    """
    beta = check_fraction("beta", beta, low_open=False, high_open=True)
    t = check_int("t", t, minimum=1)
    return 1.0 - beta**t


def round_to_bfloat16(x: ArrayLike) -> np.ndarray:
    """Round float32 values to the nearest bfloat16 (ties to even), returned as float32.

    bfloat16 keeps the sign, the 8 exponent bits and the top 7 mantissa bits of a float32; the
    rounding adds ``0x7FFF + lsb`` to the 32-bit pattern before clearing the low 16 bits.
    NaN stays NaN. Derived in chapter :doc:`/chapters/optimizers`.
    """
    try:
        a = np.asarray(x, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"x must be a number or an array of numbers, got {x!r}") from exc
    bits = a.view(np.uint32).astype(np.uint64)
    lsb = (bits >> 16) & 1
    rounded = ((bits + 0x7FFF + lsb) & 0xFFFF0000).astype(np.uint32)
    out = rounded.view(np.float32)
    return np.where(np.isnan(a), np.float32(np.nan), out)


# --------------------------------------------------------------------------- moving averages
def ema_horizon(beta: float) -> float:
    """``1 / (1 - beta)``: the averaging horizon of an exponential moving average with decay ``beta``.

    The weights ``(1 - beta) beta^k`` of the samples ``k`` steps old have mean age
    ``sum_k (k + 1) (1 - beta) beta^k = 1 / (1 - beta)`` (counting the newest sample as age 1); the
    average also forgets a change of its input by the factor ``beta`` per step. Adam's
    ``beta2 = 0.999`` averages over about 1000 steps, the ``0.95`` of GPT-3 and LLaMA over 20.
    Derived in chapter :doc:`/chapters/optimizers`.
    """
    beta = check_fraction("beta", beta, low_open=False, high_open=True)
    return 1.0 / (1.0 - beta)


def adam_update_bound(beta1: float, beta2: float) -> float:
    """The largest ``|m_hat_t / sqrt(v_hat_t)|`` over all gradient histories and all steps ``t``
    (Adam with ``epsilon = 0``): ``(1 - beta1) / sqrt((1 - beta2) (1 - beta1^2 / beta2))`` if
    ``beta1^2 < beta2``, else ``inf`` (the update is unbounded).

    By Cauchy-Schwarz, ``|sum_k beta1^k g_k| <= sqrt(sum_k (beta1^2/beta2)^k) sqrt(sum_k beta2^k g_k^2)``,
    with equality for gradients that grow by the factor ``beta2 / beta1`` per step; the bound is the
    limit ``t -> inf`` of the bias-corrected ratio, which increases with ``t``. Adam's step is at
    most this many learning rates per coordinate: about 1.16 for ``(0.9, 0.95)``, 7.3 for
    ``(0.9, 0.999)``. Derived in chapter :doc:`/chapters/optimizers`.
    """
    beta1 = check_fraction("beta1", beta1, low_open=False, high_open=True)
    beta2 = check_fraction("beta2", beta2, low_open=True, high_open=True)
    q = beta1 * beta1 / beta2
    if q >= 1.0:
        return math.inf
    return (1.0 - beta1) / math.sqrt((1.0 - beta2) * (1.0 - q))


# --------------------------------------------------------------------------- schedules
def _steps(step: object) -> np.ndarray:
    """``step`` as an int64 array (0-d for a scalar), checked to be integers >= 0."""
    if isinstance(step, (bool, np.bool_)):
        raise TypeError(f"step must be an integer or an array of integers, got {step!r}")
    arr = np.asarray(step)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"step must be an integer or an array of integers, got {type(step).__name__} {step!r}")
    if arr.size and int(arr.min()) < 0:
        raise ValueError(f"step must be an integer >= 0 (steps count from 0), got {step!r}")
    return arr.astype(np.int64)


def _schedule(step: object, peak_lr: float, total_steps: int, warmup_steps: int, min_lr: float):
    """Validate the common arguments of the schedules; return them with the warmup rates."""
    t = _steps(step)
    peak = check_positive("peak_lr", peak_lr)
    total = check_int("total_steps", total_steps, minimum=1)
    warm = check_int("warmup_steps", warmup_steps, minimum=0, maximum=total - 1)
    low = check_positive("min_lr", min_lr, allow_zero=True)
    if low > peak:
        raise ValueError(f"min_lr must be <= peak_lr = {peak}, got {low}")
    warmup = peak * (t + 1) / max(warm, 1)
    return t, peak, total, warm, low, warmup


def _scalar_or_array(t: np.ndarray, values: np.ndarray) -> float | np.ndarray:
    return float(values) if t.ndim == 0 else values


def cosine_schedule(step: int | ArrayLike, peak_lr: float, total_steps: int, warmup_steps: int = 0,
                    min_lr: float = 0.0) -> float | np.ndarray:
    """Learning rate of step ``t = step`` (counted from 0; an integer or an array of integers) of
    linear warmup then cosine decay.

    ``eta_t = peak * (t + 1) / W`` for ``t < W`` (the first step already moves), then
    ``eta_t = min_lr + (peak - min_lr) (1 + cos(pi p)) / 2`` with ``p = min(1, (t - W) / (T - W))``:
    the decay starts at the peak at ``t = W`` and would reach ``min_lr`` at ``t = T``, one step after
    the last of the ``T`` steps (``min_lr`` from then on). This is exactly PyTorch's
    ``SequentialLR([LinearLR(start_factor=1/W, total_iters=W-1), CosineAnnealingLR(T_max=T-W,
    eta_min=min_lr)], milestones=[W])`` stepped once per step. Derived in chapter
    :doc:`/chapters/optimizers`.
    """
    t, peak, total, warm, low, warmup = _schedule(step, peak_lr, total_steps, warmup_steps, min_lr)
    p = np.clip((t - warm) / (total - warm), 0.0, 1.0)
    decay = low + (peak - low) * (1.0 + np.cos(np.pi * p)) / 2.0
    return _scalar_or_array(t, np.where(t < warm, warmup, decay))


def linear_schedule(step: int | ArrayLike, peak_lr: float, total_steps: int, warmup_steps: int = 0,
                    min_lr: float = 0.0) -> float | np.ndarray:
    """Learning rate of step ``t`` of linear warmup then linear decay to ``min_lr``.

    Warmup as in :func:`cosine_schedule`; then ``eta_t = peak + (min_lr - peak) p`` with
    ``p = min(1, (t - W) / (T - W))``. PyTorch: ``SequentialLR([LinearLR(1/W, 1, W-1),
    LinearLR(1, min_lr/peak, T-W)], milestones=[W])``. Derived in chapter :doc:`/chapters/optimizers`.
    """
    t, peak, total, warm, low, warmup = _schedule(step, peak_lr, total_steps, warmup_steps, min_lr)
    p = np.clip((t - warm) / (total - warm), 0.0, 1.0)
    return _scalar_or_array(t, np.where(t < warm, warmup, peak + (low - peak) * p))


def wsd_schedule(step: int | ArrayLike, peak_lr: float, total_steps: int, decay_steps: int,
                 warmup_steps: int = 0, min_lr: float = 0.0) -> float | np.ndarray:
    """Learning rate of step ``t`` of a warmup-stable-decay (WSD) schedule.

    Warmup as in :func:`cosine_schedule`, the peak held until step ``T - S`` (``S = decay_steps``),
    then a linear decay ``eta_t = peak + (min_lr - peak) p``, ``p = min(1, (t - (T - S)) / S)``.
    With ``S = T - W`` it is :func:`linear_schedule`. PyTorch: ``SequentialLR([LinearLR(1/W, 1,
    W-1), ConstantLR(1, T), LinearLR(1, min_lr/peak, S)], milestones=[W, T-S])``. Derived in chapter
    :doc:`/chapters/optimizers`.
    """
    t, peak, total, warm, low, warmup = _schedule(step, peak_lr, total_steps, warmup_steps, min_lr)
    decay = check_int("decay_steps", decay_steps, minimum=1, maximum=total - warm)
    p = np.clip((t - (total - decay)) / decay, 0.0, 1.0)
    return _scalar_or_array(t, np.where(t < warm, warmup, peak + (low - peak) * p))


# --------------------------------------------------------------------------- gradient clipping
def _grad_list(grads: Sequence[ArrayLike] | np.ndarray) -> list[np.ndarray]:
    if isinstance(grads, np.ndarray):
        grads = [grads]
    if not isinstance(grads, (list, tuple)) or not grads:
        raise TypeError(f"grads must be an array or a non-empty list of arrays, got {type(grads).__name__}")
    arrays = [_as_float_array(f"grads[{i}]", g) for i, g in enumerate(grads)]
    for i, a in enumerate(arrays):
        if not np.all(np.isfinite(a)):
            raise ValueError(f"grads[{i}] must be finite everywhere (skip the step instead of clipping)")
    return arrays


def global_grad_norm(grads: Sequence[ArrayLike] | np.ndarray) -> float:
    """``||g|| = sqrt(sum_i ||g_i||^2)``: the Euclidean norm of all gradient arrays ``g_i`` taken
    together as one vector (the "global norm" that GPT-3 and LLaMA clip at 1.0).

    Derived in chapter :doc:`/chapters/optimizers`.
    """
    arrays = _grad_list(grads)
    return math.sqrt(sum(float(np.sum(a.astype(np.float64) ** 2)) for a in arrays))


def clip_grad_norm(grads: Sequence[ArrayLike] | np.ndarray, max_norm: float,
                   eps: float = 1e-6) -> tuple[list[np.ndarray], float]:
    """Global-norm clipping as ``torch.nn.utils.clip_grad_norm_``: returns ``(clipped, ||g||)``.

    Every array is multiplied by the same factor ``min(1, max_norm / (||g|| + eps))``, so the
    direction of the whole gradient is kept and its norm becomes (just under) ``max_norm`` when it
    was larger; ``||g||`` is the norm *before* clipping (:func:`global_grad_norm`). PyTorch's
    ``eps`` is ``1e-6``. New arrays are returned; the inputs are not modified.
    Derived in chapter :doc:`/chapters/optimizers`.
    """
    arrays = _grad_list(grads)
    max_norm = check_positive("max_norm", max_norm)
    eps = check_positive("eps", eps, allow_zero=True)
    norm = global_grad_norm(arrays)
    scale = min(1.0, max_norm / (norm + eps))
    return [a * a.dtype.type(scale) for a in arrays], norm


# --------------------------------------------------------------------------- quadratic theory
def _eigenvalues(eigenvalues: ArrayLike) -> np.ndarray:
    return check_array_positive("eigenvalues", eigenvalues).ravel()


def gd_rate(lr: float, eigenvalues: ArrayLike) -> float:
    """``max_i |1 - lr * lambda_i|``: the factor by which gradient descent shrinks the slowest
    error component per step on ``f(x) = x^T H x / 2`` with Hessian eigenvalues ``lambda_i > 0``.

    Each eigen-direction evolves as ``e_{t+1} = (1 - lr lambda_i) e_t``, so the iteration converges
    from every start iff the rate is ``< 1``, i.e. ``0 < lr < 2 / lambda_max``.
    Derived in chapter :doc:`/chapters/optimizers`.
    """
    lr = check_positive("lr", lr)
    lam = _eigenvalues(eigenvalues)
    return float(np.max(np.abs(1.0 - lr * lam)))


def heavy_ball_rate(lr: float, momentum: float, eigenvalues: ArrayLike) -> float:
    """Asymptotic rate of the heavy ball ``x_{t+1} = x_t - lr g_t + mu (x_t - x_{t-1})`` (PyTorch's
    ``SGD(momentum=mu)``) on ``f(x) = x^T H x / 2``: ``max_i rho_i``, where ``rho_i`` is the largest
    modulus of the roots of ``z^2 - (1 + mu - lr lambda_i) z + mu = 0``, the characteristic
    polynomial of the iteration on eigen-direction ``i``.

    Complex roots (``(1 - sqrt(mu))^2 <= lr lambda_i <= (1 + sqrt(mu))^2``) have modulus
    ``sqrt(mu)``. Derived in chapter :doc:`/chapters/optimizers`.
    """
    lr = check_positive("lr", lr)
    mu = check_fraction("momentum", momentum, low_open=False, high_open=True)
    lam = _eigenvalues(eigenvalues)
    b = 1.0 + mu - lr * lam
    root = np.sqrt(b.astype(complex) ** 2 - 4.0 * mu)
    return float(np.max(np.maximum(np.abs(b + root), np.abs(b - root))) / 2.0)


def max_stable_lr(lambda_max: float, momentum: float = 0.0) -> float:
    """``2 (1 + mu) / lambda_max``: the largest learning rate for which gradient descent
    (``mu = 0``) or the heavy ball with momentum ``0 <= mu < 1`` converges on a quadratic whose
    largest Hessian eigenvalue is ``lambda_max`` (the bound itself is not stable).

    Derived in chapter :doc:`/chapters/optimizers`.
    """
    lam = check_positive("lambda_max", lambda_max)
    mu = check_fraction("momentum", momentum, low_open=False, high_open=True)
    return 2.0 * (1.0 + mu) / lam


def _spectrum(lambda_min: float, lambda_max: float) -> tuple[float, float]:
    m = check_positive("lambda_min", lambda_min)
    big = check_positive("lambda_max", lambda_max)
    if m > big:
        raise ValueError(f"lambda_min must be <= lambda_max = {big}, got {m}")
    return m, big


def gd_optimal(lambda_min: float, lambda_max: float) -> tuple[float, float]:
    """``(lr, rate) = (2 / (m + L), (kappa - 1) / (kappa + 1))``: the learning rate that minimises
    :func:`gd_rate` over eigenvalues in ``[m, L]`` and the rate it achieves (``kappa = L / m``).

    Derived in chapter :doc:`/chapters/optimizers`.
    """
    m, big = _spectrum(lambda_min, lambda_max)
    kappa = big / m
    return 2.0 / (m + big), (kappa - 1.0) / (kappa + 1.0)


def heavy_ball_optimal(lambda_min: float, lambda_max: float) -> tuple[float, float, float]:
    """Polyak's optimal heavy ball for eigenvalues in ``[m, L]``, ``kappa = L / m``:
    ``lr = 4 / (sqrt(L) + sqrt(m))^2``, ``mu = ((sqrt(kappa) - 1) / (sqrt(kappa) + 1))^2`` and the
    rate ``sqrt(mu) = (sqrt(kappa) - 1) / (sqrt(kappa) + 1)``; returns ``(lr, mu, rate)``.

    Derived in chapter :doc:`/chapters/optimizers`.
    """
    m, big = _spectrum(lambda_min, lambda_max)
    rate = (math.sqrt(big) - math.sqrt(m)) / (math.sqrt(big) + math.sqrt(m))
    return 4.0 / (math.sqrt(big) + math.sqrt(m)) ** 2, rate * rate, rate
