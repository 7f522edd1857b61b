"""A small pure-numpy MLP with a hand-written backward pass whose matmul FLOPs are counted.

Derived in chapter :doc:`/chapters/forward-backward-cost`. Layout (row-major data, as in seed 001):
the batch ``X = Z_0`` is ``B x M_0``, layer ``i = 1..L`` computes ``H_i = Z_{i-1} W_i (+ b_i)`` with
``W_i`` of shape ``M_{i-1} x M_i``, then ``Z_i = act(H_i)`` for the hidden layers and
``Y_hat = H_L`` for the output layer (a linear output; with ``act = identity`` this is the same as
seed 001's MLP). Loss: mean squared error. Every matrix product goes through
:func:`llmmath.matmul.counted_matmul` (``2 m n p`` FLOPs); bias additions and elementwise work are
not matmul FLOPs and are not counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ._validate import check_bool, check_choice, check_int, check_matrix
from .matmul import counted_matmul

__all__ = [
    "MLP_ACTIVATIONS",
    "MLPSpec",
    "MLPParams",
    "MLPForward",
    "MLPGrads",
    "MLPStep",
    "MLPFlops",
    "init_mlp",
    "mlp_forward",
    "mse_loss",
    "mlp_backward",
    "mlp_loss_and_grads",
    "mlp_forward_flops",
    "mlp_backward_flops",
    "uniform_mlp_widths",
    "uniform_mlp_flops",
    "training_step_flops",
]

#: The activation functions an :class:`MLPSpec` accepts (its hidden layers' ``activation``).
MLP_ACTIVATIONS = ("identity", "relu", "tanh")


def _check_widths(widths: object) -> tuple[int, ...]:
    if isinstance(widths, np.ndarray) and widths.ndim == 1:
        widths = widths.tolist()
    if isinstance(widths, (str, bytes)) or not isinstance(widths, Sequence):
        raise TypeError(f"widths must be a sequence of integers (M_0, ..., M_L), got {widths!r}")
    if len(widths) < 2:
        raise ValueError(f"widths must have at least 2 entries (input and output width), got {len(widths)}")
    return tuple(check_int(f"widths[{i}]", w) for i, w in enumerate(widths))


@dataclass(frozen=True)
class MLPSpec:
    """An MLP: layer widths ``(M_0, M_1, ..., M_L)`` (``L >= 1`` layers), hidden activation, biases."""

    widths: tuple[int, ...]
    activation: str = "identity"
    bias: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "widths", _check_widths(self.widths))
        check_choice("activation", self.activation, MLP_ACTIVATIONS)
        check_bool("bias", self.bias)

    @property
    def n_layers(self) -> int:
        """Number of linear layers ``L = len(widths) - 1``."""
        return len(self.widths) - 1


@dataclass(frozen=True)
class MLPParams:
    """Weights ``W_i`` (``M_{i-1} x M_i``) and biases ``b_i`` (``M_i``; empty tuple if no bias)."""

    weights: tuple[np.ndarray, ...]
    biases: tuple[np.ndarray, ...] = ()


class MLPForward(NamedTuple):
    """Output of the forward pass and what the backward pass needs (the cache)."""

    y_hat: np.ndarray
    inputs: tuple[np.ndarray, ...]  # Z_0 = X, Z_1, ..., Z_{L-1}: the input of each layer
    pre: tuple[np.ndarray, ...]  # H_1, ..., H_L: the pre-activations
    flops: int


class MLPGrads(NamedTuple):
    """Gradients with the shapes of the parameters; ``dx`` is ``None`` unless requested."""

    weights: tuple[np.ndarray, ...]
    biases: tuple[np.ndarray, ...]
    dx: np.ndarray | None
    flops: int


class MLPStep(NamedTuple):
    """Loss, gradients and the counted matmul FLOPs of one forward and one backward pass."""

    loss: float
    grads: MLPGrads
    forward_flops: int
    backward_flops: int


class MLPFlops(NamedTuple):
    """Matmul FLOPs of one forward and one backward pass."""

    forward: int
    backward: int


def _check_spec(spec: object) -> MLPSpec:
    if not isinstance(spec, MLPSpec):
        raise TypeError(f"spec must be an MLPSpec, got {type(spec).__name__}")
    return spec


def _check_params(spec: MLPSpec, params: object) -> MLPParams:
    if not isinstance(params, MLPParams):
        raise TypeError(f"params must be an MLPParams, got {type(params).__name__}")
    if len(params.weights) != spec.n_layers:
        raise ValueError(f"params.weights must have {spec.n_layers} matrices, got {len(params.weights)}")
    for i, w in enumerate(params.weights):
        want = (spec.widths[i], spec.widths[i + 1])
        if np.shape(w) != want:
            raise ValueError(f"params.weights[{i}] must have shape {want}, got {np.shape(w)}")
    if len(params.biases) != (spec.n_layers if spec.bias else 0):
        raise ValueError(
            f"params.biases must have {spec.n_layers if spec.bias else 0} vectors, got {len(params.biases)}"
        )
    for i, b in enumerate(params.biases):
        if np.shape(b) != (spec.widths[i + 1],):
            raise ValueError(f"params.biases[{i}] must have shape ({spec.widths[i + 1]},), got {np.shape(b)}")
    return params


def init_mlp(spec: MLPSpec, seed: int = 0) -> MLPParams:
    """Random parameters: ``W_i ~ N(0, 1 / M_{i-1})`` (LeCun scaling), ``b_i ~ N(0, 0.1^2)``.

    Deterministic: ``np.random.default_rng(seed)``. Derived in chapter
    :doc:`/chapters/forward-backward-cost`.
    """
    spec = _check_spec(spec)
    seed = check_int("seed", seed, minimum=0)
    rng = np.random.default_rng(seed)
    w = spec.widths
    weights = tuple(rng.standard_normal((w[i], w[i + 1])) / np.sqrt(w[i]) for i in range(spec.n_layers))
    biases = tuple(0.1 * rng.standard_normal(w[i + 1]) for i in range(spec.n_layers)) if spec.bias else ()
    return MLPParams(weights, biases)


def _act(name: str, h: np.ndarray) -> np.ndarray:
    if name == "relu":
        return np.maximum(h, 0.0)
    if name == "tanh":
        return np.tanh(h)
    return h


def _act_grad(name: str, h: np.ndarray, dz: np.ndarray) -> np.ndarray:
    """``dL/dH = dL/dZ (Hadamard) act'(H)``."""
    if name == "relu":
        return dz * (h > 0)
    if name == "tanh":
        return dz * (1.0 - np.tanh(h) ** 2)
    return dz


