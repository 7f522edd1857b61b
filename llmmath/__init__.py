"""llmmath: the formula sheet of the book *The mathematics of training large language models*.

Every formula of the book lives here exactly once; each chapter notebook explains and calls it.
The chapter that derives a function is named in its docstring.
"""

from __future__ import annotations

from .config import ACTIVATIONS, SUPPORTED_MODEL_TYPES, TransformerConfig, from_hf_config
from .matmul import (
    OpCount,
    batched_matmul_flops,
    chain_flops,
    counted_matmul,
    matmul_flops,
    measure_matmul_flops_per_second,
    naive_matmul,
    optimal_chain_order,
)
from .optim import (
    OPTIMIZERS,
    AdamConfig,
    AdamWConfig,
    MomentumConfig,
    OptimizerState,
    RMSPropConfig,
    SGDConfig,
    adam_step,
    adamw_step,
    bias_correction_factor,
    init_state,
    momentum_step,
    optimize,
    rmsprop_step,
    round_to_bfloat16,
    sgd_step,
    state_bytes_per_param,
    state_tensors,
)
from .presets import PRESETS, preset, preset_names

__version__ = "0.1.0"

__all__ = [
    "ACTIVATIONS",
    "SUPPORTED_MODEL_TYPES",
    "TransformerConfig",
    "from_hf_config",
    "OpCount",
    "batched_matmul_flops",
    "chain_flops",
    "counted_matmul",
    "matmul_flops",
    "measure_matmul_flops_per_second",
    "naive_matmul",
    "optimal_chain_order",
    "PRESETS",
    "preset",
    "preset_names",
    # optimizers (chapter optimizers); the generic dispatcher is llmmath.optim.step
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
    "optimize",
    "bias_correction_factor",
    "round_to_bfloat16",
]