def mlp_forward(spec: MLPSpec, params: MLPParams, x: np.ndarray) -> MLPForward:
    """Forward pass ``H_i = Z_{i-1} W_i (+ b_i)``, ``Z_i = act(H_i)`` (hidden), ``Y_hat = H_L``.

    Counted matmul FLOPs: ``sum_i 2 B M_{i-1} M_i`` (see :func:`mlp_forward_flops`). Derived in
    chapter :doc:`/chapters/forward-backward-cost`.
    """
    spec = _check_spec(spec)
    params = _check_params(spec, params)
    z = check_matrix("x", x, cols=spec.widths[0])
    inputs, pre, flops = [], [], 0
    for i, w in enumerate(params.weights):
        inputs.append(z)
        h, f = counted_matmul(z, w)
        flops += f
        if spec.bias:
            h = h + params.biases[i]
        pre.append(h)
        z = _act(spec.activation, h) if i < spec.n_layers - 1 else h
    return MLPForward(z, tuple(inputs), tuple(pre), flops)


def mse_loss(y_hat: np.ndarray, y: np.ndarray, reduction: str = "mean") -> tuple[float, np.ndarray]:
    """Squared error and its gradient ``dL/dY_hat``.

    ``reduction="mean"``: ``L = sum (Y_hat - Y)^2 / (B C)`` (PyTorch's ``mse_loss`` default),
    ``dL/dY_hat = 2 (Y_hat - Y) / (B C)``; ``reduction="sum"``: ``L = ||Y_hat - Y||_F^2`` (seed
    001), ``dL/dY_hat = 2 (Y_hat - Y)``. Derived in chapter :doc:`/chapters/forward-backward-cost`.
    """
    check_choice("reduction", reduction, ("mean", "sum"))
    if not isinstance(y_hat, np.ndarray):
        raise TypeError(f"y_hat must be a numpy array, got {type(y_hat).__name__}")
    if y_hat.ndim != 2 or 0 in y_hat.shape:
        raise ValueError(f"y_hat must be a non-empty 2-D array, got shape {y_hat.shape}")
    y = check_matrix("y", y, cols=y_hat.shape[1])
    if y.shape != y_hat.shape:
        raise ValueError(f"y must have the shape of y_hat {y_hat.shape}, got {y.shape}")
    r = y_hat - y
    scale = 1.0 / r.size if reduction == "mean" else 1.0
    return float(scale * np.sum(r * r)), 2.0 * scale * r


def mlp_backward(
    spec: MLPSpec, params: MLPParams, fwd: MLPForward, dy_hat: np.ndarray, input_grad: bool = False
) -> MLPGrads:
    """Hand-written backward pass, from ``G_L = dL/dY_hat`` down to layer 1.

    For ``i = L, ..., 1``: ``dL/dW_i = Z_{i-1}^T G_i`` (``2 B M_{i-1} M_i`` FLOPs),
    ``dL/db_i = sum_rows G_i``, and, for ``i >= 2`` (or ``i = 1`` with ``input_grad``),
    ``dL/dZ_{i-1} = G_i W_i^T`` (``2 B M_i M_{i-1}`` FLOPs) followed by the Hadamard step
    ``G_{i-1} = dL/dZ_{i-1} * act'(H_{i-1})``. Derived in chapter
    :doc:`/chapters/forward-backward-cost`.
    """
    spec = _check_spec(spec)
    params = _check_params(spec, params)
    input_grad = check_bool("input_grad", input_grad)
    if not isinstance(fwd, MLPForward):
        raise TypeError(f"fwd must be the MLPForward returned by mlp_forward, got {type(fwd).__name__}")
    if len(fwd.inputs) != spec.n_layers or len(fwd.pre) != spec.n_layers:
        raise ValueError(f"fwd must cache {spec.n_layers} layers, got {len(fwd.inputs)}")
    batch = fwd.inputs[0].shape[0]
    g = check_matrix("dy_hat", dy_hat, cols=spec.widths[-1])
    if g.shape[0] != batch:
        raise ValueError(f"dy_hat must have {batch} rows (the batch of fwd), got {g.shape[0]}")
    dws: list[np.ndarray] = [np.empty(0)] * spec.n_layers
    dbs: list[np.ndarray] = [np.empty(0)] * spec.n_layers
    dx, flops = None, 0
    for i in range(spec.n_layers - 1, -1, -1):
        dws[i], f = counted_matmul(fwd.inputs[i].T, g)
        flops += f
        dbs[i] = g.sum(axis=0)
        if i > 0 or input_grad:
            dz, f = counted_matmul(g, params.weights[i].T)
            flops += f
            if i > 0:
                g = _act_grad(spec.activation, fwd.pre[i - 1], dz)
            else:
                dx = dz
    return MLPGrads(tuple(dws), tuple(dbs) if spec.bias else (), dx, flops)


def mlp_loss_and_grads(
    spec: MLPSpec,
    params: MLPParams,
    x: np.ndarray,
    y: np.ndarray,
    input_grad: bool = False,
    reduction: str = "mean",
) -> MLPStep:
    """One forward and backward pass with the MSE loss: loss, gradients, counted FLOPs of each pass.

    Derived in chapter :doc:`/chapters/forward-backward-cost`.
    """
    fwd = mlp_forward(spec, params, x)
    loss, dy_hat = mse_loss(fwd.y_hat, y, reduction=reduction)
    grads = mlp_backward(spec, params, fwd, dy_hat, input_grad=input_grad)
    return MLPStep(loss, grads, fwd.flops, grads.flops)


def mlp_forward_flops(widths: Sequence[int], batch: int) -> int:
    """Forward matmul FLOPs of an MLP with widths ``(M_0, ..., M_L)``: ``sum_{i=1}^L 2 B M_{i-1} M_i``.

    Derived in chapter :doc:`/chapters/forward-backward-cost`.
    """
    w = _check_widths(widths)
    batch = check_int("batch", batch)
    return sum(2 * batch * w[i] * w[i + 1] for i in range(len(w) - 1))


def mlp_backward_flops(widths: Sequence[int], batch: int, input_grad: bool = False) -> int:
    """Backward matmul FLOPs: ``sum_{i=1}^L 2 B M_{i-1} M_i`` (weight gradients) plus
    ``sum_{i=2}^L 2 B M_i M_{i-1}`` (activation gradients), plus ``2 B M_0 M_1`` if ``input_grad``.

    So backward ``= 2 x forward - 2 B M_0 M_1`` when the input needs no gradient. Derived in
    chapter :doc:`/chapters/forward-backward-cost`.
    """
    w = _check_widths(widths)
    batch = check_int("batch", batch)
    input_grad = check_bool("input_grad", input_grad)
    weight = sum(2 * batch * w[i] * w[i + 1] for i in range(len(w) - 1))
    act = sum(2 * batch * w[i] * w[i + 1] for i in range(0 if input_grad else 1, len(w) - 1))
    return weight + act


def uniform_mlp_widths(n_hidden: int, width: int, n_out: int, n_in: int | None = None) -> tuple[int, ...]:
    """Widths of seed 001's ``(N+1)``-layer MLP: ``(D, M, ..., M, C)`` with ``N`` entries ``M``.

    ``D = n_in`` defaults to ``M = width`` (the seed's implicit assumption). Derived in chapter
    :doc:`/chapters/forward-backward-cost`.
    """
    n_hidden = check_int("n_hidden", n_hidden)
    width = check_int("width", width)
    n_out = check_int("n_out", n_out)
    n_in = width if n_in is None else check_int("n_in", n_in)
    return (n_in,) + (width,) * n_hidden + (n_out,)


def uniform_mlp_flops(
    n_hidden: int, batch: int, width: int, n_out: int, n_in: int | None = None, input_grad: bool = False
) -> MLPFlops:
    """Closed form for the ``(N+1)``-layer MLP ``D -> M -> ... -> M -> C`` (``N >= 1`` hidden layers).

    forward  ``= 2 B (D M + (N - 1) M^2 + M C)``;
    backward ``= 2 B (D M + 2 (N - 1) M^2 + 2 M C)`` ``(+ 2 B D M`` with ``input_grad)``.
    With ``D = M``: forward ``2 N B M^2 + 2 B M C`` and backward ``2 (2N - 1) B M^2 + 4 B M C``
    (seed 001 states ``6 B M C`` for the last term). Derived in chapter
    :doc:`/chapters/forward-backward-cost`.
    """
    n_hidden = check_int("n_hidden", n_hidden)
    b = check_int("batch", batch)
    m = check_int("width", width)
    c = check_int("n_out", n_out)
    d = m if n_in is None else check_int("n_in", n_in)
    input_grad = check_bool("input_grad", input_grad)
    n = n_hidden
    forward = 2 * b * (d * m + (n - 1) * m * m + m * c)
    backward = 2 * b * (d * m + 2 * (n - 1) * m * m + 2 * m * c) + (2 * b * d * m if input_grad else 0)
    return MLPFlops(forward, backward)


def training_step_flops(forward_flops: int, recompute: bool = False) -> int:
    """FLOPs of a training step when every matmul has two backward matmuls (a transformer).

    Backward ``= 2 F`` (one product for each operand's gradient), so a step is ``3 F``; with full
    activation recomputation the forward runs again before the backward: ``4 F``. Assumes the
    backward pass finds every operand it needs stored, as eager attention stores its probabilities;
    a fused (Flash) attention backward recomputes ``Q K^T`` and costs ``2.5x`` its forward
    attention matmuls, which this count leaves out. Derived in chapter
    :doc:`/chapters/forward-backward-cost`.
    """
    forward_flops = check_int("forward_flops", forward_flops)
    recompute = check_bool("recompute", recompute)
    return (4 if recompute else 3) * forward_flops
